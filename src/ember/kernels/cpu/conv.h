#pragma once
// Internal: 2-D convolution kernels on contiguous NCHW float32/float64 tensors (1-D
// convolutions arrive as 2-D ones with a height of 1). The ops have checked shapes and
// dtypes. Note [Deterministic convolution]: every image is computed by one thread
// (im2col + a single-threaded BLAS call), and the weight gradient sums per-image products
// in fixed batch chunks (Note [Deterministic weight gradient] in conv.cpp), so results
// never depend on the thread count.

#include <cstdint>

#include "ember/core/tensor.h"
#include "ember/kernels/cpu/pool.h"

namespace ember::kernels::cpu {

// The sizes relating a convolution's input x [batch, in_channels, in_h, in_w], its
// weight [out_channels, in_channels / groups, kernel_h, kernel_w] and its output
// [batch, out_channels, out_h, out_w].
struct ConvGeometry {
  int64_t batch = 0, in_channels = 0, in_h = 0, in_w = 0;
  int64_t out_channels = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int64_t groups = 1;
};

// out = conv(input, weight) + bias (bias may be undefined).
void conv2d_forward(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                    const ConvGeometry& g);
// grad_input = the gradient of conv with respect to its input for grad_out (also the
// forward of the transposed convolution). grad_input is overwritten.
void conv2d_input_grad(const Tensor& grad_input, const Tensor& grad_out, const Tensor& weight,
                       const ConvGeometry& g);
// grad_weight = the gradient of conv with respect to its weight. Overwritten. grad_bias, if
// defined (same dtype, [out_channels]), is overwritten with the bias gradient, grad_out summed
// over the batch and spatial dims, in the same pass over grad_out (Note [Bias gradient with
// the weight gradient] in conv.cpp).
void conv2d_weight_grad(const Tensor& grad_weight, const Tensor& input, const Tensor& grad_out,
                        const ConvGeometry& g, const Tensor& grad_bias = {});
// Both: conv2d_input_grad and conv2d_weight_grad in one pass over grad_out where oneDNN
// takes the case (Note [One pass of the backward] in conv_dnnl.cpp), the same bits as the
// two calls.
void conv2d_backward(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                     const Tensor& input, const Tensor& weight, const Tensor& grad_out, const ConvGeometry& g);

// A convolution and a 2x2 / stride-2 max-pool of its output, chunk by chunk (oneDNN) or
// image by image (few-tap kernels), where conv2d_max_pool2d_takes(g); float32 (Note
// [Convolution, then a max-pool] in conv.cpp). pg: the pool's geometry, pg.planes counting
// the planes of the whole batch. The forward writes the pooled output and, unless `offsets`
// is undefined, the pool's window offsets (uint8, Note [Max-pool window offsets]). The
// weight gradient (grad_bias may be undefined) takes the pooled gradient and those offsets
// where the few-tap kernels run the convolution. Each returns false, having done nothing,
// where it does not take the case; the results are the unfused maps' bits.
bool conv2d_max_pool2d_takes(const ConvGeometry& g);
bool conv2d_max_pool2d_forward(const Tensor& out, const Tensor& offsets, const Tensor& input, const Tensor& weight,
                               const Tensor& bias, const ConvGeometry& g, const PoolGeometry& pg);
bool conv2d_max_pool2d_weight_grad(const Tensor& grad_weight, const Tensor& grad_bias, const Tensor& input,
                                   const Tensor& grad_pooled, const Tensor& offsets, const ConvGeometry& g,
                                   const PoolGeometry& pg);
// All three gradients (grad_bias may be undefined) from the pooled gradient, where oneDNN
// takes the convolution; false, having done nothing, elsewhere.
bool conv2d_max_pool2d_backward(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& input, const Tensor& weight, const Tensor& grad_pooled,
                                const Tensor& offsets, const ConvGeometry& g, const PoolGeometry& pg);

// Note [Few-tap convolutions]: when an output value reads few inputs (K = in_channels /
// groups * kernel_h * kernel_w <= kFewTaps, e.g. the first layer on a 1- or 3-channel
// image), the per-image GEMMs are skinny (K = 9 rows against 784 columns) and BLAS spends
// its time packing them. conv.cpp then multiplies each image's im2col columns with these
// direct kernels (conv_small.cpp, compiled per ISA level): register blocks, every output
// element summed in a fixed order, so results do not depend on the thread count or the
// CPU level. float32 only.
inline constexpr int64_t kFewTaps = 32;
// y[o, p] = b[o] + sum_k w[o, k] * col[k, p] for o < O, p < P (b may be null).
void conv_few_taps_forward(float* y, const float* col, const float* w, const float* b, int64_t O, int64_t K,
                           int64_t P);
// dw[o, k] (+)= sum_p dy[o, p] * col[k, p] (added to dw when accumulate).
void conv_few_taps_weight_grad(float* dw, const float* dy, const float* col, int64_t O, int64_t K, int64_t P,
                               bool accumulate);
// On by default; tests switch it off to compare with the im2col + BLAS path.
bool few_taps_enabled();
void set_few_taps_enabled(bool enabled);

}  // namespace ember::kernels::cpu
