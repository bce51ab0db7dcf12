#pragma once
// Internal: GELU's normal CDF on float lanes, shared by the gelu kernel (unary.cpp) and its
// backward (binary.cpp). Only the per-ISA kernel files include it.
//
// Note [Fast GELU]: Sleef's erff costs ~7 exps, which made GELU and its backward the most
// expensive element-wise ops of a transformer step. Phi(x) = (1 + erf(x / sqrt 2)) / 2 is
// computed instead with Abramowitz and Stegun's 7.1.26: erfc(|z|) ~= t (a1 + t (a2 + t (a3 +
// t (a4 + t a5)))) exp(-z^2), t = 1 / (1 + p |z|), absolute error below 1.5e-7. For z < 0
// 1 + erf(z) is that erfc itself, not 2 minus it, so GELU's negative tail keeps its
// relative accuracy. exp(-z^2) = exp(-x^2 / 2) is also the Gaussian density the backward
// needs, so both passes cost one exp per element. float64 and the baseline level keep
// std::erf.

#include "ember/kernels/cpu/vec.h"

#if EMBER_HAVE_VEC
namespace ember::kernels::cpu::EMBER_CPU_NS::vec {

#if defined(__AVX512F__)
inline VecF min_(VecF a, VecF b) { return _mm512_maskz_min_ps(0xFFFF, a, b); }
#else
inline VecF min_(VecF a, VecF b) { return _mm256_min_ps(a, b); }
#endif

// Phi(x) for GELU (the normal CDF) and, in *density, exp(-x^2 / 2) / sqrt(2 pi).
inline VecF gelu_cdf(VecF x, VecF* density = nullptr) {
  const VecF z = mul(x, set1(0.70710678118654752440f));
  const VecF az = max(z, sub(set1(0.0f), z));
  const VecF t = div(set1(1.0f), fmadd(set1(0.3275911f), az, set1(1.0f)));
  VecF poly = fmadd(set1(1.061405429f), t, set1(-1.453152027f));
  poly = fmadd(poly, t, set1(1.421413741f));
  poly = fmadd(poly, t, set1(-0.284496736f));
  poly = fmadd(poly, t, set1(0.254829592f));
  const VecF e = exp(mul(set1(-1.0f), mul(z, z)));
  const VecF q = mul(mul(poly, t), e);  // erfc(|z|)
  if (density) *density = mul(e, set1(0.39894228040143267794f));
  // 1 + erf(z): 2 - q for z >= 0, q for z < 0 (s = 1 or 0; NaN gives s = 0 and q NaN).
  const VecF s = min_(max(mul(z, set1(1e38f)), set1(0.0f)), set1(1.0f));
  const VecF one_plus_erf = fmadd(s, sub(set1(2.0f), add(q, q)), q);
  return mul(set1(0.5f), one_plus_erf);
}

}  // namespace ember::kernels::cpu::EMBER_CPU_NS::vec
#endif
