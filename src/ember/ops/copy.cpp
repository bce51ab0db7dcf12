// copy_, fill_ and the ops built on them (contiguous, clone, to).

#include "ember/core/check.h"
#include "ember/kernels/cpu/kernels.h"
#include "ember/ops/creation.h"

namespace ember {

namespace {

// Writing through a tensor whose elements alias each other (an expanded view) would make
// the result depend on write order; PyTorch refuses it and so do we.
void check_no_internal_overlap(const Tensor& t, const char* op) {
  for (int64_t i = 0; i < t.dim(); ++i) {
    EMBER_CHECK(t.sizes()[i] <= 1 || t.strides()[i] != 0, "[", op,
                "] unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location (sizes ",
                t.sizes(), ", strides ", t.strides(), "); clone() the tensor first");
  }
}

// Byte range [lo, hi) a tensor's elements can touch.
void byte_span(const Tensor& t, const char*& lo, const char*& hi) {
  const char* base = static_cast<const char*>(t.data_ptr());
  int64_t last = 0;
  for (int64_t i = 0; i < t.dim(); ++i) last += (t.sizes()[i] - 1) * t.strides()[i];
  lo = base;
  hi = base + (last + 1) * static_cast<int64_t>(t.element_size());
}

bool may_overlap(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0 || !a.is_alias_of(b)) return false;
  const char *alo, *ahi, *blo, *bhi;
  byte_span(a, alo, ahi);
  byte_span(b, blo, bhi);
  return alo < bhi && blo < ahi;
}

}  // namespace

Tensor& Tensor::copy_(const Tensor& src) {
  EMBER_CHECK(defined() && src.defined(), "[copy_] called with an undefined tensor");
  EMBER_CHECK(src.dim() <= dim(), "[copy_] source of sizes ", src.sizes(),
              " cannot be broadcast to destination sizes ", sizes());
  for (int64_t i = 0; i < src.dim(); ++i) {
    const int64_t s = src.sizes()[i], d = sizes()[dim() - src.dim() + i];
    EMBER_CHECK(s == d || s == 1, "[copy_] source of sizes ", src.sizes(),
                " cannot be broadcast to destination sizes ", sizes(), " (dimension ", i,
                " of the source has size ", s, ", destination has ", d, ")");
  }
  check_no_internal_overlap(*this, "copy_");
  EMBER_CHECK(device() == src.device(), "[copy_] expected both tensors on the same device, got ",
              device(), " and ", src.device());
  const bool same_view = data_ptr() == src.data_ptr() && dtype() == src.dtype() &&
                         sizes() == src.sizes() && strides() == src.strides();
  if (!same_view && numel() > 0) {
    if (may_overlap(*this, src)) {
      kernels::cpu::copy(*this, src.clone());
    } else {
      kernels::cpu::copy(*this, src);
    }
  }
  bump_version();
  return *this;
}

Tensor& Tensor::fill_(const Scalar& value) {
  EMBER_CHECK(defined(), "[fill_] called on an undefined tensor");
  check_no_internal_overlap(*this, "fill_");
  kernels::cpu::fill(*this, value);
  bump_version();
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0); }

Tensor Tensor::contiguous() const {
  EMBER_CHECK(defined(), "[contiguous] called on an undefined tensor");
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  EMBER_CHECK(defined(), "[clone] called on an undefined tensor");
  Tensor out = empty(sizes(), options());
  kernels::cpu::copy(out, *this);
  return out;
}

Tensor Tensor::to(DType dtype, bool copy) const {
  EMBER_CHECK(defined(), "[to] called on an undefined tensor");
  if (dtype == this->dtype() && !copy) return *this;
  Tensor out = empty(sizes(), options().dtype(dtype));
  kernels::cpu::copy(out, *this);
  return out;
}

Tensor Tensor::to(Device device, bool copy) const {
  EMBER_CHECK(defined(), "[to] called on an undefined tensor");
  EMBER_CHECK(device.is_cpu(), "[to] device ", device,
              " is not available: this build of ember has only the cpu backend");
  return copy ? clone() : *this;
}

Tensor Tensor::to(const TensorOptions& options, bool copy) const {
  Tensor out = to(options.device(), false);
  return out.to(options.dtype_or(dtype()), copy && out.is_same(*this));
}

}  // namespace ember
