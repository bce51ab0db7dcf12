#pragma once
// Internal: the sum of a run of contiguous values in double, in a fixed order that does not
// depend on the ISA level or thread count. Static (one copy per translation unit): the
// kernels are compiled once per ISA level, and an inline function shared between those
// copies could resolve to the wrong level's code.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace ember::kernels::cpu {

// Note [Lanes as vector types]: the 32 float lanes and 32 double lanes of the float runs below
// are held in GCC vector types of this copy's register width (16 floats with AVX-512, 8 with
// AVX, 4 otherwise), lane k in element k % kVecF of vector k / kVecF, so every level adds
// the same values in the same order. As plain arrays (`float acc[32]` in the loop) GCC kept
// the lanes in memory between blocks and cleared them with `rep stos` each block: a sum ran
// at 3.3 cycles per 16 floats in L2 on Zen 4 against 2.6 with the vector types.
namespace plane {
#if defined(__AVX512F__)
inline constexpr int kVecF = 16;
#elif defined(__AVX__)
inline constexpr int kVecF = 8;
#else
inline constexpr int kVecF = 4;
#endif
inline constexpr int kLanes = 32, kVecs = kLanes / kVecF;
typedef float VecF __attribute__((vector_size(kVecF * sizeof(float))));
typedef double VecD __attribute__((vector_size(kVecF / 2 * sizeof(double))));

static inline VecF load(const float* p) {
  VecF v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
static inline void store(float* p, VecF v) { __builtin_memcpy(p, &v, sizeof v); }
// Float lanes [0, kVecF / 2) and [kVecF / 2, kVecF) of v, in double. (At the AVX-512 level
// GCC 12 lowers __builtin_convertvector of eight floats as two four-float conversions and an
// insert, five instructions for one vcvtps2pd; the intrinsic's masked form, with every lane
// set, avoids the plain form's false -Wmaybe-uninitialized.)
template <size_t... I>
static inline VecD low_half(VecF v, std::index_sequence<I...>) {
#if defined(__AVX512F__)
  return reinterpret_cast<VecD>(_mm512_maskz_cvtps_pd(0xFF, reinterpret_cast<__m256>(__builtin_shufflevector(v, v, I...))));
#else
  return __builtin_convertvector(__builtin_shufflevector(v, v, I...), VecD);
#endif
}
template <size_t... I>
static inline VecD high_half(VecF v, std::index_sequence<I...>) {
#if defined(__AVX512F__)
  return reinterpret_cast<VecD>(
      _mm512_maskz_cvtps_pd(0xFF, reinterpret_cast<__m256>(__builtin_shufflevector(v, v, (I + kVecF / 2)...))));
#else
  return __builtin_convertvector(__builtin_shufflevector(v, v, (I + kVecF / 2)...), VecD);
#endif
}
// The 32 double lanes d (2 * kVecs vectors) += the 32 float lanes a.
static inline void add_in_double(const VecF* a, VecD* d) {
  for (int j = 0; j < kVecs; ++j) {
    d[2 * j] += low_half(a[j], std::make_index_sequence<kVecF / 2>());
    d[2 * j + 1] += high_half(a[j], std::make_index_sequence<kVecF / 2>());
  }
}
// The 32 double lanes folded to 8: lane k += lane k + 16 (k < 16), then lane k += lane k + 8
// (k < 8), into out[0, 8).
static inline void fold_to_eight(const VecD* d, double* out) {
  double l[kLanes];
  __builtin_memcpy(l, d, sizeof l);
  for (int w = kLanes / 2; w >= 8; w /= 2) {
    for (int k = 0; k < w; ++k) l[k] += l[k + w];
  }
  for (int k = 0; k < 8; ++k) out[k] = l[k];
}
// The 32 float lanes folded to one in a fixed tree, lane k += lane k + w for w = 16, 8, 4, 2, 1
// (k < w), in registers: while a level spans whole vectors it adds vector j + n / 2 to vector
// j, then each level adds the upper half of the one vector left to its lower half, so every
// level adds the same lanes in the same order. (Through a `float[32]` on the stack the
// narrowing loads missed store forwarding: ~100 cycles a fold on Zen 4.)
typedef float VecF8 __attribute__((vector_size(8 * sizeof(float))));
typedef float VecF4 __attribute__((vector_size(4 * sizeof(float))));
static inline float fold_lanes(const VecF* acc) {
  VecF v[kVecs];
  for (int j = 0; j < kVecs; ++j) v[j] = acc[j];
  for (int n = kVecs; n > 1; n /= 2) {
    for (int j = 0; j < n / 2; ++j) v[j] += v[j + n / 2];
  }
  VecF4 q;
#if defined(__AVX512F__)
  const VecF8 o = __builtin_shufflevector(v[0], v[0], 0, 1, 2, 3, 4, 5, 6, 7) +
                  __builtin_shufflevector(v[0], v[0], 8, 9, 10, 11, 12, 13, 14, 15);
  q = __builtin_shufflevector(o, o, 0, 1, 2, 3) + __builtin_shufflevector(o, o, 4, 5, 6, 7);
#elif defined(__AVX__)
  q = __builtin_shufflevector(v[0], v[0], 0, 1, 2, 3) + __builtin_shufflevector(v[0], v[0], 4, 5, 6, 7);
#else
  q = v[0];
#endif
  const float a = q[0] + q[2], b = q[1] + q[3];
  return a + b;
}
}  // namespace plane

// float: blocks of 256 values summed in float by 32 lanes (8 additions each, so the float
// rounding stays at a few ulps of the block sum), each lane's block sums added in its own
// double lane, the 32 double lanes folded in a fixed tree at the end; a last partial block
// in whole groups of 32 the same way, the last < 32 values in 8 double lanes (Note [Lanes as
// vector types]). (Folding each block's lanes into one double at once ran as scalar code: a
// third of a 4096-float row's time.)
static inline double float_run_sum(const float* p, int64_t n) {
  using namespace plane;
  constexpr int64_t kBlock = 256;
  VecD lanes_d[2 * kVecs] = {};
  int64_t i = 0;
  while (i + kLanes <= n) {
    const int64_t end = i + kBlock <= n ? i + kBlock : i + (n - i) / kLanes * kLanes;
    VecF acc[kVecs] = {};
    for (; i < end; i += kLanes) {
      for (int j = 0; j < kVecs; ++j) acc[j] += load(p + i + j * kVecF);
    }
    add_in_double(acc, lanes_d);
  }
  double lanes[8];
  fold_to_eight(lanes_d, lanes);
  for (int k = 0; i < n; ++i, k = (k + 1) & 7) lanes[k] += static_cast<double>(p[i]);
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

// Sums about a shift c: *s1 = the sum of d and *s2 = the sum of d * d over p[0, n), d = p[i] -
// c, in the lanes of float_run_sum (d and d * d in float, blocks of 256 values by 32 lanes,
// the block sums in double lanes, a fixed tree at the end; the last < 32 values in double).
// Note [Row variance about a shift] (reduce.cpp).
static inline void float_run_shifted_sums(const float* p, int64_t n, float c, double* s1, double* s2) {
  using namespace plane;
  constexpr int64_t kBlock = 256;
  VecD d1[2 * kVecs] = {}, d2[2 * kVecs] = {};
  int64_t i = 0;
  while (i + kLanes <= n) {
    const int64_t end = i + kBlock <= n ? i + kBlock : i + (n - i) / kLanes * kLanes;
    VecF a1[kVecs] = {}, a2[kVecs] = {};
    for (; i < end; i += kLanes) {
      for (int j = 0; j < kVecs; ++j) {
        const VecF d = load(p + i + j * kVecF) - c;
        a1[j] += d;
        a2[j] += d * d;
      }
    }
    add_in_double(a1, d1);
    add_in_double(a2, d2);
  }
  double l1[8], l2[8];
  fold_to_eight(d1, l1);
  fold_to_eight(d2, l2);
  for (int k = 0; i < n; ++i, k = (k + 1) & 7) {
    const double d = static_cast<double>(p[i]) - static_cast<double>(c);
    l1[k] += d;
    l2[k] += d * d;
  }
  *s1 = ((l1[0] + l1[1]) + (l1[2] + l1[3])) + ((l1[4] + l1[5]) + (l1[6] + l1[7]));
  *s2 = ((l2[0] + l2[1]) + (l2[2] + l2[3])) + ((l2[4] + l2[5]) + (l2[6] + l2[7]));
}

// double: 8 lanes.
static inline double double_run_sum(const double* p, int64_t n) {
  double acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) acc[k] += p[i + k];
  }
  for (int k = 0; i < n; ++i, ++k) acc[k] += p[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static inline double run_sum(const float* p, int64_t n) { return float_run_sum(p, n); }
static inline double run_sum(const double* p, int64_t n) { return double_run_sum(p, n); }

// part[o] += the sum of plane o of one image (`channels` contiguous planes of `plane` values):
// a convolution's bias gradient, one image at a time (Note [Bias gradient with the weight
// gradient] in conv.cpp).
template <typename T>
static inline void add_plane_sums(double* part, const T* image, int64_t channels, int64_t plane) {
  for (int64_t o = 0; o < channels; ++o) part[o] += run_sum(image + o * plane, plane);
}

// out[o] = the sum over c < chunks of part[c * channels + o], added in chunk order.
template <typename T>
static inline void sum_chunk_partials(const double* part, int64_t chunks, int64_t channels, T* out) {
  for (int64_t o = 0; o < channels; ++o) {
    double sum = 0;
    for (int64_t c = 0; c < chunks; ++c) sum += part[c * channels + o];
    out[o] = static_cast<T>(sum);
  }
}

}  // namespace ember::kernels::cpu
