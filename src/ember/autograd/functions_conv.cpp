// Backward formulas of convolution and pooling (Note [Convolution primitives] in
// ops/conv_prim.h): each formula applies the adjoint primitive, which records its own
// node when the backward is itself recorded (create_graph).

#include "ember/autograd/fn_node.h"
#include "ember/ops/conv_prim.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/pointwise.h"

#include <tuple>

namespace ember::autograd::fn {

namespace {

using kernels::cpu::ConvGeometry;
using kernels::cpu::PoolGeometry;

DimVector pack(const ConvGeometry& g) {
  return {g.batch,    g.in_channels, g.in_h,     g.in_w,     g.out_channels, g.out_h,  g.out_w,  g.kernel_h,
          g.kernel_w, g.stride_h,    g.stride_w, g.pad_h,    g.pad_w,        g.dil_h,  g.dil_w,  g.groups};
}

ConvGeometry unpack_conv(const DimVector& v) {
  ConvGeometry g;
  g.batch = v[0], g.in_channels = v[1], g.in_h = v[2], g.in_w = v[3], g.out_channels = v[4], g.out_h = v[5];
  g.out_w = v[6], g.kernel_h = v[7], g.kernel_w = v[8], g.stride_h = v[9], g.stride_w = v[10], g.pad_h = v[11];
  g.pad_w = v[12], g.dil_h = v[13], g.dil_w = v[14], g.groups = v[15];
  return g;
}

DimVector pack(const PoolGeometry& g) {
  return {g.planes,   g.in_h,     g.in_w,  g.out_h, g.out_w, g.kernel_h, g.kernel_w,
          g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.dil_h, g.dil_w};
}

PoolGeometry unpack_pool(const DimVector& v) {
  PoolGeometry g;
  g.planes = v[0], g.in_h = v[1], g.in_w = v[2], g.out_h = v[3], g.out_w = v[4], g.kernel_h = v[5];
  g.kernel_w = v[6], g.stride_h = v[7], g.stride_w = v[8], g.pad_h = v[9], g.pad_w = v[10], g.dil_h = v[11];
  g.dil_w = v[12];
  return g;
}

// Saved: 0 = a, 1 = b. i0 = kind, ints = geometry, b0 = one_d. Outputs: a, b, bias.
// Forward (x, w):  dx = Input(g, w),   dw = Weight(x, g)
// Input (dy, w):   ddy = Forward(g, w), dw = Weight(g, dy)
// Weight (x, dy):  dx = Input(dy, g),  ddy = Forward(x, g)
variable_list conv_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const ConvGeometry geom = unpack_conv(n.ints);
  const auto kind = static_cast<ConvKind>(n.i0);
  const bool one_d = n.b0;
  Tensor da, db, dbias;
  const bool bias_wanted = n.num_outputs() > 2 && n.should_compute_output(2);
  if (kind == ConvKind::Forward && bias_wanted && n.should_compute_output(0) && n.should_compute_output(1) &&
      !GradMode::is_enabled() && (g.dtype() == kFloat32 || g.dtype() == kFloat64) &&
      n.saved(0).dtype() == g.dtype() && n.saved(1).dtype() == g.dtype()) {
    // All three from one pass over g (Note [One pass of the backward]).
    std::tie(da, db, dbias) = ember::conv_backward_all(n.saved(0), n.saved(1), g, geom, one_d);
    return {da, db, dbias};
  }
  if (n.should_compute_output(0)) {
    const Tensor b = n.saved(1);
    switch (kind) {
      case ConvKind::Forward: da = ember::conv_prim(ConvKind::Input, g, b, {}, geom, one_d); break;
      case ConvKind::Input: da = ember::conv_prim(ConvKind::Forward, g, b, {}, geom, one_d); break;
      case ConvKind::Weight: da = ember::conv_prim(ConvKind::Input, b, g, {}, geom, one_d); break;
    }
  }
  if (kind == ConvKind::Forward && bias_wanted && n.should_compute_output(1) && !GradMode::is_enabled() &&
      (g.dtype() == kFloat32 || g.dtype() == kFloat64) && n.saved(0).dtype() == g.dtype()) {
    // Both from one pass over g (Note [Bias gradient with the weight gradient]).
    std::tie(db, dbias) = ember::conv_weight_bias_grad(n.saved(0), g, geom, one_d);
    return {da, db, dbias};
  }
  if (n.should_compute_output(1)) {
    const Tensor a = n.saved(0);
    switch (kind) {
      case ConvKind::Forward: db = ember::conv_prim(ConvKind::Weight, a, g, {}, geom, one_d); break;
      case ConvKind::Input: db = ember::conv_prim(ConvKind::Weight, g, a, {}, geom, one_d); break;
      case ConvKind::Weight: db = ember::conv_prim(ConvKind::Forward, a, g, {}, geom, one_d); break;
    }
  }
  if (n.num_outputs() > 2 && n.should_compute_output(2)) {
    // Spatial sums first (contiguous rows), then the batch: no transposing copy. A bf16/fp16
    // gradient is summed in float32 and rounded once, like the maps themselves.
    const bool reduced = g.dtype() == kBFloat16 || g.dtype() == kFloat16;
    const Tensor g32 = reduced ? g.to(kFloat32) : g;
    dbias = (one_d ? g32.sum({2}) : g32.sum({2, 3})).sum({0});
    if (reduced) dbias = dbias.to(g.dtype());
  }
  return {da, db, dbias};
}

// conv2d_max_pool2d (Note [Convolution, then a max-pool] in kernels/cpu/conv.cpp): the
// fields of a Forward conv_formula node (saved 0 = x, 1 = w; ints = the convolution's
// geometry) followed by the pool's geometry in ints and its window offsets as saved 2. The
// weight and bias gradients come straight from the pooled gradient where the kernels take
// it; otherwise (the input's gradient wanted, a recorded backward) the pooled gradient is
// scattered back to the convolution's output and conv_formula takes it from there.
variable_list conv_max_pool_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  DimVector pool_ints;  // after the convolution's 16
  for (size_t i = 16; i < n.ints.size(); ++i) pool_ints.push_back(n.ints[i]);
  const PoolGeometry pool = unpack_pool(pool_ints);
  if (n.should_compute_output(1) && !GradMode::is_enabled() && g.dtype() == kFloat32) {
    const bool bias_wanted = n.num_outputs() > 2 && n.should_compute_output(2);
    if (!n.should_compute_output(0)) {
      auto [dw, dbias] = ember::conv2d_max_pool2d_weight_bias_grad(n.saved(0), g, n.saved(2), unpack_conv(n.ints),
                                                                   pool, bias_wanted);
      if (dw.defined()) return {Tensor(), dw, dbias};
    } else {
      auto [dx, dw, dbias] = ember::conv2d_max_pool2d_backward_all(n.saved(0), n.saved(1), g, n.saved(2),
                                                                   unpack_conv(n.ints), pool, bias_wanted);
      if (dx.defined()) return {dx, dw, dbias};
    }
  }
  return conv_formula(n, {ember::pool_prim(PoolKind::MaxBackward, g, n.saved(2), pool, {})});
}

