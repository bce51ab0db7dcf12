#include "ember/serve/model.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/error.h"
#include "ember/jit/artifact.h"
#include "ember/ops/join.h"
#include "ember/serve/log.h"

namespace ember::serve {

namespace {

const char* const kModelKeys[] = {"max_batch_size", "max_queue_delay_us", "queue_capacity", "workers",
                                  "timeout_ms",     "default_version",    "traffic",        "sticky_header",
                                  "shadow_version"};

std::string known_model_keys() {
  std::string s;
  for (const char* k : kModelKeys) s += std::string(s.empty() ? "" : ", ") + k;
  return s;
}

int64_t positive_int(const Value& v, const std::string& key, const std::string& where, int64_t lo) {
  EMBER_CHECK(v.is_int(), "[ember-serve] ", where, ": \"", key, "\" must be an integer, got ", v.kind_name());
  EMBER_CHECK(v.to_int() >= lo, "[ember-serve] ", where, ": \"", key, "\" must be at least ", lo, ", got ",
              v.to_int());
  return v.to_int();
}

std::string string_of(const Value& v, const std::string& key, const std::string& where) {
  EMBER_CHECK(v.is_string(), "[ember-serve] ", where, ": \"", key, "\" must be a string, got ", v.kind_name());
  return v.to_string();
}

}  // namespace

ModelConfig parse_model_config(const Value& v, const std::string& where, ModelConfig c) {
  EMBER_CHECK(v.is_dict(), "[ember-serve] ", where, ": a model's settings must be a JSON object, got ",
              v.kind_name());
  for (const auto& item : v.to_dict()) {
    const std::string& k = item.key();
    const Value& x = item.value();
    if (k == "max_batch_size") {
      c.max_batch_size = positive_int(x, k, where, 1);
    } else if (k == "max_queue_delay_us") {
      c.max_queue_delay_us = positive_int(x, k, where, 0);
    } else if (k == "queue_capacity") {
      c.queue_capacity = positive_int(x, k, where, 1);
    } else if (k == "workers") {
      c.workers = static_cast<int>(positive_int(x, k, where, 1));
      EMBER_CHECK(c.workers <= 64, "[ember-serve] ", where, ": \"workers\" must be at most 64, got ", c.workers);
    } else if (k == "timeout_ms") {
      c.timeout_ms = positive_int(x, k, where, 1);
    } else if (k == "default_version") {
      c.default_version = string_of(x, k, where);
    } else if (k == "traffic") {
      EMBER_CHECK(x.is_dict(), "[ember-serve] ", where,
                  ": \"traffic\" must be an object of version -> weight, e.g. {\"1\": 90, \"2\": 10}");
      c.traffic.clear();
      for (const auto& t : x.to_dict()) {
        EMBER_CHECK(t.value().is_int() || t.value().is_double(), "[ember-serve] ", where, ": traffic weight of \"",
                    t.key(), "\" must be a number");
        const double w = t.value().to_double();
        EMBER_CHECK(w >= 0 && std::isfinite(w), "[ember-serve] ", where, ": traffic weight of \"", t.key(),
                    "\" must be >= 0, got ", w);
        c.traffic.emplace_back(t.key(), w);
      }
    } else if (k == "sticky_header") {
      c.sticky_header = string_of(x, k, where);
      std::transform(c.sticky_header.begin(), c.sticky_header.end(), c.sticky_header.begin(),
                     [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    } else if (k == "shadow_version") {
      c.shadow_version = string_of(x, k, where);
    } else {
      EMBER_ERROR("[ember-serve] ", where, ": unknown setting \"", k, "\"; a model accepts: ", known_model_keys());
    }
  }
  return c;
}

Value model_config_to_value(const ModelConfig& c) {
  Value v = Value::dict();
  v["max_batch_size"] = c.max_batch_size;
  v["max_queue_delay_us"] = c.max_queue_delay_us;
  v["queue_capacity"] = c.queue_capacity;
  v["workers"] = c.workers;
  v["timeout_ms"] = c.timeout_ms;
  if (!c.default_version.empty()) v["default_version"] = c.default_version;
  if (!c.traffic.empty()) {
    Value t = Value::dict();
    for (const auto& [ver, w] : c.traffic) t[ver] = w;
    v["traffic"] = t;
  }
  if (!c.sticky_header.empty()) v["sticky_header"] = c.sticky_header;
  if (!c.shadow_version.empty()) v["shadow_version"] = c.shadow_version;
  return v;
}

// ---- drift ----

DriftMonitor::DriftMonitor(const Value& profile) {
  if (!profile.is_dict() || !profile.contains("mean") || !profile.contains("std")) return;
  has_ref_ = true;
  ref_mean_ = profile.at("mean").to_double();
  ref_std_ = std::max(profile.at("std").to_double(), 1e-12);
  if (profile.contains("bin_edges") && profile.contains("bin_fractions")) {
    edges_ = profile.at("bin_edges").to_double_list();
    ref_fractions_ = profile.at("bin_fractions").to_double_list();
    if (ref_fractions_.size() != edges_.size() + 1) {
      edges_.clear();
      ref_fractions_.clear();
    }
  }
  if (profile.contains("channel_mean")) ch_ref_mean_ = profile.at("channel_mean").to_double_list();
  if (profile.contains("channel_std")) ch_ref_std_ = profile.at("channel_std").to_double_list();
  bins_.assign(ref_fractions_.size(), 0);
  ch_sum_.assign(ch_ref_mean_.size(), 0.0);
  ch_sumsq_.assign(ch_ref_mean_.size(), 0.0);
}

void DriftMonitor::observe(const Tensor& input) {
  if (!has_ref_ || !input.defined() || input.numel() == 0 || !is_floating_point(input.dtype())) return;
  const std::vector<double> v = input.to(kFloat64).contiguous().to_vector<double>();  // NOLINT
  std::vector<uint64_t> bins(bins_.size(), 0);
  double s = 0, ss = 0;
  for (double x : v) {
    s += x;
    ss += x * x;
    if (!bins.empty()) bins[std::upper_bound(edges_.begin(), edges_.end(), x) - edges_.begin()]++;
  }
  // Per channel (dim 1) sums, when the reference has them and the shapes agree.
  std::vector<double> cs(ch_sum_.size(), 0.0), css(ch_sum_.size(), 0.0);
  uint64_t per_channel = 0;
  const bool channels = input.dim() >= 2 && !cs.empty() && input.size(1) == static_cast<int64_t>(cs.size());
  if (channels) {
    const int64_t n = input.size(0), c = input.size(1), inner = input.numel() / (n * c);
    per_channel = static_cast<uint64_t>(n * inner);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < c; ++j)
        for (int64_t k = 0; k < inner; ++k) {
          const double x = v[(i * c + j) * inner + k];
          cs[j] += x;
          css[j] += x * x;
        }
  }
  std::lock_guard<std::mutex> lock(mu_);
  count_ += v.size();
  sum_ += s;
  sumsq_ += ss;
  for (size_t i = 0; i < bins.size(); ++i) bins_[i] += bins[i];
  if (channels) {
    ch_count_ += per_channel;
    for (size_t j = 0; j < cs.size(); ++j) {
      ch_sum_[j] += cs[j];
      ch_sumsq_[j] += css[j];
    }
  }
}

namespace {
double psi_of(const std::vector<uint64_t>& bins, const std::vector<double>& ref) {
  uint64_t total = 0;
  for (uint64_t b : bins) total += b;
  if (total == 0) return 0.0;
  double psi = 0;
  for (size_t i = 0; i < bins.size(); ++i) {
    const double p = std::max(static_cast<double>(bins[i]) / static_cast<double>(total), 1e-4);
    const double q = std::max(ref[i], 1e-4);
    psi += (p - q) * std::log(p / q);
  }
  return psi;
}
}  // namespace

double DriftMonitor::psi() const {
  std::lock_guard<std::mutex> lock(mu_);
  return psi_of(bins_, ref_fractions_);
}

Value DriftMonitor::report() const {
  std::lock_guard<std::mutex> lock(mu_);
  Value r = Value::dict();
  r["reference"] = has_ref_;
  r["count"] = static_cast<int64_t>(count_);
  if (!has_ref_) return r;
  r["reference_mean"] = ref_mean_;
  r["reference_std"] = ref_std_;
  if (count_ == 0) return r;
  const double n = static_cast<double>(count_);
  const double mean = sum_ / n;
  const double var = std::max(sumsq_ / n - mean * mean, 0.0);
  r["mean"] = mean;
  r["std"] = std::sqrt(var);
  r["mean_shift"] = (mean - ref_mean_) / ref_std_;  // in reference std units
  r["std_ratio"] = std::sqrt(var) / ref_std_;
  if (!ref_fractions_.empty()) {
    r["psi"] = psi_of(bins_, ref_fractions_);
    std::vector<double> frac(bins_.size());
    for (size_t i = 0; i < bins_.size(); ++i) frac[i] = static_cast<double>(bins_[i]) / n;
    r["bin_fractions"] = Value(frac);
    r["reference_bin_fractions"] = Value(ref_fractions_);
  }
  if (ch_count_ > 0) {
    Value::List ch;
    const double m = static_cast<double>(ch_count_);
    for (size_t j = 0; j < ch_sum_.size(); ++j) {
      Value c = Value::dict();
      const double cm = ch_sum_[j] / m;
      const double cv = std::max(ch_sumsq_[j] / m - cm * cm, 0.0);
      const double rs = j < ch_ref_std_.size() ? std::max(ch_ref_std_[j], 1e-12) : ref_std_;
      c["mean"] = cm;
      c["std"] = std::sqrt(cv);
      c["mean_shift"] = (cm - ch_ref_mean_[j]) / rs;
      c["std_ratio"] = std::sqrt(cv) / rs;
      ch.push_back(std::move(c));
    }
    r["channels"] = Value(ch);
  }
  return r;
}

// ---- dtypes ----

const char* kserve_dtype(DType t) {
  switch (t) {
    case kBool: return "BOOL";
    case kUInt8: return "UINT8";
    case kInt8: return "INT8";
    case kInt16: return "INT16";
    case kInt32: return "INT32";
    case kInt64: return "INT64";
    case kFloat16: return "FP16";
    case DType::BFloat16: return "BF16";
    case kFloat32: return "FP32";
    case kFloat64: return "FP64";
    default: return "UNKNOWN";
  }
}

bool parse_kserve_dtype(const std::string& s, DType& out) {
  static const std::pair<const char*, DType> table[] = {
      {"BOOL", kBool},     {"UINT8", kUInt8},  {"INT8", kInt8},    {"INT16", kInt16},         {"INT32", kInt32},
      {"INT64", kInt64},   {"FP16", kFloat16}, {"BF16", DType::BFloat16}, {"FP32", kFloat32}, {"FP64", kFloat64}};
  for (const auto& [name, t] : table) {
    if (s == name) {
      out = t;
      return true;
    }
  }
  return false;
}

// ---- the model version ----

namespace {
std::vector<TensorSpec> specs_of(const jit::Graph& g, const std::vector<int>& ids, const std::vector<std::string>* names) {
  std::vector<TensorSpec> out;
  for (int id : ids) {
    const jit::Var& v = g.vars[id];
    TensorSpec s;
    s.name = names && out.size() < names->size() ? (*names)[out.size()] : v.name;
    if (s.name.empty()) s.name = "output" + std::to_string(out.size());
    s.dtype = v.dtype;
    for (const jit::SymInt& d : v.shape) s.shape.push_back(d.is_static() ? d.b : -1);
    out.push_back(std::move(s));
  }
  return out;
}

bool batch_dim_only(const jit::Graph& g, const std::vector<int>& ids) {
  for (int id : ids) {
    const jit::Var& v = g.vars[id];
    if (v.shape.empty() || !(v.shape[0] == jit::SymInt{1, 0})) return false;
    for (size_t d = 1; d < v.shape.size(); ++d)
      if (!v.shape[d].is_static()) return false;
  }
  return true;
}

std::string spec_string(const TensorSpec& s) {
  std::string out = std::string(kserve_dtype(s.dtype)) + "[";
  for (size_t i = 0; i < s.shape.size(); ++i) {
    if (i) out += ", ";
    out += s.shape[i] < 0 ? "-1" : std::to_string(s.shape[i]);
  }
  return out + "]";
}

std::string shape_string(const Tensor& t) {
  std::string out = std::string(kserve_dtype(t.dtype())) + "[";
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (i) out += ", ";
    out += std::to_string(t.size(i));
  }
  return out + "]";
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
}  // namespace

ModelVersion::ModelVersion(std::string name, std::string version, std::string path, ModelConfig config,
                           Registry& metrics)
    : name_(std::move(name)),
      version_(std::move(version)),
      path_(std::move(path)),
      config_(std::move(config)),
      module_(jit::load(path_)),
      drift_(module_.metadata().contains("input_profile") ? module_.metadata().at("input_profile") : Value()) {
  const jit::Graph& g = module_.graph();
  inputs_ = specs_of(g, g.inputs, nullptr);
  outputs_ = specs_of(g, g.outputs, &g.output_names);
  batchable_ = batch_dim_only(g, g.inputs) && batch_dim_only(g, g.outputs);
  const std::vector<std::string> labels{name_, version_};
  queue_gauge_ = &metrics.gauge("ember_queue_length", "Requests waiting in a model version's queue",
                                {"model", "version"}).with(labels);
  batch_hist_ = &metrics.histogram("ember_batch_size", "Rows per executed batch", {"model", "version"},
                                   batch_size_buckets()).with(labels);
  queue_hist_ = &metrics.histogram("ember_queue_duration_seconds", "Time a request waited before its batch ran",
                                   {"model", "version"}, latency_buckets()).with(labels);
  infer_hist_ = &metrics.histogram("ember_inference_duration_seconds", "Time to run one batch through the model",
                                   {"model", "version"}, latency_buckets()).with(labels);
  restarts_counter_ = &metrics.counter("ember_worker_restarts_total",
                                       "Model workers restarted after an unexpected failure", {"model", "version"})
                           .with(labels);
  scale(config_.workers);
}

ModelVersion::~ModelVersion() { drain(); }

std::string ModelVersion::check_inputs(const std::vector<Tensor>& in) const {
  if (in.size() != inputs_.size()) {
    return "model " + name_ + " version " + version_ + " takes " + std::to_string(inputs_.size()) +
           " input(s), got " + std::to_string(in.size());
  }
  int64_t batch = -1;
  for (size_t i = 0; i < in.size(); ++i) {
    const TensorSpec& s = inputs_[i];
    const Tensor& t = in[i];
    bool ok = t.dtype() == s.dtype && t.dim() == static_cast<int64_t>(s.shape.size());
    for (int64_t d = 0; ok && d < t.dim(); ++d) {
      if (s.shape[d] >= 0 && t.size(d) != s.shape[d]) ok = false;
    }
    if (!ok) {
      return "input \"" + s.name + "\" must be " + spec_string(s) + " (-1: any batch size), got " +
             shape_string(t);
    }
    if (!s.shape.empty() && s.shape[0] < 0) {
      if (batch >= 0 && t.size(0) != batch) {
        return "inputs must share one batch size: \"" + inputs_[0].name + "\" has " + std::to_string(batch) +
               " rows, \"" + s.name + "\" has " + std::to_string(t.size(0));
      }
      batch = t.size(0);
      if (batch == 0) return "input \"" + s.name + "\" has no rows";
    }
  }
  return "";
}

bool ModelVersion::try_submit(std::vector<Tensor>& inputs, Clock::time_point deadline,
                              std::function<void(InferResult)>& done) {
  return enqueue(inputs, deadline, done, /*refuse_when_stopping=*/true);
}

void ModelVersion::submit(std::vector<Tensor> inputs, Clock::time_point deadline,
                          std::function<void(InferResult)> done) {
  enqueue(inputs, deadline, done, /*refuse_when_stopping=*/false);
}

bool ModelVersion::enqueue(std::vector<Tensor>& inputs, Clock::time_point deadline,
                           std::function<void(InferResult)>& done, bool refuse_when_stopping) {
  const int64_t rows = batchable_ && !inputs.empty() && inputs[0].dim() > 0 ? inputs[0].size(0) : 1;
  bool stopping = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping = stopping_;
    if (stopping && refuse_when_stopping) return false;  // inputs and done untouched
    if (!stopping_ && static_cast<int64_t>(queue_.size()) < config_.queue_capacity) {
      Job job;
      job.rows = rows;
      job.inputs = std::move(inputs);
      job.enqueued = Clock::now();
      job.deadline = deadline;
      job.done = std::move(done);
      queue_.push_back(std::move(job));
      queue_gauge_->set(static_cast<double>(queue_.size()));
      cv_.notify_one();
      return true;
    }
  }
  InferResult r;
  r.status = 503;
  r.error = stopping ? "model " + name_ + " version " + version_ + " is shutting down"
                     : "model " + name_ + " version " + version_ + " has " + std::to_string(config_.queue_capacity) +
                           " requests queued (queue_capacity); retry later";
  done(std::move(r));
  return true;
}

InferResult ModelVersion::run_now(const std::vector<Tensor>& inputs) {
  InferResult r;
  try {
    InferenceMode guard;
    const auto t0 = Clock::now();
    r.outputs = module_.run(inputs);
    r.compute_seconds = seconds_between(t0, Clock::now());
    r.batch_rows = inputs.empty() || inputs[0].dim() == 0 ? 1 : inputs[0].size(0);
  } catch (const std::exception& e) {
    r.status = 500;
    r.error = e.what();
  }
  return r;
}

int64_t ModelVersion::queue_length() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

int ModelVersion::workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return target_workers_;
}

