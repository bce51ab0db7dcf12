// Backward of joining and shaping ops: cat/stack, flip/roll/repeat/tile/repeat_interleave,
// tril/triu, pad, where.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/grad_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace autograd_shape_grad_test {

using testing::check_grads;
using V = std::vector<Tensor>;

Tensor R(std::vector<int64_t> sizes) { return randn(sizes, TensorOptions(kFloat64)); }

TEST(ShapeGrad, Gradcheck) {
  const Tensor x = R({3, 4}), nc = R({4, 3}).t();
  struct Case {
    const char* name;
    std::function<Tensor(const V&)> fn;
    bool second;
  };
  const std::vector<Case> cases = {
      {"cat", [](const V& v) { return cat({v[0], v[0] * 2, v[0].slice(0, 0, 1)}, 0); }, true},
      {"cat_neg_dim", [](const V& v) { return cat({v[0], v[0].exp()}, -1); }, true},
      {"stack", [](const V& v) { return stack({v[0], v[0].sin()}, 1); }, true},
      {"hstack", [](const V& v) { return hstack({v[0], v[0]}); }, true},
      {"where", [](const V& v) { return where(v[0] > 0, v[0] * 3, v[0].exp()); }, true},
      {"tril", [](const V& v) { return v[0].tril(); }, true},
      {"triu_k", [](const V& v) { return v[0].triu(-1) * v[0]; }, true},
      {"pad_constant", [](const V& v) { return pad(v[0], {1, 2, 0, 1}, "constant", 3.0); }, true},
      {"pad_crop", [](const V& v) { return pad(v[0], {-1, 1}, "constant", 0.0); }, true},
      {"flip", [](const V& v) { return v[0].flip({0, 1}); }, false},
      {"roll", [](const V& v) { return v[0].roll({1, -2}, {0, 1}); }, false},
      {"roll_flat", [](const V& v) { return v[0].roll({5}); }, false},
      {"repeat", [](const V& v) { return v[0].repeat({2, 1, 3}); }, false},
      {"tile", [](const V& v) { return v[0].tile({2}); }, false},
      {"repeat_interleave", [](const V& v) { return v[0].repeat_interleave(2, 1); }, false},
      {"repeat_interleave_t",
       [](const V& v) { return v[0].repeat_interleave(tensor({1, 0, 3}, kInt64), 0); }, false},
      {"pad_reflect", [](const V& v) { return pad(v[0].unsqueeze(0), {2, 1}, "reflect"); }, false},
      {"pad_replicate", [](const V& v) { return pad(v[0].unsqueeze(0), {1, 3, 2, 0}, "replicate"); }, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(check_grads(c.fn, {x}, c.second), "");
    EXPECT_EQ(check_grads(c.fn, {nc}, c.second), "");
  }
}

TEST(ShapeGrad, NodeNamesAndValues) {
  Tensor x = R({2, 3}).requires_grad_();
  EXPECT_EQ(cat({x, x}).grad_fn()->name(), "CatBackward0");
  EXPECT_EQ(x.flip({0}).grad_fn()->name(), "FlipBackward0");
  EXPECT_EQ(x.roll({1}, {1}).grad_fn()->name(), "RollBackward0");
  EXPECT_EQ(x.repeat({2, 2}).grad_fn()->name(), "RepeatBackward0");
  EXPECT_EQ(x.tril().grad_fn()->name(), "TrilBackward0");
  EXPECT_EQ(pad(x, {1, 1}).grad_fn()->name(), "ConstantPadNdBackward0");
  EXPECT_EQ(pad(x.unsqueeze(0), {1, 1}, "reflect").grad_fn()->name(), "ReflectionPad1DBackward0");
  EXPECT_EQ(where(x > 0, x, x * 2).grad_fn()->name(), "WhereBackward0");
  // Reflect padding adds the mirrored positions' gradients into the edge neighbours.
  Tensor r = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  pad(r.view({1, 3}), {2, 2}, "reflect").sum().backward();  // [3 2 | 1 2 3 | 2 1]
  EXPECT_EQ(r.grad().to_vector<double>(), (std::vector<double>{2, 3, 2}));
}

}  // namespace
}  // namespace ember
