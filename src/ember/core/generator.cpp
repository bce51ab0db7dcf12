#include "ember/core/generator.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>

#include "ember/core/check.h"
#include "ember/core/tensor.h"
#include "ember/ops/creation.h"

namespace ember {

namespace detail {

// std::mt19937's seeding: word 0 is the seed, each next word a multiplicative hash of the
// previous one and its index.
void MT19937::seed(uint32_t s) {
  state[0] = s;
  for (uint32_t i = 1; i < 624; ++i) state[i] = 1812433253u * (state[i - 1] ^ (state[i - 1] >> 30)) + i;
  index = 624;
}

uint32_t MT19937::next() {
  constexpr uint32_t kUpper = 0x80000000u, kLower = 0x7fffffffu, kMatrix = 0x9908b0dfu;
  if (index >= 624) {
    for (uint32_t i = 0; i < 624; ++i) {
      const uint32_t y = (state[i] & kUpper) | (state[(i + 1) % 624] & kLower);
      state[i] = state[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? kMatrix : 0u);
    }
    index = 0;
  }
  uint32_t y = state[index++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

}  // namespace detail

namespace {

GeneratorKind kind_from_env() {
  const char* v = std::getenv("EMBER_GENERATOR");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "philox") == 0) return GeneratorKind::Philox;
  if (std::strcmp(v, "mt19937") == 0) return GeneratorKind::MT19937;
  EMBER_ERROR("[Generator] EMBER_GENERATOR=", v, " is not a generator kind; use philox or mt19937");
}

std::atomic<GeneratorKind>& default_kind() {
  static std::atomic<GeneratorKind> kind{kind_from_env()};
  return kind;
}

// Puts a generator at the start of seed's stream (caller holds the mutex).
void reset_locked(GeneratorImpl& g, uint64_t seed) {
  g.seed_ = seed;
  g.offset_ = 0;
  g.has_next_normal_ = false;
  g.next_normal_ = 0.0;
  // PyTorch seeds its engine with the low 32 bits.
  if (g.kind_ == GeneratorKind::MT19937) g.mt_.seed(static_cast<uint32_t>(seed));
}

}  // namespace

GeneratorImpl::GeneratorImpl(uint64_t seed, GeneratorKind kind) : seed_(seed), kind_(kind) {
  reset_locked(*this, seed);
}

Generator::Generator(uint64_t seed) : Generator(seed, default_generator_kind()) {}

Generator::Generator(uint64_t seed, GeneratorKind kind) : impl_(IntrusivePtr<GeneratorImpl>::make(seed, kind)) {}

GeneratorKind Generator::kind() const {
  EMBER_CHECK(defined(), "[Generator] kind called on an undefined generator");
  return impl_->kind_;
}

void Generator::manual_seed(uint64_t seed) {
  EMBER_CHECK(defined(), "[Generator] manual_seed called on an undefined generator");
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  reset_locked(*impl_, seed);
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

namespace {
// MT19937 state layout: seed (8), 624 words (2496), index (4), has_next_normal (1), next_normal (8).
constexpr int64_t kMTStateBytes = 8 + 624 * 4 + 4 + 1 + 8;
}  // namespace

Tensor Generator::get_state() const {
  EMBER_CHECK(defined(), "[Generator] get_state called on an undefined generator");
  if (impl_->kind_ == GeneratorKind::MT19937) {
    Tensor state = empty({kMTStateBytes}, TensorOptions(kUInt8));
    auto* p = static_cast<unsigned char*>(state.data_ptr());
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    std::memcpy(p, &impl_->seed_, 8);
    std::memcpy(p + 8, impl_->mt_.state, 624 * 4);
    std::memcpy(p + 8 + 624 * 4, &impl_->mt_.index, 4);
    p[8 + 624 * 4 + 4] = impl_->has_next_normal_ ? 1 : 0;
    std::memcpy(p + 8 + 624 * 4 + 5, &impl_->next_normal_, 8);
    return state;
  }
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
  if (impl_->kind_ == GeneratorKind::MT19937) {
    EMBER_CHECK(state.defined() && state.dtype() == kUInt8 && state.dim() == 1 && state.numel() == kMTStateBytes,
                "[Generator] set_state of an mt19937 generator expects the uint8 tensor of ", kMTStateBytes,
                " bytes that its get_state() returns, got ",
                state.defined() ? state.toString() : std::string("an undefined tensor"));
    Tensor c = state.contiguous();
    const auto* p = static_cast<const unsigned char*>(c.data_ptr());
    uint32_t index = 0;
    std::memcpy(&index, p + 8 + 624 * 4, 4);
    EMBER_CHECK(index <= 624, "[Generator] set_state: the mt19937 position ", index, " is not in [0, 624]");
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    std::memcpy(&impl_->seed_, p, 8);
    std::memcpy(impl_->mt_.state, p + 8, 624 * 4);
    impl_->mt_.index = index;
    impl_->has_next_normal_ = p[8 + 624 * 4 + 4] != 0;
    std::memcpy(&impl_->next_normal_, p + 8 + 624 * 4 + 5, 8);
    return;
  }
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
  static Generator gen(kDefaultSeed, default_kind().load());
  return gen;
}

GeneratorKind default_generator_kind() { return default_kind().load(); }

void set_default_generator_kind(GeneratorKind kind) {
  default_kind().store(kind);
  Generator& gen = default_generator();
  std::lock_guard<std::mutex> lock(gen.impl()->mutex_);
  if (gen.impl()->kind_ == kind) return;
  gen.impl()->kind_ = kind;
  reset_locked(*gen.impl(), gen.impl()->seed_);
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

Generator& resolve_generator(Generator& gen) { return gen.defined() ? gen : default_generator(); }

Tensor get_rng_state() { return default_generator().get_state(); }

void set_rng_state(const Tensor& state) { default_generator().set_state(state); }

}  // namespace ember
