// Quantization-aware training: FakeQuantize, QATLinear, QATConv2d, prepare_qat (qat.h).

#include "ember/quant/qat.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <sstream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/warning.h"
#include "ember/nn/modules/activation.h"
#include "ember/nn/modules/batchnorm.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/conv.h"
#include "ember/nn/modules/linear.h"
#include "ember/nn/modules/pooling.h"
#include "ember/ops/conv.h"
#include "ember/ops/creation.h"
#include "ember/ops/linalg.h"

namespace ember::quant {

namespace {

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// Numeric padding of a Conv2d (prepare_qat only takes convolutions convert() can quantize).
std::vector<int64_t> conv_padding(const nn::Conv2dOptions& o) {
  if (o.padding_str() == "valid") return {0, 0};
  if (o.padding_str() == "same") {
    return {o.dilation()[0] * (o.kernel_size()[0] - 1) / 2, o.dilation()[1] * (o.kernel_size()[1] - 1) / 2};
  }
  return {o.padding()[0], o.padding()[1]};
}

}  // namespace

// ---- FakeQuantize ----

FakeQuantizeImpl::FakeQuantizeImpl(const QConfig& config)
    : Module("FakeQuantize"), observer_(config.make_activation_observer()) {}

FakeQuantizeImpl::FakeQuantizeImpl(std::unique_ptr<Observer> observer)
    : Module("FakeQuantize"), observer_(std::move(observer)) {
  EMBER_CHECK(observer_ != nullptr, "[quant::FakeQuantize] needs an observer");
}

Tensor FakeQuantizeImpl::forward(const Tensor& input) {
  if (is_training() && observe_) observer_->observe(input);
  if (!fake_quant_ || !observer_->calibrated()) return input;
  const QParams q = observer_->calculate_qparams();
  return fake_quantize_per_tensor_affine(input, static_cast<double>(q.scale), q.zero_point, observer_->quant_min(),
                                         observer_->quant_max());
}

std::string FakeQuantizeImpl::extra_repr() const {
  std::ostringstream os;
  os << "fake_quant_enabled=" << (fake_quant_ ? "True" : "False")
     << ", observer_enabled=" << (observe_ ? "True" : "False") << ", quant_min=" << observer_->quant_min()
     << ", quant_max=" << observer_->quant_max() << ", observer=" << observer_->name();
  if (observer_->calibrated()) {
    const QParams q = observer_->calculate_qparams();
    os << ", scale=" << q.scale << ", zero_point=" << q.zero_point;
  }
  return os.str();
}

std::shared_ptr<nn::Module> FakeQuantizeImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<FakeQuantizeImpl>(observer_->clone());
  copy->observe_ = observe_;
  copy->fake_quant_ = fake_quant_;
  copy->train(is_training());
  return copy;
}

Tensor fake_quantize_weight(const Tensor& weight) {
  EMBER_CHECK(weight.defined() && weight.dtype() == kFloat32 && weight.dim() >= 1,
              "[quant::fake_quantize_weight] expects a float32 weight of sizes [out, ...], got ",
              weight.defined() ? ::ember::detail::str_cat(weight.dtype(), " of sizes ", weight.sizes())
                               : std::string("an undefined tensor"));
  const int64_t N = weight.size(0);
  const Tensor w = weight.detach().contiguous();
  const int64_t K = N > 0 ? w.numel() / N : 0;
  Tensor scales = empty({N}, TensorOptions(kFloat32));
  const float* src = w.data_ptr<float>();
  float* s = scales.data_ptr<float>();
  for (int64_t n = 0; n < N; ++n) {
    float amax = 0.0f;
    for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::abs(src[n * K + k]));
    EMBER_CHECK(std::isfinite(amax), "[quant::fake_quantize_weight] output channel ", n,
                " of the weight holds inf or NaN; int8 cannot represent it");
    s[n] = std::max(amax / 127.5f, FLT_EPSILON);  // quantize_weight_per_channel's scale
  }
  return fake_quantize_per_channel_affine(weight, scales, zeros({N}, TensorOptions(kInt32)), 0, -128, 127);
}

// ---- QATLinear ----

QATLinearImpl::QATLinearImpl(std::shared_ptr<nn::LinearImpl> lin, bool with_relu, const QConfig& config)
    : Module(with_relu ? "QATLinearReLU" : "QATLinear"),
      linear(std::move(lin)),
      relu(with_relu),
      input_fake_quant(std::make_shared<FakeQuantizeImpl>(config)),
      output_fake_quant(std::make_shared<FakeQuantizeImpl>(config)) {
  register_module("linear", linear);
  register_module("input_fake_quant", input_fake_quant);
  register_module("output_fake_quant", output_fake_quant);
  train(linear->is_training());
}

