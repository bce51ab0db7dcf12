// Each guard (docs/guards.md): a test that reproduces the mistake and sees the message, and a
// test that correct code is silent.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace guards_test {

using namespace ember;
namespace F = ember::nn::functional;

class GuardsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    guards::reset();
    guards::set_all_enabled(true);
    old_ = set_warning_handler([this](const std::string& m) { warnings.push_back(m); });
    manual_seed(0);
  }
  void TearDown() override {
    set_warning_handler(old_);
    guards::set_all_enabled(true);
    guards::settings() = guards::Settings();
  }
  bool has_warning(const std::string& part) const {
    for (const std::string& w : warnings)
      if (w.find(part) != std::string::npos) return true;
    return false;
  }
  std::vector<std::string> warnings;
  std::string all_warnings() const {
    std::string s;
    for (const std::string& w : warnings) s += w + "\n";
    return s;
  }

 private:
  WarningHandler old_;
};

#define EXPECT_PREFIX(text, prefix) EXPECT_TRUE(std::string(text).starts_with(prefix)) << (text)

// One step of a small regression: y = fc(x), mse to zeros.
Tensor regression_loss(nn::Linear& fc, int64_t batch = 8) {
  Tensor x = randn({batch, fc->options.in_features()});
  return F::mse_loss(fc(x), zeros({batch, fc->options.out_features()}));
}

// ---- GradAccumulation ----

TEST_F(GuardsTest, MissingZeroGradWarnsOnceWithCountAndFix) {
  nn::Linear fc(4, 2);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.1));
  for (int step = 0; step < 4; ++step) {  // the seed's bug: no zero_grad()
    regression_loss(fc).backward();
    opt.step();
  }
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "[SGD.step] the gradients come from 2 backward passes since they were last cleared, but the optimizer "
            "expects 1 per step (set_accumulation_steps(1)). If this is not deliberate gradient accumulation, "
            "zero_grad() is missing: call optimizer.zero_grad() after every step(). If it is, declare it with "
            "optimizer.set_accumulation_steps(2) and divide each loss by 2. (disable: "
            "ember::guards::set_enabled(ember::guards::Guard::GradAccumulation, false))");
}

TEST_F(GuardsTest, MissingZeroGradIsSeenThroughGradientClipping) {
  nn::Linear fc(4, 2);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.1));
  for (int step = 0; step < 2; ++step) {
    regression_loss(fc).backward();
    nn::utils::clip_grad_norm_(fc->parameters(), 0.01);  // changes the grads in place, clears nothing
    opt.step();
  }
  EXPECT_TRUE(has_warning("[SGD.step] the gradients come from 2 backward passes"));
}

TEST_F(GuardsTest, CorrectLoopsAreSilent) {
  nn::Linear fc(4, 2);
  optim::Adam opt(fc->parameters());
  for (int step = 0; step < 3; ++step) {  // zero_grad() (set to none), clipping
    opt.zero_grad();
    regression_loss(fc).backward();
    nn::utils::clip_grad_norm_(fc->parameters(), 1.0);
    opt.step();
  }
  for (int step = 0; step < 3; ++step) {  // zeroing in place, through the module
    fc->zero_grad(/*set_to_none=*/false);
    regression_loss(fc).backward();
    opt.step();
  }
  opt.zero_grad();
  for (int step = 0; step < 3; ++step) {  // the user's own in-place zeroing, after step()
    regression_loss(fc).backward();
    opt.step();
    NoGradGuard no_grad;
    for (Tensor& p : fc->parameters()) p.mutable_grad().zero_();
  }
  EXPECT_TRUE(warnings.empty()) << all_warnings();
}

