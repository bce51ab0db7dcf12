// onnx::load of ember's quantized exports. QOperator files (QLinearConv, QLinearMatMul,
// QLinearAdd, QLinearConcat, QLinearGlobalAveragePool, MaxPool of codes, QuantizeLinear,
// DequantizeLinear) load into the ONNX int8 ops of quant/qlinear.h, whose integer sums run on
// ember's int8 GEMM: the numpy evaluator of the ONNX definitions (validate_onnx.py --numpy)
// computes the same bits. QDQ files load into QuantizeLinear / DequantizeLinear around ember's
// float ops (the int8 weights dequantized once at load). Both are compared with the int8 model
// they came from; an operator ember does not read is refused naming the node and op.

#include <ember/ember.h>
#include <ember/onnx/export.h>
#include <ember/onnx/load.h>
#include <ember/quant/static_quant.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnx/onnx_test_util.h"
#include "quant/quant_models.h"
#include "test_util.h"

namespace ember {
namespace onnx_load_quant_test {

using namespace ember::onnx_test;
using ember::testing::ExpectError;

struct Model {
  std::string name;
  nn::Sequential net;
  std::vector<int64_t> input;  // one example's sizes
  size_t last;                 // index of the last quantized linear
};

nn::Sequential Calibrated(nn::Sequential m, const std::vector<int64_t>& input) {
  quant::prepare(*m);
  {
    NoGradGuard no_grad;
    std::vector<int64_t> sizes{50};
    sizes.insert(sizes.end(), input.begin(), input.end());
    for (int i = 0; i < 6; ++i) m(randn(sizes));
  }
  quant::convert(*m);
  return m;
}

std::vector<Model> Models() {
  std::vector<Model> out;
  nn::Sequential mlp(nn::Linear(16, 32), nn::ReLU(), nn::Linear(32, 24), nn::ReLU(), nn::Linear(24, 10));
  mlp->eval();
  out.push_back({"mlp", Calibrated(mlp, {16}), {16}, 4});
  nn::Sequential cnn(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::BatchNorm2d(8), nn::ReLU(),
                     nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(8, 16, 3).padding(1)),
                     nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(16 * 7 * 7, 32),
                     nn::ReLU(), nn::Linear(32, 10));
  ember::testing::RandomizeNormStats(*cnn);
  cnn->eval();
  out.push_back({"cnn", Calibrated(cnn, {1, 28, 28}), {1, 28, 28}, 10});
  out.push_back({"residual", Calibrated(quant_models::ResidualNet(), {1, 12, 12}), {1, 12, 12}, 9});
  return out;
}

jit::GraphModule Trace(nn::Module& m, const std::vector<int64_t>& input) {
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.input_names = {"x"};
  opt.output_names = {"logits"};
  std::vector<int64_t> sizes{2};
  sizes.insert(sizes.end(), input.begin(), input.end());
  return jit::freeze(jit::trace(m, randn(sizes), opt));
}

int CountOps(const jit::GraphModule& g, const std::string& op) {
  int n = 0;
  for (const jit::Node& node : g.graph().nodes) n += node.op == op;
  return n;
}

double MaxAbs(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes().vec(), b.sizes().vec());
  return (a - b).abs().amax().item().to_double();
}

