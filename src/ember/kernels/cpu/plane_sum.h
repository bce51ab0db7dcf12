#pragma once
// Internal: the sum of a run of contiguous values in double, in a fixed order that does not
// depend on the ISA level or thread count. Static (one copy per translation unit): the
// kernels are compiled once per ISA level, and an inline function shared between those
// copies could resolve to the wrong level's code.

#include <cstdint>

namespace ember::kernels::cpu {

// float: blocks of 256 values summed in float by 32 lanes (8 additions each, so the float
// rounding stays at a few ulps of the block sum), each lane's block sums added in its own
// double lane, the 32 double lanes folded in a fixed tree at the end; a last partial block
// in whole groups of 32 the same way, the last < 32 values in 8 double lanes. (Folding each
// block's lanes into one double at once ran as scalar code: a third of a 4096-float row's
// time.)
static inline double float_run_sum(const float* p, int64_t n) {
  constexpr int64_t kBlock = 256, kAcc = 32;
  double lanes[kAcc] = {};
  int64_t i = 0;
  while (i + kAcc <= n) {
    const int64_t end = i + kBlock <= n ? i + kBlock : i + (n - i) / kAcc * kAcc;
    float acc[kAcc] = {};
    for (; i < end; i += kAcc) {
      for (int64_t k = 0; k < kAcc; ++k) acc[k] += p[i + k];
    }
    for (int64_t k = 0; k < kAcc; ++k) lanes[k] += static_cast<double>(acc[k]);
  }
  for (int64_t w = kAcc / 2; w >= 8; w /= 2) {
    for (int64_t k = 0; k < w; ++k) lanes[k] += lanes[k + w];
  }
  for (int k = 0; i < n; ++i, k = (k + 1) & 7) lanes[k] += static_cast<double>(p[i]);
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
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