TEST_F(GuardsTest, DeclaredAccumulationIsSilentIncludingAShortLastWindow) {
  nn::Linear fc(4, 2);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.1));
  opt.set_accumulation_steps(4);
  const int micro_batches = 10;  // windows of 4, 4, then 2 at the end of the epoch
  for (int i = 0; i < micro_batches; ++i) {
    (regression_loss(fc) / 4).backward();
    if ((i + 1) % 4 == 0 || i + 1 == micro_batches) {
      opt.step();
      opt.zero_grad();
    }
  }
  EXPECT_TRUE(warnings.empty()) << all_warnings();
}

TEST_F(GuardsTest, FewerPassesThanDeclaredWarnsOnTheSecondStep) {
  nn::Linear fc(4, 2);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.1));
  opt.set_accumulation_steps(4);
  for (int step = 0; step < 2; ++step) {
    opt.zero_grad();
    regression_loss(fc).backward();
    opt.step();
    EXPECT_EQ(warnings.size(), static_cast<size_t>(step));
  }
  EXPECT_TRUE(
      has_warning("[SGD.step] the gradients come from 1 backward passes since they were last cleared, but "
                  "the optimizer expects 4 per step (set_accumulation_steps(4)). Call backward() 4 times "
                  "per step(), or declare the number you use with optimizer.set_accumulation_steps(1)."));
}

TEST_F(GuardsTest, GradAccumulationSwitchesOff) {
  guards::set_enabled(guards::Guard::GradAccumulation, false);
  EXPECT_FALSE(guards::is_enabled(guards::Guard::GradAccumulation));
  nn::Linear fc(4, 2);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.1));
  for (int step = 0; step < 3; ++step) {
    regression_loss(fc).backward();
    opt.step();
  }
  EXPECT_TRUE(warnings.empty());
}

TEST_F(GuardsTest, SetAccumulationStepsRefusesZero) {
  nn::Linear fc(4, 2);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.1));
  try {
    opt.set_accumulation_steps(0);
    FAIL() << "expected ember::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, 61), "[SGD.set_accumulation_steps] steps must be >= 1, got 0");
  }
}

TEST_F(GuardsTest, OptimizerReportsTheGradientNorm) {
  nn::Linear fc(4, 2);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.1));
  EXPECT_TRUE(std::isnan(opt.last_grad_norm()));
  opt.set_report_grad_norm(true);
  regression_loss(fc).backward();
  double sum = 0;
  for (const Tensor& p : fc->parameters()) sum += (p.grad() * p.grad()).sum().item<double>();
  opt.step();
  EXPECT_NEAR(opt.last_grad_norm(), std::sqrt(sum), 1e-5);
  EXPECT_NEAR(nn::utils::clip_grad_norm_(fc->parameters(), 1e9), std::sqrt(sum), 1e-5);
}

// ---- EvalMode ----