TEST(OnnxLoadQuant, QOperatorFilesRunOnTheInt8Kernels) {
  manual_seed(60);
  onnx::ExportOptions opt;
  opt.quant_format = onnx::QuantFormat::QOperator;
  for (Model& m : Models()) {
    const float step = m.net->ptr<quant::StaticQuantizedLinearImpl>(m.last)->output_qparams().scale;
    const jit::GraphModule g = Trace(*m.net, m.input);
    const std::string path = TempPath("load_qop_" + m.name + ".onnx");
    onnx::export_model(g, path, opt);
    const jit::GraphModule loaded = onnx::load(path);
    // The int8 operators, not float stand-ins.
    EXPECT_GE(CountOps(loaded, "quantize_linear"), 1) << m.name;
    EXPECT_GE(CountOps(loaded, "dequantize_linear"), 1) << m.name;
    EXPECT_EQ(CountOps(loaded, "qlinear_matmul"), m.name == "mlp" ? 3 : m.name == "cnn" ? 2 : 1) << m.name;
    EXPECT_EQ(CountOps(loaded, "qlinear_conv2d"), m.name == "mlp" ? 0 : m.name == "cnn" ? 2 : 6) << m.name;
    EXPECT_EQ(CountOps(loaded, "conv2d") + CountOps(loaded, "linear") + CountOps(loaded, "matmul"), 0) << m.name;
    if (m.name == "cnn") {
      EXPECT_EQ(CountOps(loaded, "quantized_max_pool2d"), 2);
    }
    if (m.name == "residual") {
      EXPECT_EQ(CountOps(loaded, "qlinear_concat"), 1);
      EXPECT_EQ(CountOps(loaded, "qlinear_global_avg_pool2d"), 1);
    }
    for (int64_t batch : {1, 5}) {
      std::vector<int64_t> sizes{batch};
      sizes.insert(sizes.end(), m.input.begin(), m.input.end());
      const Tensor x = randn(sizes);
      const Tensor want = g.forward(x);
      const Tensor got = loaded.forward(x);
      // The file's arithmetic (Note [QOperator export], Note [QOperator linear]): each int8
      // operator rounds its int32 bias, requantizes with one float multiplier, and a biased
      // linear rounds once more on the product's grid; each layer's codes are at most one step
      // from ember's. Measured on the logits: at most one output step (all three models, 20-50%
      // of the logits one step off).
      const double diff = MaxAbs(got, want);
      const double frac = ((got - want).abs() > 1e-6).to(kFloat32).mean().item().to_double();
      std::cout << "[onnx] load qoperator " << m.name << " batch " << batch << ": max |loaded - ember int8| = " << diff
                << " (output step " << step << "), fraction of logits differing " << frac << "\n";
      EXPECT_LE(diff, 1.01 * step) << m.name;
      EXPECT_LE(frac, 0.5) << m.name;
      // The numpy evaluator of the ONNX definitions gives the loaded graph's bits.
      const std::string in = TempPath("load_qop_in.npy"), ref = TempPath("load_qop_ref.npy");
      WriteNpy(in, x);
      WriteNpy(ref, got);
      const Validation v = Validate(path, {in}, {ref}, /*numpy=*/true);
      ASSERT_EQ(v.status, 0) << v.output;
      EXPECT_EQ(MaxField(v.output, "max_abs="), 0.0) << m.name << "\n" << v.output;
      if (m.name == "mlp") {
        EXPECT_TRUE(Has(v.output, "QLinearMatMul")) << v.output;
        EXPECT_TRUE(Has(v.output, "QLinearAdd")) << v.output;
        EXPECT_FALSE(Has(v.output, "QLinearConv")) << "linear is no 1x1 convolution any more\n" << v.output;
        EXPECT_FALSE(Has(v.output, "Flatten")) << v.output;
        // OpenCV 4.6 runs the same file (its own int8 arithmetic: within a step of the file's).
        const Validation cv = Validate(path, {in}, {ref});
        ASSERT_EQ(cv.status, 0) << cv.output;
        std::cout << "[onnx] load qoperator mlp batch " << batch << ": opencv against the loaded graph max_abs="
                  << MaxField(cv.output, "max_abs=") << "\n";
        EXPECT_LE(MaxField(cv.output, "max_abs="), 2.01 * step) << cv.output;
      }
    }
  }
}

TEST(OnnxLoadQuant, QdqFilesRunAsTheirOperatorDefinitions) {
  manual_seed(61);
  for (Model& m : Models()) {
    const float step = m.net->ptr<quant::StaticQuantizedLinearImpl>(m.last)->output_qparams().scale;
    const jit::GraphModule g = Trace(*m.net, m.input);
    for (int opset : {13, 17}) {
      if (m.name != "cnn" && opset == 13) continue;
      const std::string path = TempPath("load_qdq_" + m.name + ".onnx");
      onnx::export_model(g, path, Opset(opset));
      const jit::GraphModule loaded = onnx::load(path);
      // The int8 weights under DequantizeLinear are dequantized once, at load: float weights.
      EXPECT_EQ(CountOps(loaded, "dequantize_linear") > 0, true) << m.name;
      EXPECT_EQ(CountOps(loaded, "qlinear_conv2d") + CountOps(loaded, "qlinear_matmul"), 0) << m.name;
      for (int64_t batch : {1, 4}) {
        std::vector<int64_t> sizes{batch};
        sizes.insert(sizes.end(), m.input.begin(), m.input.end());
        const Tensor x = randn(sizes);
        const Tensor want = g.forward(x);
        const Tensor got = loaded.forward(x);
        const double diff = MaxAbs(got, want);
        std::cout << "[onnx] load qdq " << m.name << " opset " << opset << " batch " << batch
                  << ": max |loaded - ember int8| = " << diff << " (output step " << step << ")\n";
        // QuantizeLinear divides where ember multiplies by the inverse scale, and float sums
        // replace integer ones, so a value at a .5 boundary may land one code apart (measured: the
        // same logits, bit for bit).
        EXPECT_LE(diff, 1.01 * step) << m.name;
        // Against the numpy evaluator: float sums in another order can move a value at a .5
        // boundary of a QuantizeLinear to the next code.
        const std::string in = TempPath("load_qdq_in.npy"), ref = TempPath("load_qdq_ref.npy");
        WriteNpy(in, x);
        WriteNpy(ref, got);
        const Validation v = Validate(path, {in}, {ref}, /*numpy=*/true);
        ASSERT_EQ(v.status, 0) << v.output;
        const double nd = MaxField(v.output, "max_abs="), nf = MaxField(v.output, "fraction_differing=");
        std::cout << "[onnx] load qdq " << m.name << ": numpy against the loaded graph max_abs=" << nd
                  << " fraction differing " << nf << "\n";
        EXPECT_GE(nd, 0.0) << v.output;
        EXPECT_LE(nd, 1.01 * step) << v.output;
        EXPECT_LE(nf, 0.1) << v.output;
      }
    }
  }
}

