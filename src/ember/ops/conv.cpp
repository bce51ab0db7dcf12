// Convolution ops: argument checks and output shapes, then the primitives of
// Note [Convolution primitives] (ops/conv_prim.h) over the kernels in kernels/cpu/conv.cpp.

#include "ember/ops/conv.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "ember/amp/autocast.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/ops/conv_prim.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"
#include "ember/ops/pool.h"
#include "ember/jit/jit.h"
#include "ember/jit/trace_hook.h"
#include "ember/kernels/cpu/conv_dnnl.h"
#include "ember/profiler/record.h"
#include "ember/ops/pointwise_nodes.h"

namespace ember {

namespace {

using kernels::cpu::ConvGeometry;

DimVector x_shape(const ConvGeometry& g, bool one_d) {
  return one_d ? DimVector{g.batch, g.in_channels, g.in_w} : DimVector{g.batch, g.in_channels, g.in_h, g.in_w};
}
DimVector y_shape(const ConvGeometry& g, bool one_d) {
  return one_d ? DimVector{g.batch, g.out_channels, g.out_w} : DimVector{g.batch, g.out_channels, g.out_h, g.out_w};
}
DimVector w_shape(const ConvGeometry& g, bool one_d) {
  const int64_t cg = g.groups > 0 ? g.in_channels / g.groups : 0;
  return one_d ? DimVector{g.out_channels, cg, g.kernel_w} : DimVector{g.out_channels, cg, g.kernel_h, g.kernel_w};
}

// t as a contiguous 4-D tensor (1-D convolutions get a height of 1).
Tensor as_4d(const Tensor& t, const DimVector& shape3or4) {
  const Tensor c = t.contiguous();
  if (shape3or4.size() == 4) return c;
  return c.view({shape3or4[0], shape3or4[1], 1, shape3or4[2]});
}

// A bf16 map on oneDNN's native kernels (Note [bf16 convolution] in kernels/cpu/
// conv_dnnl.cpp), or undefined when that path does not take the case.
Tensor conv_raw_lowp(ConvKind kind, const Tensor& a, const Tensor& b, const Tensor& bias, const ConvGeometry& g,
                     bool one_d) {
  const DType dt = a.dtype();
  if (!kernels::cpu::dnnl_conv_lowp_eligible(dt, g)) return Tensor();
  const DimVector xs = x_shape(g, one_d), ys = y_shape(g, one_d), ws = w_shape(g, one_d);
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  switch (kind) {
    case ConvKind::Forward: {
      Tensor out = empty(ys, dt);
      const Tensor bias32 = bias.defined() ? bias.to(kFloat32).contiguous() : Tensor();
      if (kernels::cpu::dnnl_conv_lowp_forward(dt, out.data_ptr(), ac.data_ptr(), bc.data_ptr(),
                                               bias32.defined() ? bias32.data_ptr<float>() : nullptr, g)) {
        return out;
      }
      break;
    }
    case ConvKind::Input: {
      if (bias.defined()) break;  // bias added before the one rounding: the float32 path
      Tensor out = empty(xs, dt);
      if (kernels::cpu::dnnl_conv_lowp_input_grad(dt, out.data_ptr(), ac.data_ptr(), bc.data_ptr(), g)) return out;
      break;
    }
    case ConvKind::Weight: {
      Tensor out = empty(ws, kFloat32);
      if (kernels::cpu::dnnl_conv_lowp_weight_grad(dt, out.data_ptr<float>(), ac.data_ptr(), bc.data_ptr(), g)) {
        return out.to(dt);
      }
      break;
    }
  }
  return Tensor();
}

Tensor conv_raw(ConvKind kind, const Tensor& a, const Tensor& b, const Tensor& bias, const ConvGeometry& g,
                bool one_d) {
  const DType dt = a.dtype();
  if (dt == kFloat16 || dt == kBFloat16) {
    // Native bf16 where oneDNN has it; otherwise float32 arithmetic on the exact float32
    // values of the operands, rounded once.
    if (Tensor out = conv_raw_lowp(kind, a, b, bias, g, one_d); out.defined()) return out;
    const Tensor bias32 = bias.defined() ? bias.to(kFloat32) : Tensor();
    return conv_raw(kind, a.to(kFloat32), b.to(kFloat32), bias32, g, one_d).to(dt);
  }
  const DimVector xs = x_shape(g, one_d), ys = y_shape(g, one_d), ws = w_shape(g, one_d);
  Tensor out;
  switch (kind) {
    case ConvKind::Forward:
      out = empty(ys, dt);
      kernels::cpu::conv2d_forward(as_4d(out, ys), as_4d(a, xs), as_4d(b, ws),
                                   bias.defined() ? bias.contiguous() : Tensor(), g);
      break;
    case ConvKind::Input:
      out = empty(xs, dt);
      kernels::cpu::conv2d_input_grad(as_4d(out, xs), as_4d(a, ys), as_4d(b, ws), g);
      if (bias.defined() && out.numel() > 0) {
        out.add_(one_d ? bias.view({1, g.in_channels, 1}) : bias.view({1, g.in_channels, 1, 1}));
      }
      break;
    case ConvKind::Weight:
      out = empty(ws, dt);
      kernels::cpu::conv2d_weight_grad(as_4d(out, ws), as_4d(a, xs), as_4d(b, ys), g);
      break;
  }
  return out;
}

DimVector per_dim(IntArrayRef v, int64_t n, const char* op, const char* name) {
  EMBER_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == n, "[", op, "] ", name, " must have 1 or ", n,
              " values (one per spatial dim), got ", v);
  DimVector out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = v.size() == 1 ? v[0] : v[static_cast<size_t>(i)];
  return out;
}

std::string size_str(const DimVector& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " x " : "") + std::to_string(v[i]);
  return s + ")";
}

