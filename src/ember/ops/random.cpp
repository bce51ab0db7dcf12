// Random ops. Each draws from a Generator (the default one unless given) by reserving a
// range of Philox counter blocks; see Note [Deterministic random streams].

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

#include "ember/core/check.h"
#include "ember/core/op_name_scope.h"
#include "ember/kernels/cpu/dispatch.h"
#include "ember/kernels/cpu/kernels.h"
#include "ember/ops/creation.h"

namespace ember {

namespace {

using kernels::cpu::PhiloxSeed;

PhiloxSeed reserve(Generator& gen, int64_t n, int per_block) {
  PhiloxSeed seed{};
  const uint64_t blocks = static_cast<uint64_t>((n + per_block - 1) / per_block);
  resolve_generator(gen).reserve(blocks, &seed.key, &seed.first_block);
  return seed;
}

// Runs fill on a contiguous tensor shaped like self, then copies back when self is not
// contiguous, so the row-major index decides every element's random stream.
template <typename Fill>
Tensor& fill_random(Tensor& self, const char* op, Fill fill) {
  EMBER_CHECK(self.defined(), "[", op, "] called on an undefined tensor");
  if (self.numel() == 0) return self;
  if (self.is_contiguous()) {
    fill(self);
    self.bump_version();
  } else {
    Tensor tmp = empty(self.sizes(), self.options());
    fill(tmp);
    self.copy_(tmp);
  }
  return self;
}

// Note [PyTorch's CPU random numbers]
// A generator of kind MT19937 reproduces what PyTorch 1.13's CPU generator draws (facts
// of its documented behaviour, checked value by value against libtorch in
// tests/parity/random_parity_test.cpp):
// - the engine is the 32-bit Mersenne Twister seeded with the seed's low 32 bits; 64 bits
//   are two draws, the first one the high word;
// - elements are drawn one after another in row-major order;
// - uniform on [from, to) for a type with d mantissa digits keeps the low d bits of one
//   draw (64 bits for double, 32 otherwise), scales them by 2^-d in double and maps
//   x * (to - from) + from (from and to first rounded to the tensor's type);
// - normal: tensors of at least 16 contiguous elements are filled with uniforms first,
//   then each block of 16 becomes 8 Box-Muller pairs (u1 = 1 - x[j], u2 = x[j + 8]; the
//   cosine goes to j, the sine to j + 8) in the tensor's type; when the size is not a
//   multiple of 16 the last 16 elements are redrawn and transformed again. Smaller or
//   strided tensors draw pairs of double uniforms per element and keep the sine of the
//   pair in the generator for the next element;
// - random_(from, to) is from + (bits mod (to - from)), with 64 bits when the range
//   needs them (and the type is 64-bit or floating); random_() is bits mod 2^d + 1 for
//   floating types, bits mod (max + 1) for integer types (64 bits for int64 and double);
// - bernoulli_(p) compares a double uniform with p;
// - randperm swaps element i with i + (32 bits mod (n - i)) for i = 0 .. n - 2.
// These loops are serial: their results cannot depend on the thread count.

template <typename T>
constexpr int mantissa_digits() {
  if constexpr (std::is_same_v<T, Half>) return 11;
  else if constexpr (std::is_same_v<T, BFloat16>) return 8;
  else return std::numeric_limits<T>::digits;
}

template <typename T>
double mt_uniform01(GeneratorImpl& g) {
  constexpr int d = mantissa_digits<T>();
  const uint64_t bits = d > 32 ? g.random64() : g.random32();
  return static_cast<double>(bits & ((uint64_t{1} << d) - 1)) / static_cast<double>(uint64_t{1} << d);
}

bool is_mt(Generator& gen) { return resolve_generator(gen).impl()->kind_ == GeneratorKind::MT19937; }

// Fills self in row-major order with f(generator) under the generator's lock.
template <typename T, typename F>
void mt_fill(Tensor& self, Generator& gen, F f) {
  GeneratorImpl& g = *resolve_generator(gen).impl();
  std::lock_guard<std::mutex> lock(g.mutex_);
  const bool direct = self.is_contiguous();
  Tensor out = direct ? self : empty(self.sizes(), self.options());
  T* p = out.data_ptr<T>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) p[i] = f(g);
  if (direct) {
    self.bump_version();
  } else {
    self.copy_(out);
  }
}

template <typename T>
void mt_normal(Tensor& self, Generator& gen, double mean, double std) {
  const int64_t n = self.numel();
  if constexpr (std::is_floating_point_v<T>) {
  if (n >= 16 && self.is_contiguous()) {
    GeneratorImpl& g = *resolve_generator(gen).impl();
    std::lock_guard<std::mutex> lock(g.mutex_);
    T* p = self.data_ptr<T>();
    const T m = static_cast<T>(mean), s = static_cast<T>(std);
    auto draw = [&](T* q, int64_t count) {
      for (int64_t i = 0; i < count; ++i) q[i] = static_cast<T>(mt_uniform01<T>(g));
    };
    auto transform16 = [&](T* q) {
      for (int j = 0; j < 8; ++j) {
        const T u1 = static_cast<T>(1 - q[j]);
        const T u2 = q[j + 8];
        const T radius = static_cast<T>(std::sqrt(static_cast<T>(-2) * static_cast<T>(std::log(u1))));
        const T theta = static_cast<T>(2.0f * 3.14159265358979323846 * static_cast<double>(u2));
        q[j] = static_cast<T>(radius * static_cast<T>(std::cos(theta)) * s + m);
        q[j + 8] = static_cast<T>(radius * static_cast<T>(std::sin(theta)) * s + m);
      }
    };
    draw(p, n);
    for (int64_t i = 0; i + 16 <= n; i += 16) transform16(p + i);
    if (n % 16 != 0) {
      draw(p + n - 16, 16);
      transform16(p + n - 16);
    }
    self.bump_version();
    return;
  }
  }
  mt_fill<T>(self, gen, [&](GeneratorImpl& g) {
    double z;
    if (g.has_next_normal_) {
      g.has_next_normal_ = false;
      z = g.next_normal_;
    } else {
      const double u1 = mt_uniform01<double>(g);
      const double u2 = mt_uniform01<double>(g);
      const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
      const double theta = 2.0 * 3.14159265358979323846 * u1;
      g.next_normal_ = r * std::sin(theta);
      g.has_next_normal_ = true;
      z = r * std::cos(theta);
    }
    return kernels::convert<T>(z * std + mean);
  });
}

}  // namespace

