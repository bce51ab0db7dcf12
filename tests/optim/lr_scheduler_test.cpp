// Schedulers (values from PyTorch 1.13's formulas worked by hand) and gradient clipping.

#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace optim_lr_scheduler_test {

using namespace ember;

struct Fixture {
  Tensor w = randn({2}).requires_grad_();
  optim::SGD opt{std::vector<Tensor>{w}, optim::SGDOptions(1.0).momentum(0.9)};
  double lr() const { return opt.param_groups()[0].lr(); }
};

TEST(LRScheduler, StepLR) {
  Fixture f;
  optim::StepLR s(f.opt, 2, 0.5);
  EXPECT_DOUBLE_EQ(f.lr(), 1.0);
  EXPECT_DOUBLE_EQ(f.opt.param_groups()[0].get("initial_lr"), 1.0);
  std::vector<double> lrs;
  for (int i = 0; i < 5; ++i) {
    f.opt.step();
    s.step();
    lrs.push_back(s.get_last_lr()[0]);
  }
  EXPECT_EQ(lrs, (std::vector<double>{1.0, 0.5, 0.5, 0.25, 0.25}));
}

TEST(LRScheduler, MultiStepAndExponential) {
  Fixture f;
  optim::MultiStepLR s(f.opt, {3, 1, 3}, 0.1);
  std::vector<double> lrs;
  for (int i = 0; i < 4; ++i) {
    s.step();
    lrs.push_back(f.lr());
  }
  EXPECT_DOUBLE_EQ(lrs[0], 0.1);
  EXPECT_DOUBLE_EQ(lrs[1], 0.1);
  EXPECT_NEAR(lrs[2], 0.1 * 0.01, 1e-15);
  Fixture g;
  optim::ExponentialLR e(g.opt, 0.5);
  e.step();
  e.step();
  EXPECT_DOUBLE_EQ(g.lr(), 0.25);
}

TEST(LRScheduler, CosineClosedFormAgreesWithRecursion) {
  Fixture f;
  optim::CosineAnnealingLR s(f.opt, 10, 0.01);
  for (int e = 1; e <= 25; ++e) {
    s.step();
    // The closed form of PyTorch's docs; the recursion differs only by rounding.
    const double expect = 0.01 + 0.99 * (1 + std::cos(M_PI * e / 10)) / 2;
    EXPECT_NEAR(f.lr(), expect, 1e-12) << "epoch " << e;
  }
}

TEST(LRScheduler, LinearLambdaAndStateDict) {
  Fixture f;
  optim::LinearLR s(f.opt, 0.25, 1.0, 3);
  EXPECT_DOUBLE_EQ(f.lr(), 0.25);
  s.step();
  EXPECT_DOUBLE_EQ(f.lr(), 0.5);
  const Value saved = s.state_dict();
  s.step();
  s.step();
  EXPECT_DOUBLE_EQ(f.lr(), 1.0);
  s.load_state_dict(saved);
  EXPECT_EQ(s.last_epoch(), 1);
  Fixture g;
  optim::LambdaLR l(g.opt, [](int64_t e) { return 1.0 / static_cast<double>(e + 1); });
  l.step();
  EXPECT_DOUBLE_EQ(g.lr(), 0.5);
}

TEST(LRScheduler, OneCycleCyclesMomentum) {
  Fixture f;
  optim::OneCycleLR s(f.opt, optim::OneCycleLROptions(0.1, 10));
  EXPECT_NEAR(f.lr(), 0.1 / 25, 1e-15);
  EXPECT_DOUBLE_EQ(f.opt.param_groups()[0].options().get_momentum(), 0.95);
  for (int i = 0; i < 2; ++i) s.step();  // step 2 = end of the warm-up phase (0.3 * 10 - 1)
  EXPECT_NEAR(f.lr(), 0.1, 1e-15);
  EXPECT_NEAR(f.opt.param_groups()[0].options().get_momentum(), 0.85, 1e-15);
  for (int i = 0; i < 7; ++i) s.step();
  EXPECT_NEAR(f.lr(), 0.1 / 25 / 1e4, 1e-15);
  s.step();  // PyTorch allows last_epoch == total_steps
  EXPECT_THROW(s.step(), ember::Error);  // past total_steps
  Tensor w = randn({2}).requires_grad_();
  optim::Adagrad ada({w});
  EXPECT_THROW(optim::OneCycleLR(ada, optim::OneCycleLROptions(0.1, 10)), ember::Error);
}

