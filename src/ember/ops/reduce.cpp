// Reductions: which dims, which output dtype, what an empty input gives; the kernels see
// a contiguous (outer, len, inner) block (kernels/cpu/reduce.h).

#include "ember/ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/amp/autocast.h"
#include "ember/autograd/functions.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/kernels/cpu/reduce.h"
#include "ember/ops/creation.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/pointwise_nodes.h"

namespace ember {

using kernels::cpu::ReduceOp;
using kernels::cpu::ReduceShape;

namespace {

struct Plan {
  Tensor input;       // contiguous, reduced dims forming one block
  ReduceShape shape;  // (outer, len, inner)
  DimVector out_keep;  // output sizes with reduced dims kept as 1
  DimVector out;       // output sizes as returned (keepdim applied)
};

// dims empty means every dim. Repeated dims are an error, as in PyTorch.
Plan make_plan(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op) {
  EMBER_CHECK(t.defined(), "[", op, "] called on an undefined tensor");
  const int64_t nd = t.dim();
  std::vector<bool> reduced(static_cast<size_t>(std::max<int64_t>(nd, 1)), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, nd, op);
    EMBER_CHECK(!reduced[w] || dims.empty(), "[", op, "] dim ", w, " appears multiple times in the list of dims ", dims);
    reduced[w] = true;
  }
  Plan p;
  for (int64_t d = 0; d < nd; ++d) {
    p.out_keep.push_back(reduced[d] ? 1 : t.size(d));
    if (!reduced[d] || keepdim) p.out.push_back(reduced[d] ? 1 : t.size(d));
  }
  // Reduced dims must form one block of a contiguous tensor; otherwise move them last.
  int64_t first = -1, last = -1;
  for (int64_t d = 0; d < nd; ++d) {
    if (reduced[d] && t.size(d) != 1) {
      if (first < 0) first = d;
      last = d;
    }
  }
  bool block = true;
  for (int64_t d = first; first >= 0 && d <= last; ++d) block = block && (reduced[d] || t.size(d) == 1);
  Tensor in = t;
  if (!block) {
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < nd; ++d) if (!reduced[d]) perm.push_back(d);
    for (int64_t d = 0; d < nd; ++d) if (reduced[d]) perm.push_back(d);
    in = t.permute(perm);
    first = nd - static_cast<int64_t>(std::count(reduced.begin(), reduced.begin() + nd, true));
    last = nd - 1;
  }
  in = in.contiguous();
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t s = in.size(d);
    if (first < 0) outer *= s;  // nothing of size > 1 reduced
    else if (d < first) outer *= s;
    else if (d <= last) len *= s;
    else inner *= s;
  }
  p.input = in;
  p.shape = {outer, len, inner};
  return p;
}

Tensor finish(const Plan& p, const Tensor& out_keep) { return out_keep.view(p.out); }

DType sum_dtype(DType in, std::optional<DType> dtype) {
  if (dtype) return *dtype;
  return is_integral(in, true) ? kInt64 : in;
}

Tensor reduce_simple(const char* name, ReduceOp op, const Tensor& t, IntArrayRef dims, bool keepdim,
                     DType out_dtype, const Tensor* converted = nullptr, double p_norm = 0) {
  Plan p = make_plan(converted ? *converted : t, dims, keepdim, name);
  Tensor out = empty(p.out_keep, TensorOptions(out_dtype));
  kernels::cpu::reduce(op, out, p.input, p.shape, p_norm);
  return finish(p, out);
}

void check_nonempty(const char* name, const Tensor& t, IntArrayRef dims) {
  if (t.numel() != 0) return;
  EMBER_CHECK(!dims.empty(), "[", name, "] expected reduction dim to be specified for input.numel() == 0; ",
              "specify the reduction dim with the 'dim' argument");
  for (int64_t d : dims) {
    EMBER_CHECK(t.size(wrap_dim(d, t.dim(), name)) != 0, "[", name,
                "] cannot reduce over a zero-size dimension (", d, ") of a tensor of sizes ", t.sizes(),
                ": the operation has no identity");
  }
}

}  // namespace

