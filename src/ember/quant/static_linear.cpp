// Static post-training quantization of Linear layers: ObservedLinear (prepare) and
// StaticQuantizedLinear (convert); Note [Static quantization scheme] (static_quant.h). The
// module-tree passes are in prepare.cpp.

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/jit/trace_hook.h"
#include "ember/nn/modules/linear.h"
#include "ember/ops/creation.h"
#include "ember/quant/qkernels.h"
#include "ember/quant/static_quant.h"

namespace ember::quant {

namespace {

constexpr const char* kOp = "[StaticQuantizedLinear]";

Tensor scalar_float(float v) { return full({1}, static_cast<double>(v), TensorOptions(kFloat32)); }
Tensor scalar_int(int32_t v) { return full({1}, static_cast<double>(v), TensorOptions(kInt32)); }

}  // namespace

// ---- ObservedLinear ----

ObservedLinearImpl::ObservedLinearImpl(std::shared_ptr<nn::LinearImpl> lin, bool with_relu, const QConfig& config)
    : Module(with_relu ? "ObservedLinearReLU" : "ObservedLinear"),
      linear(std::move(lin)),
      relu(with_relu),
      input_observer(config.make_activation_observer()),
      output_observer(config.make_activation_observer()) {
  register_module("linear", linear);
  train(linear->is_training());
}

Tensor ObservedLinearImpl::forward(const Tensor& input) {
  input_observer->observe(input);
  Tensor y = linear->forward(input);
  if (relu) y = y.relu();
  output_observer->observe(y);
  return y;
}

std::string ObservedLinearImpl::extra_repr() const {
  std::ostringstream os;
  os << "relu=" << (relu ? "True" : "False") << ", observer=" << input_observer->name()
     << ", batches_seen=" << input_observer->batches_seen();
  return os.str();
}

std::shared_ptr<nn::Module> ObservedLinearImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy =
      std::make_shared<ObservedLinearImpl>(std::dynamic_pointer_cast<nn::LinearImpl>(linear->clone()), relu, QConfig{});
  copy->input_observer = input_observer->clone();
  copy->output_observer = output_observer->clone();
  return copy;
}

// ---- StaticQuantizedLinear ----

StaticQuantizedLinearImpl::StaticQuantizedLinearImpl(const nn::LinearImpl& linear, QParams in, QParams out,
                                                     bool with_relu)
    : Module(with_relu ? "StaticQuantizedLinearReLU" : "StaticQuantizedLinear"),
      in_features_(linear.options.in_features()),
      out_features_(linear.options.out_features()),
      relu_(with_relu) {
  PerChannelWeight w = quantize_weight_per_channel(linear.weight);
  qweight = register_buffer("qweight", w.qweight);
  scales = register_buffer("scales", w.scales);
  bias = register_buffer("bias", linear.bias.defined() ? linear.bias.detach().to(kFloat32).clone() : Tensor());
  input_scale = register_buffer("input_scale", scalar_float(in.scale));
  input_zero_point = register_buffer("input_zero_point", scalar_int(in.zero_point));
  output_scale = register_buffer("output_scale", scalar_float(out.scale));
  output_zero_point = register_buffer("output_zero_point", scalar_int(out.zero_point));
  train(linear.is_training());
}

StaticQuantizedLinearImpl::StaticQuantizedLinearImpl(int64_t in_features, int64_t out_features, bool with_bias,
                                                     bool with_relu)
    : Module(with_relu ? "StaticQuantizedLinearReLU" : "StaticQuantizedLinear"),
      in_features_(in_features),
      out_features_(out_features),
      relu_(with_relu) {
  EMBER_CHECK(in_features >= 0 && out_features >= 0, kOp, " in_features and out_features must be non-negative, got ",
              in_features, " and ", out_features);
  qweight = register_buffer("qweight", zeros({out_features, in_features}, TensorOptions(kInt8)));
  scales = register_buffer("scales", full({out_features}, 1.0, TensorOptions(kFloat32)));
  bias = register_buffer("bias", with_bias ? zeros({out_features}, TensorOptions(kFloat32)) : Tensor());
  input_scale = register_buffer("input_scale", scalar_float(1.0f));
  input_zero_point = register_buffer("input_zero_point", scalar_int(0));
  output_scale = register_buffer("output_scale", scalar_float(1.0f));
  output_zero_point = register_buffer("output_zero_point", scalar_int(0));
}