void check_inputs(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t spatial) {
  EMBER_CHECK(input.defined(), "[", op, "] input is an undefined tensor");
  EMBER_CHECK(weight.defined(), "[", op, "] weight is an undefined tensor");
  EMBER_CHECK(input.dim() == spatial + 1 || input.dim() == spatial + 2, "[", op, "] expected a ", spatial + 1,
              "-D (unbatched) or ", spatial + 2, "-D (batched) input, got a ", input.dim(), "-D tensor of shape ",
              input.sizes());
  EMBER_CHECK(weight.dim() == spatial + 2, "[", op, "] expected a ", spatial + 2, "-D weight, got a ",
              weight.dim(), "-D tensor of shape ", weight.sizes());
  EMBER_CHECK(is_floating_point(input.dtype()), "[", op, "] expected a floating-point input, got dtype ",
              input.dtype(), "; convert it with .to(ember::kFloat32)");
  EMBER_CHECK(input.dtype() == weight.dtype(), "[", op, "] input dtype (", input.dtype(),
              ") and weight dtype (", weight.dtype(), ") should be the same; convert one with .to()");
  EMBER_CHECK(!bias.defined() || bias.dtype() == input.dtype(), "[", op, "] bias dtype (",
              bias.defined() ? bias.dtype() : input.dtype(), ") should match the input dtype (", input.dtype(), ")");
}