Tensor sum(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  if (amp::is_autocast_enabled() && !dtype) {
    if (auto c = amp::cast_inputs(amp::policy_of("sum"), t)) return sum((*c)[0], dims, keepdim, dtype);
  }
  jit::detail::TraceOp trace("sum");
  Tensor out = [&]() -> Tensor {
  OpScope scope("sum", {&t});
  EMBER_CHECK(t.defined(), "[sum] called on an undefined tensor");
  const DType od = sum_dtype(t.dtype(), dtype);
  if (autograd::needs_grad(t)) {
    return autograd::fn::sum(t, dims, keepdim, [&] {
      Tensor in = dtype && *dtype != t.dtype() ? t.to(*dtype) : t;
      return reduce_simple("sum", ReduceOp::Sum, t, dims, keepdim, od, &in);
    });
  }
  Tensor in = dtype && *dtype != t.dtype() ? t.to(*dtype) : t;
  return reduce_simple("sum", ReduceOp::Sum, t, dims, keepdim, od, &in);
}();
  if (trace.recording()) trace.record({t}, {{"dim", jit::detail::ints(dims)}, {"keepdim", Value(keepdim)}, {"dtype", jit::detail::opt_dtype(dtype)}}, out);
  return out;
}
Tensor Tensor::sum(std::optional<DType> dtype) const { return ember::sum(*this, {}, false, dtype); }
Tensor Tensor::sum(IntArrayRef dims, bool keepdim, std::optional<DType> dtype) const {
  return ember::sum(*this, dims, keepdim, dtype);
}

Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  if (amp::is_autocast_enabled() && !dtype) {
    if (auto c = amp::cast_inputs(amp::policy_of("mean"), t)) return mean((*c)[0], dims, keepdim, dtype);
  }
  jit::detail::TraceOp trace("mean");
  Tensor out = [&]() -> Tensor {
  OpScope scope("mean", {&t});
  EMBER_CHECK(t.defined(), "[mean] called on an undefined tensor");
  const DType dt = dtype.value_or(t.dtype());
  EMBER_CHECK(is_floating_point(dt), "[mean] could not infer output dtype: input dtype must be floating point, got ",
              dt, "; pass dtype=ember::kFloat32 or convert the tensor first");
  if (autograd::needs_grad(t)) {
    return autograd::fn::mean(t, dims, keepdim, [&] { return ember::mean(t, dims, keepdim, dtype); });
  }
  Tensor in = dt != t.dtype() ? t.to(dt) : t;
  Plan p = make_plan(in, dims, keepdim, "mean");
  Tensor out = empty(p.out_keep, TensorOptions(dt));
  kernels::cpu::reduce(ReduceOp::Sum, out, p.input, p.shape);
  if (p.shape.len != 1) out.div_(static_cast<double>(p.shape.len));
  return finish(p, out);
}();
  if (trace.recording()) trace.record({t}, {{"dim", jit::detail::ints(dims)}, {"keepdim", Value(keepdim)}, {"dtype", jit::detail::opt_dtype(dtype)}}, out);
  return out;
}
Tensor Tensor::mean(std::optional<DType> dtype) const { return ember::mean(*this, {}, false, dtype); }
Tensor Tensor::mean(IntArrayRef dims, bool keepdim, std::optional<DType> dtype) const {
  return ember::mean(*this, dims, keepdim, dtype);
}

Tensor Tensor::prod(std::optional<DType> dtype) const {
  if (amp::is_autocast_enabled() && !dtype) {
    if (auto c = amp::cast_inputs(amp::policy_of("prod"), *this)) return (*c)[0].prod(dtype);
  }
  OpScope scope("prod", {this});
  if (autograd::needs_grad(*this)) {
    return autograd::fn::reduction(autograd::fn::Reduce::Prod, *this, {}, false, 0, [&] { return prod(dtype); });
  }
  Tensor in = dtype && *dtype != this->dtype() ? to(*dtype) : *this;
  return reduce_simple("prod", ReduceOp::Prod, *this, {}, false, sum_dtype(this->dtype(), dtype), &in);
}
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<DType> dtype) const {
  if (amp::is_autocast_enabled() && !dtype) {
    if (auto c = amp::cast_inputs(amp::policy_of("prod"), *this)) return (*c)[0].prod(dim, keepdim, dtype);
  }
  OpScope scope("prod", {this});
  if (autograd::needs_grad(*this)) {
    return autograd::fn::reduction(autograd::fn::Reduce::Prod, *this, dim, keepdim, 0,
                                   [&] { return prod(dim, keepdim, dtype); });
  }
  Tensor in = dtype && *dtype != this->dtype() ? to(*dtype) : *this;
  return reduce_simple("prod", ReduceOp::Prod, *this, dim, keepdim, sum_dtype(this->dtype(), dtype), &in);
}

