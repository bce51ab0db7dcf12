#pragma once
// Internal: the int8 matrix product behind quant::DynamicQuantizedLinear.
//
// Note [int8 GEMM]: c[m, n] = sum_k a[m, k] * b[n, k] with a uint8 (quantized activations,
// row-major [M, K]), b int8 (quantized weights, row-major [N, K], as nn.Linear stores them)
// and c int32. oneDNN's int8 matmul computes it (it picks AVX2 / AVX-512 VNNI / AMX kernels
// at run time by itself); primitives are cached per (M, N, K). Integer accumulation is
// exact, so the result does not depend on the thread count or the kernel chosen, provided
// no 16-bit intermediate saturates: CPUs without VNNI add pairs of u8*s8 products in 16 bits
// (vpmaddubsw), which is why the activations are quantized to 7 bits (0..127, as fbgemm's
// reduce_range): 2 * 127 * 128 < 32767.

#include <cstdint>

namespace ember::kernels::cpu {

// c (row-major [M, N], ldc = N) = a (row-major [M, K], lda = K) x b^T (b row-major [N, K]).
void gemm_u8s8s32(int64_t M, int64_t N, int64_t K, const uint8_t* a, const int8_t* b, int32_t* c);

}  // namespace ember::kernels::cpu
