// Convolutions: hand-checked values, shapes, "same"/"valid", groups, transposed
// convolution as the adjoint, 1-D forms, unbatched inputs, errors, gradients (gradcheck and
// gradgradcheck in float64), non-contiguous inputs and thread-count independence.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "../autograd/grad_util.h"
#include "ember/kernels/cpu/conv.h"
#include "ember/kernels/cpu/conv_dnnl.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace ops_conv_test {

using testing::check_grads;
using testing::Doubles;
using testing::I64;
using testing::Sizes;

using ember::testing::ErrorOf;

double Dot(const Tensor& a, const Tensor& b) { return (a * b).sum().item<double>(); }

TEST(Conv, HandCheckedValues) {
  Tensor x = arange(9, kFloat32).view({1, 1, 3, 3});
  Tensor w = ones({1, 1, 2, 2});
  EXPECT_EQ(Doubles(conv2d(x, w)), (std::vector<double>{8, 12, 20, 24}));
  EXPECT_EQ(Doubles(conv2d(x, w, tensor({1.0f}))), (std::vector<double>{9, 13, 21, 25}));
  // Padding 1, stride 2: the corners of the zero-padded 5x5 image.
  EXPECT_EQ(Doubles(conv2d(x, w, {}, 2, 1)), (std::vector<double>{0, 3, 9, 24}));
  // A 2x2 kernel with dilation 2 reads the four corners of the 3x3 image.
  EXPECT_EQ(Doubles(conv2d(x, ones({1, 1, 2, 2}), {}, 1, 0, 2)), (std::vector<double>{0 + 2 + 6 + 8}));
}

TEST(Conv, Shapes) {
  Tensor x = randn({2, 3, 7, 9});
  EXPECT_EQ(Sizes(conv2d(x, randn({4, 3, 3, 3}), {}, 2, 1)), (I64{2, 4, 4, 5}));
  EXPECT_EQ(Sizes(conv2d(x, randn({4, 3, 3, 1}), {}, {1, 2}, {0, 0}, {2, 1})), (I64{2, 4, 3, 5}));
  EXPECT_EQ(Sizes(conv2d(x, randn({6, 1, 3, 3}), {}, 1, 1, 1, 3)), (I64{2, 6, 7, 9}));
  EXPECT_EQ(Sizes(conv1d(randn({2, 3, 10}), randn({5, 3, 4}), {}, 3)), (I64{2, 5, 3}));
  EXPECT_EQ(Sizes(conv_transpose2d(randn({1, 4, 3, 3}), randn({4, 2, 3, 3}), {}, 2, 1, 1)), (I64{1, 2, 6, 6}));
  EXPECT_EQ(Sizes(conv_transpose1d(randn({2, 4, 5}), randn({4, 3, 3}), {}, 2)), (I64{2, 3, 11}));
  EXPECT_EQ(Sizes(conv2d(randn({0, 3, 5, 5}), randn({2, 3, 3, 3}))), (I64{0, 2, 3, 3}));
}

TEST(Conv, SameAndValidPadding) {
  Tensor x = randn({1, 2, 5, 6}, kFloat64);
  Tensor w = randn({3, 2, 4, 3}, kFloat64);
  Tensor same = conv2d(x, w, {}, 1, "same");
  EXPECT_EQ(Sizes(same), (I64{1, 3, 5, 6}));
  // Kernel height 4: total padding 3, one on top and two below (PyTorch's split).
  Tensor ref = conv2d(pad(x, {1, 1, 1, 2}), w);
  EXPECT_TRUE(same.allclose(ref, 1e-12, 1e-12));
  EXPECT_TRUE(conv2d(x, w, {}, 1, "valid").equal(conv2d(x, w)));
  Tensor x1 = randn({2, 2, 7}, kFloat64);
  EXPECT_EQ(Sizes(conv1d(x1, randn({4, 2, 4}, kFloat64), {}, 1, "same", 2)), (I64{2, 4, 7}));
}

