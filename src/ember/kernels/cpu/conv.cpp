// Convolution kernels: im2col + BLAS, one image per task (Note [Deterministic convolution]
// in conv.h).

#include "ember/kernels/cpu/conv.h"
#include "ember/kernels/cpu/conv_dnnl.h"
#include "ember/kernels/cpu/one_thread.h"
#include "ember/kernels/cpu/plane_sum.h"
#include "ember/kernels/cpu/pool.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ember/core/check.h"
#include "ember/core/parallel.h"
#include "ember/ops/creation.h"

namespace ember::kernels::cpu {

namespace {

void blas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float beta, const float* a, int64_t lda, const float* b,
          int64_t ldb, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

void blas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double beta, const double* a, int64_t lda,
          const double* b, int64_t ldb, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

// (a + b - 1) / b would overflow for strides near INT64_MAX.
int64_t ceil_div(int64_t a, int64_t b) { return a <= 0 ? 0 : (a - 1) / b + 1; }

// The output columns [lo, hi) whose input column ow * stride + offset lies inside [0, width).
void valid_range(int64_t offset, int64_t stride, int64_t width, int64_t out, int64_t& lo, int64_t& hi) {
  // Both clamped to [0, out]: with more padding than input (or an empty input) no column
  // is valid, and the zero fills around [lo, hi) must stay inside the row.
  lo = std::min(out, offset >= 0 ? 0 : ceil_div(-offset, stride));
  hi = std::min(out, ceil_div(width - offset, stride));
  if (hi < lo) hi = lo;
}

// True when the column matrix of an image is the image itself (1x1 kernel, stride 1, no
// padding).
bool col_is_input(const ConvGeometry& g) {
  return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0;
}

// col[(c, ki, kj), (oh, ow)] = x[c, oh * sh - ph + ki * dh, ow * sw - pw + kj * dw] (zero
// outside), for `channels` channels of one image; rows of col are `ld` apart.
template <typename T>
void im2col(const T* x, int64_t channels, const ConvGeometry& g, T* col, int64_t ld) {
  const int64_t H = g.in_h, W = g.in_w, OH = g.out_h, OW = g.out_w;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        T* dst = col + ((c * g.kernel_h + ki) * g.kernel_w + kj) * ld;
        const int64_t w_off = kj * g.dil_w - g.pad_w;
        int64_t lo, hi;
        valid_range(w_off, g.stride_w, W, OW, lo, hi);
        for (int64_t oh = 0; oh < OH; ++oh) {
          T* d = dst + oh * OW;
          const int64_t ih = oh * g.stride_h - g.pad_h + ki * g.dil_h;
          if (ih < 0 || ih >= H) {
            std::fill(d, d + OW, T(0));
            continue;
          }
          std::fill(d, d + lo, T(0));
          if (hi > lo) {  // only then does the row address input memory
            const T* src = x + (c * H + ih) * W + w_off;
            if (g.stride_w == 1) {
              std::memcpy(d + lo, src + lo, static_cast<size_t>(hi - lo) * sizeof(T));
            } else {
              for (int64_t ow = lo; ow < hi; ++ow) d[ow] = src[ow * g.stride_w];
            }
          }
          std::fill(d + hi, d + OW, T(0));
        }
      }
    }
  }
}

// The adjoint of im2col: x[c, ih, iw] += col[...] for every position that read it. The
// additions for one element happen in a fixed (ki, kj, oh, ow) order.
template <typename T>
void col2im(const T* col, int64_t channels, const ConvGeometry& g, T* x) {
  const int64_t H = g.in_h, W = g.in_w, OH = g.out_h, OW = g.out_w;
  const int64_t ld = OH * OW;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        const T* src_row = col + ((c * g.kernel_h + ki) * g.kernel_w + kj) * ld;
        const int64_t w_off = kj * g.dil_w - g.pad_w;
        int64_t lo, hi;
        valid_range(w_off, g.stride_w, W, OW, lo, hi);
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t ih = oh * g.stride_h - g.pad_h + ki * g.dil_h;
          if (ih < 0 || ih >= H || hi <= lo) continue;
          const T* s = src_row + oh * OW;
          T* d = x + (c * H + ih) * W + w_off;
          if (g.stride_w == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) d[ow] += s[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) d[ow * g.stride_w] += s[ow];
          }
        }
      }
    }
  }
}

