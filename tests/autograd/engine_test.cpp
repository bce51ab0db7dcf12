// The autograd engine: graph structure and names, accumulation, retain_graph, the
// freed-graph and in-place version errors, grad(), create_graph, hooks, modes.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace autograd_engine_test {

using D = std::vector<double>;

D Vals(const Tensor& t) { return t.to_vector<double>(); }

// Float64 tensors (a list of doubles gives the default dtype, float32, as in libtorch).
Tensor T64(std::initializer_list<double> v) { return tensor(std::vector<double>(v), kFloat64); }

using ember::testing::ErrorOf;

TEST(AutogradEngine, GraphNamesAndLeaves) {
  Tensor x = T64({1.0, 2.0, 3.0}).requires_grad_();
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(x.grad_fn(), nullptr);
  Tensor y = (x * x).sum();
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(y.requires_grad());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "SumBackward0");
  auto next = y.grad_fn()->next_functions();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].first->name(), "MulBackward0");
  auto leafs = next[0].first->next_functions();
  ASSERT_EQ(leafs.size(), 2u);
  EXPECT_EQ(leafs[0].first->name(), "AccumulateGrad");
  EXPECT_EQ(leafs[0].first, leafs[1].first);  // one AccumulateGrad per leaf
  Tensor c = T64({1.0}) * 2;  // nothing requires grad: no graph
  EXPECT_FALSE(c.requires_grad());
  EXPECT_EQ(c.grad_fn(), nullptr);
}

TEST(AutogradEngine, BackwardAccumulatesAcrossCalls) {
  Tensor x = T64({1.0, 2.0, 3.0}).requires_grad_();
  (x * x).sum().backward();
  EXPECT_EQ(Vals(x.grad()), (D{2, 4, 6}));
  (x * 3).sum().backward();
  EXPECT_EQ(Vals(x.grad()), (D{5, 7, 9}));
  x.mutable_grad() = Tensor();
  (x * 3).sum().backward();
  EXPECT_EQ(Vals(x.grad()), (D{3, 3, 3}));
}

// Note [Graph task node table]: the graph task's node table starts with 16 slots and grows;
// a graph of hundreds of nodes, with leaves shared by many of them and one node reached
// along several paths, must give the same gradients as the formulas and run each node once.
TEST(AutogradEngine, LargeGraphsWithSharedNodes) {
  Tensor x = T64({0.5, -1.0}).requires_grad_();
  Tensor w = T64({2.0, 3.0}).requires_grad_();
  Tensor h = x;
  for (int i = 0; i < 200; ++i) h = h * 0.5 + w;  // 400 nodes; w feeds 200 of them
  Tensor shared = h * h;
  Tensor y = (shared + shared * 3).sum();  // `shared` is reached along two edges
  y.backward();
  // h = x / 2^200 + w * (2 - 2^-199); dy/dh = 8h; dh/dx = 2^-200; dh/dw = 2 - 2^-199.
  std::vector<double> hv = Vals(h.detach());
  const double dhdx = std::ldexp(1.0, -200), dhdw = 2.0 - std::ldexp(1.0, -199);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(Vals(x.grad())[i], 8 * hv[i] * dhdx, 1e-70);
    EXPECT_NEAR(Vals(w.grad())[i], 8 * hv[i] * dhdw, 1e-9);
  }
  // Run twice through a retained graph: every node ran exactly once per call.
  Tensor z = (x * w).sum();
  z.backward({}, true);
  z.backward();
  EXPECT_NEAR(Vals(w.grad())[0], 8 * hv[0] * dhdw + 2 * 0.5, 1e-9);
}

