#pragma once
// Internal: the autograd entry points of ember's ops. An op calls these only when
// autograd::needs_grad(...) is true; each runs the op's own forward (passed in, run with
// grad mode off) and records the backward node. Not installed API.

#include <cstdint>

#include "ember/core/function_ref.h"
#include "ember/core/tensor.h"

namespace ember::autograd::fn {

using Forward = FunctionRef<Tensor()>;
using ForwardInplace = FunctionRef<void()>;

// Element-wise ops, keyed by kernels::cpu::UnaryOp / BinaryOp (as integers, to keep the
// kernel enums out of this header). Scalar operands arrive as 0-d tensors.
Tensor unary(uint8_t op, const Tensor& self, Forward forward);
void unary_(uint8_t op, const char* name, const Tensor& self, ForwardInplace forward);
Tensor binary(uint8_t op, const Tensor& a, const Tensor& b, const Scalar& alpha, Forward forward);
void binary_(uint8_t op, const char* name, const Tensor& self, const Tensor& other, const Scalar& alpha,
             ForwardInplace forward);

// Reductions (functions_reduce.cpp).
Tensor sum(const Tensor& t, IntArrayRef dims, bool keepdim, Forward forward);
Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim, Forward forward);

}  // namespace ember::autograd::fn
