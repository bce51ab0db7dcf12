#include <cstring>

#include <immintrin.h>

#include "ember/kernels/cpu/dispatch.h"
#include "ember/kernels/cpu/iter.h"
#include "ember/kernels/cpu/kernels.h"

namespace ember::kernels::cpu::EMBER_CPU_NS {  // compiled per ISA level (kernels/cpu/isa.h)

#if defined(__AVX2__)
// Note [Vectorised bfloat16 conversion]: float32 -> bfloat16 rounds to nearest even by adding
// 0x7FFF plus the lowest kept bit and dropping the low 16 bits; a NaN instead keeps its high
// half with the quiet bit set (plain rounding could carry a NaN into infinity). These are
// float_to_bf16_bits's steps (core/half.h) on eight floats at once, so every level gives the
// scalar conversion's bits; tests compare them on every class of value. bfloat16 -> float32
// is exact: the 16 bits become the high half of the float.
// The eight results, each in the low 16 bits of a 32-bit lane.
inline __m256i bf16_bits8(__m256i u) {
  const __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7F800000));
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), odd), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x0040));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}
#endif

void copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  ElementwiseIter it(dst.sizes());
  it.add(dst);
  it.add(src);
  it.build();
  const DType dt = dst.dtype(), st = src.dtype();
  dispatch_all(dt, "copy_", [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    dispatch_all(st, "copy_", [&](auto stag) {
      using S = typename decltype(stag)::type;
      it.for_each([](char** data, const int64_t* strides, int64_t n) {
        char* out = data[0];
        const char* in = data[1];
        if (strides[0] == sizeof(D) && strides[1] == sizeof(S)) {
          if constexpr (std::is_same_v<D, S>) {
            std::memcpy(out, in, static_cast<size_t>(n) * sizeof(D));
          } else {
            D* o = reinterpret_cast<D*>(out);
            const S* s = reinterpret_cast<const S*>(in);
            int64_t i = 0;
#if defined(__F16C__)
            // float16 -> float32 with the F16C instruction (avx2/avx512 levels): the same
            // exact values as the bit conversion in half.h (a signalling NaN comes out quiet).
            if constexpr (std::is_same_v<D, float> && std::is_same_v<S, Half>) {
              for (; i + 8 <= n; i += 8) {
                _mm256_storeu_ps(o + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
              }
            }
#endif
#if defined(__AVX2__)
            // bfloat16 <-> float32 in integer lanes, the same bits as half.h's scalar conversions
            // (Note [Vectorised bfloat16 conversion] below).
            if constexpr (std::is_same_v<D, float> && std::is_same_v<S, BFloat16>) {
              for (; i + 8 <= n; i += 8) {
                const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), _mm256_slli_epi32(h, 16));
              }
            } else if constexpr (std::is_same_v<D, BFloat16> && std::is_same_v<S, float>) {
              for (; i + 16 <= n; i += 16) {
                const __m256i lo = bf16_bits8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
                const __m256i hi = bf16_bits8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 8)));
                // packus interleaves 128-bit lanes: [lo0 hi0 lo1 hi1] -> [lo0 lo1 hi0 hi1].
                const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), packed);
              }
            }
#endif
            for (; i < n; ++i) o[i] = convert<D>(s[i]);
          }
        } else if (strides[1] == 0) {
          D v = convert<D>(*reinterpret_cast<const S*>(in));
          for (int64_t i = 0; i < n; ++i) *reinterpret_cast<D*>(out + i * strides[0]) = v;
        } else {
          for (int64_t i = 0; i < n; ++i) {
            *reinterpret_cast<D*>(out + i * strides[0]) =
                convert<D>(*reinterpret_cast<const S*>(in + i * strides[1]));
          }
        }
      });
    });
  });
}

void fill(const Tensor& dst, const Scalar& value) {
  if (dst.numel() == 0) return;
  ElementwiseIter it(dst.sizes());
  it.add(dst);
  it.build();
  dispatch_all(dst.dtype(), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    if (value.is_floating_point()) {
      v = convert<T>(value.to_double());
    } else if (value.is_boolean()) {
      v = convert<T>(value.to_bool());
    } else {
      v = convert<T>(value.to_long());
    }
    it.for_each([v](char** data, const int64_t* strides, int64_t n) {
      if (strides[0] == sizeof(T)) {
        T* o = reinterpret_cast<T*>(data[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(data[0] + i * strides[0]) = v;
      }
    });
  });
}

}  // namespace ember::kernels::cpu::EMBER_CPU_NS
