// Quantization parameters and the float <-> int8 conversions of Note [Dynamic
// quantization scheme] (quant.h).

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "ember/core/check.h"
#include "ember/kernels/cpu/qgemm.h"
#include "ember/ops/creation.h"
#include "ember/quant/quant.h"

namespace ember::quant {

QParams choose_qparams(float lo, float hi, int32_t qmin, int32_t qmax) {
  EMBER_CHECK(std::isfinite(lo) && std::isfinite(hi), "[quant::choose_qparams] the range [", lo, ", ", hi,
              "] is not finite; the input holds inf or NaN");
  EMBER_CHECK(qmin < qmax, "[quant::choose_qparams] qmin ", qmin, " must be below qmax ", qmax);
  // The range always holds 0, so that zero (padding, ReLU outputs) is exact.
  const double min = std::min(lo, 0.0f), max = std::max(hi, 0.0f);
  double scale = (max - min) / static_cast<double>(qmax - qmin);
  if (static_cast<float>(scale) == 0.0f || std::isinf(1.0f / static_cast<float>(scale))) scale = 0.1;
  // Of the two zero points that make min or max exact, take the one with the smaller error.
  const double zp_from_min = qmin - min / scale;
  const double zp_from_max = qmax - max / scale;
  const double err_min = std::abs(static_cast<double>(qmin)) - std::abs(min / scale);
  const double err_max = std::abs(static_cast<double>(qmax)) - std::abs(max / scale);
  const double zp = err_min < err_max ? zp_from_min : zp_from_max;
  QParams q;
  q.scale = static_cast<float>(scale);
  q.zero_point = zp < qmin ? qmin : zp > qmax ? qmax : static_cast<int32_t>(std::nearbyint(zp));
  return q;
}

PerChannelWeight quantize_weight_per_channel(const Tensor& weight) {
  EMBER_CHECK(weight.defined() && weight.dim() == 2 && is_floating_point(weight.dtype()),
              "[quant::quantize_weight_per_channel] expects a floating-point [out_features, in_features] weight, got ",
              weight.defined() ? ::ember::detail::str_cat(weight.dtype(), " of sizes ", weight.sizes())
                               : std::string("undefined"));
  const Tensor w = weight.detach().to(kFloat32).contiguous();
  const int64_t N = w.size(0), K = w.size(1);
  PerChannelWeight out{empty({N, K}, TensorOptions(kInt8)), empty({N}, TensorOptions(kFloat32))};
  const float* src = w.data_ptr<float>();
  int8_t* q = out.qweight.data_ptr<int8_t>();
  float* scales = out.scales.data_ptr<float>();
  for (int64_t n = 0; n < N; ++n) {
    const float* row = src + n * K;
    float amax = 0.0f;
    for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::abs(row[k]));
    EMBER_CHECK(std::isfinite(amax), "[quant::quantize_weight_per_channel] row ", n,
                " of the weight holds inf or NaN; int8 cannot represent it");
    const float scale = std::max(amax / 127.5f, FLT_EPSILON);
    scales[n] = scale;
    const float inv = 1.0f / scale;  // multiplied, not divided: PyTorch's codes, tie for tie
    for (int64_t k = 0; k < K; ++k) {
      const float v = std::nearbyint(row[k] * inv);
      q[n * K + k] = static_cast<int8_t>(std::clamp(v, -128.0f, 127.0f));
    }
  }
  return out;
}

Tensor quantize_per_tensor_uint8(const Tensor& x, QParams q, int32_t qmin, int32_t qmax) {
  EMBER_CHECK(x.defined() && x.dtype() == kFloat32, "[quant::quantize_per_tensor_uint8] expects a float32 tensor, got ",
              x.defined() ? ::ember::detail::str_cat(x.dtype()) : std::string("undefined"));
  EMBER_CHECK(0 <= qmin && qmin < qmax && qmax <= 255, "[quant::quantize_per_tensor_uint8] [qmin, qmax] = [", qmin,
              ", ", qmax, "] must lie within [0, 255]");
  EMBER_CHECK(q.scale > 0 && std::isfinite(q.scale), "[quant::quantize_per_tensor_uint8] scale must be positive, got ",
              q.scale);
  const Tensor c = x.detach().contiguous();
  Tensor out = empty(c.sizes(), TensorOptions(kUInt8));
  kernels::cpu::qquantize_u8(c.data_ptr<float>(), c.numel(), 1.0f / q.scale, static_cast<float>(q.zero_point),
                             static_cast<float>(qmin), static_cast<float>(qmax), out.data_ptr<uint8_t>());
  return out;
}

}  // namespace ember::quant
