#pragma once
// Internal: the int8 kernels behind quant::DynamicQuantizedLinear.
//
// Note [int8 GEMM]: c[m, n] = sum_k a[m, k] * b[n, k] with a uint8 (quantized activations,
// row-major [M, K]), b int8 (quantized weights, row-major [N, K], as nn.Linear stores them)
// and c int32. Few rows (M < kQGemvMaxRows) go to ember's own kernel (quant.cpp, compiled
// per ISA level: one pass over the weights, vpmaddubsw at AVX2), more to oneDNN's int8
// matmul (it picks AVX2 / AVX-512 VNNI / AMX kernels at run time by itself; primitives are
// cached per (M, N, K)). Integer accumulation is exact, so the result depends neither on
// the thread count nor on the kernel, provided no 16-bit intermediate saturates: CPUs
// without VNNI add pairs of u8*s8 products in 16 bits (vpmaddubsw), which is why the
// activations are quantized to 7 bits (0..127, as fbgemm's reduce_range): 2 * 127 * 128
// < 32767. The element-wise passes (min/max, quantize, dequantize) are per ISA level too
// and round the same way at every level (no FMA contraction), so results are bit-identical
// across levels.

#include <cstdint>

namespace ember::kernels::cpu {

constexpr int64_t kQGemvMaxRows = 8;

// c (row-major [M, N]) = a (row-major [M, K]) x b^T (b row-major [N, K]).
void gemm_u8s8s32(int64_t M, int64_t N, int64_t K, const uint8_t* a, const int8_t* b, int32_t* c);

// The smallest and largest of x[0..n) (0, 0 when n is 0); *has_nan tells whether any is NaN.
void qminmax(const float* x, int64_t n, float* lo, float* hi, bool* has_nan);
// out[i] = clamp(round_half_even(x[i] * inv_scale) + zero_point, qmin, qmax).
void qquantize_u8(const float* x, int64_t n, float inv_scale, float zero_point, float qmin, float qmax, uint8_t* out);
// Rows [r0, r1) of y (row-major [*, N]), which holds int32 sums on entry:
// y[m, n] = float(acc[m, n] - corr[n]) * scale[n] (+ bias[n] when bias is not null).
void qdequantize_rows(float* y, int64_t r0, int64_t r1, int64_t N, const int32_t* corr, const float* scale,
                      const float* bias);
// Requantization of int32 sums acc (row-major [rows, N]) onto an activation grid:
// v = float(acc[m, n] - corr[n]) * scale[n] (+ bias[n]), c = clamp(round_half_even(v * inv_out)
// + zp_out, qmin, qmax); writes the codes c (codes, [rows, N] uint8) or, when codes is null,
// the values (c - zp_out) * out_scale (values, [rows, N] float32). A fused ReLU is qmin = zp_out.
void qrequantize_rows(const int32_t* acc, int64_t rows, int64_t N, const int32_t* corr, const float* scale,
                      const float* bias, float inv_out, float zp_out, float qmin, float qmax, uint8_t* codes,
                      float* values, float out_scale);
// Rows [n0, n1) of the product for M < kQGemvMaxRows (ember's own kernel; c as above).
void qgemv_u8s8s32(int64_t M, int64_t n0, int64_t n1, int64_t N, int64_t K, const uint8_t* a, const int8_t* b,
                   int32_t* c);

}  // namespace ember::kernels::cpu
