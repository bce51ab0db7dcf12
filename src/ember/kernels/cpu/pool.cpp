// Pooling kernels: direct loops, one plane per task.

#include "ember/kernels/cpu/pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "ember/core/check.h"
#include "ember/core/parallel.h"

namespace ember::kernels::cpu::EMBER_CPU_NS {  // compiled per ISA level (kernels/cpu/isa.h)

namespace {

// Planes per task: about 32K input elements, so small planes are grouped.
int64_t plane_grain(const PoolGeometry& g) {
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, g.in_h * g.in_w));
}

template <typename F>
void dispatch_pool(DType dt, const char* op, F&& f) {
  if (dt == kFloat32) {
    f(float{});
  } else if (dt == kFloat64) {
    f(double{});
  } else {
    EMBER_ERROR("[", op, "] internal: kernel called with dtype ", dt, " (expected float32 or float64)");
  }
}

// 2x2 windows with stride 2, no padding or dilation, all inside the input: with ceil_mode an
// odd size adds a last window that hangs over the edge, which only the general loops clip.
//
// Note [Max-pool window offsets]: the backward of max_pool2d needs only which of its window's
// four elements won. When the caller does not ask for the indices (max_pool2d, not
// max_pool2d_with_indices) and the windows are these 2x2 ones, ember saves that as one byte
// per output (0: row 0 col 0, 1: row 0 col 1, 2: row 1 col 0, 3: row 1 col 1) instead of an
// int64 flat index: the forward writes 1/8 of the bytes and the backward reads 1/8, which
// on the main job's 64x32x28x28 layer is 2.8 MB less written and read per step. The
// gradients are the same bits either way; max_pool2d_with_indices still returns int64.
bool two_by_two(const PoolGeometry& g) { return max_pool2d_window_offsets(g); }

// NaN wins, then the first of equal values (PyTorch's rule).
template <typename T>
inline bool takes_over(T v, T best) {
  return (v > best) | std::isnan(v);
}

#if defined(__AVX2__)
// The float32 2x2 / stride 2 case in AVX2 (the shape of almost every CNN's pooling).
// Lanes [0, n) of 8 set (n may be <= 0 or >= 8).
inline __m256i lane_mask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
// n (1..8) outputs of a 2x2/stride-2 max pool row from ow0; r0/r1: the window's two input
// rows; y: the output row; idx: its indices (may be null); base = 2 * oh * W. Even and odd
// columns are split with shuffles; the winner of (a, b), of (c, d), then of the two is
// PyTorch's scan a, b, c, d where "greater, or NaN" takes over (so ties keep the first
// element and a later NaN wins). A short row (n < 8) uses masked loads and copies the
// results out (masked stores are slow on some CPUs).
inline void max_pool_2x2_avx2(const float* r0, const float* r1, float* y, int64_t* idx, uint8_t* off, int64_t ow0, int n,
                              int32_t base, int32_t W) {
  const bool full = n == 8;
  const __m256i m_lo = lane_mask(2 * n), m_hi = lane_mask(2 * n - 8);
  auto deint = [&](const float* p, __m256& even, __m256& odd) {
    const __m256 lo = full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m_lo);
    const __m256 hi = full ? _mm256_loadu_ps(p + 8) : _mm256_maskload_ps(p + 8, m_hi);
    const __m256 e = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    const __m256 o = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
    even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8));
    odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), 0xD8));
  };
  auto wins = [](__m256 v, __m256 best) {
    return _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  };
  __m256 a, b, c, d;
  deint(r0 + 2 * ow0, a, b);
  deint(r1 + 2 * ow0, c, d);
  const __m256 t1 = wins(b, a), t2 = wins(d, c);
  const __m256 ab = _mm256_blendv_ps(a, b, t1), cd = _mm256_blendv_ps(c, d, t2);
  const __m256 t = wins(cd, ab);
  const __m256 best = _mm256_blendv_ps(ab, cd, t);
  if (full) {
    _mm256_storeu_ps(y + ow0, best);
  } else {
    alignas(32) float tmp[8];
    _mm256_store_ps(tmp, best);
    for (int i = 0; i < n; ++i) y[ow0 + i] = tmp[i];
  }
  if (idx) {
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i k1 = _mm256_and_si256(_mm256_castps_si256(t1), one);
    const __m256i k2 = _mm256_add_epi32(_mm256_set1_epi32(W), _mm256_and_si256(_mm256_castps_si256(t2), one));
    const __m256i k = _mm256_blendv_epi8(k1, k2, _mm256_castps_si256(t));
    const __m256i pos = _mm256_add_epi32(_mm256_set1_epi32(base + 2 * static_cast<int32_t>(ow0)),
                                         _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
    const __m256i i32 = _mm256_add_epi32(pos, k);
    const __m256i lo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(i32));
    const __m256i hi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(i32, 1));
    long long* out = reinterpret_cast<long long*>(idx + ow0);
    if (full) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), lo);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 4), hi);
    } else {
      alignas(32) long long tmp[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), lo);
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp + 4), hi);
      for (int i = 0; i < n; ++i) out[i] = tmp[i];
    }
  }
  if (off) {  // window offsets (Note [Max-pool window offsets])
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i c1 = _mm256_and_si256(_mm256_castps_si256(t1), one);
    const __m256i c2 = _mm256_add_epi32(_mm256_set1_epi32(2), _mm256_and_si256(_mm256_castps_si256(t2), one));
    alignas(32) int32_t tmp[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), _mm256_blendv_epi8(c1, c2, _mm256_castps_si256(t)));
    for (int i = 0; i < n; ++i) off[ow0 + i] = static_cast<uint8_t>(tmp[i]);
  }
}

