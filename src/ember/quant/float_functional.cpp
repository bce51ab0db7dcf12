// quant::FloatFunctional (Note [FloatFunctional], static_quant.h) and the average-pooling
// modules that convert() puts between quantized layers.

#include <sstream>

#include "ember/core/check.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"
#include "ember/ops/pool.h"
#include "ember/quant/quantized_ops.h"
#include "ember/quant/static_quant.h"

namespace ember::quant {

namespace {

constexpr const char* kFF = "[quant::FloatFunctional]";

Tensor float_tensor(const std::vector<float>& v) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, TensorOptions(kFloat32));
  for (size_t i = 0; i < v.size(); ++i) t.data_ptr<float>()[i] = v[i];
  return t;
}

Tensor int_tensor(const std::vector<int32_t>& v) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, TensorOptions(kInt32));
  for (size_t i = 0; i < v.size(); ++i) t.data_ptr<int32_t>()[i] = v[i];
  return t;
}

const char* mode_name(FloatFunctionalImpl::Mode m) {
  switch (m) {
    case FloatFunctionalImpl::Mode::Float: return "float";
    case FloatFunctionalImpl::Mode::Observing: return "observing";
    case FloatFunctionalImpl::Mode::Quantized: return "quantized";
  }
  return "?";
}

}  // namespace

FloatFunctionalImpl::FloatFunctionalImpl() : Module("FloatFunctional") {}

Tensor FloatFunctionalImpl::add(const Tensor& a, const Tensor& b) { return run("add", {a, b}, 0); }
Tensor FloatFunctionalImpl::add_relu(const Tensor& a, const Tensor& b) { return run("add_relu", {a, b}, 0); }
Tensor FloatFunctionalImpl::cat(const std::vector<Tensor>& inputs, int64_t dim) { return run("cat", inputs, dim); }

Tensor FloatFunctionalImpl::forward(const Tensor& /*input*/) {
  EMBER_ERROR(kFF, " has no forward(x); call its add(a, b), add_relu(a, b) or cat(tensors, dim) where the float op ",
              "was");
}

Tensor FloatFunctionalImpl::run(const std::string& op, const std::vector<Tensor>& inputs, int64_t dim) {
  if (mode_ == Mode::Quantized) {
    EMBER_CHECK(op == op_ && (op != "cat" || dim == dim_), kFF, " was calibrated on ", op_,
                op_ == "cat" ? " along dim " + std::to_string(dim_) : std::string(), " but is called as ", op,
                op == "cat" ? " along dim " + std::to_string(dim) : std::string(),
                "; use one FloatFunctional per call site");
    const int64_t k = input_scales.numel();
    EMBER_CHECK(static_cast<int64_t>(inputs.size()) == k, kFF, " was calibrated with ", k, " inputs but is called with ",
                inputs.size(), "; use one FloatFunctional per call site");
    const QParams out = output_qparams();
    if (op == "cat") {
      std::vector<double> scales;
      std::vector<int64_t> zps;
      for (size_t i = 0; i < inputs.size(); ++i) {
        const QParams q = input_qparams(i);
        scales.push_back(q.scale);
        zps.push_back(q.zero_point);
      }
      return quantized_cat(inputs, scales, zps, dim, out.scale, out.zero_point, kFloat32);
    }
    const QParams qa = input_qparams(0), qb = input_qparams(1);
    return quantized_add(inputs[0], qa.scale, qa.zero_point, inputs[1], qb.scale, qb.zero_point, out.scale,
                         out.zero_point, op == "add_relu", kFloat32);
  }
  Tensor y;
  if (op == "cat") {
    y = ember::cat(inputs, dim);
  } else {
    y = inputs.at(0) + inputs.at(1);
    if (op == "add_relu") y = y.relu();
  }
  if (mode_ == Mode::Observing) {
    if (op_.empty()) {
      op_ = op;
      dim_ = dim;
      for (size_t i = 0; i < inputs.size(); ++i) input_observers.push_back(config_.make_activation_observer());
    }
    EMBER_CHECK(op == op_ && (op != "cat" || dim == dim_) && inputs.size() == input_observers.size(), kFF,
                " is observing ", op_, " of ", input_observers.size(), " inputs but is called as ", op, " of ",
                inputs.size(), " inputs; use one FloatFunctional per call site");
    for (size_t i = 0; i < inputs.size(); ++i) {
      EMBER_CHECK(inputs[i].dtype() == kFloat32, kFF, " input ", i, " is ", inputs[i].dtype(),
                  " of sizes ", inputs[i].sizes(), "; calibration needs float32 values");
      input_observers[i]->observe(inputs[i].detach());
    }
    output_observer->observe(y.detach());
  }
  return y;
}

