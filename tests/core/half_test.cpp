#include "ember/core/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace core_half_test {

static_assert(std::is_trivially_copyable_v<Half>);
static_assert(std::is_trivially_copyable_v<BFloat16>);
static_assert(std::is_standard_layout_v<Half>);
static_assert(std::is_standard_layout_v<BFloat16>);
static_assert(sizeof(Half) == 2 && alignof(Half) == 2);
static_assert(sizeof(BFloat16) == 2 && alignof(BFloat16) == 2);

// The conversions are constexpr, so kernels can build constant tables from them.
static_assert(float_to_half_bits(1.0f) == 0x3C00);
static_assert(half_bits_to_float(0x3C00) == 1.0f);
static_assert(float_to_bf16_bits(1.0f) == 0x3F80);
static_assert(bf16_bits_to_float(0x3F80) == 1.0f);
static_assert(Half::from_bits(0x4000) == 2.0f);

float FromBits(uint32_t bits) { return std::bit_cast<float>(bits); }
uint32_t ToBits(float f) { return std::bit_cast<uint32_t>(f); }

constexpr float kInf = std::numeric_limits<float>::infinity();

bool IsHalfNan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0; }
bool IsBf16Nan(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x007F) != 0; }

// ---------------------------------------------------------------------------------------------
// Slow references. They work on the value (frexp/ldexp/nearbyint in double) rather than on the
// bit layout, so they share no logic with the bit manipulation in half.h.
// ---------------------------------------------------------------------------------------------

// Rounds f to a format with `mant_bits` explicit mantissa bits, exponent bias `bias` and a
// biased exponent field of `exp_bits` bits, with round-half-even. Not for NaN.
uint16_t ReferenceRound(float f, int mant_bits, int exp_bits, int bias) {
  const uint32_t sign = std::signbit(f) ? 1u << (mant_bits + exp_bits) : 0u;
  const uint32_t inf = ((1u << exp_bits) - 1u) << mant_bits;
  const auto encode = [sign](uint32_t magnitude) {
    return static_cast<uint16_t>(sign | magnitude);
  };
  const double a = std::fabs(static_cast<double>(f));
  if (std::isinf(a)) return encode(inf);
  if (a == 0.0) return encode(0);

  int frexp_exp = 0;
  std::frexp(a, &frexp_exp);
  int e = frexp_exp - 1;  // 2^e <= a < 2^(e+1)
  const int min_normal_exp = 1 - bias;
  if (e < min_normal_exp) {
    // Subnormal range: count units of the smallest subnormal. Scaling by a power of two is exact
    // in double, so nearbyint performs the only rounding (ties to even in the default mode).
    // A result of 2^mant_bits lands exactly on the smallest normal's encoding.
    const double q = std::nearbyint(std::ldexp(a, mant_bits - min_normal_exp));
    return encode(static_cast<uint32_t>(q));
  }
  double q = std::nearbyint(std::ldexp(a, mant_bits - e));  // in [2^mant_bits, 2^(mant_bits+1)]
  if (q == std::ldexp(1.0, mant_bits + 1)) {
    q /= 2;
    ++e;
  }
  const int biased = e + bias;
  if (biased >= (1 << exp_bits) - 1) return encode(inf);
  const auto fraction = static_cast<uint32_t>(q) - (1u << mant_bits);
  return encode((static_cast<uint32_t>(biased) << mant_bits) | fraction);
}

uint16_t ReferenceFloatToHalf(float f) { return ReferenceRound(f, 10, 5, 15); }
uint16_t ReferenceFloatToBf16(float f) { return ReferenceRound(f, 7, 8, 127); }

