// Backward of the reductions, scans and softmax: gradcheck / gradgradcheck, keepdim
// both ways, negative dims, ties, zeros in prod, node names.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/grad_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace autograd_reduce_grad_test {

using testing::check_grads;
using V = std::vector<Tensor>;
using D = std::vector<double>;

Tensor R(std::vector<int64_t> sizes) { return randn(sizes, TensorOptions(kFloat64)); }

TEST(ReduceGrad, Gradcheck) {
  const Tensor x = R({2, 3, 2}), nc = R({2, 3, 2}).transpose(0, 2);
  const Tensor pos = rand({2, 3, 2}, TensorOptions(kFloat64)) + 0.5;
  struct Case {
    const char* name;
    std::function<Tensor(const V&)> fn;
    bool second;
  };
  const std::vector<Case> cases = {
      {"amax", [](const V& v) { return v[0].amax({1}); }, true},
      {"amin_keep", [](const V& v) { return v[0].amin({0, -1}, true); }, true},
      {"max_all", [](const V& v) { return v[0].max(); }, true},
      {"min_all", [](const V& v) { return v[0].min(); }, true},
      {"max_dim", [](const V& v) { return std::get<0>(v[0].max(1)); }, true},
      {"min_dim_keep", [](const V& v) { return std::get<0>(v[0].min(-1, true)); }, true},
      {"var", [](const V& v) { return v[0].var({1}); }, true},
      {"var_all_c0", [](const V& v) { return v[0].var({}, 0); }, true},
      {"std_keep", [](const V& v) { return v[0].std({0}, 1, true); }, true},
      {"var_mean", [](const V& v) { auto [a, b] = v[0].var_mean({2}); return a + b * 3; }, true},
      {"norm2", [](const V& v) { return v[0].norm(2, {1}); }, true},
      {"norm1", [](const V& v) { return v[0].norm(1); }, false},
      {"norm3", [](const V& v) { return v[0].norm(3, {0, 2}); }, true},
      {"norm_inf", [](const V& v) { return v[0].norm(std::numeric_limits<double>::infinity(), {1}); }, false},
      {"logsumexp", [](const V& v) { return v[0].logsumexp({1}); }, true},
      {"prod_all", [](const V& v) { return v[0].prod(); }, true},
      {"prod_dim", [](const V& v) { return v[0].prod(1); }, true},
      {"cumsum", [](const V& v) { return v[0].cumsum(1); }, true},
      {"cumprod", [](const V& v) { return v[0].cumprod(-1); }, true},
      {"softmax", [](const V& v) { return v[0].softmax(1); }, true},
      {"log_softmax", [](const V& v) { return v[0].log_softmax(-1); }, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(check_grads(c.fn, {x}, c.second), "");
    EXPECT_EQ(check_grads(c.fn, {nc}, c.second), "");
  }
  EXPECT_EQ(check_grads([](const V& v) { return v[0].norm(0.5, {1}); }, {pos}), "");
}

TEST(ReduceGrad, TiesAndZeros) {
  // max()/amax split the gradient among ties; max(dim) gives it to the returned index.
  Tensor x = tensor({1.0, 3.0, 3.0, 2.0}, kFloat64).requires_grad_();
  x.max().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (D{0, 0.5, 0.5, 0}));
  x.mutable_grad() = Tensor();
  x.amax({0}).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (D{0, 0.5, 0.5, 0}));
  x.mutable_grad() = Tensor();
  auto [v, i] = x.max(0);
  v.backward();
  EXPECT_EQ(x.grad().sum().item<double>(), 1.0);
  EXPECT_EQ(x.grad()[i.item<int64_t>()].item<double>(), 1.0);
  // prod with one zero and with two zeros.
  Tensor p = tensor({2.0, 0.0, 3.0}, kFloat64).requires_grad_();
  p.prod().backward();
  EXPECT_EQ(p.grad().to_vector<double>(), (D{0, 6, 0}));
  Tensor q = tensor({{2.0, 0.0, 0.0}, {1.0, 2.0, 3.0}}, kFloat64).requires_grad_();
  q.prod(1).sum().backward();
  EXPECT_EQ(q.grad().to_vector<double>(), (D{0, 0, 0, 6, 3, 2}));
  // cumprod with zeros: matches the finite differences (first and second order).
  Tensor c = tensor({{2.0, 0.0, 3.0, 0.5}, {0.0, 1.5, 0.0, 2.0}}, kFloat64);
  EXPECT_EQ(check_grads([](const V& v) { return v[0].cumprod(1); }, {c}), "");
  // norm 2 of a zero vector: zero gradient, not NaN.
  Tensor z = zeros({3}, kFloat64).requires_grad_();
  z.norm().backward();
  EXPECT_EQ(z.grad().to_vector<double>(), (D{0, 0, 0}));
}

TEST(ReduceGrad, NodeNames) {
  Tensor x = R({2, 3}).requires_grad_();
  EXPECT_EQ(x.sum().grad_fn()->name(), "SumBackward0");
  EXPECT_EQ(x.sum({1}).grad_fn()->name(), "SumBackward1");
  EXPECT_EQ(x.mean().grad_fn()->name(), "MeanBackward0");
  EXPECT_EQ(x.max().grad_fn()->name(), "MaxBackward1");
  EXPECT_EQ(std::get<0>(x.max(1)).grad_fn()->name(), "MaxBackward0");
  EXPECT_FALSE(std::get<1>(x.max(1)).requires_grad());
  EXPECT_EQ(x.amax({1}).grad_fn()->name(), "AmaxBackward0");
  EXPECT_EQ(x.softmax(1).grad_fn()->name(), "SoftmaxBackward0");
  EXPECT_EQ(x.log_softmax(1).grad_fn()->name(), "LogSoftmaxBackward0");
  EXPECT_EQ(x.logsumexp({1}).grad_fn()->name(), "LogsumexpBackward0");
  EXPECT_EQ(x.cumsum(0).grad_fn()->name(), "CumsumBackward0");
  EXPECT_EQ(x.prod().grad_fn()->name(), "ProdBackward0");
  EXPECT_EQ(x.var({1}).grad_fn()->name(), "VarBackward0");
  EXPECT_FALSE(x.argmax().requires_grad());
}

}  // namespace
}  // namespace ember
