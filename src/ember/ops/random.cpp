// Random ops. Each draws from a Generator (the default one unless given) by reserving a
// range of Philox counter blocks; see Note [Deterministic random streams].

#include <algorithm>
#include <cmath>
#include <limits>

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

}  // namespace

Tensor& Tensor::uniform_(double from, double to, Generator gen) {
  detail::OpNameScope scope("uniform_");
  EMBER_CHECK(is_floating_point(), "[uniform_] expected a floating-point tensor, got dtype ", dtype());
  EMBER_CHECK(from <= to, "[uniform_] expects to return a [from, to) range, but found from=", from,
              " > to=", to);
  EMBER_CHECK(std::isfinite(to - from), "[uniform_] the range [", from, ", ", to, ") is not finite");
  return fill_random(*this, "uniform_", [&](const Tensor& t) {
    kernels::cpu::uniform(t, from, to, reserve(gen, t.numel(), kernels::cpu::random_values_per_block(t.dtype())));
  });
}

Tensor& Tensor::normal_(double mean, double std, Generator gen) {
  detail::OpNameScope scope("normal_");
  EMBER_CHECK(is_floating_point(), "[normal_] expected a floating-point tensor, got dtype ", dtype());
  EMBER_CHECK(std >= 0.0, "[normal_] expects std >= 0.0, but found std ", std);
  return fill_random(*this, "normal_", [&](const Tensor& t) {
    kernels::cpu::normal(t, mean, std, reserve(gen, t.numel(), kernels::cpu::random_values_per_block(t.dtype())));
  });
}

Tensor& Tensor::bernoulli_(double p, Generator gen) {
  detail::OpNameScope scope("bernoulli_");
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "[bernoulli_] expects 0 <= p <= 1, but got p = ", p);
  return fill_random(*this, "bernoulli_", [&](const Tensor& t) {
    kernels::cpu::bernoulli(t, p, reserve(gen, t.numel(), kernels::cpu::random_values_per_block(t.dtype())));
  });
}

Tensor& Tensor::random_(int64_t from, int64_t to, Generator gen) {
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
  return fill_random(*this, "random_", [&](const Tensor& t) {
    kernels::cpu::random_int(t, from, to,
                             reserve(gen, t.numel(), kernels::cpu::random_values_per_block(t.dtype(), range)));
  });
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
  if (n > 1) {
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
