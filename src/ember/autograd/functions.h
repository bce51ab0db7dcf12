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
// kernel enums out of this header). Scalar operands arrive as 0-d tensors; p0, p1 are a
// parameterised unary op's parameters (kernels::cpu::UnaryParams).
Tensor unary(uint8_t op, const Tensor& self, double p0, double p1, Forward forward);
void unary_(uint8_t op, const char* name, const Tensor& self, double p0, double p1, ForwardInplace forward);
Tensor binary(uint8_t op, const Tensor& a, const Tensor& b, const Scalar& alpha, Forward forward);
void binary_(uint8_t op, const char* name, const Tensor& self, const Tensor& other, const Scalar& alpha,
             ForwardInplace forward);

// Reductions (functions_reduce.cpp).
Tensor sum(const Tensor& t, IntArrayRef dims, bool keepdim, Forward forward);
Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim, Forward forward);
// The other differentiable reductions and scans; `param` is p for Norm, the correction
// for Var/Std. Dim-wise kinds (scans, softmax, MaxDim) take dims = {dim}.
enum class Reduce : uint8_t { Amax, Amin, Max, Min, Var, Std, Norm, Logsumexp, Prod, Cumsum, Cumprod, Softmax,
                              LogSoftmax };
Tensor reduction(Reduce kind, const Tensor& t, IntArrayRef dims, bool keepdim, double param, Forward forward);
// max(dim)/min(dim): the values get the gradient at the returned indices.
void max_dim(bool is_max, const Tensor& t, int64_t dim, bool keepdim, const Tensor& values, const Tensor& indices);

// Views (functions_view.cpp): `out` is a view of `self` made with grad mode on; these
// record its backward node. Called only when autograd::needs_grad(self).
void view_reshape(const char* name, const Tensor& self, const Tensor& out);  // view, (un)squeeze, ...
void view_expand(const Tensor& self, const Tensor& out);
void view_permute(const Tensor& self, const Tensor& out, IntArrayRef dims);
void view_transpose(const char* name, const Tensor& self, const Tensor& out, int64_t dim0, int64_t dim1);
void view_slice(const Tensor& self, const Tensor& out, int64_t dim, int64_t start, int64_t end, int64_t step);
void view_select(const Tensor& self, const Tensor& out, int64_t dim, int64_t index);
void view_diagonal(const Tensor& self, const Tensor& out, int64_t offset, int64_t dim1, int64_t dim2);
// Any strided view (as_strided, unfold): the gradient is scattered through the geometry.
void view_strided(const char* name, const Tensor& self, const Tensor& out);
void view_alias(const Tensor& self, const Tensor& out);
// Multi-output views: split (dim, the outputs) and unbind.
void view_split(const Tensor& self, const std::vector<Tensor>& outs, int64_t dim);
void view_unbind(const Tensor& self, const std::vector<Tensor>& outs, int64_t dim);

// Matrix products (functions_linalg.cpp): beta * input + alpha * (a @ b) with batch
// broadcasting; `op` names the node (mm, bmm, addmm, baddbmm, linear, matmul).
Tensor matrix_product(const char* op, const Tensor& a, const Tensor& b, const Tensor& input, const Scalar& beta,
                      const Scalar& alpha, Forward forward);

// where and cat (functions_where_cat.cpp).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Forward forward);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim, Forward forward);

// An op whose gradient is the incoming one where `mask` holds and zero elsewhere
// (clamp with scalar bounds, nan_to_num); mask has self's shape.
Tensor masked_grad(const char* name, const Tensor& self, const Tensor& mask, Forward forward);

// Ops that gather whole slices by a separate index map per dim (flip, roll, repeat,
// repeat_interleave, reflect/replicate padding): out[i0, i1, ...] = in[idx0[i0], ...].
// idx[d] empty means the identity. `name` must be a string literal.
void gather_maps(const char* name, const Tensor& in, const Tensor& out, std::vector<DimVector> idx);
// tril/triu (diagonal in i0, lower in b0) and constant padding (pads in ints).
void tri(bool lower, int64_t diagonal, const Tensor& in, const Tensor& out);
void constant_pad(const Tensor& in, const Tensor& out, IntArrayRef pad);

// Copies (functions_view.cpp): clone, dtype conversion, copy_ and fill_.
Tensor clone(const Tensor& self, Forward forward);
Tensor to_dtype(const Tensor& self, Forward forward);
void copy_(const Tensor& self, const Tensor& src, ForwardInplace forward);
void fill_(const Tensor& self, ForwardInplace forward);

}  // namespace ember::autograd::fn
