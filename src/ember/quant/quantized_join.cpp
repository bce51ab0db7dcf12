// Quantized addition and concatenation (quantized_ops.h): activations on their own grids
// combined onto an output grid, what residual and multi-branch networks need between quantized
// layers.
//
// Note [Requantizing joins]: every input code q on grid (s, z) stands for the float32 value
// float(q - z) * s (one rounding, as torch's dequantize); the result is rounded onto the output
// grid as round_half_even(v * (1 / s_out)) + z_out and clamped to the activation codes, the fused
// ReLU being a lower clamp at z_out. That is torch 1.13's quantized add / add_relu / cat (which
// dequantize, combine in float32 and quantize), up to the order of its vectorized float
// operations: a value within a rounding error of a .5 boundary can land one code apart
// (tests/quant/torch_parity.cpp counts them). Concatenation needs one value per input code, so
// it requantizes through a 256-entry table; addition computes each element. Both are
// element-wise: any chunking and thread count give the same bits.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/parallel.h"
#include "ember/jit/trace_hook.h"
#include "ember/kernels/cpu/qgemm.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"
#include "ember/ops/view.h"
#include "ember/quant/qkernels.h"
#include "ember/quant/quantized_ops.h"

namespace ember::quant {

namespace {

void check_output_dtype(const char* op, DType dt) {
  EMBER_CHECK(dt == kUInt8 || dt == kFloat32, op, " output_dtype must be ember::kUInt8 (codes) or ember::kFloat32 ",
              "(their values), got ", dt);
}

// Codes of x on grid q: uint8 codes as they are (checked to be activation codes), float32
// values quantized onto the grid (contiguous). which names the argument in errors.
Tensor as_codes(const char* op, const std::string& which, const Tensor& x, QParams q) {
  EMBER_CHECK(x.defined(), op, " ", which, " is an undefined tensor");
  EMBER_CHECK(x.dtype() == kFloat32 || x.dtype() == kUInt8, op, " ", which,
              " must be float32 values or uint8 codes, got ", x.dtype(), " of sizes ", x.sizes(),
              "; convert it with .to(ember::kFloat32)");
  if (x.dtype() == kUInt8) {
    const Tensor c = x.contiguous();
    const uint8_t* p = c.data_ptr<uint8_t>();
    uint8_t hi = 0;
    for (int64_t i = 0, n = c.numel(); i < n; ++i) hi = std::max(hi, p[i]);
    EMBER_CHECK(hi <= kActCodeMax, op, " ", which, " holds code ", static_cast<int>(hi),
                ", outside the activation codes [0, 127]; pass float32 values, or codes made by a quantized layer");
    return x;
  }
  const Tensor xc = x.detach().contiguous();
  Tensor codes = empty(xc.sizes(), TensorOptions(kUInt8));
  const float* xp = xc.data_ptr<float>();
  uint8_t* cp = codes.data_ptr<uint8_t>();
  const float inv = 1.0f / q.scale, zp = static_cast<float>(q.zero_point);
  parallel_for(0, xc.numel(), 65536, [&](int64_t i0, int64_t i1) {
    kernels::cpu::qquantize_u8(xp + i0, i1 - i0, inv, zp, static_cast<float>(kActCodeMin),
                               static_cast<float>(kActCodeMax), cp + i0);
  });
  return codes;
}

// Whether t is a 4-D tensor laid out channels-last without gaps ([N, C, H, W] sizes, strides
// [H*W*C, 1, W*C, C]): what quantized_conv2d and the quantized pools return.
bool channels_last_dense(const Tensor& t) {
  if (t.dim() != 4) return false;
  const int64_t C = t.size(1), H = t.size(2), W = t.size(3);
  const IntArrayRef s = t.strides();
  return (C == 1 || s[1] == 1) && (W == 1 || s[3] == C) && (H == 1 || s[2] == W * C) &&
         (t.size(0) == 1 || s[0] == H * W * C);
}

Tensor values_of(const Tensor& codes, QParams q) {
  // (q - z) * s, keeping the codes' layout: same-sized float32 with the same strides when dense.
  const bool cl = channels_last_dense(codes) && !codes.is_contiguous();
  const Tensor src = cl ? codes.permute({0, 2, 3, 1}) : codes.contiguous();
  const Tensor sc = src.contiguous();
  Tensor out = empty(sc.sizes(), TensorOptions(kFloat32));
  const uint8_t* cp = sc.data_ptr<uint8_t>();
  float* yp = out.data_ptr<float>();
  const float zp = static_cast<float>(q.zero_point);
  parallel_for(0, sc.numel(), 65536, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) yp[i] = (static_cast<float>(cp[i]) - zp) * q.scale;
  });
  return cl ? out.permute({0, 3, 1, 2}) : out;
}

}  // namespace

