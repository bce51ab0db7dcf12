#pragma once
// Learning-rate schedulers with PyTorch 1.13's formulas (torch/optim/lr_scheduler.py):
// the chainable forms in step(), the closed forms where SequentialLR jumps to an epoch.
// Constructing a scheduler records each group's "initial_lr" (if not set already) and
// takes the first step, as PyTorch does. Call scheduler.step() after optimizer.step().

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/optim/optimizer.h"
#include "ember/serialize/value.h"

namespace ember::optim {

// The base of the epoch-driven schedulers (PyTorch's _LRScheduler). The scheduler keeps a
// reference to the optimizer, which must outlive it.
class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;
  virtual ~LRScheduler() = default;

  // Advances one epoch and writes the new learning rates into the optimizer's groups.
  virtual void step();
  // The learning rates the last step() set, one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return optimizer_; }

  // {"base_lrs": [..], "last_epoch": n, "_step_count": n, "_last_lr": [..], ...own fields}.
  virtual Value state_dict() const;
  virtual void load_state_dict(const Value& state);

  // Used by SequentialLR (as PyTorch's internals): jump to `epoch`, using the closed form
  // when the scheduler has one; restart with a first step; move the epoch counter.
  void step_to(int64_t epoch);
  void initial_step();
  void set_last_epoch(int64_t epoch) { last_epoch_ = epoch; }

 protected:
  // The chainable form: new lrs from the groups' current lrs and last_epoch().
  virtual std::vector<double> get_lr() = 0;
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
  // The groups' current learning rates.
  std::vector<double> group_lrs() const;
  // The scheduler's own fields in the state dict.
  virtual void save_fields(Value& /*state*/) const {}
  virtual void load_fields(const Value& /*state*/) {}

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  std::vector<double> last_lr_;

 private:
  void apply(const std::vector<double>& lrs);
};

// lr *= gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_fields(Value& state) const override;
  void load_fields(const Value& state) override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr *= gamma at each milestone (a milestone listed twice multiplies by gamma^2).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_fields(Value& state) const override;
  void load_fields(const Value& state) override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

// lr *= gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_fields(Value& state) const override;
  void load_fields(const Value& state) override;

 private:
  double gamma_;
};

// Cosine from the base lr down to eta_min over T_max epochs (and back up, periodically).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_fields(Value& state) const override;
  void load_fields(const Value& state) override;

 private:
  int64_t T_max_;
  double eta_min_;
};

// Multiplies the base lr by a factor moving linearly from start_factor to end_factor
// over total_iters epochs.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_fields(Value& state) const override;
  void load_fields(const Value& state) override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

// lr = base_lr * lambda(epoch); one lambda for all groups or one per group. The lambdas
// are not saved in state_dict() (as PyTorch, which saves only callable objects' fields).
class LambdaLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;
  LambdaLR(Optimizer& optimizer, Lambda lr_lambda);
  LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas);

 protected:
  std::vector<double> get_lr() override;

 private:
  std::vector<Lambda> lambdas_;
};

struct OneCycleLROptions {
  // max_lr: one value for every group, or one per group.
  OneCycleLROptions(std::vector<double> max_lr, int64_t total_steps)
      : max_lr_(std::move(max_lr)), total_steps_(total_steps) {}
  OneCycleLROptions(double max_lr, int64_t total_steps) : max_lr_({max_lr}), total_steps_(total_steps) {}
  EMBER_OPTIM_ARG(std::vector<double>, max_lr);
  EMBER_OPTIM_ARG(int64_t, total_steps);
  EMBER_OPTIM_ARG(double, pct_start) = 0.3;
  EMBER_OPTIM_ARG(std::string, anneal_strategy) = "cos";  // "cos" or "linear"
  EMBER_OPTIM_ARG(bool, cycle_momentum) = true;
  EMBER_OPTIM_ARG(double, base_momentum) = 0.85;
  EMBER_OPTIM_ARG(double, max_momentum) = 0.95;
  EMBER_OPTIM_ARG(double, div_factor) = 25.0;
  EMBER_OPTIM_ARG(double, final_div_factor) = 1e4;
  EMBER_OPTIM_ARG(bool, three_phase) = false;
};

// The 1cycle policy: lr from max_lr/div_factor up to max_lr, then down to
// initial_lr/final_div_factor (three_phase: back to initial_lr first); with
// cycle_momentum the momentum (SGD/RMSprop momentum, Adam's beta1) moves inversely.
// Step it after every batch; stepping past total_steps is an error.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options);

 protected:
  std::vector<double> get_lr() override;
  void save_fields(Value& state) const override;

 private:
  struct Phase {
    double end_step;
    const char* start_lr;
    const char* end_lr;
    const char* start_momentum;
    const char* end_momentum;
  };
  double anneal(double start, double end, double pct) const;
  OneCycleLROptions options_;
  std::vector<Phase> phases_;
};

// Runs schedulers one after another, switching at the milestones (epochs).
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;
  // Also holds each scheduler's state under "_schedulers".
  Value state_dict() const override;
  void load_state_dict(const Value& state) override;

 protected:
  std::vector<double> get_lr() override { return group_lrs(); }

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

struct ReduceLROnPlateauOptions {
  EMBER_OPTIM_ARG(std::string, mode) = "min";  // "min" or "max"
  EMBER_OPTIM_ARG(double, factor) = 0.1;
  EMBER_OPTIM_ARG(int64_t, patience) = 10;
  EMBER_OPTIM_ARG(double, threshold) = 1e-4;
  EMBER_OPTIM_ARG(std::string, threshold_mode) = "rel";  // "rel" or "abs"
  EMBER_OPTIM_ARG(int64_t, cooldown) = 0;
  EMBER_OPTIM_ARG(std::vector<double>, min_lr) = std::vector<double>{0.0};  // one, or one per group
  EMBER_OPTIM_ARG(double, eps) = 1e-8;
};

// Divides the lr by 1/factor when a metric stopped improving for `patience` epochs.
class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& options = {});
  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  Value state_dict() const;
  void load_state_dict(const Value& state);

 private:
  bool is_better(double a, double best) const;
  Optimizer& optimizer_;
  ReduceLROnPlateauOptions options_;
  std::vector<double> min_lrs_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace ember::optim