TEST(Conv, GroupsMatchSeparateConvolutions) {
  Tensor x = randn({2, 4, 6, 6}, kFloat64);
  Tensor w = randn({6, 2, 3, 3}, kFloat64);
  Tensor b = randn({6}, kFloat64);
  Tensor y = conv2d(x, w, b, 1, 1, 1, 2);
  Tensor y0 = conv2d(x.slice(1, 0, 2), w.slice(0, 0, 3), b.slice(0, 0, 3), 1, 1);
  Tensor y1 = conv2d(x.slice(1, 2, 4), w.slice(0, 3, 6), b.slice(0, 3, 6), 1, 1);
  EXPECT_TRUE(y.allclose(cat({y0, y1}, 1), 1e-12, 1e-12));
}

TEST(Conv, TransposedIsTheAdjoint) {
  // <conv2d(x, w), y> == <x, conv_transpose2d(y, w)> for the same geometry.
  Tensor x = randn({2, 4, 7, 8}, kFloat64);
  Tensor w = randn({6, 2, 3, 2}, kFloat64);
  Tensor cy = conv2d(x, w, {}, {2, 1}, {1, 0}, {1, 2}, 2);
  Tensor y = randn(cy.sizes(), kFloat64);
  // The transposed output must recover 7x8: output_padding covers the rows stride 2 drops.
  Tensor xt = conv_transpose2d(y, w, {}, {2, 1}, {1, 0}, {0, 0}, 2, {1, 2});
  ASSERT_EQ(Sizes(xt), Sizes(x));
  EXPECT_NEAR(Dot(cy, y), Dot(x, xt), 1e-9);
}

TEST(Conv, OneDimensionalMatchesTwoDimensional) {
  Tensor x = randn({2, 3, 11}, kFloat64);
  Tensor w = randn({4, 3, 3}, kFloat64);
  Tensor b = randn({4}, kFloat64);
  Tensor y1 = conv1d(x, w, b, 2, 1, 2);
  Tensor y2 = conv2d(x.unsqueeze(2), w.unsqueeze(2), b, {1, 2}, {0, 1}, {1, 2}).squeeze(2);
  EXPECT_TRUE(y1.allclose(y2, 1e-12, 1e-12));
}

TEST(Conv, UnbatchedInput) {
  Tensor x = randn({3, 6, 6});
  Tensor w = randn({2, 3, 3, 3});
  Tensor y = conv2d(x, w, {}, 1, 1);
  EXPECT_EQ(Sizes(y), (I64{2, 6, 6}));
  EXPECT_TRUE(y.equal(conv2d(x.unsqueeze(0), w, {}, 1, 1)[0]));
  EXPECT_EQ(Sizes(conv_transpose2d(randn({3, 4, 4}), randn({3, 2, 2, 2}), {}, 2)), (I64{2, 8, 8}));
}

TEST(Conv, NonContiguousInput) {
  Tensor x = randn({2, 3, 8, 6}).transpose(2, 3);
  Tensor w = randn({4, 3, 3, 3}).transpose(2, 3);
  ASSERT_FALSE(x.is_contiguous());
  EXPECT_TRUE(conv2d(x, w, {}, 1, 1).equal(conv2d(x.contiguous(), w.contiguous(), {}, 1, 1)));
}

TEST(Conv, ReducedPrecisionComputesInFloat32) {
  Tensor x = randn({1, 2, 5, 5});
  Tensor w = randn({3, 2, 3, 3});
  Tensor y = conv2d(x.to(kFloat16), w.to(kFloat16));
  EXPECT_EQ(y.dtype(), kFloat16);
  EXPECT_TRUE(y.to(kFloat32).allclose(conv2d(x.to(kFloat16).to(kFloat32), w.to(kFloat16).to(kFloat32)), 1e-2, 1e-2));
  EXPECT_EQ(conv2d(x.to(kBFloat16), w.to(kBFloat16)).dtype(), kBFloat16);
}