Tensor QATLinearImpl::forward(const Tensor& input) {
  const Tensor x = input_fake_quant->forward(input);
  Tensor y = ember::linear(x, fake_quantize_weight(linear->weight), linear->bias);
  if (relu) y = y.relu();
  return output_fake_quant->forward(y);
}

std::string QATLinearImpl::extra_repr() const {
  std::ostringstream os;
  os << "relu=" << (relu ? "True" : "False");
  return os.str();
}

std::shared_ptr<nn::Module> QATLinearImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<QATLinearImpl>(std::dynamic_pointer_cast<nn::LinearImpl>(linear->clone()), relu,
                                              QConfig{});
  copy->input_fake_quant = std::dynamic_pointer_cast<FakeQuantizeImpl>(input_fake_quant->clone());
  copy->output_fake_quant = std::dynamic_pointer_cast<FakeQuantizeImpl>(output_fake_quant->clone());
  copy->replace_module("input_fake_quant", copy->input_fake_quant);
  copy->replace_module("output_fake_quant", copy->output_fake_quant);
  copy->train(is_training());
  return copy;
}

std::shared_ptr<StaticQuantizedLinearImpl> QATLinearImpl::to_quantized() const {
  return std::make_shared<StaticQuantizedLinearImpl>(*linear, input_fake_quant->calculate_qparams(),
                                                     output_fake_quant->calculate_qparams(), relu);
}

// ---- QATConv2d ----

QATConv2dImpl::QATConv2dImpl(std::shared_ptr<nn::Conv2dImpl> c, std::shared_ptr<nn::BatchNorm2dImpl> b,
                             bool with_relu, const QConfig& config)
    : Module(b ? (with_relu ? "QATConvBnReLU2d" : "QATConvBn2d") : (with_relu ? "QATConvReLU2d" : "QATConv2d")),
      conv(std::move(c)),
      bn(std::move(b)),
      relu(with_relu),
      input_fake_quant(std::make_shared<FakeQuantizeImpl>(config)),
      output_fake_quant(std::make_shared<FakeQuantizeImpl>(config)),
      padding_(conv_padding(conv->options)) {
  EMBER_CHECK(conv->options.padding_mode() == "zeros", "[quant::QATConv2d] padding_mode '",
              conv->options.padding_mode(), "' has no int8 version (only 'zeros')");
  if (bn) {
    EMBER_CHECK(bn->options.num_features() == conv->options.out_channels(), "[quant::QATConv2d] the BatchNorm2d has ",
                bn->options.num_features(), " features but the Conv2d has ", conv->options.out_channels(),
                " output channels");
    EMBER_CHECK(bn->running_mean.defined() && bn->running_var.defined(), "[quant::QATConv2d] the BatchNorm2d keeps ",
                "no running statistics (track_running_stats=false); convert could not fold it");
  }
  register_module("conv", conv);
  if (bn) register_module("bn", bn);
  register_module("input_fake_quant", input_fake_quant);
  register_module("output_fake_quant", output_fake_quant);
  train(conv->is_training());
}

void QATConv2dImpl::train(bool on) {
  Module::train(on);
  if (bn && bn_frozen_) bn->train(false);
}

void QATConv2dImpl::freeze_bn_stats(bool frozen) {
  bn_frozen_ = frozen;
  if (bn) bn->train(frozen ? false : is_training());
}

Tensor QATConv2dImpl::forward(const Tensor& input) {
  const Tensor x = input_fake_quant->forward(input);
  const nn::Conv2dOptions& o = conv->options;
  Tensor y;
  if (!bn) {
    y = ember::conv2d(x, fake_quantize_weight(conv->weight), conv->bias, o.stride(), padding_, o.dilation(),
                      o.groups());
  } else {
    // torch's ConvBn2d: quantize the weight the BatchNorm will be folded into, undo the scale
    // after the convolution, and let the BatchNorm normalise as it does in float training.
    const int64_t oc = o.out_channels();
    const Tensor gamma = bn->weight.defined() ? bn->weight : ones({oc}, TensorOptions(kFloat32));
    const Tensor factor = gamma / (bn->running_var + bn->options.eps()).sqrt();
    const Tensor w = fake_quantize_weight(conv->weight * factor.reshape({oc, 1, 1, 1}));
    y = ember::conv2d(x, w, Tensor(), o.stride(), padding_, o.dilation(), o.groups());
    y = y / factor.reshape({1, oc, 1, 1});
    if (conv->bias.defined()) y = y + conv->bias.reshape({1, oc, 1, 1});
    y = bn->forward(y);
  }
  if (relu) y = y.relu();
  return output_fake_quant->forward(y);
}