#if defined(__AVX512F__) && defined(__AVX512VL__) && defined(__AVX512BW__)
// The same 2x2 / stride-2 row in AVX-512: 16 outputs from 32 inputs per row of the window,
// with masked loads and stores for a short or last block (cheap at this level, unlike
// AVX2's vmaskmov), so a 7- or 14-wide output row is one step instead of a masked copy or
// two overlapping blocks. The comparisons and blends are the AVX2 version's, lane for lane.
inline void max_pool_2x2_avx512(const float* r0, const float* r1, float* y, int64_t* idx, uint8_t* off, int64_t ow0,
                                int n, int32_t base, int32_t W) {
  const auto m_out = static_cast<__mmask16>((1u << n) - 1u);
  const auto m_lo = static_cast<__mmask16>(n >= 8 ? 0xFFFFu : (1u << (2 * n)) - 1u);
  const auto m_hi = static_cast<__mmask16>(n <= 8 ? 0u : (1u << (2 * n - 16)) - 1u);
  const __m512i even_at = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd_at = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  auto deint = [&](const float* p, __m512& even, __m512& odd) {
    const __m512 lo = _mm512_maskz_loadu_ps(m_lo, p), hi = _mm512_maskz_loadu_ps(m_hi, p + 16);
    even = _mm512_permutex2var_ps(lo, even_at, hi);
    odd = _mm512_permutex2var_ps(lo, odd_at, hi);
  };
  auto wins = [](__m512 v, __m512 best) -> __mmask16 {
    return _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  };
  __m512 a, b, c, d;
  deint(r0 + 2 * ow0, a, b);
  deint(r1 + 2 * ow0, c, d);
  const __mmask16 t1 = wins(b, a), t2 = wins(d, c);
  const __m512 ab = _mm512_mask_blend_ps(t1, a, b), cd = _mm512_mask_blend_ps(t2, c, d);
  const __mmask16 t = wins(cd, ab);
  _mm512_mask_storeu_ps(y + ow0, m_out, _mm512_mask_blend_ps(t, ab, cd));
  if (idx) {
    const __m512i k1 = _mm512_maskz_mov_epi32(t1, _mm512_set1_epi32(1));
    const __m512i k2 = _mm512_add_epi32(_mm512_set1_epi32(W), _mm512_maskz_mov_epi32(t2, _mm512_set1_epi32(1)));
    const __m512i k = _mm512_mask_blend_epi32(t, k1, k2);
    const __m512i pos = _mm512_add_epi32(_mm512_set1_epi32(base + 2 * static_cast<int32_t>(ow0)), even_at);
    const __m512i i32 = _mm512_add_epi32(pos, k);
    long long* out = reinterpret_cast<long long*>(idx + ow0);
    _mm512_mask_storeu_epi64(out, static_cast<__mmask8>(m_out & 0xFF), _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_maskz_extracti64x4_epi64(0xF, i32, 0)));
    if (n > 8) {
      _mm512_mask_storeu_epi64(out + 8, static_cast<__mmask8>(m_out >> 8),
                               _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_maskz_extracti64x4_epi64(0xF, i32, 1)));
    }
  }
  if (off) {  // window offsets (Note [Max-pool window offsets])
    const __m512i c1 = _mm512_maskz_mov_epi32(t1, _mm512_set1_epi32(1));
    const __m512i c2 = _mm512_add_epi32(_mm512_set1_epi32(2), _mm512_maskz_mov_epi32(t2, _mm512_set1_epi32(1)));
    _mm512_mask_cvtepi32_storeu_epi8(off + ow0, m_out, _mm512_mask_blend_epi32(t, c1, c2));
  }
}

