// Graph IR and passes on graphs built by hand: the verifier, printing, dead-code and
// common-subexpression elimination, constant folding, batch norm folding, element-wise
// fusion, the memory plan and buffer reuse in the interpreter; artifacts (versions,
// unknown ops, damaged files); jit::compile's signature cache.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace jit_passes_test {

using ember::testing::ExpectError;
using jit::SymInt;

std::vector<SymInt> Shape(std::initializer_list<int64_t> s) {
  std::vector<SymInt> out;
  for (int64_t v : s) out.push_back({0, v});
  return out;
}

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/jit_passes_test_" + name; }

void ExpectSame(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  EXPECT_TRUE(got.equal(want)) << got << "\nvs\n" << want;
}

// x -> relu(x) twice (a common subexpression), their sum times a constant expression
// (2 + 3), and an unused exp(x).
jit::Graph HandBuilt() {
  jit::Graph g;
  const int x = g.add_input("x", kFloat32, Shape({4}));
  const int c2 = g.add_const(full({1}, 2.0));
  const int c3 = g.add_const(full({1}, 3.0));
  const int a = g.add_node("relu", {x})[0];
  const int b = g.add_node("relu", {x})[0];
  const int s = g.add_node("add", {a, b})[0];
  const int k = g.add_node("add", {c2, c3})[0];
  const int y = g.add_node("mul", {s, k})[0];
  g.add_node("exp", {x});
  g.outputs = {y};
  g.output_names = {"y"};
  g.infer_shapes();
  return g;
}

TEST(JitGraph, BuildPrintVerify) {
  jit::Graph g = HandBuilt();
  g.verify();
  const std::string s = g.str();
  EXPECT_NE(s.find("graph(%x: f32[4]):"), std::string::npos) << s;
  EXPECT_NE(s.find("f32[1] = const(2)"), std::string::npos) << s;
  EXPECT_NE(s.find("= relu(%x)"), std::string::npos) << s;
  EXPECT_NE(s.find("return (%"), std::string::npos) << s;
  Tensor x = tensor({-1.0f, 0.5f, 2.0f, -3.0f});
  ExpectSame(jit::GraphModule(g).forward(x), (x.relu() + x.relu()) * 5.0);

  // Broken graphs are refused naming what is wrong.
  jit::Graph bad = g;
  bad.nodes[0].inputs[0] = bad.nodes[2].outputs[0];  // reads a var defined later
  ExpectError([&] { bad.verify(); }, {"[jit::verify]", "node 0 (relu)", "before it is defined"});
  bad = g;
  bad.nodes[1].op = "frobnicate";
  ExpectError([&] { bad.verify(); }, {"unknown op 'frobnicate'", "version 1"});
  bad = g;
  bad.nodes[3].outputs = bad.nodes[2].outputs;
  ExpectError([&] { bad.verify(); }, {"node 3 (add)"});
  bad = g;
  bad.values.erase(bad.values.begin());
  ExpectError([&] { bad.verify(); }, {"constant", "has no tensor"});
  bad = g;
  bad.nodes[0].inputs[0] = 99;
  ExpectError([&] { bad.verify(); }, {"refers to var 99"});
  // Shapes: the declared ones hold; a wrong declaration is named with what the op computes.
  g.verify_shapes();
  bad = g;
  bad.vars[static_cast<size_t>(bad.nodes[0].outputs[0])].shape = Shape({5});
  ExpectError([&] { bad.verify_shapes(); }, {"node 0 (relu)", "is declared f32[5]", "computes f32[4]"});
  // A traced graph with a dynamic batch verifies at two batch sizes.
  auto mlp = nn::Sequential(nn::Linear(3, 4), nn::ReLU());
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::trace(*mlp, randn({2, 3}), opt).graph().verify_shapes();
}