Tensor amax(const Tensor& t, IntArrayRef dims, bool keepdim) {
  jit::detail::TraceOp trace("amax");
  Tensor out = [&]() -> Tensor {
  OpScope scope("amax", {&t});
  EMBER_CHECK(t.defined(), "[amax] called on an undefined tensor");
  check_nonempty("amax", t, dims);
  if (autograd::needs_grad(t)) {
    return autograd::fn::reduction(autograd::fn::Reduce::Amax, t, dims, keepdim, 0, [&] { return amax(t, dims, keepdim); });
  }
  return reduce_simple("amax", ReduceOp::Max, t, dims, keepdim, t.dtype());
}();
  if (trace.recording()) trace.record({t}, {{"dim", jit::detail::ints(dims)}, {"keepdim", Value(keepdim)}}, out);
  return out;
}
Tensor amin(const Tensor& t, IntArrayRef dims, bool keepdim) {
  jit::detail::TraceOp trace("amin");
  Tensor out = [&]() -> Tensor {
  OpScope scope("amin", {&t});
  EMBER_CHECK(t.defined(), "[amin] called on an undefined tensor");
  check_nonempty("amin", t, dims);
  if (autograd::needs_grad(t)) {
    return autograd::fn::reduction(autograd::fn::Reduce::Amin, t, dims, keepdim, 0, [&] { return amin(t, dims, keepdim); });
  }
  return reduce_simple("amin", ReduceOp::Min, t, dims, keepdim, t.dtype());
}();
  if (trace.recording()) trace.record({t}, {{"dim", jit::detail::ints(dims)}, {"keepdim", Value(keepdim)}}, out);
  return out;
}
Tensor Tensor::amax(IntArrayRef dims, bool keepdim) const { return ember::amax(*this, dims, keepdim); }
Tensor Tensor::amin(IntArrayRef dims, bool keepdim) const { return ember::amin(*this, dims, keepdim); }
Tensor Tensor::max() const {
  OpScope scope("max", {this});
  check_nonempty("max", *this, {});
  if (autograd::needs_grad(*this)) {
    return autograd::fn::reduction(autograd::fn::Reduce::Max, *this, {}, false, 0, [&] { return ember::amax(*this); });
  }
  return ember::amax(*this);
}
Tensor Tensor::min() const {
  OpScope scope("min", {this});
  check_nonempty("min", *this, {});
  if (autograd::needs_grad(*this)) {
    return autograd::fn::reduction(autograd::fn::Reduce::Min, *this, {}, false, 0, [&] { return ember::amin(*this); });
  }
  return ember::amin(*this);
}

namespace {
std::tuple<Tensor, Tensor> arg_reduce(const char* name, bool is_max, const Tensor& t, int64_t dim,
                                      bool keepdim, bool want_values) {
  OpScope scope(name, {&t});
  EMBER_CHECK(t.defined(), "[", name, "] called on an undefined tensor");
  EMBER_CHECK(want_values || t.dtype() != kBool, "[", name,
              "] is not implemented for dtype bool; convert with to(ember::kUInt8) first");
  check_nonempty(name, t, dim);
  Plan p = make_plan(t, dim, keepdim, name);
  Tensor values = want_values ? empty(p.out_keep, TensorOptions(t.dtype())) : Tensor();
  Tensor indices = empty(p.out_keep, TensorOptions(kInt64));
  kernels::cpu::arg_reduce(is_max, values, indices, p.input, p.shape);
  return {want_values ? finish(p, values) : Tensor(), finish(p, indices)};
}
}  // namespace

