#pragma once
// Pooling (torch.nn.functional.max_pool2d, avg_pool2d, adaptive_avg_pool2d and the 1-D
// forms). Inputs are (N, C, H, W) or unbatched (C, H, W) ((N, C, L) / (C, L) for 1-D);
// float32/float64, float16/bfloat16 computed in float32. kernel_size, stride, padding and
// dilation take one value for every spatial dim or one per dim; an empty stride means
// stride = kernel_size, as in PyTorch.

#include <cstdint>
#include <optional>
#include <tuple>

#include "ember/core/tensor.h"

namespace ember {

Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
// The maxima and, as int64, the flat index ih * W + iw of each maximum within its plane.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                   IntArrayRef dilation = 1, bool ceil_mode = false);
// Window means. count_include_pad counts padded zeros in the divisor; divisor_override
// replaces the divisor.
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
// Means over output_size (OH, OW) windows that cover the input as evenly as possible.
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);

Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);

}  // namespace ember
