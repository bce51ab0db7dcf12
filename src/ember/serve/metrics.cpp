#include "ember/serve/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ember/core/check.h"

namespace ember::serve {
namespace {

void atomic_add(std::atomic<double>& a, double by) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + by, std::memory_order_relaxed)) {
  }
}

// Prometheus' number spelling: integers without a fraction, +Inf/-Inf/NaN by name.
void append_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    out += buf;
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out += buf;
  }
}

void append_labels(std::string& out, const std::vector<std::string>& names, const std::vector<std::string>& values,
                   const char* extra_name = nullptr, const std::string& extra_value = {}) {
  if (names.empty() && !extra_name) return;
  out += '{';
  bool first = true;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!first) out += ',';
    first = false;
    out += names[i];
    out += "=\"";
    out += escape_label(values[i]);
    out += '"';
  }
  if (extra_name) {
    if (!first) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

const char* type_name(MetricType t) {
  switch (t) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Histogram: return "histogram";
  }
  return "untyped";
}

}  // namespace

void Counter::inc(double by) { atomic_add(value_, by); }
void Gauge::add(double by) { atomic_add(value_, by); }

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double v) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  atomic_add(sum_, v);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::cumulative() const {
  std::vector<uint64_t> c(bounds_.size() + 1);
  uint64_t run = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    run += buckets_[i].load(std::memory_order_relaxed);
    c[i] = run;
  }
  return c;
}

double Histogram::quantile(double q) const {
  const std::vector<uint64_t> c = cumulative();
  const uint64_t total = c.back();
  if (total == 0) return 0.0;
  const double rank = q * static_cast<double>(total);
  for (size_t i = 0; i < c.size(); ++i) {
    if (static_cast<double>(c[i]) >= rank) {
      if (i == bounds_.size()) return bounds_.empty() ? 0.0 : bounds_.back();  // in +Inf: the last bound
      const double lo = i == 0 ? 0.0 : bounds_[i - 1];
      const double below = i == 0 ? 0.0 : static_cast<double>(c[i - 1]);
      const double in = static_cast<double>(c[i]) - below;
      return in <= 0 ? bounds_[i] : lo + (bounds_[i] - lo) * (rank - below) / in;
    }
  }
  return bounds_.empty() ? 0.0 : bounds_.back();
}

template <typename M>
M& Family<M>::with(const std::vector<std::string>& values) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = children_.find(values);
  if (it != children_.end()) return *it->second;
  std::unique_ptr<M> child;
  if constexpr (std::is_same_v<M, Histogram>) {
    child = std::make_unique<M>(histogram_bounds);
  } else {
    child = std::make_unique<M>();
  }
  M& ref = *child;
  children_.emplace(values, std::move(child));
  return ref;
}

template <typename M>
void Family<M>::remove_matching(const std::string& label, const std::string& value) {
  const auto pos = std::find(labels_.begin(), labels_.end(), label);
  if (pos == labels_.end()) return;
  const size_t k = pos - labels_.begin();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = children_.begin(); it != children_.end();) {
    it = it->first[k] == value ? children_.erase(it) : std::next(it);
  }
}

template <typename M>
void Family<M>::render(std::string& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  out += "# HELP " + name_ + " " + help_ + "\n# TYPE " + name_ + " " + type_name(type_) + "\n";
  for (const auto& [values, child] : children_) {
    if constexpr (std::is_same_v<M, Histogram>) {
      const std::vector<uint64_t> c = child->cumulative();
      const std::vector<double>& b = child->bounds();
      for (size_t i = 0; i <= b.size(); ++i) {
        std::string le;
        if (i == b.size()) {
          le = "+Inf";
        } else {
          append_number(le, b[i]);
        }
        out += name_ + "_bucket";
        append_labels(out, labels_, values, "le", le);
        out += ' ';
        append_number(out, static_cast<double>(c[i]));
        out += '\n';
      }
      out += name_ + "_sum";
      append_labels(out, labels_, values);
      out += ' ';
      append_number(out, child->sum());
      out += '\n' + name_ + "_count";
      append_labels(out, labels_, values);
      out += ' ';
      append_number(out, static_cast<double>(c.back()));
      out += '\n';
    } else {
      out += name_;
      append_labels(out, labels_, values);
      out += ' ';
      append_number(out, child->value());
      out += '\n';
    }
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

namespace {
// The family named `name` (under the registry's lock): the existing one, or a new one.
template <typename M>
Family<M>& family_of(std::vector<std::unique_ptr<FamilyBase>>& families, FamilyBase* existing,
                     const std::string& name, const std::string& help, std::vector<std::string> labels,
                     MetricType type) {
  if (existing) {
    auto* same = dynamic_cast<Family<M>*>(existing);
    EMBER_CHECK(same, "[ember-serve] metric ", name, " is registered twice with different types");
    return *same;
  }
  auto f = std::make_unique<Family<M>>(name, help, std::move(labels), type);
  Family<M>& ref = *f;
  families.push_back(std::move(f));
  return ref;
}
}  // namespace

Family<Counter>& Registry::counter(const std::string& name, const std::string& help,
                                   std::vector<std::string> labels) {
  std::lock_guard<std::mutex> lock(mu_);
  return family_of<Counter>(families_, find_locked(name), name, help, std::move(labels), MetricType::Counter);
}

Family<Gauge>& Registry::gauge(const std::string& name, const std::string& help, std::vector<std::string> labels) {
  std::lock_guard<std::mutex> lock(mu_);
  return family_of<Gauge>(families_, find_locked(name), name, help, std::move(labels), MetricType::Gauge);
}

Family<Histogram>& Registry::histogram(const std::string& name, const std::string& help,
                                       std::vector<std::string> labels, std::vector<double> bounds) {
  std::lock_guard<std::mutex> lock(mu_);
  FamilyBase* existing = find_locked(name);
  Family<Histogram>& f = family_of<Histogram>(families_, existing, name, help, std::move(labels),
                                              MetricType::Histogram);
  if (!existing) f.histogram_bounds = std::move(bounds);
  return f;
}

FamilyBase* Registry::find_locked(const std::string& name) const {
  for (const auto& f : families_)
    if (f->name() == name) return f.get();
  return nullptr;
}

std::string Registry::render() const {
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : families_) f->render(out);
  return out;
}

void Registry::remove_matching(const std::string& label, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : families_) f->remove_matching(label, value);
}

std::vector<double> latency_buckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::vector<double> batch_size_buckets() { return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}; }

std::string escape_label(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace ember::serve