void ModelVersion::scale(int workers) {
  std::vector<std::thread> retired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    target_workers_ = std::max(1, workers);
    config_.workers = target_workers_;
    while (static_cast<int>(threads_.size()) < target_workers_) {
      const int index = static_cast<int>(threads_.size());
      threads_.emplace_back([this, index] { worker_loop(index); });
    }
    while (static_cast<int>(threads_.size()) > target_workers_) {
      retired.push_back(std::move(threads_.back()));
      threads_.pop_back();
    }
  }
  cv_.notify_all();
  for (std::thread& t : retired) t.join();
}

void ModelVersion::drain() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (std::thread& t : threads) {
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();
    } else {
      t.join();
    }
  }
}

void ModelVersion::worker_loop(int index) {
  // Note [Serving threads]: model workers run at a lower priority (nice +5) than the I/O
  // threads, so under overload the I/O threads still get the CPU to read requests and
  // answer 503 at once, instead of requests waiting unread in socket buffers.
  setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 5);
  for (;;) {
    std::vector<Job> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || index >= target_workers_; });
      if (index >= target_workers_ && !stopping_) return;  // scaled down
      if (queue_.empty()) return;                           // stopping, nothing left
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
      int64_t rows = batch.front().rows;
      const int64_t cap = batchable_ ? config_.max_batch_size : 1;
      const auto until = batch.front().enqueued + std::chrono::microseconds(config_.max_queue_delay_us);
      for (;;) {
        while (!queue_.empty() && rows + queue_.front().rows <= cap) {
          rows += queue_.front().rows;
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
        if (rows >= cap || stopping_ || !queue_.empty()) break;  // full, or the next one does not fit
        if (!cv_.wait_until(lock, until, [&] { return stopping_ || !queue_.empty(); })) break;  // delay spent
      }
      queue_gauge_->set(static_cast<double>(queue_.size()));
    }
    try {
      run_batch(batch);
    } catch (const std::exception& e) {
      // Note: run_batch answers its own errors; reaching here means a failure outside a
      // model run (e.g. out of memory while splitting outputs). Answer, report, go on.
      restarts_.fetch_add(1);
      restarts_counter_->inc();
      log_event("worker_restart", {{"model", name_}, {"version", version_}, {"error", e.what()}});
      for (Job& j : batch) {
        if (j.done) {
          InferResult r;
          r.status = 500;
          r.error = std::string("model worker failed: ") + e.what();
          j.done(std::move(r));
        }
      }
    }
  }
}

