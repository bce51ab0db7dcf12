// Custom functions (Function<T>), checkpointing, anomaly mode and printing of graph
// tensors.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/grad_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace autograd_function_test {

using autograd::AutogradContext;
using autograd::variable_list;

using ember::testing::ErrorOf;

struct MyReLU : autograd::Function<MyReLU> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    ctx->save_for_backward({x});
    return x.clamp_min(0);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * (x > 0)};
  }
};

// Straight-through estimator: round in the forward, identity in the backward.
struct RoundSTE : autograd::Function<RoundSTE> {
  static Tensor forward(AutogradContext*, Tensor x) { return x.round(); }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0]}; }
};

// y = x * k with a non-tensor argument, saved in saved_data.
struct Scale : autograd::Function<Scale> {
  static Tensor forward(AutogradContext* ctx, Tensor x, double k) {
    ctx->saved_data["k"] = k;
    ctx->saved_data["calls"] = 1;
    return x * k;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    EXPECT_EQ(ctx->saved_data["calls"].toInt(), 1);
    return {grads[0] * ctx->saved_data["k"].toDouble(), Tensor()};
  }
};

TEST(CustomFunction, ReluPassesGradcheckAndNamesItsNode) {
  Tensor x = randn({4, 5}, TensorOptions(kFloat64));
  x = x + x.sign() * 0.1;  // keep away from the kink at 0
  EXPECT_EQ(testing::check_grads([](const std::vector<Tensor>& v) { return MyReLU::apply(v[0]); }, {x},
                                 /*second=*/false),
            "");
  Tensor xr = x.detach().requires_grad_();
  Tensor y = MyReLU::apply(xr);
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "CppNode<ember::autograd_function_test::MyReLU>");
  y.sum().backward();
  EXPECT_TRUE(xr.grad().equal((xr > 0).to(kFloat64)));
}

TEST(CustomFunction, StraightThroughEstimator) {
  Tensor x = tensor({0.2, 1.7, -2.4}, kFloat64).requires_grad_();
  Tensor y = RoundSTE::apply(x);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, 2, -2}));
  (y * tensor({1.0, 2.0, 3.0}, kFloat64)).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 2, 3}));
  // The built-in round has a zero gradient: the estimator is what makes training work.
  Tensor x2 = x.detach().requires_grad_();
  x2.round().sum().backward();
  EXPECT_EQ(x2.grad().to_vector<double>(), (std::vector<double>{0, 0, 0}));
}

TEST(CustomFunction, NonTensorArgumentsAndSavedData) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = Scale::apply(x, 3.0);
  y.sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{3, 3}));
  // No input requires grad: no graph.
  Tensor z = Scale::apply(tensor({1.0}, kFloat64), 2.0);
  EXPECT_FALSE(z.requires_grad());
  EXPECT_EQ(z.item<double>(), 2.0);
}

// Each backward runs another backward through a fresh copy of itself, one level shallower:
// `levels` nested backward calls (Note [Deep reentrant backward]).
struct Reenter : autograd::Function<Reenter> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    {
      AutoGradMode enable(true);
      ctx->saved_data["x"] = x.detach().requires_grad_() - 1;
    }
    return ctx->saved_data["x"].toTensor().detach();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    ++levels_run;
    Tensor x = ctx->saved_data["x"].toTensor();
    if (x.item<double>() == 0) return grads;
    AutoGradMode enable(true);
    Reenter::apply(x).sum().backward();
    return grads;
  }
  static inline int levels_run = 0;
};

