// ONNX export of a static int8 CNN in QDQ form (Note [QDQ export], onnx/export_quant.cpp):
// the file passes the ONNX checker (full_check), holds int8 weights under per-channel
// DequantizeLinear and QuantizeLinear / DequantizeLinear around Conv, MaxPool and Gemm, is about
// 4x smaller than the float32 export, and the numpy evaluator of the ONNX op definitions
// (tests/onnx/validate_onnx.py --numpy) computes ember's int8 outputs from it; the same for a
// residual, two-branch model (QDQ pairs around Add, Concat, GlobalAveragePool). OpenCV 4.6
// cannot run QDQ graphs (validate_onnx.py says why), but it runs the QOperator form
// (Note [QOperator export], onnx/export_qoperator.cpp): QLinearConv & co. with ONNX Runtime's
// value names, checked here against ember's int8 outputs for both models.

#include <ember/ember.h>
#include <ember/onnx/export.h>
#include <ember/quant/static_quant.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "onnx/onnx_test_util.h"
#include "quant/quant_models.h"
#include "test_util.h"

namespace ember {
namespace onnx_export_quant_test {

using namespace ember::onnx_test;
using ember::testing::Floats;

nn::Sequential Cnn() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::BatchNorm2d(8), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(8, 16, 3).padding(1)),
                        nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(16 * 7 * 7, 32),
                        nn::ReLU(), nn::Linear(32, 10));
}

jit::GraphModule Trace(nn::Module& m) {
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.input_names = {"images"};
  opt.output_names = {"logits"};
  return jit::freeze(jit::trace(m, randn({2, 1, 28, 28}), opt));
}

TEST(OnnxExportQuant, StaticCnnInQdqForm) {
  manual_seed(50);
  nn::Sequential model = Cnn();
  ember::testing::RandomizeNormStats(*model);
  model->eval();
  const jit::GraphModule fp32 = Trace(*model);
  quant::prepare(*model);
  {
    NoGradGuard no_grad;
    for (int i = 0; i < 6; ++i) model(randn({50, 1, 28, 28}));
  }
  quant::convert(*model);
  const float step = model->ptr<quant::StaticQuantizedLinearImpl>(10)->output_qparams().scale;
  const jit::GraphModule g = Trace(*model);
  for (int opset : {13, 17}) {
    const std::string path = TempPath("qdq_cnn_" + std::to_string(opset) + ".onnx");
    onnx::export_model(g, path, Opset(opset));
    for (int64_t batch : {1, 5}) {
      const Tensor x = randn({batch, 1, 28, 28});
      const Tensor want = g.forward(x);
      EXPECT_EQ(Floats(want), Floats(model(x))) << "the traced graph computes the eager model";
      const std::string in = TempPath("qdq_in.npy"), ref = TempPath("qdq_ref.npy");
      WriteNpy(in, x);
      WriteNpy(ref, want);
      const Validation v = Validate(path, {in}, {ref}, /*numpy=*/true);
      ASSERT_EQ(v.status, 0) << v.output;
      EXPECT_TRUE(Has(v.output, "checker: ok")) << v.output;
      EXPECT_TRUE(Has(v.output, "input images FLOAT [B,1,28,28]")) << v.output;
      EXPECT_TRUE(Has(v.output, "output logits FLOAT [B,10]")) << v.output;
      // QDQ around float operators; int8 weights under per-channel DequantizeLinear.
      for (const char* op : {"QuantizeLinear", "DequantizeLinear", "Conv", "MaxPool", "Gemm", "Clip"}) {
        EXPECT_TRUE(Has(v.output, op)) << op << "\n" << v.output;
      }
      EXPECT_TRUE(Has(v.output, "0.qweight")) << v.output;
      // Float rounding (QuantizeLinear divides, ember multiplies by the inverse; float sums
      // against exact integer ones) can put a value one code apart in a layer; the logits then
      // move by a step or two of the output grid.
      const double max_abs = MaxField(v.output, "max_abs=");
      const double frac = MaxField(v.output, "fraction_differing=");
      std::cout << "[onnx] qdq cnn opset " << opset << " batch " << batch << " numpy max_abs=" << max_abs
                << " (output step " << step << "), fraction of logits differing " << frac << "\n";
      EXPECT_GE(max_abs, 0.0) << v.output;
      EXPECT_LE(max_abs, 2.01 * step) << v.output;
      EXPECT_LE(frac, 0.1) << v.output;
    }
  }
  // About 4x smaller than the float32 export of the same model.
  const std::string fp_path = TempPath("qdq_cnn_fp32.onnx");
  onnx::export_model(fp32, fp_path);
  const auto fp_bytes = std::filesystem::file_size(fp_path);
  const auto q_bytes = std::filesystem::file_size(TempPath("qdq_cnn_17.onnx"));
  std::cout << "[onnx] qdq cnn file " << q_bytes << " bytes, float32 " << fp_bytes << " bytes\n";
  EXPECT_LT(q_bytes * 3, fp_bytes);
}

// The CNN and the residual net, calibrated and converted.
nn::Sequential Converted(nn::Sequential model, int64_t side) {
  quant::prepare(*model);
  {
    NoGradGuard no_grad;
    for (int i = 0; i < 6; ++i) model(randn({50, 1, side, side}));
  }
  quant::convert(*model);
  return model;
}