// Checks a convolution's arguments and works out its geometry (the input may lack the batch
// dim; the geometry then has a batch of 1).
ConvGeometry conv_geometry(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias,
                           int64_t spatial, IntArrayRef stride_arg, IntArrayRef padding_arg, IntArrayRef dilation_arg,
                           IntArrayRef output_padding_arg, int64_t groups, bool transposed) {
  check_inputs(op, input, weight, bias, spatial);
  const DimVector stride = per_dim(stride_arg, spatial, op, "stride");
  const DimVector padding = per_dim(padding_arg, spatial, op, "padding");
  const DimVector dilation = per_dim(dilation_arg, spatial, op, "dilation");
  const DimVector out_pad = per_dim(output_padding_arg, spatial, op, "output_padding");
  EMBER_CHECK(groups > 0, "[", op, "] groups must be positive, got ", groups);
  for (int64_t i = 0; i < spatial; ++i) {
    const size_t d = static_cast<size_t>(i);
    EMBER_CHECK(stride[d] > 0, "[", op, "] stride must be positive, got ", stride_arg);
    EMBER_CHECK(dilation[d] > 0, "[", op, "] dilation must be positive, got ", dilation_arg);
    EMBER_CHECK(padding[d] >= 0, "[", op, "] padding must be non-negative, got ", padding_arg);
    EMBER_CHECK(out_pad[d] >= 0, "[", op, "] output_padding must be non-negative, got ", output_padding_arg);
    EMBER_CHECK(!transposed || out_pad[d] < stride[d] || out_pad[d] < dilation[d], "[", op,
                "] output_padding must be smaller than either stride or dilation, got output_padding ",
                output_padding_arg, ", stride ", stride_arg, ", dilation ", dilation_arg);
  }
  const bool batched = input.dim() == spatial + 2;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const int64_t in_ch = x.size(1);
  int64_t out_ch = 0;
  if (!transposed) {
    EMBER_CHECK(weight.size(0) % groups == 0, "[", op, "] out_channels (weight.size(0) = ", weight.size(0),
                ") must be divisible by groups = ", groups);
    EMBER_CHECK(in_ch == weight.size(1) * groups, "[", op, "] given groups=", groups, ", weight of size ",
                weight.sizes(), " expects the input ", input.sizes(), " to have ", weight.size(1) * groups,
                " channels (weight.size(1) * groups), but it has ", in_ch);
    out_ch = weight.size(0);
  } else {
    EMBER_CHECK(in_ch == weight.size(0), "[", op, "] given transposed weight of size ", weight.sizes(),
                " (in_channels, out_channels / groups, ...), expected the input ", input.sizes(), " to have ",
                weight.size(0), " channels, but it has ", in_ch);
    EMBER_CHECK(in_ch % groups == 0, "[", op, "] in_channels (", in_ch, ") must be divisible by groups = ", groups);
    out_ch = weight.size(1) * groups;
  }
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out_ch), "[", op, "] expected bias of shape [",
              out_ch, "] (one value per output channel), got ", bias.sizes());

  // The convolution's x side is the op's input for convolutions and its output for
  // transposed ones.
  DimVector in_sp(static_cast<size_t>(spatial)), out_sp(static_cast<size_t>(spatial));
  DimVector kernel(static_cast<size_t>(spatial));
  for (int64_t i = 0; i < spatial; ++i) {
    const size_t d = static_cast<size_t>(i);
    kernel[d] = weight.size(2 + i);
    in_sp[d] = x.size(2 + i);
  }
  if (!transposed) {
    DimVector padded(in_sp), eff(kernel);
    bool fits = true;
    for (size_t d = 0; d < padded.size(); ++d) {
      const bool overflow = __builtin_mul_overflow(padding[d], int64_t{2}, &padded[d]) ||
                            __builtin_add_overflow(padded[d], in_sp[d], &padded[d]) ||
                            __builtin_mul_overflow(dilation[d], kernel[d] - 1, &eff[d]) ||
                            __builtin_add_overflow(eff[d], int64_t{1}, &eff[d]);
      EMBER_CHECK(!overflow, "[", op, "] input size ", in_sp[d], " with padding ", padding[d], ", kernel size ",
                  kernel[d], " and dilation ", dilation[d], " overflows int64");
      fits = fits && padded[d] >= eff[d];
      out_sp[d] = fits ? (padded[d] - eff[d]) / stride[d] + 1 : 0;
    }
    EMBER_CHECK(fits, "[", op, "] calculated padded input size per channel: ", size_str(padded),
                ". Kernel size (dilated): ", size_str(eff),
                ". Kernel size can't be greater than actual input size; pad the input or use a smaller kernel");
  } else {
    for (size_t d = 0; d < in_sp.size(); ++d) {
      // Summed in 128 bits: every term fits in int64, so the sum cannot overflow here.
      const __int128 o = static_cast<__int128>(in_sp[d] - 1) * stride[d] - static_cast<__int128>(2) * padding[d] +
                         static_cast<__int128>(dilation[d]) * (kernel[d] - 1) + out_pad[d] + 1;
      EMBER_CHECK(o <= INT64_MAX, "[", op, "] the output size computed from input ", input.sizes(), ", kernel ",
                  size_str(kernel), ", stride, padding, dilation and output_padding overflows int64");
      out_sp[d] = o < 0 ? 0 : static_cast<int64_t>(o);
    }
    bool positive = true;
    for (int64_t s : out_sp) positive = positive && s > 0;
    EMBER_CHECK(positive, "[", op, "] the output size ", size_str(out_sp), " computed from input ", input.sizes(),
                ", kernel ", size_str(kernel), ", stride, padding and output_padding is not positive");
  }

  ConvGeometry g;
  g.batch = x.size(0);
  g.groups = groups;
  const DimVector& xs = transposed ? out_sp : in_sp;
  const DimVector& ys = transposed ? in_sp : out_sp;
  g.in_channels = transposed ? out_ch : in_ch;
  g.out_channels = transposed ? in_ch : out_ch;
  const size_t w = static_cast<size_t>(spatial - 1);
  g.in_w = xs[w], g.out_w = ys[w], g.kernel_w = kernel[w];
  g.stride_w = stride[w], g.pad_w = padding[w], g.dil_w = dilation[w];
  if (spatial == 2) {
    g.in_h = xs[0], g.out_h = ys[0], g.kernel_h = kernel[0];
    g.stride_h = stride[0], g.pad_h = padding[0], g.dil_h = dilation[0];
  } else {
    g.in_h = g.out_h = 1;
  }
  return g;
}