TEST(AutogradEngine, BroadcastGradientsAreReducedToInputShape) {
  Tensor a = ones({2, 3}).requires_grad_();
  Tensor b = tensor({1.0f, 2.0f, 3.0f}).requires_grad_();
  Tensor s = scalar_tensor(2.0, kFloat64).requires_grad_();  // 0-d: does not promote the category
  Tensor y = (a * b + s).sum();
  EXPECT_EQ(y.dtype(), kFloat32);  // 0-d does not promote the category
  y.backward();
  EXPECT_EQ(a.grad().sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Vals(a.grad()), (D{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(Vals(b.grad()), (D{2, 2, 2}));
  EXPECT_EQ(s.grad().dtype(), kFloat64);
  EXPECT_EQ(s.grad().item<double>(), 6.0);
}

TEST(AutogradEngine, RetainGraphAndFreedGraphError) {
  Tensor x = T64({1.0, 2.0}).requires_grad_();
  Tensor y = x.exp().sum();
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  EXPECT_NEAR(x.grad()[1].item<double>(), 2 * std::exp(2.0), 1e-12);
  const std::string msg = ErrorOf([&] { y.backward(); });
  EXPECT_NE(msg.find("Trying to backward through the graph a second time"), std::string::npos) << msg;
  EXPECT_NE(msg.find("retain_graph=true"), std::string::npos) << msg;
}

TEST(AutogradEngine, InplaceVersionError) {
  Tensor x = T64({1.0, 2.0}).requires_grad_();
  Tensor e = x.exp();
  Tensor y = (e * 1).sum();
  e.add_(1);  // ExpBackward0 saved e
  const std::string msg = ErrorOf([&] { y.backward(); });
  EXPECT_NE(msg.find("modified by an inplace operation"), std::string::npos) << msg;
  EXPECT_NE(msg.find("output 0 of ExpBackward0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("is at version 1; expected version 0 instead"), std::string::npos) << msg;
}

TEST(AutogradEngine, InplaceOnLeafRequiringGradIsRefused) {
  Tensor x = T64({1.0, 2.0}).requires_grad_();
  const std::string msg = ErrorOf([&] { x.add_(1); });
  EXPECT_NE(msg.find("a leaf Variable that requires grad is being used in an in-place operation"), std::string::npos)
      << msg;
  {
    NoGradGuard no_grad;
    x.mul_(2);  // allowed: initialisation-style update
  }
  EXPECT_EQ(Vals(x), (D{2, 4}));
  EXPECT_TRUE(x.is_leaf());
}

TEST(AutogradEngine, InplaceOnNonLeafRewritesHistory) {
  Tensor x = T64({1.0, 2.0, 3.0}).requires_grad_();
  Tensor y = x * 2;
  y.mul_(y);  // y = (2x)^2, d/dx = 8x
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward0");
  y.sum().backward();
  EXPECT_EQ(Vals(x.grad()), (D{8, 16, 24}));
}

TEST(AutogradEngine, InplaceThroughAViewOfANonLeaf) {
  Tensor x = T64({1.0, 2.0, 3.0, 4.0}).requires_grad_();
  Tensor y = x * 1;
  Tensor v = y.slice(0, 1, 3);
  v.mul_(10);
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  (y * T64({1.0, 2.0, 3.0, 4.0})).sum().backward();
  EXPECT_EQ(Vals(x.grad()), (D{1, 20, 30, 4}));
}

TEST(AutogradEngine, WritingARequiringTensorIntoAPlainBuffer) {
  Tensor w = T64({5.0, 6.0}).requires_grad_();
  Tensor buf = zeros({4}, TensorOptions(kFloat64));
  buf.slice(0, 1, 3).add_(w * 2);
  EXPECT_TRUE(buf.requires_grad());
  (buf * T64({1.0, 2.0, 3.0, 4.0})).sum().backward();
  EXPECT_EQ(Vals(w.grad()), (D{4, 6}));
}

TEST(AutogradEngine, GradDoesNotTouchDotGradAndChecksUse) {
  Tensor x = T64({1.0, 2.0}).requires_grad_();
  Tensor z = T64({1.0}).requires_grad_();
  auto g = autograd::grad({(x * x * x).sum()}, {x});
  EXPECT_EQ(Vals(g[0]), (D{3, 12}));
  EXPECT_FALSE(x.grad().defined());
  const std::string msg = ErrorOf([&] { autograd::grad({(x * 2).sum()}, {x, z}); });
  EXPECT_NE(msg.find("appears to not have been used in the graph"), std::string::npos) << msg;
  auto g2 = autograd::grad({(x * 2).sum()}, {x, z}, {}, std::nullopt, false, /*allow_unused=*/true);
  EXPECT_FALSE(g2[1].defined());
}

TEST(AutogradEngine, CreateGraphGivesSecondDerivatives) {
  Tensor x = T64({1.0, 2.0}).requires_grad_();
  auto g = autograd::grad({(x * x * x).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_TRUE(g[0].requires_grad());
  auto gg = autograd::grad({g[0].sum()}, {x});
  EXPECT_EQ(Vals(gg[0]), (D{6, 12}));
  // Through a saved output: d2/dx2 tanh(x) = -2 tanh(x) (1 - tanh^2(x)).
  Tensor t = T64({0.5}).requires_grad_();
  auto d1 = autograd::grad({t.tanh().sum()}, {t}, {}, std::nullopt, true);
  auto d2 = autograd::grad({d1[0].sum()}, {t});
  const double th = std::tanh(0.5);
  EXPECT_NEAR(d2[0].item<double>(), -2 * th * (1 - th * th), 1e-12);
}

TEST(AutogradEngine, NonScalarBackwardNeedsAGradient) {
  Tensor x = T64({1.0, 2.0}).requires_grad_();
  Tensor y = x * 2;
  const std::string msg = ErrorOf([&] { y.backward(); });
  EXPECT_NE(msg.find("grad can be implicitly created only for scalar outputs"), std::string::npos) << msg;
  y.backward(T64({1.0, 10.0}));
  EXPECT_EQ(Vals(x.grad()), (D{2, 20}));
}

TEST(AutogradEngine, RetainGradAndHooks) {
  Tensor x = T64({1.0, 2.0}).requires_grad_();
  Tensor y = x * 2;
  y.retain_grad();
  std::vector<double> seen;
  auto h = y.register_hook([&](const Tensor& g) { seen = g.to_vector<double>(); });
  auto h2 = x.register_hook([](const Tensor& g) { return g * 10; });
  int post = 0;
  auto h3 = x.register_post_accumulate_grad_hook([&](const Tensor& t) { post += static_cast<int>(t.grad().sum().item<double>()); });
  (y * y).sum().backward();
  EXPECT_EQ(Vals(y.grad()), (D{4, 8}));
  EXPECT_EQ(seen, (D{4, 8}));
  EXPECT_EQ(Vals(x.grad()), (D{80, 160}));
  EXPECT_EQ(post, 240);
  h.remove();
  h2.remove();
  h3.remove();
  seen.clear();
  x.mutable_grad() = Tensor();
  Tensor y2 = x * 2;
  y2.sum().backward();
  EXPECT_EQ(Vals(x.grad()), (D{2, 2}));
  EXPECT_EQ(post, 240);
}

TEST(AutogradModes, NoGradAndInferenceMode) {
  Tensor x = T64({1.0, 2.0}).requires_grad_();
  {
    NoGradGuard g;
    EXPECT_FALSE(is_grad_enabled());
    Tensor y = x * 2;
    EXPECT_FALSE(y.requires_grad());
    {
      EnableGradGuard e;
      EXPECT_TRUE((x * 2).requires_grad());
    }
  }
  EXPECT_TRUE(is_grad_enabled());
  Tensor inf;
  {
    InferenceMode im;
    EXPECT_TRUE(InferenceMode::is_enabled());
    EXPECT_FALSE(is_grad_enabled());
    inf = x * 2;
    EXPECT_FALSE(inf.requires_grad());
    EXPECT_TRUE(inf.is_inference());
    const uint32_t v = inf._version();
    inf.add_(1);
    EXPECT_EQ(inf._version(), v);  // no version counter bumps for inference tensors
  }
  EXPECT_TRUE(is_grad_enabled());
  EXPECT_NE(ErrorOf([&] { inf.requires_grad_(); }).find("inference tensor"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { inf.add_(1); }).find("Inplace update to inference tensor outside InferenceMode"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { (x * inf).sum(); }).find("Inference tensors cannot be saved for backward"),
            std::string::npos);
  Tensor ok = inf.clone();
  EXPECT_FALSE(ok.is_inference());
  set_grad_enabled(false);
  EXPECT_FALSE((x * 2).requires_grad());
  set_grad_enabled(true);
}

TEST(AutogradModes, DetachSharesStorageWithoutHistory) {
  Tensor x = T64({1.0, 2.0}).requires_grad_();
  Tensor y = x * 2;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_alias_of(y));
  y.detach_();
  EXPECT_TRUE(y.is_leaf());
  EXPECT_FALSE(y.requires_grad());
}

TEST(AutogradMemory, SavedTensorsAreFreedAfterBackward) {
  Tensor x = randn({256, 256}, TensorOptions(kFloat64)).requires_grad_();
  (x * x).sum().backward();  // the first backward allocates x.grad
  const int64_t before = memory_allocated();
  {
    Tensor loss = (x.exp() * x.tanh()).sum();
    EXPECT_GT(memory_allocated(), before);
    loss.backward();
    // The graph is still referenced by `loss`, but its saved tensors were released: only
    // loss itself (one float64) is left.
    EXPECT_EQ(memory_allocated(), before + loss.nbytes());
  }
  EXPECT_EQ(memory_allocated(), before);
}

}  // namespace
}  // namespace ember
