// Convolution and pooling against libtorch 1.13: same inputs and weights, outputs and the
// gradients of input, weight and bias, over a grid of configurations (groups, dilation,
// stride 2, "same", transposed with output_padding, max/avg/adaptive pooling with
// ceil_mode and padding, non-contiguous inputs), plus the nn modules in float32.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ember/ember.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "parity/grad_parity.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace conv_parity {

using ET = ember::Tensor;
using TT = torch::Tensor;
using EV = std::vector<ET>;
using TV = std::vector<TT>;
using I64 = std::vector<int64_t>;

std::string size_str(const I64& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out.push_back('x');
    out.append(std::to_string(s[i]));
  }
  return out;
}

ET R(I64 s) { return ember::randn(s, ember::TensorOptions(ember::kFloat64)); }

struct ConvCase {
  std::string name;
  I64 x, w;
  I64 stride, padding, dilation;
  int64_t groups;
  bool bias;
};

TEST(ConvParity, Conv2dGrid) {
  const std::vector<ConvCase> cases = {
      {"3x3 pad 1", {2, 3, 7, 7}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {"stride 2", {2, 3, 8, 9}, {5, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, true},
      {"groups 2 no bias", {2, 4, 6, 6}, {6, 2, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 2, false},
      {"depthwise", {1, 4, 6, 5}, {4, 1, 3, 3}, {1, 2}, {1, 1}, {1, 1}, 4, true},
      {"dilation 2", {2, 2, 9, 8}, {3, 2, 3, 2}, {1, 1}, {2, 1}, {2, 3}, 1, true},
      {"1x1", {2, 5, 4, 4}, {3, 5, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {"1x1 stride 2", {2, 5, 5, 5}, {3, 5, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, false},
      {"cin 1", {3, 1, 10, 10}, {8, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},
  };
  for (const ConvCase& c : cases) {
    EV in = {R(c.x), R(c.w)};
    if (c.bias) in.push_back(R({c.w[0]}));
    parity::check_grad_parity(
        "conv2d " + c.name,
        [&](const EV& v) { return ember::conv2d(v[0], v[1], c.bias ? v[2] : ET(), c.stride, c.padding, c.dilation, c.groups); },
        [&](const TV& v) { return torch::conv2d(v[0], v[1], c.bias ? v[2] : TT(), c.stride, c.padding, c.dilation, c.groups); },
        in);
  }
}

// float32 with 16+ channels: the oneDNN kernels (Note [oneDNN convolution]). Batch sizes
// 1, 9 (a short last chunk) and 64; stride, dilation, asymmetric and zero padding, a
// kernel that does not reach the last input column, non-contiguous input.
TEST(ConvParity, Float32OneDnnPath) {
  struct Case {
    std::string name;
    I64 x, w, stride, padding, dilation;
    bool transposed_input;
  };
  const std::vector<Case> cases = {
      {"batch 64, 3x3 pad 1", {64, 16, 14, 14}, {32, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, false},
      {"batch 9, stride 2", {9, 16, 11, 10}, {24, 16, 3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
      {"batch 1, dilation 2, no pad", {1, 32, 12, 13}, {16, 32, 3, 3}, {1, 1}, {0, 0}, {2, 2}, false},
      {"stride 2 skips the last column", {5, 16, 9, 9}, {16, 16, 2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
      {"1x1, 5x3 kernel", {3, 20, 8, 8}, {17, 20, 5, 3}, {1, 2}, {2, 0}, {1, 1}, false},
      {"non-contiguous input", {4, 16, 7, 9}, {16, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, true},
  };
  for (const Case& c : cases) {
    ET x = ember::randn(c.x);
    if (c.transposed_input) x = ember::randn({c.x[0], c.x[1], c.x[3], c.x[2]}).transpose(2, 3);
    EV in = {x, ember::randn(c.w) * 0.1, ember::randn({c.w[0]})};
    parity::check_grad_parity(
        "conv2d float32 " + c.name,
        [&](const EV& v) { return ember::conv2d(v[0], v[1], v[2], c.stride, c.padding, c.dilation, 1); },
        [&](const TV& v) { return torch::conv2d(v[0], v[1], v[2], c.stride, c.padding, c.dilation, 1); }, in,
        1e-4, 2e-3);  // float32 sums of up to 12544 terms of size ~1 (weight gradient: ~100)
  }
  // The transposed convolution's forward is the input-gradient kernel.
  EV in = {ember::randn({6, 16, 7, 7}), ember::randn({16, 24, 3, 3}) * 0.1, ember::randn({24})};
  parity::check_grad_parity(
      "conv_transpose2d float32 stride 2",
      [&](const EV& v) { return ember::conv_transpose2d(v[0], v[1], v[2], 2, 1, 1); },
      [&](const TV& v) { return torch::conv_transpose2d(v[0], v[1], v[2], 2, 1, 1); }, in, 1e-4, 2e-3);
}

TEST(ConvParity, NonContiguousInputs) {
  ET x = R({2, 3, 6, 7}).transpose(2, 3);
  ET w = R({4, 3, 3, 3}).transpose(2, 3);
  parity::check_grad_parity(
      "conv2d non-contiguous", [](const EV& v) { return ember::conv2d(v[0], v[1], {}, 1, 1); },
      [](const TV& v) { return torch::conv2d(v[0], v[1], {}, 1, 1); }, {x, w});
  parity::check_grad_parity(
      "max_pool2d non-contiguous", [](const EV& v) { return ember::max_pool2d(v[0], 2); },
      [](const TV& v) { return torch::max_pool2d(v[0], 2); }, {R({2, 3, 8, 6}).transpose(2, 3)});
}

// float32 2x2 max pooling (the vectorised path): exact values and indices against torch on
// data full of ties (ReLU'd, rounded) with NaNs, for row widths below, at and above one
// vector, odd sizes, and the gradient routed by those indices.
TEST(PoolParity, MaxPool2x2Float32TiesAndNaN) {
  for (I64 shape : {I64{3, 5, 28, 28}, I64{2, 4, 14, 15}, I64{2, 3, 9, 16}, I64{1, 2, 5, 7}, I64{2, 2, 6, 34},
                    I64{2, 3, 7, 7}, I64{1, 2, 5, 70}, I64{1, 1, 2, 2}}) {
    ET x = (ember::randn(shape) * 2).round().relu() * 0.5;
    ET flat = x.view({-1});
    for (int64_t i = 3; i < flat.size(0); i += 37) flat.slice(0, i, i + 1).fill_(NAN);
    auto [y, idx] = ember::max_pool2d_with_indices(x, {2});
    auto [ty, tidx] = torch::max_pool2d_with_indices(parity::to_torch(x), {2});
    const std::string what = "max_pool2d 2x2 float32 " + size_str(shape);
    EXPECT_TRUE(torch::equal(parity::to_torch(idx), tidx)) << what;
    EXPECT_TRUE(torch::allclose(parity::to_torch(y), ty, 0, 0, /*equal_nan=*/true)) << what;
    ET xg = x.detach().requires_grad_();
    TT txg = parity::to_torch(x).requires_grad_();
    ET g = ember::randn(y.sizes());
    ember::max_pool2d(xg, 2).backward(g);
    torch::max_pool2d(txg, 2).backward(parity::to_torch(g));
    EXPECT_TRUE(torch::equal(parity::to_torch(xg.grad()), txg.grad())) << what;
  }
}

TEST(ConvParity, SamePadding) {
  for (I64 k : {I64{3, 3}, I64{4, 2}, I64{2, 5}}) {
    parity::check_grad_parity(
        "conv2d same " + std::to_string(k[0]) + "x" + std::to_string(k[1]),
        [](const EV& v) { return ember::conv2d(v[0], v[1], v[2], 1, "same", {1, 2}); },
        [](const TV& v) { return torch::conv2d(v[0], v[1], v[2], 1, "same", {1, 2}); },
        {R({2, 3, 7, 8}), R({4, 3, k[0], k[1]}), R({4})});
  }
  parity::check_grad_parity(
      "conv1d same", [](const EV& v) { return ember::conv1d(v[0], v[1], v[2], 1, "same"); },
      [](const TV& v) { return torch::conv1d(v[0], v[1], v[2], 1, "same"); }, {R({2, 3, 9}), R({2, 3, 4}), R({2})});
}

TEST(ConvParity, Conv1dAndTransposed) {
  parity::check_grad_parity(
      "conv1d stride dilation groups",
      [](const EV& v) { return ember::conv1d(v[0], v[1], v[2], 2, 1, 2, 2); },
      [](const TV& v) { return torch::conv1d(v[0], v[1], v[2], 2, 1, 2, 2); }, {R({2, 4, 13}), R({6, 2, 3}), R({6})});
  parity::check_grad_parity(
      "conv_transpose2d output_padding groups",
      [](const EV& v) { return ember::conv_transpose2d(v[0], v[1], v[2], 2, 1, 1, 2, 1); },
      [](const TV& v) { return torch::conv_transpose2d(v[0], v[1], v[2], 2, 1, 1, 2, 1); },
      {R({2, 4, 4, 5}), R({4, 3, 3, 3}), R({6})});
  parity::check_grad_parity(
      "conv_transpose2d dilation stride (2, 3)",
      [](const EV& v) { return ember::conv_transpose2d(v[0], v[1], {}, {2, 3}, {0, 1}, {1, 2}, 1, {2, 1}); },
      [](const TV& v) { return torch::conv_transpose2d(v[0], v[1], {}, {2, 3}, {0, 1}, {1, 2}, 1, {2, 1}); },
      {R({1, 3, 4, 4}), R({3, 2, 2, 3})});
  parity::check_grad_parity(
      "conv_transpose1d", [](const EV& v) { return ember::conv_transpose1d(v[0], v[1], v[2], 3, 1, 2); },
      [](const TV& v) { return torch::conv_transpose1d(v[0], v[1], v[2], 3, 1, 2); },
      {R({2, 3, 5}), R({3, 2, 4}), R({2})});
  parity::check_grad_parity(
      "conv2d unbatched", [](const EV& v) { return ember::conv2d(v[0], v[1], {}, 2, 1); },
      [](const TV& v) { return torch::conv2d(v[0], v[1], {}, 2, 1); }, {R({3, 7, 7}), R({2, 3, 3, 3})});
}

TEST(PoolParity, MaxPool) {
  struct Case {
    I64 x, k, s, p, d;
    bool ceil;
  };
  const std::vector<Case> cases = {
      {{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},  {{2, 3, 7, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
      {{1, 2, 9, 8}, {3, 2}, {1, 2}, {1, 0}, {2, 1}, false},  {{2, 5, 5}, {2, 2}, {2, 2}, {1, 1}, {1, 1}, true},
      {{1, 2, 6, 7}, {3, 3}, {3, 3}, {1, 1}, {1, 1}, true},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    parity::check_grad_parity(
        "max_pool2d case " + std::to_string(i),
        [&](const EV& v) { return ember::max_pool2d(v[0], c.k, c.s, c.p, c.d, c.ceil); },
        [&](const TV& v) { return torch::max_pool2d(v[0], c.k, c.s, c.p, c.d, c.ceil); }, {R(c.x)});
    ET x = R(c.x);
    auto [ey, ei] = ember::max_pool2d_with_indices(x, c.k, c.s, c.p, c.d, c.ceil);
    auto [ty, ti] = torch::max_pool2d_with_indices(parity::to_torch(x), c.k, c.s, c.p, c.d, c.ceil);
    EXPECT_TRUE(parity::to_torch(ei).equal(ti)) << "indices of case " << i;
  }
  parity::check_grad_parity(
      "max_pool1d", [](const EV& v) { return ember::max_pool1d(v[0], 3, 2, 1, 1, true); },
      [](const TV& v) { return torch::max_pool1d(v[0], 3, 2, 1, 1, true); }, {R({2, 3, 10})});
}

TEST(PoolParity, AvgPool) {
  struct Case {
    I64 x, k, s, p;
    bool ceil, include_pad;
    c10::optional<int64_t> divisor;
  };
  const std::vector<Case> cases = {
      {{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0}, false, true, c10::nullopt},
      {{2, 3, 7, 7}, {3, 3}, {2, 2}, {1, 1}, true, true, c10::nullopt},
      {{2, 3, 7, 7}, {3, 3}, {2, 2}, {1, 1}, true, false, c10::nullopt},
      {{1, 2, 6, 9}, {2, 3}, {1, 2}, {1, 1}, false, false, 4},
      {{3, 5, 5}, {3, 2}, {3, 2}, {1, 1}, true, true, c10::nullopt},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    std::optional<int64_t> ediv;
    if (c.divisor) ediv = *c.divisor;
    parity::check_grad_parity(
        "avg_pool2d case " + std::to_string(i),
        [&](const EV& v) { return ember::avg_pool2d(v[0], c.k, c.s, c.p, c.ceil, c.include_pad, ediv); },
        [&](const TV& v) { return torch::avg_pool2d(v[0], c.k, c.s, c.p, c.ceil, c.include_pad, c.divisor); },
        {R(c.x)});
  }
  parity::check_grad_parity(
      "avg_pool1d", [](const EV& v) { return ember::avg_pool1d(v[0], 3, 2, 1, true, false); },
      [](const TV& v) { return torch::avg_pool1d(v[0], 3, 2, 1, true, false); }, {R({2, 3, 10})});
}

TEST(PoolParity, AdaptiveAvgPool) {
  for (I64 out : {I64{1, 1}, I64{2, 3}, I64{3, 5}, I64{7, 6}}) {
    parity::check_grad_parity(
        "adaptive_avg_pool2d " + std::to_string(out[0]) + "x" + std::to_string(out[1]),
        [&](const EV& v) { return ember::adaptive_avg_pool2d(v[0], out); },
        [&](const TV& v) { return torch::adaptive_avg_pool2d(v[0], out); }, {R({2, 3, 7, 6})});
  }
}

TEST(ConvParity, ModulesFloat32) {
  ember::nn::Conv2d conv(ember::nn::Conv2dOptions(3, 8, 3).padding(1).stride(2));
  torch::nn::Conv2d tconv(torch::nn::Conv2dOptions(3, 8, 3).padding(1).stride(2));
  {
    torch::NoGradGuard ng;
    tconv->weight.copy_(parity::to_torch(conv->weight.detach()));
    tconv->bias.copy_(parity::to_torch(conv->bias.detach()));
  }
  ET x = ember::randn({4, 3, 12, 12});
  ET y = ember::max_pool2d(conv(x).relu(), 2);
  TT ty = torch::max_pool2d(tconv(parity::to_torch(x)).relu(), 2);
  parity::expect_tensor_close(y, ty, "conv+relu+pool forward", 1e-4, 1e-5);
  TT g = torch::randn(ty.sizes());
  ty.backward(g);
  y.backward(parity::to_ember(g));
  parity::expect_tensor_close(conv->weight.grad(), tconv->weight.grad(), "conv weight grad", 1e-4, 1e-4);
  parity::expect_tensor_close(conv->bias.grad(), tconv->bias.grad(), "conv bias grad", 1e-4, 1e-4);
}

}  // namespace conv_parity
