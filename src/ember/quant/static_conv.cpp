// Static int8 convolution modules: ObservedConv2d (prepare), QuantizedConv2d (convert),
// QuantizedMaxPool2d, and Conv2d + BatchNorm2d folding (Note [Static quantization scheme],
// static_quant.h; Note [Quantized convolution], quantized_ops.cpp).

#include <cmath>
#include <sstream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/jit/trace_hook.h"
#include "ember/nn/modules/batchnorm.h"
#include "ember/nn/modules/conv.h"
#include "ember/ops/creation.h"
#include "ember/ops/pool.h"
#include "ember/quant/qkernels.h"
#include "ember/quant/quantized_ops.h"
#include "ember/quant/static_quant.h"

namespace ember::quant {

namespace {

constexpr const char* kOp = "[QuantizedConv2d]";

Tensor scalar_float(float v) { return full({1}, static_cast<double>(v), TensorOptions(kFloat32)); }
Tensor scalar_int(int32_t v) { return full({1}, static_cast<double>(v), TensorOptions(kInt32)); }

QParams read_qparams(const Tensor& scale, const Tensor& zero_point, const char* which) {
  EMBER_CHECK(scale.defined() && scale.dtype() == kFloat32 && scale.numel() == 1, kOp, " ", which,
              "_scale must be a float32 tensor of one element");
  EMBER_CHECK(zero_point.defined() && zero_point.dtype() == kInt32 && zero_point.numel() == 1, kOp, " ", which,
              "_zero_point must be an int32 tensor of one element");
  return detail::act_qparams(kOp, which, scale.contiguous().data_ptr<float>()[0],
                             zero_point.contiguous().data_ptr<int32_t>()[0]);
}

// Numeric padding of a Conv2d's options; "same" must split evenly (the int8 kernel pads
// symmetrically).
std::vector<int64_t> numeric_padding(const nn::Conv2dOptions& o, const char* op) {
  EMBER_CHECK(o.padding_mode() == "zeros", op, " padding_mode '", o.padding_mode(),
              "' has no int8 version (only 'zeros'); keep this Conv2d in float32");
  if (o.padding_str() == "valid") return {0, 0};
  if (o.padding_str() == "same") {
    std::vector<int64_t> p(2);
    for (size_t i = 0; i < 2; ++i) {
      const int64_t total = o.dilation()[i] * (o.kernel_size()[i] - 1);
      EMBER_CHECK(total % 2 == 0, op, " padding='same' with kernel_size ", o.kernel_size(), " and dilation ",
                  o.dilation(), " pads unevenly, which the int8 kernel does not do; give numeric padding");
      p[i] = total / 2;
    }
    return p;
  }
  return {o.padding()[0], o.padding()[1]};
}

}  // namespace

// ---- ObservedConv2d ----

ObservedConv2dImpl::ObservedConv2dImpl(std::shared_ptr<nn::Conv2dImpl> c, bool with_relu, const QConfig& config)
    : Module(with_relu ? "ObservedConvReLU2d" : "ObservedConv2d"),
      conv(std::move(c)),
      relu(with_relu),
      input_observer(config.make_activation_observer()),
      output_observer(config.make_activation_observer()) {
  register_module("conv", conv);
  train(conv->is_training());
}

Tensor ObservedConv2dImpl::forward(const Tensor& input) {
  input_observer->observe(input);
  Tensor y = conv->forward(input);
  if (relu) y = y.relu();
  output_observer->observe(y);
  return y;
}

std::string ObservedConv2dImpl::extra_repr() const {
  std::ostringstream os;
  os << "relu=" << (relu ? "True" : "False") << ", observer=" << input_observer->name()
     << ", batches_seen=" << input_observer->batches_seen();
  return os.str();
}

std::shared_ptr<nn::Module> ObservedConv2dImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy =
      std::make_shared<ObservedConv2dImpl>(std::dynamic_pointer_cast<nn::Conv2dImpl>(conv->clone()), relu, QConfig{});
  copy->input_observer = input_observer->clone();
  copy->output_observer = output_observer->clone();
  return copy;
}

// ---- QuantizedConv2d ----

QuantizedConv2dImpl::QuantizedConv2dImpl(const nn::Conv2dImpl& conv, QParams in, QParams out, bool with_relu)
    : Module(with_relu ? "QuantizedConvReLU2d" : "QuantizedConv2d"),
      options_(conv.options),
      padding_(numeric_padding(conv.options, kOp)),
      relu_(with_relu) {
  const Tensor w = conv.weight.detach().to(kFloat32);
  EMBER_CHECK(w.dim() == 4, kOp, " expects a Conv2d weight of 4 dims, got sizes ", w.sizes());
  PerChannelWeight q = quantize_weight_per_channel(w.reshape({w.size(0), -1}));
  qweight = register_buffer("qweight", q.qweight.reshape(w.sizes()).contiguous());
  scales = register_buffer("scales", q.scales);
  bias = register_buffer("bias", conv.bias.defined() ? conv.bias.detach().to(kFloat32).clone() : Tensor());
  input_scale = register_buffer("input_scale", scalar_float(in.scale));
  input_zero_point = register_buffer("input_zero_point", scalar_int(in.zero_point));
  output_scale = register_buffer("output_scale", scalar_float(out.scale));
  output_zero_point = register_buffer("output_zero_point", scalar_int(out.zero_point));
  (void)input_qparams();  // refuses parameters outside the activation codes now
  (void)output_qparams();
  train(conv.is_training());
}

