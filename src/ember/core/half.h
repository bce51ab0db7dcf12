// 16-bit floating point value types: IEEE binary16 (`Half`) and bfloat16 (`BFloat16`).
//
// Both are storage types: arithmetic is performed in float and rounded back, which matches
// c10::Half / c10::BFloat16. This header is included by most kernels, so it deliberately pulls
// in nothing heavier than <bit> and <cstdint>.
#pragma once

#include <bit>
#include <cstdint>

namespace ember {

// ---------------------------------------------------------------------------------------------
// Bit-level conversions. These are what kernels call in hot loops; they are constexpr (and hence
// inline) and free of undefined behaviour (std::bit_cast, unsigned arithmetic only).
// ---------------------------------------------------------------------------------------------

/// Converts IEEE binary16 bits to float. Exact for every input, including subnormals, infinities
/// and NaN (the NaN payload is kept in the high mantissa bits).
constexpr float half_bits_to_float(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) {
    return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  }
  if (exp != 0) {
    // Rebias from 15 to 127; the mantissa just widens from 10 to 23 bits.
    return std::bit_cast<float>(sign | ((exp + (127 - 15)) << 23) | (mant << 13));
  }
  // Zero or subnormal: the value is mant * 2^-24, and both factors are exact in float, so the
  // product is exact (and always a normal float, so FTZ/DAZ modes cannot disturb it).
  const float magnitude = static_cast<float>(mant) * 0x1p-24f;
  return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
}

/// Converts a float to IEEE binary16 bits with round-to-nearest-even. Overflow gives +/-inf,
/// NaN gives a quiet NaN with the same sign, and tiny values round to correctly rounded
/// subnormals (or signed zero).
constexpr uint16_t float_to_half_bits(float f) noexcept {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7FFFFFFFu;

  if (a >= 0x47800000u) {  // |f| >= 65536, inf or NaN: nothing finite is reachable.
    // Force the quiet bit so a payload living only in the low bits cannot turn NaN into inf.
    const uint32_t nan = 0x7E00u | ((a >> 13) & 0x3FFu);
    return static_cast<uint16_t>(sign | (a > 0x7F800000u ? nan : 0x7C00u));
  }
  if (a >= 0x38800000u) {  // |f| >= 2^-14: result is normal, or overflows to inf by rounding.
    // Adding 0xFFF plus the lowest kept bit rounds the 13 dropped bits to nearest-even; a carry
    // ripples into the exponent, which is exactly what rounding up to the next binade needs
    // (including up to 0x7C00 for values in [65520, 65536)). The exponent is rebiased in the same
    // addition: 0xC8000000 is -(127 - 15) << 23 modulo 2^32.
    const uint32_t odd = (a >> 13) & 1u;
    return static_cast<uint16_t>(sign | ((a + 0xC8000FFFu + odd) >> 13));
  }
  // Result is subnormal or zero, counted in units of 2^-24. The value is m * 2^(e - 150), i.e.
  // m >> (126 - e) units. Shifts of 25 or more always round to zero because m < 2^24, so the
  // shift is clamped there; this also covers float zeros and subnormals (e == 0).
  // Integer rounding keeps this independent of the dynamic FP rounding mode.
  const uint32_t e = a >> 23;
  const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = e < 101 ? 25u : 126u - e;
  const uint32_t odd = (m >> shift) & 1u;
  // A result of 0x400 (rounded up out of the subnormal range) is the encoding of 2^-14.
  return static_cast<uint16_t>(sign | ((m + (1u << (shift - 1)) - 1u + odd) >> shift));
}

/// Converts bfloat16 bits to float. Exact: bfloat16 is the high half of a float.
constexpr float bf16_bits_to_float(uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

/// Converts a float to bfloat16 bits with round-to-nearest-even. Overflow gives +/-inf and NaN
/// gives a quiet NaN with the same sign.
constexpr uint16_t float_to_bf16_bits(float f) noexcept {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    // Truncating a NaN whose payload is all in the low 16 bits would yield inf; setting the quiet
    // bit keeps it a NaN.
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  }
  // Same carry trick as for half. It cannot wrap: the largest non-NaN input is 0xFF800000.
  const uint32_t odd = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7FFFu + odd) >> 16);
}

// ---------------------------------------------------------------------------------------------
// Operators, shared by both value types.
//
// Results are computed in float and rounded once. For + - * / that double rounding is harmless:
// float carries at least 2p + 2 significand bits for both formats, so rounding the float result
// gives the same value as rounding the exact one.
//
// Comparisons are deliberately not declared: the implicit conversion to float makes the built-in
// float comparisons apply to every mix of Half/BFloat16 and arithmetic types, whereas declaring
// (Half, Half) overloads would make e.g. `h < 1.0f` ambiguous.
//
// Mixed operands follow c10: with float or double the result widens to that type; with an
// integer it stays in the 16-bit type.
//
// They are hidden friends so that they are found only by ADL on a Half/BFloat16 operand; as
// namespace-scope functions they would join overload resolution for unrelated code in ember.
// ---------------------------------------------------------------------------------------------