TEST(LRScheduler, ReduceLROnPlateau) {
  Fixture f;
  optim::ReduceLROnPlateau s(f.opt, optim::ReduceLROnPlateauOptions().patience(1).factor(0.5).cooldown(1));
  for (double m : {1.0, 0.5, 0.6, 0.6}) s.step(m);
  EXPECT_DOUBLE_EQ(f.lr(), 0.5);  // two bad epochs after 0.5 > patience 1
  s.step(0.6);                     // cooldown
  s.step(0.6);
  EXPECT_DOUBLE_EQ(f.lr(), 0.5);
  s.step(0.6);
  EXPECT_DOUBLE_EQ(f.lr(), 0.25);
  const Value sd = s.state_dict();
  EXPECT_DOUBLE_EQ(sd.at("best").to_double(), 0.5);
  EXPECT_THROW(optim::ReduceLROnPlateau(f.opt, optim::ReduceLROnPlateauOptions().mode("up")), ember::Error);
}

TEST(LRScheduler, SequentialLR) {
  Fixture f;
  auto warm = std::make_shared<optim::LinearLR>(f.opt, 0.5, 1.0, 2);
  auto decay = std::make_shared<optim::ExponentialLR>(f.opt, 0.5);
  optim::SequentialLR s(f.opt, {warm, decay}, {2});
  std::vector<double> lrs{f.lr()};
  for (int i = 0; i < 4; ++i) {
    s.step();
    lrs.push_back(f.lr());
  }
  EXPECT_EQ(lrs, (std::vector<double>{0.5, 0.75, 1.0, 0.5, 0.25}));
}

TEST(ClipGrad, NormValueAndInf) {
  Tensor a = zeros({2}).requires_grad_(), b = zeros({1}).requires_grad_();
  a.mutable_grad() = tensor({3.0f, 0.0f});
  b.mutable_grad() = tensor({4.0f});
  const double total = nn::utils::clip_grad_norm_({a, b}, 1.0);
  EXPECT_NEAR(total, 5.0, 1e-6);
  EXPECT_NEAR(a.grad()[0].item<float>(), 3.0 / (5.0 + 1e-6), 1e-6);
  EXPECT_NEAR(b.grad()[0].item<float>(), 4.0 / (5.0 + 1e-6), 1e-6);
  // Below max_norm nothing changes.
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b}, 10.0), 1.0, 1e-5);
  EXPECT_NEAR(b.grad()[0].item<float>(), 4.0 / (5.0 + 1e-6), 1e-6);
  b.mutable_grad() = tensor({-7.0f});
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b}, 3.5, inf), 7.0, 1e-6);
  EXPECT_NEAR(b.grad()[0].item<float>(), -3.5, 1e-5);
  nn::utils::clip_grad_value_({a, b}, 0.1);
  EXPECT_FLOAT_EQ(b.grad()[0].item<float>(), -0.1f);
  EXPECT_FLOAT_EQ(a.grad()[0].item<float>(), 0.1f);
  Tensor none = zeros({2}).requires_grad_();
  EXPECT_EQ(nn::utils::clip_grad_norm_({none}, 1.0), 0.0);
}

TEST(ClipGrad, NonFiniteError) {
  Tensor a = zeros({2}).requires_grad_();
  a.mutable_grad() = tensor({std::nanf(""), 1.0f});
  try {
    nn::utils::clip_grad_norm_(a, 1.0, 2.0, true);
    ADD_FAILURE() << "expected an error";
  } catch (const ember::Error& e) {
    EXPECT_NE(std::string(e.what()).find("The total norm of order 2 for gradients from `parameters` is non-finite"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(std::isnan(nn::utils::clip_grad_norm_(a, 1.0)));
}

}  // namespace
