// amp::GradScaler: torch.cuda.amp.GradScaler's dynamic loss scaling, its call-order
// checks, state_dict, and the clip_grad_norm_ warning about scaled gradients.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

namespace grad_scaler_test {

using namespace ember;

struct Rig {
  Tensor w = ones({2}).requires_grad_();
  optim::SGD opt{std::vector<Tensor>{w}, optim::SGDOptions(0.1)};
  // Gradient dloss/dw = scale * g, with a non-finite entry when asked.
  void backward(amp::GradScaler& scaler, bool inject_inf) {
    opt.zero_grad();
    Tensor loss = (w * tensor({1.0f, 2.0f})).sum();
    if (inject_inf) loss = loss * std::numeric_limits<float>::infinity();
    scaler.scale(loss).backward();
  }
};

TEST(GradScaler, DefaultsAreTorchs) {
  amp::GradScaler scaler;
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  EXPECT_EQ(scaler.get_growth_factor(), 2.0);
  EXPECT_EQ(scaler.get_backoff_factor(), 0.5);
  EXPECT_EQ(scaler.get_growth_interval(), 2000);
  EXPECT_TRUE(scaler.is_enabled());
}

TEST(GradScaler, CleanStepUnscalesAndSteps) {
  Rig s;
  amp::GradScaler scaler;
  s.backward(scaler, false);
  EXPECT_EQ(ember::testing::Floats(s.w.grad()), (ember::testing::F32{65536.0f, 131072.0f}));
  EXPECT_TRUE(scaler.step(s.opt));
  // Unscaled gradients (1, 2), then w -= 0.1 * g.
  EXPECT_EQ(ember::testing::Floats(s.w.grad()), (ember::testing::F32{1.0f, 2.0f}));
  EXPECT_NEAR(ember::testing::Floats(s.w)[0], 0.9f, 1e-6);
  EXPECT_NEAR(ember::testing::Floats(s.w)[1], 0.8f, 1e-6);
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  EXPECT_EQ(scaler.growth_tracker(), 1);
}

TEST(GradScaler, InjectedInfSkipsTheStepAndHalvesTheScale) {
  Rig s;
  amp::GradScaler scaler;
  s.backward(scaler, true);
  EXPECT_FALSE(scaler.step(s.opt));
  EXPECT_EQ(ember::testing::Floats(s.w), (ember::testing::F32{1.0f, 1.0f}));  // untouched
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 32768.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

// torch's _amp_update_scale_ rules, step by step (growth_interval 3, init 1024): a skipped
// step multiplies by backoff_factor and resets the counter; the growth_interval-th clean
// step in a row multiplies by growth_factor and resets it.
TEST(GradScaler, ScheduleMatchesTorchStepByStep) {
  Rig s;
  amp::GradScalerOptions o;
  o.init_scale = 1024;
  o.growth_interval = 3;
  amp::GradScaler scaler(o);
  const std::vector<bool> inf = {false, false, false, true, false, false, true, false, false, false, true, true};
  const std::vector<double> scale = {1024, 1024, 2048, 1024, 1024, 1024, 512, 512, 512, 1024, 512, 256};
  const std::vector<int64_t> tracker = {1, 2, 0, 0, 1, 2, 0, 1, 2, 0, 0, 0};
  for (size_t i = 0; i < inf.size(); ++i) {
    SCOPED_TRACE(i);
    s.backward(scaler, inf[i]);
    EXPECT_EQ(scaler.step(s.opt), !inf[i]);
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), scale[i]);
    EXPECT_EQ(scaler.growth_tracker(), tracker[i]);
  }
}

TEST(GradScaler, GrowthStopsBeforeInfinity) {
  Rig s;
  amp::GradScalerOptions o;
  o.init_scale = 3e38;
  o.growth_interval = 1;
  amp::GradScaler scaler(o);
  s.opt.zero_grad();
  scaler.scale((s.w * 1e-3).sum()).backward();  // finite gradients: 3e35
  EXPECT_TRUE(scaler.step(s.opt));
  scaler.update();  // 6e38 would overflow float32: the scale stays
  EXPECT_EQ(scaler.get_scale(), static_cast<double>(3e38f));
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST(GradScaler, CallOrderIsChecked) {
  Rig s;
  amp::GradScaler scaler;
  s.backward(scaler, false);
  scaler.unscale_(s.opt);
  ember::testing::ExpectError([&] { scaler.unscale_(s.opt); },
                       {"[GradScaler.unscale_]", "already been called", "SGD", "since the last update()"});
  EXPECT_TRUE(scaler.step(s.opt));  // uses the unscale_ above
  ember::testing::ExpectError([&] { scaler.step(s.opt); }, {"[GradScaler.step]", "already been called"});
  ember::testing::ExpectError([&] { scaler.unscale_(s.opt); }, {"[GradScaler.unscale_]", "after step()"});
  scaler.update();
  ember::testing::ExpectError([&] { scaler.update(); }, {"[GradScaler.update]", "no inf/NaN check"});
}

TEST(GradScaler, Float16GradientsAreRefused) {
  Tensor w = ones({2}, kFloat16).requires_grad_();
  optim::SGD opt(std::vector<Tensor>{w}, optim::SGDOptions(0.1));
  amp::GradScaler scaler;
  scaler.scale(w.sum()).backward();
  ember::testing::ExpectError([&] { scaler.unscale_(opt); }, {"[GradScaler.unscale_]", "float16 gradients"});
}

TEST(GradScaler, DisabledIsATransparentWrapper) {
  Rig s;
  amp::GradScalerOptions o;
  o.enabled = false;
  amp::GradScaler scaler(o);
  s.backward(scaler, false);
  EXPECT_EQ(ember::testing::Floats(s.w.grad()), (ember::testing::F32{1.0f, 2.0f}));
  EXPECT_TRUE(scaler.step(s.opt));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1.0);
  EXPECT_EQ(scaler.state_dict().size(), 0u);
}

TEST(GradScaler, StateDictRoundTrips) {
  Rig s;
  amp::GradScaler a;
  s.backward(a, true);
  a.step(s.opt);
  a.update();
  s.backward(a, false);
  a.step(s.opt);
  a.update();
  const Value st = a.state_dict();
  EXPECT_EQ(st.at("scale").to_double(), 32768.0);
  EXPECT_EQ(st.at("_growth_tracker").to_int(), 1);
  EXPECT_EQ(st.at("growth_interval").to_int(), 2000);
  amp::GradScaler b;
  b.load_state_dict(st);
  EXPECT_EQ(b.get_scale(), 32768.0);
  EXPECT_EQ(b.growth_tracker(), 1);
  ember::testing::ExpectError([&] { b.load_state_dict(Value::dict()); }, {"[GradScaler.load_state_dict]", "empty"});
}

TEST(GradScaler, ClippingScaledGradientsWarnsOnce) {
  std::vector<std::string> warnings;
  WarningHandler prev = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  Rig s;
  amp::GradScaler scaler;
  s.backward(scaler, false);
  nn::utils::clip_grad_norm_({s.w}, 1.0);
  nn::utils::clip_grad_norm_({s.w}, 1.0);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("[clip_grad_norm_]"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("unscale_"), std::string::npos) << warnings[0];
  // The right order is silent.
  warnings.clear();
  Rig t;
  amp::GradScaler good;
  t.backward(good, false);
  good.unscale_(t.opt);
  nn::utils::clip_grad_norm_({t.w}, 1.0);
  good.step(t.opt);
  good.update();
  set_warning_handler(prev);
  EXPECT_TRUE(warnings.empty());
}

}  // namespace grad_scaler_test
