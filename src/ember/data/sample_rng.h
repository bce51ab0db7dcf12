#pragma once
// Note [Per-sample random streams]: random transforms must give the same result whatever
// the number of loader workers and whichever worker handles a sample. So they never draw
// from a shared generator: the DataLoader opens a SampleScope{seed, epoch, index} around
// each dataset.get(index), and sample_uniform() derives its numbers from a Philox stream
// keyed by exactly those three values (plus a per-sample draw counter). Outside a scope,
// draws come from the key {0, 0, 0} and keep counting on the calling thread.

#include <cstdint>

namespace ember::data {

struct SampleKey {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t index = 0;
};

// Sets the current sample's key on this thread (restores the previous one on exit).
class SampleScope {
 public:
  explicit SampleScope(const SampleKey& key);
  ~SampleScope();
  SampleScope(const SampleScope&) = delete;
  SampleScope& operator=(const SampleScope&) = delete;

 private:
  SampleKey prev_key_;
  uint64_t prev_draws_;
};

// The key in effect on this thread.
SampleKey current_sample_key();
// Uniform in [0, 1): the next value of the current sample's stream.
double sample_uniform();
// Uniform integer in [low, high] (inclusive), from the current sample's stream.
int64_t sample_randint(int64_t low, int64_t high);

}  // namespace ember::data
