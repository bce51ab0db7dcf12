#pragma once
// Gradient clipping, as libtorch's torch::nn::utils::clip_grad_norm_ / clip_grad_value_.

#include <vector>

#include "ember/core/tensor.h"

namespace ember::nn::utils {

// Scales the gradients of `parameters` in place so that their total norm (the norm of the
// vector of all gradients; norm_type may be infinity) is at most max_norm, with PyTorch
// 1.13's arithmetic: coef = min(max_norm / (total_norm + 1e-6), 1). Returns the total norm
// before clipping. Parameters without a gradient are skipped. With error_if_nonfinite a
// NaN/inf total norm throws instead of scaling.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient element into [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
void clip_grad_value_(const Tensor& parameter, double clip_value);

}  // namespace ember::nn::utils
