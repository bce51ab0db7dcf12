// Fake quantization ops and their straight-through gradient (Note [Fake quantization],
// fake_quant.h).

#include "ember/quant/fake_quant.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "ember/autograd/fn_node.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/parallel.h"
#include "ember/ops/creation.h"

namespace ember::quant {

namespace {

constexpr int64_t kGrain = 32768;

// The gradient: the incoming one where the value was on the grid's range, 0 elsewhere.
autograd::variable_list fake_quantize_formula(autograd::FnNode& n, const autograd::variable_list& grads) {
  return {grads[0] * n.saved(0)};
}

void check_range(const char* op, int64_t quant_min, int64_t quant_max) {
  constexpr int64_t kLimit = int64_t{1} << 24;  // codes stay exact in float32
  EMBER_CHECK(quant_min <= quant_max, op, " quant_min (", quant_min, ") must be less than or equal to quant_max (",
              quant_max, ")");
  EMBER_CHECK(quant_min > -kLimit && quant_max < kLimit, op, " quant_min and quant_max must lie within (-2^24, 2^24), got ",
              quant_min, " and ", quant_max);
}

void check_input(const char* op, const Tensor& input) {
  EMBER_CHECK(input.defined(), op, " called with an undefined tensor");
  EMBER_CHECK(input.dtype() == kFloat32, op, " expects a float32 tensor, got ", input.dtype(), " of sizes ",
              input.sizes(), "; convert it with .to(ember::kFloat32)");
}

// One element: the fake-quantized value and whether r was within the range.
inline float fake_one(float x, float inv, float zp, float lo, float hi, float scale, float* in_range) {
  const float r = std::nearbyint(x * inv) + zp;
  *in_range = (r >= lo && r <= hi) ? 1.0f : 0.0f;
  const float c = r < lo ? lo : (r > hi ? hi : r);  // NaN stays NaN
  return (c - zp) * scale;
}

void attach_gradient(const char* name, const Tensor& input, const Tensor& out, const Tensor& mask) {
  auto node = autograd::make_node(name, fake_quantize_formula, {&input});
  node->save(mask);
  autograd::set_history(out, node);
}

}  // namespace

Tensor fake_quantize_per_tensor_affine(const Tensor& input, double scale, int64_t zero_point, int64_t quant_min,
                                       int64_t quant_max) {
  constexpr const char* op = "[quant::fake_quantize_per_tensor_affine]";
  OpScope scope("quant::fake_quantize_per_tensor_affine", {&input});
  check_input(op, input);
  check_range(op, quant_min, quant_max);
  EMBER_CHECK(quant_min <= zero_point && zero_point <= quant_max, op, " zero_point ", zero_point,
              " must lie between quant_min (", quant_min, ") and quant_max (", quant_max, ")");
  const float s = static_cast<float>(scale);
  EMBER_CHECK(s > 0.0f && std::isfinite(s), op, " scale must be positive and finite (as float32), got ", scale);
  const bool grad = autograd::needs_grad(input);
  const Tensor x = input.detach().contiguous();
  Tensor out = empty(x.sizes(), TensorOptions(kFloat32));
  Tensor mask = grad ? empty(x.sizes(), TensorOptions(kFloat32)) : Tensor();
  const float* xp = x.data_ptr<float>();
  float* yp = out.data_ptr<float>();
  float* mp = grad ? mask.data_ptr<float>() : nullptr;
  const float inv = 1.0f / s, zp = static_cast<float>(zero_point);
  const float lo = static_cast<float>(quant_min), hi = static_cast<float>(quant_max);
  parallel_for(0, x.numel(), kGrain, [&](int64_t i0, int64_t i1) {
    float in_range;
    for (int64_t i = i0; i < i1; ++i) {
      yp[i] = fake_one(xp[i], inv, zp, lo, hi, s, &in_range);
      if (mp != nullptr) mp[i] = in_range;
    }
  });
  if (grad) attach_gradient("FakeQuantizePerTensorAffineBackward0", input, out, mask);
  return out;
}

Tensor fake_quantize_per_channel_affine(const Tensor& input, const Tensor& scale, const Tensor& zero_point,
                                        int64_t axis, int64_t quant_min, int64_t quant_max) {
  constexpr const char* op = "[quant::fake_quantize_per_channel_affine]";
  OpScope scope("quant::fake_quantize_per_channel_affine", {&input, &scale, &zero_point});
  check_input(op, input);
  check_range(op, quant_min, quant_max);
  EMBER_CHECK(axis >= 0 && axis < input.dim(), op, " axis ", axis, " is out of range for an input of sizes ",
              input.sizes(), " (0 <= axis < ", input.dim(), ")");
  const int64_t C = input.size(axis);
  EMBER_CHECK(scale.defined() && scale.dtype() == kFloat32 && scale.dim() == 1 && scale.size(0) == C, op,
              " scale must be a float32 tensor of sizes [", C, "] (input.size(", axis, ")), got ",
              scale.defined() ? scale.sizes() : IntArrayRef(), scale.defined() ? " " : " undefined",
              scale.defined() ? scale.dtype() : DType::Undefined);
  EMBER_CHECK(zero_point.defined() && (zero_point.dtype() == kInt32 || zero_point.dtype() == kInt64) &&
                  zero_point.dim() == 1 && zero_point.size(0) == C,
              op, " zero_point must be an int32 or int64 tensor of sizes [", C, "], got ",
              zero_point.defined() ? zero_point.sizes() : IntArrayRef(), zero_point.defined() ? " " : " undefined",
              zero_point.defined() ? zero_point.dtype() : DType::Undefined);
  const Tensor sc = scale.contiguous();
  const Tensor zc = zero_point.to(kInt64).contiguous();
  std::vector<float> inv(static_cast<size_t>(C)), zpf(static_cast<size_t>(C)), sv(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    const float s = sc.data_ptr<float>()[c];
    const int64_t z = zc.data_ptr<int64_t>()[c];
    EMBER_CHECK(s > 0.0f && std::isfinite(s), op, " scale[", c, "] must be positive and finite, got ", s);
    EMBER_CHECK(quant_min <= z && z <= quant_max, op, " zero_point[", c, "] = ", z, " must lie between quant_min (",
                quant_min, ") and quant_max (", quant_max, ")");
    inv[static_cast<size_t>(c)] = 1.0f / s;
    zpf[static_cast<size_t>(c)] = static_cast<float>(z);
    sv[static_cast<size_t>(c)] = s;
  }
  const bool grad = autograd::needs_grad(input);
  const Tensor x = input.detach().contiguous();
  Tensor out = empty(x.sizes(), TensorOptions(kFloat32));
  Tensor mask = grad ? empty(x.sizes(), TensorOptions(kFloat32)) : Tensor();
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < x.dim(); ++d) inner *= x.size(d);
  const float* xp = x.data_ptr<float>();
  float* yp = out.data_ptr<float>();
  float* mp = grad ? mask.data_ptr<float>() : nullptr;
  const float lo = static_cast<float>(quant_min), hi = static_cast<float>(quant_max);
  parallel_for(0, x.numel(), kGrain, [&](int64_t i0, int64_t i1) {
    float in_range;
    for (int64_t i = i0; i < i1; ++i) {
      const size_t c = static_cast<size_t>((i / inner) % C);
      yp[i] = fake_one(xp[i], inv[c], zpf[c], lo, hi, sv[c], &in_range);
      if (mp != nullptr) mp[i] = in_range;
    }
  });
  if (grad) attach_gradient("FakeQuantizePerChannelAffineBackward0", input, out, mask);
  return out;
}

}  // namespace ember::quant
