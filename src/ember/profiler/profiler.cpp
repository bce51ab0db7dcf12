#include "ember/profiler/profiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "ember/core/allocator.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/tensor.h"
#include "ember/guards/guards.h"
#include "ember/nn/live_modules.h"
#include "ember/optim/optimizer.h"
#include "ember/serialize/json.h"

namespace ember::profiler {

const char* kind_name(EventKind k) {
  switch (k) {
    case EventKind::Op: return "op";
    case EventKind::Backward: return "backward";
    case EventKind::User: return "user";
    case EventKind::DataLoader: return "dataloader";
    case EventKind::Optimizer: return "optimizer";
  }
  return "other";
}

namespace {
void append_shape(std::string& s, const Tensor* t) {
  s += '[';
  if (t && t->defined()) {
    for (int64_t d = 0; d < t->dim(); ++d) {
      if (d) s += ", ";
      s += std::to_string(t->size(d));
    }
  }
  s += ']';
}

// Note [Input shapes and dtypes]: an op's inputs are recorded as two strings that are
// JSON arrays, so the Chrome trace carries them as they are: shapes "[[2, 3], [3]]"
// (torch's input_shapes; [] for a 0-d tensor or an absent input) and dtypes
// "[\"float32\", \"int64\"]" (ember's dtype names; "" for an absent input). Only
// tensors are inputs: scalars and other arguments are left out.
template <typename Inputs>
void format_inputs(const Inputs& inputs, size_t n, std::string& shapes, std::string& dtypes) {
  shapes = "[";
  dtypes = "[";
  for (size_t i = 0; i < n; ++i) {
    const Tensor* t = inputs[i];
    if (i) {
      shapes += ", ";
      dtypes += ", ";
    }
    append_shape(shapes, t);
    dtypes += '"';
    if (t && t->defined()) dtypes += dtype_name(t->dtype());
    dtypes += '"';
  }
  shapes += ']';
  dtypes += ']';
}
}  // namespace

std::string shapes_of(std::initializer_list<const Tensor*> tensors) {
  std::string s = "[";
  bool first = true;
  for (const Tensor* t : tensors) {
    if (!first) s += ", ";
    first = false;
    append_shape(s, t);
  }
  return s + "]";
}

namespace {

using Clock = std::chrono::steady_clock;

// An event being recorded: pushed at its start, finished at its end.
struct Frame {
  const char* name = nullptr;
  std::string owned_name;
  EventKind kind = EventKind::Op;
  int64_t start_ns = 0;
  int64_t child_ns = 0;
  std::string shapes, dtypes;
  int64_t flops = 0;
};

struct ThreadBuffer {
  uint32_t index = 0;
  std::vector<Frame> stack;
  std::vector<Event> events;
};

enum class Phase { Off, Warmup, Active };

const char* current_op_name();

// Live blocks allocated while the profile records memory, with the step and op that
// allocated them (the leak report).
struct MemoryTracker final : ember::detail::AllocationHook {
  struct Block {
    size_t bytes;
    int step;
    std::string op;
  };
  std::mutex mu;
  std::unordered_map<const void*, Block> live;
  std::atomic<int>* step = nullptr;

  void on_allocate(const void* ptr, size_t nbytes) override {
    const char* op = current_op_name();
    std::lock_guard<std::mutex> lock(mu);
    live[ptr] = Block{nbytes, step->load(std::memory_order_relaxed), op};
  }
  void on_free(const void* ptr, size_t) override {
    std::lock_guard<std::mutex> lock(mu);
    live.erase(ptr);
  }
  LeakReport report(int s) {
    LeakReport r;
    r.step = s;
    std::map<std::string, int64_t> by_op;
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [ptr, b] : live) {
      if (b.step != s) continue;
      r.bytes += static_cast<int64_t>(b.bytes);
      ++r.blocks;
      by_op[b.op] += static_cast<int64_t>(b.bytes);
    }
    r.by_op.assign(by_op.begin(), by_op.end());
    std::stable_sort(r.by_op.begin(), r.by_op.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    return r;
  }
};

}  // namespace

namespace {
// Note [Memory by category] (profiler.h): `allocated` split by what holds it.
MemoryByCategory categorize(int64_t allocated) {
  MemoryByCategory c;
  c.known = true;
  const optim::detail::OptimizerMemory m = optim::detail::live_optimizer_memory(nn::detail::live_module_parameters());
  c.parameters = m.parameters;
  c.gradients = m.gradients;
  c.optimizer_state = m.state;
  const int64_t rest = std::max<int64_t>(0, allocated - c.parameters - c.gradients - c.optimizer_state);
  c.activations = std::min(rest, guards::saved_tensor_stats().bytes);
  c.other = rest - c.activations;
  return c;
}
}  // namespace

struct Profile::State {
  std::thread::id owner = std::this_thread::get_id();
  ProfileOptions options;
  Clock::time_point t0 = Clock::now();
  uint64_t generation = 0;
  std::mutex mu;
  std::vector<std::unique_ptr<ThreadBuffer>> threads;  // guarded by mu
  std::atomic<bool> recording{false};
  std::atomic<int> step{0};
  bool stopped = false;
  int observer = -1;
  std::unique_ptr<MemoryTracker> memory;
  std::vector<LeakReport> leaks;  // guarded by mu