TEST(JitPasses, DeadCodeCseAndConstantFolding) {
  jit::Graph g = HandBuilt();
  Tensor x = tensor({-1.0f, 0.5f, 2.0f, -3.0f});
  const Tensor want = jit::GraphModule(g).forward(x);
  EXPECT_EQ(jit::eliminate_dead_code(g), 1);  // exp
  EXPECT_EQ(g.op_histogram().count("exp"), 0u);
  EXPECT_EQ(jit::eliminate_common_subexpressions(g), 1);  // the second relu
  EXPECT_EQ(g.op_histogram().at("relu"), 1);
  EXPECT_EQ(jit::fold_constants(g), 1);  // 2 + 3
  jit::eliminate_dead_code(g);
  g.verify();
  EXPECT_EQ(g.op_histogram(), (std::map<std::string, int>{{"add", 1}, {"mul", 1}, {"relu", 1}}));
  EXPECT_NE(g.str().find("= const(5)"), std::string::npos) << g;
  ExpectSame(jit::GraphModule(g).forward(x), want);
  // Random ops are never merged.
  jit::Graph r;
  const int in = r.add_input("x", kFloat32, Shape({8}));
  Value::Dict attrs;
  attrs.insert("p", Value(0.5));
  attrs.insert("training", Value(true));
  const int d1 = r.add_node("dropout", {in}, attrs)[0];
  const int d2 = r.add_node("dropout", {in}, attrs)[0];
  r.outputs = {r.add_node("add", {d1, d2})[0]};
  r.output_names = {"y"};
  r.infer_shapes();
  EXPECT_EQ(jit::eliminate_common_subexpressions(r), 0);
}

TEST(JitPasses, ElementwiseFusionIsBitIdentical) {
  // y = sigmoid(x * w + 1) * x - 0.5 on 3 * 5000 + 7 elements (not a multiple of a block).
  jit::Graph g;
  const int x = g.add_input("x", kFloat32, Shape({3, 5001}));
  const int w = g.add_param("w", randn({3, 5001}));
  const int m = g.add_node("mul", {x, w})[0];
  Value::Dict one;
  one.insert("other", Value(1.0));
  const int a = g.add_node("add", {m}, one)[0];
  const int s = g.add_node("sigmoid", {a})[0];
  const int p = g.add_node("mul", {s, x})[0];
  Value::Dict half;
  half.insert("other", Value(0.5));
  g.outputs = {g.add_node("sub", {p}, half)[0]};
  g.output_names = {"y"};
  g.infer_shapes();
  Tensor in = randn({3, 5001});
  const Tensor want = jit::GraphModule(g).forward(in);
  EXPECT_EQ(jit::fuse_elementwise(g), 5);
  g.verify();
  EXPECT_EQ(g.op_histogram(), (std::map<std::string, int>{{"fused_elementwise", 1}}));
  EXPECT_NE(g.str().find("ops=[\"mul\", \"add\", \"sigmoid\", \"mul\", \"sub\"]"), std::string::npos) << g;
  jit::GraphModule fused(g);
  ExpectSame(fused.forward(in), want);
  ExpectSame(fused.forward(in), (((in * g.values.begin()->second) + 1.0).sigmoid() * in) - 0.5);
  // Same results with one thread.
  const int threads = get_num_threads();
  set_num_threads(1);
  ExpectSame(fused.forward(in), want);
  set_num_threads(threads);
  // A malformed program is refused, not run.
  Value::Dict bad = g.nodes[0].attrs;
  bad["args"] = Value(Value::List{Value(std::vector<int64_t>{5})});
  bad["ops"] = Value(Value::List{Value("relu")});
  bad["attrs"] = Value(Value::List{Value::dict()});
  ExpectError([&] { jit::call_op(*jit::find_op("fused_elementwise"), {in, in}, bad); }, {"step 0 reads operand 5"});
}

