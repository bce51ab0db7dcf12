#pragma once
// Internal: element-wise kernels. The ops have already decided dtypes: inputs arrive in
// the compute dtype (or bool for logical ops) and broadcast to out's shape.

#include <cstdint>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"

namespace ember::kernels::cpu {

// The element-wise ops of the table (ops/pointwise_ops.h, Note [Element-wise op table]).
// The enumerators' order carries no meaning: what an op is comes from its row.
enum class UnaryOp : uint8_t {
#define EMBER_UNARY(Id, ...) Id,
#define EMBER_UNARY_P1(Id, ...) Id,
#define EMBER_UNARY_P2(Id, ...) Id,
#include "ember/ops/pointwise_ops.h"
  Count,
};

enum class BinaryOp : uint8_t {
#define EMBER_BINARY(Id, ...) Id,
#include "ember/ops/pointwise_ops.h"
  Count,
};

// How a unary op's result dtype follows its input's (the `kind` column).
enum class UnaryKind : uint8_t { Float, FloatOnly, Same, Bool };
// How a binary op's compute and result dtypes follow the promoted dtype.
enum class BinaryKind : uint8_t { Same, Float, Compare, Logical };

constexpr UnaryKind kind_of(UnaryOp op) {
  switch (op) {
#define EMBER_UNARY_ROW(Id, kind) \
  case UnaryOp::Id: return UnaryKind::kind;
#define EMBER_UNARY(Id, name, kind, ...) EMBER_UNARY_ROW(Id, kind)
#define EMBER_UNARY_P1(Id, name, kind, ...) EMBER_UNARY_ROW(Id, kind)
#define EMBER_UNARY_P2(Id, name, kind, ...) EMBER_UNARY_ROW(Id, kind)
#include "ember/ops/pointwise_ops.h"
#undef EMBER_UNARY_ROW
    case UnaryOp::Count: break;
  }
  return UnaryKind::Same;
}

constexpr BinaryKind kind_of(BinaryOp op) {
  switch (op) {
#define EMBER_BINARY(Id, name, kind, ...) \
  case BinaryOp::Id: return BinaryKind::kind;
#include "ember/ops/pointwise_ops.h"
    case BinaryOp::Count: break;
  }
  return BinaryKind::Same;
}

inline bool is_bool_result(BinaryOp op) {
  return kind_of(op) == BinaryKind::Compare || kind_of(op) == BinaryKind::Logical;
}

// The parameters of a parameterised unary op (the P1/P2 rows), as doubles; unused slots 0.
struct UnaryParams {
  double p0 = 0, p1 = 0;
};

// out = op(in). out and in have the same dtype, except bool-result ops (out is bool).
void unary(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryParams& p = {});
// out = a op b (a, b same dtype; out that dtype or bool). For Add/Sub, b is scaled by alpha.
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
            const Scalar& alpha = 1);

// Parameterised element-wise kernels outside the table (out and in share a dtype).
// Either bound may be absent; NaN propagates as in PyTorch.
void clamp(const Tensor& out, const Tensor& in, const Scalar* lo, const Scalar* hi);
// Tensor bounds (same dtype as in, broadcast to out); an undefined bound is absent.
void clamp_tensor(const Tensor& out, const Tensor& in, const Tensor& lo, const Tensor& hi);
void nan_to_num(const Tensor& out, const Tensor& in, double nan, double posinf, double neginf);
// out = self <= threshold ? 0 : grad (PyTorch's threshold_backward; ReLU's gradient with
// threshold 0). out, grad and self share a dtype; NaN in self lets the gradient through.
void threshold_backward(const Tensor& out, const Tensor& grad, const Tensor& self, const Scalar& threshold);
// out = grad * d gelu(self) / d self, erf form or (tanh) the tanh approximation; out, grad and
// self share a floating dtype (GeluBackward0's first-order formula in one pass).
void gelu_backward(const Tensor& out, const Tensor& grad, const Tensor& self, bool tanh);
// out = cond ? a : b (cond bool; a, b, out the same dtype).
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
// out = start + weight * (end - start), PyTorch's two-sided formula.
void lerp(const Tensor& out, const Tensor& start, const Tensor& end, const Tensor& weight);
// out (bool) = |a - b| <= atol + rtol * |b|, with equal_nan.
void isclose(const Tensor& out, const Tensor& a, const Tensor& b, double rtol, double atol,
             bool equal_nan);

}  // namespace ember::kernels::cpu