std::atomic<bool>& few_taps_flag() {
  static std::atomic<bool> flag{true};
  return flag;
}

// Whether the direct kernels of Note [Few-tap convolutions] take this convolution.
bool few_taps(const ConvGeometry& g) {
  return g.groups == 1 && g.in_channels * g.kernel_h * g.kernel_w <= kFewTaps && few_taps_enabled();
}

// Images per task: at least ~256K multiply-adds, so tiny convolutions are not split over
// threads (a parallel region costs more than they do). Depends only on the sizes.
int64_t image_grain(const ConvGeometry& g) {
  constexpr int64_t kMinTaskWork = int64_t{1} << 18;
  const int64_t work = std::max<int64_t>(1, g.out_channels * (g.in_channels / g.groups) * g.kernel_h * g.kernel_w *
                                                g.out_h * g.out_w);
  return std::max<int64_t>(1, kMinTaskWork / work);
}

// A per-thread scratch buffer that only grows, so that a task does not pay for a fresh
// (page-faulting) allocation each time; kSlot tells apart buffers used at the same time.
template <typename T, int kSlot = 0>
T* scratch(size_t n) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// The few-tap forward (Note [Few-tap convolutions]; groups == 1) image by image: image n's
// output is written at out_at(n), then done(n, that pointer) runs on the same thread.
template <typename OutAt, typename Done>
void few_taps_forward_images(const float* x, const float* w, const float* b, const ConvGeometry& g, OutAt&& out_at,
                             Done&& done) {
  const int64_t K = g.in_channels * g.kernel_h * g.kernel_w, OHW = g.out_h * g.out_w, HW = g.in_h * g.in_w;
  const bool direct = col_is_input(g);
  parallel_for(0, g.batch, image_grain(g), [&](int64_t begin, int64_t end) {
    float* col = direct ? nullptr : scratch<float>(static_cast<size_t>(K * OHW));
    for (int64_t n = begin; n < end; ++n) {
      const float* xn = x + n * g.in_channels * HW;
      if (!direct) im2col(xn, g.in_channels, g, col, OHW);
      float* yn = out_at(n);
      conv_few_taps_forward(yn, direct ? xn : col, w, b, g.out_channels, K, OHW);
      done(n, yn);
    }
  });
}

template <typename T>
void forward_impl(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const ConvGeometry& g) {
  const int64_t Cg = g.in_channels / g.groups, Og = g.out_channels / g.groups;
  const int64_t Kg = Cg * g.kernel_h * g.kernel_w, OHW = g.out_h * g.out_w, HW = g.in_h * g.in_w;
  const T* x = input.data_ptr<T>();
  const T* w = weight.data_ptr<T>();
  const T* b = bias.defined() ? bias.data_ptr<T>() : nullptr;
  T* y = out.data_ptr<T>();
  const bool direct = col_is_input(g);
  if constexpr (std::is_same_v<T, float>) {
    if (few_taps(g)) {  // Note [Few-tap convolutions]
      few_taps_forward_images(
          x, w, b, g, [&](int64_t n) { return y + n * g.out_channels * OHW; }, [](int64_t, const float*) {});
      return;
    }
  }
  parallel_for(0, g.batch, image_grain(g), [&](int64_t begin, int64_t end) {
    OneOmpThread one_thread;
    T* col = direct ? nullptr : scratch<T>(static_cast<size_t>(Kg * OHW));
    for (int64_t n = begin; n < end; ++n) {
      // With a bias, the output starts as the bias and the product is added to it (beta 1):
      // one pass over the output instead of BLAS zeroing it and a bias pass adding to it.
      T* yn = y + n * g.out_channels * OHW;
      if (b) {
        for (int64_t o = 0; o < g.out_channels; ++o) std::fill(yn + o * OHW, yn + (o + 1) * OHW, b[o]);
      }
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        const T* xg = x + (n * g.in_channels + gi * Cg) * HW;
        if (!direct) im2col(xg, Cg, g, col, OHW);
        blas(false, false, Og, OHW, Kg, b ? T(1) : T(0), w + gi * Og * Kg, Kg, direct ? xg : col, OHW,
             yn + gi * Og * OHW, OHW);
      }
    }
  });
}