std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  auto r = arg_reduce("max", true, *this, dim, keepdim, true);
  if (autograd::needs_grad(*this)) autograd::fn::max_dim(true, *this, dim, keepdim, std::get<0>(r), std::get<1>(r));
  return r;
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  auto r = arg_reduce("min", false, *this, dim, keepdim, true);
  if (autograd::needs_grad(*this)) autograd::fn::max_dim(false, *this, dim, keepdim, std::get<0>(r), std::get<1>(r));
  return r;
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  if (dim) return std::get<1>(arg_reduce("argmax", true, *this, *dim, keepdim, false));
  EMBER_CHECK(defined(), "[argmax] called on an undefined tensor");
  EMBER_CHECK(numel() > 0, "[argmax] expected reduction dim to be specified for input.numel() == 0");
  return std::get<1>(arg_reduce("argmax", true, reshape({-1}), 0, false, false));
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  if (dim) return std::get<1>(arg_reduce("argmin", false, *this, *dim, keepdim, false));
  EMBER_CHECK(defined(), "[argmin] called on an undefined tensor");
  EMBER_CHECK(numel() > 0, "[argmin] expected reduction dim to be specified for input.numel() == 0");
  return std::get<1>(arg_reduce("argmin", false, reshape({-1}), 0, false, false));
}

namespace {
std::tuple<Tensor, Tensor> var_mean_impl(const char* name, const Tensor& t, IntArrayRef dims,
                                         int64_t correction, bool keepdim, bool want_var, bool want_mean) {
  OpScope scope(name, {&t});
  EMBER_CHECK(t.defined(), "[", name, "] called on an undefined tensor");
  EMBER_CHECK(t.is_floating_point(), "[", name, "] only supports floating-point dtypes, got ", t.dtype());
  Plan p = make_plan(t, dims, keepdim, name);
  Tensor v = want_var ? empty(p.out_keep, TensorOptions(t.dtype())) : Tensor();
  Tensor m = want_mean ? empty(p.out_keep, TensorOptions(t.dtype())) : Tensor();
  kernels::cpu::var_mean(v, m, p.input, p.shape, correction);
  return {want_var ? finish(p, v) : Tensor(), want_mean ? finish(p, m) : Tensor()};
}
}  // namespace

Tensor var(const Tensor& t, IntArrayRef dims, int64_t correction, bool keepdim) {
  if (autograd::needs_grad(t)) {
    return autograd::fn::reduction(autograd::fn::Reduce::Var, t, dims, keepdim, static_cast<double>(correction),
                                   [&] { return var(t, dims, correction, keepdim); });
  }
  return std::get<0>(var_mean_impl("var", t, dims, correction, keepdim, true, false));
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& t, IntArrayRef dims, int64_t correction, bool keepdim) {
  return t.var_mean(dims, correction, keepdim);
}

std::tuple<Tensor, Tensor> std_mean(const Tensor& t, IntArrayRef dims, int64_t correction, bool keepdim) {
  return t.std_mean(dims, correction, keepdim);
}

