#pragma once
// Element-wise ops as free functions (the same ops are methods on Tensor). Binary ops
// broadcast and promote dtypes as PyTorch does; float math on integer tensors computes
// in the default float dtype.

#include <optional>
#include <string_view>

#include "ember/core/tensor.h"

namespace ember {

// Whether a value of dtype `from` may be written into a tensor of dtype `to` by an
// in-place op (PyTorch's can_cast: no float -> integer, no non-bool -> bool).
bool can_cast(DType from, DType to);

// The table's ops (ops/pointwise_ops.h; see it for what each does): exp, log, sin, ...,
// relu, silu, softplus(beta = 1, threshold = 20), leaky_relu(negative_slope = 0.01),
// logit(eps = none), isnan, logical_not; atan2, maximum, minimum, logical_and/or/xor.
#define EMBER_UNARY_DECL_Custom(name, params)
#define EMBER_UNARY_DECL_Free(name, params) Tensor name(const Tensor& t EMBER_POINTWISE_UNPAREN params);
#define EMBER_UNARY_DECL_Method EMBER_UNARY_DECL_Free
#define EMBER_UNARY_DECL_Full EMBER_UNARY_DECL_Free
#define EMBER_POINTWISE_UNPAREN(...) __VA_ARGS__
#define EMBER_UNARY(Id, name, kind, api, ...) EMBER_UNARY_DECL_##api(name, ())
#define EMBER_UNARY_P1(Id, name, kind, api, backward, saves, T0, p0, d0) \
  EMBER_UNARY_DECL_##api(name, (, T0 p0 = d0))
#define EMBER_UNARY_P2(Id, name, kind, api, backward, saves, T0, p0, d0, T1, p1, d1) \
  EMBER_UNARY_DECL_##api(name, (, T0 p0 = d0, T1 p1 = d1))
#define EMBER_BINARY_DECL_Custom(name)
#define EMBER_BINARY_DECL_Free(name) Tensor name(const Tensor& a, const Tensor& b);
#define EMBER_BINARY_DECL_Method EMBER_BINARY_DECL_Free
#define EMBER_BINARY_DECL_Full EMBER_BINARY_DECL_Free
#define EMBER_BINARY(Id, name, kind, api, ...) EMBER_BINARY_DECL_##api(name)
#include "ember/ops/pointwise_ops.h"
#undef EMBER_UNARY_DECL_Custom
#undef EMBER_UNARY_DECL_Free
#undef EMBER_UNARY_DECL_Method
#undef EMBER_UNARY_DECL_Full
#undef EMBER_POINTWISE_UNPAREN
#undef EMBER_BINARY_DECL_Custom
#undef EMBER_BINARY_DECL_Free
#undef EMBER_BINARY_DECL_Method
#undef EMBER_BINARY_DECL_Full

Tensor gelu(const Tensor& t, std::string_view approximate = "none");
Tensor clamp(const Tensor& t, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor clamp(const Tensor& t, const Tensor& min, const Tensor& max);
Tensor nan_to_num(const Tensor& t, std::optional<double> nan = 0.0,
                  std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode = std::nullopt);
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string_view> rounding_mode = std::nullopt);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Scalar& b);
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Scalar& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Scalar& b);
Tensor pow(const Scalar& a, const Tensor& b);
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);

Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Scalar& b);
// a where condition, else b; a and b promote to a common dtype and all three broadcast.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b);
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-05, double atol = 1e-08,
               bool equal_nan = false);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-05, double atol = 1e-08,
              bool equal_nan = false);
bool equal(const Tensor& a, const Tensor& b);

}  // namespace ember