Tensor convolution(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t spatial,
                   IntArrayRef stride_arg, IntArrayRef padding_arg, IntArrayRef dilation_arg,
                   IntArrayRef output_padding_arg, int64_t groups, bool transposed) {
  const ConvGeometry g = conv_geometry(op, input, weight, bias, spatial, stride_arg, padding_arg, dilation_arg,
                                       output_padding_arg, groups, transposed);
  const bool batched = input.dim() == spatial + 2;
  const Tensor x = batched ? input : input.unsqueeze(0);

  // bf16/fp16 tensors go to the primitives as they are (conv_raw picks native bf16 kernels or
  // float32 arithmetic rounded once), so backward saves and produces the low-precision dtype.
  Tensor out = conv_prim(transposed ? ConvKind::Input : ConvKind::Forward, x, weight, bias, g, spatial == 1);
  if (profiler::is_enabled()) {
    // Multiply-adds: every element of the larger side meets one filter's worth of weights.
    const int64_t per_filter = weight.size(0) ? weight.numel() / weight.size(0) : 0;
    profiler::annotate({&input, &weight, &bias}, 2 * (transposed ? x.numel() : out.numel()) * per_filter);
  }
  return batched ? out : out.squeeze(0);
}

// PyTorch's padding="same"/"valid": returns the input (padded on the right by one where the
// total padding d * (k - 1) is odd) and the symmetric padding to use.
Tensor string_padding(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t spatial,
                      IntArrayRef stride, const char* padding, IntArrayRef dilation_arg, DimVector& pads) {
  check_inputs(op, input, weight, bias, spatial);
  pads = DimVector(static_cast<size_t>(spatial), 0);
  EMBER_CHECK(padding != nullptr, "[", op, "] padding is a null string");
  if (std::strcmp(padding, "valid") == 0) return input;
  EMBER_CHECK(std::strcmp(padding, "same") == 0, "[", op, "] padding must be \"same\", \"valid\" or numbers, got \"",
              padding, "\"");
  const DimVector st = per_dim(stride, spatial, op, "stride");
  for (int64_t s : st) {
    EMBER_CHECK(s == 1, "[", op, "] padding=\"same\" is not supported for strided convolutions (stride ", stride,
                "); pass the padding as numbers");
  }
  const DimVector dil = per_dim(dilation_arg, spatial, op, "dilation");
  DimVector extra;  // ember::pad order: last dim first, (left, right) pairs
  bool any_extra = false;
  for (int64_t i = spatial - 1; i >= 0; --i) {
    const size_t d = static_cast<size_t>(i);
    const int64_t total = dil[d] * (weight.size(2 + i) - 1);
    pads[d] = total / 2;
    extra.push_back(0);
    extra.push_back(total % 2);
    any_extra = any_extra || total % 2 != 0;
  }
  return any_extra ? pad(input, extra) : input;
}

}  // namespace

