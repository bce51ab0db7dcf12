// The int8 kernels of Note [int8 GEMM] (qgemm.h), compiled once per ISA level (isa.h).
// Every level computes the same bits: the integer sums are exact, and the float passes do
// the same IEEE operations in the same order (multiply, round half to even, add, clamp).

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ember/kernels/cpu/qgemm.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ember::kernels::cpu::EMBER_CPU_NS {  // compiled per ISA level (kernels/cpu/isa.h)

namespace {

#if defined(__AVX2__)
inline int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}
#endif

inline int32_t dot_tail(const uint8_t* a, const int8_t* b, int64_t k0, int64_t K) {
  int32_t s = 0;
  for (int64_t k = k0; k < K; ++k) s += static_cast<int32_t>(a[k]) * static_cast<int32_t>(b[k]);
  return s;
}

}  // namespace

void qminmax(const float* x, int64_t n, float* lo_out, float* hi_out, bool* has_nan) {
  float lo = n > 0 ? x[0] : 0.0f, hi = lo;
  bool nan = false;
  int64_t i = 0;
#if defined(__AVX2__)
  if (n >= 8) {
    __m256 vlo = _mm256_set1_ps(lo), vhi = vlo, vnan = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) {
      const __m256 v = _mm256_loadu_ps(x + i);
      vlo = _mm256_min_ps(vlo, v);
      vhi = _mm256_max_ps(vhi, v);
      vnan = _mm256_or_ps(vnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    alignas(32) float l[8], h[8];
    _mm256_store_ps(l, vlo);
    _mm256_store_ps(h, vhi);
    for (int j = 0; j < 8; ++j) {
      lo = std::min(lo, l[j]);
      hi = std::max(hi, h[j]);
    }
    nan = _mm256_movemask_ps(vnan) != 0;
  }
#endif
  for (; i < n; ++i) {
    const float v = x[i];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    nan |= v != v;
  }
  *lo_out = lo;
  *hi_out = hi;
  *has_nan = nan;
}

void qquantize_u8(const float* x, int64_t n, float inv_scale, float zero_point, float qmin, float qmax, uint8_t* out) {
  int64_t i = 0;
#if defined(__AVX2__)
  const __m256 vinv = _mm256_set1_ps(inv_scale), vzp = _mm256_set1_ps(zero_point);
  const __m256 vmin = _mm256_set1_ps(qmin), vmax = _mm256_set1_ps(qmax);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  auto code = [&](const float* p) {
    __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(p), vinv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, vzp), vmin), vmax);
    return _mm256_cvtps_epi32(v);
  };
  for (; i + 32 <= n; i += 32) {
    const __m256i a = code(x + i), b = code(x + i + 8), c = code(x + i + 16), d = code(x + i + 24);
    const __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);  // lanes interleaved
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), bytes);
  }
#endif
  for (; i < n; ++i) {
    const float v = std::nearbyint(x[i] * inv_scale) + zero_point;
    out[i] = static_cast<uint8_t>(std::min(std::max(v, qmin), qmax));
  }
}

void qdequantize_rows(float* y, int64_t r0, int64_t r1, int64_t N, const int32_t* corr, const float* scale,
                      const float* bias) {
  for (int64_t m = r0; m < r1; ++m) {
    float* row = y + m * N;
    int32_t* acc = reinterpret_cast<int32_t*>(row);  // int32 sums on entry, same storage
    int64_t n = 0;
#if defined(__AVX2__)
    for (; n + 8 <= N; n += 8) {
      const __m256i a = _mm256_sub_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + n)),
                                         _mm256_loadu_si256(reinterpret_cast<const __m256i*>(corr + n)));
      __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(a), _mm256_loadu_ps(scale + n));
      if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + n));
      _mm256_storeu_ps(row + n, v);
    }
#endif
    for (; n < N; ++n) {
      float v = static_cast<float>(acc[n] - corr[n]) * scale[n];
      if (bias != nullptr) v += bias[n];
      row[n] = v;
    }
  }
}