// Max-pool backward of one plane for 2x2 / stride-2 windows that do not overlap and lie
// inside the input: every input element belongs to at most one window, so each dx element
// is written once, in order (dy[w] where the window's saved index points at it, else 0),
// instead of zeroing the plane and scattering into it. `at` holds int64 flat indices, or
// uint8 window offsets when kOffsets (Note [Max-pool window offsets]). Returns false, having
// written an unspecified part of the plane, if an index does not point into its window
// (indices not made by max_pool2d's forward); the caller then takes the general path.
template <bool kOffsets>
inline bool max_pool_2x2_backward_plane_avx512(float* dx, const float* dy, const void* at_, const PoolGeometry& g) {
  const int64_t W = g.in_w, OW = g.out_w;
  const __m256i lane2 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
  const __m512i inter = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m256i w0 = _mm256_set1_epi32(static_cast<int32_t>(W)), w1 = _mm256_set1_epi32(static_cast<int32_t>(W + 1));
  const __m256i one = _mm256_set1_epi32(1), zero = _mm256_setzero_si256();
  const __m256i two = _mm256_set1_epi32(2), three = _mm256_set1_epi32(3);
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    float* r0 = dx + 2 * oh * W;
    float* r1 = r0 + W;
    const float* s = dy + oh * OW;
    const auto base = static_cast<int32_t>(2 * oh * W);
    for (int64_t ow = 0; ow < OW; ow += 8) {
      const int n = static_cast<int>(std::min<int64_t>(8, OW - ow));
      const auto m8 = static_cast<__mmask8>((1u << n) - 1u);
      const auto m16 = static_cast<__mmask16>((1u << (2 * n)) - 1u);
      __mmask8 e0, o0, e1, o1;
      if constexpr (kOffsets) {
        // The window offsets 0, 1, 2, 3: (row 0, col 0), (0, 1), (1, 0), (1, 1).
        const __m128i b = _mm_maskz_loadu_epi8(m8, static_cast<const uint8_t*>(at_) + oh * OW + ow);
        const __m256i c = _mm256_cvtepu8_epi32(b);
        e0 = _mm256_mask_cmpeq_epi32_mask(m8, c, zero), o0 = _mm256_mask_cmpeq_epi32_mask(m8, c, one);
        e1 = _mm256_mask_cmpeq_epi32_mask(m8, c, two), o1 = _mm256_mask_cmpeq_epi32_mask(m8, c, three);
      } else {
        const __m512i at = _mm512_maskz_loadu_epi64(m8, static_cast<const int64_t*>(at_) + oh * OW + ow);
        // Offsets of the winners inside their windows: 0, 1, W or W + 1.
        const __m256i k = _mm256_sub_epi32(_mm512_maskz_cvtepi64_epi32(0xFF, at),
                                           _mm256_add_epi32(_mm256_set1_epi32(base + 2 * static_cast<int32_t>(ow)), lane2));
        e0 = _mm256_cmpeq_epi32_mask(k, zero), o0 = _mm256_cmpeq_epi32_mask(k, one);
        e1 = _mm256_cmpeq_epi32_mask(k, w0), o1 = _mm256_cmpeq_epi32_mask(k, w1);
        // An index past int32 range would have wrapped: check the high halves too.
        if (_mm512_mask_cmpneq_epi64_mask(m8, _mm512_maskz_srai_epi64(0xFF, at, 31), _mm512_setzero_si512()) != 0) {
          return false;
        }
      }
      if (static_cast<__mmask8>(e0 | o0 | e1 | o1) != m8) return false;
      const __m512 v = _mm512_maskz_loadu_ps(m8, s + ow);  // lanes 8-15 unused
      const __m512 ve0 = _mm512_maskz_mov_ps(e0, v), vo0 = _mm512_maskz_mov_ps(o0, v);
      const __m512 ve1 = _mm512_maskz_mov_ps(e1, v), vo1 = _mm512_maskz_mov_ps(o1, v);
      _mm512_mask_storeu_ps(r0 + 2 * ow, m16, _mm512_permutex2var_ps(ve0, inter, vo0));
      _mm512_mask_storeu_ps(r1 + 2 * ow, m16, _mm512_permutex2var_ps(ve1, inter, vo1));
    }
    // An odd width leaves a last column outside every window.
    for (int64_t w = 2 * OW; w < W; ++w) r0[w] = r1[w] = 0.0f;
  }
  // And an odd height a last row.
  std::fill(dx + 2 * g.out_h * W, dx + g.in_h * W, 0.0f);
  return true;
}
#endif