namespace {

QParams read_qparams(const Tensor& scale, const Tensor& zero_point, const char* which) {
  EMBER_CHECK(scale.defined() && scale.dtype() == kFloat32 && scale.numel() == 1, kOp, " ", which,
              "_scale must be a float32 tensor of one element");
  EMBER_CHECK(zero_point.defined() && zero_point.dtype() == kInt32 && zero_point.numel() == 1, kOp, " ", which,
              "_zero_point must be an int32 tensor of one element");
  QParams q;
  q.scale = scale.contiguous().data_ptr<float>()[0];
  q.zero_point = zero_point.contiguous().data_ptr<int32_t>()[0];
  EMBER_CHECK(q.scale > 0.0f && std::isfinite(q.scale), kOp, " ", which, "_scale must be positive and finite, got ",
              q.scale);
  EMBER_CHECK(
      q.zero_point >= StaticQuantizedLinearImpl::kActQMin && q.zero_point <= StaticQuantizedLinearImpl::kActQMax, kOp,
      " ", which, "_zero_point ", q.zero_point, " is outside the activation codes [0, 127]");
  return q;
}

}  // namespace

QParams StaticQuantizedLinearImpl::input_qparams() const {
  return read_qparams(input_scale, input_zero_point, "input");
}
QParams StaticQuantizedLinearImpl::output_qparams() const {
  return read_qparams(output_scale, output_zero_point, "output");
}

std::shared_ptr<const std::vector<int32_t>> StaticQuantizedLinearImpl::row_sums() {
  const int64_t N = out_features_, K = in_features_;
  EMBER_CHECK(qweight.defined() && qweight.dtype() == kInt8 && qweight.dim() == 2 && qweight.size(0) == N &&
                  qweight.size(1) == K && qweight.is_contiguous(),
              kOp, " qweight must be a contiguous int8 tensor of sizes [", N, ", ", K, "]");
  EMBER_CHECK(scales.defined() && scales.dtype() == kFloat32 && scales.dim() == 1 && scales.size(0) == N &&
                  scales.is_contiguous(),
              kOp, " scales must be a contiguous float32 tensor of sizes [", N, "]");
  EMBER_CHECK(
      !bias.defined() || (bias.dtype() == kFloat32 && bias.dim() == 1 && bias.size(0) == N && bias.is_contiguous()),
      kOp, " bias must be a contiguous float32 tensor of sizes [", N, "]");
  std::lock_guard<std::mutex> lock(mu_);
  const void* data = qweight.data_ptr();
  if (row_sums_ && data == seen_data_ && qweight._version() == seen_version_) return row_sums_;
  auto sums = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(N), 0);
  const int8_t* q = qweight.data_ptr<int8_t>();
  for (int64_t n = 0; n < N; ++n) {
    int32_t s = 0;
    for (int64_t k = 0; k < K; ++k) s += q[n * K + k];
    (*sums)[static_cast<size_t>(n)] = s;
  }
  row_sums_ = std::move(sums);
  seen_data_ = data;
  seen_version_ = qweight._version();
  return row_sums_;
}

void StaticQuantizedLinearImpl::set_input_qparams(QParams q) {
  input_scale.detach().fill_(static_cast<double>(q.scale));
  input_zero_point.detach().fill_(static_cast<double>(q.zero_point));
}

Tensor StaticQuantizedLinearImpl::forward(const Tensor& input) {
  OpScope scope("StaticQuantizedLinear", {&input});  // errors name the module the user called
  jit::detail::TraceOp trace("quantized_linear");
  const std::shared_ptr<const std::vector<int32_t>> sums = row_sums();
  const QParams qin = input_qparams(), qout = output_qparams();
  Tensor y = detail::linear(kOp, input.defined() ? input.detach() : input, qweight, sums->data(), scales, bias, qin,
                            qout, relu_, output_codes);
  if (trace.recording()) {
    trace.record({input, qweight, scales, bias},
                 {{"input_scale", Value(static_cast<double>(qin.scale))},
                  {"input_zero_point", Value(static_cast<int64_t>(qin.zero_point))},
                  {"output_scale", Value(static_cast<double>(qout.scale))},
                  {"output_zero_point", Value(static_cast<int64_t>(qout.zero_point))},
                  {"relu", Value(relu_)},
                  {"output_dtype", jit::detail::dtype_value(output_codes ? kUInt8 : kFloat32)}},
                 y);
  }
  return y;
}

std::string StaticQuantizedLinearImpl::extra_repr() const {
  std::ostringstream os;
  const QParams in = input_qparams(), out = output_qparams();
  os << "in_features=" << in_features_ << ", out_features=" << out_features_ << ", relu=" << (relu_ ? "True" : "False")
     << ", input_scale=" << in.scale << ", input_zero_point=" << in.zero_point << ", output_scale=" << out.scale
     << ", output_zero_point=" << out.zero_point << ", dtype=qint8, qscheme=per_channel_symmetric"
     << (output_codes ? ", output=uint8 codes" : "");
  return os.str();
}

std::shared_ptr<nn::Module> StaticQuantizedLinearImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<StaticQuantizedLinearImpl>(in_features_, out_features_, bias.defined(), relu_);
  clone_into(*copy);
  copy->output_codes = output_codes;
  return copy;
}

}  // namespace ember::quant