void FloatFunctionalImpl::start_observing(const QConfig& config) {
  EMBER_CHECK(mode_ == Mode::Float, kFF, " is already ", mode_name(mode_),
              "; call quant::prepare (or prepare_qat) once, on the float model");
  config_ = config;
  input_observers.clear();
  output_observer = config.make_activation_observer();
  op_.clear();
  mode_ = Mode::Observing;
}

bool FloatFunctionalImpl::calibrated() const {
  if (mode_ != Mode::Observing || op_.empty() || !output_observer->calibrated()) return false;
  for (const auto& o : input_observers) {
    if (!o->calibrated()) return false;
  }
  return true;
}

void FloatFunctionalImpl::convert_to_quantized() {
  EMBER_CHECK(mode_ == Mode::Observing, kFF, " is ", mode_name(mode_), ", not observing; call quant::prepare first");
  EMBER_CHECK(calibrated(), kFF, " has not been calibrated: it saw no call. Run the prepared model on calibration data ",
              "between quant::prepare and quant::convert");
  std::vector<float> scales;
  std::vector<int32_t> zps;
  for (const auto& o : input_observers) {
    const QParams q = o->calculate_qparams();
    scales.push_back(q.scale);
    zps.push_back(q.zero_point);
  }
  const QParams out = output_observer->calculate_qparams();
  input_scales = register_buffer("input_scales", float_tensor(scales));
  input_zero_points = register_buffer("input_zero_points", int_tensor(zps));
  output_scale = register_buffer("output_scale", float_tensor({out.scale}));
  output_zero_point = register_buffer("output_zero_point", int_tensor({out.zero_point}));
  mode_ = Mode::Quantized;
}

QParams FloatFunctionalImpl::input_qparams(size_t i) const {
  EMBER_CHECK(mode_ == Mode::Quantized, kFF, " is ", mode_name(mode_), "; its grids exist after quant::convert");
  EMBER_CHECK(input_scales.dtype() == kFloat32 && input_zero_points.dtype() == kInt32 &&
                  input_scales.numel() == input_zero_points.numel() && static_cast<int64_t>(i) < input_scales.numel(),
              kFF, " input_scales / input_zero_points must be float32 / int32 tensors of one value per input");
  return QParams{input_scales.data_ptr<float>()[i], input_zero_points.data_ptr<int32_t>()[i]};
}

QParams FloatFunctionalImpl::output_qparams() const {
  EMBER_CHECK(mode_ == Mode::Quantized, kFF, " is ", mode_name(mode_), "; its grids exist after quant::convert");
  EMBER_CHECK(output_scale.dtype() == kFloat32 && output_scale.numel() == 1 && output_zero_point.dtype() == kInt32 &&
                  output_zero_point.numel() == 1,
              kFF, " output_scale / output_zero_point must be float32 / int32 tensors of one element");
  return QParams{output_scale.data_ptr<float>()[0], output_zero_point.data_ptr<int32_t>()[0]};
}

std::string FloatFunctionalImpl::extra_repr() const {
  std::ostringstream os;
  os << "mode=" << mode_name(mode_);
  if (!op_.empty()) os << ", op=" << op_;
  if (mode_ == Mode::Quantized) {
    const QParams out = output_qparams();
    os << ", output_scale=" << out.scale << ", output_zero_point=" << out.zero_point;
  }
  return os.str();
}

