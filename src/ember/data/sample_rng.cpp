#include "ember/data/sample_rng.h"

#include "ember/core/philox.h"

namespace ember::data {

namespace {

struct SampleState {
  SampleKey key;
  uint64_t draws = 0;
};

thread_local SampleState t_state;

}  // namespace

SampleScope::SampleScope(const SampleKey& key) : prev_key_(t_state.key), prev_draws_(t_state.draws) {
  t_state.key = key;
  t_state.draws = 0;
}

SampleScope::~SampleScope() {
  t_state.key = prev_key_;
  t_state.draws = prev_draws_;
}

SampleKey current_sample_key() { return t_state.key; }

double sample_uniform() {
  const uint64_t draw = t_state.draws++;
  const auto index = static_cast<uint64_t>(t_state.key.index);
  // Counter words: draw number, epoch, and the 64-bit sample index; the seed is the key.
  Philox4x32 counter{{static_cast<uint32_t>(draw), static_cast<uint32_t>(t_state.key.epoch),
                      static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32)}};
  const Philox4x32 r = philox4x32_10(counter, t_state.key.seed);
  return uint64_to_uniform_double((static_cast<uint64_t>(r.v[1]) << 32) | r.v[0]);
}

int64_t sample_randint(int64_t low, int64_t high) {
  const double u = sample_uniform();
  const int64_t span = high - low + 1;
  int64_t v = low + static_cast<int64_t>(u * static_cast<double>(span));
  return v > high ? high : v;
}

}  // namespace ember::data
