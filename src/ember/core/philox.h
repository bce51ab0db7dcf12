// Philox4x32-10 counter-based random number generator.
//
// Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3" (SC'11). This is the
// same function as Random123's philox4x32 with 10 rounds and as the generator behind PyTorch's
// CUDA RNG, so streams can be reproduced bit for bit. Being counter-based, any element of a stream
// can be computed independently: a kernel derives the counter from the element index and needs no
// shared state.
#pragma once

#include <cstdint>

namespace ember {

/// A 128-bit Philox counter or output block, as four 32-bit words (v[0] is the lowest).
struct Philox4x32 {
  uint32_t v[4];
};

namespace philox_detail {

// Round multipliers and Weyl-sequence key increments from the Philox paper. The increments are
// golden ratio - 1 and sqrt(3) - 1 in 0.32 fixed point.
inline constexpr uint32_t kMul0 = 0xD2511F53u;
inline constexpr uint32_t kMul1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u;
inline constexpr uint32_t kWeyl1 = 0xBB67AE85u;

// One S-box/P-box round: two 32x32->64 multiplies whose high halves are mixed with the key and
// the untouched words, followed by a fixed word permutation.
constexpr Philox4x32 mix_round(const Philox4x32& c, uint32_t k0, uint32_t k1) noexcept {
  const uint64_t p0 = static_cast<uint64_t>(kMul0) * c.v[0];
  const uint64_t p1 = static_cast<uint64_t>(kMul1) * c.v[2];
  return Philox4x32{{static_cast<uint32_t>(p1 >> 32) ^ c.v[1] ^ k0, static_cast<uint32_t>(p1),
                     static_cast<uint32_t>(p0 >> 32) ^ c.v[3] ^ k1, static_cast<uint32_t>(p0)}};
}

}  // namespace philox_detail

/// One Philox4x32-10 block: 10 rounds on a 128-bit counter with a 64-bit key. The key's low 32
/// bits are Random123's key[0] and its high 32 bits key[1].
constexpr Philox4x32 philox4x32_10(Philox4x32 counter, uint64_t key) noexcept {
  uint32_t k0 = static_cast<uint32_t>(key);
  uint32_t k1 = static_cast<uint32_t>(key >> 32);
  // The first round uses the key as given; the key is bumped before each of the other nine.
  counter = philox_detail::mix_round(counter, k0, k1);
  for (int i = 1; i < 10; ++i) {
    k0 += philox_detail::kWeyl0;
    k1 += philox_detail::kWeyl1;
    counter = philox_detail::mix_round(counter, k0, k1);
  }
  return counter;
}

/// Maps a random 32-bit word to a float uniform on [0, 1), using its top 24 bits. Every result is
/// a multiple of 2^-24, so all are exactly representable and 1.0 is never produced.
constexpr float uint32_to_uniform_float(uint32_t x) noexcept {
  return static_cast<float>(x >> 8) * 0x1p-24f;
}

/// Maps a random 64-bit word to a double uniform on [0, 1), using its top 53 bits. Every result
/// is a multiple of 2^-53, so all are exactly representable and 1.0 is never produced.
constexpr double uint64_to_uniform_double(uint64_t x) noexcept {
  return static_cast<double>(x >> 11) * 0x1p-53;
}

}  // namespace ember
