#pragma once
// Adam (L2 weight decay added to the gradient) and AdamW (decoupled weight decay), with
// amsgrad and maximize, as PyTorch 1.13. The update is one fused loop per parameter tensor.

#include <tuple>

#include "ember/optim/optimizer.h"

namespace ember::optim {

// (beta1, beta2): decay rates of the running averages of the gradient and its square.
using Betas = std::tuple<double, double>;

struct AdamOptions : OptimizerCloneableOptions<AdamOptions> {
  AdamOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: implicit, as libtorch's
  EMBER_OPTIM_ARG(double, lr);
  EMBER_OPTIM_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  EMBER_OPTIM_ARG(double, eps) = 1e-8;
  EMBER_OPTIM_ARG(double, weight_decay) = 0;
  EMBER_OPTIM_ARG(bool, amsgrad) = false;
  EMBER_OPTIM_ARG(bool, maximize) = false;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  bool has_momentum() const override { return true; }
  double get_momentum() const override { return std::get<0>(betas_); }
  void set_momentum(double m) override { std::get<0>(betas_) = m; }
  void to_value(Value& group) const override;
  void from_value(const Value& group) override;
  void validate(const char* op) const override;
};

// AdamW's options: as Adam's, but weight_decay defaults to 1e-2.
struct AdamWOptions : OptimizerCloneableOptions<AdamWOptions> {
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: implicit, as libtorch's
  EMBER_OPTIM_ARG(double, lr);
  EMBER_OPTIM_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  EMBER_OPTIM_ARG(double, eps) = 1e-8;
  EMBER_OPTIM_ARG(double, weight_decay) = 1e-2;
  EMBER_OPTIM_ARG(bool, amsgrad) = false;
  EMBER_OPTIM_ARG(bool, maximize) = false;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  bool has_momentum() const override { return true; }
  double get_momentum() const override { return std::get<0>(betas_); }
  void set_momentum(double m) override { std::get<0>(betas_) = m; }
  void to_value(Value& group) const override;
  void from_value(const Value& group) override;
  void validate(const char* op) const override;
};

// State per parameter: "step", "exp_avg", "exp_avg_sq", and "max_exp_avg_sq" with amsgrad.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& defaults = {})
      : Adam(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  Adam(std::vector<OptimizerParamGroup> groups, const AdamOptions& defaults = {})
      : Optimizer(std::move(groups), defaults.clone(), "Adam") {}

 protected:
  void update(OptimizerParamGroup& group) override;
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& defaults = {})
      : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  AdamW(std::vector<OptimizerParamGroup> groups, const AdamWOptions& defaults = {})
      : Optimizer(std::move(groups), defaults.clone(), "AdamW") {}

 protected:
  void update(OptimizerParamGroup& group) override;
};

}  // namespace ember::optim