  Phase phase(int s) const {
    const Schedule& sc = options.schedule;
    if (sc.active <= 0) return Phase::Active;
    if (s < sc.skip_first) return Phase::Off;
    const int cycle = sc.wait + sc.warmup + sc.active;
    const int k = s - sc.skip_first;
    if (sc.repeat > 0 && k / cycle >= sc.repeat) return Phase::Off;
    const int in = k % cycle;
    if (in < sc.wait) return Phase::Off;
    if (in < sc.wait + sc.warmup) return Phase::Warmup;
    return Phase::Active;
  }
  int64_t now_ns() const { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count(); }
};

namespace detail {
std::atomic<int> g_active{0};
}

namespace {

std::mutex g_mu;
std::shared_ptr<Profile::State> g_state;  // the recording profile; guarded by g_mu
std::atomic<uint64_t> g_generation{0};

struct ThreadCache {
  uint64_t generation = 0;
  Profile::State* state = nullptr;
  ThreadBuffer* buf = nullptr;
  std::shared_ptr<Profile::State> keep;  // the state outlives this thread's use of it
};
thread_local ThreadCache tl_cache;

ThreadBuffer* buffer() {
  const uint64_t gen = g_generation.load(std::memory_order_acquire);
  if (tl_cache.generation == gen && tl_cache.buf) return tl_cache.buf;
  std::shared_ptr<Profile::State> st;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    st = g_state;
  }
  if (!st) return nullptr;
  std::lock_guard<std::mutex> lock(st->mu);
  if (st->stopped) return nullptr;
  auto b = std::make_unique<ThreadBuffer>();
  b->index = static_cast<uint32_t>(st->threads.size());
  tl_cache.buf = b.get();
  st->threads.push_back(std::move(b));
  tl_cache.state = st.get();
  tl_cache.generation = st->generation;
  tl_cache.keep = st;
  return tl_cache.buf;
}

}  // namespace

bool detail::range_begin(const char* name, std::string owned_name, EventKind kind) {
  ThreadBuffer* b = buffer();
  if (!b) return false;
  Frame f;
  f.name = name;
  f.owned_name = std::move(owned_name);
  f.kind = kind;
  f.start_ns = tl_cache.state->now_ns();
  b->stack.push_back(std::move(f));
  return true;
}

void detail::range_end() {
  if (tl_cache.generation != g_generation.load(std::memory_order_acquire)) return;  // a profile ended
  ThreadBuffer* b = tl_cache.buf;
  if (!b || b->stack.empty()) return;
  Profile::State& st = *tl_cache.state;
  Frame f = std::move(b->stack.back());
  b->stack.pop_back();
  const int64_t end = st.now_ns();
  const int64_t total = end - f.start_ns;
  if (!b->stack.empty()) b->stack.back().child_ns += total;
  if (!st.recording.load(std::memory_order_relaxed)) return;
  Event e;
  e.name = f.name ? std::string(f.name) : std::move(f.owned_name);
  e.kind = f.kind;
  e.start_ns = f.start_ns;
  e.end_ns = end;
  e.self_ns = total - f.child_ns;
  e.thread = b->index;
  e.depth = static_cast<int>(b->stack.size());
  e.step = st.options.schedule.active > 0 ? st.step.load(std::memory_order_relaxed) : -1;
  e.shapes = std::move(f.shapes);
  e.dtypes = std::move(f.dtypes);
  e.flops = f.flops;
  if (st.options.profile_memory) {
    e.memory_bytes = memory_allocated();
    if (std::this_thread::get_id() == st.owner) e.categories = categorize(e.memory_bytes);
  }
  b->events.push_back(std::move(e));
}