// i0 = kind, ints = geometry, b0 = count_include_pad, i1 = divisor_override; saved 0 =
// indices (max pooling). The adjoint of each map:
//   max pooling's scatter <-> gather at the indices; Avg <-> AvgBackward;
//   Adaptive <-> AdaptiveBackward.
// Window offsets (uint8, Note [Max-pool window offsets]) as flat int64 indices.
Tensor offsets_to_indices(const Tensor& offsets, const PoolGeometry& g) {
  const Tensor off = offsets.to(kInt64);
  const TensorOptions i64(kInt64);
  const Tensor corner = ember::arange(g.out_h, i64).view({g.out_h, 1}) * (2 * g.in_w) +
                        ember::arange(g.out_w, i64).view({1, g.out_w}) * 2;
  return corner + ember::div(off, 2, "floor") * g.in_w + ember::remainder(off, 2);
}

Tensor gather_at(const Tensor& grad_input, const Tensor& saved, const PoolGeometry& g) {
  // grad_input (..., H, W) read at each plane's indices gives (..., OH, OW).
  // Index -1 (a window with no input element, Note in kernels/cpu/pool.cpp) reads 0.
  const Tensor indices = saved.dtype() == kUInt8 ? offsets_to_indices(saved, g) : saved;
  const Tensor flat = grad_input.reshape({g.planes, g.in_h * g.in_w});
  const Tensor idx = indices.reshape({g.planes, g.out_h * g.out_w});
  const Tensor got = flat.gather(1, idx.clamp_min(0));
  return ember::where(idx >= 0, got, 0.0).view(indices.sizes());
}