void FloatFunctionalImpl::take_state_of(const FloatFunctionalImpl& other) {
  clear_registrations();
  mode_ = other.mode_;
  op_ = other.op_;
  dim_ = other.dim_;
  config_ = other.config_;
  input_observers.clear();
  for (const auto& o : other.input_observers) input_observers.push_back(o->clone());
  output_observer = other.output_observer ? other.output_observer->clone() : nullptr;
  input_scales = input_zero_points = output_scale = output_zero_point = Tensor();
  if (mode_ == Mode::Quantized) {
    input_scales = register_buffer("input_scales", other.input_scales.clone());
    input_zero_points = register_buffer("input_zero_points", other.input_zero_points.clone());
    output_scale = register_buffer("output_scale", other.output_scale.clone());
    output_zero_point = register_buffer("output_zero_point", other.output_zero_point.clone());
  }
  train(other.is_training());
}

std::shared_ptr<nn::Module> FloatFunctionalImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<FloatFunctionalImpl>();
  copy->take_state_of(*this);
  return copy;
}

// A parent's clone (nn::Cloneable: reset() makes a float FloatFunctional, then each child
// becomes a copy of the original's) must carry the mode, the op and the observers, which are
// not tensors.
void FloatFunctionalImpl::assign_clone_of(const nn::Module& other) {
  if (const auto* ff = dynamic_cast<const FloatFunctionalImpl*>(&other)) {
    take_state_of(*ff);
    return;
  }
  nn::Module::assign_clone_of(other);
}

// ---- average pooling of codes ----

QuantizedAvgPool2dImpl::QuantizedAvgPool2dImpl(const nn::AvgPool2dOptions& o, int64_t zp)
    : Module("QuantizedAvgPool2d"), options(o), zero_point(zp) {}

Tensor QuantizedAvgPool2dImpl::forward(const Tensor& input) {
  if (input.defined() && input.dtype() == kUInt8) {
    return quantized_avg_pool2d(input, zero_point, options.kernel_size(), options.stride(), options.padding(),
                                options.ceil_mode(), options.count_include_pad(), options.divisor_override());
  }
  return avg_pool2d(input, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                    options.count_include_pad(), options.divisor_override());
}

std::string QuantizedAvgPool2dImpl::extra_repr() const {
  std::ostringstream os;
  os << "kernel_size=" << options.kernel_size() << ", stride="
     << (options.stride().empty() ? options.kernel_size() : options.stride()) << ", padding=" << options.padding()
     << ", zero_point=" << zero_point;
  return os.str();
}

std::shared_ptr<nn::Module> QuantizedAvgPool2dImpl::clone(const std::optional<Device>& /*device*/) const {
  return std::make_shared<QuantizedAvgPool2dImpl>(options, zero_point);
}

QuantizedAdaptiveAvgPool2dImpl::QuantizedAdaptiveAvgPool2dImpl(const nn::AdaptiveAvgPool2dOptions& o, int64_t zp)
    : Module("QuantizedAdaptiveAvgPool2d"), options(o), zero_point(zp) {}

Tensor QuantizedAdaptiveAvgPool2dImpl::forward(const Tensor& input) {
  if (input.defined() && input.dtype() == kUInt8) {
    return quantized_adaptive_avg_pool2d(input, zero_point, options.output_size());
  }
  return adaptive_avg_pool2d(input, options.output_size());
}

std::string QuantizedAdaptiveAvgPool2dImpl::extra_repr() const {
  std::ostringstream os;
  os << "output_size=" << options.output_size() << ", zero_point=" << zero_point;
  return os.str();
}

std::shared_ptr<nn::Module> QuantizedAdaptiveAvgPool2dImpl::clone(const std::optional<Device>& /*device*/) const {
  return std::make_shared<QuantizedAdaptiveAvgPool2dImpl>(options, zero_point);
}

}  // namespace ember::quant