// One plane; the last block of a row of 8+ outputs is shifted back to end at the row's end
// (recomputing a few outputs with the same values) so that it stays unmasked.
void max_pool_2x2_plane_avx2(const float* x, float* y, int64_t* idx, uint8_t* off, const PoolGeometry& g) {
  const int64_t W = g.in_w, OW = g.out_w;
  const auto w32 = static_cast<int32_t>(W);
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const float* r0 = x + 2 * oh * W;
    const float* r1 = r0 + W;
    float* yr = y + oh * OW;
    int64_t* ir = idx ? idx + oh * OW : nullptr;
    uint8_t* orow = off ? off + oh * OW : nullptr;
    const auto base = static_cast<int32_t>(2 * oh * W);
#if defined(__AVX512F__) && defined(__AVX512VL__) && defined(__AVX512BW__)
    for (int64_t s = 0; s < OW; s += 16) {
      max_pool_2x2_avx512(r0, r1, yr, ir, orow, s, static_cast<int>(std::min<int64_t>(16, OW - s)), base, w32);
    }
#else
    int64_t s = 0;
    for (; s + 8 <= OW; s += 8) max_pool_2x2_avx2(r0, r1, yr, ir, orow, s, 8, base, w32);
    if (s < OW) {
      if (OW >= 8) {
        max_pool_2x2_avx2(r0, r1, yr, ir, orow, OW - 8, 8, base, w32);
      } else {
        max_pool_2x2_avx2(r0, r1, yr, ir, orow, s, static_cast<int>(OW - s), base, w32);
      }
    }
#endif
  }
}
#endif