TEST_F(GuardsTest, DropoutInTrainModeUnderNoGradWarnsOnce) {
  nn::Sequential model(nn::Linear(4, 4), nn::Dropout(0.5));
  NoGradGuard no_grad;  // the seed's bug: validation without model->eval()
  model->forward(randn({2, 4}));
  model->forward(randn({2, 4}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_PREFIX(warnings[0],
                "[nn.Dropout] called in training mode under NoGradGuard/InferenceMode: evaluation without "
                "model.eval()?");
  EXPECT_TRUE(
      has_warning("Call model->eval() before evaluating and model->train() after, or use "
                  "ember::nn::evaluate(model, loader, fn) (disable: "
                  "ember::guards::set_enabled(ember::guards::Guard::EvalMode, false))"));
}

TEST_F(GuardsTest, BatchNormInTrainModeUnderInferenceModeWarns) {
  nn::BatchNorm1d bn(4);
  InferenceMode inference;
  bn->forward(randn({8, 4}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_PREFIX(warnings[0], "[nn.BatchNorm] called in training m");
}

TEST_F(GuardsTest, EvalModeAndTrainingWithGradAreSilent) {
  nn::Sequential model(nn::Linear(4, 4), nn::BatchNorm1d(4), nn::Dropout(0.5));
  model->forward(randn({8, 4}));  // training, grad on
  model->eval();
  {
    NoGradGuard no_grad;
    model->forward(randn({8, 4}));
  }
  guards::set_enabled(guards::Guard::EvalMode, false);
  model->train();
  NoGradGuard no_grad;
  model->forward(randn({8, 4}));  // switched off
  EXPECT_TRUE(warnings.empty()) << all_warnings();
}

TEST_F(GuardsTest, EvaluateSetsEvalAndNoGradThenRestoresEachModulesMode) {
  nn::Sequential model(nn::Linear(4, 4), nn::BatchNorm1d(4), nn::Dropout(0.5));
  (*model)[1]->eval();  // a frozen BatchNorm stays frozen
  auto ds = std::make_shared<data::TensorDataset>(randn({12, 4}), zeros({12}));
  data::DataLoader loader(ds, data::DataLoaderOptions().batch_size(4));
  int batches = 0;
  nn::evaluate(model, loader, [&](data::Example& b) {
    EXPECT_FALSE(GradMode::is_enabled());
    EXPECT_FALSE(model->is_training());
    EXPECT_FALSE((*model)[2]->is_training());
    EXPECT_FALSE(model->forward(b.data).requires_grad());
    ++batches;
  });
  EXPECT_EQ(batches, 3);
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_TRUE(model->is_training());
  EXPECT_TRUE((*model)[0]->is_training());
  EXPECT_FALSE((*model)[1]->is_training());
  EXPECT_TRUE((*model)[2]->is_training());
  EXPECT_TRUE(warnings.empty()) << all_warnings();
}

// ---- GraphRetention ----

TEST_F(GuardsTest, GraphsKeptAliveByStoredOutputsWarn) {
  nn::Linear fc(256, 256);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.01));
  std::vector<Tensor> monitored;  // the seed's bug: outputs kept with their graphs
  const Tensor held_out = randn({1024, 256});
  for (int step = 0; step < 5; ++step) {
    opt.zero_grad();
    regression_loss(fc).backward();
    monitored.push_back(F::relu(fc(held_out)).mean());  // a forward with grad on, never backward
    opt.step();
  }
  EXPECT_GT(memory_stats().saved_for_backward_bytes, 4 * 1024 * 256 * 4);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_PREFIX(warnings[0], "[SGD.step] tensors saved for backward grew for 3 consecutive optimizer steps, to ");
  EXPECT_TRUE(has_warning(" held by 3 live graphs; the oldest was created at step 0 by 'linear'."));
  EXPECT_TRUE(has_warning("store loss.item<double>() or loss.detach()"));
  const guards::SavedTensorStats s = guards::saved_tensor_stats();
  EXPECT_EQ(s.live_graphs, 5);
  EXPECT_EQ(s.oldest_step, 0);
  monitored.clear();
  EXPECT_EQ(memory_stats().saved_for_backward_bytes, 0);
  EXPECT_EQ(guards::saved_tensor_stats().live_graphs, 0);
}

TEST_F(GuardsTest, TrainingLoopThatStoresItemsIsSilent) {
  nn::Linear fc(256, 256);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.01));
  std::vector<double> losses;
  const Tensor held_out = randn({1024, 256});
  for (int step = 0; step < 5; ++step) {
    opt.zero_grad();
    Tensor loss = regression_loss(fc, 1024);
    EXPECT_GT(memory_stats().saved_for_backward_bytes, 0);
    loss.backward();
    EXPECT_EQ(memory_stats().saved_for_backward_bytes, 0);  // backward freed what it saved
    losses.push_back(loss.item<double>());
    {
      NoGradGuard no_grad;
      losses.push_back(fc(held_out).mean().item<double>());
    }
    opt.step();
  }
  EXPECT_TRUE(warnings.empty()) << all_warnings();
}

// ---- NonFiniteLoss ----

