#pragma once
// Loss functions (functional forms and modules), as torch.nn: numerically stable
// (log-softmax, log-sum-exp forms) and with PyTorch's reductions and defaults.

#include <optional>
#include <string>

#include "ember/nn/module.h"
#include "ember/nn/functional_options.h"
#include "ember/nn/options.h"

namespace ember::nn {

namespace functional {

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                      double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0);
// input: log-probabilities [N, C] or [N, C, d1, ...]; target: class indices [N] / [N, d1, ...].
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {}, int64_t ignore_index = -100,
                Reduction reduction = Reduction::Mean);
// input: logits [N, C] or [N, C, d1, ...] (or [C]); target: class indices (int64) or
// probabilities (floating, same shape as input).
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                     int64_t ignore_index = -100, Reduction reduction = Reduction::Mean,
                     double label_smoothing = 0.0);
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            Reduction reduction = Reduction::Mean);
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                        const Tensor& pos_weight = {}, Reduction reduction = Reduction::Mean);
// input: log-probabilities; target: probabilities (or log-probabilities with log_target).
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
              bool log_target = false);

}  // namespace functional

// Loss modules hold their options and call the functional form: loss(input, target).
class LossModule : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  Reduction reduction = Reduction::Mean;
  std::string extra_repr() const override;
};

#define EMBER_LOSS(Name, call)                                                                  \
  class Name##Impl : public LossModule {                                                       \
   public:                                                                                     \
    explicit Name##Impl(Reduction r = Reduction::Mean) : LossModule(#Name) { reduction = r; } \
    explicit Name##Impl(const Name##Options& o) : Name##Impl(o.reduction()) {}                  \
    Tensor forward(const Tensor& input, const Tensor& target) override { return call; }       \
    std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override { return std::make_shared<Name##Impl>(reduction); } \
  };                                                                                           \
  EMBER_MODULE(Name)

EMBER_LOSS(MSELoss, functional::mse_loss(input, target, reduction));
EMBER_LOSS(L1Loss, functional::l1_loss(input, target, reduction));
#undef EMBER_LOSS

class SmoothL1LossImpl : public LossModule {
 public:
  explicit SmoothL1LossImpl(Reduction r = Reduction::Mean, double beta = 1.0) : LossModule("SmoothL1Loss"), beta(beta) {
    reduction = r;
  }
  // SmoothL1Loss(torch::kNone): a reduction tag alone.
  template <typename Tag, typename = std::enable_if_t<std::is_class_v<Tag> && std::is_convertible_v<Tag, Reduction>>>
  explicit SmoothL1LossImpl(Tag tag) : SmoothL1LossImpl(Reduction(tag)) {}
  explicit SmoothL1LossImpl(const SmoothL1LossOptions& o) : SmoothL1LossImpl(o.reduction(), o.beta()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::smooth_l1_loss(input, target, reduction, beta);
  }
  double beta;
};
EMBER_MODULE(SmoothL1Loss);

class HuberLossImpl : public LossModule {
 public:
  explicit HuberLossImpl(Reduction r = Reduction::Mean, double delta = 1.0) : LossModule("HuberLoss"), delta(delta) {
    reduction = r;
  }
  // SmoothL1Loss(torch::kNone): a reduction tag alone.
  template <typename Tag, typename = std::enable_if_t<std::is_class_v<Tag> && std::is_convertible_v<Tag, Reduction>>>
  explicit HuberLossImpl(Tag tag) : HuberLossImpl(Reduction(tag)) {}
  explicit HuberLossImpl(const HuberLossOptions& o) : HuberLossImpl(o.reduction(), o.delta()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::huber_loss(input, target, reduction, delta);
  }
  double delta;
};
EMBER_MODULE(HuberLoss);

struct CrossEntropyLossOptions {
  CrossEntropyLossOptions& weight(Tensor w) {
    weight_ = std::move(w);
    return *this;
  }
  CrossEntropyLossOptions& ignore_index(int64_t i) {
    ignore_index_ = i;
    return *this;
  }
  CrossEntropyLossOptions& reduction(Reduction r) {
    reduction_ = r;
    return *this;
  }
  CrossEntropyLossOptions& label_smoothing(double s) {
    label_smoothing_ = s;
    return *this;
  }
  const Tensor& weight() const { return weight_; }
  int64_t ignore_index() const { return ignore_index_; }
  Reduction reduction() const { return reduction_; }
  double label_smoothing() const { return label_smoothing_; }

 private:
  Tensor weight_;
  int64_t ignore_index_ = -100;
  Reduction reduction_ = Reduction::Mean;
  double label_smoothing_ = 0.0;
};

class CrossEntropyLossImpl : public LossModule {
 public:
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override { return std::make_shared<CrossEntropyLossImpl>(options); }
  CrossEntropyLossOptions options;
};
EMBER_MODULE(CrossEntropyLoss);

class NLLLossImpl : public LossModule {
 public:
  explicit NLLLossImpl(const CrossEntropyLossOptions& options = {});
  explicit NLLLossImpl(const NLLLossOptions& o)
      : NLLLossImpl(CrossEntropyLossOptions().weight(o.weight()).ignore_index(o.ignore_index()).reduction(o.reduction())) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override { return std::make_shared<NLLLossImpl>(options); }
  CrossEntropyLossOptions options;  // label_smoothing unused
};
EMBER_MODULE(NLLLoss);

class BCELossImpl : public LossModule {
 public:
  explicit BCELossImpl(Reduction r = Reduction::Mean, Tensor weight = {}) : LossModule("BCELoss"), weight(std::move(weight)) {
    reduction = r;
  }
  explicit BCELossImpl(const BCELossOptions& o) : BCELossImpl(o.reduction(), o.weight()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::binary_cross_entropy(input, target, weight, reduction);
  }
  Tensor weight;
};
EMBER_MODULE(BCELoss);

class BCEWithLogitsLossImpl : public LossModule {
 public:
  explicit BCEWithLogitsLossImpl(Reduction r = Reduction::Mean, Tensor weight = {}, Tensor pos_weight = {})
      : LossModule("BCEWithLogitsLoss"), weight(std::move(weight)), pos_weight(std::move(pos_weight)) {
    reduction = r;
  }
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& o)
      : BCEWithLogitsLossImpl(o.reduction(), o.weight(), o.pos_weight()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction);
  }
  Tensor weight, pos_weight;
};
EMBER_MODULE(BCEWithLogitsLoss);

class KLDivLossImpl : public LossModule {
 public:
  explicit KLDivLossImpl(Reduction r = Reduction::Mean, bool log_target = false)
      : LossModule("KLDivLoss"), log_target(log_target) {
    reduction = r;
  }
  explicit KLDivLossImpl(const KLDivLossOptions& o) : KLDivLossImpl(o.reduction(), o.log_target()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::kl_div(input, target, reduction, log_target);
  }
  bool log_target;
};
EMBER_MODULE(KLDivLoss);

}  // namespace ember::nn