namespace {
const char* current_op_name() {
  if (tl_cache.generation == g_generation.load(std::memory_order_acquire) && tl_cache.buf &&
      !tl_cache.buf->stack.empty()) {
    const Frame& f = tl_cache.buf->stack.back();
    return f.name ? f.name : f.owned_name.c_str();
  }
  const char* op = OpScope::outermost();
  return op ? op : "(outside any op)";
}
}  // namespace

void detail::annotate(std::initializer_list<const Tensor*> inputs, int64_t flops) {
  if (tl_cache.generation != g_generation.load(std::memory_order_acquire) || !tl_cache.buf) return;
  ThreadBuffer* b = tl_cache.buf;
  if (b->stack.empty()) return;
  Frame& f = b->stack.back();
  // The op's OpScope normally recorded its inputs already: those (the arguments the user
  // passed) win over the operands seen here, which may be reshaped.
  if (tl_cache.state->options.record_shapes && f.shapes.empty()) {
    format_inputs(inputs.begin(), inputs.size(), f.shapes, f.dtypes);
  }
  if (tl_cache.state->options.with_flops) f.flops = flops;
}

namespace {
// Called right after range_begin pushed the op's frame. Nothing is formatted in a
// schedule's wait steps, whose events are dropped.
void record_inputs(const OpInputs& inputs) {
  const Profile::State& st = *tl_cache.state;
  if (inputs.size() == 0 || !st.options.record_shapes || !st.recording.load(std::memory_order_relaxed)) return;
  Frame& f = tl_cache.buf->stack.back();
  format_inputs(inputs, inputs.size(), f.shapes, f.dtypes);
}
}  // namespace

Profile::Profile(ProfileOptions options) : state_(std::make_shared<State>()) {
  state_->options = options;
  const Schedule& sc = options.schedule;
  EMBER_CHECK(sc.skip_first >= 0 && sc.wait >= 0 && sc.warmup >= 0 && sc.active >= 0 && sc.repeat >= 0,
              "[profiler::Profile] schedule counts must be >= 0, got skip_first=", sc.skip_first, " wait=", sc.wait,
              " warmup=", sc.warmup, " active=", sc.active, " repeat=", sc.repeat);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    EMBER_CHECK(g_state == nullptr, "[profiler::Profile] another profile is recording; stop() it first");
    state_->generation = g_generation.load() + 1;
    g_state = state_;
    g_generation.store(state_->generation, std::memory_order_release);
  }
  state_->recording = state_->phase(0) != Phase::Off;
  state_->observer = add_op_observer([](const OpEvent& e) {
    if (e.entering) {
      const EventKind kind = std::strncmp(e.name, "optim::", 7) == 0 ? EventKind::Optimizer : EventKind::Op;
      if (detail::range_begin(e.name, {}, kind)) record_inputs(e.inputs);
    } else {
      detail::range_end();
    }
  });
  if (options.profile_memory) {
    state_->memory = std::make_unique<MemoryTracker>();
    state_->memory->step = &state_->step;
    ember::detail::set_allocation_hook(state_->memory.get());
  }
  detail::g_active.fetch_add(1);
}

Profile::~Profile() { stop(); }

void Profile::stop() {
  if (state_->observer < 0) return;
  detail::g_active.fetch_sub(1);
  remove_op_observer(state_->observer);
  state_->observer = -1;
  if (state_->memory) {
    // Another thread may be inside the hook right now: the tracker is emptied but kept
    // (a few bytes per profile) instead of freed under it.
    ember::detail::set_allocation_hook(nullptr);
    {
      std::lock_guard<std::mutex> lock(state_->memory->mu);
      state_->memory->live.clear();
    }
    static std::mutex retired_mu;
    static std::vector<std::unique_ptr<MemoryTracker>> retired;
    std::lock_guard<std::mutex> lock(retired_mu);
    retired.push_back(std::move(state_->memory));
  }
  state_->recording = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_state.reset();
    g_generation.fetch_add(1, std::memory_order_release);  // threads' caches go stale
  }
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->stopped = true;
}

void Profile::step() {
  if (state_->memory) {
    LeakReport r = state_->memory->report(state_->step.load());
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->leaks.push_back(std::move(r));
  }
  const int s = state_->step.fetch_add(1) + 1;
  if (state_->observer >= 0) state_->recording = state_->phase(s) != Phase::Off;
}

