// onnx::export_model against runtimes that share no code with ember: each exported file
// goes through the ONNX project's checker (full_check, python3-onnx) and is run by
// OpenCV's dnn module (python3-opencv) on the same input as the graph, in a subprocess
// (tests/onnx/validate_onnx.py). Models: an MLP (Gemm, and MatMul+Add on 3-D input), the
// Fashion-MNIST CNN (conv, batch norm, relu, max pool, flatten, linear) before and after
// freeze, layer norm in opset 16 (decomposed) and 17, fused element-wise chains; and the
// errors: an op with no ONNX form, an opset outside 13..17.

#include <ember/ember.h>
#include <ember/onnx/export.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "onnx/onnx_test_util.h"
#include "test_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace onnx_export_test {

using ember::testing::ExpectError;
using namespace ember::onnx_test;

nn::Sequential Mlp() { return nn::Sequential(nn::Linear(20, 32), nn::ReLU(), nn::Linear(32, 10)); }

nn::Sequential Cnn() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::BatchNorm2d(8), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(8, 16, 3).padding(1)),
                        nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(16 * 7 * 7, 10));
}

void Randomize(nn::Module& m) { ember::testing::RandomizeNormStats(m); }

jit::GraphModule TraceNamed(nn::Module& m, const Tensor& example, const std::string& in, const std::string& out) {
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.input_names = {in};
  opt.output_names = {out};
  return jit::trace(m, example, opt);
}

TEST(OnnxExport, Available) { EXPECT_TRUE(onnx::available()); }

TEST(OnnxExport, MlpBeforeAndAfterFreeze) {
  manual_seed(1);
  auto mlp = Mlp();
  mlp->eval();
  jit::GraphModule g = TraceNamed(*mlp, randn({3, 20}), "features", "logits");
  g.metadata()["model_name"] = "tiny-mlp";
  g.metadata()["labels"] = Value(Value::List{"a", "b"});
  g.metadata()["version"] = Value(int64_t(3));
  const std::string out = ExportAndCompare(g, "mlp", {20});
  EXPECT_TRUE(Has(out, "input features FLOAT [B,20]")) << out;
  EXPECT_TRUE(Has(out, "output logits FLOAT [B,10]")) << out;
  EXPECT_TRUE(Has(out, "opset ai.onnx:17")) << out;
  EXPECT_TRUE(Has(out, "producer ember")) << out;
  EXPECT_TRUE(Has(out, "initializers 0.bias 0.weight 2.bias 2.weight\n")) << out;
  EXPECT_TRUE(Has(out, "ops Gemm Relu Gemm\n")) << out;
  EXPECT_TRUE(Has(out, "meta model_name=tiny-mlp\n")) << out;
  EXPECT_TRUE(Has(out, "meta labels=[\"a\", \"b\"]\n")) << out;
  EXPECT_TRUE(Has(out, "meta version=3\n")) << out;

  jit::GraphModule frozen = jit::freeze(g);
  ASSERT_NE(frozen.graph().str().find("activation=\"relu\""), std::string::npos) << frozen.graph();
  const std::string fout = ExportAndCompare(frozen, "mlp_frozen", {20}, Opset(13));
  EXPECT_TRUE(Has(fout, "ops Gemm Relu Gemm\n")) << fout;
  EXPECT_TRUE(Has(fout, "opset ai.onnx:13")) << fout;
}

// linear on a 4-D input: MatMul with the transposed weight stored as an initializer, then
// Add. (4-D: OpenCV's Python binding reads a 3-D array as an image with channels.)
TEST(OnnxExport, LinearOnFourDimensionalInput) {
  manual_seed(2);
  auto mlp = Mlp();
  mlp->eval();
  jit::GraphModule g = TraceNamed(*mlp, randn({2, 3, 4, 20}), "x", "y");
  const std::string out = ExportAndCompare(g, "mlp4d", {3, 4, 20});
  EXPECT_TRUE(Has(out, "input x FLOAT [B,3,4,20]")) << out;
  EXPECT_TRUE(Has(out, "output y FLOAT [B,3,4,10]")) << out;
  EXPECT_TRUE(Has(out, "ops MatMul Add Relu MatMul Add\n")) << out;
  EXPECT_TRUE(Has(out, "0.weight.T")) << out;
}