std::pair<Tensor, Tensor> conv_weight_bias_grad(const Tensor& x, const Tensor& dy, const ConvGeometry& g, bool one_d) {
  const DType dt = dy.dtype();
  EMBER_CHECK((dt == kFloat32 || dt == kFloat64) && x.dtype() == dt,
              "[conv2d] internal: conv_weight_bias_grad takes float32/float64, got ", x.dtype(), " and ", dt);
  const DimVector xs = x_shape(g, one_d), ys = y_shape(g, one_d), ws = w_shape(g, one_d);
  Tensor dw = empty(ws, dt), db = empty({g.out_channels}, dt);
  kernels::cpu::conv2d_weight_grad(as_4d(dw, ws), as_4d(x, xs), as_4d(dy, ys), g, db);
  return {dw, db};
}

std::tuple<Tensor, Tensor, Tensor> conv_backward_all(const Tensor& x, const Tensor& w, const Tensor& dy,
                                                     const ConvGeometry& g, bool one_d) {
  const DType dt = dy.dtype();
  EMBER_CHECK((dt == kFloat32 || dt == kFloat64) && x.dtype() == dt && w.dtype() == dt,
              "[conv2d] internal: conv_backward_all takes float32/float64, got ", x.dtype(), ", ", w.dtype(), " and ",
              dt);
  const DimVector xs = x_shape(g, one_d), ys = y_shape(g, one_d), ws = w_shape(g, one_d);
  Tensor dx = empty(xs, dt), dw = empty(ws, dt), db = empty({g.out_channels}, dt);
  kernels::cpu::conv2d_backward(as_4d(dx, xs), as_4d(dw, ws), db, as_4d(x, xs), as_4d(w, ws), as_4d(dy, ys), g);
  return {dx, dw, db};
}

std::pair<Tensor, Tensor> conv2d_max_pool2d_weight_bias_grad(const Tensor& x, const Tensor& grad_pooled,
                                                             const Tensor& offsets, const ConvGeometry& g,
                                                             const kernels::cpu::PoolGeometry& pg, bool bias) {
  Tensor dw = empty(w_shape(g, false), kFloat32), db = bias ? empty({g.out_channels}, kFloat32) : Tensor();
  if (!kernels::cpu::conv2d_max_pool2d_weight_grad(dw, db, x.contiguous(), grad_pooled.contiguous(),
                                                   offsets.contiguous(), g, pg)) {
    return {};
  }
  return {dw, db};
}