int Profile::current_step() const { return state_->step.load(); }

std::vector<Event> Profile::events() const {
  std::vector<Event> out;
  std::lock_guard<std::mutex> lock(state_->mu);
  for (const auto& t : state_->threads) {
    for (const Event& e : t->events) {
      if (e.step >= 0 && state_->phase(e.step) != Phase::Active) continue;  // warm-up steps
      out.push_back(e);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    return a.thread != b.thread ? a.thread < b.thread : a.start_ns < b.start_ns;
  });
  return out;
}

std::vector<KeyAverage> Profile::key_averages(bool group_by_input_shape) const {
  std::map<std::pair<std::string, std::string>, KeyAverage> groups;
  std::vector<std::pair<std::string, std::string>> order;
  for (const Event& e : events()) {
    auto key = std::make_pair(e.name, group_by_input_shape ? e.shapes : std::string());
    auto it = groups.find(key);
    if (it == groups.end()) {
      KeyAverage k;
      k.name = e.name;
      k.shapes = key.second;
      k.kind = e.kind;
      it = groups.emplace(key, k).first;
      order.push_back(key);
    }
    KeyAverage& k = it->second;
    ++k.count;
    k.self_ns += e.self_ns;
    k.total_ns += e.end_ns - e.start_ns;
    k.flops += e.flops;
  }
  std::vector<KeyAverage> out;
  for (const auto& key : order) out.push_back(groups[key]);
  return out;
}

namespace {
std::string format_time(int64_t ns) {
  char buf[32];
  if (ns >= 1000000000) {
    std::snprintf(buf, sizeof buf, "%.3fs", static_cast<double>(ns) / 1e9);
  } else if (ns >= 1000000) {
    std::snprintf(buf, sizeof buf, "%.3fms", static_cast<double>(ns) / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.3fus", static_cast<double>(ns) / 1e3);
  }
  return buf;
}
}  // namespace

std::string Profile::table(const std::string& sort_by, int row_limit, bool group_by_input_shape) const {
  EMBER_CHECK(sort_by == "self_cpu_time_total" || sort_by == "cpu_time_total" || sort_by == "count" ||
                  sort_by == "flops",
              "[profiler::Profile::table] sort_by must be self_cpu_time_total, cpu_time_total, count or flops, got \"",
              sort_by, "\"");
  std::vector<KeyAverage> rows = key_averages(group_by_input_shape);
  int64_t self_total = 0;
  for (const KeyAverage& k : rows) self_total += k.self_ns;
  std::stable_sort(rows.begin(), rows.end(), [&](const KeyAverage& a, const KeyAverage& b) {
    if (sort_by == "cpu_time_total") return a.total_ns > b.total_ns;
    if (sort_by == "count") return a.count > b.count;
    if (sort_by == "flops") return a.flops > b.flops;
    return a.self_ns > b.self_ns;
  });
  if (row_limit > 0 && static_cast<int>(rows.size()) > row_limit) rows.resize(static_cast<size_t>(row_limit));
  size_t name_w = 4;
  for (const KeyAverage& k : rows) name_w = std::max(name_w, std::min<size_t>(k.name.size(), 60));
  const bool shapes = group_by_input_shape;
  const bool flops = std::any_of(rows.begin(), rows.end(), [](const KeyAverage& k) { return k.flops > 0; });
  std::ostringstream os;
  auto rule = [&] {
    os << std::string(name_w, '-');
    for (int i = 0; i < 6; ++i) os << "  " << std::string(12, '-');
    if (flops) os << "  " << std::string(12, '-');
    if (shapes) os << "  " << std::string(30, '-');
    os << "\n";
  };
  auto cell = [&](const std::string& s) {
    os << "  " << std::string(s.size() < 12 ? 12 - s.size() : 0, ' ') << s;
  };
  rule();
  os << std::string(name_w - 4, ' ') << "Name";
  for (const char* h : {"Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"}) cell(h);
  if (flops) cell("Total MFLOPs");
  if (shapes) os << "  Input Shapes";
  os << "\n";
  rule();
  char buf[64];
  for (const KeyAverage& k : rows) {
    std::string name = k.name.size() > 60 ? k.name.substr(0, 57) + "..." : k.name;
    os << std::string(name_w - name.size(), ' ') << name;
    std::snprintf(buf, sizeof buf, "%.2f%%", self_total ? 100.0 * static_cast<double>(k.self_ns) / static_cast<double>(self_total) : 0.0);
    cell(buf);
    cell(format_time(k.self_ns));
    std::snprintf(buf, sizeof buf, "%.2f%%", self_total ? 100.0 * static_cast<double>(k.total_ns) / static_cast<double>(self_total) : 0.0);
    cell(buf);
    cell(format_time(k.total_ns));
    cell(format_time(k.count ? k.total_ns / k.count : 0));
    cell(std::to_string(k.count));
    if (flops) {
      std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(k.flops) / 1e6);
      cell(k.flops ? buf : "");
    }
    if (shapes) os << "  " << k.shapes;
    os << "\n";
  }
  rule();
  os << "Self CPU time total: " << format_time(self_total) << "\n";
  return os.str();
}