std::string QATConv2dImpl::extra_repr() const {
  std::ostringstream os;
  os << "bn=" << (bn ? "True" : "False") << ", relu=" << (relu ? "True" : "False")
     << ", bn_frozen=" << (bn_frozen_ ? "True" : "False");
  return os.str();
}

std::shared_ptr<nn::Module> QATConv2dImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<QATConv2dImpl>(
      std::dynamic_pointer_cast<nn::Conv2dImpl>(conv->clone()),
      bn ? std::dynamic_pointer_cast<nn::BatchNorm2dImpl>(bn->clone()) : nullptr, relu, QConfig{});
  copy->input_fake_quant = std::dynamic_pointer_cast<FakeQuantizeImpl>(input_fake_quant->clone());
  copy->output_fake_quant = std::dynamic_pointer_cast<FakeQuantizeImpl>(output_fake_quant->clone());
  copy->replace_module("input_fake_quant", copy->input_fake_quant);
  copy->replace_module("output_fake_quant", copy->output_fake_quant);
  copy->bn_frozen_ = bn_frozen_;
  copy->train(is_training());
  return copy;
}

std::shared_ptr<QuantizedConv2dImpl> QATConv2dImpl::to_quantized() const {
  const std::shared_ptr<nn::Conv2dImpl> folded = bn ? fuse_conv_bn(*conv, *bn) : conv;
  return std::make_shared<QuantizedConv2dImpl>(*folded, input_fake_quant->calculate_qparams(),
                                               output_fake_quant->calculate_qparams(), relu);
}

// ---- prepare_qat ----

QConfig default_qat_qconfig() {
  QConfig c;
  c.activation = ObserverKind::MovingAverageMinMax;
  return c;
}

namespace {

std::shared_ptr<nn::Module> child_at(nn::Module& parent, const std::string& name) {
  return *parent.named_children().find(name);
}

struct QatWalk {
  const QConfig& config;
  std::vector<std::string> replaced;
  std::map<const nn::Module*, std::shared_ptr<nn::Module>> done;

  void visit(nn::Module& parent, const std::string& prefix) {
    const bool sequential = dynamic_cast<nn::SequentialImpl*>(&parent) != nullptr;
    const std::vector<std::string> names = parent.named_children().keys();
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string& name = names[i];
      std::shared_ptr<nn::Module> child = child_at(parent, name);
      if (auto it = done.find(child.get()); it != done.end()) {
        parent.replace_module(name, it->second);
        continue;
      }
      if (auto* ff = dynamic_cast<FloatFunctionalImpl*>(child.get())) {
        ff->start_observing(config);  // observed, not fake-quantized (Note [FloatFunctional])
        replaced.push_back(join(prefix, name));
        continue;
      }
      if (dynamic_cast<QATConv2dImpl*>(child.get()) || dynamic_cast<QATLinearImpl*>(child.get()) ||
          dynamic_cast<ObservedConv2dImpl*>(child.get()) || dynamic_cast<ObservedLinearImpl*>(child.get()) ||
          dynamic_cast<QuantizedConv2dImpl*>(child.get()) || dynamic_cast<StaticQuantizedLinearImpl*>(child.get())) {
        EMBER_ERROR("[quant::prepare_qat] '", join(prefix, name), "' (", child->name(),
                    ") is already prepared or converted; call quant::prepare_qat once, on the float model");
      }
      auto next = [&](size_t k) -> std::shared_ptr<nn::Module> {
        return sequential && k < names.size() ? child_at(parent, names[k]) : nullptr;
      };
      std::shared_ptr<nn::Module> replacement;
      size_t last = i;
      if (auto lin = std::dynamic_pointer_cast<nn::LinearImpl>(child)) {
        const bool relu = dynamic_cast<nn::ReLUImpl*>(next(i + 1).get()) != nullptr;
        if (relu) last = i + 1;
        replacement = std::make_shared<QATLinearImpl>(lin, relu, config);
      } else if (auto conv = std::dynamic_pointer_cast<nn::Conv2dImpl>(child)) {
        const nn::Conv2dOptions& o = conv->options;
        bool uneven = false;
        if (o.padding_str() == "same") {
          for (size_t d = 0; d < 2; ++d) uneven |= (o.dilation()[d] * (o.kernel_size()[d] - 1)) % 2 != 0;
        }
        if (o.padding_mode() != "zeros" || uneven) {
          warn("[quant::prepare_qat] '" + join(prefix, name) + "' (Conv2d) stays float32: " +
               (uneven ? std::string("its padding='same' pads unevenly")
                       : "its padding_mode is '" + o.padding_mode() + "' (only 'zeros' has an int8 version)"));
          continue;
        }
        auto bn = std::dynamic_pointer_cast<nn::BatchNorm2dImpl>(next(i + 1));
        if (bn) last = i + 1;
        const bool relu = dynamic_cast<nn::ReLUImpl*>(next(last + 1).get()) != nullptr;
        if (relu) ++last;
        replacement = std::make_shared<QATConv2dImpl>(conv, bn, relu, config);
      } else {
        visit(*child, join(prefix, name));
        continue;
      }
      parent.replace_module(name, replacement);
      done.emplace(child.get(), replacement);
      replaced.push_back(join(prefix, name));
      for (size_t k = i + 1; k <= last; ++k) parent.replace_module(names[k], std::make_shared<nn::IdentityImpl>());
      i = last;
    }
  }
};