TEST(OnnxExport, FashionMnistCnnBeforeAndAfterFreeze) {
  manual_seed(3);
  auto cnn = Cnn();
  Randomize(*cnn);
  cnn->eval();
  jit::GraphModule g = TraceNamed(*cnn, randn({2, 1, 28, 28}), "images", "logits");
  ASSERT_EQ(g.graph().op_histogram().at("batch_norm"), 1);
  // OpenCV, and the numpy evaluator too (a check of the evaluator on conv, batch norm,
  // pools and Gemm against an independent runtime).
  const std::string out = ExportAndCompare(g, "cnn", {1, 28, 28}, {}, Runtime::Both);
  EXPECT_TRUE(Has(out, "input images FLOAT [B,1,28,28]")) << out;
  EXPECT_TRUE(Has(out, "output logits FLOAT [B,10]")) << out;
  EXPECT_TRUE(Has(out, "ops Conv BatchNormalization Relu MaxPool Conv Relu MaxPool Flatten Gemm\n")) << out;
  // The eager model agrees too (the graph computes what eager does).
  const Tensor x = randn({4, 1, 28, 28});
  EXPECT_TRUE(g.forward(x).allclose(cnn->forward(x), 1e-5, 1e-5));

  jit::GraphModule frozen = jit::freeze(g);
  ASSERT_EQ(frozen.graph().op_histogram().count("batch_norm"), 0u) << frozen.graph();
  const std::string fout = ExportAndCompare(frozen, "cnn_frozen", {1, 28, 28});
  EXPECT_TRUE(Has(fout, "ops Conv Relu MaxPool Conv Relu MaxPool Flatten Gemm\n")) << fout;
}

// A forward of view/permute/softmax/element-wise ops, frozen into a fused_elementwise node.
TEST(OnnxExport, ReshapesSoftmaxAndFusedChains) {
  manual_seed(4);
  auto lin = nn::Linear(12, 12);
  lin->eval();
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    Tensor h = lin(in[0]);                                 // [B, 12]
    Tensor v = h.view({-1, 3, 4}).permute({0, 2, 1});      // [B, 4, 3]
    Tensor e = (v * 2.0 + 1.0).sigmoid() - v.abs() / 3.0;  // element-wise chain
    return {softmax(e.reshape({-1, 12}), 1)};
  };
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(*lin, fn, {randn({2, 12})}, opt);
  const std::string out = ExportAndCompare(g, "reshapes", {12});
  EXPECT_TRUE(Has(out, "output output0 FLOAT [B,12]")) << out;
  EXPECT_TRUE(Has(out, "Reshape Transpose")) << out;
  EXPECT_TRUE(Has(out, "Softmax")) << out;
  // The dims that follow B: copied from the input (0) where it has the same dim there.
  EXPECT_TRUE(Has(out, " [0,3,4]\n")) << out;
  EXPECT_TRUE(Has(out, " [0,12]\n")) << out;

  jit::GraphModule frozen = jit::freeze(g);
  ASSERT_EQ(frozen.graph().op_histogram().count("fused_elementwise"), 1u) << frozen.graph();
  const std::string fout = ExportAndCompare(frozen, "reshapes_frozen", {12});
  EXPECT_TRUE(Has(fout, "ops Gemm Reshape Transpose Abs Div Mul Add Sigmoid Sub Reshape Softmax\n")) << fout;
}

// Binary ops with alpha (a Mul first) and scalar operands on either side (rank-0
// initializers), and integer scalars promoted to the tensor's float dtype.
TEST(OnnxExport, AlphaAndScalarOperands) {
  manual_seed(6);
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    Tensor a = add(x, x.abs(), 3);           // x + 3 * |x|
    Tensor b = sub(a, 0.5, 2);               // a - 2 * 0.5
    Tensor c = Scalar(int64_t(2)) - b;       // 2 - b
    return {Scalar(1.0) / (c.abs() + 1.0)};  // 1 / (|c| + 1)
  };
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(fn, {randn({2, 6})}, opt);
  const std::string text = g.graph().str();
  ASSERT_NE(text.find("alpha=3"), std::string::npos) << text;
  ASSERT_NE(text.find("self="), std::string::npos) << text;
  const std::string out = ExportAndCompare(g, "scalars", {6});
  EXPECT_TRUE(Has(out, "ops Abs Mul Add Sub Sub Abs Add Div\n")) << out;
  // The frozen graph fuses the chain into one node; its steps come out the same way.
  jit::GraphModule frozen = jit::freeze(g);
  ASSERT_EQ(frozen.graph().op_histogram().count("fused_elementwise"), 1u) << frozen.graph();
  const std::string fout = ExportAndCompare(frozen, "scalars_frozen", {6});
  EXPECT_TRUE(Has(fout, "ops Abs Mul Add Sub Sub Abs Add Div\n")) << fout;
}

// A view whose batch dim becomes 4*B: the target infers it (-1), the output's dim is "4*B".
TEST(OnnxExport, ViewToAMultipleOfTheBatch) {
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {in[0].view({-1, 3}).relu()}; };
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.output_names = {"rows"};
  jit::GraphModule g = jit::trace(fn, {randn({2, 12})}, opt);
  const std::string out = ExportAndCompare(g, "view4b", {12});
  EXPECT_TRUE(Has(out, "output rows FLOAT [4*B,3]")) << out;
  EXPECT_TRUE(Has(out, " [-1,3]\n")) << out;
  EXPECT_TRUE(Has(out, "opencv: shape=[20, 3]")) << out;  // batch 5
}