TEST(JitPasses, BatchNormFoldsIntoConvAndLinear) {
  manual_seed(7);
  for (bool conv : {true, false}) {
    nn::Sequential model = conv ? nn::Sequential(nn::Conv2d(nn::Conv2dOptions(3, 4, 3)), nn::BatchNorm2d(4))
                                : nn::Sequential(nn::Linear(5, 4), nn::BatchNorm1d(4));
    {
      NoGradGuard ng;
      for (auto& it : model->named_buffers()) {
        if (it.key().find("running_var") != std::string::npos) it.value().uniform_(0.5, 2.0);
        if (it.key().find("running_mean") != std::string::npos) it.value().normal_();
      }
      for (auto& p : model->parameters()) p.normal_();
    }
    model->eval();
    Tensor x = conv ? randn({2, 3, 6, 6}) : randn({3, 5});
    jit::Graph g = jit::trace(*model, x).graph();
    EXPECT_EQ(jit::fold_batch_norm(g), 1);
    g.verify();
    EXPECT_EQ(g.op_histogram().count("batch_norm"), 0u) << g;
    EXPECT_TRUE(jit::GraphModule(g).forward(x).allclose(model->forward(x), 1e-5, 1e-5));
  }
}

TEST(JitPasses, MemoryPlanAndBufferReuse) {
  // A chain of element-wise ops: each intermediate dies at the next node.
  jit::Graph g;
  const int x = g.add_input("x", kFloat32, {{1, 0}, {0, 1000}});  // [B, 1000]
  g.traced_batch = 8;
  int v = g.add_node("exp", {x})[0];
  for (int i = 0; i < 4; ++i) v = g.add_node(i % 2 ? "relu" : "neg", {v})[0];
  g.outputs = {v};
  g.output_names = {"y"};
  g.infer_shapes();
  for (jit::Var& var : g.vars) {
    if (var.kind == jit::VarKind::Node) var.shape[0] = {1, 0};
  }
  const jit::MemoryPlan plan = jit::plan_memory(g, 8);
  EXPECT_EQ(plan.total_bytes, 8 * 1000 * 4);  // only exp allocates; the rest reuse
  EXPECT_EQ(plan.peak_bytes, 8 * 1000 * 4);
  EXPECT_EQ(plan.inplace_nodes, 4);
  jit::GraphModule m(g);
  Tensor in = randn({8, 1000});
  const Tensor copy = in.clone();
  Tensor y = m.forward(in);
  ExpectSame(in, copy);  // graph inputs are never written
  ExpectSame(y, in.exp().neg().relu().neg().relu());
  EXPECT_EQ(m.last_run_stats().inplace_nodes, 4);
  EXPECT_EQ(m.last_run_stats().peak_bytes, 8 * 1000 * 4);
  // The dynamic dim: batch 3 works, and a wrong static dim is named.
  EXPECT_EQ(m.forward(randn({3, 1000})).sizes().vec(), (std::vector<int64_t>{3, 1000}));
  ExpectError([&] { m.forward(randn({3, 999})); }, {"f32[B,1000]", "B = 3"});
}

jit::GraphModule SmallModule() {
  auto mlp = nn::Sequential(nn::Linear(4, 3), nn::ReLU());
  mlp->eval();
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.input_names = {"features"};
  return jit::trace(*mlp, randn({2, 4}), opt);
}

TEST(JitArtifact, VersionsUnknownOpsAndForeignFiles) {
  jit::GraphModule m = SmallModule();
  Value v = Value::dict();
  v["format"] = jit::kArtifactFormat;
  v["opset"] = int64_t{99};
  v["graph"] = jit::graph_to_value(m.graph());
  v["weights"] = Value::dict();
  const std::string newer = TempPath("newer.ember");
  save(v, newer);
  ExpectError([&] { jit::load(newer); }, {"[jit::load]", "op set version 99", "newer than this build's 1"});

  v["opset"] = int64_t{1};
  Value graph = jit::graph_to_value(m.graph());
  graph["nodes"].to_list()[0]["op"] = "frobnicate";
  v["graph"] = graph;
  for (const auto& [id, t] : m.graph().values) v["weights"][m.graph().var(id).name] = t;
  const std::string unknown = TempPath("unknown.ember");
  save(v, unknown);
  ExpectError([&] { jit::load(unknown); }, {"uses op 'frobnicate'", "does not have"});

  graph = jit::graph_to_value(m.graph());
  graph["nodes"].to_list()[0]["inputs"] = Value(std::vector<int64_t>{12345});
  v["graph"] = graph;
  save(v, unknown);
  ExpectError([&] { jit::load(unknown); }, {"[jit::load]", "refers to var 12345"});

  const std::string ckpt = TempPath("plain.safetensors");
  save(Value(OrderedDict<std::string, Tensor>{{"w", ones({2})}}), ckpt);
  ExpectError([&] { jit::load(ckpt); }, {"is not an ember model artifact", "ember::load"});
  ExpectError([&] { jit::load(TempPath("missing.ember")); }, {"missing.ember"});
}