TEST(CustomFunction, DeepReentrantBackwardDoesNotOverflowTheStack) {
  // 8193 levels: far past what one thread's stack holds with a frame of the engine per
  // level, so the engine must continue on new threads; grad mode and errors come back.
  Reenter::levels_run = 0;
  Tensor v = tensor({8193.0}).requires_grad_();
  Reenter::apply(v).sum().backward();
  EXPECT_EQ(Reenter::levels_run, 8193);
  EXPECT_TRUE(GradMode::is_enabled());
  // An error deep inside comes back to the first caller unchanged.
  struct FailDeep : autograd::Function<FailDeep> {
    static Tensor forward(AutogradContext* ctx, Tensor x) {
      {
        AutoGradMode enable(true);
        ctx->saved_data["x"] = x.detach().requires_grad_() - 1;
      }
      return ctx->saved_data["x"].toTensor().detach();
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
      Tensor x = ctx->saved_data["x"].toTensor();
      EMBER_CHECK(x.item<double>() > 0, "[FailDeep] reached the bottom");
      AutoGradMode enable(true);
      FailDeep::apply(x).sum().backward();
      return grads;
    }
  };
  Tensor w = tensor({100.0}).requires_grad_();
  EXPECT_NE(ErrorOf([&] { FailDeep::apply(w).sum().backward(); }).find("[FailDeep] reached the bottom"),
            std::string::npos);
}

struct WrongCount : autograd::Function<WrongCount> {
  static Tensor forward(AutogradContext*, Tensor a, Tensor b) { return a * b; }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0]}; }
};

TEST(CustomFunction, WrongNumberOfGradientsIsAnError) {
  Tensor a = ones({2}, kFloat64).requires_grad_();
  Tensor b = ones({2}, kFloat64);
  Tensor y = WrongCount::apply(a, b);
  const std::string msg = ErrorOf([&] { y.sum().backward(); });
  EXPECT_NE(msg.find("incorrect number of gradients (expected 2, got 1)"), std::string::npos) << msg;
}

struct SortLike : autograd::Function<SortLike> {
  // Two outputs: values (differentiable) and their indices (marked non-differentiable).
  static variable_list forward(AutogradContext* ctx, Tensor x) {
    auto [values, indices] = x.sort(0);
    ctx->mark_non_differentiable({indices});
    ctx->save_for_backward({indices});
    ctx->saved_data["n"] = x.size(0);
    return {values, indices};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    EXPECT_TRUE(ctx->needs_input_grad(0));
    Tensor idx = ctx->get_saved_variables()[0];
    Tensor g = zeros({ctx->saved_data["n"].toInt()}, TensorOptions(grads[0].dtype()));
    return {g.index_copy(0, idx, grads[0])};
  }
};

TEST(CustomFunction, NonDifferentiableOutputs) {
  Tensor x = tensor({3.0, 1.0, 2.0}, kFloat64).requires_grad_();
  variable_list out = SortLike::apply(x);
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_FALSE(out[1].requires_grad());
  (out[0] * tensor({1.0, 10.0, 100.0}, kFloat64)).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{100, 1, 10}));
}

struct MulTwoInplace : autograd::Function<MulTwoInplace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.mul_(2);
    ctx->mark_dirty({x});
    return x;
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0] * 2}; }
};

TEST(CustomFunction, MarkDirtyRewritesHistory) {
  Tensor a = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor b = a * 3;
  Tensor c = MulTwoInplace::apply(b);
  EXPECT_TRUE(c.is_same(b));
  EXPECT_EQ(b.grad_fn()->name(), "CppNode<ember::autograd_function_test::MulTwoInplace>");
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{6, 12}));
  b.sum().backward();
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{6, 6}));
  // A leaf that requires grad cannot be modified in place.
  Tensor leaf = ones({2}, kFloat64).requires_grad_();
  EXPECT_NE(ErrorOf([&] { MulTwoInplace::apply(leaf); }).find("leaf Variable that requires grad"),
            std::string::npos);
}

TEST(CustomFunction, SavedTensorVersionIsChecked) {
  Tensor a = tensor({1.0, -2.0}, kFloat64).requires_grad_();
  Tensor b = a * 1;
  Tensor y = MyReLU::apply(b);
  b.add_(1);
  const std::string msg = ErrorOf([&] { y.sum().backward(); });
  EXPECT_NE(msg.find("modified by an inplace operation"), std::string::npos) << msg;
}