// LayerNormalization is an opset-17 op; before that the exporter writes its arithmetic.
TEST(OnnxExport, LayerNormInOpset16And17) {
  manual_seed(5);
  auto m = nn::Sequential(nn::Linear(8, 6), nn::LayerNorm(std::vector<int64_t>{6}));  // on [B, 2, 3, 8]
  {
    NoGradGuard ng;
    for (auto& it : m->named_parameters()) it.value().normal_(0.5, 0.3);
  }
  m->eval();
  jit::GraphModule g = TraceNamed(*m, randn({2, 2, 3, 8}), "x", "y");
  // OpenCV 4.6 computes ReduceMean over the last axis wrongly: the decomposed form runs on
  // the numpy evaluator of validate_onnx.py instead.
  const std::string out16 = ExportAndCompare(g, "ln16", {2, 3, 8}, Opset(16), Runtime::Numpy);
  EXPECT_TRUE(Has(out16, "MatMul Add ReduceMean Sub Mul ReduceMean Add Sqrt Div Mul Add\n")) << out16;
  // OpenCV 4.6 has no LayerNormalization: opset 17 runs on the numpy evaluator too.
  const std::string out17 = ExportAndCompare(g, "ln17", {2, 3, 8}, Opset(17), Runtime::Numpy);
  EXPECT_TRUE(Has(out17, "ops MatMul Add LayerNormalization\n")) << out17;
}

TEST(OnnxExport, UnsupportedOpIsRefusedByNodeAndOpset) {
  jit::Graph graph;
  const int x = graph.add_input("x", kFloat32, {jit::SymInt{0, 3}, jit::SymInt{0, 3}});
  const int r = graph.add_node("relu", {x})[0];
  Value::Dict attrs;
  attrs.insert("diagonal", Value(int64_t(0)));
  const int t = graph.add_node("tril", {r}, attrs)[0];
  const int e = graph.add_node("erfinv", {t})[0];
  graph.outputs = {e};
  graph.output_names = {"y"};
  graph.infer_shapes();
  jit::GraphModule m(graph);
  const std::string path = TempPath("tril.onnx");
  std::filesystem::remove(path);
  // Trilu arrives in opset 14.
  const std::string msg = ExpectError(
      [&] { onnx::export_model(m, path, Opset(13)); },
      {"[onnx::export] node 1 (op 'tril') has no ONNX form in opset 13", "Trilu arrives in opset 14", "docs/onnx.md"});
  EXPECT_EQ(msg.rfind("[onnx::export]", 0), 0u) << msg;
  EXPECT_FALSE(std::filesystem::exists(path)) << "a refused export must not leave a file";
  // erfinv has no ONNX op at all.
  ExpectError(
      [&] { onnx::export_model(m, path, Opset(15)); },
      {"[onnx::export] node 2 (op 'erfinv') has no ONNX form in opset 15", "the exporter has no conversion for it"});
  EXPECT_FALSE(std::filesystem::exists(path)) << "a refused export must not leave a file";

  // Inside a fused chain the step is named too.
  jit::Graph fg;
  const int a = fg.add_input("a", kFloat32, {jit::SymInt{0, 4}});
  Value::Dict fa;
  fa.insert("ops", Value(Value::List{Value("relu"), Value("erfinv")}));
  fa.insert("args", Value(Value::List{Value(std::vector<int64_t>{0}), Value(std::vector<int64_t>{-1})}));
  fa.insert("attrs", Value(Value::List{Value(Value::Dict{}), Value(Value::Dict{})}));
  const int f = fg.add_node("fused_elementwise", {a}, fa)[0];
  fg.outputs = {f};
  fg.output_names = {"out"};
  fg.infer_shapes();
  jit::GraphModule fm(fg);
  ExpectError([&] { onnx::export_to_bytes(fm); },
              {"node 0 (op 'fused_elementwise') step 1 ('erfinv') has no ONNX form in opset 17"});

  // Training-mode dropout would be silently wrong as Identity: refused.
  auto drop = nn::Sequential(nn::Linear(4, 4), nn::Dropout(0.5));
  drop->train();
  jit::TraceOptions opt;
  opt.check = false;
  jit::GraphModule dg = jit::trace(*drop, randn({2, 4}), opt);
  ExpectError([&] { onnx::export_to_bytes(dg); }, {"op 'dropout'", "model->eval()"});
}

TEST(OnnxExport, OpsetOutsideThirteenToSeventeenIsRefused) {
  auto mlp = Mlp();
  mlp->eval();
  jit::GraphModule g = jit::trace(*mlp, randn({2, 20}));
  ExpectError([&] { onnx::export_to_bytes(g, Opset(12)); }, {"[onnx::export] opset 12 is not supported", "13 to 17"});
  ExpectError([&] { onnx::export_to_bytes(g, Opset(18)); }, {"opset 18 is not supported"});
  // A static graph: fixed dims, no symbolic batch.
  const std::string path = TempPath("static.onnx");
  onnx::export_model(g, path, Opset(14));
  const Validation v = Validate(path);
  EXPECT_EQ(v.status, 0) << v.output;
  EXPECT_TRUE(Has(v.output, "input input0 FLOAT [2,20]")) << v.output;
  EXPECT_TRUE(Has(v.output, "opset ai.onnx:14")) << v.output;
  EXPECT_TRUE(Has(v.output, "doc Exported by ember from a jit graph of 3 nodes")) << v.output;
}

}  // namespace onnx_export_test
}  // namespace ember