template <typename T>
void input_grad_impl(const Tensor& grad_input, const Tensor& grad_out, const Tensor& weight, const ConvGeometry& g) {
  const int64_t Cg = g.in_channels / g.groups, Og = g.out_channels / g.groups;
  const int64_t Kg = Cg * g.kernel_h * g.kernel_w, OHW = g.out_h * g.out_w, HW = g.in_h * g.in_w;
  const T* dy = grad_out.data_ptr<T>();
  const T* w = weight.data_ptr<T>();
  T* dx = grad_input.data_ptr<T>();
  const bool direct = col_is_input(g);
  parallel_for(0, g.batch, image_grain(g), [&](int64_t begin, int64_t end) {
    OneOmpThread one_thread;
    T* col = direct ? nullptr : scratch<T>(static_cast<size_t>(Kg * OHW));
    for (int64_t n = begin; n < end; ++n) {
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        T* dxg = dx + (n * g.in_channels + gi * Cg) * HW;
        const T* dyg = dy + (n * g.out_channels + gi * Og) * OHW;
        if (Og == 0) {
          std::fill(dxg, dxg + Cg * HW, T(0));
          continue;
        }
        // col = W_g^T dy_g: [Kg, Og] x [Og, OHW].
        blas(true, false, Kg, OHW, Og, T(0), w + gi * Og * Kg, Kg, dyg, OHW, direct ? dxg : col, OHW);
        if (!direct) {
          std::fill(dxg, dxg + Cg * HW, T(0));
          col2im(col, Cg, g, dxg);
        }
      }
    }
  });
}

// Note [Deterministic weight gradient]: the batch is cut into at most kWeightChunks chunks
// whose boundaries depend only on the batch size. A chunk sums its images' products
// dy_n x col_n^T in image order into its own partial, and the partials are added in chunk
// order afterwards, so the result is the same for any number of threads. Per-image
// products need neither a batch-sized column matrix nor a transposed copy of dy.
constexpr int64_t kWeightChunks = 16;

