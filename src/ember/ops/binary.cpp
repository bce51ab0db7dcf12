// Binary element-wise ops, comparisons, where, lerp, isclose and the arithmetic
// operators: type promotion (result_type), broadcasting, in-place casting rules, then a
// kernel call.

#include "ember/amp/autocast.h"
#include "ember/autograd/functions.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/jit/trace_hook.h"
#include "ember/kernels/cpu/pointwise.h"
#include "ember/ops/creation.h"
#include "ember/ops/overlap.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/pointwise_nodes.h"
#include "ember/ops/type_promotion.h"
#include "ember/ops/view.h"

namespace ember {

using kernels::cpu::BinaryOp;

bool can_cast(DType from, DType to) {
  if (is_floating_point(from) && is_integral(to, false)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

namespace {

// The dtype the kernel computes in, given the promoted dtype of the operands.
DType compute_dtype(BinaryOp op, DType common) {
  switch (kernels::cpu::kind_of(op)) {
    case kernels::cpu::BinaryKind::Float: return is_floating_point(common) ? common : get_default_dtype();
    case kernels::cpu::BinaryKind::Logical: return kBool;
    default: return common;
  }
}

void check_operands(const char* name, BinaryOp op, DType a, DType b) {
  const bool integer_division = op == BinaryOp::Remainder || op == BinaryOp::Fmod ||
                                op == BinaryOp::DivTrunc || op == BinaryOp::DivFloor;
  if (integer_division && a == kBool && b == kBool) {
    EMBER_ERROR("[", name, "] is not implemented for bool operands; convert them to an integer dtype");
  }
  if (op == BinaryOp::Pow && a == kBool && b == kBool) {
    EMBER_ERROR("[", name, "] is not implemented for two bool operands; convert one to an integer dtype");
  }
  if (op == BinaryOp::Sub && (a == kBool || b == kBool)) {
    EMBER_ERROR("[", name, "] subtraction, the `-` operator, with a bool tensor is not supported; "
                "to invert a mask use logical_not(), to compare masks logical_xor()");
  }
}

Tensor as_dtype(const Tensor& t, DType dt) { return t.dtype() == dt ? t : t.to(dt); }

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, DType common, const Scalar& alpha = 1) {
  const DType cdt = compute_dtype(op, common);
  const DType odt = kernels::cpu::is_bool_result(op) ? kBool : cdt;
  DimVector shape = a.sizes() == b.sizes() ? DimVector(a.sizes()) : broadcast_shapes(a.sizes(), b.sizes());
  Tensor out = empty(shape, TensorOptions(odt));
  // Converted copies only where a dtype differs: the common case hands the operands on
  // without touching their reference counts.
  Tensor a_conv, b_conv;
  const Tensor& ac = a.dtype() == cdt ? a : (a_conv = a.to(cdt));
  const Tensor& bc = b.dtype() == cdt ? b : (b_conv = b.to(cdt));
  kernels::cpu::binary(op, out, ac, bc, alpha);
  return out;
}

// The row's public name, under which graphs record the op (Note [Graph op set]).
const char* row_name(BinaryOp op) {
  switch (op) {
#define EMBER_BINARY(Id, name, ...) \
  case BinaryOp::Id: return #name;
#include "ember/ops/pointwise_ops.h"
    case BinaryOp::Count: break;
  }
  return "?";
}

// Graph attributes of a binary node; `scalar`/`scalar_name` carry a wrapped scalar operand.
jit::detail::Attrs row_attrs(BinaryOp op, const Scalar& alpha, const char* scalar_name = nullptr,
                             const Scalar* scalar = nullptr) {
  jit::detail::Attrs attrs;
  if (scalar != nullptr) attrs.emplace_back(scalar_name, detail::value_from_scalar(*scalar));
  if (!(alpha.is_integral() && alpha.to_long() == 1)) attrs.emplace_back("alpha", detail::value_from_scalar(alpha));
  if (op == BinaryOp::DivTrunc) attrs.emplace_back("rounding_mode", Value("trunc"));
  if (op == BinaryOp::DivFloor) attrs.emplace_back("rounding_mode", Value("floor"));
  return attrs;
}

Tensor binary_tt(const char* name, BinaryOp op, const Tensor& a, const Tensor& b, const Scalar& alpha = 1) {
  OpScope scope(name, {&a, &b});
  jit::detail::TraceOp trace(name);
  EMBER_CHECK(a.defined() && b.defined(), "[", name, "] called with an undefined tensor");
  check_operands(name, op, a.dtype(), b.dtype());
  Tensor out = autograd::needs_grad(a, b)
                   ? autograd::fn::binary(static_cast<uint8_t>(op), a, b, alpha,
                                          [&] { return binary(op, a, b, result_type(a, b), alpha); })
                   : binary(op, a, b, result_type(a, b), alpha);
  if (trace.recording()) jit::detail::record_node(row_name(op), {a, b}, row_attrs(op, alpha), {out}, false);
  return out;
}

Tensor binary_ts(const char* name, BinaryOp op, const Tensor& a, const Scalar& b, const Scalar& alpha = 1) {
  OpScope scope(name, {&a});
  jit::detail::TraceOp trace(name);
  EMBER_CHECK(a.defined(), "[", name, "] called with an undefined tensor");
  const DType common = result_type(a, b);
  check_operands(name, op, a.dtype(), b.dtype());
  const Tensor bt = scalar_tensor(b, TensorOptions(compute_dtype(op, common)));
  Tensor out = autograd::needs_grad(a) ? autograd::fn::binary(static_cast<uint8_t>(op), a, bt, alpha,
                                                              [&] { return binary(op, a, bt, common, alpha); })
                                       : binary(op, a, bt, common, alpha);
  if (trace.recording()) jit::detail::record_node(row_name(op), {a}, row_attrs(op, alpha, "other", &b), {out}, false);
  return out;
}

Tensor binary_st(const char* name, BinaryOp op, const Scalar& a, const Tensor& b) {
  OpScope scope(name, {&b});
  jit::detail::TraceOp trace(name);
  EMBER_CHECK(b.defined(), "[", name, "] called with an undefined tensor");
  const DType common = result_type(a, b);
  check_operands(name, op, a.dtype(), b.dtype());
  const Tensor at = scalar_tensor(a, TensorOptions(compute_dtype(op, common)));
  Tensor out = autograd::needs_grad(b)
                   ? autograd::fn::binary(static_cast<uint8_t>(op), at, b, 1, [&] { return binary(op, at, b, common); })
                   : binary(op, at, b, common);
  if (trace.recording()) jit::detail::record_node(row_name(op), {b}, row_attrs(op, 1, "self", &a), {out}, false);
  return out;
}

Tensor& binary_inplace(const char* name, BinaryOp op, Tensor& self, const Tensor& other, DType common,
                       const Scalar& alpha = 1) {
  check_operands(name, op, self.dtype(), other.dtype());
  const DType cdt = compute_dtype(op, common);
  const DType odt = kernels::cpu::is_bool_result(op) ? kBool : cdt;
  EMBER_CHECK(can_cast(odt, self.dtype()), "[", name, "] result type ", odt,
              " can't be cast to the desired output type ", self.dtype(),
              "; use the out-of-place op, or convert the tensor first");
  if (!(other.sizes() == self.sizes())) {
    DimVector shape = broadcast_shapes(self.sizes(), other.sizes());
    EMBER_CHECK(shape == DimVector(self.sizes()), "[", name, "] output with shape ", self.sizes(),
                " doesn't match the broadcast shape ", shape);
  }
  check_no_internal_overlap(self, name);
  Tensor rhs = as_dtype(other, cdt);
  if (rhs.is_alias_of(self) && !is_same_view(rhs, self) && may_overlap(rhs, self)) rhs = rhs.clone();
  if (self.dtype() == odt) {
    kernels::cpu::binary(op, self, self.dtype() == cdt ? self : self.to(cdt), rhs, alpha);
  } else {
    Tensor tmp = empty(self.sizes(), TensorOptions(odt));
    kernels::cpu::binary(op, tmp, self.to(cdt), rhs, alpha);
    self.copy_(tmp);
    return self;  // copy_ bumped the version
  }
  self.bump_version();
  return self;
}

Tensor& binary_inplace_t_impl(const char* name, BinaryOp op, Tensor& self, const Tensor& other, const Scalar& alpha);
Tensor& binary_inplace_s_impl(const char* name, BinaryOp op, Tensor& self, const Scalar& other, const Scalar& alpha);

Tensor& binary_inplace_t(const char* name, BinaryOp op, Tensor& self, const Tensor& other,
                         const Scalar& alpha = 1) {
  OpScope scope(name, {&self, &other});
  jit::detail::TraceOp trace(name);
  EMBER_CHECK(self.defined() && other.defined(), "[", name, "] called with an undefined tensor");
  if (trace.recording()) {
    binary_inplace_t_impl(name, op, self, other, alpha);
    // The recorder reads self's value before rebinding self to the node's output.
    jit::detail::record_node(row_name(op), {self, other}, row_attrs(op, alpha), {self}, true);
    return self;
  }
  return binary_inplace_t_impl(name, op, self, other, alpha);
}

Tensor& binary_inplace_t_impl(const char* name, BinaryOp op, Tensor& self, const Tensor& other, const Scalar& alpha) {
  if (autograd::needs_grad(self, other)) {
    autograd::fn::binary_(static_cast<uint8_t>(op), name, self, other, alpha,
                          [&] { binary_inplace(name, op, self, other, result_type(self, other), alpha); });
    return self;
  }
  autograd::check_inplace_cheap(self, name);
  return binary_inplace(name, op, self, other, result_type(self, other), alpha);
}

Tensor& binary_inplace_s(const char* name, BinaryOp op, Tensor& self, const Scalar& other,
                         const Scalar& alpha = 1) {
  OpScope scope(name, {&self});
  jit::detail::TraceOp trace(name);
  EMBER_CHECK(self.defined(), "[", name, "] called with an undefined tensor");
  if (trace.recording()) {
    binary_inplace_s_impl(name, op, self, other, alpha);
    jit::detail::record_node(row_name(op), {self}, row_attrs(op, alpha, "other", &other), {self}, true);
    return self;
  }
  return binary_inplace_s_impl(name, op, self, other, alpha);
}

Tensor& binary_inplace_s_impl(const char* name, BinaryOp op, Tensor& self, const Scalar& other, const Scalar& alpha) {
  const DType common = result_type(self, other);
  const Tensor ot = scalar_tensor(other, TensorOptions(compute_dtype(op, common)));
  if (autograd::needs_grad(self)) {
    autograd::fn::binary_(static_cast<uint8_t>(op), name, self, ot, alpha,
                          [&] { binary_inplace(name, op, self, ot, common, alpha); });
    return self;
  }
  autograd::check_inplace_cheap(self, name);
  return binary_inplace(name, op, self, ot, common, alpha);
}

BinaryOp div_op(const char* name, std::optional<std::string_view> mode) {
  if (!mode) return BinaryOp::Div;
  if (*mode == "trunc") return BinaryOp::DivTrunc;
  if (*mode == "floor") return BinaryOp::DivFloor;
  EMBER_ERROR("[", name, "] expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
              *mode, "'");
}

}  // namespace

// ---- arithmetic ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) { return binary_tt("add", BinaryOp::Add, a, b, alpha); }
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) { return binary_ts("add", BinaryOp::Add, a, b, alpha); }
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) { return binary_tt("sub", BinaryOp::Sub, a, b, alpha); }
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) { return binary_ts("sub", BinaryOp::Sub, a, b, alpha); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_tt("mul", BinaryOp::Mul, a, b); }
Tensor mul(const Tensor& a, const Scalar& b) { return binary_ts("mul", BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> mode) {
  return binary_tt("div", div_op("div", mode), a, b);
}
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string_view> mode) {
  return binary_ts("div", div_op("div", mode), a, b);
}
Tensor remainder(const Tensor& a, const Tensor& b) { return binary_tt("remainder", BinaryOp::Remainder, a, b); }
Tensor remainder(const Tensor& a, const Scalar& b) { return binary_ts("remainder", BinaryOp::Remainder, a, b); }
Tensor fmod(const Tensor& a, const Tensor& b) { return binary_tt("fmod", BinaryOp::Fmod, a, b); }
Tensor fmod(const Tensor& a, const Scalar& b) { return binary_ts("fmod", BinaryOp::Fmod, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("pow"), a, b)) return pow((*c)[0], (*c)[1]);
  }
  return binary_tt("pow", BinaryOp::Pow, a, b);
}
Tensor pow(const Tensor& a, const Scalar& b) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("pow"), a)) return pow((*c)[0], b);
  }
  // Shortcuts for x^1 and x^2, except when recording a graph (PowBackward0, as PyTorch).
  if (!b.is_boolean() && a.defined() && (is_floating_point(a.dtype()) || !b.is_floating_point()) &&
      !autograd::needs_grad(a)) {
    const double e = b.to_double();
    if (e == 1.0) return a.clone();
    if (e == 2.0 && is_floating_point(a.dtype())) return binary_tt("pow", BinaryOp::Mul, a, a);
  }
  EMBER_CHECK(!(b.is_integral() && b.to_long() < 0 && a.defined() && is_integral(a.dtype(), true)),
              "[pow] integers to negative integer powers are not allowed (exponent ", b, ")");
  return binary_ts("pow", BinaryOp::Pow, a, b);
}
Tensor pow(const Scalar& a, const Tensor& b) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("pow"), b)) return pow(a, (*c)[0]);
  }
  return binary_st("pow", BinaryOp::Pow, a, b);
}

Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return ember::add(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const { return ember::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return ember::sub(*this, o, alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const { return ember::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return ember::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return ember::mul(*this, o); }
Tensor Tensor::div(const Tensor& o, std::optional<std::string_view> m) const { return ember::div(*this, o, m); }
Tensor Tensor::div(const Scalar& o, std::optional<std::string_view> m) const { return ember::div(*this, o, m); }
Tensor Tensor::remainder(const Tensor& o) const { return ember::remainder(*this, o); }
Tensor Tensor::remainder(const Scalar& o) const { return ember::remainder(*this, o); }
Tensor Tensor::fmod(const Tensor& o) const { return ember::fmod(*this, o); }
Tensor Tensor::fmod(const Scalar& o) const { return ember::fmod(*this, o); }
Tensor Tensor::pow(const Tensor& e) const { return ember::pow(*this, e); }
Tensor Tensor::pow(const Scalar& e) const { return ember::pow(*this, e); }

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) const { return binary_inplace_t("add_", BinaryOp::Add, self_mut(), o, alpha); }
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) const { return binary_inplace_s("add_", BinaryOp::Add, self_mut(), o, alpha); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) const { return binary_inplace_t("sub_", BinaryOp::Sub, self_mut(), o, alpha); }
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) const { return binary_inplace_s("sub_", BinaryOp::Sub, self_mut(), o, alpha); }
Tensor& Tensor::mul_(const Tensor& o) const { return binary_inplace_t("mul_", BinaryOp::Mul, self_mut(), o); }
Tensor& Tensor::mul_(const Scalar& o) const { return binary_inplace_s("mul_", BinaryOp::Mul, self_mut(), o); }
Tensor& Tensor::div_(const Tensor& o, std::optional<std::string_view> m) const {
  return binary_inplace_t("div_", div_op("div_", m), self_mut(), o);
}
Tensor& Tensor::div_(const Scalar& o, std::optional<std::string_view> m) const {
  return binary_inplace_s("div_", div_op("div_", m), self_mut(), o);
}
Tensor& Tensor::remainder_(const Tensor& o) const { return binary_inplace_t("remainder_", BinaryOp::Remainder, self_mut(), o); }
Tensor& Tensor::remainder_(const Scalar& o) const { return binary_inplace_s("remainder_", BinaryOp::Remainder, self_mut(), o); }
Tensor& Tensor::fmod_(const Tensor& o) const { return binary_inplace_t("fmod_", BinaryOp::Fmod, self_mut(), o); }
Tensor& Tensor::fmod_(const Scalar& o) const { return binary_inplace_s("fmod_", BinaryOp::Fmod, self_mut(), o); }
Tensor& Tensor::pow_(const Tensor& e) const { return binary_inplace_t("pow_", BinaryOp::Pow, self_mut(), e); }
Tensor& Tensor::pow_(const Scalar& e) const { return binary_inplace_s("pow_", BinaryOp::Pow, self_mut(), e); }