// Decodes a non-NaN half from its fields.
float ReferenceHalfToFloat(uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exp = (h >> 10) & 0x1F;
  const int mant = h & 0x3FF;
  double v;
  if (exp == 0x1F) {
    v = std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else {
    v = std::ldexp(static_cast<double>(mant + 1024), exp - 25);
  }
  return static_cast<float>(sign ? -v : v);
}

// ---------------------------------------------------------------------------------------------
// Half: float -> bits.
// ---------------------------------------------------------------------------------------------

TEST(HalfTest, KnownBitPatterns) {
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half_bits(0.5f), 0x3800);
  EXPECT_EQ(float_to_half_bits(0.1f), 0x2E66);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half_bits(-65504.0f), 0xFBFF);
  EXPECT_EQ(float_to_half_bits(0x1p-14f), 0x0400);  // smallest normal
}

TEST(HalfTest, Overflow) {
  // 65520 is halfway between 65504 (max finite, odd mantissa) and 65536: ties to even, i.e. inf.
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00);
  EXPECT_EQ(float_to_half_bits(-65520.0f), 0xFC00);
  // Just below the midpoint still rounds down to the max finite value.
  EXPECT_EQ(float_to_half_bits(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(float_to_half_bits(65536.0f), 0x7C00);
  EXPECT_EQ(float_to_half_bits(1e10f), 0x7C00);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::max()), 0x7C00);
  EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::max()), 0xFC00);
}

TEST(HalfTest, Infinity) {
  EXPECT_EQ(float_to_half_bits(kInf), 0x7C00);
  EXPECT_EQ(float_to_half_bits(-kInf), 0xFC00);
}

TEST(HalfTest, NaN) {
  const uint16_t qnan = float_to_half_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(IsHalfNan(qnan));
  EXPECT_NE(qnan & 0x0200, 0) << "result should be a quiet NaN";

  // Payload only in bits that the conversion drops: truncation alone would give inf.
  const uint16_t low_payload = float_to_half_bits(FromBits(0x7F800001u));
  EXPECT_TRUE(IsHalfNan(low_payload));
  EXPECT_EQ(low_payload & 0x8000, 0);

  const uint16_t negative = float_to_half_bits(FromBits(0xFF800001u));
  EXPECT_TRUE(IsHalfNan(negative));
  EXPECT_EQ(negative & 0x8000, 0x8000) << "sign of NaN should be kept";

  const uint16_t signaling = float_to_half_bits(std::numeric_limits<float>::signaling_NaN());
  EXPECT_TRUE(IsHalfNan(signaling));
  EXPECT_NE(signaling & 0x0200, 0);
}

TEST(HalfTest, Subnormals) {
  EXPECT_EQ(float_to_half_bits(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(-0x1p-24f), 0x8001);
  EXPECT_EQ(float_to_half_bits(0x1p-25f), 0x0000);      // tie between 0 and 1 ulp: even is 0
  EXPECT_EQ(float_to_half_bits(-0x1p-25f), 0x8000);     // ... keeping the sign
  EXPECT_EQ(float_to_half_bits(3 * 0x1p-25f), 0x0002);  // tie between 1 and 2: even is 2
  EXPECT_EQ(float_to_half_bits(5 * 0x1p-25f), 0x0002);  // tie between 2 and 3: even is 2
  EXPECT_EQ(float_to_half_bits(std::nextafter(0x1p-25f, 1.0f)), 0x0001);  // just above the tie
  EXPECT_EQ(float_to_half_bits(1e-8f), 0x0000);            // ~0.17 of the smallest subnormal
  EXPECT_EQ(float_to_half_bits(1023 * 0x1p-24f), 0x03FF);  // largest subnormal
  // Halfway between the largest subnormal (odd) and the smallest normal rounds up to the normal.
  EXPECT_EQ(float_to_half_bits(1023.5f * 0x1p-24f), 0x0400);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::denorm_min()), 0x8000);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::min()), 0x0000);
}

TEST(HalfTest, RoundToNearestEven) {
  // Half has 10 mantissa bits, so near 1 the ulp is 2^-10 and 2^-11 is a tie.
  EXPECT_EQ(float_to_half_bits(1.0f + 0x1p-11f), 0x3C00);                 // tie, 0x3C00 is even
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * 0x1p-11f), 0x3C02);             // tie, 0x3C02 is even
  EXPECT_EQ(float_to_half_bits(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);      // above the tie
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * 0x1p-11f - 0x1p-20f), 0x3C01);  // below the tie
  EXPECT_EQ(float_to_half_bits(-(1.0f + 3 * 0x1p-11f)), 0xBC02);
  // A carry out of the mantissa moves to the next binade.
  EXPECT_EQ(float_to_half_bits(2.0f - 0x1p-12f), 0x4000);
}

