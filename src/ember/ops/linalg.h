#pragma once
// Matrix products through OpenBLAS (float32/float64; float16/bfloat16 compute in float32;
// integer dtypes use a plain loop). Methods with the same names live on Tensor.

#include "ember/core/tensor.h"

namespace ember {

// PyTorch's matmul: 1-D x 1-D is a dot product, 2-D x 2-D mm, 1-D operands get a dim
// prepended/appended and removed again, batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
// beta * input + alpha * (mat1 @ mat2); input broadcasts to the result.
Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2,
               const Scalar& beta = 1, const Scalar& alpha = 1);
// input @ weight.T + bias (weight is out_features x in_features); bias may be undefined.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
Tensor dot(const Tensor& a, const Tensor& b);
Tensor outer(const Tensor& a, const Tensor& b);

}  // namespace ember