std::tuple<Tensor, Tensor, Tensor> conv2d_max_pool2d_backward_all(const Tensor& x, const Tensor& w,
                                                                  const Tensor& grad_pooled, const Tensor& offsets,
                                                                  const ConvGeometry& g,
                                                                  const kernels::cpu::PoolGeometry& pg, bool bias) {
  Tensor dx = empty(x_shape(g, false), kFloat32), dw = empty(w_shape(g, false), kFloat32);
  Tensor db = bias ? empty({g.out_channels}, kFloat32) : Tensor();
  if (!kernels::cpu::conv2d_max_pool2d_backward(dx, dw, db, x.contiguous(), w.contiguous(), grad_pooled.contiguous(),
                                                offsets.contiguous(), g, pg)) {
    return {};
  }
  return {dx, dw, db};
}

Tensor conv2d_max_pool2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const auto composed = [&] {
    return max_pool2d(conv2d(input, weight, bias, stride, padding, dilation, groups), {2, 2}, {2, 2}, {0, 0}, {1, 1},
                      false);
  };
  // Note [Convolution, then a max-pool] (kernels/cpu/conv.cpp): float32 batches whose
  // convolution runs on oneDNN or the few-tap kernels. Anything else, and anything that
  // watches each op (autocast, a trace), takes the two ops.
  const bool f32 = input.defined() && weight.defined() && input.dtype() == kFloat32 && weight.dtype() == kFloat32 &&
                   (!bias.defined() || bias.dtype() == kFloat32);
  if (!f32 || input.dim() != 4 || weight.dim() != 4 || amp::is_autocast_enabled() || jit::is_tracing()) {
    return composed();
  }
  // The argument errors are conv2d's own.
  const ConvGeometry g = conv_geometry("conv2d", input, weight, bias, 2, stride, padding, dilation, {0}, groups, false);
  if (!kernels::cpu::conv2d_max_pool2d_takes(g)) return composed();
  OpScope scope("conv2d", {&input, &weight, &bias});
  kernels::cpu::PoolGeometry pg;
  pg.planes = g.batch * g.out_channels;
  pg.in_h = g.out_h, pg.in_w = g.out_w, pg.out_h = g.out_h / 2, pg.out_w = g.out_w / 2;
  pg.kernel_h = pg.kernel_w = pg.stride_h = pg.stride_w = 2;
  const bool grad = autograd::needs_grad(input, weight, bias);
  Tensor out = empty({g.batch, g.out_channels, pg.out_h, pg.out_w}, kFloat32);
  const Tensor offsets = grad ? empty(out.sizes(), kUInt8) : Tensor();
  if (!kernels::cpu::conv2d_max_pool2d_forward(out, offsets, input.contiguous(), weight.contiguous(),
                                               bias.defined() ? bias.contiguous() : Tensor(), g, pg)) {
    EMBER_ERROR("[conv2d] internal: the fused convolution and max-pool did not take a case it said it takes");
  }
  if (grad) autograd::fn::conv2d_max_pool2d(input, weight, bias, out, offsets, g, pg);
  if (profiler::is_enabled()) {
    profiler::annotate({&input, &weight, &bias}, 2 * g.batch * g.out_channels * g.out_h * g.out_w *
                                                     (weight.size(0) ? weight.numel() / weight.size(0) : 0));
  }
  return out;
}