TEST(JitArtifact, DamagedFilesAreRefused) {
  jit::GraphModule m = SmallModule();
  const std::string path = TempPath("good.ember");
  Value meta = Value::dict();
  meta["normalization"] = Value(std::vector<double>{0.5, 0.25});
  meta["profile"] = jit::input_profile(randn({16, 4}));
  jit::save(m, path, meta);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string bad = TempPath("bad.ember");
  int refused = 0;
  for (size_t cut : {size_t{0}, size_t{7}, bytes.size() / 2, bytes.size() - 1}) {
    std::ofstream(bad, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(cut));
    ExpectError([&] { jit::load(bad); }, {"bad.ember"});
    ++refused;
  }
  for (size_t pos = 8; pos < bytes.size(); pos += bytes.size() / 37 + 1) {
    std::string b = bytes;
    b[pos] = static_cast<char>(b[pos] ^ 0x5a);
    std::ofstream(bad, std::ios::binary | std::ios::trunc).write(b.data(), static_cast<std::streamsize>(b.size()));
    ExpectError([&] { jit::load(bad); }, {"bad.ember"});
    ++refused;
  }
  EXPECT_GT(refused, 30);
  // The intact file loads with its metadata and specs.
  jit::GraphModule loaded = jit::load(path);
  EXPECT_EQ(loaded.metadata().at("normalization").to_double_list(), (std::vector<double>{0.5, 0.25}));
  EXPECT_EQ(loaded.metadata().at("profile").at("count").to_int(), 16);
  const Value specs = jit::specs_of(loaded.graph());
  EXPECT_EQ(specs.at("inputs").to_list()[0].at("name").to_string(), "features");
  EXPECT_EQ(specs.at("inputs").to_list()[0].at("shape").to_string(), "[B,4]");
  EXPECT_EQ(specs.at("outputs").to_list()[0].at("shape").to_string(), "[B,3]");
}

TEST(JitCompile, TracesOncePerSignatureAndMatchesEager) {
  manual_seed(9);
  auto model = nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)), nn::BatchNorm2d(4), nn::ReLU(),
                              nn::Flatten(), nn::Linear(4 * 6 * 6, 5));
  model->eval();
  jit::CompiledModule fast = jit::compile(model.ptr());
  for (int64_t b : {1, 7, 64, 7}) {
    Tensor x = randn({b, 1, 6, 6});
    EXPECT_TRUE(fast(x).allclose(model->forward(x), 1e-5, 1e-5));
  }
  EXPECT_EQ(fast.graphs_compiled(), 1);  // one graph for every batch size
  ASSERT_NE(fast.last_graph(), nullptr);
  EXPECT_EQ(fast.last_graph()->graph().op_histogram().count("batch_norm"), 0u);
  // A model whose other dims vary recompiles per shape, up to the limit, then runs eagerly.
  auto pool = nn::Sequential(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({2, 2})), nn::Flatten());
  pool->eval();
  jit::CompileOptions opt;
  opt.max_graphs = 2;
  jit::CompiledModule cp = jit::compile(pool.ptr(), opt);
  std::vector<std::string> warnings;
  WarningHandler old = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  for (int64_t s : {4, 6, 8, 10}) {
    Tensor x = randn({2, 3, s, s});
    ExpectSame(cp(x), pool->forward(x));
  }
  set_warning_handler(old);
  EXPECT_EQ(cp.graphs_compiled(), 2);
  EXPECT_EQ(cp.eager_calls(), 2);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("max_graphs"), std::string::npos);
}

}  // namespace jit_passes_test
}  // namespace ember
