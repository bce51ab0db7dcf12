#pragma once
// Internal: batched matrix products on the CPU. float32/float64 go to OpenBLAS, integer
// dtypes to a plain loop. Callers have checked shapes and dtypes; Float16/BFloat16 are
// computed by the ops in float32 and never reach these kernels.

#include <cstdint>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"

namespace ember::kernels::cpu {

// True when BLAS can read a rows x cols matrix with these element strides as it is
// (row-major or column-major with a valid leading dimension), so no copy is needed.
bool blas_compatible(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride);

// True when `value` is zero once converted to the arithmetic type of `dtype` (0.5 is zero
// for integer dtypes, as in PyTorch).
bool scalar_is_zero(DType dtype, const Scalar& value);

// out[i] = beta * out[i] + alpha * (a[i] @ b[i]) for every batch index i, where a is
// (batch..., m, k) and b is (batch..., k, n) with any strides (stride-0 batch dims
// included) and out is contiguous (batch..., m, n). All three have one dtype: float32,
// float64 or an integer type. When beta is zero out is only written, never read (NaN in
// it does not propagate); when alpha or k is zero the product is not computed. `op` names
// the caller in error messages.
void gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
          const Scalar& beta, const char* op);

}  // namespace ember::kernels::cpu
