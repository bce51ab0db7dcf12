#pragma once
// Internal: fused normalisation kernels (batch norm, layer norm) for float32 and float64.
// All tensors are contiguous and share the input's dtype. Statistics are accumulated in
// double in a fixed order: batch norm parallelises over channels, layer norm over rows
// (its weight/bias gradients sum per-chunk partials in chunk order), so results are
// bit-identical for any number of threads.

#include <cstdint>

#include "ember/core/tensor.h"

namespace ember::kernels::cpu {

// The input of batch norm viewed as [n, c, s] (s = product of the spatial dims).
struct BatchNormShape {
  int64_t n, c, s;
};

// Training forward: per-channel batch mean and biased variance (two passes over each
// channel), invstd = 1/sqrt(var + eps), out = (x - mean) * invstd * weight + bias.
// weight/bias may be undefined (1 and 0). mean, var, invstd: [c].
void batch_norm_train_forward(const Tensor& out, const Tensor& mean, const Tensor& var, const Tensor& invstd,
                              const Tensor& input, const Tensor& weight, const Tensor& bias, double eps,
                              BatchNormShape s);
// Forward with given statistics: out = (x - mean) * invstd * weight + bias.
void batch_norm_apply(const Tensor& out, const Tensor& input, const Tensor& mean, const Tensor& invstd,
                      const Tensor& weight, const Tensor& bias, BatchNormShape s);
// Backward of either forward (any of grad_input/grad_weight/grad_bias may be undefined).
// training: mean/invstd are the batch statistics and the gradient flows through them too.
void batch_norm_backward(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                         const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& invstd,
                         const Tensor& weight, bool training, BatchNormShape s);

// Layer norm over the rows of a [rows, cols] input: mean/rstd [rows]; weight/bias [cols]
// or undefined.
void layer_norm_forward(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& input,
                        const Tensor& weight, const Tensor& bias, double eps, int64_t rows, int64_t cols);
void layer_norm_backward(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                         const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd,
                         const Tensor& weight, int64_t rows, int64_t cols);

}  // namespace ember::kernels::cpu