Tensor quantized_add(const Tensor& a, double a_scale, int64_t a_zero_point, const Tensor& b, double b_scale,
                     int64_t b_zero_point, double output_scale, int64_t output_zero_point, bool relu,
                     DType output_dtype) {
  constexpr const char* op = "[quant::quantized_add]";
  OpScope scope("quant::quantized_add", {&a, &b});
  jit::detail::TraceOp trace("quantized_add");
  check_output_dtype(op, output_dtype);
  const QParams qa = detail::act_qparams(op, "a", a_scale, a_zero_point);
  const QParams qb = detail::act_qparams(op, "b", b_scale, b_zero_point);
  const QParams qo = detail::act_qparams(op, "output", output_scale, output_zero_point);
  const Tensor ca = as_codes(op, "a", a, qa), cb = as_codes(op, "b", b, qb);
  const DimVector sizes = broadcast_shapes(ca.sizes(), cb.sizes());

  // Channels-last codes of equal sizes (two conv outputs) keep their layout; anything else is
  // broadcast into contiguous buffers.
  const bool keep_layout = ca.sizes() == cb.sizes() && ca.strides() == cb.strides() && channels_last_dense(ca) &&
                           !ca.is_contiguous();
  Tensor xa, xb, out;
  if (keep_layout) {
    xa = ca.permute({0, 2, 3, 1}).contiguous();  // a view of the same bytes: no copy
    xb = cb.permute({0, 2, 3, 1}).contiguous();
  } else {
    xa = ca.expand(IntArrayRef(sizes)).contiguous();
    xb = cb.expand(IntArrayRef(sizes)).contiguous();
  }
  Tensor codes = empty(xa.sizes(), TensorOptions(kUInt8));
  const uint8_t* pa = xa.data_ptr<uint8_t>();
  const uint8_t* pb = xb.data_ptr<uint8_t>();
  uint8_t* po = codes.data_ptr<uint8_t>();
  const float za = static_cast<float>(qa.zero_point), zb = static_cast<float>(qb.zero_point);
  const float sa = qa.scale, sb = qb.scale, inv = 1.0f / qo.scale, zo = static_cast<float>(qo.zero_point);
  const float lo = relu ? zo : static_cast<float>(kActCodeMin), hi = static_cast<float>(kActCodeMax);
  parallel_for(0, codes.numel(), 65536, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const float v = (static_cast<float>(pa[i]) - za) * sa + (static_cast<float>(pb[i]) - zb) * sb;
      const float c = std::nearbyint(v * inv) + zo;
      po[i] = static_cast<uint8_t>(std::min(std::max(c, lo), hi));
    }
  });
  if (keep_layout) codes = codes.permute({0, 3, 1, 2});
  Tensor y = output_dtype == kUInt8 ? codes : values_of(codes, qo);
  if (trace.recording()) {
    trace.record({a, b},
                 {{"a_scale", Value(a_scale)},
                  {"a_zero_point", Value(a_zero_point)},
                  {"b_scale", Value(b_scale)},
                  {"b_zero_point", Value(b_zero_point)},
                  {"output_scale", Value(output_scale)},
                  {"output_zero_point", Value(output_zero_point)},
                  {"relu", Value(relu)},
                  {"output_dtype", jit::detail::dtype_value(output_dtype)}},
                 y);
  }
  return y;
}

Tensor quantized_cat(const std::vector<Tensor>& inputs, const std::vector<double>& scales,
                     const std::vector<int64_t>& zero_points, int64_t dim, double output_scale,
                     int64_t output_zero_point, DType output_dtype) {
  constexpr const char* op = "[quant::quantized_cat]";
  OpScope scope("quant::quantized_cat", {}, inputs.data(), inputs.size());
  jit::detail::TraceOp trace("quantized_cat");
  check_output_dtype(op, output_dtype);
  EMBER_CHECK(!inputs.empty(), op, " needs at least one tensor");
  EMBER_CHECK(scales.size() == inputs.size() && zero_points.size() == inputs.size(), op, " got ", inputs.size(),
              " tensors but ", scales.size(), " scales and ", zero_points.size(),
              " zero points; pass one scale and zero point per tensor");
  const QParams qo = detail::act_qparams(op, "output", output_scale, output_zero_point);
  std::vector<Tensor> codes;
  codes.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string which = "inputs[" + std::to_string(i) + "]";
    const QParams q = detail::act_qparams(op, which.c_str(), scales[i], zero_points[i]);
    Tensor c = as_codes(op, which, inputs[i], q);
    if (q.scale != qo.scale || q.zero_point != qo.zero_point) {
      // Note [Requantizing joins]: one table entry per code.
      std::array<uint8_t, 256> table{};
      const float inv = 1.0f / qo.scale, zo = static_cast<float>(qo.zero_point), zi = static_cast<float>(q.zero_point);
      for (int k = 0; k < 256; ++k) {
        const float v = (static_cast<float>(k) - zi) * q.scale;
        const float r = std::nearbyint(v * inv) + zo;
        table[static_cast<size_t>(k)] = static_cast<uint8_t>(
            std::min(std::max(r, static_cast<float>(kActCodeMin)), static_cast<float>(kActCodeMax)));
      }
      const Tensor src = c.contiguous();
      Tensor moved = empty(src.sizes(), TensorOptions(kUInt8));
      const uint8_t* sp = src.data_ptr<uint8_t>();
      uint8_t* mp = moved.data_ptr<uint8_t>();
      parallel_for(0, src.numel(), 65536, [&](int64_t i0, int64_t i1) {
        for (int64_t k = i0; k < i1; ++k) mp[k] = table[sp[k]];
      });
      c = moved;
    }
    codes.push_back(c);
  }
  // ember::cat checks the sizes and the dim; its errors carry this op's name (Note [Errors name
  // the op the user called]).
  Tensor joined = cat(codes, dim);
  Tensor y = output_dtype == kUInt8 ? joined : values_of(joined, qo);
  if (trace.recording()) {
    trace.record(inputs,
                 {{"scales", Value(scales)},
                  {"zero_points", Value(zero_points)},
                  {"dim", Value(dim)},
                  {"output_scale", Value(output_scale)},
                  {"output_zero_point", Value(output_zero_point)},
                  {"output_dtype", jit::detail::dtype_value(output_dtype)}},
                 y);
  }
  return y;
}

}  // namespace ember::quant
