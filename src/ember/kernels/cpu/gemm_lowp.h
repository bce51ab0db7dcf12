#pragma once
// Internal: bfloat16/float16 matrix products through oneDNN, accumulating in float32.
// Note [Low-precision GEMM] in gemm_lowp.cpp says when this path runs; otherwise the ops
// convert the operands to float32, use the float32 GEMM and round the result once.

#include <string>

#include "ember/core/tensor.h"

namespace ember::kernels::cpu {

enum class LowpGemmImpl { Auto, OneDnn, Float32 };

// Which implementation a product of dtype dt (kBFloat16 or kFloat16) uses now.
// Auto: oneDNN where it has native instructions for dt (AVX512-BF16 or AMX for bf16,
// AVX512-FP16 for fp16) and ember's CPU dispatch level is avx512; float32 elsewhere.
// EMBER_LOWP_GEMM=onednn|float32 overrides it; tests use set_lowp_gemm_impl.
LowpGemmImpl lowp_gemm_impl(DType dt);
void set_lowp_gemm_impl(LowpGemmImpl impl);  // Auto restores the default choice

// out (float32, contiguous (batch..., m, n)) = beta * out + alpha * (a @ b), where a is
// (batch..., m, k) and b (batch..., k, n) in dt with any strides (stride-0 batch dims
// included). Returns false, having written nothing, when the oneDNN path is not chosen for
// dt or oneDNN refuses the case; the caller then computes in float32.
bool gemm_lowp(const Tensor& out, const Tensor& a, const Tensor& b, float alpha, float beta);

// oneDNN's effective instruction set ("avx2", "avx512_core_bf16", "avx512_core_amx", ...)
// and whether its bf16 kernels run natively on it.
std::string onednn_isa_name();
bool onednn_has_native(DType dt);

}  // namespace ember::kernels::cpu