TEST(Conv, Errors) {
  Tensor x = randn({2, 3, 5, 5});
  EXPECT_NE(ErrorOf([&] { conv2d(randn({5, 5}), randn({1, 1, 3, 3})); }).find("[conv2d] expected a 3-D"),
            std::string::npos);
  const std::string ch = ErrorOf([&] { conv2d(x, randn({4, 2, 3, 3})); });
  EXPECT_NE(ch.find("groups=1"), std::string::npos) << ch;
  EXPECT_NE(ch.find("[4, 2, 3, 3]"), std::string::npos) << ch;
  EXPECT_NE(ch.find("[2, 3, 5, 5]"), std::string::npos) << ch;
  EXPECT_NE(ErrorOf([&] { conv2d(x, randn({4, 3, 7, 7})); }).find("Kernel size can't be greater"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { conv2d(x, randn({4, 3, 3, 3}), {}, 0); }).find("stride must be positive"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { conv2d(x, randn({4, 3, 3, 3}, kFloat64)); }).find("should be the same"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { conv2d(x, randn({4, 3, 3, 3}), randn({3})); }).find("expected bias of shape [4]"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { conv2d(x, randn({3, 1, 3, 3}), {}, 1, 0, 1, 2); }).find("divisible by groups"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { conv2d(x, randn({4, 3, 3, 3}), {}, 2, "same"); }).find("strided"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { conv2d(x, randn({4, 3, 3, 3}), {}, 1, "full"); }).find("\"same\", \"valid\""),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              conv_transpose2d(randn({1, 4, 3, 3}), randn({4, 2, 3, 3}), {}, 2, 0, 2);
            }).find("output_padding must be smaller"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { conv2d(x.to(kInt64), randn({4, 3, 3, 3}).to(kInt64)); }).find("floating-point"),
            std::string::npos);
}

TEST(ConvGrad, NodeNames) {
  Tensor x = randn({1, 2, 4, 4}).requires_grad_();
  Tensor w = randn({3, 2, 3, 3}).requires_grad_();
  EXPECT_EQ(conv2d(x, w).grad_fn()->name(), "ConvolutionBackward0");
}

TEST(ConvGrad, Conv2dStridePaddingDilationGroups) {
  EXPECT_EQ(check_grads([](const std::vector<Tensor>& v) { return conv2d(v[0], v[1], v[2], {2, 1}, {1, 2}, {1, 2}, 2); },
                        {randn({1, 4, 5, 4}), randn({4, 2, 2, 3}), randn({4})}),
            "");
}

TEST(ConvGrad, Conv2dSameOddPadding) {
  EXPECT_EQ(check_grads([](const std::vector<Tensor>& v) { return conv2d(v[0], v[1], {}, 1, "same"); },
                        {randn({1, 2, 4, 3}), randn({2, 2, 2, 3})}),
            "");
}

TEST(ConvGrad, ConvTranspose2dOutputPaddingGroups) {
  EXPECT_EQ(
      check_grads([](const std::vector<Tensor>& v) { return conv_transpose2d(v[0], v[1], v[2], 2, 1, 1, 2, 1); },
                  {randn({1, 4, 3, 3}), randn({4, 1, 3, 2}), randn({2})}),
      "");
}

TEST(ConvGrad, Conv1dAndConvTranspose1d) {
  EXPECT_EQ(check_grads([](const std::vector<Tensor>& v) { return conv1d(v[0], v[1], v[2], 2, 1, 2); },
                        {randn({2, 2, 7}), randn({3, 2, 2}), randn({3})}),
            "");
  EXPECT_EQ(check_grads([](const std::vector<Tensor>& v) { return conv_transpose1d(v[0], v[1], {}, 2, 0, 1); },
                        {randn({1, 2, 4}), randn({2, 3, 3})}),
            "");
}

TEST(ConvGrad, BiasGradientIsTheSumOverPositions) {
  Tensor x = randn({2, 3, 5, 5});
  Tensor w = randn({4, 3, 3, 3});
  Tensor b = zeros({4}).requires_grad_();
  conv2d(x, w, b).sum().backward();
  EXPECT_EQ(Doubles(b.grad()), (std::vector<double>(4, 2 * 3 * 3)));
}

TEST(ConvDeterminism, OneAndTwoThreadsBitIdentical) {
  // Large enough that the images and the weight-gradient chunks spread over threads.
  Tensor x = randn({8, 16, 20, 20});
  Tensor w = randn({32, 8, 3, 3});
  Tensor b = randn({32});
  Tensor gy = randn({8, 32, 10, 10});
  auto run = [&](int threads) {
    set_num_threads(threads);
    Tensor xr = x.detach().requires_grad_(), wr = w.detach().requires_grad_(), br = b.detach().requires_grad_();
    Tensor y = conv2d(xr, wr, br, 2, 1, 1, 2);
    y.backward(gy);
    return std::vector<Tensor>{y.detach(), xr.grad(), wr.grad(), br.grad()};
  };
  const int saved = get_num_threads();
  std::vector<Tensor> one = run(1), two = run(2);
  set_num_threads(saved);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(one[i].equal(two[i])) << i;
}

