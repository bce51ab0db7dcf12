// Direct kernels for float convolutions with few input values per output (Note [Few-tap
// convolutions] in conv.h): the products of one image's weight with its im2col columns,
// written as fixed-size register blocks instead of a BLAS call.

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "ember/kernels/cpu/conv.h"

namespace ember::kernels::cpu::EMBER_CPU_NS {  // compiled per ISA level (kernels/cpu/isa.h)

namespace {

// Forward block: kO output channels x kP positions in registers.
constexpr int64_t kO = 4, kP = 16;
// Weight-gradient block: kGo output channels x kGk taps, each summed in kL fixed lanes.
constexpr int64_t kGo = 2, kGk = 4, kL = 8;

// y[o, p] for o in [o0, o0 + no), p in [p0, p1) one element at a time, in the same order
// as the blocks (bias first, then the taps in order; -ffp-contract=off keeps the products
// unfused at every level), so a value does not depend on where its block boundary fell.
void forward_scalar(float* y, const float* col, const float* w, const float* b, int64_t o0, int64_t no, int64_t K,
                    int64_t P, int64_t p0, int64_t p1) {
  for (int64_t i = 0; i < no; ++i) {
    const float* wo = w + (o0 + i) * K;
    for (int64_t p = p0; p < p1; ++p) {
      float a = b ? b[o0 + i] : 0.0f;
      for (int64_t k = 0; k < K; ++k) a += wo[k] * col[k * P + p];
      y[(o0 + i) * P + p] = a;
    }
  }
}

// The sum over p of dy[o, p] * col[k, p] for one (o, k), in kL lanes (lane l takes the p
// with p % kL == l) folded in a fixed tree.
float dot_lanes(const float* a, const float* c, int64_t P) {
  float lane[kL] = {};
  int64_t p = 0;
  for (; p + kL <= P; p += kL) {
    for (int64_t l = 0; l < kL; ++l) lane[l] += a[p + l] * c[p + l];
  }
  for (int64_t l = 0; p < P; ++p, ++l) lane[l] += a[p] * c[p];
  return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

#if defined(__AVX2__)
// Channels o0 .. o0 + NO - 1 against taps k0 .. k0 + NK - 1 (Note in conv_few_taps_weight_grad).
template <int NO, int NK, typename Put>
void weight_grad_block(const float* dy, const float* col, int64_t o0, int64_t k0, int64_t P, Put& put) {
  const int64_t P8 = P / kL * kL;
  __m256 acc[NO][NK];
  for (int64_t i = 0; i < NO; ++i) {
    for (int j = 0; j < NK; ++j) acc[i][j] = _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < P8; p += kL) {
    __m256 a[NO];
    for (int i = 0; i < NO; ++i) a[i] = _mm256_loadu_ps(dy + (o0 + i) * P + p);
    for (int j = 0; j < NK; ++j) {
      const __m256 c = _mm256_loadu_ps(col + (k0 + j) * P + p);
      for (int i = 0; i < NO; ++i) acc[i][j] = _mm256_add_ps(acc[i][j], _mm256_mul_ps(a[i], c));
    }
  }
  for (int64_t i = 0; i < NO; ++i) {
    for (int j = 0; j < NK; ++j) {
      alignas(32) float ln[kL];
      _mm256_store_ps(ln, acc[i][j]);
      for (int64_t p = P8, l = 0; p < P; ++p, ++l) ln[l] += dy[(o0 + i) * P + p] * col[(k0 + j) * P + p];
      put(o0 + i, k0 + j, ((ln[0] + ln[4]) + (ln[2] + ln[6])) + ((ln[1] + ln[5]) + (ln[3] + ln[7])));
    }
  }
}
#endif

}  // namespace

void conv_few_taps_forward(float* y, const float* col, const float* w, const float* b, int64_t O, int64_t K,
                           int64_t P) {
  int64_t o0 = 0;
#if defined(__AVX2__)
  // 4 channels x 16 positions in eight 8-float registers. Products and sums are separate
  // instructions (no FMA), as in forward_scalar, so every level rounds alike.
  for (; o0 + kO <= O; o0 += kO) {
    int64_t p0 = 0;
    for (; p0 + kP <= P; p0 += kP) {
      __m256 acc[kO][2];
      for (int64_t i = 0; i < kO; ++i) acc[i][0] = acc[i][1] = _mm256_set1_ps(b ? b[o0 + i] : 0.0f);
      for (int64_t k = 0; k < K; ++k) {
        const __m256 c0 = _mm256_loadu_ps(col + k * P + p0), c1 = _mm256_loadu_ps(col + k * P + p0 + 8);
        for (int64_t i = 0; i < kO; ++i) {
          const __m256 wv = _mm256_set1_ps(w[(o0 + i) * K + k]);
          acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_mul_ps(wv, c0));
          acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_mul_ps(wv, c1));
        }
      }
      for (int64_t i = 0; i < kO; ++i) {
        _mm256_storeu_ps(y + (o0 + i) * P + p0, acc[i][0]);
        _mm256_storeu_ps(y + (o0 + i) * P + p0 + 8, acc[i][1]);
      }
    }
    forward_scalar(y, col, w, b, o0, kO, K, P, p0, P);
  }
#endif
  forward_scalar(y, col, w, b, o0, O - o0, K, P, 0, P);
}

void conv_few_taps_weight_grad(float* dw, const float* dy, const float* col, int64_t O, int64_t K, int64_t P,
                               bool accumulate) {
  auto put = [&](int64_t o, int64_t k, float s) {
    float& out = dw[o * K + k];
    out = accumulate ? out + s : s;
  };
  int64_t o0 = 0;
#if defined(__AVX2__)
  // Blocks of channels x taps, each an 8-float register of lanes (lane l: positions
  // p % 8 == l, exactly dot_lanes' lanes), so every level and block shape gets dot_lanes'
  // bits. With 32 vector registers (AVX-512), 4 channels x 3 taps when K is a multiple of 3
  // (a 3x3 kernel on one channel: no 1-tap remainder block, 7 loads per 24 operations).
#if defined(__AVX512F__)
  if (K % 3 == 0) {
    for (; o0 + 4 <= O; o0 += 4) {
      for (int64_t k0 = 0; k0 < K; k0 += 3) weight_grad_block<4, 3>(dy, col, o0, k0, P, put);
    }
  }
#endif
  for (; o0 + kGo <= O; o0 += kGo) {
    int64_t k0 = 0;
    for (; k0 + kGk <= K; k0 += kGk) weight_grad_block<kGo, kGk>(dy, col, o0, k0, P, put);
    switch (K - k0) {
      case 3:
        weight_grad_block<kGo, 3>(dy, col, o0, k0, P, put);
        break;
      case 2:
        weight_grad_block<kGo, 2>(dy, col, o0, k0, P, put);
        break;
      case 1:
        weight_grad_block<kGo, 1>(dy, col, o0, k0, P, put);
        break;
      default:
        break;
    }
  }
#endif
  for (; o0 < O; ++o0) {
    for (int64_t k = 0; k < K; ++k) put(o0, k, dot_lanes(dy + o0 * P, col + k * P, P));
  }
}

}  // namespace ember::kernels::cpu::EMBER_CPU_NS