void ModelVersion::run_batch(std::vector<Job>& batch) {
  const auto now = Clock::now();
  std::vector<Job*> live;
  for (Job& j : batch) {
    if (now > j.deadline) {
      InferResult r;
      r.status = 504;
      r.queue_seconds = seconds_between(j.enqueued, now);
      r.error = "request waited " + std::to_string(static_cast<int64_t>(r.queue_seconds * 1000)) +
                " ms in the queue of model " + name_ + " version " + version_ + " (timeout_ms " +
                std::to_string(config_.timeout_ms) + ")";
      auto done = std::move(j.done);
      j.done = nullptr;
      done(std::move(r));
    } else {
      live.push_back(&j);
    }
  }
  if (live.empty()) return;
  int64_t rows = 0;
  for (Job* j : live) rows += j->rows;
  std::vector<Tensor> inputs;
  if (live.size() == 1) {
    inputs = live[0]->inputs;
  } else {
    for (size_t i = 0; i < live[0]->inputs.size(); ++i) {
      std::vector<Tensor> parts;
      parts.reserve(live.size());
      for (Job* j : live) parts.push_back(j->inputs[i]);
      inputs.push_back(cat(parts, 0));
    }
  }
  if (!inputs.empty()) drift_.observe(inputs[0]);
  const auto t0 = Clock::now();
  InferResult all = run_now(inputs);
  const auto t1 = Clock::now();
  batch_hist_->observe(static_cast<double>(rows));
  infer_hist_->observe(seconds_between(t0, t1));
  int64_t offset = 0;
  for (Job* j : live) {
    InferResult r;
    r.status = all.status;
    r.error = all.error;
    r.batch_rows = rows;
    r.queue_seconds = seconds_between(j->enqueued, t0);
    r.compute_seconds = seconds_between(t0, t1);
    queue_hist_->observe(r.queue_seconds);
    if (all.status == 200) {
      for (const Tensor& o : all.outputs) {
        r.outputs.push_back(live.size() == 1 ? o : o.narrow(0, offset, j->rows).contiguous());
      }
    }
    offset += j->rows;
    auto done = std::move(j->done);
    j->done = nullptr;
    done(std::move(r));
  }
}

}  // namespace ember::serve
