// ember::profiler: what it records (ops, nesting, backward nodes, user ranges, threads,
// schedules), its tables, the Chrome trace and the memory timeline.
#include "ember/profiler/profiler.h"

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <thread>

#include "chrome_trace_check.h"
#include "ember/serialize/json.h"

namespace profiler_test {

using namespace ember;
using profiler::Event;
using profiler::EventKind;
using profiler::Profile;

const profiler::KeyAverage* find(const std::vector<profiler::KeyAverage>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

// Every event at depth d > 0 lies inside an event at depth d - 1 on its thread.
void expect_nested(const std::vector<Event>& evs) {
  for (const Event& e : evs) {
    EXPECT_LE(e.start_ns, e.end_ns) << e.name;
    EXPECT_GE(e.self_ns, 0) << e.name;
    EXPECT_LE(e.self_ns, e.end_ns - e.start_ns) << e.name;
    if (e.depth == 0) continue;
    bool inside = false;
    for (const Event& p : evs) {
      if (p.thread == e.thread && p.depth == e.depth - 1 && p.start_ns <= e.start_ns && p.end_ns >= e.end_ns) {
        inside = true;
      }
    }
    EXPECT_TRUE(inside) << e.name << " at depth " << e.depth << " has no parent";
  }
}

TEST(Profiler, CountsOpsWithFlopsAndNesting) {
  const Tensor a = randn({16, 32}), b = randn({32, 8});
  Profile prof;
  EXPECT_TRUE(profiler::is_enabled());
  Tensor c = relu(mm(a, b));
  c = relu(mm(a, b));
  Tensor s = c.sum();
  prof.stop();
  EXPECT_FALSE(profiler::is_enabled());
  (void)relu(c);  // after stop: not recorded
  const auto rows = prof.key_averages();
  const profiler::KeyAverage* mm_row = find(rows, "mm");
  ASSERT_NE(mm_row, nullptr);
  EXPECT_EQ(mm_row->count, 2);
  EXPECT_EQ(mm_row->flops, 2 * (2 * 16 * 32 * 8));
  ASSERT_NE(find(rows, "relu"), nullptr);
  EXPECT_EQ(find(rows, "relu")->count, 2);
  ASSERT_NE(find(rows, "sum"), nullptr);
  EXPECT_EQ(find(rows, "sum")->count, 1);
  const auto evs = prof.events();
  expect_nested(evs);
  int64_t self = 0;
  for (const auto& r : rows) self += r.self_ns;
  int64_t top_total = 0;
  for (const Event& e : evs)
    if (e.depth == 0) top_total += e.end_ns - e.start_ns;
  EXPECT_EQ(self, top_total);  // self times partition the top-level time
}

TEST(Profiler, UserRangesBackwardNodesAndOptimizerSteps) {
  manual_seed(0);
  nn::Linear lin(4, 3);
  optim::SGD opt(lin->parameters(), optim::SGDOptions(0.1));
  const Tensor x = randn({5, 4});
  Profile prof;
  {
    EMBER_RECORD("forward pass");
    Tensor loss = lin->forward(x).pow(2).mean();
    loss.backward();
  }
  opt.step();
  prof.stop();
  const auto evs = prof.events();
  expect_nested(evs);
  const Event* range = nullptr;
  int backward = 0, optimizer = 0;
  for (const Event& e : evs) {
    if (e.name == "forward pass") range = &e;
    backward += e.kind == EventKind::Backward;
    optimizer += e.kind == EventKind::Optimizer;
  }
  ASSERT_NE(range, nullptr);
  EXPECT_EQ(range->kind, EventKind::User);
  EXPECT_EQ(range->depth, 0);
  bool linear_inside = false;
  for (const Event& e : evs)
    if (e.name == "linear" && e.start_ns >= range->start_ns && e.end_ns <= range->end_ns && e.depth == 1)
      linear_inside = true;
  EXPECT_TRUE(linear_inside);
  EXPECT_GE(backward, 3);  // pow, mean, linear's nodes (+ accumulate)
  EXPECT_EQ(optimizer, 1);
}

TEST(Profiler, ScheduleKeepsOnlyActiveSteps) {
  const Tensor x = randn({8});
  profiler::ProfileOptions o;
  o.schedule = {.skip_first = 1, .wait = 1, .warmup = 1, .active = 2, .repeat = 1};
  Profile prof(o);
  for (int step = 0; step < 8; ++step) {
    (void)relu(x);
    prof.step();
  }
  prof.stop();
  const auto evs = prof.events();
  ASSERT_EQ(evs.size(), 2u);  // steps 3 and 4: skip 0, wait 1, warm-up 2
  EXPECT_EQ(evs[0].step, 3);
  EXPECT_EQ(evs[1].step, 4);
}

TEST(Profiler, ThreadsGetTheirOwnTimelines) {
  Profile prof;
  (void)relu(randn({4}));
  std::thread t([] { (void)tanh(randn({4})); });
  t.join();
  prof.stop();
  bool tanh_on_other = false, relu_on_first = false;
  for (const Event& e : prof.events()) {
    if (e.name == "tanh") tanh_on_other = e.thread != 0;
    if (e.name == "relu") relu_on_first = e.thread == 0;
  }
  EXPECT_TRUE(tanh_on_other);
  EXPECT_TRUE(relu_on_first);
}

TEST(Profiler, ChromeTraceIsValidAndNested) {
  const Tensor a = randn({8, 8});
  profiler::ProfileOptions o;
  o.record_shapes = true;
  o.profile_memory = true;
  Profile prof(o);
  {
    EMBER_RECORD("block");
    (void)relu(mm(a, a)).sum();
  }
  prof.stop();
  TraceCheck trace;
  check_chrome_trace(prof.chrome_trace(), trace);
  EXPECT_GT(trace.counters, 0);  // the memory timeline
  ASSERT_FALSE(trace.complete.empty());
  EXPECT_EQ(trace.complete.front()->find("name")->s, "block");
  bool saw_mm = false;
  for (const json::Json* e : trace.complete) {
    if (e->find("name")->s != "mm") continue;
    saw_mm = true;
    EXPECT_EQ(render(*e->find("args")->find("Input Dims")), "[[8, 8], [8, 8]]");
    EXPECT_EQ(render(*e->find("args")->find("Input type")), R"(["float32", "float32"])");
    EXPECT_EQ(e->find("args")->find("flops")->i, 2 * 8 * 8 * 8);
  }
  EXPECT_TRUE(saw_mm);
}

TEST(Profiler, TableAndShapeGrouping) {
  const Tensor a = randn({4, 4}), b = randn({4, 6});
  profiler::ProfileOptions o;
  o.record_shapes = true;
  Profile prof(o);
  (void)mm(a, a);
  (void)mm(a, b);
  (void)mm(a, b);
  prof.stop();
  const auto grouped = prof.key_averages(/*group_by_input_shape=*/true);
  int mm_rows = 0;
  for (const auto& r : grouped) {
    if (r.name != "mm") continue;
    ++mm_rows;
    EXPECT_EQ(r.count, r.shapes == "[[4, 4], [4, 6]]" ? 2 : 1) << r.shapes;
  }
  EXPECT_EQ(mm_rows, 2);
  const std::string t = prof.table("count", 5, true);
  EXPECT_NE(t.find("Self CPU %"), std::string::npos) << t;
  EXPECT_NE(t.find("# of Calls"), std::string::npos) << t;
  EXPECT_NE(t.find("[[4, 4], [4, 6]]"), std::string::npos) << t;
  EXPECT_NE(t.find("Self CPU time total:"), std::string::npos) << t;
  try {
    (void)prof.table("speed");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sort_by must be self_cpu_time_total, cpu_time_total, count or flops"),
              std::string::npos);
  }
}

TEST(Profiler, MemoryTimelineFollowsTheAllocator) {
  profiler::ProfileOptions o;
  o.profile_memory = true;
  const Tensor src = randn({1 << 18});
  const int64_t before = memory_allocated();
  Profile prof(o);
  Tensor big = relu(src);  // 1 MiB more
  prof.stop();
  const auto timeline = prof.memory_timeline();
  ASSERT_FALSE(timeline.empty());
  EXPECT_EQ(timeline.back().after, "relu");
  EXPECT_GE(timeline.back().allocated_bytes - before, int64_t{1} << 20);
  EXPECT_EQ(timeline.back().allocated_bytes, memory_allocated());
}

// Note [Memory by category]: a training loop's samples split into parameters, gradients,
// optimizer state, saved activations and the rest, checked against the sizes the loop
// implies: parameters all along, activations during the forward and none after backward,
// gradients of every parameter after backward, Adam's two moments after its first step; the
// categories add up to the allocated bytes. The Chrome trace carries them as a counter.
TEST(Profiler, MemoryByCategory) {
  manual_seed(0);
  nn::Sequential model(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
  optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3));
  int64_t param_bytes = 0;
  for (const Tensor& p : model->parameters()) param_bytes += static_cast<int64_t>(p.nbytes());
  const Tensor x = randn({32, 64});
  const Tensor y = randint(0, 10, {32});
  profiler::ProfileOptions o;
  o.profile_memory = true;
  Profile prof(o);
  for (int s = 0; s < 2; ++s) {
    opt.zero_grad();
    Tensor loss;
    {
      profiler::RecordFunction r("test_forward");
      loss = nn::functional::cross_entropy(model->forward(x), y);
    }
    {
      profiler::RecordFunction r("test_backward");
      loss.backward();
    }
    opt.step();
  }
  prof.stop();
  std::vector<profiler::MemorySample> forward, backward, step;
  int known = 0;
  for (const profiler::MemorySample& m : prof.memory_timeline()) {
    if (!m.categories.known) continue;
    ++known;
    const profiler::MemoryByCategory& c = m.categories;
    EXPECT_EQ(c.parameters, param_bytes) << m.after;
    EXPECT_EQ(c.parameters + c.gradients + c.optimizer_state + c.activations + c.other, m.allocated_bytes) << m.after;
    if (m.after == "test_forward") forward.push_back(m);
    if (m.after == "test_backward") backward.push_back(m);
    if (m.after == "optim::step") step.push_back(m);
  }
  EXPECT_GT(known, 10);
  ASSERT_EQ(forward.size(), 2u);
  ASSERT_EQ(backward.size(), 2u);
  ASSERT_EQ(step.size(), 2u);
  // The forward saved its inputs for backward (at least x and the hidden activations).
  EXPECT_GE(forward[0].categories.activations, 32 * (64 + 128) * 4);
  EXPECT_EQ(forward[0].categories.gradients, 0);  // zero_grad() sets them to None
  EXPECT_EQ(forward[0].categories.optimizer_state, 0);
  EXPECT_EQ(backward[0].categories.activations, 0);  // the graph is freed by backward
  EXPECT_EQ(backward[0].categories.gradients, param_bytes);
  EXPECT_EQ(step[0].categories.optimizer_state, 2 * param_bytes);  // exp_avg and exp_avg_sq
  EXPECT_EQ(forward[1].categories.optimizer_state, 2 * param_bytes);
  const std::string trace = prof.chrome_trace();
  EXPECT_NE(trace.find("\"name\":\"memory by category\""), std::string::npos);
  EXPECT_NE(trace.find("\"optimizer_state\":" + std::to_string(2 * param_bytes)), std::string::npos);
}

