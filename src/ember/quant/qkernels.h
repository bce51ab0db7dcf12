#pragma once
// Internal to src/ember/quant: the bodies of the quantized ops (quantized_ops.h), shared by
// the public functions and the modules, which cache their packed weights and row sums.

#include <cstdint>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/quant/quant.h"

namespace ember::quant::detail {

// Convolution weights as the int8 GEMM reads them: rows [OC, KH * KW * Cg] in (kh, kw, c)
// order, to match the channels-last columns; sum of each row for the zero-point correction.
struct PackedConv {
  Tensor packed;  // int8 [OC, KH * KW * Cg], contiguous
  std::vector<int32_t> row_sums;
  int64_t out_channels = 0, group_channels = 0, kernel_h = 0, kernel_w = 0;
  int64_t k() const { return kernel_h * kernel_w * group_channels; }
};

struct ConvGeometry {
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1, groups = 1;
};

// Checks qweight (int8 [OC, Cg, KH, KW]) and packs it.
PackedConv pack_conv_weight(const char* op, const Tensor& qweight, int64_t groups);
// Sums of the rows of a contiguous int8 [N, K] matrix.
std::vector<int32_t> row_sums(const Tensor& qweight);
// stride / padding / dilation given as one value or two; errors name op.
ConvGeometry conv_geometry(const char* op, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                           int64_t groups);
// Checks weight scales (float32 [n], positive and finite) and bias (float32 [n] or undefined).
void check_scales_bias(const char* op, const Tensor& scales, const Tensor& bias, int64_t n);
// A scale and zero point given as numbers, checked for the activation codes.
QParams act_qparams(const char* op, const char* which, double scale, int64_t zero_point);

Tensor conv2d(const char* op, const Tensor& input, const PackedConv& w, const Tensor& scales, const Tensor& bias,
              const ConvGeometry& g, QParams in, QParams out, bool relu, bool codes_out);
Tensor linear(const char* op, const Tensor& input, const Tensor& qweight, const int32_t* sums, const Tensor& scales,
              const Tensor& bias, QParams in, QParams out, bool relu, bool codes_out);
// The product behind DynamicQuantizedLinear and DynamicQuantizedLSTM (Note [Dynamic
// quantization scheme], quant.h): y [M, N] = x [M, K] (contiguous float32) quantized to
// 0..127 on the grid of its own range, times qweight^T (contiguous int8 [N, K], `sums` its
// row sums), dequantized with the row scales, plus bias (null: none). inf or NaN in x is an
// error naming `op` and `input_sizes` (the sizes the caller was given).
void dynamic_linear(const char* op, const float* x, int64_t M, int64_t K, const int8_t* qweight, int64_t N,
                    const int32_t* sums, const float* scales, const float* bias, float* y, IntArrayRef input_sizes);
Tensor max_pool2d(const char* op, const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode);

}  // namespace ember::quant::detail