// ---------------------------------------------------------------------------------------------
// Half: bits -> float.
// ---------------------------------------------------------------------------------------------

TEST(HalfTest, ToFloat) {
  EXPECT_EQ(half_bits_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(half_bits_to_float(0x03FF), 1023 * 0x1p-24f);
  EXPECT_EQ(half_bits_to_float(0x0400), 0x1p-14f);
  EXPECT_EQ(half_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_bits_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_bits_to_float(0x8001), -0x1p-24f);
  EXPECT_EQ(half_bits_to_float(0x7C00), kInf);
  EXPECT_EQ(half_bits_to_float(0xFC00), -kInf);

  const float neg_zero = half_bits_to_float(0x8000);
  EXPECT_EQ(neg_zero, 0.0f);
  EXPECT_TRUE(std::signbit(neg_zero));
  EXPECT_EQ(ToBits(neg_zero), 0x80000000u);
  EXPECT_EQ(ToBits(half_bits_to_float(0x0000)), 0x00000000u);

  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7E00)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7C01)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0xFE00)));
  EXPECT_TRUE(std::signbit(half_bits_to_float(0xFE00)));
}

TEST(HalfTest, ToFloatMatchesReferenceForAllPatterns) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto h = static_cast<uint16_t>(b);
    if (IsHalfNan(h)) {
      EXPECT_TRUE(std::isnan(half_bits_to_float(h))) << std::hex << b;
      continue;
    }
    // Compare bits, so that -0.0 vs +0.0 is checked too.
    ASSERT_EQ(ToBits(half_bits_to_float(h)), ToBits(ReferenceHalfToFloat(h))) << std::hex << b;
  }
}

TEST(HalfTest, ExhaustiveRoundTrip) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto h = static_cast<uint16_t>(b);
    if (IsHalfNan(h)) {
      EXPECT_TRUE(IsHalfNan(float_to_half_bits(half_bits_to_float(h)))) << std::hex << b;
      continue;
    }
    ASSERT_EQ(float_to_half_bits(half_bits_to_float(h)), h) << std::hex << b;
  }
}

TEST(HalfTest, MatchesReferenceOnRandomFloats) {
  std::mt19937 engine(12345);
  // mt19937 yields 32 random bits, but its result_type may be wider.
  auto rng = [&engine] { return static_cast<uint32_t>(engine()); };
  int checked = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    uint32_t bits = rng();
    switch (i % 5) {
      case 0:  // Any bit pattern: mostly values far outside the half range.
        break;
      case 1:  // Exponent in [2^-27, 2^17): subnormal, normal and overflow ranges of half.
        bits = (bits & 0x807FFFFFu) | ((100u + rng() % 44u) << 23);
        break;
      case 2:  // Exact ties on the half grid (for normal results): dropped bits are 1000...0.
        bits = (bits & 0x807FE000u) | 0x1000u | ((100u + rng() % 44u) << 23);
        break;
      case 3: {  // One float ulp either side of a tie.
        const uint32_t low = (rng() & 1u) ? 0x1001u : 0x0FFFu;
        bits = (bits & 0x807FE000u) | low | ((100u + rng() % 44u) << 23);
        break;
      }
      case 4:  // Multiples of 2^-25 below 2^-14: every other one is a tie between subnormals.
        bits = ToBits(static_cast<float>(rng() % 2048u) * 0x1p-25f) | (bits & 0x80000000u);
        break;
    }
    const float f = FromBits(bits);
    if (std::isnan(f)) {
      EXPECT_TRUE(IsHalfNan(float_to_half_bits(f))) << std::hex << bits;
      continue;
    }
    ASSERT_EQ(float_to_half_bits(f), ReferenceFloatToHalf(f))
        << "float bits 0x" << std::hex << bits << " (" << f << ")";
    ++checked;
  }
  EXPECT_GT(checked, 990'000);
}