TEST_F(GuardsTest, NanLossReportsTheStep) {
  nn::Linear fc(4, 1);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.1));
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    Tensor x = randn({8, 4});
    if (step == 2) x = x * std::numeric_limits<double>::quiet_NaN();  // a corrupt batch
    F::mse_loss(fc(x), zeros({8, 1})).backward();
    opt.step();
  }
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_PREFIX(warnings[0],
                "[backward] the loss is nan at step 2 (optimizer steps taken so far; the first non-finite loss of this "
                "run). ");
  EXPECT_TRUE(has_warning("Run with ember::autograd::DetectAnomalyGuard to name the forward op that produced it"));
  EXPECT_TRUE(has_warning("(disable: ember::guards::set_enabled(ember::guards::Guard::NonFiniteLoss, false))"));
}

TEST_F(GuardsTest, NanLossInAnomalyModeNamesTheForwardOp) {
  Tensor w = full({4}, -1.0).requires_grad_(true);
  autograd::DetectAnomalyGuard anomaly;
  Tensor h = w * 2;       // finite
  Tensor y = h.log();     // log of negative values: the first NaN
  Tensor loss = y.sum();  // NaN as well, but not the origin
  try {
    loss.backward();  // anomaly mode may also refuse the NaN gradient itself
  } catch (const Error&) {
  }
  ASSERT_GE(warnings.size(), 1u);
  EXPECT_PREFIX(warnings[0], "[backward] the loss is nan at step 0");
  EXPECT_TRUE(
      has_warning("Anomaly mode saw the first non-finite forward value come from 'log' (backward node "
                  "LogBackward0), called from:"));
}

TEST_F(GuardsTest, FiniteLossesAreSilent) {
  nn::Linear fc(4, 1);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.1));
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    F::mse_loss(fc(randn({8, 4})), zeros({8, 1})).backward();
    opt.step();
  }
  guards::set_enabled(guards::Guard::NonFiniteLoss, false);
  Tensor w = full({1}, -1.0).requires_grad_(true);
  w.log().sum().backward();  // switched off
  EXPECT_TRUE(warnings.empty()) << all_warnings();
}

// ---- NonFiniteGrad ----

// A finite loss whose backward overflows: sqrt at 0 has an infinite derivative.
TEST_F(GuardsTest, NonFiniteGradientFromAFiniteLossReportsTheStep) {
  Tensor v = ones({2}).requires_grad_(true), w = zeros({3}).requires_grad_(true);
  optim::SGD opt(std::vector<Tensor>{v, w}, optim::SGDOptions(0.1));
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    {
      NoGradGuard no_grad;
      w.zero_();  // the last step wrote -inf into it
    }
    Tensor loss = (v * v).sum();
    if (step >= 1) loss = loss + w.sqrt().sum();  // the loss stays finite, w's gradient is inf
    ASSERT_TRUE(std::isfinite(loss.item<double>()));
    loss.backward();
    opt.step();
  }
  ASSERT_EQ(warnings.size(), 1u) << all_warnings();  // once per run
  EXPECT_PREFIX(warnings[0],
                "[SGD.step] the gradient of parameter 1 (sizes [3]) has 3 inf values at step 1 (optimizer steps "
                "taken so far; the first non-finite gradient of this run), from a finite loss: ");
  EXPECT_TRUE(has_warning("ember::autograd::DetectAnomalyGuard names the backward node"));
  EXPECT_TRUE(has_warning("(disable: ember::guards::set_enabled(ember::guards::Guard::NonFiniteGrad, false))"));
}

