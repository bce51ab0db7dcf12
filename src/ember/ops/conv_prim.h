#pragma once
// Internal: the differentiable primitives behind convolution and pooling (not installed
// API). Note [Convolution primitives]: convolution is bilinear, and its three maps
//   Forward (x, w) -> y,   Input (dy, w) -> x-shaped,   Weight (x, dy) -> w-shaped
// are each other's adjoints, so every backward formula is one of the three again and
// gradients of any order come for free. conv_transpose is the Input map. Pooling is
// linear in its input once the windows (and for max pooling the argmax indices) are
// fixed, so each pooling op pairs a forward map with its adjoint the same way.

#include <cstdint>
#include <tuple>
#include <utility>

#include "ember/core/function_ref.h"
#include "ember/core/tensor.h"
#include "ember/kernels/cpu/conv.h"
#include "ember/kernels/cpu/pool.h"

namespace ember {

enum class ConvKind : int64_t { Forward = 0, Input = 1, Weight = 2 };

// The convolution maps on batched float32/float64/bfloat16/float16 tensors with the shapes
// of `g`; with one_d the tensors are 3-D (the height dim of g, of size 1, is dropped). bias
// (Forward and Input only, may be undefined) is added per output channel. Low-precision maps
// accumulate in float32 and round once (Note [bf16 convolution] in kernels/cpu/conv_dnnl.cpp).
Tensor conv_prim(ConvKind kind, const Tensor& a, const Tensor& b, const Tensor& bias,
                 const kernels::cpu::ConvGeometry& g, bool one_d);

// The weight and bias gradients of a Forward map (x, w) -> y at dy in one pass over dy
// (Note [Bias gradient with the weight gradient] in kernels/cpu/conv.cpp): float32/float64,
// recording no graph; the weight gradient is conv_prim(Weight, x, dy)'s, the bias gradient
// dy summed over the batch and spatial dims.
std::pair<Tensor, Tensor> conv_weight_bias_grad(const Tensor& x, const Tensor& dy, const kernels::cpu::ConvGeometry& g,
                                                bool one_d);

// The input, weight and bias gradients of a Forward map (x, w) -> y at dy, in one pass over dy
// where oneDNN takes the case (Note [One pass of the backward] in kernels/cpu/conv_dnnl.cpp):
// float32/float64, recording no graph, the same values as conv_prim(Input, dy, w),
// conv_prim(Weight, x, dy) and conv_weight_bias_grad's bias gradient.
std::tuple<Tensor, Tensor, Tensor> conv_backward_all(const Tensor& x, const Tensor& w, const Tensor& dy,
                                                     const kernels::cpu::ConvGeometry& g, bool one_d);

// max_pool2d(conv2d(input, weight, bias, stride, padding, dilation, groups), 2) in one op
// where the kernels take it (Note [Convolution, then a max-pool] in kernels/cpu/conv.cpp),
// else the two ops: the same output and gradients, the same bits.
Tensor conv2d_max_pool2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation, int64_t groups);
// The weight and (where `bias`) bias gradients of conv2d_max_pool2d's convolution from the
// pooled gradient and the pool's window offsets, recording no graph; undefined where the
// kernels do not take the case.
std::pair<Tensor, Tensor> conv2d_max_pool2d_weight_bias_grad(const Tensor& x, const Tensor& grad_pooled,
                                                             const Tensor& offsets, const kernels::cpu::ConvGeometry& g,
                                                             const kernels::cpu::PoolGeometry& pg, bool bias);

// All three gradients (the bias's where `bias`) the same way, where oneDNN takes the
// convolution; undefined elsewhere.
std::tuple<Tensor, Tensor, Tensor> conv2d_max_pool2d_backward_all(const Tensor& x, const Tensor& w,
                                                                  const Tensor& grad_pooled, const Tensor& offsets,
                                                                  const kernels::cpu::ConvGeometry& g,
                                                                  const kernels::cpu::PoolGeometry& pg, bool bias);

enum class PoolKind : int64_t { MaxBackward = 0, Avg = 1, AvgBackward = 2, Adaptive = 3, AdaptiveBackward = 4 };

// Pooling settings beyond the geometry.
struct PoolExtra {
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
};

// The linear pooling maps on float32/float64 tensors of shape (..., H, W) (forward) or
// (..., OH, OW) (backward kinds); `indices` only for MaxBackward.
Tensor pool_prim(PoolKind kind, const Tensor& x, const Tensor& indices, const kernels::cpu::PoolGeometry& g,
                 const PoolExtra& extra);

namespace autograd::fn {

using PrimForward = FunctionRef<Tensor()>;

// Record the backward nodes of the primitives above (functions_conv.cpp).
Tensor conv_prim(ConvKind kind, const Tensor& a, const Tensor& b, const Tensor& bias,
                 const kernels::cpu::ConvGeometry& g, bool one_d, PrimForward forward);
Tensor pool_prim(PoolKind kind, const Tensor& x, const Tensor& indices, const kernels::cpu::PoolGeometry& g,
                 const PoolExtra& extra, PrimForward forward);
// conv2d_max_pool2d: out and the window offsets computed; records its node on out.
void conv2d_max_pool2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                       const Tensor& offsets, const kernels::cpu::ConvGeometry& g, const kernels::cpu::PoolGeometry& pg);
// max pooling: out and indices computed; records MaxPool2DWithIndicesBackward0 on out.
void max_pool2d(const Tensor& input, const Tensor& out, const Tensor& indices, const kernels::cpu::PoolGeometry& g);

}  // namespace autograd::fn

}  // namespace ember
