#include "ember/nn/loss.h"

#include <limits>
#include <optional>

#include "ember/amp/autocast.h"
#include "ember/autograd/functions_loss.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/pointwise.h"
#include "ember/jit/trace_hook.h"
#include "ember/kernels/cpu/reduce.h"

namespace ember::nn {

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::None: return "none";
    case Reduction::Mean: return "mean";
    case Reduction::Sum: return "sum";
    case Reduction::BatchMean: return "batchmean";
  }
  return "?";
}

namespace functional {

namespace {

Tensor reduce(const Tensor& loss, Reduction r, const char* op) {
  switch (r) {
    case Reduction::None: return loss;
    case Reduction::Sum: return loss.sum();
    case Reduction::Mean: return loss.mean();
    case Reduction::BatchMean:
      EMBER_ERROR("[", op, "] reduction 'batchmean' is only for kl_div; use mean, sum or none");
  }
  return loss;
}

void check_same_size(const Tensor& input, const Tensor& target, const char* op) {
  EMBER_CHECK(input.defined() && target.defined(), "[", op, "] called with an undefined tensor");
  EMBER_CHECK(input.sizes() == target.sizes(), "[", op, "] target size ", target.sizes(),
              " must be the same as input size ", input.sizes(),
              " (broadcasting here is usually a bug; reshape the target)");
}

// Class dim 1 (or 0 for an unbatched [C] input) moved last and flattened: [M, C].
Tensor classes_last(const Tensor& input) {
  if (input.dim() == 1) return input.unsqueeze(0);
  if (input.dim() == 2) return input;
  return input.movedim(1, -1).reshape({-1, input.size(1)});
}

// Expected target sizes of nll_loss / cross_entropy with class indices: the input's
// without the class dim (dim 1, or 0 for an unbatched [C] input).
DimVector class_target_sizes(const Tensor& input, const Tensor& target) {
  DimVector expect;
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (d != (input.dim() == 1 ? 0 : 1)) expect.push_back(input.size(d));
  }
  EMBER_CHECK(target.sizes() == IntArrayRef(expect), "[nll_loss] target of sizes ", target.sizes(),
              " does not match input of sizes ", input.sizes(), " (expected target sizes ", expect, ")");
  return expect;
}

void check_class_weight(const Tensor& weight, int64_t classes) {
  EMBER_CHECK(weight.dim() == 1 && weight.size(0) == classes, "[nll_loss] weight must have one entry per class (",
              classes, "), got sizes ", weight.sizes());
}

// cross_entropy with class indices through the fused kernel (Note [Fused cross entropy] in
// kernels/cpu/reduce.cpp), or nullopt where the composite path must run: probabilities as
// target, label smoothing, other dtypes, a weight that requires grad, or a trace in progress
// (the graph records the composite's ops).
std::optional<Tensor> fused_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                                          int64_t ignore_index, Reduction r, double label_smoothing) {
  if (label_smoothing != 0 || (target.dtype() != kInt64 && target.dtype() != kInt32)) return std::nullopt;
  if ((input.dtype() != kFloat32 && input.dtype() != kFloat64) || input.dim() < 1) return std::nullopt;
  if (weight.defined() && weight.requires_grad()) return std::nullopt;
  if (jit::detail::tl_recorder != nullptr) return std::nullopt;
  if (r != Reduction::None && r != Reduction::Sum && r != Reduction::Mean) {
    EMBER_ERROR("[cross_entropy] unsupported reduction '", reduction_name(r), "'");
  }
  const int64_t classes = input.dim() == 1 ? input.size(0) : input.size(1);
  const DimVector expect = class_target_sizes(input, target);
  if (weight.defined()) check_class_weight(weight, classes);
  const Tensor t = target.reshape({-1}).to(kInt64).contiguous();
  const int64_t* tp = t.data_ptr<int64_t>();
  int64_t kept = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (tp[i] == ignore_index) continue;
    EMBER_CHECK(tp[i] >= 0 && tp[i] < classes, "[nll_loss] target contains a class index outside [0, ", classes,
                ") (ignore_index is ", ignore_index, ")");
    ++kept;
  }
  const Tensor x = classes_last(input).contiguous();  // [M, C]; differentiable view/copy
  const int64_t rows = x.size(0);
  Tensor losses = empty({rows}, TensorOptions(x.dtype()));
  Tensor lse = empty({rows}, TensorOptions(x.dtype()));
  if (x.numel() > 0) {
    kernels::cpu::cross_entropy_forward(losses, lse, x, t, ignore_index);
  } else {
    losses.zero_();
    lse.fill_(-std::numeric_limits<double>::infinity());
  }
  if (autograd::needs_grad(x)) autograd::fn::cross_entropy(losses, x, t, lse, ignore_index);
  Tensor total_weight;
  if (weight.defined()) {
    const Tensor safe = where(t != ignore_index, t, zeros_like(t));
    const Tensor w = weight.to(input.dtype()).index_select(0, safe) * (t != ignore_index).to(input.dtype());
    losses = losses * w;
    if (r == Reduction::Mean) total_weight = w.sum();
  }
  switch (r) {
    case Reduction::None: return input.dim() == 1 ? losses.squeeze(0) : losses.reshape(expect);
    case Reduction::Sum: return losses.sum();
    default:
      return total_weight.defined() ? losses.sum() / total_weight : losses.sum() / static_cast<double>(kept);
  }
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction r) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("mse_loss"), input, target)) return mse_loss((*c)[0], (*c)[1], r);
  }
  OpScope scope("mse_loss", {&input, &target});
  check_same_size(input, target, "mse_loss");
  Tensor d = input - target;
  return reduce(d * d, r, "mse_loss");
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction r) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("l1_loss"), input, target)) return l1_loss((*c)[0], (*c)[1], r);
  }
  OpScope scope("l1_loss", {&input, &target});
  check_same_size(input, target, "l1_loss");
  return reduce((input - target).abs(), r, "l1_loss");
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction r, double beta) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("smooth_l1_loss"), input, target)) return smooth_l1_loss((*c)[0], (*c)[1], r, beta);
  }
  OpScope scope("smooth_l1_loss", {&input, &target});
  check_same_size(input, target, "smooth_l1_loss");
  EMBER_CHECK(beta >= 0, "[smooth_l1_loss] beta must be non-negative, got ", beta);
  Tensor d = (input - target).abs();
  if (beta == 0) return reduce(d, r, "smooth_l1_loss");
  return reduce(where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), r, "smooth_l1_loss");
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction r, double delta) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("huber_loss"), input, target)) return huber_loss((*c)[0], (*c)[1], r, delta);
  }
  OpScope scope("huber_loss", {&input, &target});
  check_same_size(input, target, "huber_loss");
  EMBER_CHECK(delta > 0, "[huber_loss] delta must be positive, got ", delta);
  Tensor d = (input - target).abs();
  return reduce(where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta), r, "huber_loss");
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index, Reduction r) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("nll_loss"), input, target, weight)) return nll_loss((*c)[0], (*c)[1], (*c)[2], ignore_index, r);
  }
  OpScope scope("nll_loss", {&input, &target, &weight});
  EMBER_CHECK(input.defined() && target.defined(), "[nll_loss] called with an undefined tensor");
  EMBER_CHECK(target.dtype() == kInt64 || target.dtype() == kInt32, "[nll_loss] expected class indices of dtype int64 ",
              "as target, got ", target.dtype(), " (for probabilities use cross_entropy with a floating target)");
  EMBER_CHECK(input.dim() >= 1, "[nll_loss] input must have a class dimension, got sizes ", input.sizes());
  const int64_t classes = input.dim() == 1 ? input.size(0) : input.size(1);
  const DimVector expect = class_target_sizes(input, target);
  Tensor lp = classes_last(input);                  // [M, C]
  Tensor t = target.reshape({-1}).to(kInt64);       // [M]
  Tensor valid = t != ignore_index;
  Tensor bad = valid.logical_and(t.lt(0).logical_or(t.ge(classes)));
  EMBER_CHECK(!bad.any().item<bool>(), "[nll_loss] target contains a class index outside [0, ", classes,
              ") (ignore_index is ", ignore_index, ")");
  Tensor safe = where(valid, t, zeros_like(t));
  Tensor picked = -lp.gather(1, safe.unsqueeze(1)).squeeze(1);  // [M]
  Tensor w = valid.to(input.dtype());
  if (weight.defined()) {
    check_class_weight(weight, classes);
    w = w * weight.to(input.dtype()).index_select(0, safe);
  }
  Tensor losses = picked * w;
  switch (r) {
    case Reduction::None: return input.dim() == 1 ? losses.squeeze(0) : losses.reshape(expect);
    case Reduction::Sum: return losses.sum();
    case Reduction::Mean: return losses.sum() / w.sum();
    default: EMBER_ERROR("[nll_loss] unsupported reduction '", reduction_name(r), "'");
  }
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     Reduction r, double label_smoothing) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("cross_entropy"), input, target, weight)) return cross_entropy((*c)[0], (*c)[1], (*c)[2], ignore_index, r, label_smoothing);
  }
  OpScope scope("cross_entropy", {&input, &target, &weight});
  EMBER_CHECK(input.defined() && target.defined(), "[cross_entropy] called with an undefined tensor");
  EMBER_CHECK(label_smoothing >= 0 && label_smoothing <= 1,
              "[cross_entropy] label_smoothing must be between 0.0 and 1.0, got ", label_smoothing);
  if (auto fused = fused_cross_entropy(input, target, weight, ignore_index, r, label_smoothing)) return *fused;
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t classes = input.size(class_dim);
  Tensor lp = input.log_softmax(class_dim);
  if (is_floating_point(target.dtype())) {
    // Class probabilities.
    check_same_size(input, target, "cross_entropy");
    Tensor tgt = label_smoothing > 0 ? target * (1 - label_smoothing) + label_smoothing / classes : target;
    Tensor prod = lp * tgt;
    if (weight.defined()) {
      DimVector shape(input.dim(), 1);
      shape[class_dim] = classes;
      prod = prod * weight.to(input.dtype()).reshape(shape);
    }
    Tensor losses = -prod.sum({class_dim});
    switch (r) {
      case Reduction::None: return losses;
      case Reduction::Sum: return losses.sum();
      case Reduction::Mean: return input.dim() == 1 ? losses : losses.sum() / static_cast<double>(losses.numel());
      default: EMBER_ERROR("[cross_entropy] unsupported reduction '", reduction_name(r), "'");
    }
  }
  Tensor nll = nll_loss(lp, target, weight, ignore_index, r);
  if (label_smoothing == 0) return nll;
  // Smoothing term: the mean over classes of -log p (weighted), over the kept positions.
  Tensor lpm = classes_last(lp);
  Tensor t = target.reshape({-1}).to(kInt64);
  Tensor valid = (t != ignore_index).to(input.dtype());
  Tensor per_class = weight.defined() ? lpm * weight.to(input.dtype()).unsqueeze(0) : lpm;
  Tensor smooth = -per_class.sum({1}) * valid;  // [M]
  Tensor smooth_red;
  switch (r) {
    case Reduction::None: {
      DimVector shape;
      for (int64_t d = 0; d < input.dim(); ++d) {
        if (d != class_dim) shape.push_back(input.size(d));
      }
      smooth_red = smooth.reshape(shape);
      break;
    }
    case Reduction::Sum: smooth_red = smooth.sum(); break;
    case Reduction::Mean:
      if (weight.defined()) {
        Tensor safe = where(t != ignore_index, t, zeros_like(t));
        smooth_red = smooth.sum() / (weight.to(input.dtype()).index_select(0, safe) * valid).sum();
      } else {
        smooth_red = smooth.sum() / valid.sum();
      }
      break;
    default: EMBER_ERROR("[cross_entropy] unsupported reduction '", reduction_name(r), "'");
  }
  return nll * (1 - label_smoothing) + smooth_red * (label_smoothing / classes);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction r) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("binary_cross_entropy"), input, target, weight)) return binary_cross_entropy((*c)[0], (*c)[1], (*c)[2], r);
  }
  OpScope scope("binary_cross_entropy", {&input, &target, &weight});
  check_same_size(input, target, "binary_cross_entropy");
  EMBER_CHECK(((input >= 0).logical_and(input <= 1)).all().item<bool>(),
              "[binary_cross_entropy] all elements of input should be between 0 and 1 (apply sigmoid, or use "
              "binary_cross_entropy_with_logits, which is also more stable)");
  // log is clamped at -100, as PyTorch does, so that p = 0 or 1 gives a finite loss.
  Tensor loss = -(target * input.log().clamp_min(-100) + (-target + 1) * (-input + 1).log().clamp_min(-100));
  if (weight.defined()) loss = loss * weight;
  return reduce(loss, r, "binary_cross_entropy");
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, Reduction r) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("binary_cross_entropy_with_logits"), input, target, weight, pos_weight)) return binary_cross_entropy_with_logits((*c)[0], (*c)[1], (*c)[2], (*c)[3], r);
  }
  OpScope scope("binary_cross_entropy_with_logits", {&input, &target, &weight, &pos_weight});
  check_same_size(input, target, "binary_cross_entropy_with_logits");
  // -log(sigmoid(x)) = softplus(-x) (linear past its threshold, so no overflow; its
  // gradient at 0 is -1/2, as PyTorch's).
  Tensor log_sig_neg = (-input).softplus();
  Tensor loss;
  if (pos_weight.defined()) {
    Tensor lw = (pos_weight - 1) * target + 1;
    loss = (-target + 1) * input + lw * log_sig_neg;
  } else {
    loss = (-target + 1) * input + log_sig_neg;
  }
  if (weight.defined()) loss = loss * weight;
  return reduce(loss, r, "binary_cross_entropy_with_logits");
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction r, bool log_target) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("kl_div"), input, target)) return kl_div((*c)[0], (*c)[1], r, log_target);
  }
  OpScope scope("kl_div", {&input, &target});
  EMBER_CHECK(input.defined() && target.defined(), "[kl_div] called with an undefined tensor");
  Tensor loss;
  if (log_target) {
    loss = target.exp() * (target - input);
  } else {
    // target * (log target - input), with 0 * log 0 = 0.
    Tensor pos = target > 0;
    Tensor safe_log = where(pos, target, ones_like(target)).log();
    loss = where(pos, target * (safe_log - input), zeros_like(target * input));
  }
  if (r == Reduction::BatchMean) {
    const double n = input.dim() > 0 ? static_cast<double>(input.size(0)) : 1.0;
    return loss.sum() / n;
  }
  return reduce(loss, r, "kl_div");
}

}  // namespace functional

std::string LossModule::extra_repr() const { return ""; }

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& o) : LossModule("CrossEntropyLoss"), options(o) {
  reduction = o.reduction();
}

Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::cross_entropy(input, target, options.weight(), options.ignore_index(), reduction,
                                   options.label_smoothing());
}

NLLLossImpl::NLLLossImpl(const CrossEntropyLossOptions& o) : LossModule("NLLLoss"), options(o) {
  reduction = o.reduction();
}

Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::nll_loss(input, target, options.weight(), options.ignore_index(), reduction);
}

}  // namespace ember::nn
