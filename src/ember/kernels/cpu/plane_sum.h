#pragma once
// Internal: the sum of a run of contiguous values in double, in a fixed order that does not
// depend on the ISA level or thread count. Static (one copy per translation unit): the
// kernels are compiled once per ISA level, and an inline function shared between those
// copies could resolve to the wrong level's code.

#include <cstdint>

namespace ember::kernels::cpu {

// float: blocks of 256 values summed in float by 32 lanes (8 additions each, so the float
// rounding stays at a few ulps of the block sum), then whole groups of 32 the same way, block
// sums added in double; the last < 32 values in 8 double lanes.
static inline double float_run_sum(const float* p, int64_t n) {
  constexpr int64_t kBlock = 256, kAcc = 32;
  double total = 0;
  int64_t i = 0;
  auto fold = [](float* acc) {
    for (int64_t w = kAcc / 2; w >= 1; w /= 2) {
      for (int64_t k = 0; k < w; ++k) acc[k] += acc[k + w];
    }
    return static_cast<double>(acc[0]);
  };
  for (; i + kBlock <= n; i += kBlock) {
    float acc[kAcc] = {};
    for (int64_t j = 0; j < kBlock; j += kAcc) {
      for (int64_t k = 0; k < kAcc; ++k) acc[k] += p[i + j + k];
    }
    total += fold(acc);
  }
  // A last partial block (or a short run: the 196-value planes of a 14x14 map) in whole
  // groups of 32 lanes, so that short runs stay vectorised.
  if (i + kAcc <= n) {
    float acc[kAcc] = {};
    for (; i + kAcc <= n; i += kAcc) {
      for (int64_t k = 0; k < kAcc; ++k) acc[k] += p[i + k];
    }
    total += fold(acc);
  }
  double tail[8] = {};
  for (int k = 0; i < n; ++i, k = (k + 1) & 7) tail[k] += static_cast<double>(p[i]);
  return total + (((tail[0] + tail[1]) + (tail[2] + tail[3])) + ((tail[4] + tail[5]) + (tail[6] + tail[7])));
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
