#include "ember/ops/type_promotion.h"

namespace ember {

namespace {

// The higher tier wins unless the lower one is of a higher category (ATen's
// combine_categories without the complex cases).
DType combine_categories(DType higher, DType lower) {
  if (is_floating_point(higher)) return higher;
  if (higher == kBool || is_floating_point(lower)) return promote_types(higher, lower);
  if (higher != DType::Undefined) return higher;
  return lower;
}

}  // namespace

void ResultTypeState::update(const Tensor& t) {
  if (t.dim() > 0) {
    dim_result_ = promote_types(dim_result_, t.dtype());
  } else {
    zero_dim_result_ = promote_types(zero_dim_result_, t.dtype());
  }
}

void ResultTypeState::update(const Scalar& s) {
  // A float scalar stands for the default dtype, not float64.
  const DType d = s.is_floating_point() ? get_default_dtype() : s.dtype();
  wrapped_result_ = promote_types(wrapped_result_, d);
}

DType ResultTypeState::result() const {
  return combine_categories(dim_result_, combine_categories(zero_dim_result_, wrapped_result_));
}

DType result_type(const Tensor& a, const Tensor& b) {
  if (a.defined() && b.defined() && a.dtype() == b.dtype()) return a.dtype();  // every category rule agrees
  ResultTypeState s;
  s.update(a);
  s.update(b);
  return s.result();
}

DType result_type(const Tensor& a, const Scalar& b) {
  ResultTypeState s;
  s.update(a);
  s.update(b);
  return s.result();
}

DType result_type(const Scalar& a, const Tensor& b) { return result_type(b, a); }

DType result_type(const Scalar& a, const Scalar& b) {
  ResultTypeState s;
  s.update(a);
  s.update(b);
  return s.result();
}

}  // namespace ember
