// ember::profiler with record_shapes: every op's input shapes and dtypes (Note [Input
// shapes and dtypes] in profiler.cpp), grouping by them, and the Chrome trace's args.
#include <ember/ember.h>
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "chrome_trace_check.h"
#include "ember/profiler/profiler.h"

namespace profiler_inputs_test {

using namespace ember;
using profiler::Event;
using profiler::Profile;
namespace F = nn::functional;

using Row = std::tuple<std::string, std::string, std::string>;  // name, shapes, dtypes

std::vector<Row> top_level_ops(const std::vector<Event>& evs) {
  std::vector<Row> rows;
  for (const Event& e : evs)
    if (e.depth == 0 && e.kind == profiler::EventKind::Op) rows.emplace_back(e.name, e.shapes, e.dtypes);
  return rows;
}

const Event* find_event(const std::vector<Event>& evs, const std::string& name, int depth) {
  for (const Event& e : evs)
    if (e.name == name && e.depth == depth) return &e;
  return nullptr;
}

// Inputs made before profiling, so that only the ops under test are recorded.
struct Inputs {
  Tensor a = randn({2, 3}), row = randn({3}), c = randn({4, 3});
  Tensor half = randn({2, 3}).to(kBFloat16);
  Tensor idx = tensor({1, 0, 1}, TensorOptions(kInt64));
  Tensor logits = randn({4, 5}), target = tensor({0, 4, 2, 1}, TensorOptions(kInt64));
  Tensor weight = ones({3}), bias = zeros({3});
  Tensor image = randn({1, 2, 4, 4});
};

void run_ops(const Inputs& in) {
  (void)add(in.a, in.row);
  (void)mul(in.a, 2);
  (void)relu(in.half);
  (void)in.a.sum();
  (void)softmax(in.a, 1);
  (void)cat({in.a, in.c}, 0);
  const Tensor flat = in.a.reshape({6});  // a view: not an op event (docs/profiler.md)
  (void)neg(flat);
  (void)in.a.index({in.idx});
  (void)F::cross_entropy(in.logits, in.target);
  (void)F::layer_norm(in.a, {3}, in.weight, in.bias);
  (void)max_pool2d(in.image, {2});
}

const char* kFloat2 = R"(["float32", "float32"])";

TEST(ProfilerInputs, EveryOpRecordsItsShapesAndDtypes) {
  manual_seed(0);
  const Inputs in;
  profiler::ProfileOptions o;
  o.record_shapes = true;
  Profile prof(o);
  run_ops(in);
  prof.stop();
  const std::vector<Event> evs = prof.events();
  const std::vector<Row> expected = {
      {"add", "[[2, 3], [3]]", kFloat2},
      {"mul", "[[2, 3]]", R"(["float32"])"},  // a scalar operand is not a tensor input
      {"relu", "[[2, 3]]", R"(["bfloat16"])"},
      {"sum", "[[2, 3]]", R"(["float32"])"},
      {"softmax", "[[2, 3]]", R"(["float32"])"},
      {"cat", "[[2, 3], [4, 3]]", kFloat2},  // a tensor list: one input per tensor
      {"neg", "[[6]]", R"(["float32"])"},
      {"index", "[[2, 3], [3]]", R"(["float32", "int64"])"},
      {"cross_entropy", "[[4, 5], [4], []]", R"(["float32", "int64", ""])"},  // no class weights
      {"layer_norm", "[[2, 3], [3], [3]]", R"(["float32", "float32", "float32"])"},
      {"max_pool2d", "[[1, 2, 4, 4]]", R"(["float32"])"},
  };
  EXPECT_EQ(top_level_ops(evs), expected);
  // Ops called by an op keep their own inputs: cross_entropy's mean reduction sums the
  // per-sample losses and divides the 0-d sum.
  const Event* ce = find_event(evs, "cross_entropy", 0);
  ASSERT_NE(ce, nullptr);
  std::vector<Row> nested;
  for (const Event& e : evs)
    if (e.depth == 1 && e.start_ns >= ce->start_ns && e.end_ns <= ce->end_ns)
      nested.emplace_back(e.name, e.shapes, e.dtypes);
  const std::vector<Row> expected_nested = {{"sum", "[[4]]", R"(["float32"])"}, {"div", "[[]]", R"(["float32"])"}};
  EXPECT_EQ(nested, expected_nested);
}

TEST(ProfilerInputs, MatrixProductsKeepTheirArgumentsAndFlops) {
  const Tensor x = randn({4, 8}), w = randn({3, 8}), b = randn({3});
  const Tensor p = randn({2, 4, 8}), q = randn({8, 5});
  profiler::ProfileOptions o;
  o.record_shapes = true;
  Profile prof(o);
  (void)F::linear(x, w, b);
  (void)matmul(p, q);
  prof.stop();
  // nn::functional::linear calls the linear op: both record the arguments as passed (not
  // the reshaped operands the product kernel sees), and the FLOPs go to the op that ran the
  // product only, set by the op itself and not overwritten by the inputs.
  using Product = std::tuple<int, std::string, std::string, int64_t>;  // depth, name, shapes, flops
  std::vector<Product> got;
  for (const Event& e : prof.events()) got.emplace_back(e.depth, e.name, e.shapes, e.flops);
  const std::vector<Product> expected = {
      {0, "linear", "[[4, 8], [3, 8], [3]]", 0},
      {1, "linear", "[[4, 8], [3, 8], [3]]", 2 * 4 * 8 * 3},
      {0, "matmul", "[[2, 4, 8], [8, 5]]", 2 * 2 * 4 * 8 * 5},
  };
  EXPECT_EQ(got, expected);
  EXPECT_EQ(prof.events()[0].dtypes, R"(["float32", "float32", "float32"])");
}

TEST(ProfilerInputs, GroupingByShapeSeparatesCalls) {
  const Tensor a = randn({2, 3}), b = randn({5});
  profiler::ProfileOptions o;
  o.record_shapes = true;
  Profile prof(o);
  (void)add(a, a);
  (void)add(b, b);
  (void)add(a, a);
  (void)relu(b);
  prof.stop();
  std::vector<std::tuple<std::string, std::string, int64_t>> rows;
  for (const auto& k : prof.key_averages(/*group_by_input_shape=*/true)) rows.emplace_back(k.name, k.shapes, k.count);
  const std::vector<std::tuple<std::string, std::string, int64_t>> expected = {
      {"add", "[[2, 3], [2, 3]]", 2}, {"add", "[[5], [5]]", 1}, {"relu", "[[5]]", 1}};
  EXPECT_EQ(rows, expected);
  const auto by_name = prof.key_averages();
  ASSERT_EQ(by_name.size(), 2u);
  EXPECT_EQ(by_name[0].name, "add");
  EXPECT_EQ(by_name[0].count, 3);
  EXPECT_EQ(by_name[0].shapes, "");
  const std::string table = prof.table("count", 0, true);
  EXPECT_NE(table.find("[[5], [5]]"), std::string::npos) << table;
}

TEST(ProfilerInputs, NothingRecordedWithoutRecordShapes) {
  manual_seed(0);
  const Inputs in;
  const Tensor m = randn({4, 4});
  Profile prof;  // record_shapes off (the default), with_flops on
  run_ops(in);
  (void)mm(m, m);
  prof.stop();
  const std::vector<Event> evs = prof.events();
  EXPECT_EQ(top_level_ops(evs).size(), 12u);
  for (const Event& e : evs) {
    EXPECT_EQ(e.shapes, "") << e.name;
    EXPECT_EQ(e.dtypes, "") << e.name;
  }
  const Event* mm_event = find_event(evs, "mm", 0);
  ASSERT_NE(mm_event, nullptr);
  EXPECT_EQ(mm_event->flops, 2 * 4 * 4 * 4);
  const std::string trace = prof.chrome_trace();
  EXPECT_EQ(trace.find("Input Dims"), std::string::npos);
  EXPECT_EQ(trace.find("Input type"), std::string::npos);
}

TEST(ProfilerInputs, ChromeTraceCarriesInputDimsAndTypes) {
  manual_seed(0);
  const Inputs in;
  profiler::ProfileOptions o;
  o.record_shapes = true;
  Profile prof(o);
  {
    EMBER_RECORD("step");
    run_ops(in);
  }
  prof.stop();
  profiler_test::TraceCheck trace;
  profiler_test::check_chrome_trace(prof.chrome_trace(), trace);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  // Each op event carries its inputs as JSON arrays, the same as Event::shapes/dtypes.
  std::vector<Row> from_trace;
  for (const ember::json::Json* e : trace.complete) {
    const ember::json::Json* args = e->find("args");
    ASSERT_NE(args, nullptr);
    const ember::json::Json* dims = args->find("Input Dims");
    const ember::json::Json* types = args->find("Input type");
    if (e->find("cat")->s != "op") {
      EXPECT_EQ(dims, nullptr) << e->find("name")->s;  // the user range has no inputs
      continue;
    }
    ASSERT_NE(dims, nullptr) << e->find("name")->s;
    ASSERT_NE(types, nullptr) << e->find("name")->s;
    EXPECT_EQ(dims->type, ember::json::Json::Type::Array);
    from_trace.emplace_back(e->find("name")->s, profiler_test::render(*dims), profiler_test::render(*types));
  }
  std::vector<Row> from_events;
  for (const Event& e : prof.events())
    if (e.kind == profiler::EventKind::Op) from_events.emplace_back(e.name, e.shapes, e.dtypes);
  EXPECT_EQ(from_trace, from_events);
  ASSERT_GE(from_trace.size(), 11u);
  EXPECT_EQ(from_trace[0], Row("add", "[[2, 3], [3]]", kFloat2));
}

TEST(ProfilerInputs, ObserversSeeTheInputs) {
  const Tensor a = randn({2, 3}), b = randn({4, 3});
  std::vector<std::string> seen;
  const int id = add_op_observer([&](const OpEvent& e) {
    if (!e.entering) return;
    std::string s = e.name;
    for (size_t i = 0; i < e.inputs.size(); ++i) s += " " + std::to_string(e.inputs[i]->size(0));
    seen.push_back(s);
  });
  (void)add(a, a);
  (void)cat({a, b});
  (void)a.index({tensor({0}, TensorOptions(kInt64))});
  remove_op_observer(id);
  EXPECT_EQ(seen, (std::vector<std::string>{"add 2 2", "cat 2 4", "index 2 1"}));
}

}  // namespace profiler_inputs_test
