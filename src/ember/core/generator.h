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

class GeneratorImpl final : public IntrusiveTarget {
 public:
  explicit GeneratorImpl(uint64_t seed) : seed_(seed) {}
  uint64_t seed_;
  uint64_t offset_ = 0;
  std::mutex mutex_;
};

class Generator {
 public:
  // An undefined generator: ops given one use the default generator.
  Generator() = default;
  explicit Generator(uint64_t seed);

  bool defined() const { return static_cast<bool>(impl_); }
  // Re-seeds and rewinds to the start of the stream.
  void manual_seed(uint64_t seed);
  void set_current_seed(uint64_t seed) { manual_seed(seed); }
  // The seed last set.
  uint64_t current_seed() const;
  uint64_t initial_seed() const { return current_seed(); }
  // Re-seeds from a non-deterministic source and returns the new seed.
  uint64_t seed();

  // The state as a uint8 tensor of 16 bytes: seed then offset, little-endian.
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

// The process-wide generator that random ops use when none is given.
Generator& default_generator();
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