// The oneDNN path (16+ channels, float32): bit-identical for 1, 2 and 3 threads, including
// a batch whose last chunk is short, and close to the im2col + BLAS path.
TEST(ConvDeterminism, OneDnnPathThreadsAndIm2colAgree) {
  Tensor x = randn({11, 16, 9, 9});
  Tensor w = randn({32, 16, 3, 3}) * 0.1;
  Tensor b = randn({32});
  Tensor gy = randn({11, 32, 9, 9});
  auto run = [&](int threads) {
    set_num_threads(threads);
    Tensor xr = x.detach().requires_grad_(), wr = w.detach().requires_grad_(), br = b.detach().requires_grad_();
    Tensor y = conv2d(xr, wr, br, 1, 1);
    y.backward(gy);
    return std::vector<Tensor>{y.detach(), xr.grad(), wr.grad(), br.grad()};
  };
  const int saved = get_num_threads();
  ASSERT_TRUE(kernels::cpu::dnnl_conv_enabled());
  std::vector<Tensor> one = run(1), two = run(2), three = run(3);
  kernels::cpu::set_dnnl_conv_enabled(false);
  std::vector<Tensor> im2col = run(2);
  kernels::cpu::set_dnnl_conv_enabled(true);
  set_num_threads(saved);
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(one[i].equal(two[i])) << i;
    EXPECT_TRUE(one[i].equal(three[i])) << i;
    EXPECT_TRUE(one[i].allclose(im2col[i], 1e-4, 1e-4)) << i;
  }
}

// Note [Bias gradient with the weight gradient]: with both gradients wanted and no graph
// recorded, the weight-gradient kernels sum grad_out for the bias too. On every path (oneDNN,
// few-tap, im2col with groups, 1-D, float64) the bias gradient matches a float64 sum of
// grad_out, is the same for 1 and 2 threads, and agrees with the separate sum that a
// recorded (create_graph) backward still takes.
TEST(ConvDeterminism, BiasGradientWithWeightGradient) {
  struct Case {
    std::vector<int64_t> x, w;
    int64_t groups;
    DType dt;
  };
  const std::vector<Case> cases = {{{64, 32, 14, 14}, {64, 32, 3, 3}, 1, kFloat32},
                                   {{64, 1, 28, 28}, {32, 1, 3, 3}, 1, kFloat32},
                                   {{5, 4, 9, 9}, {6, 2, 3, 3}, 2, kFloat32},
                                   {{4, 3, 50}, {5, 3, 3}, 1, kFloat32},
                                   {{3, 2, 6, 6}, {4, 2, 3, 3}, 1, kFloat64},
                                   {{0, 16, 8, 8}, {16, 16, 3, 3}, 1, kFloat32}};
  const int saved = get_num_threads();
  for (const Case& c : cases) {
    const bool one_d = c.x.size() == 3;
    Tensor x = randn(c.x, c.dt), w = randn(c.w, c.dt), b = randn({c.w[0]}, c.dt);
    auto conv = [&](const Tensor& xr, const Tensor& wr, const Tensor& br) {
      return one_d ? conv1d(xr, wr, br, 1, 1, 1, c.groups) : conv2d(xr, wr, br, 1, 1, 1, c.groups);
    };
    Tensor gy = randn(conv(x, w, b).sizes(), c.dt) + 3;
    auto run = [&](int threads, bool create_graph) {
      set_num_threads(threads);
      Tensor wr = w.detach().requires_grad_(), br = b.detach().requires_grad_();
      auto grads = autograd::grad({conv(x, wr, br)}, {wr, br}, {gy}, std::nullopt, create_graph);
      return std::vector<Tensor>{grads[0].detach(), grads[1].detach()};
    };
    std::vector<Tensor> one = run(1, false), two = run(2, false), recorded = run(2, true);
    std::string what;
    for (int64_t d : c.x) what += std::to_string(d) + " ";
    EXPECT_TRUE(one[0].equal(two[0])) << what;
    EXPECT_TRUE(one[1].equal(two[1])) << what;
    const Tensor ref = gy.to(kFloat64).sum(one_d ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{0, 2, 3});
    const double tol = c.dt == kFloat64 ? 1e-12 : 2e-6;
    EXPECT_LE((one[1].to(kFloat64) - ref).abs().max().item<double>(), tol * (1 + ref.abs().max().item<double>()))
        << what;
    EXPECT_TRUE(one[1].allclose(recorded[1], 1e-5, 1e-5)) << what;
    EXPECT_TRUE(one[0].equal(recorded[0])) << what;
  }
  set_num_threads(saved);
}

