#pragma once
// Quantization-aware training (torch.ao.quantization's prepare_qat -> train -> convert), eager
// mode: fake-quantized Conv2d (+BatchNorm2d) (+ReLU) and Linear (+ReLU) layers that train in
// float32 while their weights and activations are rounded onto the int8 grids the converted
// model will use; docs/quantization.md.
//
//   model->train();
//   quant::prepare_qat(*model);               // fuse, add fake quantization
//   ... train a few epochs (optimizer over model->parameters(), as before) ...
//   model->eval();
//   quant::convert(*model);                   // the same int8 model as static quantization

#include <memory>
#include <string>
#include <vector>

#include "ember/quant/fake_quant.h"
#include "ember/quant/static_quant.h"

namespace ember::nn {
class BatchNorm2dImpl;
class LinearImpl;
}  // namespace ember::nn

namespace ember::quant {

// An observer and fake quantization of activations (torch.ao.quantization.FakeQuantize, per
// tensor, affine, codes 0..127). In training mode (with the observer enabled) forward first
// records x's range; then, once the observer has seen data and fake quantization is enabled,
// it returns fake_quantize_per_tensor_affine(x, scale, zero_point, 0, 127) with the observer's
// current parameters; otherwise x unchanged. Unlike torch's, the observer records nothing in
// eval mode, so evaluating a model does not move its ranges.
class FakeQuantizeImpl : public nn::Module {
 public:
  explicit FakeQuantizeImpl(const QConfig& config = {});
  explicit FakeQuantizeImpl(std::unique_ptr<Observer> observer);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;

  void enable_observer(bool on = true) { observe_ = on; }
  void enable_fake_quant(bool on = true) { fake_quant_ = on; }
  bool observer_enabled() const { return observe_; }
  bool fake_quant_enabled() const { return fake_quant_; }
  const Observer& observer() const { return *observer_; }
  QParams calculate_qparams() const { return observer_->calculate_qparams(); }

 private:
  std::unique_ptr<Observer> observer_;
  bool observe_ = true, fake_quant_ = true;
};

class FakeQuantize : public nn::ModuleHolder<FakeQuantizeImpl> {
 public:
  using nn::ModuleHolder<FakeQuantizeImpl>::ModuleHolder;
};

// Fake quantization of a weight [out, ...] with the scheme convert() uses (int8, symmetric,
// one scale per output channel, recomputed from the weight on every call:
// scale = max|w[n]| / 127.5, Note [Dynamic quantization scheme]); straight-through gradient.
Tensor fake_quantize_weight(const Tensor& weight);

// Linear (+ ReLU) for QAT: fake-quantized input, weight and output (torch.ao.nn.qat.Linear /
// intrinsic.qat.LinearReLU). Parameters are the Linear's own (linear.weight, linear.bias).
class QATLinearImpl : public nn::Module {
 public:
  QATLinearImpl(std::shared_ptr<nn::LinearImpl> linear, bool relu, const QConfig& config);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;
  // The int8 layer (convert() calls this).
  std::shared_ptr<StaticQuantizedLinearImpl> to_quantized() const;

  std::shared_ptr<nn::LinearImpl> linear;
  bool relu;
  std::shared_ptr<FakeQuantizeImpl> input_fake_quant, output_fake_quant;
};

// Conv2d (+ BatchNorm2d) (+ ReLU) for QAT (torch.ao.nn.intrinsic.qat.ConvBn2d / ConvBnReLU2d /
// ConvReLU2d). With a BatchNorm, the weight is scaled by gamma / sqrt(running_var + eps) before
// fake quantization (the weight convert() will fold), the convolution's output is scaled back,
// and the BatchNorm then runs as usual: batch statistics (updating the running ones) in training
// mode, until freeze_bn_stats(); the running ones in eval mode.
class QATConv2dImpl : public nn::Module {
 public:
  QATConv2dImpl(std::shared_ptr<nn::Conv2dImpl> conv, std::shared_ptr<nn::BatchNorm2dImpl> bn, bool relu,
                const QConfig& config);
  Tensor forward(const Tensor& input) override;
  void train(bool on = true) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;
  // Keeps the BatchNorm on its running statistics from now on (torch's freeze_bn_stats).
  void freeze_bn_stats(bool frozen = true);
  bool bn_frozen() const { return bn_frozen_; }
  // The int8 layer, the BatchNorm folded in with its running statistics (convert() calls this).
  std::shared_ptr<QuantizedConv2dImpl> to_quantized() const;

  std::shared_ptr<nn::Conv2dImpl> conv;
  std::shared_ptr<nn::BatchNorm2dImpl> bn;  // null without a BatchNorm
  bool relu;
  std::shared_ptr<FakeQuantizeImpl> input_fake_quant, output_fake_quant;

 private:
  std::vector<int64_t> padding_;
  bool bn_frozen_ = false;
};

// The default QAT configuration: moving-average min/max activation observers (torch's
// default QAT qconfig).
QConfig default_qat_qconfig();

// In place: every Conv2d becomes a QATConv2d and every Linear a QATLinear, with the fusions of
// prepare() (in an nn::Sequential: Conv2d + BatchNorm2d, then a ReLU; Linear + ReLU; the fused
// modules become nn::Identity), the BatchNorm kept training inside the QATConv2d. The model must
// be in training mode. The parameters stay the same tensors, so an optimizer made before still
// trains them. Returns the qualified names of the layers replaced.
std::vector<std::string> prepare_qat(nn::Module& model, const QConfig& config = default_qat_qconfig());

// freeze_bn_stats on every QATConv2d of model; returns how many.
int freeze_bn_stats(nn::Module& model);
// enable_observer(on) on every FakeQuantize of model (off: the activation ranges stop moving).
int enable_observer(nn::Module& model, bool on = true);

}  // namespace ember::quant
