#pragma once
// Internal: element-wise kernels. The ops have already decided dtypes: inputs arrive in
// the compute dtype (or bool for logical ops) and broadcast to out's shape.

#include <cstdint>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"

namespace ember::kernels::cpu {

enum class UnaryOp : uint8_t {
  // Floating results (integer inputs have been converted to a float dtype).
  Exp, Exp2, Expm1, Log, Log2, Log10, Log1p, Sqrt, Rsqrt, Reciprocal,
  Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh,
  Sigmoid, Erf, Erfinv, GeluErf, GeluTanh, Silu, Frac,
  // Same dtype as the input.
  Neg, Abs, Sign, Relu, Floor, Ceil, Round, Trunc,
  // Bool results.
  IsNan, IsInf, IsFinite, LogicalNot,
  Count,
};

enum class BinaryOp : uint8_t {
  Add, Sub, Mul, Div, DivTrunc, DivFloor, Remainder, Fmod, Pow, Maximum, Minimum, Atan2,
  // Bool results.
  Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr, LogicalXor,
  Count,
};

inline bool is_bool_result(BinaryOp op) { return op >= BinaryOp::Eq; }

// out = op(in). out and in have the same dtype, except bool-result ops (out is bool).
void unary(UnaryOp op, const Tensor& out, const Tensor& in);
// out = a op b (a, b same dtype; out that dtype or bool). For Add/Sub, b is scaled by alpha.
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
            const Scalar& alpha = 1);

// Parameterised element-wise kernels (out and in share a dtype).
void softplus(const Tensor& out, const Tensor& in, double beta, double threshold);
// Either bound may be absent; NaN propagates as in PyTorch.
void clamp(const Tensor& out, const Tensor& in, const Scalar* lo, const Scalar* hi);
// Tensor bounds (same dtype as in, broadcast to out); an undefined bound is absent.
void clamp_tensor(const Tensor& out, const Tensor& in, const Tensor& lo, const Tensor& hi);
void nan_to_num(const Tensor& out, const Tensor& in, double nan, double posinf, double neginf);
// out = self <= threshold ? 0 : grad (PyTorch's threshold_backward; ReLU's gradient with
// threshold 0). out, grad and self share a dtype; NaN in self lets the gradient through.
void threshold_backward(const Tensor& out, const Tensor& grad, const Tensor& self, const Scalar& threshold);
// out = cond ? a : b (cond bool; a, b, out the same dtype).
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
// out = start + weight * (end - start), PyTorch's two-sided formula.
void lerp(const Tensor& out, const Tensor& start, const Tensor& end, const Tensor& weight);
// out (bool) = |a - b| <= atol + rtol * |b|, with equal_nan.
void isclose(const Tensor& out, const Tensor& a, const Tensor& b, double rtol, double atol,
             bool equal_nan);

}  // namespace ember::kernels::cpu