// ---- the table's (tensor, tensor) ops with generated definitions (Note [Element-wise op table]) ----
#define EMBER_BINARY_API_Custom(Id, name)
#define EMBER_BINARY_API_Free(Id, name) \
  Tensor name(const Tensor& a, const Tensor& b) { return binary_tt(#name, BinaryOp::Id, a, b); }
#define EMBER_BINARY_API_Method(Id, name) \
  EMBER_BINARY_API_Free(Id, name)         \
  Tensor Tensor::name(const Tensor& o) const { return ember::name(*this, o); }
#define EMBER_BINARY_API_Full(Id, name) \
  EMBER_BINARY_API_Method(Id, name)     \
  Tensor& Tensor::name##_(const Tensor& o) const { return binary_inplace_t(#name "_", BinaryOp::Id, self_mut(), o); }
#define EMBER_BINARY(Id, name, kind, api, ...) EMBER_BINARY_API_##api(Id, name)
#include "ember/ops/pointwise_ops.h"

// ---- comparison and logic ----
#define EMBER_COMPARE(fn, OP)                                                                  \
  Tensor fn(const Tensor& a, const Tensor& b) { return binary_tt(#fn, BinaryOp::OP, a, b); }   \
  Tensor fn(const Tensor& a, const Scalar& b) { return binary_ts(#fn, BinaryOp::OP, a, b); }   \
  Tensor Tensor::fn(const Tensor& o) const { return ember::fn(*this, o); }                     \
  Tensor Tensor::fn(const Scalar& o) const { return ember::fn(*this, o); }
EMBER_COMPARE(eq, Eq)
EMBER_COMPARE(ne, Ne)
EMBER_COMPARE(lt, Lt)
EMBER_COMPARE(le, Le)
EMBER_COMPARE(gt, Gt)
EMBER_COMPARE(ge, Ge)
#undef EMBER_COMPARE


Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  jit::detail::TraceOp trace("where");
  Tensor out = [&]() -> Tensor {
  OpScope scope("where", {&cond, &a, &b});
  EMBER_CHECK(cond.defined() && a.defined() && b.defined(), "[where] called with an undefined tensor");
  EMBER_CHECK(cond.dtype() == kBool, "[where] expected condition to be a bool tensor, but got a tensor of dtype ",
              cond.dtype(), "; compare it first, e.g. cond != 0");
  if (autograd::needs_grad(a, b)) return autograd::fn::where(cond, a, b, [&] { return where(cond, a, b); });
  const DType dt = result_type(a, b);
  DimVector shape = broadcast_shapes(broadcast_shapes(cond.sizes(), a.sizes()), b.sizes());
  Tensor out = empty(shape, TensorOptions(dt));
  kernels::cpu::where(out, cond, as_dtype(a, dt), as_dtype(b, dt));
  return out;
}();
  if (trace.recording()) trace.record({cond, a, b}, {}, out);
  return out;
}
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) {
  EMBER_CHECK(a.defined(), "[where] called with an undefined tensor");
  return where(cond, a, scalar_tensor(b, TensorOptions(result_type(a, b))));
}
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) {
  EMBER_CHECK(b.defined(), "[where] called with an undefined tensor");
  return where(cond, scalar_tensor(a, TensorOptions(result_type(a, b))), b);
}
Tensor Tensor::where(const Tensor& condition, const Tensor& other) const {
  return ember::where(condition, *this, other);
}

Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  OpScope scope("lerp", {&start, &end, &weight});
  EMBER_CHECK(start.defined() && end.defined() && weight.defined(), "[lerp] called with an undefined tensor");
  EMBER_CHECK(start.is_floating_point(), "[lerp] expected a floating-point start tensor, got ", start.dtype());
  EMBER_CHECK(start.dtype() == end.dtype() && start.dtype() == weight.dtype(),
              "[lerp] expected start, end and weight of the same dtype, got ", start.dtype(), ", ",
              end.dtype(), " and ", weight.dtype());
  if (autograd::needs_grad(start, end, weight)) return start + weight * (end - start);  // differentiable form
  DimVector shape = broadcast_shapes(broadcast_shapes(start.sizes(), end.sizes()), weight.sizes());
  Tensor out = empty(shape, TensorOptions(start.dtype()));
  kernels::cpu::lerp(out, start, end, weight);
  return out;
}
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight) {
  EMBER_CHECK(start.defined(), "[lerp] called with an undefined tensor");
  return lerp(start, end, scalar_tensor(weight, TensorOptions(start.dtype())));
}
Tensor Tensor::lerp(const Tensor& end, const Scalar& w) const { return ember::lerp(*this, end, w); }
Tensor Tensor::lerp(const Tensor& end, const Tensor& w) const { return ember::lerp(*this, end, w); }
Tensor& Tensor::lerp_(const Tensor& end, const Tensor& w) const {
  Tensor r = ember::lerp(self_mut(), end, w);
  EMBER_CHECK(r.sizes() == sizes(), "[lerp_] output with shape ", sizes(),
              " doesn't match the broadcast shape ", r.sizes());
  return copy_(r);
}
Tensor& Tensor::lerp_(const Tensor& end, const Scalar& w) const {
  return lerp_(end, scalar_tensor(w, TensorOptions(dtype())));
}

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  OpScope scope("isclose", {&a, &b});
  EMBER_CHECK(a.defined() && b.defined(), "[isclose] called with an undefined tensor");
  EMBER_CHECK(a.dtype() == b.dtype(), "[isclose] expected both inputs to have the same dtype, but got ",
              a.dtype(), " and ", b.dtype());
  EMBER_CHECK(rtol >= 0 && atol >= 0, "[isclose] rtol and atol must be non-negative, got rtol=", rtol,
              ", atol=", atol);
  Tensor out = empty(broadcast_shapes(a.sizes(), b.sizes()), TensorOptions(kBool));
  kernels::cpu::isclose(out, a, b, rtol, atol, equal_nan);
  return out;
}
Tensor Tensor::isclose(const Tensor& o, double rtol, double atol, bool equal_nan) const {
  return ember::isclose(*this, o, rtol, atol, equal_nan);
}