void qrequantize_rows(const int32_t* acc, int64_t rows, int64_t N, const int32_t* corr, const float* scale,
                      const float* bias, float inv_out, float zp_out, float qmin, float qmax, uint8_t* codes,
                      float* values, float out_scale) {
  // The same IEEE operations in the same order at every level (-ffp-contract=off keeps the
  // multiplies and adds apart): float(acc - corr) * scale (+ bias), * inv_out, round half to
  // even, + zp_out, clamp (NaN, from an inf bias, becomes qmin). Rows are often short (the
  // output channels of a convolution), so the vector loops are written out rather than left to
  // the compiler, whose prologue and alias checks per row cost more than the row itself.
  for (int64_t m = 0; m < rows; ++m) {
    const int32_t* a = acc + m * N;
    int64_t n = 0;
#if defined(__AVX512F__)
    {
      const __m512 vinv = _mm512_set1_ps(inv_out), vzp = _mm512_set1_ps(zp_out);
      const __m512 vmin = _mm512_set1_ps(qmin), vmax = _mm512_set1_ps(qmax), vs = _mm512_set1_ps(out_scale);
      // Masked (all-lanes) forms: the plain ones trip GCC 12's false -Wmaybe-uninitialized.
      constexpr __mmask16 all = 0xFFFF;
      for (; n + 16 <= N; n += 16) {
        const __m512i d = _mm512_sub_epi32(_mm512_loadu_si512(a + n), _mm512_loadu_si512(corr + n));
        __m512 v = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(all, d), _mm512_loadu_ps(scale + n));
        if (bias != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + n));
        v = _mm512_maskz_roundscale_ps(all, _mm512_mul_ps(v, vinv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        v = _mm512_maskz_min_ps(all, _mm512_maskz_max_ps(all, _mm512_add_ps(v, vzp), vmin), vmax);
        if (codes != nullptr) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + m * N + n),
                           _mm512_maskz_cvtusepi32_epi8(all, _mm512_maskz_cvtps_epi32(all, v)));
        } else {
          _mm512_storeu_ps(values + m * N + n, _mm512_mul_ps(_mm512_sub_ps(v, vzp), vs));
        }
      }
    }
#endif
#if defined(__AVX2__)
    {
      const __m256 vinv = _mm256_set1_ps(inv_out), vzp = _mm256_set1_ps(zp_out);
      const __m256 vmin = _mm256_set1_ps(qmin), vmax = _mm256_set1_ps(qmax), vs = _mm256_set1_ps(out_scale);
      for (; n + 8 <= N; n += 8) {
        const __m256i d = _mm256_sub_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + n)),
                                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(corr + n)));
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(d), _mm256_loadu_ps(scale + n));
        if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + n));
        v = _mm256_round_ps(_mm256_mul_ps(v, vinv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, vzp), vmin), vmax);
        if (codes != nullptr) {
          const __m256i q = _mm256_cvtps_epi32(v);
          const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
          _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + m * N + n), _mm_packus_epi16(w, w));
        } else {
          _mm256_storeu_ps(values + m * N + n, _mm256_mul_ps(_mm256_sub_ps(v, vzp), vs));
        }
      }
    }
#endif
    for (; n < N; ++n) {
      float v = static_cast<float>(a[n] - corr[n]) * scale[n];
      if (bias != nullptr) v = v + bias[n];
      const float r = std::nearbyint(v * inv_out) + zp_out;
      const float lo = r >= qmin ? r : qmin;
      const float c = lo <= qmax ? lo : qmax;
      if (codes != nullptr) {
        codes[m * N + n] = static_cast<uint8_t>(static_cast<int32_t>(c));
      } else {
        values[m * N + n] = (c - zp_out) * out_scale;
      }
    }
  }
}

void qgemv_u8s8s32(int64_t M, int64_t n0, int64_t n1, int64_t N, int64_t K, const uint8_t* a, const int8_t* b,
                   int32_t* c) {
  int64_t n = n0;
#if defined(__AVX2__)
  // Four weight rows at a time against each activation row: the rows (4 K bytes) stay in
  // L1 while the few activation rows pass over them.
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t K32 = K - K % 32;
  for (; n + 4 <= n1; n += 4) {
    const int8_t* w0 = b + n * K;
    const int8_t* w1 = w0 + K;
    const int8_t* w2 = w1 + K;
    const int8_t* w3 = w2 + K;
    for (int64_t m = 0; m < M; ++m) {
      const uint8_t* ar = a + m * K;
      __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
      for (int64_t k = 0; k < K32; k += 32) {
        const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ar + k));
        auto step = [&](__m256i& s, const int8_t* w) {
          const __m256i p = _mm256_maddubs_epi16(av, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k)));
          s = _mm256_add_epi32(s, _mm256_madd_epi16(p, ones));
        };
        step(s0, w0);
        step(s1, w1);
        step(s2, w2);
        step(s3, w3);
      }
      int32_t* cr = c + m * N + n;
      cr[0] = hsum(s0) + dot_tail(ar, w0, K32, K);
      cr[1] = hsum(s1) + dot_tail(ar, w1, K32, K);
      cr[2] = hsum(s2) + dot_tail(ar, w2, K32, K);
      cr[3] = hsum(s3) + dot_tail(ar, w3, K32, K);
    }
  }
#endif
  for (; n < n1; ++n) {
    for (int64_t m = 0; m < M; ++m) c[m * N + n] = dot_tail(a + m * K, b + n * K, 0, K);
  }
}

}  // namespace ember::kernels::cpu::EMBER_CPU_NS
