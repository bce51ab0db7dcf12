// copy_, fill_ and the ops built on them (contiguous, clone, to).

#include "ember/autograd/functions.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/kernels/cpu/kernels.h"
#include "ember/ops/creation.h"
#include "ember/ops/overlap.h"
#include "ember/jit/trace_hook.h"

namespace ember {


Tensor& Tensor::copy_(const Tensor& src) const {
  EMBER_CHECK(defined() && src.defined(), "[copy_] called with an undefined tensor");
  EMBER_CHECK(src.dim() <= dim(), "[copy_] source of sizes ", src.sizes(),
              " cannot be broadcast to destination sizes ", sizes());
  for (int64_t i = 0; i < src.dim(); ++i) {
    const int64_t s = src.sizes()[i], d = sizes()[dim() - src.dim() + i];
    EMBER_CHECK(s == d || s == 1, "[copy_] source of sizes ", src.sizes(),
                " cannot be broadcast to destination sizes ", sizes(), " (dimension ", i,
                " of the source has size ", s, ", destination has ", d, ")");
  }
  check_no_internal_overlap(self_mut(), "copy_");
  EMBER_CHECK(device() == src.device(), "[copy_] expected both tensors on the same device, got ",
              device(), " and ", src.device());
  if (autograd::needs_grad(self_mut(), src)) {
    autograd::fn::copy_(self_mut(), src, [&] { copy_(src); });
    return self_mut();
  }
  autograd::check_inplace_cheap(self_mut(), "copy_");
  if (!(dtype() == src.dtype() && is_same_view(self_mut(), src)) && numel() > 0) {
    if (may_overlap(self_mut(), src)) {
      kernels::cpu::copy(self_mut(), src.clone());
    } else {
      kernels::cpu::copy(self_mut(), src);
    }
  }
  bump_version();
  return self_mut();
}

Tensor& Tensor::fill_(const Scalar& value) const {
  EMBER_CHECK(defined(), "[fill_] called on an undefined tensor");
  check_no_internal_overlap(self_mut(), "fill_");
  if (autograd::needs_grad(self_mut())) {
    autograd::fn::fill_(self_mut(), [&] { fill_(value); });
    return self_mut();
  }
  autograd::check_inplace_cheap(self_mut(), "fill_");
  kernels::cpu::fill(self_mut(), value);
  bump_version();
  return self_mut();
}

Tensor& Tensor::zero_() const { return fill_(0); }

Tensor Tensor::contiguous() const {
  jit::detail::TraceOp trace("contiguous");
  Tensor out = [&]() -> Tensor {
  EMBER_CHECK(defined(), "[contiguous] called on an undefined tensor");
  if (is_contiguous()) return *this;
  return clone();
}();
  if (trace.recording()) trace.record({*this}, {}, out);
  return out;
}

Tensor Tensor::clone() const {
  jit::detail::TraceOp trace("clone");
  Tensor out = [&]() -> Tensor {
  EMBER_CHECK(defined(), "[clone] called on an undefined tensor");
  if (autograd::needs_grad(*this)) return autograd::fn::clone(*this, [&] { return clone(); });
  Tensor out = empty(sizes(), options());
  kernels::cpu::copy(out, *this);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {}, out);
  return out;
}

Tensor Tensor::to(DType dtype, bool copy) const {
  jit::detail::TraceOp trace("to");
  Tensor out = [&]() -> Tensor {
  EMBER_CHECK(defined(), "[to] called on an undefined tensor");
  if (dtype == this->dtype() && !copy) return *this;
  if (autograd::needs_grad(*this)) return autograd::fn::to_dtype(*this, [&] { return to(dtype, copy); });
  Tensor out = empty(sizes(), options().dtype(dtype));
  kernels::cpu::copy(out, *this);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {{"dtype", jit::detail::dtype_value(dtype)}, {"copy", Value(copy)}}, out);
  return out;
}

Tensor Tensor::to(Device device, bool copy) const {
  EMBER_CHECK(defined(), "[to] called on an undefined tensor");
  EMBER_CHECK(device.is_cpu(), "[to] device ", device,
              " is not available: this build of ember has only the cpu backend");
  return copy ? clone() : *this;
}

Tensor Tensor::to(const TensorOptions& options, bool copy) const {
  EMBER_CHECK(!options.requires_grad(), "[to] options with requires_grad=true cannot be passed to to(); "
              "convert first, then call requires_grad_() on the result");
  EMBER_CHECK(options.layout() == kStrided, "[to] only strided tensors exist in ember; drop the layout from the options");
  Tensor out = to(options.device(), false);
  return out.to(options.dtype_or(dtype()), copy && out.is_same(*this));
}

Tensor Tensor::to(Device device, DType dtype, bool /*non_blocking*/, bool copy) const {
  Tensor out = to(device, false);
  return out.to(dtype, copy && out.is_same(*this));
}

Tensor Tensor::to(const Tensor& other, bool /*non_blocking*/, bool copy) const {
  EMBER_CHECK(other.defined(), "[to] the tensor whose dtype and device to take is undefined");
  Tensor out = to(other.device(), false);
  return out.to(other.dtype(), copy && out.is_same(*this));
}

}  // namespace ember
