// Pooling: values checked against PyTorch 1.13 on tiny inputs, indices, ceil_mode and
// padding shapes, NaN handling, divisor rules, 1-D forms, errors, gradients (gradcheck
// and gradgradcheck in float64) and thread-count independence.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../autograd/grad_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace ops_pool_test {

using testing::check_grads;
using testing::Doubles;
using testing::I64;
using testing::Sizes;

using ember::testing::ErrorOf;

void ExpectNear(const Tensor& t, const std::vector<double>& expected, double tol = 1e-4) {
  const std::vector<double> got = Doubles(t);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << i;
}

TEST(MaxPool, ValuesAndIndices) {
  Tensor x = arange(16, kFloat32).view({1, 1, 4, 4});
  auto [y, idx] = max_pool2d_with_indices(x, 2);
  EXPECT_EQ(Doubles(y), (std::vector<double>{5, 7, 13, 15}));
  EXPECT_EQ(idx.dtype(), kInt64);
  EXPECT_EQ(idx.to_vector<int64_t>(), (I64{5, 7, 13, 15}));
  // Padding 1, kernel 3, stride 1 (padded positions never win).
  Tensor x3 = arange(9, kFloat32).view({1, 1, 3, 3});
  EXPECT_EQ(Doubles(max_pool2d(x3, 3, 1, 1)), (std::vector<double>{4, 5, 5, 7, 8, 8, 7, 8, 8}));
  // Dilation 2 reads the corners.
  EXPECT_EQ(Doubles(max_pool2d(-x3, 2, 1, 0, 2)), (std::vector<double>{0}));
}

TEST(MaxPool, CeilModeShapes) {
  Tensor x = zeros({1, 1, 5, 5});
  EXPECT_EQ(Sizes(max_pool2d(x, 2, 2, 0, 1, true)), (I64{1, 1, 3, 3}));
  EXPECT_EQ(Sizes(max_pool2d(x, 2, 2, 0, 1, false)), (I64{1, 1, 2, 2}));
  // The last window would start in the right padding: dropped.
  EXPECT_EQ(Sizes(max_pool2d(zeros({1, 1, 6, 6}), 3, 3, 1, 1, true)), (I64{1, 1, 3, 3}));
  EXPECT_EQ(Sizes(max_pool2d(zeros({2, 5, 5}), 2)), (I64{2, 2, 2}));
}

TEST(MaxPool, NaNPropagates) {
  Tensor x = arange(16, kFloat32).view({1, 1, 4, 4});
  x.view({16}).slice(0, 6, 7).fill_(std::numeric_limits<double>::quiet_NaN());
  auto [y, idx] = max_pool2d_with_indices(x, 2);
  EXPECT_TRUE(std::isnan(Doubles(y)[1]));
  EXPECT_EQ(idx.to_vector<int64_t>()[1], 6);
  Tensor z = max_pool2d(x, 3, 1, 1);
  EXPECT_TRUE(std::isnan(Doubles(z)[0 * 4 + 2]));
}

TEST(AvgPool, DivisorRules) {
  Tensor x = arange(9, kFloat32).view({1, 1, 3, 3});
  ExpectNear(avg_pool2d(x, 2, 1, 1), {0, 0.25, 0.75, 0.5, 0.75, 2, 3, 1.75, 2.25, 5, 6, 3.25, 1.5, 3.25, 3.75, 2});
  ExpectNear(avg_pool2d(x, 2, 1, 1, false, false),
             {0, 0.5, 1.5, 2, 1.5, 2, 3, 3.5, 4.5, 5, 6, 6.5, 6, 6.5, 7.5, 8});
  ExpectNear(avg_pool2d(x, 2, 1, 1, false, true, 3), {0, 1.0 / 3, 1, 2.0 / 3, 1, 8.0 / 3, 4, 7.0 / 3, 3, 20.0 / 3, 8,
                                                     13.0 / 3, 2, 13.0 / 3, 5, 8.0 / 3});
}

TEST(AdaptiveAvgPool, Values) {
  Tensor x = arange(35, kFloat32).view({1, 1, 5, 7});
  ExpectNear(adaptive_avg_pool2d(x, {2, 3}), {8, 10, 12, 22, 24, 26});
  EXPECT_NEAR(adaptive_avg_pool2d(x, 1).item<float>(), 17.0, 1e-5);
  EXPECT_TRUE(adaptive_avg_pool2d(x, {5, 7}).equal(x));
}

TEST(Pool1d, MatchesTwoDimensional) {
  Tensor x = randn({2, 3, 11});
  EXPECT_TRUE(max_pool1d(x, 3, 2, 1).equal(max_pool2d(x.unsqueeze(2), {1, 3}, {1, 2}, {0, 1}).squeeze(2)));
  EXPECT_TRUE(avg_pool1d(x, 2).equal(avg_pool2d(x.unsqueeze(2), {1, 2}).squeeze(2)));
  EXPECT_EQ(Sizes(max_pool1d(randn({3, 10}), 2)), (I64{3, 5}));
}

TEST(Pool, NonContiguousAndReducedPrecision) {
  Tensor x = randn({2, 3, 8, 6}).transpose(2, 3);
  EXPECT_TRUE(max_pool2d(x, 2).equal(max_pool2d(x.contiguous(), 2)));
  EXPECT_TRUE(avg_pool2d(x, 3, 2, 1).equal(avg_pool2d(x.contiguous(), 3, 2, 1)));
  EXPECT_EQ(max_pool2d(x.to(kFloat16), 2).dtype(), kFloat16);
  EXPECT_EQ(adaptive_avg_pool2d(x.to(kBFloat16), 2).dtype(), kBFloat16);
}

