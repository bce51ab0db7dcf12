#include "ember/core/generator.h"

#include <chrono>
#include <cstring>
#include <random>

#include "ember/core/check.h"
#include "ember/core/tensor.h"
#include "ember/ops/creation.h"

namespace ember {

Generator::Generator(uint64_t seed) : impl_(IntrusivePtr<GeneratorImpl>::make(seed)) {}

void Generator::manual_seed(uint64_t seed) {
  EMBER_CHECK(defined(), "[Generator] manual_seed called on an undefined generator");
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  impl_->seed_ = seed;
  impl_->offset_ = 0;
}

uint64_t Generator::current_seed() const {
  EMBER_CHECK(defined(), "[Generator] current_seed called on an undefined generator");
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  return impl_->seed_;
}

uint64_t Generator::seed() {
  std::random_device rd;
  uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
               static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  manual_seed(s);
  return s;
}

Tensor Generator::get_state() const {
  EMBER_CHECK(defined(), "[Generator] get_state called on an undefined generator");
  uint64_t words[2];
  {
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    words[0] = impl_->seed_;
    words[1] = impl_->offset_;
  }
  Tensor state = empty({16}, TensorOptions(kUInt8));
  // Little-endian on every platform ember builds for (x86-64, aarch64).
  std::memcpy(state.data_ptr(), words, sizeof(words));
  return state;
}

void Generator::set_state(const Tensor& state) {
  EMBER_CHECK(defined(), "[Generator] set_state called on an undefined generator");
  EMBER_CHECK(state.defined() && state.dtype() == kUInt8 && state.dim() == 1 && state.numel() == 16,
              "[Generator] set_state expects the uint8 tensor of 16 bytes that get_state() returns, got ",
              state.defined() ? state.toString() : std::string("an undefined tensor"));
  Tensor c = state.contiguous();
  uint64_t words[2];
  std::memcpy(words, c.data_ptr(), sizeof(words));
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  impl_->seed_ = words[0];
  impl_->offset_ = words[1];
}

void Generator::reserve(uint64_t blocks, uint64_t* key, uint64_t* first_block) {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  *key = impl_->seed_;
  *first_block = impl_->offset_;
  impl_->offset_ += blocks;
}

Generator& default_generator() {
  static Generator gen(kDefaultSeed);
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

Generator& resolve_generator(Generator& gen) { return gen.defined() ? gen : default_generator(); }

Tensor get_rng_state() { return default_generator().get_state(); }

void set_rng_state(const Tensor& state) { default_generator().set_state(state); }

}  // namespace ember
