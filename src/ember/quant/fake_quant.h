#pragma once
// Fake quantization (torch.fake_quantize_per_tensor_affine / _per_channel_affine): values
// rounded onto an int8 grid and back to float32, differentiable with the straight-through
// estimator, for quantization-aware training (quant/qat.h, docs/quantization.md).
//
// Note [Fake quantization]: with r = round_half_even(x * (1 / scale)) + zero_point (float32),
//   forward:  (clamp(r, quant_min, quant_max) - zero_point) * scale
//   backward: grad * (quant_min <= r <= quant_max)
// i.e. the rounding passes the gradient through unchanged and the clamp stops it outside the
// grid's range, as torch 1.13's CPU kernels compute it. Only the input gets a gradient (the
// scale and zero point are not learned).

#include <cstdint>

#include "ember/core/tensor.h"

namespace ember::quant {

// input float32 (any shape and strides) -> float32 on the grid scale * (q - zero_point), q in
// quant_min..quant_max. Needs quant_min <= zero_point <= quant_max and a positive, finite scale.
Tensor fake_quantize_per_tensor_affine(const Tensor& input, double scale, int64_t zero_point, int64_t quant_min,
                                       int64_t quant_max);

// One grid per index along `axis` (0 <= axis < input.dim()): scale float32 [input.size(axis)],
// zero_point int32 or int64 of the same size.
Tensor fake_quantize_per_channel_affine(const Tensor& input, const Tensor& scale, const Tensor& zero_point,
                                        int64_t axis, int64_t quant_min, int64_t quant_max);

}  // namespace ember::quant
