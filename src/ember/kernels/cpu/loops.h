#pragma once
// Internal: loop templates over ElementwiseIter runs, shared by the element-wise kernels.
// Included only by kernel .cpp files (templates stay out of public headers).

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "ember/kernels/cpu/dispatch.h"
#include "ember/kernels/cpu/iter.h"

namespace ember::kernels {

// The type arithmetic happens in: float for the 16-bit floats, the type itself otherwise.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

// Integer +, -, * wrap around on overflow as in PyTorch (two's complement), without the
// undefined behaviour of signed overflow in C++: signed values go through their unsigned
// type (the same machine instructions). Other types use the plain operators.
template <typename C>
constexpr bool kWrapsThroughUnsigned = std::is_integral_v<C> && std::is_signed_v<C> && sizeof(C) >= sizeof(int);
template <typename C>
inline C wrapping_add(C x, C y) {
  if constexpr (kWrapsThroughUnsigned<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(x) + static_cast<U>(y));
  } else {
    return static_cast<C>(x + y);
  }
}
template <typename C>
inline C wrapping_sub(C x, C y) {
  if constexpr (kWrapsThroughUnsigned<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(x) - static_cast<U>(y));
  } else {
    return static_cast<C>(x - y);
  }
}
template <typename C>
inline C wrapping_mul(C x, C y) {
  if constexpr (kWrapsThroughUnsigned<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(x) * static_cast<U>(y));
  } else {
    return static_cast<C>(x * y);
  }
}

template <typename T>
inline T& at(char* base, int64_t stride, int64_t i) {
  return *reinterpret_cast<T*>(base + i * stride);
}

// out[i] = f(a[i]) with out of type O and a of type A; f takes and returns acc types.
template <typename O, typename A, typename F>
void map1(const ElementwiseIter& it, F f, int64_t grain = 32768) {
  it.for_each(
      [&](char** d, const int64_t* s, int64_t n) {
        if (s[0] == sizeof(O) && s[1] == sizeof(A)) {
          O* o = reinterpret_cast<O*>(d[0]);
          const A* a = reinterpret_cast<const A*>(d[1]);
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f(static_cast<acc_t<A>>(a[i])));
        } else if (s[1] == 0) {
          const O v = static_cast<O>(f(static_cast<acc_t<A>>(*reinterpret_cast<const A*>(d[1]))));
          for (int64_t i = 0; i < n; ++i) at<O>(d[0], s[0], i) = v;
        } else {
          for (int64_t i = 0; i < n; ++i) {
            at<O>(d[0], s[0], i) = static_cast<O>(f(static_cast<acc_t<A>>(at<A>(d[1], s[1], i))));
          }
        }
      },
      grain);
}

// out[i] = f(a[i], b[i]); a and b of type A, out of type O. Contiguous and
// scalar-operand runs get their own loops so the compiler vectorises them.
template <typename O, typename A, typename F>
void map2(const ElementwiseIter& it, F f, int64_t grain = 32768) {
  using C = acc_t<A>;
  it.for_each(
      [&](char** d, const int64_t* s, int64_t n) {
        O* o = reinterpret_cast<O*>(d[0]);
        const A* a = reinterpret_cast<const A*>(d[1]);
        const A* b = reinterpret_cast<const A*>(d[2]);
        if (s[0] == sizeof(O) && s[1] == sizeof(A) && s[2] == sizeof(A)) {
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f(static_cast<C>(a[i]), static_cast<C>(b[i])));
        } else if (s[0] == sizeof(O) && s[1] == sizeof(A) && s[2] == 0) {
          const C bv = static_cast<C>(*b);
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f(static_cast<C>(a[i]), bv));
        } else if (s[0] == sizeof(O) && s[1] == 0 && s[2] == sizeof(A)) {
          const C av = static_cast<C>(*a);
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f(av, static_cast<C>(b[i])));
        } else {
          for (int64_t i = 0; i < n; ++i) {
            at<O>(d[0], s[0], i) = static_cast<O>(
                f(static_cast<C>(at<A>(d[1], s[1], i)), static_cast<C>(at<A>(d[2], s[2], i))));
          }
        }
      },
      grain);
}

// out[i] = f(a[i], b[i], c[i]) for arbitrary operand types (strided loop only).
template <typename O, typename A, typename B, typename Cc, typename F>
void map3(const ElementwiseIter& it, F f, int64_t grain = 32768) {
  it.for_each(
      [&](char** d, const int64_t* s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          at<O>(d[0], s[0], i) = static_cast<O>(f(static_cast<acc_t<A>>(at<A>(d[1], s[1], i)),
                                                  static_cast<acc_t<B>>(at<B>(d[2], s[2], i)),
                                                  static_cast<acc_t<Cc>>(at<Cc>(d[3], s[3], i))));
        }
      },
      grain);
}

}  // namespace ember::kernels