QuantizedConv2dImpl::QuantizedConv2dImpl(const nn::Conv2dOptions& options, bool with_relu)
    : Module(with_relu ? "QuantizedConvReLU2d" : "QuantizedConv2d"),
      options_(options),
      padding_(numeric_padding(options, kOp)),
      relu_(with_relu) {
  const int64_t oc = options.out_channels(), groups = options.groups();
  EMBER_CHECK(oc > 0 && options.in_channels() > 0 && groups > 0 && oc % groups == 0 &&
                  options.in_channels() % groups == 0,
              kOp, " in_channels ", options.in_channels(), " and out_channels ", oc,
              " must be positive multiples of groups ", groups);
  qweight = register_buffer("qweight", zeros({oc, options.in_channels() / groups, options.kernel_size()[0],
                                              options.kernel_size()[1]},
                                             TensorOptions(kInt8)));
  scales = register_buffer("scales", full({oc}, 1.0, TensorOptions(kFloat32)));
  bias = register_buffer("bias", options.bias() ? zeros({oc}, TensorOptions(kFloat32)) : Tensor());
  input_scale = register_buffer("input_scale", scalar_float(1.0f));
  input_zero_point = register_buffer("input_zero_point", scalar_int(0));
  output_scale = register_buffer("output_scale", scalar_float(1.0f));
  output_zero_point = register_buffer("output_zero_point", scalar_int(0));
}

QParams QuantizedConv2dImpl::input_qparams() const { return read_qparams(input_scale, input_zero_point, "input"); }
QParams QuantizedConv2dImpl::output_qparams() const { return read_qparams(output_scale, output_zero_point, "output"); }

void QuantizedConv2dImpl::set_input_qparams(QParams q) {
  input_scale.detach().fill_(static_cast<double>(q.scale));
  input_zero_point.detach().fill_(static_cast<double>(q.zero_point));
}

std::shared_ptr<const detail::PackedConv> QuantizedConv2dImpl::packed() {
  EMBER_CHECK(qweight.defined() && qweight.dtype() == kInt8 && qweight.dim() == 4 &&
                  qweight.size(0) == options_.out_channels() &&
                  qweight.size(1) == options_.in_channels() / options_.groups() &&
                  qweight.size(2) == options_.kernel_size()[0] && qweight.size(3) == options_.kernel_size()[1],
              kOp, " qweight must be an int8 tensor of sizes [", options_.out_channels(), ", ",
              options_.in_channels() / options_.groups(), ", ", options_.kernel_size()[0], ", ",
              options_.kernel_size()[1], "]");
  std::lock_guard<std::mutex> lock(mu_);
  const void* data = qweight.data_ptr();
  if (packed_ && data == seen_data_ && qweight._version() == seen_version_) return packed_;
  packed_ = std::make_shared<const detail::PackedConv>(detail::pack_conv_weight(kOp, qweight, options_.groups()));
  seen_data_ = data;
  seen_version_ = qweight._version();
  return packed_;
}

Tensor QuantizedConv2dImpl::forward(const Tensor& input) {
  OpScope scope("QuantizedConv2d", {&input});  // errors name the module the user called
  jit::detail::TraceOp trace("quantized_conv2d");
  const std::shared_ptr<const detail::PackedConv> w = packed();
  const QParams qin = input_qparams(), qout = output_qparams();
  const std::vector<int64_t> stride(options_.stride().begin(), options_.stride().end());
  const std::vector<int64_t> dilation(options_.dilation().begin(), options_.dilation().end());
  const detail::ConvGeometry g = detail::conv_geometry(kOp, stride, padding_, dilation, options_.groups());
  Tensor y = detail::conv2d(kOp, input.defined() ? input.detach() : input, *w, scales, bias, g, qin, qout, relu_,
                            output_codes);
  if (trace.recording()) {
    trace.record({input, qweight, scales, bias},
                 {{"stride", jit::detail::ints(stride)},
                  {"padding", jit::detail::ints(padding_)},
                  {"dilation", jit::detail::ints(dilation)},
                  {"groups", Value(options_.groups())},
                  {"input_scale", Value(static_cast<double>(qin.scale))},
                  {"input_zero_point", Value(static_cast<int64_t>(qin.zero_point))},
                  {"output_scale", Value(static_cast<double>(qout.scale))},
                  {"output_zero_point", Value(static_cast<int64_t>(qout.zero_point))},
                  {"relu", Value(relu_)},
                  {"output_dtype", jit::detail::dtype_value(output_codes ? kUInt8 : kFloat32)}},
                 y);
  }
  return y;
}