// Without an optimizer the live modules' parameters (and their .grad) are still counted
// (Note [Memory by category]); a parameter made outside any module is not.
TEST(Profiler, MemoryByCategoryWithoutAnOptimizer) {
  manual_seed(0);
  auto model = std::make_shared<nn::LinearImpl>(64, 16);
  const Tensor x = randn({8, 64});
  const Tensor loose = randn({1000}).requires_grad_();  // a leaf, but no module's
  const int64_t param_bytes = (64 * 16 + 16) * 4;
  profiler::ProfileOptions o;
  o.profile_memory = true;
  Profile prof(o);
  {
    profiler::RecordFunction r("test_forward");
    Tensor loss = model->forward(x).sum();
    loss.backward();
  }
  (void)relu(x);  // a sample after backward
  model.reset();  // the module is gone: its parameters are no longer counted
  (void)relu(x);
  prof.stop();
  std::vector<profiler::MemorySample> samples;
  for (const profiler::MemorySample& m : prof.memory_timeline())
    if (m.categories.known) samples.push_back(m);
  ASSERT_GE(samples.size(), 3u);
  EXPECT_EQ(samples.front().categories.parameters, param_bytes) << samples.front().after;
  EXPECT_EQ(samples.front().categories.gradients, 0);
  const profiler::MemorySample& after_backward = samples[samples.size() - 2];
  EXPECT_EQ(after_backward.after, "relu");
  EXPECT_EQ(after_backward.categories.parameters, param_bytes);
  EXPECT_EQ(after_backward.categories.gradients, param_bytes);
  EXPECT_EQ(samples.back().categories.parameters, 0);
  EXPECT_EQ(samples.back().categories.gradients, 0);
  for (const profiler::MemorySample& m : samples) {
    const profiler::MemoryByCategory& c = m.categories;
    EXPECT_EQ(c.parameters + c.gradients + c.optimizer_state + c.activations + c.other, m.allocated_bytes) << m.after;
    EXPECT_GE(c.other, static_cast<int64_t>(loose.nbytes())) << m.after;
  }
}

