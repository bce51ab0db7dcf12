// Backward of the element-wise ops: gradcheck / gradgradcheck with broadcasting,
// non-contiguous inputs and scalar operands; in-place variants; node names.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/grad_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace autograd_pointwise_grad_test {

using testing::check_grads;
using V = std::vector<Tensor>;
using Fn = std::function<Tensor(const V&)>;

Tensor R(std::vector<int64_t> sizes) { return randn(sizes, TensorOptions(kFloat64)); }
// Values in (lo, hi), away from the ends.
Tensor U(std::vector<int64_t> sizes, double lo, double hi) {
  return rand(sizes, TensorOptions(kFloat64)) * (hi - lo) * 0.8 + (lo + 0.1 * (hi - lo));
}
Tensor NC(const Tensor& t) { return t.t().contiguous().t(); }  // same values, transposed strides

TEST(PointwiseGrad, Unary) {
  struct Case {
    const char* name;
    Fn fn;
    double lo, hi;
    bool second = true;
  };
  const std::vector<Case> cases = {
      {"neg", [](const V& v) { return -v[0]; }, -2, 2},
      {"abs", [](const V& v) { return v[0].abs(); }, 0.2, 2},
      {"exp", [](const V& v) { return v[0].exp(); }, -2, 2},
      {"exp2", [](const V& v) { return v[0].exp2(); }, -2, 2},
      {"expm1", [](const V& v) { return v[0].expm1(); }, -2, 2},
      {"log", [](const V& v) { return v[0].log(); }, 0.2, 3},
      {"log2", [](const V& v) { return v[0].log2(); }, 0.2, 3},
      {"log10", [](const V& v) { return v[0].log10(); }, 0.2, 3},
      {"log1p", [](const V& v) { return v[0].log1p(); }, -0.5, 3},
      {"sqrt", [](const V& v) { return v[0].sqrt(); }, 0.2, 3},
      {"rsqrt", [](const V& v) { return v[0].rsqrt(); }, 0.2, 3},
      {"reciprocal", [](const V& v) { return v[0].reciprocal(); }, 0.3, 3},
      {"sin", [](const V& v) { return v[0].sin(); }, -3, 3},
      {"cos", [](const V& v) { return v[0].cos(); }, -3, 3},
      {"tan", [](const V& v) { return v[0].tan(); }, -1, 1},
      {"asin", [](const V& v) { return v[0].asin(); }, -0.8, 0.8},
      {"acos", [](const V& v) { return v[0].acos(); }, -0.8, 0.8},
      {"atan", [](const V& v) { return v[0].atan(); }, -3, 3},
      {"sinh", [](const V& v) { return v[0].sinh(); }, -2, 2},
      {"cosh", [](const V& v) { return v[0].cosh(); }, -2, 2},
      {"tanh", [](const V& v) { return v[0].tanh(); }, -2, 2},
      {"sigmoid", [](const V& v) { return v[0].sigmoid(); }, -3, 3},
      {"erf", [](const V& v) { return v[0].erf(); }, -2, 2},
      {"erfinv", [](const V& v) { return v[0].erfinv(); }, -0.8, 0.8},
      {"gelu", [](const V& v) { return v[0].gelu(); }, -3, 3},
      {"gelu_tanh", [](const V& v) { return v[0].gelu("tanh"); }, -3, 3},
      {"silu", [](const V& v) { return v[0].silu(); }, -3, 3},
      {"relu", [](const V& v) { return v[0].relu(); }, 0.1, 2},
      {"relu_neg", [](const V& v) { return v[0].relu(); }, -2, -0.1},
      {"frac", [](const V& v) { return v[0].frac(); }, 0.1, 0.9},
      {"sign", [](const V& v) { return v[0].sign() * v[0]; }, 0.2, 2},
      {"floor", [](const V& v) { return v[0].floor() + v[0]; }, 0.1, 0.9},
      {"pow_scalar", [](const V& v) { return v[0].pow(3); }, -2, 2},
      {"pow_frac", [](const V& v) { return v[0].pow(2.5); }, 0.2, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = U({3, 4}, c.lo, c.hi);
    EXPECT_EQ(check_grads(c.fn, {x}, c.second), "");
    EXPECT_EQ(check_grads(c.fn, {NC(x)}, c.second), "");
  }
}

TEST(PointwiseGrad, BinaryWithBroadcastAndScalars) {
  struct Case {
    const char* name;
    Fn fn;
    double lo, hi;
  };
  const std::vector<Case> cases = {
      {"add_alpha", [](const V& v) { return v[0].add(v[1], 2.5); }, -2, 2},
      {"sub_alpha", [](const V& v) { return v[0].sub(v[1], 0.5); }, -2, 2},
      {"mul", [](const V& v) { return v[0] * v[1]; }, -2, 2},
      {"div", [](const V& v) { return v[0] / v[1]; }, 0.5, 2},
      {"pow", [](const V& v) { return v[0].pow(v[1]); }, 0.5, 2},
      {"maximum", [](const V& v) { return maximum(v[0], v[1]); }, -2, 2},
      {"minimum", [](const V& v) { return minimum(v[0], v[1]); }, -2, 2},
      {"atan2", [](const V& v) { return atan2(v[0], v[1]); }, 0.5, 2},
      {"remainder", [](const V& v) { return v[0].remainder(v[1]); }, 0.6, 0.9},
      {"fmod", [](const V& v) { return v[0].fmod(v[1]); }, 0.6, 0.9},
      {"scalar_rhs", [](const V& v) { return v[0] * 3 - 1 + v[1] / 2; }, -2, 2},
      {"scalar_lhs", [](const V& v) { return 2.0 / v[0] + v[1]; }, 0.5, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor a = U({3, 4}, c.lo, c.hi), b = U({4}, c.lo, c.hi), b2 = U({3, 1}, c.lo, c.hi);
    EXPECT_EQ(check_grads(c.fn, {a, b}), "");
    EXPECT_EQ(check_grads(c.fn, {NC(a), b2}), "");
    EXPECT_EQ(check_grads(c.fn, {b2, a}), "");
  }
}

TEST(PointwiseGrad, InPlaceVariants) {
  struct Case {
    const char* name;
    Fn fn;
  };
  const std::vector<Case> cases = {
      {"mul_", [](const V& v) { Tensor y = v[0] * 1; y.mul_(v[1]); return y; }},
      {"add_", [](const V& v) { Tensor y = v[0] * 1; y.add_(v[1], 3); return y * y; }},
      {"div_", [](const V& v) { Tensor y = v[0] * 1; y.div_(v[1] + 3); return y; }},
      {"exp_", [](const V& v) { Tensor y = v[0] * 1; y.exp_(); return y * v[1]; }},
      {"tanh_", [](const V& v) { Tensor y = v[0] * 1; y.tanh_(); return y * v[1]; }},
      {"sin_", [](const V& v) { Tensor y = v[0] * 1; y.sin_(); return y * v[1]; }},
      {"pow_", [](const V& v) { Tensor y = v[0] * 1; y.pow_(2); return y * v[1]; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(check_grads(c.fn, {R({3, 4}), R({4})}), "");
  }
}

TEST(PointwiseGrad, ReductionsSumMean) {
  const Tensor x = R({3, 4, 2});
  EXPECT_EQ(check_grads([](const V& v) { return v[0].sum(); }, {x}), "");
  EXPECT_EQ(check_grads([](const V& v) { return v[0].sum({-1, 0}); }, {x}), "");
  EXPECT_EQ(check_grads([](const V& v) { return v[0].sum({1}, true) * v[0]; }, {x}), "");
  EXPECT_EQ(check_grads([](const V& v) { return v[0].mean({0, 2}); }, {x}), "");
  EXPECT_EQ(check_grads([](const V& v) { return v[0].mean({1}, true) * v[0]; }, {x.transpose(0, 2)}), "");
}

// ReLU's backward selects instead of multiplying by a mask (PyTorch's threshold_backward):
// an infinite gradient at a cut element gives 0, not NaN; a NaN input lets its gradient
// through; the fused first-order path and the create_graph path agree on strided input.
TEST(PointwiseGrad, ReluBackwardSelects) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor x = tensor({-1.0f, 0.0f, 2.0f, nan}).requires_grad_();
  Tensor g = tensor({inf, 5.0f, 3.0f, 7.0f});
  x.relu().backward(g);
  const Tensor gx = x.grad();
  EXPECT_EQ(gx[0].item<float>(), 0.0f);
  EXPECT_EQ(gx[1].item<float>(), 0.0f);
  EXPECT_EQ(gx[2].item<float>(), 3.0f);
  EXPECT_EQ(gx[3].item<float>(), 7.0f);

  Tensor base = U({6, 5}, -1, 1);
  Tensor a = base.t().requires_grad_();  // non-contiguous
  Tensor go = U({5, 6}, -1, 1).requires_grad_();
  Tensor first = autograd::grad({a.relu()}, {a}, {go})[0];
  Tensor second = autograd::grad({a.relu()}, {a}, {go}, /*retain_graph=*/true, /*create_graph=*/true)[0];
  EXPECT_TRUE(first.equal(second));
  EXPECT_TRUE(first.equal((go * (base.t() > 0)).detach()));
  EXPECT_TRUE(second.requires_grad());
}

// The fused path may overwrite an incoming gradient that nothing else holds; gradients that
// are retained or seen by a hook must come through unchanged.
TEST(PointwiseGrad, ReluBackwardLeavesVisibleGradientsAlone) {
  Tensor x = tensor({-1.0f, 2.0f, -3.0f, 4.0f}).requires_grad_();
  Tensor y = x.relu();
  y.retain_grad();
  Tensor seen;
  Tensor z = x.relu();
  z.register_hook([&](const Tensor& g) { seen = g; });
  ((y + z) * tensor({1.0f, 2.0f, 3.0f, 4.0f})).sum().backward();
  EXPECT_TRUE(y.grad().equal(tensor({1.0f, 2.0f, 3.0f, 4.0f})));
  EXPECT_TRUE(seen.equal(tensor({1.0f, 2.0f, 3.0f, 4.0f})));
  EXPECT_TRUE(x.grad().equal(tensor({0.0f, 4.0f, 0.0f, 8.0f})));
  // A fresh gradient (from mul's backward) is consumed in place: same values.
  Tensor w = tensor({-1.0f, 2.0f}).requires_grad_();
  (w.relu() * 3).sum().backward();
  EXPECT_TRUE(w.grad().equal(tensor({0.0f, 3.0f})));
}

TEST(PointwiseGrad, NodeNames) {
  Tensor a = R({2}).requires_grad_(), b = R({2}).requires_grad_();
  EXPECT_EQ((a + b).grad_fn()->name(), "AddBackward0");
  EXPECT_EQ((a - b).grad_fn()->name(), "SubBackward0");
  EXPECT_EQ((a * b).grad_fn()->name(), "MulBackward0");
  EXPECT_EQ((a * 2).grad_fn()->name(), "MulBackward1");
  EXPECT_EQ((a / b).grad_fn()->name(), "DivBackward0");
  EXPECT_EQ(a.pow(2).grad_fn()->name(), "PowBackward0");
  EXPECT_EQ(a.pow(b).grad_fn()->name(), "PowBackward1");
  EXPECT_EQ(a.exp().grad_fn()->name(), "ExpBackward0");
  EXPECT_EQ(a.log1p().grad_fn()->name(), "Log1PBackward0");
  EXPECT_EQ(a.relu().grad_fn()->name(), "ReluBackward0");
  EXPECT_EQ(a.sigmoid().grad_fn()->name(), "SigmoidBackward0");
  EXPECT_EQ(a.softplus().grad_fn()->name(), "SoftplusBackward0");
  EXPECT_EQ(leaky_relu(a).grad_fn()->name(), "LeakyReluBackward0");
  EXPECT_EQ(logit(a, 0.1).grad_fn()->name(), "LogitBackward0");
  Tensor c = a * 1;
  c.mul_(b);
  EXPECT_EQ(c.grad_fn()->name(), "MulBackward0");
  // Comparisons are not differentiable.
  EXPECT_FALSE((a > b).requires_grad());
}

}  // namespace
}  // namespace ember

namespace ember {
namespace autograd_pointwise_grad_test {

TEST(PointwiseGrad, ClampLerpNanToNum) {
  using testing::check_grads;
  using V = std::vector<Tensor>;
  Tensor x = randn({3, 4}, TensorOptions(kFloat64));
  x = x + x.sign() * 0.05;  // away from the bounds' kinks at +-0.05... and 0
  EXPECT_EQ(check_grads([](const V& v) { return v[0].clamp(-0.5, 0.6); }, {x}), "");
  EXPECT_EQ(check_grads([](const V& v) { return v[0].clamp_min(0.3); }, {x.t()}), "");
  EXPECT_EQ(check_grads([](const V& v) { Tensor y = v[0] * 2; y.clamp_(-0.4, 0.7); return y; }, {x}), "");
  Tensor lo = full({4}, -0.3, kFloat64), hi = full({3, 1}, 0.4, kFloat64);
  EXPECT_EQ(check_grads([](const V& v) { return v[0].clamp(v[1], v[2]); }, {x, lo, hi}), "");
  EXPECT_EQ(check_grads([](const V& v) { return v[0].lerp(v[1], v[2]); },
                        {x, randn({4}, TensorOptions(kFloat64)), rand({3, 4}, TensorOptions(kFloat64))}),
            "");
  EXPECT_EQ(check_grads([](const V& v) { return v[0].lerp(v[1], 0.3); }, {x, randn({3, 4}, TensorOptions(kFloat64))}),
            "");
  EXPECT_EQ(check_grads([](const V& v) { return v[0].softplus(2, 1); }, {x}), "");
  EXPECT_EQ(check_grads([](const V& v) { return leaky_relu(v[0], 0.2); }, {x.t()}), "");
  EXPECT_EQ(check_grads([](const V& v) { return logit(v[0]); }, {U({3, 4}, 0.05, 0.95)}), "");
  EXPECT_EQ(check_grads([](const V& v) { return logit(v[0], 0.3); }, {U({3, 4}, 0.05, 0.95)}), "");
  EXPECT_EQ(check_grads([](const V& v) { return v[0].outer(v[1]); },
                        {randn({3}, TensorOptions(kFloat64)), randn({4}, TensorOptions(kFloat64))}),
            "");
  EXPECT_EQ(check_grads([](const V& v) { return v[0].dot(v[1]); },
                        {randn({3}, TensorOptions(kFloat64)), randn({3}, TensorOptions(kFloat64))}),
            "");
  // The gradient passes inside the bounds, bounds included (as PyTorch).
  Tensor b = tensor({-1.0, 0.0, 0.5, 1.0, 2.0}, kFloat64).requires_grad_();
  b.clamp(0.0, 1.0).sum().backward();
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{0, 1, 1, 1, 0}));
  EXPECT_EQ(b.clamp(0.0, 1.0).grad_fn()->name(), "ClampBackward1");
  Tensor n = tensor({1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}, kFloat64).requires_grad_();
  (n * 1).nan_to_num().sum().backward();
  EXPECT_EQ(n.grad().to_vector<double>(), (std::vector<double>{1, 0, 0}));
}

}  // namespace
}  // namespace ember