// Note [One pass of the backward]: with the input, weight and bias gradients all wanted and no
// graph recorded, the oneDNN path reorders each chunk's grad_out once for both maps. On each
// path (Winograd, a short last chunk, oneDNN's direct kernels, few-tap, 1-D, float64, and
// with oneDNN switched off) the input and weight gradients are the bits of the separate maps
// that a recorded (create_graph) backward runs, the same for 1 and 2 threads, and the bias
// gradient matches the separate sum.
TEST(ConvDeterminism, OnePassBackwardMatchesSeparateMaps) {
  struct Case {
    std::vector<int64_t> x, w;
    int64_t stride;
    DType dt;
    bool dnnl;
  };
  const std::vector<Case> cases = {{{64, 32, 14, 14}, {64, 32, 3, 3}, 1, kFloat32, true},
                                   {{11, 16, 28, 28}, {32, 16, 3, 3}, 1, kFloat32, true},
                                   {{9, 16, 15, 15}, {24, 16, 5, 5}, 2, kFloat32, true},
                                   {{64, 1, 28, 28}, {32, 1, 3, 3}, 1, kFloat32, true},
                                   {{4, 3, 50}, {5, 3, 3}, 1, kFloat32, true},
                                   {{3, 2, 6, 6}, {4, 2, 3, 3}, 1, kFloat64, true},
                                   {{9, 16, 15, 15}, {24, 16, 3, 3}, 1, kFloat32, false}};
  const int saved = get_num_threads();
  for (const Case& c : cases) {
    kernels::cpu::set_dnnl_conv_enabled(c.dnnl);
    const bool one_d = c.x.size() == 3;
    Tensor x = randn(c.x, c.dt), w = randn(c.w, c.dt), b = randn({c.w[0]}, c.dt);
    auto conv = [&](const Tensor& xr, const Tensor& wr, const Tensor& br) {
      return one_d ? conv1d(xr, wr, br, c.stride, 1) : conv2d(xr, wr, br, c.stride, 1);
    };
    Tensor gy = randn(conv(x, w, b).sizes(), c.dt);
    auto run = [&](int threads, bool create_graph) {
      set_num_threads(threads);
      Tensor xr = x.detach().requires_grad_(), wr = w.detach().requires_grad_(), br = b.detach().requires_grad_();
      auto grads = autograd::grad({conv(xr, wr, br)}, {xr, wr, br}, {gy}, std::nullopt, create_graph);
      return std::vector<Tensor>{grads[0].detach(), grads[1].detach(), grads[2].detach()};
    };
    std::vector<Tensor> one = run(1, false), two = run(2, false), recorded = run(2, true);
    std::string what;
    for (int64_t d : c.x) what += std::to_string(d) + " ";
    what += c.dnnl ? "(oneDNN on)" : "(oneDNN off)";
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(one[i].equal(two[i])) << what << " gradient " << i;
    EXPECT_TRUE(one[0].equal(recorded[0])) << what;
    EXPECT_TRUE(one[1].equal(recorded[1])) << what;
    EXPECT_TRUE(one[2].allclose(recorded[2], 1e-5, 1e-4)) << what;
    // Against float64 (the float32 maps' own error).
    Tensor x64 = x.to(kFloat64).requires_grad_(), w64 = w.to(kFloat64).requires_grad_();
    Tensor b64 = b.to(kFloat64).requires_grad_();
    auto ref = autograd::grad({conv(x64, w64, b64)}, {x64, w64, b64}, {gy.to(kFloat64)});
    for (size_t i = 0; i < 3; ++i) {
      const double scale = 1 + ref[i].abs().max().item<double>();
      EXPECT_LE((one[i].to(kFloat64) - ref[i]).abs().max().item<double>(), 1e-3 * scale) << what << " gradient " << i;
    }
  }
  kernels::cpu::set_dnnl_conv_enabled(true);
  set_num_threads(saved);
}

