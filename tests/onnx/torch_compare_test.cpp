// ember's ONNX export against PyTorch's torch.onnx.export of the same model with the same
// weights (tests/onnx/torch_compare.py, python3-torch 1.13): both files run in OpenCV's
// dnn module on the same input and must agree with ember's output, and with each other,
// within 1e-4 relative. The Fashion-MNIST CNN (with batch norm statistics) and the MLP.
// Then onnx::load reads PyTorch's file into a jit graph, which ember runs at several batch
// sizes against its own traced graph.

#include <ember/ember.h>
#include <ember/onnx/export.h>
#include <ember/onnx/load.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnx/onnx_test_util.h"
#include "test_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace onnx_torch_compare_test {

using namespace ember::onnx_test;

// The architectures torch_compare.py builds on its side (same layer indices, so the same
// state_dict names).
nn::Sequential Cnn() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::BatchNorm2d(8), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(8, 16, 3).padding(1)),
                        nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(16 * 7 * 7, 10));
}
nn::Sequential Mlp() { return nn::Sequential(nn::Linear(20, 32), nn::ReLU(), nn::Linear(32, 10)); }

// Exports m, runs torch_compare.py on it; returns the script's output. The PyTorch file is
// left at TempPath(name + "_torch.onnx").
std::string CompareWithTorch(nn::Module& m, const std::string& kind, const std::vector<int64_t>& item_shape,
                             int opset) {
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.input_names = {"images"};
  opt.output_names = {"logits"};
  std::vector<int64_t> shape{2};
  shape.insert(shape.end(), item_shape.begin(), item_shape.end());
  jit::GraphModule g = jit::trace(m, randn(shape), opt);
  const std::string model = TempPath(kind + "_ember.onnx");
  onnx::export_model(g, model, Opset(opset));
  shape[0] = 5;
  const Tensor x = randn(shape);
  const std::string in = TempPath(kind + "_cmp_in.npy"), ref = TempPath(kind + "_cmp_ref.npy");
  WriteNpy(in, x);
  WriteNpy(ref, g.forward(x));
  const std::string torch_file = TempPath(kind + "_torch.onnx");
  const Validation v = RunCommand("/usr/bin/python3 '" + ScriptPath("torch_compare.py") + "' '" + model + "' '" + in +
                                  "' '" + ref + "' " + kind + " '" + torch_file + "' " + std::to_string(opset));
  EXPECT_EQ(v.status, 0) << v.output;
  for (const char* key :
       {"torch_eager: max_rel=", "opencv_ember: max_rel=", "opencv_torch: max_rel=", "opencv_files: max_rel="}) {
    const double rel = MaxField(v.output, key);
    EXPECT_GE(rel, 0.0) << key << "\n" << v.output;
    EXPECT_LE(rel, 1e-4) << key << "\n" << v.output;
    std::cout << "[onnx] torch " << kind << " opset " << opset << " " << key << rel << "\n";
  }
  EXPECT_TRUE(Has(v.output, "torch_file: checker ok")) << v.output;

  // PyTorch's file, read by ember: the same numbers as ember's own graph at any batch.
  jit::GraphModule loaded = onnx::load(torch_file);
  EXPECT_EQ(loaded.metadata().at("producer_name").to_string(), "pytorch");
  EXPECT_EQ(loaded.graph().output_names, std::vector<std::string>{"logits"});
  for (int64_t b : {1, 7}) {
    shape[0] = b;
    const Tensor xb = randn(shape);
    const Tensor want = g.forward(xb), got = loaded.forward(xb);
    EXPECT_EQ(got.sizes().vec(), want.sizes().vec());
    const double rel = (got - want).abs().amax().item().to_double() / want.abs().amax().item().to_double();
    EXPECT_LE(rel, 1e-5) << kind << " at batch " << b;
    std::cout << "[onnx] load torch " << kind << " opset " << opset << " batch " << b << " max_rel=" << rel << "\n";
  }
  return v.output;
}

TEST(OnnxTorchCompare, FashionMnistCnn) {
  manual_seed(31);
  auto cnn = Cnn();
  ember::testing::RandomizeNormStats(*cnn);
  cnn->eval();
  for (int opset : {13, 17}) {
    const std::string out = CompareWithTorch(*cnn, "cnn", {1, 28, 28}, opset);
    EXPECT_TRUE(Has(out, "Conv")) << out;
  }
}

TEST(OnnxTorchCompare, Mlp) {
  manual_seed(32);
  auto mlp = Mlp();
  mlp->eval();
  const std::string out = CompareWithTorch(*mlp, "mlp", {20}, 17);
  EXPECT_TRUE(Has(out, "ops Gemm Relu Gemm")) << out;
}

}  // namespace onnx_torch_compare_test
}  // namespace ember
