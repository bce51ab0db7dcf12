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

}  // namespace ember::quant