std::string Profile::chrome_trace() const {
  const std::vector<Event> evs = events();
  std::string out = "{\"traceEvents\":[\n";
  out += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"ember\"}}";
  uint32_t threads = 0;
  for (const Event& e : evs) threads = std::max(threads, e.thread + 1);
  for (uint32_t t = 0; t < threads; ++t) {
    out += ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":" + std::to_string(t) +
           ",\"args\":{\"name\":\"thread " + std::to_string(t) + "\"}}";
  }
  char buf[96];
  for (const Event& e : evs) {
    out += ",\n{\"ph\":\"X\",\"cat\":\"";
    out += kind_name(e.kind);
    out += "\",\"name\":";
    json::append_string(out, json::is_valid_utf8(e.name) ? e.name : std::string("(invalid utf-8)"));
    std::snprintf(buf, sizeof buf, ",\"pid\":1,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f", e.thread,
                  static_cast<double>(e.start_ns) / 1e3, static_cast<double>(e.end_ns - e.start_ns) / 1e3);
    out += buf;
    out += ",\"args\":{\"self_us\":";
    std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(e.self_ns) / 1e3);
    out += buf;
    if (!e.shapes.empty()) {  // JSON arrays already (Note [Input shapes and dtypes]); torch's keys
      out += ",\"Input Dims\":" + e.shapes;
      out += ",\"Input type\":" + e.dtypes;
    }
    if (e.flops) out += ",\"flops\":" + std::to_string(e.flops);
    if (e.step >= 0) out += ",\"step\":" + std::to_string(e.step);
    out += "}}";
  }
  for (const MemorySample& m : memory_timeline()) {
    std::snprintf(buf, sizeof buf, ",\n{\"ph\":\"C\",\"name\":\"memory\",\"pid\":1,\"ts\":%.3f,\"args\":{\"allocated_bytes\":",
                  static_cast<double>(m.time_ns) / 1e3);
    out += buf;
    out += std::to_string(m.allocated_bytes) + "}}";
    if (!m.categories.known) continue;
    // A second counter track, stacked by category in Perfetto and chrome://tracing.
    const MemoryByCategory& c = m.categories;
    std::snprintf(buf, sizeof buf, ",\n{\"ph\":\"C\",\"name\":\"memory by category\",\"pid\":1,\"ts\":%.3f,\"args\":{",
                  static_cast<double>(m.time_ns) / 1e3);
    out += buf;
    out += "\"parameters\":" + std::to_string(c.parameters) + ",\"gradients\":" + std::to_string(c.gradients) +
           ",\"optimizer_state\":" + std::to_string(c.optimizer_state) +
           ",\"activations\":" + std::to_string(c.activations) + ",\"other\":" + std::to_string(c.other) + "}}";
  }
  out += "\n],\"displayTimeUnit\":\"ms\"}\n";
  return out;
}

void Profile::export_chrome_trace(const std::string& path) const {
  const std::string text = chrome_trace();
  std::ofstream f(path, std::ios::binary);
  EMBER_CHECK(f.good(), "[profiler::Profile::export_chrome_trace] cannot write ", path);
  f << text;
  EMBER_CHECK(f.good(), "[profiler::Profile::export_chrome_trace] writing ", path, " failed");
}

std::vector<LeakReport> Profile::leaks() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->leaks;
}

std::vector<MemorySample> Profile::memory_timeline() const {
  std::vector<MemorySample> out;
  for (const Event& e : events()) {
    if (e.memory_bytes >= 0) out.push_back({e.end_ns, e.memory_bytes, e.name, e.categories});
  }
  std::stable_sort(out.begin(), out.end(), [](const MemorySample& a, const MemorySample& b) { return a.time_ns < b.time_ns; });
  return out;
}

}  // namespace ember::profiler
