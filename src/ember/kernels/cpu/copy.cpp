#include <cstring>

#include <immintrin.h>

#include "ember/kernels/cpu/dispatch.h"
#include "ember/kernels/cpu/iter.h"
#include "ember/kernels/cpu/kernels.h"

namespace ember::kernels::cpu::EMBER_CPU_NS {  // compiled per ISA level (kernels/cpu/isa.h)

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
