// Unary element-wise ops: dtype rules and checks, then a kernel call.

#include <algorithm>
#include <cmath>
#include <limits>

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

using kernels::cpu::UnaryOp;

namespace {

using kernels::cpu::UnaryKind;
using kernels::cpu::UnaryParams;

void check_input(const char* name, UnaryOp op, const Tensor& t) {
  if (op == UnaryOp::Softplus) {
    EMBER_CHECK(t.defined() && t.is_floating_point(), "[softplus] expected a floating-point tensor, got ",
                t.defined() ? std::string(dtype_name(t.dtype())) : std::string("an undefined tensor"));
  }
  EMBER_CHECK(t.defined(), "[", name, "] called on an undefined tensor");
  const DType dt = t.dtype();
  if (dt == kBool) {
    EMBER_CHECK(op != UnaryOp::Neg, "[", name,
                "] negation, the `-` operator, on a bool tensor is not supported; to invert a "
                "mask use logical_not()");
    EMBER_CHECK(op != UnaryOp::Abs && op != UnaryOp::Relu, "[", name,
                "] is not implemented for dtype bool; convert with to(ember::kInt64) first");
  }
  if (dt == kBool && (op == UnaryOp::Floor || op == UnaryOp::Ceil || op == UnaryOp::Round ||
                     op == UnaryOp::Trunc)) {
    EMBER_ERROR("[", name, "] is not implemented for dtype bool; convert with to() first");
  }
  if (kind_of(op) == UnaryKind::FloatOnly) {
    EMBER_CHECK(is_floating_point(dt), "[", name,
                "] is only defined for floating-point tensors, got dtype ", dt);
  }
}

DType out_dtype(UnaryOp op, DType in) {
  switch (kind_of(op)) {
    case UnaryKind::Float: return is_floating_point(in) ? in : get_default_dtype();
    case UnaryKind::FloatOnly: return in;
    case UnaryKind::Same: return in;
    case UnaryKind::Bool: return kBool;
  }
  return in;
}

Tensor unary_raw(UnaryOp op, const Tensor& t, const UnaryParams& p);
Tensor& unary_impl_(const char* name, UnaryOp op, Tensor& t, const UnaryParams& p);

// The row's public name, under which graphs record the op (Note [Graph op set]).
const char* row_name(UnaryOp op) {
  switch (op) {
#define EMBER_UNARY_NAME_ROW(Id, name) \
  case UnaryOp::Id: return #name;
#define EMBER_UNARY(Id, name, ...) EMBER_UNARY_NAME_ROW(Id, name)
#define EMBER_UNARY_P1(Id, name, ...) EMBER_UNARY_NAME_ROW(Id, name)
#define EMBER_UNARY_P2(Id, name, ...) EMBER_UNARY_NAME_ROW(Id, name)
#include "ember/ops/pointwise_ops.h"
#undef EMBER_UNARY_NAME_ROW
    case UnaryOp::Count: break;
  }
  return "?";
}

// The row's parameters as graph attributes, named as in the public function.
jit::detail::Attrs row_attrs(UnaryOp op, const UnaryParams& p) {
  switch (op) {
#define EMBER_UNARY_P1(Id, name, kind, api, backward, saves, T0, N0, d0) \
  case UnaryOp::Id: return {{#N0, Value(p.p0)}};
#define EMBER_UNARY_P2(Id, name, kind, api, backward, saves, T0, N0, d0, T1, N1, d1) \
  case UnaryOp::Id: return {{#N0, Value(p.p0)}, {#N1, Value(p.p1)}};
#include "ember/ops/pointwise_ops.h"
    case UnaryOp::GeluTanh: return {{"approximate", Value("tanh")}};
    default: return {};
  }
}

Tensor unary(const char* name, UnaryOp op, const Tensor& t, const UnaryParams& p = {}) {
  if (amp::is_autocast_enabled() && (op == UnaryOp::Exp || op == UnaryOp::Log)) {
    constexpr amp::CastPolicy policy = amp::policy_of("exp");
    static_assert(policy == amp::policy_of("log"), "exp and log share the autocast path below");
    if (auto c = amp::cast_inputs(policy, t)) return unary(name, op, (*c)[0], p);
  }
  OpScope scope(name, {&t});
  jit::detail::TraceOp trace(name);
  check_input(name, op, t);
  Tensor out = autograd::needs_grad(t)
                   ? autograd::fn::unary(static_cast<uint8_t>(op), t, p.p0, p.p1, [&] { return unary_raw(op, t, p); })
                   : unary_raw(op, t, p);
  if (trace.recording()) jit::detail::record_node(row_name(op), {t}, row_attrs(op, p), {out}, false);
  return out;
}

Tensor unary_raw(UnaryOp op, const Tensor& t, const UnaryParams& p) {
  const DType odt = out_dtype(op, t.dtype());
  Tensor out = empty(t.sizes(), TensorOptions(odt));
  Tensor converted;  // only when the dtype changes, so the input's count is not touched
  const Tensor& in = (kind_of(op) == UnaryKind::Float && t.dtype() != odt) ? (converted = t.to(odt)) : t;
  kernels::cpu::unary(op, out, in, p);
  return out;
}

Tensor& unary_(const char* name, UnaryOp op, Tensor& t, const UnaryParams& p = {}) {
  OpScope scope(name, {&t});
  jit::detail::TraceOp trace(name);
  check_input(name, op, t);
  if (trace.recording()) {
    unary_impl_(name, op, t, p);
    // The recorder reads t's value before rebinding t to the node's output.
    jit::detail::record_node(row_name(op), {t}, row_attrs(op, p), {t}, true);
    return t;
  }
  return unary_impl_(name, op, t, p);
}

Tensor& unary_impl_(const char* name, UnaryOp op, Tensor& t, const UnaryParams& p) {
  const DType odt = out_dtype(op, t.dtype());
  EMBER_CHECK(odt == t.dtype(), "[", name, "] result type ", odt,
              " can't be cast to the desired output type ", t.dtype(),
              "; use the out-of-place op or convert the tensor to a floating dtype first");
  check_no_internal_overlap(t, name);
  if (autograd::needs_grad(t)) {
    autograd::fn::unary_(static_cast<uint8_t>(op), name, t, p.p0, p.p1, [&] {
      kernels::cpu::unary(op, t, t, p);
      t.bump_version();
    });
    return t;
  }
  autograd::check_inplace_cheap(t, name);
  kernels::cpu::unary(op, t, t, p);
  t.bump_version();
  return t;
}

// A parameter of a P1/P2 row as the double the kernel reads. An absent optional is -1,
// PyTorch's convention for logit's eps ("no clamp").
double unary_param(const Scalar& s) { return s.to_double(); }
[[maybe_unused]] double unary_param(double v) { return v; }
double unary_param(std::optional<double> v) { return v.value_or(-1.0); }

// The bounds of clamp decide its dtype like a binary op's second operand does.
DType clamp_dtype(const Tensor& t, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  ResultTypeState s;
  s.update(t);
  if (lo) s.update(*lo);
  if (hi) s.update(*hi);
  return s.result();
}

}  // namespace

// The public functions of the table's rows (Note [Element-wise op table]); each api
// column value names the definitions it gets.
#define EMBER_UNARY_API_Custom(Id, name, params, args, pvals)
#define EMBER_UNARY_API_Free(Id, name, params, args, pvals) \
  Tensor name(const Tensor& t EMBER_UNPAREN params) { return unary(#name, UnaryOp::Id, t, pvals); }
#define EMBER_UNARY_API_Method(Id, name, params, args, pvals) \
  EMBER_UNARY_API_Free(Id, name, params, args, pvals)         \
  Tensor Tensor::name(EMBER_DROP_COMMA params) const { return ember::name(*this EMBER_UNPAREN args); }
#define EMBER_UNARY_API_Full(Id, name, params, args, pvals) \
  EMBER_UNARY_API_Method(Id, name, params, args, pvals)     \
  Tensor& Tensor::name##_(EMBER_DROP_COMMA params) const { return unary_(#name "_", UnaryOp::Id, self_mut(), pvals); }
#define EMBER_UNPAREN(...) __VA_ARGS__
#define EMBER_DROP_COMMA(first, ...) __VA_ARGS__

#define EMBER_UNARY(Id, name, kind, api, ...) EMBER_UNARY_API_##api(Id, name, (), (), UnaryParams{})
#define EMBER_UNARY_P1(Id, name, kind, api, backward, saves, T0, p0, d0) \
  EMBER_UNARY_API_##api(Id, name, (, T0 p0), (, p0), (UnaryParams{unary_param(p0), 0}))
#define EMBER_UNARY_P2(Id, name, kind, api, backward, saves, T0, p0, d0, T1, p1, d1) \
  EMBER_UNARY_API_##api(Id, name, (, T0 p0, T1 p1), (, p0, p1), (UnaryParams{unary_param(p0), unary_param(p1)}))
#include "ember/ops/pointwise_ops.h"

Tensor gelu(const Tensor& t, std::string_view approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh",
              "[gelu] approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
  EMBER_CHECK(t.defined() && t.is_floating_point(), "[gelu] expected a floating-point tensor, got ",
              t.defined() ? std::string(dtype_name(t.dtype())) : std::string("an undefined tensor"));
  return unary("gelu", approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::GeluErf, t);
}
Tensor Tensor::gelu(std::string_view approximate) const { return ember::gelu(*this, approximate); }

Tensor clamp(const Tensor& t, std::optional<Scalar> min, std::optional<Scalar> max) {
  jit::detail::TraceOp trace("clamp");
  Tensor out = [&]() -> Tensor {
  OpScope scope("clamp", {&t});
  EMBER_CHECK(t.defined(), "[clamp] called on an undefined tensor");
  EMBER_CHECK(min || max, "[clamp] at least one of 'min' or 'max' must not be None");
  const DType dt = clamp_dtype(t, min, max);
  if (autograd::needs_grad(t)) {
    Tensor mask;
    {
      NoGradGuard no_grad;
      // The gradient passes where min <= x <= max (the bounds included, as PyTorch).
      mask = ones(t.sizes(), TensorOptions(kBool));
      if (min) mask = mask.logical_and(t >= *min);
      if (max) mask = mask.logical_and(t <= *max);
    }
    return autograd::fn::masked_grad("ClampBackward1", t, mask, [&] { return clamp(t, min, max); });
  }
  Tensor in = t.to(dt);
  Tensor out = empty(t.sizes(), TensorOptions(dt));
  kernels::cpu::clamp(out, in, min ? &*min : nullptr, max ? &*max : nullptr);
  return out;
}();
  if (trace.recording()) trace.record({t}, {{"min", min ? detail::value_from_scalar(*min) : Value()}, {"max", max ? detail::value_from_scalar(*max) : Value()}}, out);
  return out;
}
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return ember::clamp(*this, min, max);
}
Tensor Tensor::clamp_min(const Scalar& min) const { return ember::clamp(*this, min, std::nullopt); }
Tensor Tensor::clamp_max(const Scalar& max) const { return ember::clamp(*this, std::nullopt, max); }

Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) const {
  OpScope scope("clamp_", {this});
  EMBER_CHECK(defined(), "[clamp_] called on an undefined tensor");
  EMBER_CHECK(min || max, "[clamp_] at least one of 'min' or 'max' must not be None");
  const DType dt = clamp_dtype(self_mut(), min, max);
  EMBER_CHECK(can_cast(dt, dtype()), "[clamp_] result type ", dt,
              " can't be cast to the desired output type ", dtype());
  // Recording a graph: the out-of-place clamp copied back (CopyBackwards routes the
  // gradient through clamp's).
  if (autograd::needs_grad(self_mut())) return copy_(ember::clamp(self_mut(), min, max));
  check_no_internal_overlap(self_mut(), "clamp_");
  kernels::cpu::clamp(self_mut(), self_mut(), min ? &*min : nullptr, max ? &*max : nullptr);
  bump_version();
  return self_mut();
}
Tensor& Tensor::clamp_min_(const Scalar& min) const { return clamp_(min, std::nullopt); }
Tensor& Tensor::clamp_max_(const Scalar& max) const { return clamp_(std::nullopt, max); }

Tensor clamp(const Tensor& t, const Tensor& min, const Tensor& max) {
  OpScope scope("clamp", {&t, &min, &max});
  EMBER_CHECK(t.defined(), "[clamp] called on an undefined tensor");
  EMBER_CHECK(min.defined() || max.defined(), "[clamp] at least one of 'min' or 'max' must be defined");
  if (autograd::needs_grad(t, min, max)) {
    // Composed from where(): x gets the gradient inside the bounds, each bound where it
    // is the result (max wins when min > max, as in the forward).
    Tensor r = t;
    if (min.defined()) r = ember::where(r < min, min, r);
    if (max.defined()) r = ember::where(r > max, max, r);
    return r;
  }
  ResultTypeState s;
  s.update(t);
  DimVector shape(t.sizes());
  if (min.defined()) {
    s.update(min);
    shape = broadcast_shapes(shape, min.sizes());
  }
  if (max.defined()) {
    s.update(max);
    shape = broadcast_shapes(shape, max.sizes());
  }
  const DType dt = s.result();
  EMBER_CHECK(dt != kBool, "[clamp] is not implemented for dtype bool");
  Tensor out = empty(shape, TensorOptions(dt));
  kernels::cpu::clamp_tensor(out, t.to(dt), min.defined() ? min.to(dt) : Tensor(),
                             max.defined() ? max.to(dt) : Tensor());
  return out;
}
Tensor Tensor::clamp(const Tensor& min, const Tensor& max) const { return ember::clamp(*this, min, max); }

namespace {
void nan_to_num_defaults(DType dt, std::optional<double>& posinf, std::optional<double>& neginf) {
  double hi = 0, lo = 0;
  switch (dt) {
    case kFloat16: hi = 65504.0; break;
    case kBFloat16: hi = 3.3895313892515355e38; break;
    case kFloat32: hi = std::numeric_limits<float>::max(); break;
    default: hi = std::numeric_limits<double>::max(); break;
  }
  lo = -hi;
  if (!posinf) posinf = hi;
  if (!neginf) neginf = lo;
}
}  // namespace

Tensor nan_to_num(const Tensor& t, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  OpScope scope("nan_to_num", {&t});
  EMBER_CHECK(t.defined(), "[nan_to_num] called on an undefined tensor");
  if (autograd::needs_grad(t)) {
    Tensor finite;
    {
      NoGradGuard no_grad;
      finite = ember::isfinite(t);
    }
    return autograd::fn::masked_grad("NanToNumBackward0", t, finite, [&] { return nan_to_num(t, nan, posinf, neginf); });
  }
  nan_to_num_defaults(t.dtype(), posinf, neginf);
  Tensor out = empty(t.sizes(), TensorOptions(t.dtype()));
  kernels::cpu::nan_to_num(out, t, nan.value_or(0.0), *posinf, *neginf);
  return out;
}
Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) const {
  return ember::nan_to_num(*this, nan, posinf, neginf);
}
Tensor& Tensor::nan_to_num_(std::optional<double> nan, std::optional<double> posinf,
                            std::optional<double> neginf) const {
  OpScope scope("nan_to_num_", {this});
  EMBER_CHECK(defined(), "[nan_to_num_] called on an undefined tensor");
  if (autograd::needs_grad(self_mut())) return copy_(ember::nan_to_num(self_mut(), nan, posinf, neginf));
  check_no_internal_overlap(self_mut(), "nan_to_num_");
  nan_to_num_defaults(dtype(), posinf, neginf);
  kernels::cpu::nan_to_num(self_mut(), self_mut(), nan.value_or(0.0), *posinf, *neginf);
  bump_version();
  return self_mut();
}

}  // namespace ember

// ---- graph nodes (ops/pointwise_nodes.h) ----
namespace ember::detail {

namespace {
bool unary_from_name(std::string_view op, UnaryOp& out) {
#define EMBER_UNARY_FIND_ROW(Id, name)      \
  if (op == #name) {                        \
    out = UnaryOp::Id;                      \
    return true;                            \
  }
#define EMBER_UNARY(Id, name, ...) EMBER_UNARY_FIND_ROW(Id, name)
#define EMBER_UNARY_P1(Id, name, ...) EMBER_UNARY_FIND_ROW(Id, name)
#define EMBER_UNARY_P2(Id, name, ...) EMBER_UNARY_FIND_ROW(Id, name)
#include "ember/ops/pointwise_ops.h"
#undef EMBER_UNARY_FIND_ROW
  return false;
}

double param_attr(const Value::Dict& attrs, const char* op, const char* name) {
  const Value* v = attrs.find(name);
  EMBER_CHECK(v != nullptr && (v->is_double() || v->is_int()), "[jit] node '", op, "' needs the number attribute '",
              name, "'");
  return v->to_double();
}
// A node's row parameters from its attributes (the inverse of row_attrs); gelu's
// "approximate" picks its row.
UnaryParams node_params(UnaryOp& id, const Value::Dict& attrs) {
  UnaryParams p;
  switch (id) {
#define EMBER_UNARY_P1(Id, name, kind, api, backward, saves, T0, N0, d0) \
  case UnaryOp::Id: p.p0 = param_attr(attrs, #name, #N0); break;
#define EMBER_UNARY_P2(Id, name, kind, api, backward, saves, T0, N0, d0, T1, N1, d1) \
  case UnaryOp::Id:                                                                  \
    p.p0 = param_attr(attrs, #name, #N0);                                            \
    p.p1 = param_attr(attrs, #name, #N1);                                            \
    break;
#include "ember/ops/pointwise_ops.h"
    default: break;
  }
  if (id == UnaryOp::GeluErf) {
    const Value* a = attrs.find("approximate");
    if (a != nullptr && a->is_string() && a->to_string() == "tanh") id = UnaryOp::GeluTanh;
  }
  return p;
}
}  // namespace

bool is_unary_node(std::string_view op) {
  UnaryOp id;
  return unary_from_name(op, id);
}

Tensor run_unary_node(std::string_view op, const Tensor& t, const Value::Dict& attrs) {
  UnaryOp id{};
  EMBER_CHECK(unary_from_name(op, id), "[jit] '", op, "' is not an element-wise unary op");
  const UnaryParams p = node_params(id, attrs);
  return unary(row_name(id), id, t, p);
}

bool run_unary_node_out(std::string_view op, const Tensor& out, const Tensor& t, const Value::Dict& attrs) {
  UnaryOp id{};
  if (!unary_from_name(op, id) || t.dtype() == kBool || out.dtype() != t.dtype() || !(out.sizes() == t.sizes()))
    return false;
  if (kind_of(id) == UnaryKind::Bool || out_dtype(id, t.dtype()) != t.dtype()) return false;
  if (kind_of(id) == UnaryKind::FloatOnly && !t.is_floating_point()) return false;
  const UnaryParams p = node_params(id, attrs);
  kernels::cpu::unary(id, out, t, p);
  return true;
}

std::vector<std::string> pointwise_node_names() {
  std::vector<std::string> names;
#define EMBER_UNARY(Id, name, ...) names.push_back(#name);
#define EMBER_UNARY_P1(Id, name, ...) names.push_back(#name);
#define EMBER_UNARY_P2(Id, name, ...) names.push_back(#name);
#define EMBER_BINARY(Id, name, ...) names.push_back(#name);
#include "ember/ops/pointwise_ops.h"
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Scalar scalar_from_value(const Value& v) {
  if (v.is_bool()) return Scalar(v.to_bool());
  if (v.is_int()) return Scalar(v.to_int());
  EMBER_CHECK(v.is_double(), "[jit] expected a number attribute, got ", v.kind_name());
  return Scalar(v.to_double());
}

Value value_from_scalar(const Scalar& s) {
  if (s.is_boolean()) return Value(s.to_bool());
  if (s.is_integral()) return Value(s.to_long());
  return Value(s.to_double());
}

}  // namespace ember::detail
