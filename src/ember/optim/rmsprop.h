#pragma once
// RMSprop (alpha, eps, weight_decay, momentum, centered, maximize) as PyTorch 1.13.

#include "ember/optim/optimizer.h"

namespace ember::optim {

struct RMSpropOptions : OptimizerCloneableOptions<RMSpropOptions> {
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT: implicit, as libtorch's
  EMBER_OPTIM_ARG(double, lr);
  EMBER_OPTIM_ARG(double, alpha) = 0.99;
  EMBER_OPTIM_ARG(double, eps) = 1e-8;
  EMBER_OPTIM_ARG(double, weight_decay) = 0;
  EMBER_OPTIM_ARG(double, momentum) = 0;
  EMBER_OPTIM_ARG(bool, centered) = false;
  EMBER_OPTIM_ARG(bool, maximize) = false;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  bool has_momentum() const override { return true; }
  double get_momentum() const override { return momentum_; }
  void set_momentum(double m) override { momentum_ = m; }
  void to_value(Value& group) const override;
  void from_value(const Value& group) override;
  void validate(const char* op) const override;
};

// State per parameter: "step", "square_avg", "momentum_buffer" (momentum > 0),
// "grad_avg" (centered).
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults = {})
      : RMSprop(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  RMSprop(std::vector<OptimizerParamGroup> groups, const RMSpropOptions& defaults = {})
      : Optimizer(std::move(groups), defaults.clone(), "RMSprop") {}

 protected:
  void update(OptimizerParamGroup& group) override;
};

}  // namespace ember::optim
