#pragma once
// Quantized tensor ops of static int8 inference (docs/quantization.md): the functions the
// converted modules (QuantizedConv2d, StaticQuantizedLinear, QuantizedMaxPool2d) run, what
// a traced quantized graph records, and what the ONNX exporter turns into QDQ nodes.
//
// Note [Activation codes]: ember has no quantized dtype. Between quantized layers an
// activation travels as a plain uint8 tensor of codes q in 0..127 whose real value is
// scale * (q - zero_point); the scale and zero point are not carried by the tensor but
// stored by the layers on both sides (convert() gives a consumer the producer's output
// parameters). A 4-D code tensor made by quantized_conv2d or quantized_max_pool2d has sizes
// [N, C, H, W] and channels-last strides ([H*W*C, 1, W*C, C]), the layout the int8 kernels
// read; any other layout is accepted (and copied). Every op also takes float32 input,
// quantizing it first with the input parameters.

#include <cstdint>
#include <optional>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::quant {

// The activation codes of static quantization (torch's quint8 with reduce_range: Note [int8
// GEMM] in kernels/cpu/qgemm.h says why 7 bits).
inline constexpr int64_t kActCodeMin = 0, kActCodeMax = 127;

// float32 (any shape and strides) -> uint8 codes clamp(round_half_even(x * (1 / scale)) +
// zero_point, quant_min, quant_max), contiguous. 0 <= quant_min <= zero_point <= quant_max <= 255.
Tensor quantize_per_tensor(const Tensor& input, double scale, int64_t zero_point, int64_t quant_min = kActCodeMin,
                           int64_t quant_max = kActCodeMax);
// uint8 codes -> float32 (q - zero_point) * scale, contiguous.
Tensor dequantize_per_tensor(const Tensor& codes, double scale, int64_t zero_point);

// Static int8 2-D convolution (torch.ops.quantized.conv2d / conv2d_relu): input [N, C, H, W]
// (or [C, H, W]) as uint8 codes or float32; qweight int8 [OC, C / groups, KH, KW] with
// weight_scales float32 [OC] (per output channel, symmetric, zero point 0); bias float32
// [OC] or undefined. The int32 sums are requantized onto the output grid (relu: codes below
// output_zero_point clamp to it). output_dtype kUInt8: codes, channels-last; kFloat32: their
// values (q - output_zero_point) * output_scale, contiguous. Zero padding (the input's zero
// point in codes).
Tensor quantized_conv2d(const Tensor& input, const Tensor& qweight, const Tensor& weight_scales, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups,
                        double input_scale, int64_t input_zero_point, double output_scale,
                        int64_t output_zero_point, bool relu = false, DType output_dtype = kUInt8);

// Static int8 linear (torch.ops.quantized.linear / linear_relu): input [..., K] as uint8 codes
// or float32; qweight int8 [N, K], weight_scales float32 [N], bias float32 [N] or undefined.
// Output [..., N]: codes (kUInt8) or their float32 values, contiguous.
Tensor quantized_linear(const Tensor& input, const Tensor& qweight, const Tensor& weight_scales, const Tensor& bias,
                        double input_scale, int64_t input_zero_point, double output_scale, int64_t output_zero_point,
                        bool relu = false, DType output_dtype = kUInt8);

// 2-D max pooling of uint8 codes (the max of codes is the code of the max, so the output keeps
// the input's scale and zero point): input [N, C, H, W] or [C, H, W], output channels-last
// codes. Arguments as ember::max_pool2d.
Tensor quantized_max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                            IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false);

// Element-wise sum of two activations on their own grids, onto the output grid
// (torch.ops.quantized.add / add_relu): each input is uint8 codes, or float32 values that are
// quantized with that input's parameters first; the shapes broadcast. Each output element is
// clamp(round_half_even((a_scale * (qa - a_zp) + b_scale * (qb - b_zp)) * (1 / output_scale))
// + output_zero_point, relu ? output_zero_point : 0, 127). output_dtype kUInt8: codes
// (channels-last when both inputs are channels-last codes of the same sizes, else contiguous);
// kFloat32: their values.
Tensor quantized_add(const Tensor& a, double a_scale, int64_t a_zero_point, const Tensor& b, double b_scale,
                     int64_t b_zero_point, double output_scale, int64_t output_zero_point, bool relu = false,
                     DType output_dtype = kUInt8);

// Concatenation along dim of activations on their own grids, onto the output grid
// (torch.ops.quantized.cat): inputs[i] is uint8 codes, or float32 values quantized with
// (scales[i], zero_points[i]) first; each code is moved to the output grid as
// clamp(round_half_even(scales[i] * (q - zero_points[i]) * (1 / output_scale)) + output_zero_point,
// 0, 127) (a plain copy where the grids are the same). Shapes as ember::cat.
Tensor quantized_cat(const std::vector<Tensor>& inputs, const std::vector<double>& scales,
                     const std::vector<int64_t>& zero_points, int64_t dim, double output_scale,
                     int64_t output_zero_point, DType output_dtype = kUInt8);

// 2-D average pooling of uint8 codes on a grid with zero point zero_point; the output is on the
// same grid (torch's quantized avg_pool2d, whose output keeps the input's parameters): each
// element is round_half_even(float(S) * (1 / n)) + zero_point, S the exact sum of (q - zero_point)
// over the window (padding counts as real 0) and n its divisor. The zero point matters only to
// the rounding of ties, as in torch. Other arguments as ember::avg_pool2d; input [N, C, H, W] or
// [C, H, W]; output channels-last codes.
Tensor quantized_avg_pool2d(const Tensor& input, int64_t zero_point, IntArrayRef kernel_size, IntArrayRef stride = {},
                            IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                            std::optional<int64_t> divisor_override = std::nullopt);

// Adaptive average pooling of uint8 codes (zero point as above) onto output_size (one value or
// two), with ember::adaptive_avg_pool2d's windows; the output on the input's grid, channels-last.
Tensor quantized_adaptive_avg_pool2d(const Tensor& input, int64_t zero_point, IntArrayRef output_size);

}  // namespace ember::quant