// Note [Winograd convolution]: 3x3 stride-1 float32 layers of 16+ channels run on oneDNN's
// Winograd kernels where the CPU has them. Forward, input gradient and weight gradient are
// bit-identical for 1 and 2 threads (a batch with a short last chunk included), and their
// error against a float64 reference stays within a few times the direct kernels' error; on
// an AVX-512 CPU the Winograd results differ from the direct ones (the path really ran).
TEST(ConvDeterminism, WinogradAgainstDirectAndFloat64) {
  struct Case {
    std::vector<int64_t> x, w;
  };
  const std::vector<Case> cases = {{{16, 32, 14, 14}, {64, 32, 3, 3}}, {{11, 16, 28, 28}, {32, 16, 3, 3}},
                                   {{3, 64, 7, 7}, {64, 64, 3, 3}}};
  ASSERT_TRUE(kernels::cpu::dnnl_winograd_enabled());
  const int saved = get_num_threads();
  for (size_t c = 0; c < cases.size(); ++c) {
    Tensor x = randn(cases[c].x), w = randn(cases[c].w) * 0.1, b = randn({cases[c].w[0]});
    Tensor gy = randn({cases[c].x[0], cases[c].w[0], cases[c].x[2], cases[c].x[3]});
    auto run = [&](int threads, DType dt) {
      set_num_threads(threads);
      Tensor xr = x.detach().to(dt).requires_grad_(), wr = w.detach().to(dt).requires_grad_();
      Tensor br = b.detach().to(dt).requires_grad_();
      Tensor y = conv2d(xr, wr, br, 1, 1);
      y.backward(gy.to(dt));
      return std::vector<Tensor>{y.detach(), xr.grad(), wr.grad()};
    };
    std::vector<Tensor> one = run(1, kFloat32), two = run(2, kFloat32), ref = run(2, kFloat64);
    kernels::cpu::set_dnnl_winograd_enabled(false);
    std::vector<Tensor> direct = run(2, kFloat32);
    kernels::cpu::set_dnnl_winograd_enabled(true);
    bool any_differs = false;
    for (size_t i = 0; i < one.size(); ++i) {
      EXPECT_TRUE(one[i].equal(two[i])) << "case " << c << " output " << i;
      const double scale = ref[i].abs().max().item<double>();
      const double err_wino = (one[i].to(kFloat64) - ref[i]).abs().max().item<double>() / scale;
      const double err_direct = (direct[i].to(kFloat64) - ref[i]).abs().max().item<double>() / scale;
      EXPECT_LT(err_wino, 2e-5) << "case " << c << " output " << i << " direct error " << err_direct;
      EXPECT_LT(err_wino, std::max(16 * err_direct, 1e-6)) << "case " << c << " output " << i;
      any_differs = any_differs || !one[i].equal(direct[i]);
    }
    if (cpu_supports(CpuCapability::AVX512)) {
      EXPECT_TRUE(any_differs) << "case " << c;
    }
  }
  set_num_threads(saved);
}