// idx: int64 flat indices, or off: uint8 window offsets (2x2 geometry only); either may be
// null, not both set.
template <typename T>
void max_pool_plane(const T* x, T* y, int64_t* idx, uint8_t* off, const PoolGeometry& g) {
  const int64_t H = g.in_h, W = g.in_w;
  const bool fast2 = two_by_two(g);
#if defined(__AVX2__)
  // 32-bit index arithmetic there: the plane must be smaller than 2^31 elements.
  if constexpr (std::is_same_v<T, float>) {
    if (fast2 && H * W < (int64_t{1} << 31)) {
      max_pool_2x2_plane_avx2(x, y, idx, off, g);
      return;
    }
  }
#endif
  if (fast2) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      const T* r0 = x + 2 * oh * W;
      const T* r1 = r0 + W;
      T* yr = y + oh * g.out_w;
      if (idx || off) {
        int64_t* ir = idx ? idx + oh * g.out_w : nullptr;
        uint8_t* orow = off ? off + oh * g.out_w : nullptr;
        const int64_t base = 2 * oh * W;
        // Selects instead of branches (each comparison is a coin flip on random data), in
        // a loop the compiler vectorises.
#pragma omp simd
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const T a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
          T best = a;
          int64_t k = 0;
          int code = 0;
          const bool tb = (b > best) | (b != b);
          best = tb ? b : best;
          k = tb ? 1 : k;
          code = tb ? 1 : code;
          const bool tc = (c > best) | (c != c);
          best = tc ? c : best;
          k = tc ? W : k;
          code = tc ? 2 : code;
          const bool td = (d > best) | (d != d);
          best = td ? d : best;
          k = td ? W + 1 : k;
          code = td ? 3 : code;
          yr[ow] = best;
          if (ir) ir[ow] = base + 2 * ow + k;
          if (orow) orow[ow] = static_cast<uint8_t>(code);
        }
      } else {
#pragma omp simd
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          T best = r0[2 * ow];
          const T b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
          best = (b > best) | (b != b) ? b : best;
          best = (c > best) | (c != c) ? c : best;
          best = (d > best) | (d != d) ? d : best;
          yr[ow] = best;
        }
      }
    }
    return;
  }
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    int64_t h0 = oh * g.stride_h - g.pad_h;
    const int64_t h1 = std::min(h0 + (g.kernel_h - 1) * g.dil_h + 1, H);
    if (h0 < 0) h0 += (-h0 + g.dil_h - 1) / g.dil_h * g.dil_h;  // first tap inside the input
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      int64_t w0 = ow * g.stride_w - g.pad_w;
      const int64_t w1 = std::min(w0 + (g.kernel_w - 1) * g.dil_w + 1, W);
      if (w0 < 0) w0 += (-w0 + g.dil_w - 1) / g.dil_w * g.dil_w;
      T best = -std::numeric_limits<T>::infinity();
      int64_t at = h0 * W + w0;
      for (int64_t ih = h0; ih < h1; ih += g.dil_h) {
        for (int64_t iw = w0; iw < w1; iw += g.dil_w) {
          const T v = x[ih * W + iw];
          if (takes_over(v, best)) best = v, at = ih * W + iw;
        }
      }
      y[oh * g.out_w + ow] = best;
      // A dilated window can fall entirely into the padding: its output is -inf (as in
      // PyTorch) and its index -1, since no input element is its maximum.
      if (idx) idx[oh * g.out_w + ow] = h0 < h1 && w0 < w1 ? at : -1;
    }
  }
}

// The window of output (oh, ow) clipped to the input, and PyTorch's divisor for it.
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};

AvgWindow avg_window(const PoolGeometry& g, int64_t oh, int64_t ow, bool count_include_pad, int64_t divisor_override) {
  int64_t h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
  int64_t h1 = std::min(h0 + g.kernel_h, g.in_h + g.pad_h), w1 = std::min(w0 + g.kernel_w, g.in_w + g.pad_w);
  const int64_t pool_size = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, g.in_h);
  w1 = std::min(w1, g.in_w);
  const int64_t divisor =
      divisor_override ? divisor_override : (count_include_pad ? pool_size : (h1 - h0) * (w1 - w0));
  return {h0, h1, w0, w1, divisor};
}

int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
int64_t adaptive_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

// One plane of max_pool2d_backward with window offsets (Note [Max-pool window offsets]).
template <typename T>
void max_pool_backward_plane_offsets(T* d, const T* s, const uint8_t* op, const PoolGeometry& g) {
#if defined(__AVX512F__) && defined(__AVX512VL__) && defined(__AVX512BW__)
  if constexpr (std::is_same_v<T, float>) {
    if (max_pool_2x2_backward_plane_avx512<true>(d, s, op, g)) return;
  }
#endif
  std::fill(d, d + g.in_h * g.in_w, T(0));
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const int c = op[oh * g.out_w + ow] & 3;
      d[(2 * oh + (c >> 1)) * g.in_w + 2 * ow + (c & 1)] = s[oh * g.out_w + ow];
    }
  }
}

}  // namespace

void max_pool2d_planes(float* y, uint8_t* offsets, const float* x, const PoolGeometry& g, int64_t planes) {
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  for (int64_t p = 0; p < planes; ++p) {
    max_pool_plane(x + p * in_plane, y + p * out_plane, nullptr, offsets ? offsets + p * out_plane : nullptr, g);
  }
}