// Note [Bias gradient with the weight gradient]: a convolution's bias gradient is grad_out
// summed over the batch and spatial dims. Computed on its own it is one more pass over
// grad_out (the main job's first layer: 6.4 MB per step, from memory); the weight-gradient
// kernels read grad_out image by image anyway, so when asked they also sum each image's
// planes (run_sum, in double) into a partial per chunk of images while the image is in
// cache, and add the partials in chunk order: the chunks depend only on the shapes, so the
// result does not depend on the thread count. autograd takes this path when it needs both
// gradients and records no graph (conv_weight_bias_grad in ops/conv.cpp).
//
// dy_at(n) gives image n's grad_out [out_channels, out_h, out_w], valid until the calling
// thread's next call: grad_out itself, or one image of it made on the spot (Note
// [Convolution, then a max-pool]).
template <typename T, typename DyAt>
void weight_grad_impl(const Tensor& grad_weight, const Tensor& input, const ConvGeometry& g, const Tensor& grad_bias,
                      DyAt&& dy_at) {
  const int64_t Cg = g.in_channels / g.groups, Og = g.out_channels / g.groups;
  const int64_t Kg = Cg * g.kernel_h * g.kernel_w, OHW = g.out_h * g.out_w, HW = g.in_h * g.in_w;
  const int64_t K = g.in_channels * g.kernel_h * g.kernel_w;
  const int64_t wsize = g.out_channels * Kg;
  const int64_t grain = std::max(ceil_div(g.batch, kWeightChunks), image_grain(g));
  const int64_t chunks = ceil_div(g.batch, grain);
  const T* x = input.data_ptr<T>();
  T* dw = grad_weight.data_ptr<T>();
  // Partial sums of chunks 1.. (chunk 0 writes straight into dw).
  Tensor partial_t = chunks > 1 ? empty({chunks - 1, wsize}, input.dtype()) : Tensor();
  T* partial = chunks > 1 ? partial_t.data_ptr<T>() : nullptr;
  const bool direct = col_is_input(g);
  std::vector<double> bias_part(grad_bias.defined() ? static_cast<size_t>(chunks * g.out_channels) : 0, 0.0);
  parallel_for(0, g.batch, grain, [&](int64_t begin, int64_t end) {
    OneOmpThread one_thread;
    const int64_t chunk = begin / grain;
    T* acc = chunk == 0 ? dw : partial + (chunk - 1) * wsize;
    T* col = direct ? nullptr : scratch<T>(static_cast<size_t>(K * OHW));
    for (int64_t n = begin; n < end; ++n) {
      const T* dyn = dy_at(n);
      if (!bias_part.empty()) add_plane_sums(bias_part.data() + chunk * g.out_channels, dyn, g.out_channels, OHW);
      const T* xn = x + n * g.in_channels * HW;
      if (!direct) im2col(xn, g.in_channels, g, col, OHW);
      const T* cn = direct ? xn : col;
      if constexpr (std::is_same_v<T, float>) {
        if (few_taps(g)) {  // Note [Few-tap convolutions]
          conv_few_taps_weight_grad(acc, dyn, cn, g.out_channels, Kg, OHW, n != begin);
          continue;
        }
      }
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        // acc_g [Og, Kg] (+)= dy_g [Og, OHW] x col_g^T [OHW, Kg]
        blas(false, true, Og, Kg, OHW, n == begin ? T(0) : T(1), dyn + gi * Og * OHW, OHW,
             cn + gi * Kg * OHW, OHW, acc + gi * Og * Kg, Kg);
      }
    }
  });
  for (int64_t c = 1; c < chunks; ++c) {
    const T* p = partial + (c - 1) * wsize;
    for (int64_t i = 0; i < wsize; ++i) dw[i] += p[i];
  }
  if (grad_bias.defined()) sum_chunk_partials(bias_part.data(), chunks, g.out_channels, grad_bias.data_ptr<T>());
}

template <typename F>
void dispatch_conv(DType dt, const char* op, F&& f) {
  if (dt == kFloat32) {
    f(float{});
  } else if (dt == kFloat64) {
    f(double{});
  } else {
    EMBER_ERROR("[", op, "] internal: kernel called with dtype ", dt, " (expected float32 or float64)");
  }
}

}  // namespace

bool few_taps_enabled() { return few_taps_flag().load(std::memory_order_relaxed); }
void set_few_taps_enabled(bool enabled) { few_taps_flag().store(enabled, std::memory_order_relaxed); }

void conv2d_forward(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                    const ConvGeometry& g) {
  if (out.numel() == 0) return;
  dispatch_conv(out.dtype(), "conv2d", [&](auto tag) {
    using T = decltype(tag);
    if (g.in_channels == 0 || g.kernel_h * g.kernel_w == 0) {
      std::fill(out.data_ptr<T>(), out.data_ptr<T>() + out.numel(), T(0));
      if (bias.defined()) {
        const T* b = bias.data_ptr<T>();
        T* y = out.data_ptr<T>();
        const int64_t OHW = g.out_h * g.out_w;
        for (int64_t i = 0; i < out.numel(); ++i) y[i] = b[(i / OHW) % g.out_channels];
      }
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (dnnl_conv_forward(out.data_ptr<float>(), input.data_ptr<float>(), weight.data_ptr<float>(),
                            bias.defined() ? bias.data_ptr<float>() : nullptr, g)) {
        return;
      }
    }
    forward_impl<T>(out, input, weight, bias, g);
  });
}

void conv2d_input_grad(const Tensor& grad_input, const Tensor& grad_out, const Tensor& weight,
                       const ConvGeometry& g) {
  if (grad_input.numel() == 0) return;
  dispatch_conv(grad_input.dtype(), "conv2d", [&](auto tag) {
    using T = decltype(tag);
    if (g.out_h * g.out_w == 0) {
      std::fill(grad_input.data_ptr<T>(), grad_input.data_ptr<T>() + grad_input.numel(), T(0));
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (dnnl_conv_input_grad(grad_input.data_ptr<float>(), grad_out.data_ptr<float>(), weight.data_ptr<float>(),
                               g)) {
        return;
      }
    }
    input_grad_impl<T>(grad_input, grad_out, weight, g);
  });
}

