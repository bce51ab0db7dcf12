#pragma once
// Generator: a counter-based (Philox4x32-10) random number generator. Its state is a
// 64-bit seed (the Philox key) and a 64-bit offset (the next unused counter block).
// Note [Deterministic random streams]: an op drawing n numbers reserves a range of
// counter blocks and element i always uses block offset + i / k. What each element
// gets therefore depends only on the seed, the offset and i, never on how the work is
// split between threads.

#include <cstdint>
#include <mutex>

#include "ember/core/intrusive_ptr.h"

namespace ember {

class Tensor;

// Which stream a generator draws. Philox (the default) is counter-based, so results do
// not depend on the thread count. MT19937 reproduces PyTorch's CPU generator bit for bit
// (Note [PyTorch's CPU random numbers] in ops/random.cpp): a program seeded with
// manual_seed(s) draws the same numbers as libtorch seeded with s. Its ops run serially.
enum class GeneratorKind : uint8_t { Philox, MT19937 };

namespace detail {
// The 32-bit Mersenne Twister (the sequence of std::mt19937).
struct MT19937 {
  uint32_t state[624];
  uint32_t index = 624;
  void seed(uint32_t s);
  uint32_t next();
};
}  // namespace detail

class GeneratorImpl final : public IntrusiveTarget {
 public:
  GeneratorImpl(uint64_t seed, GeneratorKind kind);
  uint64_t seed_;
  uint64_t offset_ = 0;  // Philox
  std::mutex mutex_;
  GeneratorKind kind_;
  // MT19937: the engine and the cached second value of the last Box-Muller pair
  // (PyTorch's next_double_normal_sample).
  detail::MT19937 mt_;
  bool has_next_normal_ = false;
  double next_normal_ = 0.0;
  // 32 and 64 random bits (MT19937 only; callers hold mutex_).
  uint32_t random32() { return mt_.next(); }
  uint64_t random64() {
    const uint64_t hi = mt_.next();
    return (hi << 32) | mt_.next();
  }
};

class Generator {
 public:
  // An undefined generator: ops given one use the default generator.
  Generator() = default;
  // A generator of the default kind (set_default_generator_kind), or of `kind`.
  explicit Generator(uint64_t seed);
  Generator(uint64_t seed, GeneratorKind kind);

  GeneratorKind kind() const;

  bool defined() const { return static_cast<bool>(impl_); }
  // Re-seeds and rewinds to the start of the stream.
  void manual_seed(uint64_t seed);
  void set_current_seed(uint64_t seed) { manual_seed(seed); }
  // The seed last set.
  uint64_t current_seed() const;
  uint64_t initial_seed() const { return current_seed(); }
  // Re-seeds from a non-deterministic source and returns the new seed.
  uint64_t seed();

  // The state as a uint8 tensor: Philox 16 bytes (seed then offset, little-endian);
  // MT19937 2521 bytes (seed, the 624 words, the position, the cached normal).
  Tensor get_state() const;
  // Restores a state from get_state(); throws ember::Error on a tensor of another shape/dtype.
  void set_state(const Tensor& state);

  // Reserves `blocks` counter blocks; returns the key and the first block's counter.
  // Thread-safe.
  void reserve(uint64_t blocks, uint64_t* key, uint64_t* first_block);

  GeneratorImpl* impl() const { return impl_.get(); }

 private:
  IntrusivePtr<GeneratorImpl> impl_;
};

// The process-wide generator that random ops use when none is given. Its kind is Philox
// unless the environment variable EMBER_GENERATOR=mt19937 is set at start-up or
// set_default_generator_kind changed it.
Generator& default_generator();
// The kind of the default generator and of generators made without a kind from now on.
// Changing it re-seeds the default generator with its current seed.
void set_default_generator_kind(GeneratorKind kind);
GeneratorKind default_generator_kind();
// Seeds the default generator (torch.manual_seed).
void manual_seed(uint64_t seed);
// The generator to use: gen if defined, otherwise the default.
Generator& resolve_generator(Generator& gen);
// The default generator's state (torch.get_rng_state): a uint8 tensor of 16 bytes.
// Save it in a checkpoint; set_rng_state restores it so a resumed run draws the same numbers.
Tensor get_rng_state();
void set_rng_state(const Tensor& state);

// PyTorch's default CPU seed, so an unseeded run starts from a known state.
inline constexpr uint64_t kDefaultSeed = 67280421310721ULL;

}  // namespace ember
