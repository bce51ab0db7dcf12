// Pooling ops: checks and output shapes (PyTorch's pooling_output_shape), then the
// kernels in kernels/cpu/pool.cpp. Backward maps are primitives too (Note [Convolution
// primitives] in ops/conv_prim.h), so gradients of gradients work.

#include "ember/ops/pool.h"

#include <string>

#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/ops/conv_prim.h"
#include "ember/ops/creation.h"
#include "ember/jit/trace_hook.h"

namespace ember {

namespace {

using kernels::cpu::PoolGeometry;

// PyTorch's pooling_output_shape: with ceil_mode the last window must start inside the
// input or its left padding.
// Computed in 128 bits: kernel sizes, strides and dilations near INT64_MAX must give a
// clean "too small" error, not signed overflow.
int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  using Wide = __int128;
  const Wide num = Wide(in) + Wide(2) * pad - Wide(dil) * (k - 1) - 1 + (ceil_mode ? Wide(stride) - 1 : Wide(0));
  Wide out = num / stride;
  if (num % stride != 0 && num < 0) --out;  // floor division (stride > 0)
  out += 1;
  if (ceil_mode && (out - 1) * stride >= Wide(in) + pad) --out;
  if (out > INT64_MAX) return INT64_MAX;
  if (out < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(out);
}

int64_t pick(IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

void check_two(const char* op, IntArrayRef v, const char* name, bool allow_empty) {
  EMBER_CHECK(v.size() == 1 || v.size() == 2 || (allow_empty && v.empty()), "[", op, "] ", name,
              " must have one value or two (height, width), got ", v);
}

void check_input(const char* op, const Tensor& input) {
  EMBER_CHECK(input.defined(), "[", op, "] input is an undefined tensor");
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4, "[", op,
              "] expected a 3-D (unbatched) or 4-D (batched) input, got a ", input.dim(), "-D tensor of shape ",
              input.sizes());
  EMBER_CHECK(is_floating_point(input.dtype()), "[", op, "] expected a floating-point input, got dtype ",
              input.dtype());
  bool nonempty = true;
  for (int64_t d = input.dim() - 3; d < input.dim(); ++d) nonempty = nonempty && input.size(d) > 0;
  EMBER_CHECK(nonempty, "[", op, "] expected non-zero channel, height and width sizes (only the batch may be 0), got ",
              input.sizes());
}

PoolGeometry window_geometry(const char* op, const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                             IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  check_input(op, input);
  check_two(op, kernel, "kernel_size", false);
  check_two(op, stride, "stride", true);
  check_two(op, padding, "padding", false);
  check_two(op, dilation, "dilation", false);
  PoolGeometry g;
  g.in_h = input.size(-2), g.in_w = input.size(-1);
  g.planes = input.numel() / (g.in_h * g.in_w);
  g.kernel_h = pick(kernel, 0), g.kernel_w = pick(kernel, 1);
  g.stride_h = stride.empty() ? g.kernel_h : pick(stride, 0);
  g.stride_w = stride.empty() ? g.kernel_w : pick(stride, 1);
  g.pad_h = pick(padding, 0), g.pad_w = pick(padding, 1);
  g.dil_h = pick(dilation, 0), g.dil_w = pick(dilation, 1);
  EMBER_CHECK(g.kernel_h > 0 && g.kernel_w > 0, "[", op, "] kernel_size must be positive, got ", kernel);
  EMBER_CHECK(g.stride_h > 0 && g.stride_w > 0, "[", op, "] stride must be positive, got ", stride);
  EMBER_CHECK(g.dil_h > 0 && g.dil_w > 0, "[", op, "] dilation must be positive, got ", dilation);
  EMBER_CHECK(g.pad_h >= 0 && g.pad_w >= 0 && g.pad_h <= g.kernel_h / 2 && g.pad_w <= g.kernel_w / 2, "[", op,
              "] padding must be non-negative and at most half of the kernel size, got padding ", padding,
              " for kernel_size ", kernel);
  // Windows are walked with int64 products of extents (avg pool's divisor is kh * kw), so the
  // dilated kernel and the padded input must stay below 2^31 per dim.
  constexpr int64_t kMaxExtent = int64_t{1} << 31;
  const bool small = g.kernel_h < kMaxExtent && g.kernel_w < kMaxExtent && g.dil_h < kMaxExtent &&
                     g.dil_w < kMaxExtent && g.pad_h < kMaxExtent && g.pad_w < kMaxExtent &&
                     g.dil_h * (g.kernel_h - 1) < kMaxExtent && g.dil_w * (g.kernel_w - 1) < kMaxExtent;
  EMBER_CHECK(small, "[", op, "] kernel_size ", kernel, ", padding ", padding, " and dilation ", dilation,
              " span more than 2^31 elements per dim, which is not supported");
  g.out_h = pool_out(g.in_h, g.kernel_h, g.pad_h, g.stride_h, g.dil_h, ceil_mode);
  g.out_w = pool_out(g.in_w, g.kernel_w, g.pad_w, g.stride_w, g.dil_w, ceil_mode);
  EMBER_CHECK(g.out_h >= 1 && g.out_w >= 1, "[", op, "] given input size (", g.in_h, " x ", g.in_w,
              "), the calculated output size (", g.out_h, " x ", g.out_w,
              ") is too small; use a smaller kernel, dilation or stride, or more padding");
  return g;
}

DimVector with_plane(const Tensor& t, int64_t h, int64_t w) {
  DimVector s(t.sizes());
  s[s.size() - 2] = h;
  s[s.size() - 1] = w;
  return s;
}

bool is_reduced(DType dt) { return dt == kFloat16 || dt == kBFloat16; }

Tensor pool_raw(PoolKind kind, const Tensor& x, const Tensor& indices, const PoolGeometry& g, const PoolExtra& e) {
  const Tensor xc = x.contiguous();
  const bool backward = kind == PoolKind::MaxBackward || kind == PoolKind::AvgBackward ||
                        kind == PoolKind::AdaptiveBackward;
  Tensor out = empty(backward ? with_plane(x, g.in_h, g.in_w) : with_plane(x, g.out_h, g.out_w), x.dtype());
  switch (kind) {
    case PoolKind::MaxBackward: kernels::cpu::max_pool2d_backward(out, xc, indices.contiguous(), g); break;
    case PoolKind::Avg:
      kernels::cpu::avg_pool2d_forward(out, xc, g, e.count_include_pad, e.divisor_override);
      break;
    case PoolKind::AvgBackward:
      kernels::cpu::avg_pool2d_backward(out, xc, g, e.count_include_pad, e.divisor_override);
      break;
    case PoolKind::Adaptive: kernels::cpu::adaptive_avg_pool2d_forward(out, xc, g); break;
    case PoolKind::AdaptiveBackward: kernels::cpu::adaptive_avg_pool2d_backward(out, xc, g); break;
  }
  return out;
}

// A forward linear pooling map on float inputs, float16/bfloat16 through float32.
Tensor linear_pool(PoolKind kind, const Tensor& input, const PoolGeometry& g, const PoolExtra& e) {
  const DType dt = input.dtype();
  const Tensor x = is_reduced(dt) ? input.to(kFloat32) : input;
  const Tensor out = pool_prim(kind, x, {}, g, e);
  return is_reduced(dt) ? out.to(dt) : out;
}

std::tuple<Tensor, Tensor> max_pool_impl(const char* op, const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                                         IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, bool want_indices) {
  const PoolGeometry g = window_geometry(op, input, kernel, stride, padding, dilation, ceil_mode);
  const DType dt = input.dtype();
  const Tensor x = is_reduced(dt) ? input.to(kFloat32) : input;
  const bool grad = autograd::needs_grad(x);
  Tensor out, indices;
  {
    AutoGradMode off(false);
    const Tensor xc = x.contiguous();
    out = empty(with_plane(x, g.out_h, g.out_w), x.dtype());
    // Only the backward reads them: one byte per output where the windows allow it
    // (Note [Max-pool window offsets] in kernels/cpu/pool.cpp).
    if (grad || want_indices) {
      const bool offsets = !want_indices && kernels::cpu::max_pool2d_window_offsets(g);
      indices = empty(with_plane(x, g.out_h, g.out_w), offsets ? kUInt8 : kInt64);
    }
    kernels::cpu::max_pool2d_forward(out, indices, xc, g);
  }
  if (grad) autograd::fn::max_pool2d(x, out, indices, g);
  if (is_reduced(dt)) out = out.to(dt);
  return {out, indices};
}

}  // namespace

Tensor pool_prim(PoolKind kind, const Tensor& x, const Tensor& indices, const PoolGeometry& g,
                 const PoolExtra& extra) {
  if (autograd::needs_grad(x)) {
    return autograd::fn::pool_prim(kind, x, indices, g, extra, [&] { return pool_raw(kind, x, indices, g, extra); });
  }
  return pool_raw(kind, x, indices, g, extra);
}

Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  jit::detail::TraceOp trace("max_pool2d");
  Tensor out = [&]() -> Tensor {
  OpScope scope("max_pool2d", {&input});
  return std::get<0>(max_pool_impl("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode, false));
}();
  if (trace.recording()) trace.record({input}, {{"kernel_size", jit::detail::ints(kernel_size)}, {"stride", jit::detail::ints(stride)}, {"padding", jit::detail::ints(padding)}, {"dilation", jit::detail::ints(dilation)}, {"ceil_mode", Value(ceil_mode)}}, out);
  return out;
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  OpScope scope("max_pool2d_with_indices", {&input});
  return max_pool_impl("max_pool2d_with_indices", input, kernel_size, stride, padding, dilation, ceil_mode, true);
}

Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  jit::detail::TraceOp trace("avg_pool2d");
  Tensor out = [&]() -> Tensor {
  OpScope scope("avg_pool2d", {&input});
  const PoolGeometry g = window_geometry("avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode);
  EMBER_CHECK(!divisor_override || *divisor_override != 0, "[avg_pool2d] divisor_override must not be zero");
  return linear_pool(PoolKind::Avg, input, g, {count_include_pad, divisor_override.value_or(0)});
}();
  if (trace.recording()) trace.record({input}, {{"kernel_size", jit::detail::ints(kernel_size)}, {"stride", jit::detail::ints(stride)}, {"padding", jit::detail::ints(padding)}, {"ceil_mode", Value(ceil_mode)}, {"count_include_pad", Value(count_include_pad)}, {"divisor_override", jit::detail::opt_int(divisor_override)}}, out);
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  jit::detail::TraceOp trace("adaptive_avg_pool2d");
  Tensor out = [&]() -> Tensor {
  OpScope scope("adaptive_avg_pool2d", {&input});
  check_input("adaptive_avg_pool2d", input);
  check_two("adaptive_avg_pool2d", output_size, "output_size", false);
  PoolGeometry g;
  g.in_h = input.size(-2), g.in_w = input.size(-1);
  g.planes = input.numel() / (g.in_h * g.in_w);
  g.out_h = pick(output_size, 0), g.out_w = pick(output_size, 1);
  EMBER_CHECK(g.out_h >= 0 && g.out_w >= 0, "[adaptive_avg_pool2d] output_size must be non-negative, got ",
              output_size);
  return linear_pool(PoolKind::Adaptive, input, g, {});
}();
  if (trace.recording()) trace.record({input}, {{"output_size", jit::detail::ints(output_size)}}, out);
  return out;
}

namespace {

void check_1d(const char* op, const Tensor& input) {
  EMBER_CHECK(input.defined(), "[", op, "] input is an undefined tensor");
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, "[", op, "] expected a 2-D (unbatched) or 3-D (batched) input, ",
              "got a ", input.dim(), "-D tensor of shape ", input.sizes());
}

int64_t one_value(const char* op, IntArrayRef v, const char* name, int64_t if_empty) {
  EMBER_CHECK(v.size() == 1 || (v.empty() && if_empty >= 0), "[", op, "] ", name, " must have one value, got ", v);
  return v.empty() ? if_empty : v[0];
}

}  // namespace

Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  OpScope scope("max_pool1d", {&input});
  check_1d("max_pool1d", input);
  const int64_t k = one_value("max_pool1d", kernel_size, "kernel_size", -1);
  const int64_t s = one_value("max_pool1d", stride, "stride", k);
  const int64_t p = one_value("max_pool1d", padding, "padding", -1);
  const int64_t d = one_value("max_pool1d", dilation, "dilation", -1);
  const Tensor out = std::get<0>(
      max_pool_impl("max_pool1d", input.unsqueeze(-2), {1, k}, {1, s}, {0, p}, {1, d}, ceil_mode, false));
  return out.squeeze(-2);
}

Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad) {
  OpScope scope("avg_pool1d", {&input});
  check_1d("avg_pool1d", input);
  const int64_t k = one_value("avg_pool1d", kernel_size, "kernel_size", -1);
  const int64_t s = one_value("avg_pool1d", stride, "stride", k);
  const int64_t p = one_value("avg_pool1d", padding, "padding", -1);
  const Tensor x = input.unsqueeze(-2);
  const PoolGeometry g = window_geometry("avg_pool1d", x, {1, k}, {1, s}, {0, p}, 1, ceil_mode);
  return linear_pool(PoolKind::Avg, x, g, {count_include_pad, 0}).squeeze(-2);
}

}  // namespace ember