void conv2d_weight_grad(const Tensor& grad_weight, const Tensor& input, const Tensor& grad_out,
                        const ConvGeometry& g, const Tensor& grad_bias) {
  dispatch_conv(grad_weight.dtype(), "conv2d", [&](auto tag) {
    using T = decltype(tag);
    if (grad_weight.numel() == 0 || g.batch * g.out_h * g.out_w == 0) {
      // Nothing to multiply; the bias gradient is a plain sum (zero for an empty grad_out).
      std::fill(grad_weight.data_ptr<T>(), grad_weight.data_ptr<T>() + grad_weight.numel(), T(0));
      if (grad_bias.defined()) {
        std::vector<double> part(static_cast<size_t>(g.out_channels), 0.0);
        const int64_t ohw = g.out_h * g.out_w;
        for (int64_t n = 0; n < g.batch; ++n) {
          add_plane_sums(part.data(), grad_out.data_ptr<T>() + n * g.out_channels * ohw, g.out_channels, ohw);
        }
        sum_chunk_partials(part.data(), 1, g.out_channels, grad_bias.data_ptr<T>());
      }
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (dnnl_conv_weight_grad(grad_weight.data_ptr<float>(), input.data_ptr<float>(), grad_out.data_ptr<float>(),
                                g, grad_bias.defined() ? grad_bias.data_ptr<float>() : nullptr)) {
        return;
      }
    }
    const T* dy = grad_out.data_ptr<T>();
    const int64_t image = g.out_channels * g.out_h * g.out_w;
    weight_grad_impl<T>(grad_weight, input, g, grad_bias, [&](int64_t n) { return dy + n * image; });
  });
}

// Note [Convolution, then a max-pool]: a convolution whose output is only max-pooled (a
// Sequential's Conv2d, then a MaxPool2d of 2x2 windows with stride 2, with or without a
// ReLU between them: Note [Pool before ReLU] in nn/modules/container.cpp) writes its whole
// output just for the pool to read it back, and in the backward the pool writes a
// gradient of that size, three quarters zeros, for the convolution's backward to read
// back: on the main job's two layers 6.4 and 3.2 MB each way per step. Where oneDNN runs
// the convolution (Note [oneDNN convolution]), each chunk of images is convolved as before,
// its output turned back to NCHW in a per-thread buffer instead of the output tensor and
// pooled from there; in the backward each chunk's pooled gradient is scattered into such a
// buffer, which the bias sums, the reorder to oneDNN's layout and both backward maps read
// (Note [One pass of the backward]). Where the few-tap kernels run it (Note [Few-tap
// convolutions]), the same goes image by image (100 KB for the first layer, in L2), and
// the weight and bias gradients read each image's scattered gradient. Each piece is the
// unfused ops' own code (the same chunks, plans, kernels, per-plane pooling of pool.cpp and
// chunk-order sums of Note [Deterministic weight gradient]), so the output and gradients
// are the same bits as conv2d then max_pool2d; only the full-size tensors are never made.
// On the few-tap path only the weight and bias gradients are fused (a first layer's input
// wants none); an input gradient there, and a backward recorded for a double backward, go
// the unfused way (autograd scatters the pooled gradient to full size). On the 2-core Zen 4
// machine the gain is mostly memory (the main job's peak 357 -> 216 MiB): the full-size
// tensors had stayed in L3 between the ops, and the step got about 1.5% faster.
bool conv2d_max_pool2d_takes(const ConvGeometry& g) {
  return (dnnl_conv_eligible(g) || few_taps(g)) && g.batch > 0 && g.out_h >= 2 && g.out_w >= 2;
}