Tensor std(const Tensor& t, IntArrayRef dims, int64_t correction, bool keepdim) {
  if (autograd::needs_grad(t)) {
    return autograd::fn::reduction(autograd::fn::Reduce::Std, t, dims, keepdim, static_cast<double>(correction),
                                   [&] { return std(t, dims, correction, keepdim); });
  }
  return std::get<0>(var_mean_impl("std", t, dims, correction, keepdim, true, false)).sqrt_();
}
Tensor Tensor::var(IntArrayRef dims, int64_t correction, bool keepdim) const {
  return ember::var(*this, dims, correction, keepdim);
}
Tensor Tensor::std(IntArrayRef dims, int64_t correction, bool keepdim) const {
  return ember::std(*this, dims, correction, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::var_mean(IntArrayRef dims, int64_t correction, bool keepdim) const {
  if (autograd::needs_grad(*this)) return {var(dims, correction, keepdim), mean(dims, keepdim)};
  return var_mean_impl("var_mean", *this, dims, correction, keepdim, true, true);
}
std::tuple<Tensor, Tensor> Tensor::std_mean(IntArrayRef dims, int64_t correction, bool keepdim) const {
  if (autograd::needs_grad(*this)) return {std(dims, correction, keepdim), mean(dims, keepdim)};
  auto [v, m] = var_mean_impl("std_mean", *this, dims, correction, keepdim, true, true);
  return {v.sqrt_(), m};
}

Tensor norm(const Tensor& t, const Scalar& p, IntArrayRef dims, bool keepdim) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("norm"), t)) return norm((*c)[0], p, dims, keepdim);
  }
  OpScope scope("norm", {&t});
  EMBER_CHECK(t.defined(), "[norm] called on an undefined tensor");
  EMBER_CHECK(t.is_floating_point(), "[norm] input dtype should be floating point, got ", t.dtype());
  const double pv = p.to_double();
  ReduceOp op;
  if (pv == 2) op = ReduceOp::NormL2Sq;
  else if (pv == 1) op = ReduceOp::NormL1;
  else if (pv == 0) op = ReduceOp::NormL0;
  else if (std::isinf(pv)) op = pv > 0 ? ReduceOp::NormInf : ReduceOp::NormNegInf;
  else op = ReduceOp::NormP;
  if (op == ReduceOp::NormInf || op == ReduceOp::NormNegInf) check_nonempty("norm", t, dims);
  if (autograd::needs_grad(t)) {
    return autograd::fn::reduction(autograd::fn::Reduce::Norm, t, dims, keepdim, pv, [&] { return norm(t, p, dims, keepdim); });
  }
  return reduce_simple("norm", op, t, dims, keepdim, t.dtype(), nullptr, pv);
}
Tensor Tensor::norm(const Scalar& p, IntArrayRef dims, bool keepdim) const {
  return ember::norm(*this, p, dims, keepdim);
}

Tensor logsumexp(const Tensor& t, IntArrayRef dims, bool keepdim) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("logsumexp"), t)) return logsumexp((*c)[0], dims, keepdim);
  }
  OpScope scope("logsumexp", {&t});
  EMBER_CHECK(t.defined(), "[logsumexp] called on an undefined tensor");
  if (autograd::needs_grad(t)) {
    return autograd::fn::reduction(autograd::fn::Reduce::Logsumexp, t, dims, keepdim, 0,
                                   [&] { return logsumexp(t, dims, keepdim); });
  }
  const DType dt = t.is_floating_point() ? t.dtype() : get_default_dtype();
  Tensor in = t.to(dt);
  Plan p = make_plan(in, dims, keepdim, "logsumexp");
  Tensor out = empty(p.out_keep, TensorOptions(dt));
  if (p.shape.len == 0) return finish(p, out.fill_(-std::numeric_limits<double>::infinity()));
  kernels::cpu::logsumexp(out, p.input, p.shape);
  return finish(p, out);
}
Tensor Tensor::logsumexp(IntArrayRef dims, bool keepdim) const { return ember::logsumexp(*this, dims, keepdim); }

namespace {
Tensor bool_reduce(const char* name, ReduceOp op, const Tensor& t, IntArrayRef dims, bool keepdim) {
  OpScope scope(name, {&t});
  EMBER_CHECK(t.defined(), "[", name, "] called on an undefined tensor");
  // As in PyTorch: uint8 inputs give uint8, everything else bool.
  return reduce_simple(name, op, t, dims, keepdim, t.dtype() == kUInt8 ? kUInt8 : kBool);
}
}  // namespace

Tensor Tensor::all() const { return bool_reduce("all", ReduceOp::All, *this, {}, false); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return bool_reduce("all", ReduceOp::All, *this, dim, keepdim); }
Tensor Tensor::any() const { return bool_reduce("any", ReduceOp::Any, *this, {}, false); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return bool_reduce("any", ReduceOp::Any, *this, dim, keepdim); }
Tensor Tensor::count_nonzero(IntArrayRef dims) const {
  OpScope scope("count_nonzero", {this});
  return reduce_simple("count_nonzero", ReduceOp::CountNonzero, *this, dims, false, kInt64);
}

