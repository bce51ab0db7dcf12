#include "ember/ops/overlap.h"

#include "ember/core/check.h"

namespace ember {

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
static void byte_span(const Tensor& t, const char*& lo, const char*& hi) {
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


bool is_same_view(const Tensor& a, const Tensor& b) {
  return a.data_ptr() == b.data_ptr() && a.sizes() == b.sizes() && a.strides() == b.strides();
}

}  // namespace ember
