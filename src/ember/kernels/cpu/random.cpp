// Random fills over contiguous tensors. Note [Deterministic random streams] (generator.h):
// element i uses Philox block first_block + i / per_block, so the values depend only on
// the seed, the offset and i. The ops make non-contiguous outputs go through a
// contiguous temporary, so "i" is always the row-major index.

#include <cmath>

#include "ember/core/parallel.h"
#include "ember/core/philox.h"
#include "ember/kernels/cpu/dispatch.h"
#include "ember/kernels/cpu/kernels.h"

namespace ember::kernels::cpu {

namespace {

constexpr int64_t kGrainBlocks = 2048;

inline Philox4x32 block_at(PhiloxSeed seed, uint64_t b) {
  uint64_t c = seed.first_block + b;
  return philox4x32_10(Philox4x32{{static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), 0u, 0u}},
                       seed.key);
}

inline uint64_t join64(uint32_t lo, uint32_t hi) { return (static_cast<uint64_t>(hi) << 32) | lo; }

// Runs fill(block_values, count, first_index) over all blocks of an n-element output.
// gen(Philox4x32) must produce per-block values into a small array.
template <typename T, int K, typename Gen>
void fill_blocks(T* out, int64_t n, PhiloxSeed seed, Gen gen) {
  const int64_t blocks = (n + K - 1) / K;
  parallel_for(0, blocks, kGrainBlocks, [&](int64_t b0, int64_t b1) {
    T vals[K];
    for (int64_t b = b0; b < b1; ++b) {
      gen(block_at(seed, static_cast<uint64_t>(b)), vals);
      const int64_t base = b * K;
      const int64_t cnt = std::min<int64_t>(K, n - base);
      for (int64_t j = 0; j < cnt; ++j) out[base + j] = vals[j];
    }
  });
}

}  // namespace

int random_values_per_block(DType dtype, uint64_t int_range) {
  return dtype == kFloat64 || int_range > (uint64_t(1) << 32) ? 2 : 4;
}

void uniform(const Tensor& dst, double from, double to, PhiloxSeed seed) {
  const int64_t n = dst.numel();
  const double range = to - from;
  if (dst.dtype() == kFloat64) {
    fill_blocks<double, 2>(dst.data_ptr<double>(), n, seed, [=](Philox4x32 r, double* v) {
      v[0] = from + range * uint64_to_uniform_double(join64(r.v[0], r.v[1]));
      v[1] = from + range * uint64_to_uniform_double(join64(r.v[2], r.v[3]));
    });
    return;
  }
  dispatch_floating(dst.dtype(), "uniform_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    // As many random bits as T has significand digits (PyTorch's uniform_real): rounding
    // a 24-bit value to float16/bfloat16 could turn values just below 1 into 1.
    constexpr int kDigits = std::is_same_v<T, Half> ? 11 : std::is_same_v<T, BFloat16> ? 8 : 24;
    constexpr float kScale = 1.0f / static_cast<float>(1u << kDigits);
    const float f = static_cast<float>(from), rg = static_cast<float>(range);
    fill_blocks<T, 4>(dst.data_ptr<T>(), n, seed, [=](Philox4x32 r, T* v) {
      for (int j = 0; j < 4; ++j) {
        v[j] = T(f + rg * (static_cast<float>(r.v[j] >> (32 - kDigits)) * kScale));
      }
    });
  });
}

void normal(const Tensor& dst, double mean, double std, PhiloxSeed seed) {
  const int64_t n = dst.numel();
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  if (dst.dtype() == kFloat64) {
    fill_blocks<double, 2>(dst.data_ptr<double>(), n, seed, [=](Philox4x32 r, double* v) {
      // Box-Muller; 1 - u keeps the log argument in (0, 1].
      double u1 = 1.0 - uint64_to_uniform_double(join64(r.v[0], r.v[1]));
      double u2 = uint64_to_uniform_double(join64(r.v[2], r.v[3]));
      double rad = std::sqrt(-2.0 * std::log(u1));
      v[0] = mean + std * rad * std::cos(kTwoPi * u2);
      v[1] = mean + std * rad * std::sin(kTwoPi * u2);
    });
    return;
  }
  dispatch_floating(dst.dtype(), "normal_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const float m = static_cast<float>(mean), s = static_cast<float>(std);
    fill_blocks<T, 4>(dst.data_ptr<T>(), n, seed, [=](Philox4x32 r, T* v) {
      for (int j = 0; j < 4; j += 2) {
        float u1 = 1.0f - uint32_to_uniform_float(r.v[j]);
        float u2 = uint32_to_uniform_float(r.v[j + 1]);
        float rad = std::sqrt(-2.0f * std::log(u1));
        float th = static_cast<float>(kTwoPi) * u2;
        v[j] = T(m + s * rad * std::cos(th));
        v[j + 1] = T(m + s * rad * std::sin(th));
      }
    });
  });
}

void bernoulli(const Tensor& dst, double p, PhiloxSeed seed) {
  const int64_t n = dst.numel();
  dispatch_all(dst.dtype(), "bernoulli_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>) {
      fill_blocks<T, 2>(dst.data_ptr<T>(), n, seed, [=](Philox4x32 r, T* v) {
        v[0] = uint64_to_uniform_double(join64(r.v[0], r.v[1])) < p ? 1.0 : 0.0;
        v[1] = uint64_to_uniform_double(join64(r.v[2], r.v[3])) < p ? 1.0 : 0.0;
      });
    } else {
      fill_blocks<T, 4>(dst.data_ptr<T>(), n, seed, [=](Philox4x32 r, T* v) {
        // 32 random bits against p: exact for p = 0 and p = 1.
        for (int j = 0; j < 4; ++j) v[j] = convert<T>(r.v[j] * 0x1p-32 < p ? 1 : 0);
      });
    }
  });
}

void random_int(const Tensor& dst, int64_t from, int64_t to, PhiloxSeed seed) {
  const int64_t n = dst.numel();
  const uint64_t range = static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
  dispatch_all(dst.dtype(), "random_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (random_values_per_block(dst.dtype(), range) == 2) {
      // Added in uint64: for ranges past 2^63, from + (x % range) overflows int64 (UB).
      const uint64_t base = static_cast<uint64_t>(from);
      fill_blocks<T, 2>(dst.data_ptr<T>(), n, seed, [=](Philox4x32 r, T* v) {
        v[0] = convert<T>(static_cast<int64_t>(base + join64(r.v[0], r.v[1]) % range));
        v[1] = convert<T>(static_cast<int64_t>(base + join64(r.v[2], r.v[3]) % range));
      });
    } else {
      // 32-bit words suffice for ranges up to 2^32; the modulo bias is below 2^-32 * range.
      fill_blocks<T, 4>(dst.data_ptr<T>(), n, seed, [=](Philox4x32 r, T* v) {
        for (int j = 0; j < 4; ++j) v[j] = convert<T>(from + static_cast<int64_t>(r.v[j] % range));
      });
    }
  });
}

}  // namespace ember::kernels::cpu