std::string QuantizedConv2dImpl::extra_repr() const {
  std::ostringstream os;
  const QParams in = input_qparams(), out = output_qparams();
  os << options_.in_channels() << ", " << options_.out_channels() << ", kernel_size=" << options_.kernel_size()
     << ", stride=" << options_.stride() << ", padding=" << IntArrayRef(padding_);
  if (options_.dilation()[0] != 1 || options_.dilation()[1] != 1) os << ", dilation=" << options_.dilation();
  if (options_.groups() != 1) os << ", groups=" << options_.groups();
  os << ", relu=" << (relu_ ? "True" : "False") << ", input_scale=" << in.scale
     << ", input_zero_point=" << in.zero_point << ", output_scale=" << out.scale
     << ", output_zero_point=" << out.zero_point << (output_codes ? ", output=uint8 codes" : "");
  return os.str();
}

std::shared_ptr<nn::Module> QuantizedConv2dImpl::clone(const std::optional<Device>& /*device*/) const {
  nn::Conv2dOptions o = options_;
  o.bias(bias.defined());
  auto copy = std::make_shared<QuantizedConv2dImpl>(o, relu_);
  clone_into(*copy);
  copy->output_codes = output_codes;
  return copy;
}

// ---- QuantizedMaxPool2d ----

QuantizedMaxPool2dImpl::QuantizedMaxPool2dImpl(const nn::MaxPool2dOptions& o)
    : Module("QuantizedMaxPool2d"), options(o) {}

Tensor QuantizedMaxPool2dImpl::forward(const Tensor& input) {
  if (input.defined() && input.dtype() == kUInt8) {
    return quantized_max_pool2d(input, options.kernel_size(), options.stride(), options.padding(),
                                options.dilation(), options.ceil_mode());
  }
  return max_pool2d(input, options.kernel_size(), options.stride(), options.padding(), options.dilation(),
                    options.ceil_mode());
}

std::string QuantizedMaxPool2dImpl::extra_repr() const {
  std::ostringstream os;
  os << "kernel_size=" << options.kernel_size() << ", stride="
     << (options.stride().empty() ? options.kernel_size() : options.stride()) << ", padding=" << options.padding()
     << ", dilation=" << options.dilation() << ", ceil_mode=" << (options.ceil_mode() ? "True" : "False");
  return os.str();
}

std::shared_ptr<nn::Module> QuantizedMaxPool2dImpl::clone(const std::optional<Device>& /*device*/) const {
  return std::make_shared<QuantizedMaxPool2dImpl>(options);
}

// ---- Conv2d + BatchNorm2d ----

std::shared_ptr<nn::Conv2dImpl> fuse_conv_bn(const nn::Conv2dImpl& conv, const nn::BatchNorm2dImpl& bn) {
  constexpr const char* op = "[quant::fuse_conv_bn]";
  const int64_t oc = conv.options.out_channels();
  EMBER_CHECK(bn.options.num_features() == oc, op, " BatchNorm2d has ", bn.options.num_features(),
              " features but the Conv2d has ", oc, " output channels");
  EMBER_CHECK(bn.running_mean.defined() && bn.running_var.defined(), op,
              " the BatchNorm2d keeps no running statistics (track_running_stats=false); there is nothing to fold");
  NoGradGuard no_grad;
  auto fused = std::dynamic_pointer_cast<nn::Conv2dImpl>(conv.clone());
  nn::Conv2dOptions o = conv.options;
  if (!o.bias()) {
    // The fused conv needs a bias: rebuild it with one and copy the weight over.
    o.bias(true);
    fused = std::make_shared<nn::Conv2dImpl>(o);
    fused->weight.detach().copy_(conv.weight.detach());
    fused->bias.detach().zero_();
    fused->train(conv.is_training());
  }
  const Tensor w = conv.weight.detach().to(kFloat32);
  const Tensor b = conv.bias.defined() ? conv.bias.detach().to(kFloat32) : zeros({oc}, TensorOptions(kFloat32));
  const Tensor mean = bn.running_mean.detach().to(kFloat32), var = bn.running_var.detach().to(kFloat32);
  const Tensor gamma = bn.weight.defined() ? bn.weight.detach().to(kFloat32) : ones({oc}, TensorOptions(kFloat32));
  const Tensor beta = bn.bias.defined() ? bn.bias.detach().to(kFloat32) : zeros({oc}, TensorOptions(kFloat32));
  const Tensor factor = gamma * (var + bn.options.eps()).rsqrt();
  fused->weight.detach().copy_(w * factor.reshape({oc, 1, 1, 1}));
  fused->bias.detach().copy_((b - mean) * factor + beta);
  return fused;
}

}  // namespace ember::quant