Tensor& Tensor::uniform_(double from, double to, Generator gen) const {
  detail::OpNameScope scope("uniform_");
  EMBER_CHECK(is_floating_point(), "[uniform_] expected a floating-point tensor, got dtype ", dtype());
  EMBER_CHECK(from <= to, "[uniform_] expects to return a [from, to) range, but found from=", from,
              " > to=", to);
  EMBER_CHECK(std::isfinite(to - from), "[uniform_] the range [", from, ", ", to, ") is not finite");
  if (is_mt(gen)) {
    if (numel() == 0) return self_mut();
    kernels::dispatch_floating(dtype(), "uniform_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const double f = kernels::convert<double>(kernels::convert<T>(from));
      const double t = kernels::convert<double>(kernels::convert<T>(to));
      mt_fill<T>(self_mut(), gen, [&](GeneratorImpl& g) { return kernels::convert<T>(mt_uniform01<T>(g) * (t - f) + f); });
    });
    return self_mut();
  }
  return fill_random(self_mut(), "uniform_", [&](const Tensor& t) {
    kernels::cpu::uniform(t, from, to, reserve(gen, t.numel(), kernels::cpu::random_values_per_block(t.dtype())));
  });
}

Tensor& Tensor::normal_(double mean, double std, Generator gen) const {
  detail::OpNameScope scope("normal_");
  EMBER_CHECK(is_floating_point(), "[normal_] expected a floating-point tensor, got dtype ", dtype());
  EMBER_CHECK(std >= 0.0, "[normal_] expects std >= 0.0, but found std ", std);
  if (is_mt(gen)) {
    if (numel() == 0) return self_mut();
    kernels::dispatch_floating(dtype(), "normal_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      mt_normal<T>(self_mut(), gen, mean, std);
    });
    return self_mut();
  }
  return fill_random(self_mut(), "normal_", [&](const Tensor& t) {
    kernels::cpu::normal(t, mean, std, reserve(gen, t.numel(), kernels::cpu::random_values_per_block(t.dtype())));
  });
}

