#pragma once
// Internal: fused CPU update loops for the optimizers (src/ember/optim). One pass over
// each parameter tensor, no temporaries. All tensors are contiguous, of one floating
// dtype (float32 or float64) and the same numel; the optimizer has checked that.
// The arithmetic follows PyTorch 1.13's op sequence element by element: scalars are
// rounded to the tensor's dtype where torch rounds them, `a.add_(b, alpha)` is a fused
// multiply-add (ATen's vectorised add), addcmul/addcdiv are `a + (v * b) * c` and
// `a + (v * b) / c`.

#include <cstdint>

#include "ember/core/tensor.h"

namespace ember::kernels::cpu {

struct AdamStep {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;     // already incremented (1 on the first update)
  bool amsgrad, maximize;
  bool decoupled;   // AdamW: p *= 1 - lr * weight_decay instead of L2 in the gradient
};
// max_exp_avg_sq is undefined unless amsgrad.
void adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
               const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamStep& s);

struct SgdStep {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
  bool init_buffer;  // the momentum buffer was just created: buf = d_p
};
// momentum_buffer is undefined when momentum == 0.
void sgd_step(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const SgdStep& s);

struct RmspropStep {
  double lr, alpha, eps, weight_decay, momentum;
  bool centered, maximize;
};
// grad_avg is undefined unless centered; momentum_buffer undefined unless momentum > 0.
void rmsprop_step(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                  const Tensor& grad_avg, const Tensor& momentum_buffer, const RmspropStep& s);

struct AdagradStep {
  double clr, eps, weight_decay;  // clr = lr / (1 + (step - 1) * lr_decay)
  bool maximize;
};
void adagrad_step(const Tensor& param, const Tensor& grad, const Tensor& sum, const AdagradStep& s);

}  // namespace ember::kernels::cpu
