#pragma once
// Internal: 2-D pooling kernels over contiguous [planes, H, W] float32/float64 tensors
// (a plane is one channel of one image). Parallel over planes; each output element and
// each plane of a gradient is computed by one thread in a fixed order, so results do not
// depend on the thread count.

#include <cstdint>

#include "ember/core/tensor.h"

namespace ember::kernels::cpu {

struct PoolGeometry {
  int64_t planes = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
};

// out = the window maxima (NaN wins, as in PyTorch); indices (may be undefined): int64, the
// flat position ih * W + iw of each maximum within its plane, or, for 2x2 windows with
// stride 2 only (max_pool2d_window_offsets), uint8, the maximum's offset in its window
// (Note [Max-pool window offsets] in pool.cpp).
void max_pool2d_forward(const Tensor& out, const Tensor& indices, const Tensor& input, const PoolGeometry& g);
// Whether g's windows can be saved as uint8 window offsets.
inline bool max_pool2d_window_offsets(const PoolGeometry& g) {
  return g.kernel_h == 2 && g.kernel_w == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_h == 0 && g.pad_w == 0 &&
         g.dil_h == 1 && g.dil_w == 1 && 2 * g.out_h <= g.in_h && 2 * g.out_w <= g.in_w;
}
// The same maps on `planes` consecutive float32 planes held by the caller, on the calling
// thread, for 2x2 windows with stride 2 (max_pool2d_window_offsets): the forward writes the
// maxima and, unless offsets is null, their window offsets; the backward overwrites dx.
// The per-plane code of max_pool2d_forward / max_pool2d_backward, so the same bits (used
// by Note [Convolution, then a max-pool] in conv.cpp).
void max_pool2d_planes(float* y, uint8_t* offsets, const float* x, const PoolGeometry& g, int64_t planes);
void max_pool2d_backward_planes(float* dx, const float* dy, const uint8_t* offsets, const PoolGeometry& g,
                                int64_t planes);
// grad_input (overwritten) = grad_out scattered to the positions in indices (either form).
void max_pool2d_backward(const Tensor& grad_input, const Tensor& grad_out, const Tensor& indices,
                         const PoolGeometry& g);
// Window means with PyTorch's divisor rules; divisor_override 0 means none.
void avg_pool2d_forward(const Tensor& out, const Tensor& input, const PoolGeometry& g, bool count_include_pad,
                        int64_t divisor_override);
void avg_pool2d_backward(const Tensor& grad_input, const Tensor& grad_out, const PoolGeometry& g,
                         bool count_include_pad, int64_t divisor_override);
// Adaptive average pooling: output cell o covers [floor(o*I/O), ceil((o+1)*I/O)).
void adaptive_avg_pool2d_forward(const Tensor& out, const Tensor& input, const PoolGeometry& g);
void adaptive_avg_pool2d_backward(const Tensor& grad_input, const Tensor& grad_out, const PoolGeometry& g);

}  // namespace ember::kernels::cpu
