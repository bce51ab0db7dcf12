// The libtorch-parity nn surface: option structs and enum tags, the new layers' shapes and
// values, libtorch's printing (operator<<) next to PyTorch's (repr()), module names and
// registration errors, and the error messages of the new functional forms.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace ember::nn {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace nn_extra_test {

namespace F = functional;
using I64 = std::vector<int64_t>;

I64 Sizes(const Tensor& t) { return t.sizes().vec(); }

template <typename M>
std::string Str(const M& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

template <typename Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool Close(const Tensor& a, const Tensor& b, double tol = 1e-6) {
  return a.sizes() == b.sizes() && (a - b).abs().max().item<double>() <= tol;
}

struct UserNet : Module {
  UserNet() { fc = register_module("fc", Linear(2, 3)); }
  Linear fc{nullptr};
};

TEST(NNExtra, EnumTagsConvertToOptions) {
  EXPECT_EQ(MSELossOptions(kSum).reduction(), Reduction::Sum);
  EXPECT_EQ(L1LossOptions().reduction(kNone).reduction(), Reduction::None);
  EXPECT_EQ(F::PadFuncOptions({1, 1}).mode(kReflect).mode(), "reflect");
  EXPECT_EQ(std::string(kFanIn), "fan_in");
  Tensor x = tensor({1.0, 2.0, 3.0});
  Tensor y = tensor({1.0, 0.0, 5.0});
  EXPECT_DOUBLE_EQ(F::mse_loss(x, y, F::MSELossFuncOptions(kSum)).item<double>(), 8.0);
}

TEST(NNExtra, LayersShapesAndValues) {
  EXPECT_EQ(Sizes(Conv3d(Conv3dOptions(3, 2, 3).stride(2))(randn({1, 3, 7, 7, 7}))), (I64{1, 2, 3, 3, 3}));
  EXPECT_EQ(Sizes(ConvTranspose3d(3, 2, 2)(randn({1, 3, 4, 4, 4}))), (I64{1, 2, 5, 5, 5}));
  EXPECT_EQ(Sizes(MaxPool3d(MaxPoolOptions(2))(randn({2, 3, 4, 4, 4}))), (I64{2, 3, 2, 2, 2}));
  EXPECT_EQ(Sizes(AdaptiveAvgPool3d(AdaptivePoolOptions({1, 2, 3}))(randn({2, 3, 4, 5, 6}))), (I64{2, 3, 1, 2, 3}));
  EXPECT_EQ(Sizes(ReflectionPad2d(ReflectionPad2dOptions({1, 2, 0, 1}))(randn({1, 1, 3, 3}))), (I64{1, 1, 4, 6}));
  EXPECT_EQ(Sizes(PixelShuffle(PixelShuffleOptions(2))(randn({1, 8, 2, 3}))), (I64{1, 2, 4, 6}));
  EXPECT_EQ(Sizes(Upsample(UpsampleOptions().scale_factor(std::vector<double>{2}).mode(kLinear))(randn({1, 2, 3}))),
            (I64{1, 2, 6}));
  Tensor x = tensor({-2.0, -0.25, 0.0, 0.25, 2.0});
  EXPECT_TRUE(Close(Hardshrink()(x), tensor({-2.0, 0.0, 0.0, 0.0, 2.0})));
  EXPECT_TRUE(Close(Softshrink(SoftshrinkOptions(0.25))(x), tensor({-1.75, 0.0, 0.0, 0.0, 1.75})));
  EXPECT_TRUE(Close(Hardtanh()(x), tensor({-1.0, -0.25, 0.0, 0.25, 1.0})));
  EXPECT_TRUE(Close(Threshold(ThresholdOptions(0.1, 9))(x), tensor({9.0, 9.0, 9.0, 0.25, 2.0})));
  // unfold then fold with non-overlapping blocks is the identity.
  Tensor img = randn({2, 3, 4, 6});
  Tensor cols = F::unfold(img, F::UnfoldFuncOptions(2).stride(2));
  EXPECT_EQ(Sizes(cols), (I64{2, 12, 6}));
  EXPECT_TRUE(Close(F::fold(cols, F::FoldFuncOptions({4, 6}, 2).stride(2)), img));
  // max_pool with indices round-trips through max_unpool.
  Tensor v = randn({1, 2, 4, 4, 4});
  auto [m, idx] = F::max_pool3d_with_indices(v, F::MaxPool3dFuncOptions(2));
  Tensor back = F::max_unpool3d(m, idx, F::MaxUnpool3dFuncOptions(2));
  EXPECT_TRUE(Close(F::max_pool3d(back, F::MaxPool3dFuncOptions(2)), m));
  // Functional binds trailing arguments.
  Functional elu(F::elu, F::ELUFuncOptions().alpha(2));
  EXPECT_TRUE(Close(elu(tensor({-1.0})), tensor({2.0 * (std::exp(-1.0) - 1)})));
}

TEST(NNExtra, ModulesTrainBackward) {
  InstanceNorm2d norm(InstanceNorm2dOptions(3).affine(true).track_running_stats(true));
  Tensor x = randn({2, 3, 4, 4}, TensorOptions().requires_grad(true));
  Tensor y = norm(x);
  EXPECT_TRUE(Close(y.mean({2, 3}), zeros({2, 3}), 1e-5));
  y.pow(2).sum().backward();
  EXPECT_TRUE(x.grad().defined());
  EXPECT_TRUE(norm->weight.grad().defined());
  EXPECT_EQ(norm->num_batches_tracked.item<int64_t>(), 1);
  PReLU prelu(PReLUOptions().num_parameters(3));
  prelu(randn({2, 3, 5})).sum().backward();
  EXPECT_EQ(Sizes(prelu->weight.grad()), (I64{3}));
}

TEST(NNExtra, PrintsLikeLibtorch) {
  EXPECT_EQ(Str(Linear(3, 4)), "torch::nn::Linear(in_features=3, out_features=4, bias=true)");
  EXPECT_EQ(Str(ELU(ELUOptions().alpha(42.42).inplace(true))), "torch::nn::ELU(alpha=42.42, inplace=true)");
  EXPECT_EQ(Str(Conv2d(Conv2dOptions(3, 4, {5, 6}).stride({1, 2}))),
            "torch::nn::Conv2d(3, 4, kernel_size=[5, 6], stride=[1, 2])");
  EXPECT_EQ(Str(MaxPool3d(MaxPoolOptions(5).stride(2))),
            "torch::nn::MaxPool3d(kernel_size=[5, 5, 5], stride=[2, 2, 2], padding=[0, 0, 0], dilation=[1, 1, 1], "
            "ceil_mode=false)");
  EXPECT_EQ(Str(ConstantPad2d(ConstantPad2dOptions(2, 3.5))),
            "torch::nn::ConstantPad2d(padding=[2, 2, 2, 2], value=3.5)");
  EXPECT_EQ(Str(Sequential(Linear(2, 3), ReLU())),
            "torch::nn::Sequential(\n"
            "  (0): torch::nn::Linear(in_features=2, out_features=3, bias=true)\n"
            "  (1): torch::nn::ReLU()\n"
            ")");
  // repr() keeps PyTorch's (Python) format.
  EXPECT_EQ(Linear(3, 4)->repr(), "Linear(in_features=3, out_features=4, bias=True)");
}

TEST(NNExtra, NamesAndRegistration) {
  UserNet net;
  EXPECT_EQ(net.name(), "ember::nn::nn_extra_test::UserNet");
  EXPECT_EQ(Linear(2, 2)->name(), "Linear");
  Module m("M");
  m.register_parameter("p", ones({2}));
  EXPECT_NE(ErrorOf([&] { m.register_parameter("p", ones({2})); }).find("Parameter 'p' already defined"),
            std::string::npos);
  m.register_buffer("b", ones({2}));
  EXPECT_NE(ErrorOf([&] { m.register_buffer("b", ones({2})); }).find("Buffer 'b' already defined"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { m.register_module("x.y", Linear(1, 1)); }).find("must not contain a dot (got 'x.y')"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { net.modules(); }).find("attempted to retrieve your top-level module as a shared_ptr"),
            std::string::npos);
  EXPECT_EQ(net.modules(false).size(), 1u);
  net.unregister_module("fc");
  EXPECT_TRUE(net.children().empty());
  EXPECT_NE(ErrorOf([&] { net.unregister_module("fc"); }).find("No Module with name `fc` is registered"),
            std::string::npos);
}

TEST(NNExtra, ContainerAccessAndAs) {
  Sequential seq(Linear(2, 3), ReLU());
  EXPECT_EQ(seq[0].get(), seq->ptr(0).get());
  EXPECT_NE(seq->ptr<LinearImpl>(0), nullptr);
  EXPECT_NE(seq[0]->as<Linear>(), nullptr);
  EXPECT_EQ(seq[1]->as<LinearImpl>(), nullptr);
  EXPECT_NE(ErrorOf([&] { seq->ptr(5); }).find("Index out of range"), std::string::npos);
}

TEST(NNExtra, ErrorMessages) {
  EXPECT_NE(ErrorOf([] { F::conv3d(randn({1, 3, 4, 4, 4}), randn({2, 2, 3, 3, 3})); }).find("[conv3d]"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { F::max_pool3d(randn({3, 4}), F::MaxPool3dFuncOptions(2)); }).find("[max_pool3d] expected a 4-D"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { F::glu(randn({3, 5}), F::GLUFuncOptions(1)); }).find("must be even"), std::string::npos);
  EXPECT_NE(ErrorOf([] { F::pad(randn({3}), F::PadFuncOptions({4, 0}).mode(kCircular)); }).find("[pad] circular"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { F::interpolate(randn({1, 1, 3}), F::InterpolateFuncOptions()); }).find("either size or scale_factor should be defined"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { F::interpolate(randn({2, 2}), F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4}).mode(kNearestExact)); })
                .find("Only 3D, 4D and 5D input Tensors supported (got 2D) for the modes: nearest | linear | bilinear | "
                      "bicubic | trilinear (got kNearestExact)"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              F::interpolate(randn({1, 1, 3}),
                             F::InterpolateFuncOptions().size(std::vector<int64_t>{4}).scale_factor(std::vector<double>{2}));
            }).find("only one of size or scale_factor should be defined"),
            std::string::npos);
  // libtorch 1.13's C++ API lets nearest-exact take align_corners(false).
  EXPECT_EQ(F::interpolate(randn({1, 1, 4}), F::InterpolateFuncOptions().size(std::vector<int64_t>{2}).mode(kNearestExact).align_corners(false))
                .sizes(),
            std::vector<int64_t>({1, 1, 2}));
  // As libtorch, align_corners with a non-interpolating mode is named before a missing size.
  EXPECT_NE(ErrorOf([] { F::interpolate(randn({1, 1, 3}), F::InterpolateFuncOptions().align_corners(true)); })
                .find("align_corners option can only be set with the interpolating modes"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { F::interpolate(randn({1, 1, 3}), F::InterpolateFuncOptions().scale_factor(std::vector<double>{3, 2.5})); })
                .find("scale_factor shape must match input shape. Input is 1D, scale_factor size is [3, 2.5]"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { F::interpolate(randn({1, 1, 3}), F::InterpolateFuncOptions().size(std::vector<int64_t>{4}).mode(kBicubic)); })
                .find("mode 'bicubic' expects a 4-D input"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { F::prelu(randn({2, 3}), ones({4})); }).find("[prelu] weight has 4 values"), std::string::npos);
  EXPECT_NE(ErrorOf([] { F::fold(randn({1, 5, 4}), F::FoldFuncOptions(4, 2)); }).find("divisible by the kernel size"),
            std::string::npos);
}

}  // namespace nn_extra_test
}  // namespace ember::nn