// Expands inside the class body of T; a macro keeps the two types' operator sets identical.
#define EMBER_HALF_FRIEND_OPERATORS_(T)                                                          \
  /** Negation; flipping the sign bit is exactly IEEE negate, without a round trip. */           \
  friend constexpr T operator-(T a) noexcept {                                                   \
    return T::from_bits(static_cast<uint16_t>(a.x ^ 0x8000u));                                   \
  }                                                                                              \
  /** Identity. */                                                                               \
  friend constexpr T operator+(T a) noexcept { return a; }                                       \
  /** T op T, rounded once to T. */                                                              \
  friend constexpr T operator+(T a, T b) noexcept { return T(float(a) + float(b)); }             \
  friend constexpr T operator-(T a, T b) noexcept { return T(float(a) - float(b)); }             \
  friend constexpr T operator*(T a, T b) noexcept { return T(float(a) * float(b)); }             \
  friend constexpr T operator/(T a, T b) noexcept { return T(float(a) / float(b)); }             \
  /** Compound assignment, rounded once to T. */                                                 \
  friend constexpr T& operator+=(T& a, T b) noexcept { return a = a + b; }                       \
  friend constexpr T& operator-=(T& a, T b) noexcept { return a = a - b; }                       \
  friend constexpr T& operator*=(T& a, T b) noexcept { return a = a * b; }                       \
  friend constexpr T& operator/=(T& a, T b) noexcept { return a = a / b; }                       \
  /** T op float widens to float. */                                                             \
  friend constexpr float operator+(T a, float b) noexcept { return float(a) + b; }               \
  friend constexpr float operator-(T a, float b) noexcept { return float(a) - b; }               \
  friend constexpr float operator*(T a, float b) noexcept { return float(a) * b; }               \
  friend constexpr float operator/(T a, float b) noexcept { return float(a) / b; }               \
  friend constexpr float operator+(float a, T b) noexcept { return a + float(b); }               \
  friend constexpr float operator-(float a, T b) noexcept { return a - float(b); }               \
  friend constexpr float operator*(float a, T b) noexcept { return a * float(b); }               \
  friend constexpr float operator/(float a, T b) noexcept { return a / float(b); }               \
  /** Accumulating into a float keeps the accumulator in float. */                               \
  friend constexpr float& operator+=(float& a, T b) noexcept { return a += float(b); }           \
  friend constexpr float& operator-=(float& a, T b) noexcept { return a -= float(b); }           \
  friend constexpr float& operator*=(float& a, T b) noexcept { return a *= float(b); }           \
  friend constexpr float& operator/=(float& a, T b) noexcept { return a /= float(b); }           \
  /** T op double widens to double. */                                                           \
  friend constexpr double operator+(T a, double b) noexcept { return double(float(a)) + b; }     \
  friend constexpr double operator-(T a, double b) noexcept { return double(float(a)) - b; }     \
  friend constexpr double operator*(T a, double b) noexcept { return double(float(a)) * b; }     \
  friend constexpr double operator/(T a, double b) noexcept { return double(float(a)) / b; }     \
  friend constexpr double operator+(double a, T b) noexcept { return a + double(float(b)); }     \
  friend constexpr double operator-(double a, T b) noexcept { return a - double(float(b)); }     \
  friend constexpr double operator*(double a, T b) noexcept { return a * double(float(b)); }     \
  friend constexpr double operator/(double a, T b) noexcept { return a / double(float(b)); }     \
  /** T op integer stays in T (the integer is first rounded to T, as in c10). */                 \
  friend constexpr T operator+(T a, int b) noexcept { return a + T(static_cast<float>(b)); }     \
  friend constexpr T operator-(T a, int b) noexcept { return a - T(static_cast<float>(b)); }     \
  friend constexpr T operator*(T a, int b) noexcept { return a * T(static_cast<float>(b)); }     \
  friend constexpr T operator/(T a, int b) noexcept { return a / T(static_cast<float>(b)); }     \
  friend constexpr T operator+(int a, T b) noexcept { return T(static_cast<float>(a)) + b; }     \
  friend constexpr T operator-(int a, T b) noexcept { return T(static_cast<float>(a)) - b; }     \
  friend constexpr T operator*(int a, T b) noexcept { return T(static_cast<float>(a)) * b; }     \
  friend constexpr T operator/(int a, T b) noexcept { return T(static_cast<float>(a)) / b; }     \
  friend constexpr T operator+(T a, int64_t b) noexcept { return a + T(static_cast<float>(b)); } \
  friend constexpr T operator-(T a, int64_t b) noexcept { return a - T(static_cast<float>(b)); } \
  friend constexpr T operator*(T a, int64_t b) noexcept { return a * T(static_cast<float>(b)); } \
  friend constexpr T operator/(T a, int64_t b) noexcept { return a / T(static_cast<float>(b)); } \
  friend constexpr T operator+(int64_t a, T b) noexcept { return T(static_cast<float>(a)) + b; } \
  friend constexpr T operator-(int64_t a, T b) noexcept { return T(static_cast<float>(a)) - b; } \
  friend constexpr T operator*(int64_t a, T b) noexcept { return T(static_cast<float>(a)) * b; } \
  friend constexpr T operator/(int64_t a, T b) noexcept { return T(static_cast<float>(a)) / b; }