TEST(Pool, Errors) {
  EXPECT_NE(ErrorOf([] { max_pool2d(randn({4, 4}), 2); }).find("[max_pool2d] expected a 3-D"), std::string::npos);
  EXPECT_NE(ErrorOf([] { max_pool2d(randn({1, 1, 4, 4}), 2, 2, 2); }).find("at most half of the kernel"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { max_pool2d(randn({1, 1, 2, 2}), 3); }).find("too small"), std::string::npos);
  EXPECT_NE(ErrorOf([] { max_pool2d(randn({1, 1, 4, 4}), 2, 0); }).find("stride must be positive"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { avg_pool2d(randn({1, 1, 4, 4}), 2, {}, 0, false, true, 0); }).find("divisor_override"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { max_pool2d(randn({1, 1, 4, 4}).to(kInt64), 2); }).find("floating-point"),
            std::string::npos);
}

TEST(PoolGrad, NodeNames) {
  Tensor x = randn({1, 2, 4, 4}).requires_grad_();
  EXPECT_EQ(max_pool2d(x, 2).grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
  EXPECT_EQ(avg_pool2d(x, 2).grad_fn()->name(), "AvgPool2DBackward0");
  EXPECT_EQ(adaptive_avg_pool2d(x, 3).grad_fn()->name(), "AdaptiveAvgPool2DBackward0");
}

TEST(PoolGrad, MaxPoolGradcheck) {
  EXPECT_EQ(check_grads([](const std::vector<Tensor>& v) { return max_pool2d(v[0], {3, 2}, {2, 1}, {1, 1}, 1, true); },
                        {randn({1, 2, 5, 4})}),
            "");
  EXPECT_EQ(check_grads([](const std::vector<Tensor>& v) { return max_pool2d(v[0], 2, 1, 0, 2); },
                        {randn({2, 5, 5})}),
            "");
}

// Note [Max-pool window offsets]: max_pool2d saves one byte per output for 2x2 windows; its
// gradients (first and second order) must equal those routed by max_pool2d_with_indices's
// int64 indices, bit for bit, on data with ties and NaNs, odd sizes and rows wider than a
// vector; and gradcheck/gradgradcheck hold in float64 (the scalar path).
TEST(PoolGrad, MaxPool2x2WindowOffsetsMatchIndices) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 3, 28, 28}, {1, 2, 7, 9}, {2, 2, 14, 14}, {1, 1, 5, 70}}) {
    Tensor x = (randn(shape) * 2).round().relu() * 0.5;
    Tensor flat = x.view({-1});
    for (int64_t i = 5; i < flat.size(0); i += 41) flat.slice(0, i, i + 1).fill_(NAN);
    Tensor a = x.detach().requires_grad_(), b = x.detach().requires_grad_();
    Tensor ya = max_pool2d(a, 2);
    Tensor yb = std::get<0>(max_pool2d_with_indices(b, 2));
    Tensor g = randn(ya.sizes()).requires_grad_();
    Tensor ga = autograd::grad({ya}, {a}, {g}, true, true)[0];
    Tensor gb = autograd::grad({yb}, {b}, {g}, true, true)[0];
    EXPECT_TRUE(ga.equal(gb));
    Tensor h = randn(ga.sizes());
    Tensor gga = autograd::grad({ga}, {g}, {h})[0];
    Tensor ggb = autograd::grad({gb}, {g}, {h})[0];
    EXPECT_TRUE(gga.equal(ggb));
  }
  EXPECT_EQ(check_grads([](const std::vector<Tensor>& v) { return max_pool2d(v[0], 2); }, {randn({2, 3, 5, 7})}), "");
}

TEST(PoolGrad, AvgPoolGradcheck) {
  EXPECT_EQ(check_grads([](const std::vector<Tensor>& v) { return avg_pool2d(v[0], 3, 2, 1, true, false); },
                        {randn({1, 2, 5, 6})}),
            "");
  EXPECT_EQ(check_grads([](const std::vector<Tensor>& v) { return avg_pool2d(v[0], 2, 1, 1, false, true, 3); },
                        {randn({1, 1, 3, 4})}),
            "");
}

TEST(PoolGrad, AdaptiveAvgPoolGradcheck) {
  EXPECT_EQ(check_grads([](const std::vector<Tensor>& v) { return adaptive_avg_pool2d(v[0], {2, 3}); },
                        {randn({1, 2, 5, 7})}),
            "");
}

TEST(PoolGrad, MaxPoolGradientGoesToTheMaximum) {
  Tensor x = arange(16, kFloat32).view({1, 1, 4, 4}).requires_grad_();
  max_pool2d(x, 2).sum().backward();
  std::vector<double> expected(16, 0.0);
  for (int i : {5, 7, 13, 15}) expected[static_cast<size_t>(i)] = 1;
  EXPECT_EQ(Doubles(x.grad()), expected);
}

TEST(PoolDeterminism, OneAndTwoThreadsBitIdentical) {
  Tensor x = randn({4, 8, 64, 64});  // 4 chunks of planes
  auto run = [&](int threads) {
    set_num_threads(threads);
    Tensor xr = x.detach().requires_grad_();
    Tensor y = max_pool2d(xr, 3, 1, 1) + avg_pool2d(xr, 3, 1, 1) + adaptive_avg_pool2d(xr, 64);
    y.backward(ones_like(y));
    return std::vector<Tensor>{y.detach(), xr.grad()};
  };
  const int saved = get_num_threads();
  std::vector<Tensor> one = run(1), two = run(2);
  set_num_threads(saved);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(one[i].equal(two[i])) << i;
}

}  // namespace
}  // namespace ember