// ---------------------------------------------------------------------------------------------
// Half value type.
// ---------------------------------------------------------------------------------------------

TEST(HalfTest, ValueType) {
  Half zero;
  EXPECT_EQ(zero.x, 0);
  EXPECT_EQ(Half::from_bits(0x3C00).x, 0x3C00);
  EXPECT_EQ(Half(0x3C00, Half::FromBitsTag{}).x, 0x3C00);

  Half h = 1.5f;
  EXPECT_EQ(h.x, 0x3E00);
  float f = h;
  EXPECT_EQ(f, 1.5f);
}

TEST(HalfTest, Arithmetic) {
  const Half a = 1.5f;
  const Half b = 0.25f;
  EXPECT_EQ(static_cast<float>(a + b), 1.75f);
  EXPECT_EQ(static_cast<float>(a - b), 1.25f);
  EXPECT_EQ(static_cast<float>(a * b), 0.375f);
  EXPECT_EQ(static_cast<float>(a / b), 6.0f);
  EXPECT_EQ((-a).x, 0xBE00);
  EXPECT_EQ((+a).x, a.x);
  EXPECT_EQ((-Half(0.0f)).x, 0x8000);

  // Results are rounded back to half: 1 + 2^-11 is a tie that rounds to 1.
  EXPECT_EQ((Half(1.0f) + Half(0x1p-11f)).x, 0x3C00);
  EXPECT_EQ((Half(60000.0f) + Half(60000.0f)).x, 0x7C00);

  Half c = 1.0f;
  c += Half(2.0f);
  EXPECT_EQ(static_cast<float>(c), 3.0f);
  c -= Half(1.0f);
  EXPECT_EQ(static_cast<float>(c), 2.0f);
  c *= Half(3.0f);
  EXPECT_EQ(static_cast<float>(c), 6.0f);
  c /= Half(4.0f);
  EXPECT_EQ(static_cast<float>(c), 1.5f);

  // Mixed-type operations widen to the wider floating type, or stay in half with integers.
  static_assert(std::is_same_v<decltype(a + 1.0f), float>);
  static_assert(std::is_same_v<decltype(1.0f * a), float>);
  static_assert(std::is_same_v<decltype(a - 1.0), double>);
  static_assert(std::is_same_v<decltype(a + 1), Half>);
  static_assert(std::is_same_v<decltype(2 * a), Half>);
  static_assert(std::is_same_v<decltype(a / int64_t{2}), Half>);
  EXPECT_EQ(a + 1.0f, 2.5f);
  EXPECT_EQ(a * 0.1, 1.5 * 0.1);
  EXPECT_EQ(static_cast<float>(a + 1), 2.5f);
  EXPECT_EQ(static_cast<float>(3 - a), 1.5f);

  float acc = 1.0f;
  acc += a;
  EXPECT_EQ(acc, 2.5f);
}

TEST(HalfTest, Comparisons) {
  const Half one = 1.0f;
  const Half two = 2.0f;
  EXPECT_TRUE(one < two);
  EXPECT_TRUE(two > one);
  EXPECT_TRUE(one <= one);
  EXPECT_TRUE(one == Half(1.0f));
  EXPECT_TRUE(one != two);
  EXPECT_TRUE(one == 1.0f);
  EXPECT_TRUE(one < 1.5);
  EXPECT_TRUE(Half(0.0f) == Half(-0.0f));
  const Half nan = Half::from_bits(0x7E00);
  EXPECT_FALSE(nan == nan);
  EXPECT_TRUE(nan != nan);
}

