#pragma once
// Internal: float32 convolution through oneDNN's direct (blocked-layout JIT) kernels, the
// fast path behind conv.h's three maps. Note [oneDNN convolution] in conv_dnnl.cpp says
// how it stays bit-identical for any thread count. Each function returns false, having
// done nothing, when oneDNN does not take the case; the caller then uses im2col + BLAS.

#include "ember/kernels/cpu/conv.h"
#include "ember/kernels/cpu/pool.h"

namespace ember::kernels::cpu {

// Contiguous NCHW buffers with the shapes of g; bias may be null.
bool dnnl_conv_forward(float* y, const float* x, const float* w, const float* bias, const ConvGeometry& g);
bool dnnl_conv_input_grad(float* dx, const float* dy, const float* w, const ConvGeometry& g);
// dbias (may be null): the bias gradient, each chunk's images summed into a partial while
// the chunk is in cache, the partials added in chunk order.
bool dnnl_conv_weight_grad(float* dw, const float* x, const float* dy, const ConvGeometry& g,
                           float* dbias = nullptr);
// Both gradients (and the bias's, when dbias is not null) in one pass over the chunks, dy
// reordered once per chunk (Note [One pass of the backward]); the same bits as the two calls.
bool dnnl_conv_backward(float* dx, float* dw, float* dbias, const float* x, const float* w, const float* dy,
                        const ConvGeometry& g);

// bfloat16 x, w, y / dy, dx (contiguous NCHW, uint16 storage) with float32 accumulation, a
// float32 bias and a float32 weight gradient (Note [bf16 convolution] in conv_dnnl.cpp).
// Taken only where dnnl_conv_lowp_eligible(dt, g): dt is kBFloat16, oneDNN has native bf16
// instructions and the low-precision GEMM runs on oneDNN (gemm_lowp.h), and the geometry
// suits oneDNN; the functions return false, having done nothing, otherwise.
bool dnnl_conv_lowp_eligible(DType dt, const ConvGeometry& g);
bool dnnl_conv_lowp_forward(DType dt, void* y, const void* x, const void* w, const float* bias,
                            const ConvGeometry& g);
bool dnnl_conv_lowp_input_grad(DType dt, void* dx, const void* dy, const void* w, const ConvGeometry& g);
bool dnnl_conv_lowp_weight_grad(DType dt, float* dw, const void* x, const void* dy, const ConvGeometry& g);

// Whether the oneDNN path is used at all (default: yes, unless the environment variable
// EMBER_CONV_IMPL is "im2col"). Tests switch it to compare the two paths.
// conv2d_max_pool2d's forward and its backward with all three gradients (Note [Convolution,
// then a max-pool] in conv.cpp) on oneDNN: the chunks, plans and sums of dnnl_conv_forward
// and dnnl_conv_backward, each chunk's full-size output (or gradient) only in a per-thread
// buffer; the same bits as those followed (preceded) by the pool. pg: the pool on one plane.
bool dnnl_conv_max_pool_forward(float* pooled, uint8_t* offsets, const float* x, const float* w, const float* bias,
                                const ConvGeometry& g, const PoolGeometry& pg);
bool dnnl_conv_max_pool_backward(float* dx, float* dw, float* dbias, const float* x, const float* w,
                                 const float* grad_pooled, const uint8_t* offsets, const ConvGeometry& g,
                                 const PoolGeometry& pg);
// Whether the float32 maps above take g at all (enabled, and a shape they handle).
bool dnnl_conv_eligible(const ConvGeometry& g);
bool dnnl_conv_enabled();
void set_dnnl_conv_enabled(bool enabled);

// Whether float32 3x3 stride-1 convolutions use oneDNN's Winograd kernels where it has them
// (default: yes, unless EMBER_CONV_IMPL is "direct" or "im2col"; Note [Winograd convolution]
// in conv_dnnl.cpp). Tests switch it to compare with the direct kernels.
bool dnnl_winograd_enabled();
void set_dnnl_winograd_enabled(bool enabled);

}  // namespace ember::kernels::cpu
