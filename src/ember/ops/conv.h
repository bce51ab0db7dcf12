#pragma once
// Convolutions (torch.conv1d, conv2d, conv_transpose1d, conv_transpose2d). Inputs are
// channels-first: (N, C, L) / (N, C, H, W), or unbatched (C, L) / (C, H, W). Weights are
// (out, in / groups, k...) for convolutions and (in, out / groups, k...) for transposed
// ones. float32/float64; float16/bfloat16 are computed in float32. stride, padding,
// dilation and output_padding take one value for every spatial dim or one per dim.

#include <cstdint>

#include "ember/core/tensor.h"

namespace ember {

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
// padding "same" (output length = input length; stride must be 1) or "valid" (no padding).
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              const char* padding, IntArrayRef dilation = 1, int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              const char* padding, IntArrayRef dilation = 1, int64_t groups = 1);

// A literal 0 for padding would otherwise pick the string overloads (a null pointer).
inline Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, int padding,
                     IntArrayRef dilation = 1, int64_t groups = 1) {
  const int64_t p = padding;
  return conv1d(input, weight, bias, stride, IntArrayRef(p), dilation, groups);
}
inline Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, int padding,
                     IntArrayRef dilation = 1, int64_t groups = 1) {
  const int64_t p = padding;
  return conv2d(input, weight, bias, stride, IntArrayRef(p), dilation, groups);
}

// The gradient of conv with respect to its input, as a layer: output size per dim is
// (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1.
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);

}  // namespace ember