TEST(Checkpoint, SameGradientsAsWithoutAndLowerPeakMemory) {
  // Activations dominate memory here (1024 x 64 each, the weight is 64 x 64), as in
  // the networks checkpointing is for.
  Tensor w = randn({64, 64}, TensorOptions(kFloat64)).mul_(0.1).requires_grad_();
  Tensor x0 = randn({1024, 64}, TensorOptions(kFloat64));
  // A 16-layer network in 4 segments of 4 layers.
  auto segment = [&](const variable_list& in) {
    Tensor h = in[0];
    for (int i = 0; i < 4; ++i) h = (h.matmul(w)).tanh();
    return variable_list{h};
  };
  // Without checkpointing.
  Tensor x = x0.clone().requires_grad_();
  reset_peak_memory_stats();
  int64_t base = memory_allocated();
  Tensor h = x;
  for (int s = 0; s < 4; ++s) h = segment({h})[0];
  h.sum().backward();
  const int64_t peak_plain = memory_stats().peak_allocated_bytes - base;
  Tensor gx = x.grad(), gw = w.grad().clone();
  w.mutable_grad() = Tensor();
  // With checkpointing: only the segment boundaries stay alive between forward and
  // backward; one segment's activations exist at a time during the backward.
  Tensor xc = x0.clone().requires_grad_();
  reset_peak_memory_stats();
  base = memory_allocated();
  Tensor hc = xc;
  for (int s = 0; s < 4; ++s) hc = autograd::checkpoint(segment, {hc})[0];
  EXPECT_EQ(hc.grad_fn()->name(), "CheckpointFunctionBackward");
  const int64_t after_forward = memory_allocated() - base;
  hc.sum().backward();
  const int64_t peak_ckpt = memory_stats().peak_allocated_bytes - base;
  EXPECT_TRUE(xc.grad().allclose(gx, 1e-12, 1e-12));
  EXPECT_TRUE(w.grad().allclose(gw, 1e-12, 1e-12));
  const int64_t act = 1024 * 64 * 8;  // one activation in bytes
  EXPECT_LE(after_forward, 4 * act + 1024);  // the 4 segment outputs
  EXPECT_LT(peak_ckpt, peak_plain * 2 / 3) << "checkpointed " << peak_ckpt << " bytes vs " << peak_plain;
}

TEST(Checkpoint, RandomOpsRecomputeIdentically) {
  manual_seed(7);
  Tensor x = randn({1000}, TensorOptions(kFloat64)).requires_grad_();
  auto dropout_like = [](const variable_list& in) {
    Tensor mask = (rand({1000}, TensorOptions(kFloat64)) > 0.5).to(kFloat64);
    return variable_list{in[0] * mask * 2};
  };
  Tensor h = x * 1;  // a non-leaf input, as inside a network
  variable_list out = autograd::checkpoint(dropout_like, {h});
  Tensor kept = out[0].detach().ne(0).to(kFloat64);
  rand({5});  // move the generator on: the rerun must not see this
  out[0].sum().backward();
  EXPECT_TRUE(x.grad().equal(kept * 2));
}

TEST(AnomalyMode, NamesTheNodeThatProducedNan) {
  guards::set_enabled(guards::Guard::NonFiniteLoss, false);  // the NaN is the point here
  Tensor x = tensor({1.0, -1.0}, kFloat64).requires_grad_();
  std::string msg;
  {
    autograd::DetectAnomalyGuard guard;
    // sqrt of a negative number: NaN in the forward, and NaN in SqrtBackward0's output.
    Tensor y = x.sqrt().sum();
    msg = ErrorOf([&] { y.backward(); });
  }
  EXPECT_NE(msg.find("Function 'SqrtBackward0' returned nan values in its 0th output"), std::string::npos) << msg;
  EXPECT_NE(msg.find("was made from"), std::string::npos) << msg;
  // Without anomaly mode the NaN gradient is returned silently, as in PyTorch.
  Tensor x2 = x.detach().requires_grad_();
  x2.sqrt().sum().backward();
  guards::set_enabled(guards::Guard::NonFiniteLoss, true);
  EXPECT_TRUE(std::isnan(x2.grad()[1].item<double>()));
}