// Note [Few-tap convolutions]: the direct kernels (in_channels * kernel area <= 32) agree
// with the im2col + BLAS path on shapes that leave remainders in every block (output
// channels not a multiple of 4 or 2, taps not a multiple of 4, positions not a multiple of
// 16 or 8), with stride, padding, dilation, a 1x1 kernel and no bias; the result is the
// same for 1 and 2 threads.
TEST(ConvDeterminism, FewTapKernelsAgreeWithIm2col) {
  struct Case {
    std::vector<int64_t> x, w;
    int64_t stride, pad, dil;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{5, 1, 28, 28}, {32, 1, 3, 3}, 1, 1, 1, true},  {{3, 1, 13, 11}, {7, 1, 3, 3}, 1, 0, 1, true},
      {{4, 3, 17, 9}, {5, 3, 3, 3}, 2, 1, 1, false},   {{2, 2, 12, 12}, {3, 2, 2, 5}, 1, 2, 2, true},
      {{3, 6, 7, 7}, {9, 6, 1, 1}, 1, 0, 1, true},     {{2, 1, 5, 5}, {1, 1, 5, 5}, 1, 2, 1, true},
      {{64, 1, 28, 28}, {32, 1, 3, 3}, 1, 1, 1, true},
  };
  ASSERT_TRUE(kernels::cpu::few_taps_enabled());
  const int saved = get_num_threads();
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& k = cases[c];
    Tensor x = randn(k.x), w = randn(k.w) * 0.3, b = k.bias ? randn({k.w[0]}) : Tensor();
    Tensor probe = conv2d(x, w, b, k.stride, k.pad, k.dil);
    Tensor gy = randn(probe.sizes());
    auto run = [&](int threads) {
      set_num_threads(threads);
      Tensor xr = x.detach().requires_grad_(), wr = w.detach().requires_grad_();
      Tensor br = k.bias ? b.detach().requires_grad_() : Tensor();
      Tensor y = conv2d(xr, wr, br, k.stride, k.pad, k.dil);
      y.backward(gy);
      return std::vector<Tensor>{y.detach(), xr.grad(), wr.grad()};
    };
    std::vector<Tensor> one = run(1), two = run(2);
    kernels::cpu::set_few_taps_enabled(false);
    std::vector<Tensor> blas = run(2);
    kernels::cpu::set_few_taps_enabled(true);
    for (size_t i = 0; i < one.size(); ++i) {
      EXPECT_TRUE(one[i].equal(two[i])) << "case " << c << " output " << i;
      EXPECT_TRUE(one[i].allclose(blas[i], 1e-4, 1e-4))
          << "case " << c << " output " << i << " max diff " << (one[i] - blas[i]).abs().max().item<float>();
    }
  }
  set_num_threads(saved);
}

// Convolutions called from several user threads at once (the oneDNN plan cache, per-thread
// buffers and streams) give the same results as one at a time.
TEST(ConvDeterminism, ConcurrentCallsFromUserThreads) {
  Tensor x = randn({16, 32, 14, 14}), w = randn({64, 32, 3, 3}), b = randn({64});
  Tensor x2 = randn({9, 16, 10, 10}), w2 = randn({16, 16, 3, 3});
  const Tensor ref1 = conv2d(x, w, b, 1, 1), ref2 = conv2d(x2, w2, {}, 2, 1);
  std::atomic<int> mismatches{0};
  auto worker = [&](int k) {
    for (int i = 0; i < 20; ++i) {
      const Tensor r = k == 1 ? conv2d(x2, w2, {}, 2, 1) : conv2d(x, w, b, 1, 1);
      if (!r.equal(k == 1 ? ref2 : ref1)) ++mismatches;
    }
  };
  std::thread t0(worker, 0), t1(worker, 1), t2(worker, 2);
  t0.join();
  t1.join();
  t2.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// The oneDNN kernels take float32 convolutions with 16+ channels and decline the rest
// (the caller falls back to im2col).
TEST(ConvDeterminism, OneDnnTakesWhatItShould) {
  kernels::cpu::ConvGeometry g;
  g.batch = 3, g.in_channels = 16, g.in_h = g.in_w = 6, g.out_channels = 16, g.out_h = g.out_w = 6;
  g.kernel_h = g.kernel_w = 3, g.pad_h = g.pad_w = 1;
  std::vector<float> x(3 * 16 * 36, 1.0f), w(16 * 16 * 9, 0.5f), y(3 * 16 * 36, -1.0f);
  ASSERT_TRUE(kernels::cpu::dnnl_conv_forward(y.data(), x.data(), w.data(), nullptr, g));
  EXPECT_FLOAT_EQ(y[0], 16 * 4 * 0.5f);             // corner: 4 of 9 taps inside
  EXPECT_FLOAT_EQ(y[1 * 6 + 1], 16 * 9 * 0.5f);     // interior
  g.in_channels = 8;                                // too few channels
  EXPECT_FALSE(kernels::cpu::dnnl_conv_forward(y.data(), x.data(), w.data(), nullptr, g));
  g.in_channels = 16, g.groups = 2;                 // grouped
  EXPECT_FALSE(kernels::cpu::dnnl_conv_forward(y.data(), x.data(), w.data(), nullptr, g));
}

}  // namespace
}  // namespace ember