// Note [One grid per activation]: an activation that a QAT layer's output fake quantization has
// put on its grid, and that reaches the next QAT layer through nothing but Identity, MaxPool2d
// and Flatten (which keep values on the grid), is not fake-quantized again at that layer's input:
// convert() will hand the producer's codes to the consumer on the producer's grid (Note
// [Activation codes]), and training must see the same values. The consumer's input observer
// keeps recording (convert needs it calibrated) but its grid is not used.
void share_grids(nn::Module& parent) {
  if (dynamic_cast<nn::SequentialImpl*>(&parent) == nullptr) {
    for (const auto& c : parent.children()) share_grids(*c);
    return;
  }
  bool after_producer = false;
  for (const auto& child : parent.children()) {
    FakeQuantizeImpl* input_fq = nullptr;
    if (auto* c = dynamic_cast<QATConv2dImpl*>(child.get())) input_fq = c->input_fake_quant.get();
    if (auto* l = dynamic_cast<QATLinearImpl*>(child.get())) input_fq = l->input_fake_quant.get();
    if (input_fq != nullptr) {
      if (after_producer) input_fq->enable_fake_quant(false);
      after_producer = true;
    } else if (!dynamic_cast<nn::IdentityImpl*>(child.get()) && !dynamic_cast<nn::MaxPool2dImpl*>(child.get()) &&
               !dynamic_cast<nn::FlattenImpl*>(child.get()) && !dynamic_cast<nn::AvgPool2dImpl*>(child.get()) &&
               !dynamic_cast<nn::AdaptiveAvgPool2dImpl*>(child.get())) {
      after_producer = false;
      share_grids(*child);
    }
  }
}

}  // namespace

std::vector<std::string> prepare_qat(nn::Module& model, const QConfig& config) {
  EMBER_CHECK(dynamic_cast<nn::LinearImpl*>(&model) == nullptr && dynamic_cast<nn::Conv2dImpl*>(&model) == nullptr,
              "[quant::prepare_qat] the model itself is a ", model.name(),
              " and cannot be replaced in place; wrap it in an nn::Sequential");
  EMBER_CHECK(model.is_training(), "[quant::prepare_qat] the model is in eval mode; call model->train() first ",
              "(quantization-aware training fine-tunes it; for post-training quantization use quant::prepare)");
  (void)config.make_activation_observer();
  QatWalk walk{config, {}, {}};
  walk.visit(model, "");
  share_grids(model);
  if (walk.replaced.empty()) {
    warn("[quant::prepare_qat] the model holds no nn::Linear or nn::Conv2d; nothing will be quantized");
  }
  return walk.replaced;
}

int freeze_bn_stats(nn::Module& model) {
  int n = 0;
  model.apply([&](nn::Module& m) {
    if (auto* q = dynamic_cast<QATConv2dImpl*>(&m); q != nullptr && q->bn) {
      q->freeze_bn_stats(true);
      ++n;
    }
  });
  return n;
}

int enable_observer(nn::Module& model, bool on) {
  int n = 0;
  model.apply([&](nn::Module& m) {
    if (auto* f = dynamic_cast<FakeQuantizeImpl*>(&m)) {
      f->enable_observer(on);
      ++n;
    }
  });
  return n;
}

}  // namespace ember::quant
