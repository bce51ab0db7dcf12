#include "ember/core/philox.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace core_philox_test {

uint64_t MakeKey(uint32_t key0, uint32_t key1) {
  return (static_cast<uint64_t>(key1) << 32) | key0;
}

void ExpectBlockEq(const Philox4x32& actual, const Philox4x32& expected) {
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(actual.v[i], expected.v[i]) << "word " << i;
  }
}

// Known-answer vectors from Random123's kat_vectors (philox4x32, 10 rounds).

TEST(PhiloxTest, KnownAnswerZero) {
  ExpectBlockEq(philox4x32_10(Philox4x32{{0, 0, 0, 0}}, MakeKey(0, 0)),
                Philox4x32{{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}});
}

TEST(PhiloxTest, KnownAnswerAllOnes) {
  ExpectBlockEq(philox4x32_10(Philox4x32{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
                              MakeKey(0xffffffffu, 0xffffffffu)),
                Philox4x32{{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}});
}

TEST(PhiloxTest, KnownAnswerPi) {
  // The inputs are hexadecimal digits of pi; the key order checks that key[0] is the low word.
  ExpectBlockEq(philox4x32_10(Philox4x32{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
                              MakeKey(0xa4093822u, 0x299f31d0u)),
                Philox4x32{{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}});
}

TEST(PhiloxTest, IsConstexpr) {
  constexpr Philox4x32 out = philox4x32_10(Philox4x32{{0, 0, 0, 0}}, 0);
  static_assert(out.v[0] == 0x6627e8d5u && out.v[3] == 0x9b00dbd8u);
}

TEST(PhiloxTest, UniformFloatRange) {
  EXPECT_EQ(uint32_to_uniform_float(0), 0.0f);
  const float top = uint32_to_uniform_float(0xffffffffu);
  EXPECT_LT(top, 1.0f);
  EXPECT_EQ(top, 1.0f - 0x1p-24f);
  // The low 8 bits are discarded, so they must not push the result up to 1.
  EXPECT_EQ(uint32_to_uniform_float(0xffffff00u), top);
  EXPECT_EQ(uint32_to_uniform_float(0x80000000u), 0.5f);
}

TEST(PhiloxTest, UniformDoubleRange) {
  EXPECT_EQ(uint64_to_uniform_double(0), 0.0);
  const double top = uint64_to_uniform_double(0xffffffffffffffffull);
  EXPECT_LT(top, 1.0);
  EXPECT_EQ(top, 1.0 - 0x1p-53);
  EXPECT_EQ(uint64_to_uniform_double(0x8000000000000000ull), 0.5);
}

TEST(PhiloxTest, UniformMeanFromConsecutiveCounters) {
  const uint64_t key = MakeKey(0x12345678u, 0x9abcdef0u);
  constexpr int kSamples = 100'000;
  double sum = 0.0;
  int count = 0;
  for (uint32_t i = 0; count < kSamples; ++i) {
    const Philox4x32 block = philox4x32_10(Philox4x32{{i, 0, 0, 0}}, key);
    for (int w = 0; w < 4 && count < kSamples; ++w, ++count) {
      const float u = uint32_to_uniform_float(block.v[w]);
      ASSERT_GE(u, 0.0f);
      ASSERT_LT(u, 1.0f);
      sum += u;
    }
  }
  EXPECT_NEAR(sum / kSamples, 0.5, 0.01);
}

TEST(PhiloxTest, DistinctCountersAndKeysGiveDistinctBlocks) {
  const Philox4x32 a = philox4x32_10(Philox4x32{{0, 0, 0, 0}}, 0);
  const Philox4x32 b = philox4x32_10(Philox4x32{{1, 0, 0, 0}}, 0);
  const Philox4x32 c = philox4x32_10(Philox4x32{{0, 0, 0, 0}}, 1);
  const Philox4x32 d = philox4x32_10(Philox4x32{{0, 0, 0, 0}}, uint64_t{1} << 32);
  EXPECT_NE(a.v[0], b.v[0]);
  EXPECT_NE(a.v[0], c.v[0]);
  EXPECT_NE(a.v[0], d.v[0]);
  EXPECT_NE(c.v[0], d.v[0]);
}

}  // namespace
}  // namespace ember