// Categories are read only on the profiling thread (Note [Memory by category]).
TEST(Profiler, MemoryCategoriesOnlyOnTheProfilingThread) {
  profiler::ProfileOptions o;
  o.profile_memory = true;
  Profile prof(o);
  Tensor a = relu(randn({100}));
  std::thread t([] { Tensor b = relu(randn({100})); });
  t.join();
  prof.stop();
  int on_main = 0, on_other = 0;
  for (const Event& e : prof.events()) {
    if (e.memory_bytes < 0) continue;
    (e.thread == 0 ? on_main : on_other) += e.categories.known ? 1 : 0;
    if (e.thread != 0) {
      EXPECT_FALSE(e.categories.known) << e.name;
    }
  }
  EXPECT_GT(on_main, 0);
  EXPECT_EQ(on_other, 0);
}

// The leak report: an evaluation loop that keeps its losses without no-grad mode keeps
// each step's graph and the activations it saved.
int64_t leaked_in_step(bool keep_graph, std::string* top_op) {
  manual_seed(1);
  nn::Linear lin(64, 64);
  const Tensor x = randn({32, 64});
  profiler::ProfileOptions o;
  o.profile_memory = true;
  Profile prof(o);
  std::vector<Tensor> kept;
  double total = 0;
  for (int s = 0; s < 4; ++s) {
    {
      Tensor loss = relu(lin->forward(x)).sum();
      if (keep_graph) {
        kept.push_back(loss);  // the graph, and the activations it saved, stay alive
      } else {
        total += loss.item<double>();
      }
    }
    prof.step();
  }
  prof.stop();
  const auto leaks = prof.leaks();
  EXPECT_EQ(leaks.size(), 4u);
  if (top_op && !leaks[2].by_op.empty()) *top_op = leaks[2].by_op.front().first;
  return leaks[2].bytes;
}

TEST(Profiler, LeakReportFindsAKeptGraph) {
  std::string top;
  const int64_t leaky = leaked_in_step(true, &top);
  const int64_t clean = leaked_in_step(false, nullptr);
  EXPECT_GE(leaky, 32 * 64 * 4);  // at least one [32, 64] activation per step
  EXPECT_LT(clean, leaky / 4);
  EXPECT_FALSE(top.empty());
  EXPECT_NE(top, "(outside any op)");
}

TEST(Profiler, OneAtATime) {
  Profile a;
  try {
    Profile b;
    FAIL() << "two profiles";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another profile is recording"), std::string::npos);
  }
  a.stop();
  Profile c;  // fine after stop
  c.stop();
  profiler::ProfileOptions bad;
  bad.schedule.wait = -1;
  EXPECT_THROW(Profile{bad}, Error);
}

}  // namespace profiler_test