jit::GraphModule TraceSide(nn::Module& m, int64_t side) {
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.input_names = {"images"};
  opt.output_names = {"logits"};
  return jit::freeze(jit::trace(m, randn({2, 1, side, side}), opt));
}

TEST(OnnxExportQuant, ResidualNetInQdqForm) {
  manual_seed(51);
  nn::Sequential model = Converted(quant_models::ResidualNet(), 12);
  const float step = model->ptr<quant::StaticQuantizedLinearImpl>(9)->output_qparams().scale;
  const jit::GraphModule g = TraceSide(*model, 12);
  const std::string path = TempPath("qdq_residual.onnx");
  onnx::export_model(g, path);
  const Tensor x = randn({3, 1, 12, 12});
  const Tensor want = g.forward(x);
  EXPECT_EQ(Floats(want), Floats(model(x)));
  const std::string in = TempPath("qdq_res_in.npy"), ref = TempPath("qdq_res_ref.npy");
  WriteNpy(in, x);
  WriteNpy(ref, want);
  const Validation v = Validate(path, {in}, {ref}, /*numpy=*/true);
  ASSERT_EQ(v.status, 0) << v.output;
  EXPECT_TRUE(Has(v.output, "checker: ok")) << v.output;
  for (const char* op : {" Add ", " Concat ", "GlobalAveragePool", "QuantizeLinear"}) {
    EXPECT_TRUE(Has(v.output, op)) << op << "\n" << v.output;
  }
  const double max_abs = MaxField(v.output, "max_abs=");
  std::cout << "[onnx] qdq residual net numpy max_abs=" << max_abs << " (output step " << step << ")\n";
  EXPECT_GE(max_abs, 0.0) << v.output;
  EXPECT_LE(max_abs, 3.01 * step) << v.output;
}

// OpenCV 4.6 (cv2.dnn.readNetFromONNX) runs the QOperator form of both models; its int8 layers
// requantize with an int32 bias and one multiplier per channel, so a code here and there lands
// one step apart from ember's, and the logits move by a step or two.
TEST(OnnxExportQuant, QOperatorFormRunsInOpenCv) {
  struct Case {
    const char* name;
    nn::Sequential model;
    int64_t side;
    size_t last;
  };
  manual_seed(52);
  nn::Sequential cnn = Cnn();
  ember::testing::RandomizeNormStats(*cnn);
  cnn->eval();
  std::vector<Case> cases;
  cases.push_back({"cnn", Converted(cnn, 28), 28, 10});
  cases.push_back({"residual", Converted(quant_models::ResidualNet(), 12), 12, 9});
  onnx::ExportOptions opt;
  opt.quant_format = onnx::QuantFormat::QOperator;
  for (Case& c : cases) {
    const float step = c.model->ptr<quant::StaticQuantizedLinearImpl>(c.last)->output_qparams().scale;
    const jit::GraphModule g = TraceSide(*c.model, c.side);
    const std::string path = TempPath(std::string("qop_") + c.name + ".onnx");
    onnx::export_model(g, path, opt);
    for (int64_t batch : {1, 4}) {
      const Tensor x = randn({batch, 1, c.side, c.side});
      const Tensor want = g.forward(x);
      const std::string in = TempPath("qop_in.npy"), ref = TempPath("qop_ref.npy");
      WriteNpy(in, x);
      WriteNpy(ref, want);
      // OpenCV 4.6's QLinearAdd does not broadcast the constant bias codes of a linear layer
      // (QLinearMatMul + QLinearAdd, Note [QOperator linear]) over a batch above 1 when the
      // batch is symbolic (docs/onnx.md): those batches run on the numpy evaluator.
      const bool opencv = batch == 1;
      const Validation v = Validate(path, {in}, {ref}, /*numpy=*/!opencv);
      ASSERT_EQ(v.status, 0) << v.output;
      EXPECT_TRUE(Has(v.output, "checker: ok")) << v.output;
      EXPECT_TRUE(Has(v.output, "QLinearConv")) << v.output;
      EXPECT_FALSE(Has(v.output, " Conv ")) << "no float convolution left\n" << v.output;
      if (std::string(c.name) == "residual") {
        for (const char* op : {"QLinearAdd", "QLinearConcat", "QLinearGlobalAveragePool", "com.microsoft:1"}) {
          EXPECT_TRUE(Has(v.output, op)) << op << "\n" << v.output;
        }
      }
      const double max_abs = MaxField(v.output, "max_abs=");
      const double frac = MaxField(v.output, "fraction_differing=");
      std::cout << "[onnx] qoperator " << c.name << " batch " << batch << (opencv ? " opencv" : " numpy")
                << " max_abs=" << max_abs
                << " (output step " << step << "), fraction of logits differing " << frac << "\n";
      EXPECT_GE(max_abs, 0.0) << v.output;
      EXPECT_LE(max_abs, 3.01 * step) << v.output;
      EXPECT_LE(frac, 0.5) << v.output;
    }
  }
}

}  // namespace onnx_export_quant_test
}  // namespace ember
