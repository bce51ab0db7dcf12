#pragma once
// SGD with momentum, dampening, weight decay, Nesterov and maximize (PyTorch 1.13's rule).

#include "ember/optim/optimizer.h"

namespace ember::optim {

struct SGDOptions : OptimizerCloneableOptions<SGDOptions> {
  SGDOptions(double lr) : lr_(lr) {}  // NOLINT: implicit, as libtorch's
  EMBER_OPTIM_ARG(double, lr);
  EMBER_OPTIM_ARG(double, momentum) = 0;
  EMBER_OPTIM_ARG(double, dampening) = 0;
  EMBER_OPTIM_ARG(double, weight_decay) = 0;
  EMBER_OPTIM_ARG(bool, nesterov) = false;
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

// State per parameter: "momentum_buffer" (when momentum != 0).
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& defaults)
      : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  SGD(std::vector<OptimizerParamGroup> groups, const SGDOptions& defaults)
      : Optimizer(std::move(groups), defaults.clone(), "SGD") {}

 protected:
  void update(OptimizerParamGroup& group) override;
};

}  // namespace ember::optim
