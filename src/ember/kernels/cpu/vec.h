#pragma once
// Internal: the float32 SIMD width of the ISA level this copy of a kernel file is compiled
// for, and Sleef's vectorised math for it: 16 floats at the avx512 level, 8 at avx2; at the
// baseline level EMBER_HAVE_VEC is 0 and kernels use their scalar loops. Only the per-ISA
// kernel files include it (kernels/cpu/isa.h), so each level's wrappers get their own
// namespace.

#ifndef EMBER_CPU_NS
#error "vec.h is for the kernel files compiled per ISA level (EMBER_DISPATCH_SOURCES in CMakeLists.txt)"
#endif

#include <immintrin.h>
#include <sleef.h>

#if defined(__AVX512F__)
#define EMBER_HAVE_VEC 1
namespace ember::kernels::cpu::EMBER_CPU_NS::vec {
using VecF = __m512;
inline constexpr int kLanes = 16;
inline VecF load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, VecF v) { _mm512_storeu_ps(p, v); }
inline VecF set1(float x) { return _mm512_set1_ps(x); }
inline VecF add(VecF a, VecF b) { return _mm512_add_ps(a, b); }
inline VecF sub(VecF a, VecF b) { return _mm512_sub_ps(a, b); }
inline VecF mul(VecF a, VecF b) { return _mm512_mul_ps(a, b); }
inline VecF div(VecF a, VecF b) { return _mm512_div_ps(a, b); }
// The masked forms avoid GCC 12's false -Wmaybe-uninitialized on _mm512_max_ps/sqrt_ps.
inline VecF max(VecF a, VecF b) { return _mm512_maskz_max_ps(0xFFFF, a, b); }
inline VecF fmadd(VecF a, VecF b, VecF c) { return _mm512_fmadd_ps(a, b, c); }
inline VecF sqrt(VecF v) { return _mm512_maskz_sqrt_ps(0xFFFF, v); }
inline VecF exp(VecF v) { return Sleef_expf16_u10(v); }
inline VecF exp2(VecF v) { return Sleef_exp2f16_u10(v); }
inline VecF expm1(VecF v) { return Sleef_expm1f16_u10(v); }
inline VecF log(VecF v) { return Sleef_logf16_u10(v); }
inline VecF log2(VecF v) { return Sleef_log2f16_u10(v); }
inline VecF log10(VecF v) { return Sleef_log10f16_u10(v); }
inline VecF log1p(VecF v) { return Sleef_log1pf16_u10(v); }
inline VecF sin(VecF v) { return Sleef_sinf16_u10(v); }
inline VecF cos(VecF v) { return Sleef_cosf16_u10(v); }
inline VecF tan(VecF v) { return Sleef_tanf16_u10(v); }
inline VecF asin(VecF v) { return Sleef_asinf16_u10(v); }
inline VecF acos(VecF v) { return Sleef_acosf16_u10(v); }
inline VecF atan(VecF v) { return Sleef_atanf16_u10(v); }
inline VecF sinh(VecF v) { return Sleef_sinhf16_u10(v); }
inline VecF cosh(VecF v) { return Sleef_coshf16_u10(v); }
inline VecF tanh(VecF v) { return Sleef_tanhf16_u10(v); }
inline VecF erf(VecF v) { return Sleef_erff16_u10(v); }
inline VecF atan2(VecF a, VecF b) { return Sleef_atan2f16_u10(a, b); }
inline VecF pow(VecF a, VecF b) { return Sleef_powf16_u10(a, b); }
inline VecF fmod(VecF a, VecF b) { return Sleef_fmodf16(a, b); }  // exact, as std::fmod
}  // namespace ember::kernels::cpu::EMBER_CPU_NS::vec
#elif defined(__AVX2__)
#define EMBER_HAVE_VEC 1
namespace ember::kernels::cpu::EMBER_CPU_NS::vec {
using VecF = __m256;
inline constexpr int kLanes = 8;
inline VecF load(const float* p) { return _mm256_loadu_ps(p); }
inline void store(float* p, VecF v) { _mm256_storeu_ps(p, v); }
inline VecF set1(float x) { return _mm256_set1_ps(x); }
inline VecF add(VecF a, VecF b) { return _mm256_add_ps(a, b); }
inline VecF sub(VecF a, VecF b) { return _mm256_sub_ps(a, b); }
inline VecF mul(VecF a, VecF b) { return _mm256_mul_ps(a, b); }
inline VecF div(VecF a, VecF b) { return _mm256_div_ps(a, b); }
inline VecF max(VecF a, VecF b) { return _mm256_max_ps(a, b); }
inline VecF fmadd(VecF a, VecF b, VecF c) { return _mm256_fmadd_ps(a, b, c); }
inline VecF sqrt(VecF v) { return _mm256_sqrt_ps(v); }
inline VecF exp(VecF v) { return Sleef_expf8_u10(v); }
inline VecF exp2(VecF v) { return Sleef_exp2f8_u10(v); }
inline VecF expm1(VecF v) { return Sleef_expm1f8_u10(v); }
inline VecF log(VecF v) { return Sleef_logf8_u10(v); }
inline VecF log2(VecF v) { return Sleef_log2f8_u10(v); }
inline VecF log10(VecF v) { return Sleef_log10f8_u10(v); }
inline VecF log1p(VecF v) { return Sleef_log1pf8_u10(v); }
inline VecF sin(VecF v) { return Sleef_sinf8_u10(v); }
inline VecF cos(VecF v) { return Sleef_cosf8_u10(v); }
inline VecF tan(VecF v) { return Sleef_tanf8_u10(v); }
inline VecF asin(VecF v) { return Sleef_asinf8_u10(v); }
inline VecF acos(VecF v) { return Sleef_acosf8_u10(v); }
inline VecF atan(VecF v) { return Sleef_atanf8_u10(v); }
inline VecF sinh(VecF v) { return Sleef_sinhf8_u10(v); }
inline VecF cosh(VecF v) { return Sleef_coshf8_u10(v); }
inline VecF tanh(VecF v) { return Sleef_tanhf8_u10(v); }
inline VecF erf(VecF v) { return Sleef_erff8_u10(v); }
inline VecF atan2(VecF a, VecF b) { return Sleef_atan2f8_u10(a, b); }
inline VecF pow(VecF a, VecF b) { return Sleef_powf8_u10(a, b); }
inline VecF fmod(VecF a, VecF b) { return Sleef_fmodf8(a, b); }  // exact, as std::fmod
}  // namespace ember::kernels::cpu::EMBER_CPU_NS::vec
#else
#define EMBER_HAVE_VEC 0
#endif
