#pragma once
// The int8 operators of ONNX's QOperator form, computed as their ONNX definitions say
// (Note [ONNX int8 arithmetic]): what onnx::load runs for QuantizeLinear, DequantizeLinear,
// QLinearConv, QLinearMatMul and ONNX Runtime's com.microsoft QLinearAdd, QLinearConcat,
// QLinearAveragePool and QLinearGlobalAveragePool (docs/onnx.md).
//
// These are not the ops of ember's own quantized modules (quantized_ops.h), which keep
// activations on 7-bit codes 0..127 and clamp there: here a uint8 value saturates at 0 and 255
// and an int8 value at -128 and 127, as in ONNX, and the grids (scale, zero point) are tensors,
// as ONNX passes them. A zero point's dtype (uint8 or int8) is the dtype of the codes it
// goes with; an undefined zero point is uint8 0.
//
// Note [ONNX int8 arithmetic]: every rounding is half to even, in float32:
//   quantize_linear      q = saturate(rint(x / scale) + zero_point)
//   dequantize_linear    x = float(q - zero_point) * scale
//   qlinear_conv2d,      acc = sum (x - x_zp) * (w - w_zp) + bias, exact in integers (ember's int8 GEMM);
//   qlinear_matmul       y = saturate(rint(float(acc) * m) + y_zp), m = float(x_scale * w_scale) / y_scale
//                        per output channel (ONNX Runtime's float multiplier)
//   qlinear_add          y = saturate(rint((a_scale * float(a - a_zp) + b_scale * float(b - b_zp)) / y_scale) + y_zp)
//   qlinear_concat       each input: saturate(rint(scale_i * float(q - zp_i) / y_scale) + y_zp), then cat
//   qlinear_avg_pool2d,  S = the exact sum of (q - x_zp) over the window, n its divisor:
//   qlinear_global_...   y = saturate(rint((x_scale * float(S)) / float(n) / y_scale) + y_zp)
// tests/onnx/validate_onnx.py's numpy evaluator computes the same float32 operations, so the two
// agree bit for bit.

#include <cstdint>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::quant {

// float32 x -> codes of zero_point's dtype. scale: float32, one value, or one per index of
// x's dim `axis` (per-axis; zero_point then has as many); zero_point: uint8 or int8, or undefined (uint8 0).
Tensor quantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis = 1);
// uint8 / int8 / int32 codes -> float32 values, scale and zero_point as above (int32 codes: zero
// point 0 or undefined).
Tensor dequantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis = 1);

// 2-D convolution of codes (ONNX QLinearConv): x [N, C, H, W] uint8 or int8 with one grid; w
// [OC, C / groups, KH, KW] int8 or uint8 with one grid or one per output channel; bias int32
// [OC] or undefined (on the grid x_scale * w_scale, zero point 0); output [N, OC, OH, OW] on
// (y_scale, y_zero_point). Symmetric zero padding (real 0, the code x_zero_point).
Tensor qlinear_conv2d(const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point, const Tensor& w,
                      const Tensor& w_scale, const Tensor& w_zero_point, const Tensor& y_scale,
                      const Tensor& y_zero_point, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
                      IntArrayRef dilation, int64_t groups);

// Matrix product of codes (ONNX QLinearMatMul): a [..., M, K] (or [K]) uint8 or int8 with one
// grid; b [K, N] int8 or uint8 with one grid or one per column; output [..., M, N] (or [N]).
Tensor qlinear_matmul(const Tensor& a, const Tensor& a_scale, const Tensor& a_zero_point, const Tensor& b,
                      const Tensor& b_scale, const Tensor& b_zero_point, const Tensor& y_scale,
                      const Tensor& y_zero_point);

// Element-wise sum of codes on their own grids (com.microsoft QLinearAdd); shapes broadcast.
Tensor qlinear_add(const Tensor& a, const Tensor& a_scale, const Tensor& a_zero_point, const Tensor& b,
                   const Tensor& b_scale, const Tensor& b_zero_point, const Tensor& y_scale,
                   const Tensor& y_zero_point);

// Concatenation along dim of codes on their own grids onto one (com.microsoft QLinearConcat).
Tensor qlinear_concat(const std::vector<Tensor>& inputs, const std::vector<Tensor>& scales,
                      const std::vector<Tensor>& zero_points, const Tensor& y_scale, const Tensor& y_zero_point,
                      int64_t dim);

// 2-D average pooling of codes [N, C, H, W] (com.microsoft QLinearAveragePool, NCHW): kernel,
// stride (empty: the kernel) and symmetric padding as ember::avg_pool2d; count_include_pad:
// padding counts in the divisor; ceil_mode with count_include_pad is refused (runtimes differ).
Tensor qlinear_avg_pool2d(const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                          const Tensor& y_scale, const Tensor& y_zero_point, IntArrayRef kernel_size,
                          IntArrayRef stride = {}, IntArrayRef padding = 0, bool ceil_mode = false,
                          bool count_include_pad = false);

// Mean of each [H, W] plane of codes [N, C, H, W] (com.microsoft QLinearGlobalAveragePool,
// NCHW): output [N, C, 1, 1].
Tensor qlinear_global_avg_pool2d(const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                                 const Tensor& y_scale, const Tensor& y_zero_point);

}  // namespace ember::quant