TEST(HalfTest, Classification) {
  EXPECT_TRUE(isnan(Half::from_bits(0x7E00)));
  EXPECT_TRUE(isnan(Half::from_bits(0xFC01)));
  EXPECT_FALSE(isnan(Half::from_bits(0x7C00)));
  EXPECT_TRUE(isinf(Half::from_bits(0x7C00)));
  EXPECT_TRUE(isinf(Half::from_bits(0xFC00)));
  EXPECT_FALSE(isinf(Half::from_bits(0x7BFF)));
  EXPECT_TRUE(isfinite(Half::from_bits(0x7BFF)));
  EXPECT_FALSE(isfinite(Half::from_bits(0x7C00)));
  EXPECT_FALSE(isfinite(Half::from_bits(0x7E00)));
  // std::isnan still works through the conversion to float.
  EXPECT_TRUE(std::isnan(Half::from_bits(0x7E00)));
}

// ---------------------------------------------------------------------------------------------
// BFloat16.
// ---------------------------------------------------------------------------------------------

TEST(BFloat16Test, KnownBitPatterns) {
  EXPECT_EQ(float_to_bf16_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_bf16_bits(0.1f), 0x3DCD);  // 0x3DCCCCCD: dropped half > tie, rounds up
  EXPECT_EQ(float_to_bf16_bits(3.0f), 0x4040);
}

TEST(BFloat16Test, RoundToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(FromBits(0x3F808000u)), 0x3F80);  // tie, 0x3F80 is even
  EXPECT_EQ(float_to_bf16_bits(FromBits(0x3F818000u)), 0x3F82);  // tie, 0x3F82 is even
  EXPECT_EQ(float_to_bf16_bits(FromBits(0x3F808001u)), 0x3F81);  // above the tie
  EXPECT_EQ(float_to_bf16_bits(FromBits(0x3F817FFFu)), 0x3F81);  // below the tie
  EXPECT_EQ(float_to_bf16_bits(FromBits(0xBF818000u)), 0xBF82);
  EXPECT_EQ(float_to_bf16_bits(FromBits(0x3FFF8000u)), 0x4000);  // carry into the exponent
}

TEST(BFloat16Test, OverflowAndInfinity) {
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(-std::numeric_limits<float>::max()), 0xFF80);
  EXPECT_EQ(float_to_bf16_bits(FromBits(0x7F7F8000u)), 0x7F80);  // tie above max, odd: to inf
  EXPECT_EQ(float_to_bf16_bits(FromBits(0x7F7F7FFFu)), 0x7F7F);  // below the tie: max finite
  EXPECT_EQ(float_to_bf16_bits(kInf), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(-kInf), 0xFF80);
}

TEST(BFloat16Test, NaN) {
  EXPECT_TRUE(IsBf16Nan(float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(IsBf16Nan(float_to_bf16_bits(std::numeric_limits<float>::signaling_NaN())));

  // Naive truncation turns these into +/-inf (0x7F80 / 0xFF80).
  const uint16_t low_payload = float_to_bf16_bits(FromBits(0x7F800001u));
  EXPECT_TRUE(IsBf16Nan(low_payload));
  EXPECT_EQ(low_payload & 0x8000, 0);
  const uint16_t negative = float_to_bf16_bits(FromBits(0xFF80FFFFu));
  EXPECT_TRUE(IsBf16Nan(negative));
  EXPECT_EQ(negative & 0x8000, 0x8000);
  // A rounding carry must not wrap a NaN with all payload bits set.
  EXPECT_TRUE(IsBf16Nan(float_to_bf16_bits(FromBits(0x7FFFFFFFu))));
  EXPECT_TRUE(IsBf16Nan(float_to_bf16_bits(FromBits(0xFFFFFFFFu))));
}

TEST(BFloat16Test, SignedZeroAndSubnormals) {
  EXPECT_EQ(float_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(ToBits(bf16_bits_to_float(0x8000)), 0x80000000u);
  EXPECT_TRUE(std::signbit(bf16_bits_to_float(0x8000)));
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_bf16_bits(0x1p-133f), 0x0001);  // smallest bf16 subnormal
}

TEST(BFloat16Test, ToFloat) {
  EXPECT_EQ(bf16_bits_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_bits_to_float(0x3DCD), FromBits(0x3DCD0000u));
  EXPECT_EQ(bf16_bits_to_float(0x7F80), kInf);
  EXPECT_EQ(bf16_bits_to_float(0xFF80), -kInf);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(0x7FC0)));
}

