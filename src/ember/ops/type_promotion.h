#pragma once
// result_type: the dtype an op computes in, from PyTorch's three-tier rule. Tensors with
// dims decide first; 0-dim tensors, then Scalars (Python numbers), only matter when they
// are of a higher category (bool < integer < floating). So int32_tensor + int64 0-dim
// tensor stays int32, int_tensor + 2.5 gives the default float dtype, and
// float16_tensor + 2.5 stays float16.

#include <initializer_list>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"

namespace ember {

class ResultTypeState {
 public:
  void update(const Tensor& t);
  void update(const Scalar& s);
  DType result() const;

 private:
  DType dim_result_ = DType::Undefined;
  DType zero_dim_result_ = DType::Undefined;
  DType wrapped_result_ = DType::Undefined;
};

DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, const Scalar& b);
DType result_type(const Scalar& a, const Tensor& b);
DType result_type(const Scalar& a, const Scalar& b);

}  // namespace ember