namespace {
Tensor scan(const char* name, bool is_prod, const Tensor& t, int64_t dim, std::optional<DType> dtype) {
  OpScope scope(name, {&t});
  EMBER_CHECK(t.defined(), "[", name, "] called on an undefined tensor");
  const DType od = sum_dtype(t.dtype(), dtype);
  const int64_t d = wrap_dim(dim, t.dim(), name);
  if (autograd::needs_grad(t)) {
    return autograd::fn::reduction(is_prod ? autograd::fn::Reduce::Cumprod : autograd::fn::Reduce::Cumsum, t, d, true,
                                   0, [&] { return scan(name, is_prod, t, dim, dtype); });
  }
  if (t.dim() == 0) return t.to(od, true);
  // As in PyTorch, a requested dtype converts the input first (the kernel then writes the
  // input's dtype, or int64 for integer inputs).
  Plan p = make_plan(dtype && *dtype != t.dtype() ? t.to(*dtype) : t, d, true, name);
  Tensor out = empty(p.input.sizes(), TensorOptions(od));
  kernels::cpu::cumulative(is_prod, out, p.input, p.shape);
  return out;  // make_plan kept a single dim in place, so the layout is t's
}
Tensor softmax_impl(const char* name, bool log, const Tensor& t, int64_t dim, std::optional<DType> dtype) {
  jit::detail::TraceOp trace("softmax");
  Tensor out = [&]() -> Tensor {
  OpScope scope(name, {&t});
  EMBER_CHECK(t.defined(), "[", name, "] called on an undefined tensor");
  const DType dt = dtype.value_or(t.dtype());
  EMBER_CHECK(is_floating_point(dt), "[", name, "] expected a floating-point tensor, got ", dt,
              "; pass dtype=ember::kFloat32 to convert");
  const int64_t d = wrap_dim(dim, t.dim(), name);
  if (autograd::needs_grad(t)) {
    return autograd::fn::reduction(log ? autograd::fn::Reduce::LogSoftmax : autograd::fn::Reduce::Softmax, t, d, true,
                                   0, [&] { return softmax_impl(name, log, t, dim, dtype); });
  }
  Tensor in = dt != t.dtype() ? t.to(dt) : t;
  if (in.dim() == 0) in = in.reshape({1});
  Plan p = make_plan(in, d, true, name);
  Tensor out = empty(p.input.sizes(), TensorOptions(dt));
  if (out.numel()) kernels::cpu::softmax(log, out, p.input, p.shape);
  return t.dim() == 0 ? out.reshape({}) : out;
}();
  if (trace.recording()) jit::detail::record_node(name, {t}, {{"dim", Value(dim)}, {"dtype", jit::detail::opt_dtype(dtype)}}, {out}, false);
  return out;
}
}  // namespace

Tensor cumsum(const Tensor& t, int64_t dim, std::optional<DType> dtype) {
  if (amp::is_autocast_enabled() && !dtype) {
    if (auto c = amp::cast_inputs(amp::policy_of("cumsum"), t)) return cumsum((*c)[0], dim, dtype);
  }
  return scan("cumsum", false, t, dim, dtype);
}
Tensor cumprod(const Tensor& t, int64_t dim, std::optional<DType> dtype) { return scan("cumprod", true, t, dim, dtype); }
Tensor Tensor::cumsum(int64_t dim, std::optional<DType> dtype) const { return ember::cumsum(*this, dim, dtype); }
Tensor Tensor::cumprod(int64_t dim, std::optional<DType> dtype) const { return ember::cumprod(*this, dim, dtype); }
Tensor softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype) {
  if (amp::is_autocast_enabled() && !dtype) {
    if (auto c = amp::cast_inputs(amp::policy_of("softmax"), t)) return softmax((*c)[0], dim, dtype);
  }
  return softmax_impl("softmax", false, t, dim, dtype);
}
Tensor log_softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype) {
  if (amp::is_autocast_enabled() && !dtype) {
    if (auto c = amp::cast_inputs(amp::policy_of("log_softmax"), t)) return log_softmax((*c)[0], dim, dtype);
  }
  return softmax_impl("log_softmax", true, t, dim, dtype);
}
Tensor Tensor::softmax(int64_t dim, std::optional<DType> dtype) const { return ember::softmax(*this, dim, dtype); }
Tensor Tensor::log_softmax(int64_t dim, std::optional<DType> dtype) const {
  return ember::log_softmax(*this, dim, dtype);
}

}  // namespace ember