namespace {
bool all_true(const Tensor& b) {
  Tensor c = b.contiguous();
  const bool* p = c.data_ptr<bool>();
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (!p[i]) return false;
  }
  return true;
}
}  // namespace

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return all_true(isclose(a, b, rtol, atol, equal_nan));
}
bool Tensor::allclose(const Tensor& o, double rtol, double atol, bool equal_nan) const {
  return ember::allclose(*this, o, rtol, atol, equal_nan);
}

bool equal(const Tensor& a, const Tensor& b) {
  OpScope scope("equal", {&a, &b});
  EMBER_CHECK(a.defined() && b.defined(), "[equal] called with an undefined tensor");
  if (!(a.sizes() == b.sizes())) return false;
  return all_true(eq(a, b));
}
bool Tensor::equal(const Tensor& o) const { return ember::equal(*this, o); }

// ---- operators ----
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return binary_st("rsub", BinaryOp::Sub, a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return binary_st("div", BinaryOp::Div, a, b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
Tensor operator%(const Tensor& a, const Tensor& b) { return a.remainder(b); }
Tensor operator%(const Tensor& a, const Scalar& b) { return a.remainder(b); }

}  // namespace ember

// ---- graph nodes (ops/pointwise_nodes.h) ----
namespace ember::detail {

namespace {
bool binary_from_name(std::string_view op, BinaryOp& out) {
#define EMBER_BINARY(Id, name, ...) \
  if (op == #name) {                \
    out = BinaryOp::Id;             \
    return true;                    \
  }
#include "ember/ops/pointwise_ops.h"
  return false;
}
}  // namespace

bool is_binary_node(std::string_view op) {
  BinaryOp id;
  return binary_from_name(op, id);
}

Tensor run_binary_node(std::string_view op, const std::vector<Tensor>& in, const Value::Dict& attrs) {
  BinaryOp id{};
  EMBER_CHECK(binary_from_name(op, id), "[jit] '", op, "' is not an element-wise binary op");
  if (const Value* mode = attrs.find("rounding_mode"); mode != nullptr && id == BinaryOp::Div) {
    id = div_op("div", mode->to_string());
  }
  const Value* alpha_v = attrs.find("alpha");
  const Scalar alpha = alpha_v != nullptr ? scalar_from_value(*alpha_v) : Scalar(int64_t(1));
  const char* name = row_name(id);
  if (in.size() == 2) return binary_tt(name, id, in[0], in[1], alpha);
  EMBER_CHECK(in.size() == 1, "[jit] node '", op, "' has ", in.size(), " tensor inputs; expected 1 or 2");
  if (const Value* other = attrs.find("other")) return binary_ts(name, id, in[0], scalar_from_value(*other), alpha);
  const Value* self = attrs.find("self");
  EMBER_CHECK(self != nullptr, "[jit] node '", op, "' with one tensor input needs an 'other' or 'self' attribute");
  return binary_st(name, id, scalar_from_value(*self), in[0]);
}

bool run_binary_node_out(std::string_view op, const Tensor& out, const std::vector<Tensor>& in,
                         const Value::Dict& attrs) {
  BinaryOp id{};
  if (!binary_from_name(op, id) || in.empty() || in.size() > 2) return false;
  const Tensor& a = in[0];
  if (a.dtype() == kBool || out.dtype() != a.dtype() || !(out.sizes() == a.sizes())) return false;
  if (const Value* mode = attrs.find("rounding_mode"); mode != nullptr && id == BinaryOp::Div) {
    id = div_op("div", mode->to_string());
  }
  if (kernels::cpu::is_bool_result(id)) return false;
  const Value* alpha_v = attrs.find("alpha");
  const Scalar alpha = alpha_v != nullptr ? scalar_from_value(*alpha_v) : Scalar(int64_t(1));
  Tensor b;
  if (in.size() == 2) {
    b = in[1];
    if (b.dtype() != a.dtype() || (b.is_alias_of(out) && !b.is_same(out))) return false;
    if (!(b.sizes() == a.sizes()) && !(DimVector(broadcast_shapes(a.sizes(), b.sizes())) == DimVector(a.sizes()))) return false;
  } else {
    const Value* other = attrs.find("other");
    if (other == nullptr) return false;  // scalar op tensor: the tensor is the second operand
    const Scalar s = scalar_from_value(*other);
    if (result_type(a, s) != a.dtype()) return false;
    b = scalar_tensor(s, TensorOptions(a.dtype()));
  }
  if (compute_dtype(id, a.dtype()) != a.dtype()) return false;
  check_operands(row_name(id), id, a.dtype(), b.dtype());
  kernels::cpu::binary(id, out, a, b, alpha);
  return true;
}

}  // namespace ember::detail