TEST_F(GuardsTest, NonFiniteGradientGuardIsOffByDefaultAndQuietOtherwise) {
  EXPECT_EQ(guards::kDefaultGuards & (1u << static_cast<int>(guards::Guard::NonFiniteGrad)), 0u);
  EXPECT_NE(guards::kDefaultGuards & (1u << static_cast<int>(guards::Guard::NonFiniteLoss)), 0u);
  // On, with finite gradients: nothing.
  nn::Linear fc(4, 1);
  optim::AdamW opt(fc->parameters(), optim::AdamWOptions(1e-3));
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    regression_loss(fc).backward();
    opt.step();
  }
  EXPECT_TRUE(warnings.empty()) << all_warnings();
  // A NaN loss is reported once, by NonFiniteLoss; its NaN gradients are not reported again.
  opt.zero_grad();
  (regression_loss(fc) * std::numeric_limits<double>::quiet_NaN()).backward();
  opt.step();
  ASSERT_EQ(warnings.size(), 1u) << all_warnings();
  EXPECT_PREFIX(warnings[0], "[backward] the loss is nan at step 3");
  // Off: an infinite gradient from a finite loss passes silently.
  guards::reset();
  warnings.clear();
  guards::set_enabled(guards::Guard::NonFiniteGrad, false);
  Tensor w = zeros({3}).requires_grad_(true);
  optim::SGD sgd(std::vector<Tensor>{w}, optim::SGDOptions(0.1));
  w.sqrt().sum().backward();
  sgd.step();
  EXPECT_TRUE(warnings.empty()) << all_warnings();
}

// ---- DataLoaderWait ----

// A data set whose samples take `delay` to load (decoding, augmentation).
class SlowDataset : public data::Dataset {
 public:
  SlowDataset(int64_t n, std::chrono::microseconds delay) : n_(n), delay_(delay) {}
  int64_t size() const override { return n_; }
  data::Example get(int64_t index) override {
    std::this_thread::sleep_for(delay_);
    return {full({4}, static_cast<double>(index)), zeros({})};
  }

 private:
  int64_t n_;
  std::chrono::microseconds delay_;
};

// A training step that takes at least `compute`.
void train_epoch(data::DataLoader& loader, nn::Linear& fc, optim::Optimizer& opt, std::chrono::microseconds compute) {
  for (data::Example& batch : loader) {
    const auto until = std::chrono::steady_clock::now() + compute;
    opt.zero_grad();
    F::mse_loss(fc(batch.data), zeros({batch.data.size(0), 1})).backward();
    opt.step();
    std::this_thread::sleep_until(until);
  }
}

TEST_F(GuardsTest, StarvedTrainingLoopReportsWaitAndSuggestsWorkers) {
  guards::settings().dataloader_min_batches = 10;
  nn::Linear fc(4, 1);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.01));
  auto ds = std::make_shared<SlowDataset>(48, std::chrono::microseconds(1000));  // 4 ms per batch of 4
  data::DataLoader loader(ds, data::DataLoaderOptions().batch_size(4));
  train_epoch(loader, fc, opt, std::chrono::microseconds(1000));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_PREFIX(warnings[0], "[DataLoader] the training loop waited for batches ");
  EXPECT_TRUE(has_warning("over 11 batches) with num_workers=0; try DataLoaderOptions().num_workers("));
  EXPECT_TRUE(has_warning("(disable: ember::guards::set_enabled(ember::guards::Guard::DataLoaderWait, false))"));
}

TEST_F(GuardsTest, FedTrainingLoopAndPlainReadingAreSilent) {
  guards::settings().dataloader_min_batches = 10;
  nn::Linear fc(4, 1);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.01));
  auto ds = std::make_shared<data::TensorDataset>(randn({48, 4}), zeros({48}));
  data::DataLoader loader(ds, data::DataLoaderOptions().batch_size(4));
  train_epoch(loader, fc, opt, std::chrono::microseconds(2000));  // loading is a small part
  auto slow = std::make_shared<SlowDataset>(48, std::chrono::microseconds(500));
  data::DataLoader reader(slow, data::DataLoaderOptions().batch_size(4));
  int64_t n = 0;
  for (data::Example& b : reader) n += b.data.size(0);  // reading only: no optimizer steps, no report
  EXPECT_EQ(n, 48);
  EXPECT_TRUE(warnings.empty()) << all_warnings();
}

}  // namespace guards_test