Tensor conv_prim(ConvKind kind, const Tensor& a, const Tensor& b, const Tensor& bias, const ConvGeometry& g,
                 bool one_d) {
  if (autograd::needs_grad(a, b, bias)) {
    return autograd::fn::conv_prim(kind, a, b, bias, g, one_d, [&] { return conv_raw(kind, a, b, bias, g, one_d); });
  }
  return conv_raw(kind, a, b, bias, g, one_d);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("conv1d"), input, weight, bias)) return conv1d((*c)[0], (*c)[1], (*c)[2], stride, padding, dilation, groups);
  }
  jit::detail::TraceOp trace("conv1d");
  Tensor out = [&]() -> Tensor {
  OpScope scope("conv1d", {&input, &weight, &bias});
  return convolution("conv1d", input, weight, bias, 1, stride, padding, dilation, 0, groups, false);
}();
  if (trace.recording()) trace.record({input, weight, bias}, {{"stride", jit::detail::ints(stride)}, {"padding", jit::detail::ints(padding)}, {"dilation", jit::detail::ints(dilation)}, {"groups", Value(groups)}}, out);
  return out;
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, const char* padding,
              IntArrayRef dilation, int64_t groups) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("conv1d"), input, weight, bias)) return conv1d((*c)[0], (*c)[1], (*c)[2], stride, padding, dilation, groups);
  }
  jit::detail::TraceOp trace("conv1d");
  Tensor out = [&]() -> Tensor {
  OpScope scope("conv1d", {&input, &weight, &bias});
  DimVector pads;
  const Tensor x = string_padding("conv1d", input, weight, bias, 1, stride, padding, dilation, pads);
  return convolution("conv1d", x, weight, bias, 1, stride, pads, dilation, 0, groups, false);
}();
  if (trace.recording()) trace.record({input, weight, bias}, {{"stride", jit::detail::ints(stride)}, {"padding", Value(padding)}, {"dilation", jit::detail::ints(dilation)}, {"groups", Value(groups)}}, out);
  return out;
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("conv2d"), input, weight, bias)) return conv2d((*c)[0], (*c)[1], (*c)[2], stride, padding, dilation, groups);
  }
  jit::detail::TraceOp trace("conv2d");
  Tensor out = [&]() -> Tensor {
  OpScope scope("conv2d", {&input, &weight, &bias});
  return convolution("conv2d", input, weight, bias, 2, stride, padding, dilation, 0, groups, false);
}();
  if (trace.recording()) trace.record({input, weight, bias}, {{"stride", jit::detail::ints(stride)}, {"padding", jit::detail::ints(padding)}, {"dilation", jit::detail::ints(dilation)}, {"groups", Value(groups)}}, out);
  return out;
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, const char* padding,
              IntArrayRef dilation, int64_t groups) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("conv2d"), input, weight, bias)) return conv2d((*c)[0], (*c)[1], (*c)[2], stride, padding, dilation, groups);
  }
  jit::detail::TraceOp trace("conv2d");
  Tensor out = [&]() -> Tensor {
  OpScope scope("conv2d", {&input, &weight, &bias});
  DimVector pads;
  const Tensor x = string_padding("conv2d", input, weight, bias, 2, stride, padding, dilation, pads);
  return convolution("conv2d", x, weight, bias, 2, stride, pads, dilation, 0, groups, false);
}();
  if (trace.recording()) trace.record({input, weight, bias}, {{"stride", jit::detail::ints(stride)}, {"padding", Value(padding)}, {"dilation", jit::detail::ints(dilation)}, {"groups", Value(groups)}}, out);
  return out;
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("conv_transpose1d"), input, weight, bias)) return conv_transpose1d((*c)[0], (*c)[1], (*c)[2], stride, padding, output_padding, groups, dilation);
  }
  OpScope scope("conv_transpose1d", {&input, &weight, &bias});
  return convolution("conv_transpose1d", input, weight, bias, 1, stride, padding, dilation, output_padding, groups,
                     true);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("conv_transpose2d"), input, weight, bias)) return conv_transpose2d((*c)[0], (*c)[1], (*c)[2], stride, padding, output_padding, groups, dilation);
  }
  jit::detail::TraceOp trace("conv_transpose2d");
  Tensor out = [&]() -> Tensor {
  OpScope scope("conv_transpose2d", {&input, &weight, &bias});
  return convolution("conv_transpose2d", input, weight, bias, 2, stride, padding, dilation, output_padding, groups,
                     true);
}();
  if (trace.recording()) trace.record({input, weight, bias}, {{"stride", jit::detail::ints(stride)}, {"padding", jit::detail::ints(padding)}, {"output_padding", jit::detail::ints(output_padding)}, {"groups", Value(groups)}, {"dilation", jit::detail::ints(dilation)}}, out);
  return out;
}

}  // namespace ember