TEST(AnomalyMode, LogOfNegativeThenSum) {
  Tensor x = tensor({2.0, -3.0}, kFloat64).requires_grad_();
  std::vector<std::string> warnings;
  WarningHandler old = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  guards::reset();
  autograd::set_detect_anomaly(true);
  Tensor y = (x.log() * x).sum();  // log(-3) is nan; MulBackward0 passes it on
  const std::string msg = ErrorOf([&] { y.backward(); });
  autograd::set_detect_anomaly(false);
  set_warning_handler(old);
  EXPECT_NE(msg.find("'MulBackward0' returned nan values"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sequence number"), std::string::npos) << msg;
  // The NonFiniteLoss guard warned first, naming the forward op that made the NaN; then anomaly
  // mode named the forward call of the node whose backward failed.
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("[backward] the loss is nan at step 0"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("first non-finite forward value come from 'log' (backward node LogBackward0)"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[1].find("Error detected in MulBackward0. Traceback of forward call that caused the error"),
            std::string::npos)
      << warnings[1];
}

TEST(AnomalyMode, DoubleBackwardNamesTheNodeWhoseBackwardMadeTheFailingOne) {
  // d/dx x^1.5 = 1.5 x^0.5 is made by PowBackward0's backward; its own backward at 0 gives
  // 0.75 * 0^-0.5 * 0 = nan. Anomaly mode names both forward calls.
  std::vector<std::string> warnings;
  WarningHandler old = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  autograd::set_detect_anomaly(true);
  Tensor x = tensor({0.0}, kFloat64).requires_grad_();
  Tensor y = x.pow(1.5);
  Tensor gx = autograd::grad({y}, {x}, {}, true, true)[0];
  const std::string msg = ErrorOf([&] { autograd::grad({gx}, {x}, {tensor({0.0}, kFloat64)}); });
  autograd::set_detect_anomaly(false);
  set_warning_handler(old);
  EXPECT_NE(msg.find("returned nan"), std::string::npos) << msg;
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("Traceback of forward call that caused the error"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("Previous calculation was induced by PowBackward0. Traceback of forward call that "
                             "induced the previous calculation"),
            std::string::npos)
      << warnings[1];
}

TEST(AutogradPrint, ShowsGradFnOrRequiresGrad) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  std::ostringstream a, b;
  a << x;
  EXPECT_EQ(a.str(), "tensor([1., 2.], requires_grad=True)");
  b << x * 2;
  EXPECT_EQ(b.str(), "tensor([2., 4.], grad_fn=<MulBackward1>)");
}

}  // namespace
}  // namespace ember

namespace ember {
namespace autograd_function_test {

TEST(HigherOrder, GradientOfSquaredGradientNormOfAnMlp) {
  // penalty(W1, W2) = |d loss / d (W1, W2)|^2 for loss = sum(tanh(x W1^T) W2^T)^2 / n;
  // its gradient needs the backward of the backward (create_graph=true). gradcheck
  // compares it with finite differences of the penalty itself.
  Tensor x = randn({5, 3}, TensorOptions(kFloat64));
  auto penalty = [x](const autograd::variable_list& w) {
    Tensor h = linear(x, w[0]).tanh();
    Tensor loss = linear(h, w[1]).pow(2).mean();
    autograd::variable_list g = autograd::grad({loss}, {w[0], w[1]}, {}, true, /*create_graph=*/true);
    return autograd::variable_list{g[0].pow(2).sum() + g[1].pow(2).sum()};
  };
  Tensor w1 = randn({4, 3}, TensorOptions(kFloat64)).requires_grad_();
  Tensor w2 = randn({2, 4}, TensorOptions(kFloat64)).requires_grad_();
  EXPECT_TRUE(autograd::gradcheck(penalty, {w1, w2}));
  // And the usual training-loop form: backward() through the penalty reaches both weights.
  penalty({w1, w2})[0].backward();
  EXPECT_TRUE(w1.grad().defined());
  EXPECT_GT(w2.grad().abs().sum().item<double>(), 0.0);
}

}  // namespace
}  // namespace ember