void max_pool2d_backward_planes(float* dx, const float* dy, const uint8_t* offsets, const PoolGeometry& g,
                                int64_t planes) {
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  for (int64_t p = 0; p < planes; ++p) {
    max_pool_backward_plane_offsets(dx + p * in_plane, dy + p * out_plane, offsets + p * out_plane, g);
  }
}

void max_pool2d_forward(const Tensor& out, const Tensor& indices, const Tensor& input, const PoolGeometry& g) {
  if (out.numel() == 0) return;
  dispatch_pool(out.dtype(), "max_pool2d", [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data_ptr<T>();
    T* y = out.data_ptr<T>();
    const bool offsets = indices.defined() && indices.dtype() == kUInt8;
    EMBER_CHECK(!offsets || two_by_two(g), "[max_pool2d] internal: window offsets need 2x2 windows with stride 2");
    int64_t* idx = indices.defined() && !offsets ? indices.data_ptr<int64_t>() : nullptr;
    uint8_t* off = offsets ? indices.data_ptr<uint8_t>() : nullptr;
    const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
    parallel_for(0, g.planes, plane_grain(g), [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        max_pool_plane(x + p * in_plane, y + p * out_plane, idx ? idx + p * out_plane : nullptr,
                       off ? off + p * out_plane : nullptr, g);
      }
    });
  });
}

void max_pool2d_backward(const Tensor& grad_input, const Tensor& grad_out, const Tensor& indices,
                         const PoolGeometry& g) {
  if (grad_input.numel() == 0) return;
  dispatch_pool(grad_input.dtype(), "max_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* dy = grad_out.data_ptr<T>();
    const bool offsets = indices.dtype() == kUInt8;
    EMBER_CHECK(!offsets || two_by_two(g), "[max_pool2d] internal: window offsets need 2x2 windows with stride 2");
    T* dx = grad_input.data_ptr<T>();
    const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
    [[maybe_unused]] const bool fast2 = two_by_two(g) && in_plane < (int64_t{1} << 31);
    parallel_for(0, g.planes, plane_grain(g), [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        T* d = dx + p * in_plane;
        const T* s = dy + p * out_plane;
        if (offsets) {
          max_pool_backward_plane_offsets(d, s, indices.data_ptr<uint8_t>() + p * out_plane, g);
          continue;
        }
        const int64_t* ip = indices.data_ptr<int64_t>() + p * out_plane;
#if defined(__AVX512F__) && defined(__AVX512VL__) && defined(__AVX512BW__)
        if constexpr (std::is_same_v<T, float>) {
          if (fast2 && max_pool_2x2_backward_plane_avx512<false>(d, s, ip, g)) continue;
        }
#endif
        // Zeroed plane by plane, so the scatter finds the plane in cache (zeroing the whole
        // range first wrote it to memory and read it back).
        std::fill(d, d + in_plane, T(0));
        for (int64_t i = 0; i < out_plane; ++i) {
          if (ip[i] >= 0) d[ip[i]] += s[i];  // -1: a window with no input element
        }
      }
    });
  });
}

void avg_pool2d_forward(const Tensor& out, const Tensor& input, const PoolGeometry& g, bool count_include_pad,
                        int64_t divisor_override) {
  if (out.numel() == 0) return;
  dispatch_pool(out.dtype(), "avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data_ptr<T>();
    T* y = out.data_ptr<T>();
    const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
    parallel_for(0, g.planes, plane_grain(g), [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const T* xp = x + p * in_plane;
        T* yp = y + p * out_plane;
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          for (int64_t ow = 0; ow < g.out_w; ++ow) {
            const AvgWindow w = avg_window(g, oh, ow, count_include_pad, divisor_override);
            T sum = 0;
            for (int64_t ih = w.h0; ih < w.h1; ++ih) {
              for (int64_t iw = w.w0; iw < w.w1; ++iw) sum += xp[ih * g.in_w + iw];
            }
            yp[oh * g.out_w + ow] = (w.h0 >= w.h1 || w.w0 >= w.w1) ? T(0) : sum / static_cast<T>(w.divisor);
          }
        }
      }
    });
  });
}

