#pragma once
// Adagrad (lr_decay, weight_decay, initial_accumulator_value, eps, maximize) as PyTorch 1.13.

#include "ember/optim/optimizer.h"

namespace ember::optim {

struct AdagradOptions : OptimizerCloneableOptions<AdagradOptions> {
  AdagradOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT: implicit, as libtorch's
  EMBER_OPTIM_ARG(double, lr);
  EMBER_OPTIM_ARG(double, lr_decay) = 0;
  EMBER_OPTIM_ARG(double, weight_decay) = 0;
  EMBER_OPTIM_ARG(double, initial_accumulator_value) = 0;
  EMBER_OPTIM_ARG(double, eps) = 1e-10;
  EMBER_OPTIM_ARG(bool, maximize) = false;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void to_value(Value& group) const override;
  void from_value(const Value& group) override;
  void validate(const char* op) const override;
};

// State per parameter: "step" and "sum" (starting at initial_accumulator_value). PyTorch
// creates the state in the constructor; ember creates it at a parameter's first update,
// which gives the same updates.
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<Tensor> params, const AdagradOptions& defaults = {})
      : Adagrad(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  Adagrad(std::vector<OptimizerParamGroup> groups, const AdagradOptions& defaults = {})
      : Optimizer(std::move(groups), defaults.clone(), "Adagrad") {}

 protected:
  void update(OptimizerParamGroup& group) override;
};

}  // namespace ember::optim