TEST(OnnxLoadQuant, OperatorsItCannotReadAreRefused) {
  auto make = [](const std::string& name, const std::string& body) {
    const std::string path = TempPath(name);
    const Validation made = RunCommand(
        "/usr/bin/python3 -c \"import numpy as np, onnx; from onnx import helper as h, TensorProto as T, "
        "numpy_helper as nh; " +
        body + "; onnx.save(m, '" + path + "')\"");
    EXPECT_EQ(made.status, 0) << made.output;
    return path;
  };
  const std::string grid =
      "inits = [nh.from_array(np.array(0.1, np.float32), 's'), nh.from_array(np.array(0, np.uint8), 'z')]; "
      "x = h.make_tensor_value_info('x', T.FLOAT, ['B', 4]); y = h.make_tensor_value_info('y', T.FLOAT, ['B', 4]); "
      "q = h.make_node('QuantizeLinear', ['x', 's', 'z'], ['xq'], name='quant'); "
      "d = h.make_node('DequantizeLinear', ['yq', 's', 'z'], ['y'], name='dequant'); ";
  // An ONNX Runtime operator ember does not read.
  const std::string sigmoid = make(
      "qsigmoid.onnx",
      grid + "n = h.make_node('QLinearSigmoid', ['xq', 's', 'z', 's', 'z'], ['yq'], name='sig', domain='com.microsoft'); "
             "m = h.make_model(h.make_graph([q, n, d], 'g', [x], [y], inits), opset_imports=[h.make_opsetid('', 13), "
             "h.make_opsetid('com.microsoft', 1)])");
  ExpectError([&] { onnx::load(sigmoid); },
              {"[onnx::load] node 1 ('sig', op com.microsoft:QLinearSigmoid) in opset 13 has no ember form",
               "QLinearAdd, QLinearConcat", "docs/onnx.md"});
  // A default-domain int8 operator ember does not read.
  const std::string mul = make(
      "qmatmulinteger.onnx",
      grid + "w = nh.from_array(np.ones((4, 4), np.int8), 'w'); "
             "n = h.make_node('MatMulInteger', ['xq', 'w'], ['yq'], name='mmi'); "
             "m = h.make_model(h.make_graph([q, n, d], 'g', [x], [y], inits + [w]), "
             "opset_imports=[h.make_opsetid('', 13)])");
  ExpectError([&] { onnx::load(mul); },
              {"[onnx::load] node 1 ('mmi', op MatMulInteger) in opset 13 has no ember form", "ember reads no MatMulInteger"});
  // A 1-D QLinearConv.
  const std::string conv1d = make(
      "qconv1d.onnx",
      "inits = [nh.from_array(np.array(0.1, np.float32), 's'), nh.from_array(np.array(0, np.uint8), 'z'), "
      "nh.from_array(np.ones((2, 3, 1), np.int8), 'w'), nh.from_array(np.array(0, np.int8), 'wz')]; "
      "x = h.make_tensor_value_info('x', T.UINT8, [1, 3, 5]); y = h.make_tensor_value_info('y', T.UINT8, [1, 2, 5]); "
      "n = h.make_node('QLinearConv', ['x', 's', 'z', 'w', 's', 'wz', 's', 'z'], ['y'], name='c1'); "
      "m = h.make_model(h.make_graph([n], 'g', [x], [y], inits), opset_imports=[h.make_opsetid('', 13)])");
  ExpectError([&] { onnx::load(conv1d); }, {"[onnx::load] node 0 ('c1', op QLinearConv)", "a 1-D convolution"});
  // Another operator domain.
  const std::string ml = make(
      "ml_domain.onnx",
      "x = h.make_tensor_value_info('x', T.FLOAT, [1, 4]); y = h.make_tensor_value_info('y', T.FLOAT, [1, 4]); "
      "m = h.make_model(h.make_graph([h.make_node('Relu', ['x'], ['y'])], 'g', [x], [y]), "
      "opset_imports=[h.make_opsetid('', 13), h.make_opsetid('ai.onnx.ml', 3)])");
  ExpectError([&] { onnx::load(ml); }, {"[onnx::load]", "imports the operator domain 'ai.onnx.ml'"});
}

}  // namespace onnx_load_quant_test
}  // namespace ember
