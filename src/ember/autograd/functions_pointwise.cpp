// Backward formulas of the element-wise ops (PyTorch's derivatives.yaml is the model for
// each). Formulas are written with ember ops, so they are differentiable themselves.

#include <cmath>
#include <numbers>

#include "ember/autograd/fn_node.h"
#include "ember/autograd/functions.h"
#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/kernels/cpu/pointwise.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise.h"

namespace ember::autograd::fn {

using kernels::cpu::BinaryOp;
using kernels::cpu::UnaryOp;
using kernels::cpu::UnaryParams;

namespace {

constexpr double kLn2 = std::numbers::ln2;
constexpr double kLn10 = std::numbers::ln10;
constexpr double kPi = std::numbers::pi;

const char* unary_name(UnaryOp op) {
  switch (op) {
#define EMBER_UNARY_ROW(Id, backward) \
  case UnaryOp::Id: return backward;
#define EMBER_UNARY(Id, name, kind, api, backward, ...) EMBER_UNARY_ROW(Id, backward)
#define EMBER_UNARY_P1(Id, name, kind, api, backward, ...) EMBER_UNARY_ROW(Id, backward)
#define EMBER_UNARY_P2(Id, name, kind, api, backward, ...) EMBER_UNARY_ROW(Id, backward)
#include "ember/ops/pointwise_ops.h"
#undef EMBER_UNARY_ROW
    case UnaryOp::Count: break;
  }
  return "NotDifferentiable";
}

// What a unary formula reads: the input x, the output y, or nothing (the `saves` column).
enum class Uses { None, Input, Output };

Uses unary_uses(UnaryOp op) {
  switch (op) {
#define EMBER_UNARY_ROW(Id, saves) \
  case UnaryOp::Id: return Uses::saves;
#define EMBER_UNARY(Id, name, kind, api, backward, saves) EMBER_UNARY_ROW(Id, saves)
#define EMBER_UNARY_P1(Id, name, kind, api, backward, saves, ...) EMBER_UNARY_ROW(Id, saves)
#define EMBER_UNARY_P2(Id, name, kind, api, backward, saves, ...) EMBER_UNARY_ROW(Id, saves)
#include "ember/ops/pointwise_ops.h"
#undef EMBER_UNARY_ROW
    case UnaryOp::Count: break;
  }
  return Uses::None;
}

// ReLU's gradient, y <= 0 ? 0 : g. Under create_graph it is built from ember ops so that it
// can be differentiated again; otherwise one fused pass (no bool mask, no type promotion).
Tensor relu_grad(const Tensor& g, const Tensor& y) {
  if (GradMode::is_enabled() || g.dtype() != y.dtype()) return where(y <= 0, Scalar(0), g);
  // An incoming gradient nobody else can see (the engine moved it here, no view shares its
  // storage) is overwritten in place: one buffer less to allocate and stream through.
  if (g.use_count() == 1 && g.storage().use_count() == 1 && g.is_contiguous() && g.sizes() == y.sizes()) {
    kernels::cpu::threshold_backward(g, g, y, 0);
    return g;
  }
  Tensor out = empty(y.sizes(), TensorOptions(y.dtype()));
  kernels::cpu::threshold_backward(out, g, y, 0);
  return out;
}

// GELU's first-order gradient in one pass (kernels::cpu::gelu_backward), into g's own buffer
// when nobody else can see it (as relu_grad).
Tensor gelu_grad(const Tensor& g, const Tensor& x, bool tanh) {
  if (g.use_count() == 1 && g.storage().use_count() == 1 && g.is_contiguous()) {
    kernels::cpu::gelu_backward(g, g, x, tanh);
    return g;
  }
  Tensor out = empty(x.sizes(), TensorOptions(x.dtype()));
  kernels::cpu::gelu_backward(out, g, x, tanh);
  return out;
}

// One case per differentiable UnaryOp; p holds a parameterised op's parameters.
Tensor unary_grad(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y, const UnaryParams& p) {
  if ((op == UnaryOp::GeluErf || op == UnaryOp::GeluTanh) && !GradMode::is_enabled() && g.dtype() == x.dtype() &&
      g.sizes() == x.sizes()) {
    return gelu_grad(g, x, op == UnaryOp::GeluTanh);
  }
  switch (op) {
    case UnaryOp::Exp: return g * y;
    case UnaryOp::Exp2: return g * y * kLn2;
    case UnaryOp::Expm1: return g * (y + 1);
    case UnaryOp::Log: return g / x;
    case UnaryOp::Log2: return g / (x * kLn2);
    case UnaryOp::Log10: return g / (x * kLn10);
    case UnaryOp::Log1p: return g / (x + 1);
    case UnaryOp::Sqrt: return g / (y * 2);
    case UnaryOp::Rsqrt: return g * y.pow(3) * -0.5;
    case UnaryOp::Reciprocal: return -(g * y * y);
    case UnaryOp::Sin: return g * x.cos();
    case UnaryOp::Cos: return -(g * x.sin());
    case UnaryOp::Tan: return g * (y * y + 1);
    case UnaryOp::Asin: return g * (-(x * x) + 1).rsqrt();
    case UnaryOp::Acos: return -(g * (-(x * x) + 1).rsqrt());
    case UnaryOp::Atan: return g / (x * x + 1);
    case UnaryOp::Sinh: return g * x.cosh();
    case UnaryOp::Cosh: return g * x.sinh();
    case UnaryOp::Tanh: return g * (-(y * y) + 1);
    case UnaryOp::Sigmoid: return g * (y * (-y + 1));
    case UnaryOp::Erf: return g * (-(x * x)).exp() * (2.0 / std::sqrt(kPi));
    case UnaryOp::Erfinv: return g * (y * y).exp() * (std::sqrt(kPi) / 2.0);
    case UnaryOp::GeluErf: {
      const Tensor cdf = ((x * std::numbers::sqrt2 / 2).erf() + 1) * 0.5;
      const Tensor pdf = (x * x * -0.5).exp() * (1.0 / std::sqrt(2 * kPi));
      return g * (cdf + x * pdf);
    }
    case UnaryOp::GeluTanh: {
      const double k = std::sqrt(2.0 / kPi), c = 0.044715;
      const Tensor x2 = x * x;
      const Tensor t = ((x + x2 * x * c) * k).tanh();
      const Tensor dinner = (x2 * (3 * c) + 1) * k;
      return g * ((t + 1) * 0.5 + x * 0.5 * (-(t * t) + 1) * dinner);
    }
    case UnaryOp::Silu: {
      const Tensor s = x.sigmoid();
      return g * (s * (x * (-s + 1) + 1));
    }
    case UnaryOp::Softplus: {  // beta = p0, threshold = p1; sigmoid(beta x) below the threshold
      const Tensor bx = x * p.p0;
      return where(bx > p.p1, g, g * bx.sigmoid());
    }
    case UnaryOp::LeakyRelu: return where(x > 0, g, g * p.p0);  // negative_slope = p0
    case UnaryOp::Logit: {  // eps = p0 (negative: none)
      const Tensor d = g / (x * (-x + 1));
      if (p.p0 < 0) return where((x < 0).logical_or(x > 1), Scalar(NAN), d);
      return where((x < p.p0).logical_or(x > 1 - p.p0), Scalar(0), d);
    }
    case UnaryOp::Frac: return g;
    case UnaryOp::Neg: return -g;
    case UnaryOp::Abs: return g * x.sign();
    case UnaryOp::Relu: return relu_grad(g, y);
    case UnaryOp::Sign: case UnaryOp::Floor: case UnaryOp::Ceil: case UnaryOp::Round: case UnaryOp::Trunc:
      return zeros_like(g);
    default:
      EMBER_ERROR("[autograd] the derivative of this element-wise op is not implemented");
  }
}

// Saved slots: 0 = input (or undefined), 1 = output (or undefined). i0 = UnaryOp,
// d0, d1 = its parameters.
variable_list unary_formula(FnNode& n, const variable_list& grads) {
  const auto op = static_cast<UnaryOp>(n.i0);
  return {unary_grad(op, grads[0], n.saved(0), n.saved(1), UnaryParams{n.d0, n.d1})};
}

const char* binary_name(BinaryOp op, bool scalar_other) {
  switch (op) {
#define EMBER_BINARY(Id, name, kind, api, backward, backward_scalar, saves) \
  case BinaryOp::Id: return scalar_other ? backward_scalar : backward;
#include "ember/ops/pointwise_ops.h"
    case BinaryOp::Count: break;
  }
  return "NotDifferentiable";
}

// What a binary formula reads (the `saves` column).
enum class BinarySaves { None, Operands, Cross, OperandsOutput };

BinarySaves binary_saves(BinaryOp op) {
  switch (op) {
#define EMBER_BINARY(Id, name, kind, api, backward, backward_scalar, saves) \
  case BinaryOp::Id: return BinarySaves::saves;
#include "ember/ops/pointwise_ops.h"
    case BinaryOp::Count: break;
  }
  return BinarySaves::None;
}

bool differentiable(BinaryOp op) { return !kernels::cpu::is_bool_result(op); }

// Saved: 0 = a, 1 = b, 2 = output. i0 = BinaryOp, s0 = alpha.
variable_list binary_formula(FnNode& n, const variable_list& grads) {
  const auto op = static_cast<BinaryOp>(n.i0);
  const Tensor& g = grads[0];
  const bool ga = n.should_compute_output(0), gb = n.should_compute_output(1);
  Tensor da, db;
  switch (op) {
    case BinaryOp::Add:
      if (ga) da = g;
      if (gb) db = n.s0.to_double() == 1.0 ? g : g * n.s0;
      break;
    case BinaryOp::Sub:
      if (ga) da = g;
      if (gb) db = n.s0.to_double() == 1.0 ? -g : g * -n.s0.to_double();
      break;
    case BinaryOp::Mul:
      if (ga) da = g * n.saved(1);
      if (gb) db = g * n.saved(0);
      break;
    case BinaryOp::Div: {
      const Tensor b = n.saved(1);
      if (ga) da = g / b;
      if (gb) db = -(g * n.saved(0)) / (b * b);
      break;
    }
    case BinaryOp::DivTrunc: case BinaryOp::DivFloor:
      if (ga) da = zeros_like(g);
      if (gb) db = zeros_like(g);
      break;
    case BinaryOp::Remainder:
      if (ga) da = g;
      if (gb) db = -(g * n.saved(0).div(n.saved(1), "floor"));
      break;
    case BinaryOp::Fmod:
      if (ga) da = g;
      if (gb) db = -(g * n.saved(0).div(n.saved(1), "trunc"));
      break;
    case BinaryOp::Pow: {
      const Tensor a = n.saved(0), b = n.saved(1);
      if (ga) da = where(b == 0, zeros_like(g), g * b * a.pow(b - 1));
      if (gb) {
        const Tensor y = n.saved(2);
        const Tensor zero_base = (a == 0).logical_and(b >= 0);
        db = g * where(zero_base, zeros_like(y), y * a.log());
      }
      break;
    }
    case BinaryOp::Maximum: case BinaryOp::Minimum: {
      const Tensor a = n.saved(0), b = n.saved(1);
      const Tensor half = g / 2;
      const bool mx = op == BinaryOp::Maximum;
      if (ga) da = where(a == b, half, where(mx ? a < b : a > b, zeros_like(g), g));
      if (gb) db = where(a == b, half, where(mx ? b < a : b > a, zeros_like(g), g));
      break;
    }
    case BinaryOp::Atan2: {
      const Tensor a = n.saved(0), b = n.saved(1);
      const Tensor r = a * a + b * b;
      if (ga) da = g * b / r;
      if (gb) db = -(g * a) / r;
      break;
    }
    default:
      EMBER_ERROR("[autograd] the derivative of this element-wise op is not implemented");
  }
  return {da, db};
}

// Which of a, b and the output a node saves, given which gradients it computes.
struct SavePlan {
  bool a, b, out;
};
SavePlan save_plan(BinaryOp op, bool ga, bool gb) {
  switch (binary_saves(op)) {
    case BinarySaves::None: return {false, false, false};
    case BinarySaves::Cross: return {gb, ga, false};
    case BinarySaves::Operands: return {ga || gb, ga || gb, false};
    case BinarySaves::OperandsOutput: return {ga || gb, ga || gb, gb};
  }
  return {false, false, false};
}

}  // namespace

Tensor unary(uint8_t op_id, const Tensor& self, double p0, double p1, Forward forward) {
  const auto op = static_cast<UnaryOp>(op_id);
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  if (kernels::cpu::kind_of(op) == kernels::cpu::UnaryKind::Bool || !is_floating_point(out.dtype())) {
    return out;  // not differentiable
  }
  auto node = make_node(unary_name(op), unary_formula, {&self});
  node->i0 = op_id;
  node->d0 = p0;
  node->d1 = p1;
  const Uses uses = unary_uses(op);
  node->save(uses == Uses::Input ? self : Tensor());
  set_history(out, node);
  node->save(uses == Uses::Output ? out : Tensor(), true);
  return out;
}

void unary_(uint8_t op_id, const char* name, const Tensor& self, double p0, double p1, ForwardInplace forward) {
  const auto op = static_cast<UnaryOp>(op_id);
  check_inplace(self, name);
  auto node = make_node(unary_name(op), unary_formula, {&self});
  node->i0 = op_id;
  node->d0 = p0;
  node->d1 = p1;
  const Uses uses = unary_uses(op);
  // The old value is cloned with grad mode on, so a double backward still sees how it
  // depended on earlier ops.
  node->save(uses == Uses::Input ? self.clone() : Tensor());
  {
    AutoGradMode off(false);
    forward();
  }
  rebase_history(self, node);
  node->save(uses == Uses::Output ? self : Tensor(), true);
}

Tensor binary(uint8_t op_id, const Tensor& a, const Tensor& b, const Scalar& alpha, Forward forward) {
  const auto op = static_cast<BinaryOp>(op_id);
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  if (!differentiable(op) || !is_floating_point(out.dtype())) return out;
  auto node = make_node(binary_name(op, b.dim() == 0 && !b.requires_grad()), binary_formula, {&a, &b});
  node->i0 = op_id;
  node->s0 = alpha;
  // Save only what the wanted gradients read.
  const SavePlan plan = save_plan(op, node->should_compute_output(0), node->should_compute_output(1));
  node->save(plan.a ? a : Tensor());
  node->save(plan.b ? b : Tensor());
  set_history(out, node);
  node->save(plan.out ? out : Tensor(), true);
  return out;
}

void binary_(uint8_t op_id, const char* name, const Tensor& self, const Tensor& other, const Scalar& alpha,
             ForwardInplace forward) {
  const auto op = static_cast<BinaryOp>(op_id);
  check_inplace(self, name);
  if (!differentiable(op) || !is_floating_point(self.dtype())) {
    AutoGradMode off(false);
    forward();
    return;
  }
  auto node = make_node(binary_name(op, other.dim() == 0 && !other.requires_grad()), binary_formula, {&self, &other});
  node->i0 = op_id;
  node->s0 = alpha;
  const SavePlan plan = save_plan(op, node->should_compute_output(0), node->should_compute_output(1));
  // Old values are cloned with grad mode on, so a double backward still sees how they
  // depended on earlier ops.
  node->save(plan.a ? self.clone() : Tensor());
  node->save(plan.b ? (other.is_alias_of(self) ? other.clone() : other) : Tensor());
  {
    AutoGradMode off(false);
    forward();
  }
  rebase_history(self, node);
  node->save(plan.out ? self : Tensor(), true);
}

}  // namespace ember::autograd::fn