bool conv2d_max_pool2d_forward(const Tensor& out, const Tensor& offsets, const Tensor& input, const Tensor& weight,
                               const Tensor& bias, const ConvGeometry& g, const PoolGeometry& pg) {
  if (out.dtype() != kFloat32 || !conv2d_max_pool2d_takes(g) || !max_pool2d_window_offsets(pg)) return false;
  uint8_t* off = offsets.defined() ? offsets.data_ptr<uint8_t>() : nullptr;
  if (dnnl_conv_eligible(g)) {
    if (dnnl_conv_max_pool_forward(out.data_ptr<float>(), off, input.data_ptr<float>(), weight.data_ptr<float>(),
                                   bias.defined() ? bias.data_ptr<float>() : nullptr, g, pg)) {
      return true;
    }
    // oneDNN has no plan for it after all: the unfused maps, through a full-size output.
    const Tensor full = empty({g.batch, g.out_channels, g.out_h, g.out_w}, kFloat32);
    conv2d_forward(full, input, weight, bias, g);
    max_pool2d_forward(out, offsets, full, pg);
    return true;
  }
  const int64_t O = g.out_channels, OHW = g.out_h * g.out_w, PHW = pg.out_h * pg.out_w;
  float* y = out.data_ptr<float>();
  few_taps_forward_images(
      input.data_ptr<float>(), weight.data_ptr<float>(), bias.defined() ? bias.data_ptr<float>() : nullptr, g,
      [&](int64_t) { return scratch<float, 1>(static_cast<size_t>(O * OHW)); },
      [&](int64_t n, const float* conv) {
        max_pool2d_planes(y + n * O * PHW, off ? off + n * O * PHW : nullptr, conv, pg, O);
      });
  return true;
}

bool conv2d_max_pool2d_weight_grad(const Tensor& grad_weight, const Tensor& grad_bias, const Tensor& input,
                                   const Tensor& grad_pooled, const Tensor& offsets, const ConvGeometry& g,
                                   const PoolGeometry& pg) {
  if (grad_weight.dtype() != kFloat32 || grad_weight.numel() == 0 || !conv2d_max_pool2d_takes(g) ||
      dnnl_conv_eligible(g) || !max_pool2d_window_offsets(pg)) {
    return false;
  }
  const int64_t O = g.out_channels, OHW = g.out_h * g.out_w, PHW = pg.out_h * pg.out_w;
  const float* gp = grad_pooled.data_ptr<float>();
  const uint8_t* off = offsets.data_ptr<uint8_t>();
  weight_grad_impl<float>(grad_weight, input, g, grad_bias, [&](int64_t n) -> const float* {
    float* dy = scratch<float, 1>(static_cast<size_t>(O * OHW));
    max_pool2d_backward_planes(dy, gp + n * O * PHW, off + n * O * PHW, pg, O);
    return dy;
  });
  return true;
}

bool conv2d_max_pool2d_backward(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& input, const Tensor& weight, const Tensor& grad_pooled,
                                const Tensor& offsets, const ConvGeometry& g, const PoolGeometry& pg) {
  if (grad_input.dtype() != kFloat32 || grad_input.numel() == 0 || grad_weight.numel() == 0 ||
      !conv2d_max_pool2d_takes(g) || !max_pool2d_window_offsets(pg)) {
    return false;
  }
  return dnnl_conv_max_pool_backward(grad_input.data_ptr<float>(), grad_weight.data_ptr<float>(),
                                     grad_bias.defined() ? grad_bias.data_ptr<float>() : nullptr,
                                     input.data_ptr<float>(), weight.data_ptr<float>(), grad_pooled.data_ptr<float>(),
                                     offsets.data_ptr<uint8_t>(), g, pg);
}

void conv2d_backward(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                     const Tensor& input, const Tensor& weight, const Tensor& grad_out, const ConvGeometry& g) {
  if (grad_input.dtype() == kFloat32 && grad_input.numel() > 0 && grad_weight.numel() > 0 &&
      g.batch * g.out_h * g.out_w > 0 &&
      dnnl_conv_backward(grad_input.data_ptr<float>(), grad_weight.data_ptr<float>(),
                         grad_bias.defined() ? grad_bias.data_ptr<float>() : nullptr, input.data_ptr<float>(),
                         weight.data_ptr<float>(), grad_out.data_ptr<float>(), g)) {
    return;
  }
  conv2d_input_grad(grad_input, grad_out, weight, g);
  conv2d_weight_grad(grad_weight, input, grad_out, g, grad_bias);
}

}  // namespace ember::kernels::cpu