void avg_pool2d_backward(const Tensor& grad_input, const Tensor& grad_out, const PoolGeometry& g,
                         bool count_include_pad, int64_t divisor_override) {
  if (grad_input.numel() == 0) return;
  dispatch_pool(grad_input.dtype(), "avg_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* dy = grad_out.data_ptr<T>();
    T* dx = grad_input.data_ptr<T>();
    const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
    parallel_for(0, g.planes, plane_grain(g), [&](int64_t begin, int64_t end) {
      std::fill(dx + begin * in_plane, dx + end * in_plane, T(0));
      for (int64_t p = begin; p < end; ++p) {
        T* dp = dx + p * in_plane;
        const T* sp = dy + p * out_plane;
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          for (int64_t ow = 0; ow < g.out_w; ++ow) {
            const AvgWindow w = avg_window(g, oh, ow, count_include_pad, divisor_override);
            const T v = sp[oh * g.out_w + ow] / static_cast<T>(w.divisor);
            for (int64_t ih = w.h0; ih < w.h1; ++ih) {
              for (int64_t iw = w.w0; iw < w.w1; ++iw) dp[ih * g.in_w + iw] += v;
            }
          }
        }
      }
    });
  });
}

void adaptive_avg_pool2d_forward(const Tensor& out, const Tensor& input, const PoolGeometry& g) {
  if (out.numel() == 0) return;
  dispatch_pool(out.dtype(), "adaptive_avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data_ptr<T>();
    T* y = out.data_ptr<T>();
    const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
    parallel_for(0, g.planes, plane_grain(g), [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const T* xp = x + p * in_plane;
        T* yp = y + p * out_plane;
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          const int64_t h0 = adaptive_start(oh, g.in_h, g.out_h), h1 = adaptive_end(oh, g.in_h, g.out_h);
          for (int64_t ow = 0; ow < g.out_w; ++ow) {
            const int64_t w0 = adaptive_start(ow, g.in_w, g.out_w), w1 = adaptive_end(ow, g.in_w, g.out_w);
            T sum = 0;
            for (int64_t ih = h0; ih < h1; ++ih) {
              for (int64_t iw = w0; iw < w1; ++iw) sum += xp[ih * g.in_w + iw];
            }
            yp[oh * g.out_w + ow] = sum / static_cast<T>((h1 - h0) * (w1 - w0));
          }
        }
      }
    });
  });
}

void adaptive_avg_pool2d_backward(const Tensor& grad_input, const Tensor& grad_out, const PoolGeometry& g) {
  if (grad_input.numel() == 0) return;
  dispatch_pool(grad_input.dtype(), "adaptive_avg_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* dy = grad_out.data_ptr<T>();
    T* dx = grad_input.data_ptr<T>();
    const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
    parallel_for(0, g.planes, plane_grain(g), [&](int64_t begin, int64_t end) {
      std::fill(dx + begin * in_plane, dx + end * in_plane, T(0));
      // An empty output (e.g. 2^40 x 0, which adaptive pooling may be asked for) sends no
      // gradient: skip the rows instead of walking 2^40 of them.
      if (out_plane == 0) return;
      for (int64_t p = begin; p < end; ++p) {
        T* dp = dx + p * in_plane;
        const T* sp = dy + p * out_plane;
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          const int64_t h0 = adaptive_start(oh, g.in_h, g.out_h), h1 = adaptive_end(oh, g.in_h, g.out_h);
          for (int64_t ow = 0; ow < g.out_w; ++ow) {
            const int64_t w0 = adaptive_start(ow, g.in_w, g.out_w), w1 = adaptive_end(ow, g.in_w, g.out_w);
            const T v = sp[oh * g.out_w + ow] / static_cast<T>((h1 - h0) * (w1 - w0));
            for (int64_t ih = h0; ih < h1; ++ih) {
              for (int64_t iw = w0; iw < w1; ++iw) dp[ih * g.in_w + iw] += v;
            }
          }
        }
      }
    });
  });
}

}  // namespace ember::kernels::cpu::EMBER_CPU_NS