variable_list max_pool_formula(FnNode& n, const variable_list& grads) {
  const PoolGeometry geom = unpack_pool(n.ints);
  return {ember::pool_prim(PoolKind::MaxBackward, grads[0], n.saved(0), geom, {})};
}

variable_list pool_formula(FnNode& n, const variable_list& grads) {
  const PoolGeometry geom = unpack_pool(n.ints);
  const PoolExtra extra{n.b0, n.i1};
  const Tensor& g = grads[0];
  switch (static_cast<PoolKind>(n.i0)) {
    case PoolKind::MaxBackward: return {gather_at(g, n.saved(0), geom)};
    case PoolKind::Avg: return {ember::pool_prim(PoolKind::AvgBackward, g, {}, geom, extra)};
    case PoolKind::AvgBackward: return {ember::pool_prim(PoolKind::Avg, g, {}, geom, extra)};
    case PoolKind::Adaptive: return {ember::pool_prim(PoolKind::AdaptiveBackward, g, {}, geom, extra)};
    case PoolKind::AdaptiveBackward: return {ember::pool_prim(PoolKind::Adaptive, g, {}, geom, extra)};
  }
  return {Tensor()};
}

const char* pool_node_name(PoolKind kind) {
  switch (kind) {
    case PoolKind::MaxBackward: return "MaxPool2DWithIndicesBackwardBackward0";
    case PoolKind::Avg: return "AvgPool2DBackward0";
    case PoolKind::AvgBackward: return "AvgPool2DBackwardBackward0";
    case PoolKind::Adaptive: return "AdaptiveAvgPool2DBackward0";
    case PoolKind::AdaptiveBackward: return "AdaptiveAvgPool2DBackwardBackward0";
  }
  return "PoolBackward";
}

}  // namespace

Tensor conv_prim(ConvKind kind, const Tensor& a, const Tensor& b, const Tensor& bias, const ConvGeometry& g,
                 bool one_d, PrimForward forward) {
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  // PyTorch names the node of convolution and transposed convolution alike.
  const char* name = kind == ConvKind::Weight ? "ConvolutionBackwardBackward0" : "ConvolutionBackward0";
  auto node = bias.defined() ? make_node(name, conv_formula, {&a, &b, &bias}) : make_node(name, conv_formula, {&a, &b});
  node->i0 = static_cast<int64_t>(kind);
  node->ints = pack(g);
  node->b0 = one_d;
  node->save(node->should_compute_output(1) ? a : Tensor());
  node->save(node->should_compute_output(0) ? b : Tensor());
  set_history(out, node);
  return out;
}

Tensor pool_prim(PoolKind kind, const Tensor& x, const Tensor& indices, const PoolGeometry& g,
                 const PoolExtra& extra, PrimForward forward) {
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  auto node = make_node(pool_node_name(kind), pool_formula, {&x});
  node->i0 = static_cast<int64_t>(kind);
  node->ints = pack(g);
  node->b0 = extra.count_include_pad;
  node->i1 = extra.divisor_override;
  node->save(indices);
  set_history(out, node);
  return out;
}

void conv2d_max_pool2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                       const Tensor& offsets, const ConvGeometry& g, const PoolGeometry& pg) {
  const char* name = "ConvolutionMaxPool2DBackward0";
  auto node = bias.defined() ? make_node(name, conv_max_pool_formula, {&input, &weight, &bias})
                             : make_node(name, conv_max_pool_formula, {&input, &weight});
  node->i0 = static_cast<int64_t>(ConvKind::Forward);
  node->ints = pack(g);
  for (int64_t v : pack(pg)) node->ints.push_back(v);
  node->b0 = false;
  node->save(node->should_compute_output(1) ? input : Tensor());
  node->save(node->should_compute_output(0) ? weight : Tensor());
  node->save(offsets);
  set_history(out, node);
}

void max_pool2d(const Tensor& input, const Tensor& out, const Tensor& indices, const PoolGeometry& g) {
  auto node = make_node("MaxPool2DWithIndicesBackward0", max_pool_formula, {&input});
  node->ints = pack(g);
  node->save(indices);
  set_history(out, node);
}

}  // namespace ember::autograd::fn