// ---------------------------------------------------------------------------------------------
// Value types.
// ---------------------------------------------------------------------------------------------

/// IEEE 754 binary16 value (1 sign, 5 exponent, 10 mantissa bits); the layout of c10::Half.
struct Half {
  /// Raw IEEE binary16 bits.
  uint16_t x = 0;

  /// Tag selecting the raw-bits constructor, so it cannot be confused with a numeric one.
  struct FromBitsTag {};

  /// Positive zero.
  constexpr Half() noexcept = default;
  /// Wraps raw bits without conversion.
  constexpr Half(uint16_t bits, FromBitsTag) noexcept : x(bits) {}
  /// Rounds a float to the nearest half (ties to even). Implicit, like c10::Half.
  constexpr Half(float f) noexcept  // NOLINT(google-explicit-constructor)
      : x(float_to_half_bits(f)) {}

  /// Wraps raw bits without conversion.
  static constexpr Half from_bits(uint16_t bits) noexcept { return Half(bits, FromBitsTag{}); }

  /// Exact widening to float.
  constexpr operator float() const noexcept {  // NOLINT(google-explicit-constructor)
    return half_bits_to_float(x);
  }

  EMBER_HALF_FRIEND_OPERATORS_(Half)

  // Classification straight from the bits, found by ADL (`isnan(h)`, or after `using std::isnan`).

  /// True if `h` is a NaN (exponent all ones, mantissa nonzero).
  friend constexpr bool isnan(Half h) noexcept { return (h.x & 0x7FFFu) > 0x7C00u; }
  /// True if `h` is +inf or -inf.
  friend constexpr bool isinf(Half h) noexcept { return (h.x & 0x7FFFu) == 0x7C00u; }
  /// True if `h` is neither infinite nor NaN.
  friend constexpr bool isfinite(Half h) noexcept { return (h.x & 0x7C00u) != 0x7C00u; }
};

/// bfloat16 value (1 sign, 8 exponent, 7 mantissa bits); the layout of c10::BFloat16.
struct BFloat16 {
  /// Raw bfloat16 bits (the high 16 bits of the corresponding float).
  uint16_t x = 0;

  /// Tag selecting the raw-bits constructor, so it cannot be confused with a numeric one.
  struct FromBitsTag {};

  /// Positive zero.
  constexpr BFloat16() noexcept = default;
  /// Wraps raw bits without conversion.
  constexpr BFloat16(uint16_t bits, FromBitsTag) noexcept : x(bits) {}
  /// Rounds a float to the nearest bfloat16 (ties to even). Implicit, like c10::BFloat16.
  constexpr BFloat16(float f) noexcept  // NOLINT(google-explicit-constructor)
      : x(float_to_bf16_bits(f)) {}

  /// Wraps raw bits without conversion.
  static constexpr BFloat16 from_bits(uint16_t bits) noexcept {
    return BFloat16(bits, FromBitsTag{});
  }

  /// Exact widening to float.
  constexpr operator float() const noexcept {  // NOLINT(google-explicit-constructor)
    return bf16_bits_to_float(x);
  }

  EMBER_HALF_FRIEND_OPERATORS_(BFloat16)

  // Classification straight from the bits, found by ADL (`isnan(b)`, or after `using std::isnan`).

  /// True if `b` is a NaN (exponent all ones, mantissa nonzero).
  friend constexpr bool isnan(BFloat16 b) noexcept { return (b.x & 0x7FFFu) > 0x7F80u; }
  /// True if `b` is +inf or -inf.
  friend constexpr bool isinf(BFloat16 b) noexcept { return (b.x & 0x7FFFu) == 0x7F80u; }
  /// True if `b` is neither infinite nor NaN.
  friend constexpr bool isfinite(BFloat16 b) noexcept { return (b.x & 0x7F80u) != 0x7F80u; }
};

#undef EMBER_HALF_FRIEND_OPERATORS_

static_assert(sizeof(Half) == 2 && alignof(Half) == 2, "Half must be a 2-byte value");
static_assert(sizeof(BFloat16) == 2 && alignof(BFloat16) == 2, "BFloat16 must be a 2-byte value");

}  // namespace ember
