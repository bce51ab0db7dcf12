#include "ember/optim/clip_grad.h"

#include <cmath>
#include <limits>

#include "ember/amp/grad_scaler.h"
#include "ember/autograd/autograd_meta.h"
#include "ember/core/warning.h"
#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"

namespace ember::nn::utils {

namespace {
// Clipping changes the gradients in place but clears nothing: the count of backward passes
// in them stays (Note [Counting accumulations], autograd/node.cpp).
void keep_accumulation_counts(const std::vector<Tensor>& parameters) {
  for (const Tensor& p : parameters) {
    autograd::AutogradMeta* meta = p.defined() ? p.impl()->autograd_meta() : nullptr;
    if (meta && meta->grad.defined()) meta->grad_version = meta->grad._version();
  }
}

// Note [Clipping scaled gradients]: after GradScaler::scale(loss).backward() the gradients
// are multiplied by the scale (65536 at first), so a max_norm meant for true gradients
// clips them to almost nothing. The scaler must unscale_ first; warn once per scaler.
void warn_if_scaled(const char* op) {
  bool first_time = false;
  const double scale = amp::detail::scaled_gradients_pending(&first_time);
  if (scale == 0 || !first_time) return;
  warn(::ember::detail::str_cat("[", op, "] the gradients are still multiplied by GradScaler's scale (", scale,
                       "): call scaler.unscale_(optimizer) before clipping, otherwise max_norm applies to the "
                       "scaled gradients"));
}
}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  OpScope scope("clip_grad_norm_");
  NoGradGuard no_grad;
  warn_if_scaled("clip_grad_norm_");
  EMBER_CHECK(!std::isnan(norm_type) && norm_type > 0, "[clip_grad_norm_] norm_type must be positive (or inf), got ",
              norm_type);
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters) {
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return 0.0;
  std::vector<Tensor> norms;
  Tensor total;
  if (std::isinf(norm_type)) {
    for (const Tensor& g : grads) norms.push_back(g.detach().abs().max());
    total = norms.size() == 1 ? norms[0] : stack(norms).max();
  } else {
    for (const Tensor& g : grads) norms.push_back(g.detach().norm(norm_type));
    total = stack(norms).norm(norm_type);
  }
  const double total_norm = total.item<double>();
  EMBER_CHECK(!error_if_nonfinite || std::isfinite(total_norm), "[clip_grad_norm_] The total norm of order ",
              norm_type, " for gradients from `parameters` is non-finite (", total_norm,
              "), so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
              "anyway, set `error_if_nonfinite=false`");
  // PyTorch computes max_norm / (total + 1e-6) as reciprocal() * max_norm in the norm's dtype.
  const Tensor coef = (total + 1e-6).reciprocal().mul(max_norm).clamp_max(1.0);
  for (const Tensor& g : grads) Tensor(g).mul_(coef.to(g.dtype()));
  keep_accumulation_counts(parameters);
  return total_norm;
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type, bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  OpScope scope("clip_grad_value_");
  NoGradGuard no_grad;
  for (const Tensor& p : parameters) {
    if (p.defined() && p.grad().defined()) Tensor(p.grad()).clamp_(-clip_value, clip_value);
  }
  keep_accumulation_counts(parameters);
}

void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

}  // namespace ember::nn::utils