Tensor& Tensor::bernoulli_(double p, Generator gen) const {
  detail::OpNameScope scope("bernoulli_");
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "[bernoulli_] expects 0 <= p <= 1, but got p = ", p);
  if (is_mt(gen)) {
    EMBER_CHECK(defined(), "[bernoulli_] called on an undefined tensor");
    if (numel() == 0) return self_mut();
    kernels::dispatch_all(dtype(), "bernoulli_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      mt_fill<T>(self_mut(), gen, [&](GeneratorImpl& g) { return kernels::convert<T>(mt_uniform01<double>(g) < p ? 1 : 0); });
    });
    return self_mut();
  }
  return fill_random(self_mut(), "bernoulli_", [&](const Tensor& t) {
    kernels::cpu::bernoulli(t, p, reserve(gen, t.numel(), kernels::cpu::random_values_per_block(t.dtype())));
  });
}

Tensor& Tensor::random_(int64_t from, int64_t to, Generator gen) const {
  detail::OpNameScope scope("random_");
  EMBER_CHECK(from < to, "[random_] expects 'from' to be less than 'to', but got from=", from,
              " >= to=", to);
  // Every value in [from, to) must be representable in the tensor's dtype.
  const int64_t hi = to - 1;
  bool fits = true;
  kernels::dispatch_all(dtype(), "random_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      fits = from >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
             hi <= static_cast<int64_t>(std::numeric_limits<T>::max());
    } else if constexpr (std::is_same_v<T, bool>) {
      fits = from >= 0 && hi <= 1;
    }
  });
  EMBER_CHECK(fits, "[random_] the range [", from, ", ", to, ") does not fit in dtype ", dtype());
  const uint64_t range = static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
  if (is_mt(gen)) {
    EMBER_CHECK(defined(), "[random_] called on an undefined tensor");
    if (numel() == 0) return self_mut();
    kernels::dispatch_all(dtype(), "random_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      constexpr bool wide = std::is_same_v<T, int64_t> || std::is_same_v<T, double> ||
                            std::is_same_v<T, float> || std::is_same_v<T, BFloat16>;
      const bool use64 = wide && range >= (uint64_t{1} << 32);
      mt_fill<T>(self_mut(), gen, [&](GeneratorImpl& g) {
        const uint64_t bits = use64 ? g.random64() : g.random32();
        return kernels::convert<T>(static_cast<int64_t>(bits % range + static_cast<uint64_t>(from)));
      });
    });
    return self_mut();
  }
  return fill_random(self_mut(), "random_", [&](const Tensor& t) {
    kernels::cpu::random_int(t, from, to,
                             reserve(gen, t.numel(), kernels::cpu::random_values_per_block(t.dtype(), range)));
  });
}

Tensor& Tensor::random_(int64_t to, Generator gen) const {
  detail::OpNameScope scope("random_");
  return random_(0, to, gen);
}

Tensor& Tensor::random_(Generator gen) const {
  detail::OpNameScope scope("random_");
  EMBER_CHECK(defined(), "[random_] called on an undefined tensor");
  if (numel() == 0) return self_mut();
  kernels::dispatch_all(dtype(), "random_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    // The range: [0, 2^digits] for floating types (every integer there is exact),
    // [0, max] for integer types, {0, 1} for bool.
    uint64_t range;
    if constexpr (std::is_same_v<T, bool>) {
      range = 2;
    } else if constexpr (std::is_integral_v<T>) {
      range = static_cast<uint64_t>(std::numeric_limits<T>::max()) + 1;
    } else {
      range = (uint64_t{1} << mantissa_digits<T>()) + 1;
    }
    if (is_mt(gen)) {
      constexpr bool wide = std::is_same_v<T, int64_t> || std::is_same_v<T, double>;
      mt_fill<T>(self_mut(), gen, [&](GeneratorImpl& g) {
        const uint64_t bits = wide ? g.random64() : g.random32();
        if constexpr (std::is_same_v<T, bool>) return static_cast<bool>(bits & 1);
        else return kernels::convert<T>(bits % range);
      });
    } else {
      // Philox: the same ranges through random_(from, to).
      random_(0, static_cast<int64_t>(std::min<uint64_t>(range, static_cast<uint64_t>(INT64_MAX))), gen);
    }
  });
  return self_mut();
}