TEST(BFloat16Test, ExhaustiveRoundTrip) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto v = static_cast<uint16_t>(b);
    if (IsBf16Nan(v)) {
      EXPECT_TRUE(IsBf16Nan(float_to_bf16_bits(bf16_bits_to_float(v)))) << std::hex << b;
      continue;
    }
    ASSERT_EQ(float_to_bf16_bits(bf16_bits_to_float(v)), v) << std::hex << b;
  }
}

TEST(BFloat16Test, MatchesReferenceOnRandomFloats) {
  std::mt19937 engine(54321);
  // mt19937 yields 32 random bits, but its result_type may be wider.
  auto rng = [&engine] { return static_cast<uint32_t>(engine()); };
  for (int i = 0; i < 1'000'000; ++i) {
    uint32_t bits = rng();
    if (i % 2 == 1) {  // Exact ties and their float neighbours.
      bits = (bits & 0xFFFF0000u) | (0x8000u + (rng() % 3u) - 1u);
    }
    const float f = FromBits(bits);
    if (std::isnan(f)) {
      EXPECT_TRUE(IsBf16Nan(float_to_bf16_bits(f))) << std::hex << bits;
      continue;
    }
    ASSERT_EQ(float_to_bf16_bits(f), ReferenceFloatToBf16(f))
        << "float bits 0x" << std::hex << bits << " (" << f << ")";
  }
}

TEST(BFloat16Test, ValueType) {
  BFloat16 zero;
  EXPECT_EQ(zero.x, 0);
  EXPECT_EQ(BFloat16::from_bits(0x3F80).x, 0x3F80);
  EXPECT_EQ(BFloat16(0x3F80, BFloat16::FromBitsTag{}).x, 0x3F80);
  BFloat16 b = 0.1f;
  EXPECT_EQ(b.x, 0x3DCD);
  const float f = b;
  EXPECT_EQ(f, FromBits(0x3DCD0000u));
}

TEST(BFloat16Test, ArithmeticAndComparisons) {
  const BFloat16 a = 1.5f;
  const BFloat16 b = 0.25f;
  EXPECT_EQ(static_cast<float>(a + b), 1.75f);
  EXPECT_EQ(static_cast<float>(a - b), 1.25f);
  EXPECT_EQ(static_cast<float>(a * b), 0.375f);
  EXPECT_EQ(static_cast<float>(a / b), 6.0f);
  EXPECT_EQ((-a).x, 0xBFC0);
  // 1 + 2^-8 is a tie at bf16 precision and rounds back to 1.
  EXPECT_EQ((BFloat16(1.0f) + BFloat16(0x1p-8f)).x, 0x3F80);

  BFloat16 c = 1.0f;
  c += BFloat16(2.0f);
  c *= BFloat16(2.0f);
  c -= BFloat16(2.0f);
  c /= BFloat16(4.0f);
  EXPECT_EQ(static_cast<float>(c), 1.0f);

  static_assert(std::is_same_v<decltype(a + 1.0f), float>);
  static_assert(std::is_same_v<decltype(a + 1.0), double>);
  static_assert(std::is_same_v<decltype(a + 1), BFloat16>);
  EXPECT_EQ(static_cast<float>(a * 2), 3.0f);

  EXPECT_TRUE(b < a);
  EXPECT_TRUE(a == 1.5f);
  EXPECT_TRUE(a != b);
  EXPECT_TRUE(isnan(BFloat16::from_bits(0x7FC0)));
  EXPECT_TRUE(isinf(BFloat16::from_bits(0xFF80)));
  EXPECT_TRUE(isfinite(a));
  EXPECT_FALSE(isfinite(BFloat16::from_bits(0x7F80)));
}

}  // namespace
}  // namespace ember
