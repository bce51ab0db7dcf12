#pragma once
// Internal: the CPU kernels the ops call. Kernels trust their arguments (the ops have
// checked shapes and dtypes) and know nothing of autograd.

#include <cstdint>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"

namespace ember::kernels::cpu {

// dst[...] = convert(src[...]); src is broadcast to dst's shape. dst and src must not
// partially overlap.
void copy(const Tensor& dst, const Tensor& src);
// Every element of dst = value converted to dst's dtype.
void fill(const Tensor& dst, const Scalar& value);

// Random fills. key/first_block come from Generator::reserve; the element with
// flat (row-major) index i uses counter block first_block + i / per_block.
struct PhiloxSeed {
  uint64_t key;
  uint64_t first_block;
};
// Values one Philox block yields: 2 for float64 and for integer ranges above 2^32
// (64-bit words), 4 otherwise. int_range is 0 for the floating fills.
int random_values_per_block(DType dtype, uint64_t int_range = 0);
void uniform(const Tensor& dst, double from, double to, PhiloxSeed seed);
void normal(const Tensor& dst, double mean, double std, PhiloxSeed seed);
void bernoulli(const Tensor& dst, double p, PhiloxSeed seed);
// Integers uniform in [from, to).
void random_int(const Tensor& dst, int64_t from, int64_t to, PhiloxSeed seed);

}  // namespace ember::kernels::cpu