Tensor rand(IntArrayRef sizes, const TensorOptions& options) { return rand(sizes, Generator(), options); }

Tensor rand(IntArrayRef sizes, Generator gen, const TensorOptions& options) {
  detail::OpNameScope scope("rand");
  Tensor t = empty(sizes, options.requires_grad(false));
  t.uniform_(0.0, 1.0, gen);
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

Tensor randn(IntArrayRef sizes, const TensorOptions& options) { return randn(sizes, Generator(), options); }

Tensor randn(IntArrayRef sizes, Generator gen, const TensorOptions& options) {
  detail::OpNameScope scope("randn");
  Tensor t = empty(sizes, options.requires_grad(false));
  t.normal_(0.0, 1.0, gen);
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

Tensor normal(double mean, double std, IntArrayRef sizes, Generator gen, const TensorOptions& options) {
  detail::OpNameScope scope("normal");
  Tensor t = empty(sizes, options.requires_grad(false));
  t.normal_(mean, std, gen);
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

Tensor randint(int64_t high, IntArrayRef sizes, const TensorOptions& options) {
  detail::OpNameScope scope("randint");
  return randint(0, high, sizes, Generator(), options);
}

Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, const TensorOptions& options) {
  detail::OpNameScope scope("randint");
  return randint(low, high, sizes, Generator(), options);
}

Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, Generator gen, const TensorOptions& options) {
  detail::OpNameScope scope("randint");
  Tensor t = empty(sizes, options.dtype(options.dtype_or(kInt64)));
  t.random_(low, high, gen);
  return t;
}

Tensor randperm(int64_t n, const TensorOptions& options) { return randperm(n, Generator(), options); }

Tensor randperm(int64_t n, Generator gen, const TensorOptions& options) {
  detail::OpNameScope scope("randperm");
  EMBER_CHECK(n >= 0, "[randperm] n must be non-negative, got ", n);
  const DType dt = options.dtype_or(kInt64);
  EMBER_CHECK(dt != kBool, "[randperm] dtype bool cannot hold a permutation");
  if (!is_floating_point(dt) && n > 0) {
    Tensor probe = empty({0}, TensorOptions(dt));
    probe.random_(0, n, Generator(1));  // throws when n - 1 does not fit in dt
  }
  // Fisher-Yates, one Philox block per step, always on one thread so the permutation
  // depends only on the generator state.
  // The result is allocated first, so a huge n is refused as ember::Error before any work.
  Tensor perm_t = empty({n}, TensorOptions(kInt64));
  int64_t* perm = perm_t.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  if (n > 1 && is_mt(gen)) {
    GeneratorImpl& g = *resolve_generator(gen).impl();
    std::lock_guard<std::mutex> lock(g.mutex_);
    for (int64_t i = 0; i < n - 1; ++i) {
      const int64_t z = static_cast<int64_t>(g.random32() % static_cast<uint64_t>(n - i));
      std::swap(perm[i], perm[z + i]);
    }
  } else if (n > 1) {
    Tensor r = empty({n - 1}, TensorOptions(kInt64));
    // r[k] uniform in [0, n - k): draw raw 64-bit values and reduce per step.
    r.random_(0, std::numeric_limits<int64_t>::max(), gen);
    const int64_t* rp = r.data_ptr<int64_t>();
    for (int64_t i = n - 1; i > 0; --i) {
      const int64_t j = rp[n - 1 - i] % (i + 1);
      std::swap(perm[i], perm[j]);
    }
  }
  Tensor out = perm_t.to(dt);
  if (options.requires_grad()) out.requires_grad_();
  return out;
}

}  // namespace ember
