#pragma once
// Static post-training int8 quantization (eager mode, in the spirit of torch.ao.quantization's
// prepare -> calibrate -> convert) for Conv2d (+BatchNorm2d) (+ReLU), Linear (+ReLU) and the
// MaxPool2d / Flatten between them; docs/quantization.md.
// Its own header, outside ember.h (which includes quant/quant.h), so that work on it does not
// rebuild everything.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/modules/conv.h"
#include "ember/nn/modules/pooling.h"
#include "ember/quant/quant.h"

namespace ember::nn {
class Conv2dImpl;
class BatchNorm2dImpl;
}  // namespace ember::nn

namespace ember::quant {

// Usage:
//
//   model->eval();
//   quant::prepare(*model);                       // observers around every Linear
//   for (auto& batch : calibration) model->forward(batch.data);   // calibration
//   quant::convert(*model);                       // Linear -> StaticQuantizedLinear
//
// Note [Static quantization scheme]:
//   - weights: as in Note [Dynamic quantization scheme] (int8, symmetric per output row,
//     scale = max|w[n, :]| / 127.5: torch's PerChannelMinMaxObserver, qint8,
//     per_channel_symmetric).
//   - activations: quint8, affine, per tensor, over 0..127 (torch's reduce_range=True, which
//     its x86 default qconfig uses; the 7 bits of Note [int8 GEMM]). The observers compute
//     scale and zero point as torch 1.13's observers do (_calculate_qparams):
//       lo = min(min_val, 0), hi = max(max_val, 0), scale = max((hi - lo) / (qmax - qmin), eps),
//       zero_point = clamp(qmin - round_half_even(lo / scale), qmin, qmax)   (float32 math;
//     eps = FLT_EPSILON).
//   - A converted Linear quantizes its float input with the calibrated input parameters
//     (values outside the calibrated range clamp; no range pass per call), runs the int8
//     GEMM, dequantizes, applies the fused ReLU, and rounds its output onto the calibrated
//     output grid (quantize + dequantize with the output parameters, as torch's quantized
//     Linear produces a quint8 output with them). Between layers the values travel as float32
//     (already on the int8 grid), so the model's input and output stay float: no QuantStub /
//     DeQuantStub are needed.

// Observer: records the range of the tensors it sees and turns it into QParams.
class Observer {
 public:
  virtual ~Observer() = default;
  // Updates the statistics with x (float32, any shape; inf/NaN is an error).
  virtual void observe(const Tensor& x) = 0;
  // The quantization parameters for quint8 codes qmin..qmax; an error before any observe().
  virtual QParams calculate_qparams() const = 0;
  // The range the parameters are computed from (before widening to hold 0).
  virtual std::pair<float, float> range() const = 0;
  // A copy, statistics included.
  virtual std::unique_ptr<Observer> clone() const = 0;
  virtual std::string name() const = 0;
  bool calibrated() const { return count_ > 0; }
  int64_t batches_seen() const { return count_; }
  int32_t quant_min() const { return qmin_; }
  int32_t quant_max() const { return qmax_; }

 protected:
  Observer(int32_t qmin, int32_t qmax);
  // torch 1.13's affine per-tensor formula (Note [Static quantization scheme]).
  QParams qparams_from(float lo, float hi) const;
  void check_calibrated() const;
  int64_t count_ = 0;
  int32_t qmin_, qmax_;
};

// The smallest and largest value ever seen (torch.ao.quantization.MinMaxObserver).
class MinMaxObserver : public Observer {
 public:
  explicit MinMaxObserver(int32_t quant_min = 0, int32_t quant_max = 127) : Observer(quant_min, quant_max) {}
  void observe(const Tensor& x) override;
  QParams calculate_qparams() const override;
  std::pair<float, float> range() const override { return {min_, max_}; }
  std::unique_ptr<Observer> clone() const override;
  std::string name() const override { return "MinMaxObserver"; }

 private:
  float min_ = 0.0f, max_ = 0.0f;
};

// Exponential moving average of each batch's min and max
// (torch.ao.quantization.MovingAverageMinMaxObserver): the first batch sets them, later ones
// move them by min += c * (batch_min - min) (float32), c = averaging_constant.
class MovingAverageMinMaxObserver : public Observer {
 public:
  explicit MovingAverageMinMaxObserver(float averaging_constant = 0.01f, int32_t quant_min = 0,
                                       int32_t quant_max = 127);
  void observe(const Tensor& x) override;
  QParams calculate_qparams() const override;
  std::pair<float, float> range() const override { return {min_, max_}; }
  std::unique_ptr<Observer> clone() const override;
  std::string name() const override { return "MovingAverageMinMaxObserver"; }
  float averaging_constant() const { return c_; }

 private:
  float c_, min_ = 0.0f, max_ = 0.0f;
};

// Clips outliers: the range is the [100 - percentile, percentile] percentiles of every
// value seen, read from a histogram of `bins` bins over [-R, R] (R doubles, merging bins
// pairwise, when a value falls outside, so the result does not depend on how the data is
// split into batches); the percentile is located at the upper edge of its bin. Not a torch
// observer (torch's HistogramObserver minimizes the quantization error instead).
class PercentileObserver : public Observer {
 public:
  explicit PercentileObserver(double percentile = 99.99, int64_t bins = 2048, int32_t quant_min = 0,
                              int32_t quant_max = 127);
  void observe(const Tensor& x) override;
  QParams calculate_qparams() const override;
  std::pair<float, float> range() const override;
  std::unique_ptr<Observer> clone() const override;
  std::string name() const override { return "PercentileObserver"; }

 private:
  double percentile_;
  int64_t bins_;
  double radius_ = 0.0;  // 0 until the first non-zero value
  std::vector<int64_t> hist_;
  float min_ = 0.0f, max_ = 0.0f;
};

enum class ObserverKind { MinMax, MovingAverageMinMax, Percentile };

// What prepare() puts on activations (weights are always per-channel symmetric min/max).
struct QConfig {
  ObserverKind activation = ObserverKind::MinMax;
  float averaging_constant = 0.01f;  // MovingAverageMinMax
  double percentile = 99.99;         // Percentile
  std::unique_ptr<Observer> make_activation_observer() const;
};

namespace detail {
struct PackedConv;
}

// What convert() links: a converted layer that can hand its output to the next one as uint8
// codes (Note [Activation codes], quant/quantized_ops.h) instead of float32 values.
class QuantizedLayer {
 public:
  virtual ~QuantizedLayer() = default;
  virtual QParams input_qparams() const = 0;
  virtual QParams output_qparams() const = 0;
  // The input grid (convert() sets it to the producing layer's output grid).
  virtual void set_input_qparams(QParams q) = 0;
  // When true, forward returns uint8 codes on the output grid (what the next quantized layer
  // reads without a float pass); when false (the default), their float32 values.
  bool output_codes = false;
};

// A Linear (and the ReLU fused into it) with observers on its input and output; what
// prepare() puts in the model. Forward is the float Linear's (+ ReLU), recording ranges.
class ObservedLinearImpl : public nn::Module {
 public:
  ObservedLinearImpl(std::shared_ptr<nn::LinearImpl> linear, bool relu, const QConfig& config);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;

  std::shared_ptr<nn::LinearImpl> linear;
  bool relu;
  std::unique_ptr<Observer> input_observer, output_observer;
};

// nn.Linear (+ ReLU) with int8 weights and activations quantized with calibrated, fixed
// parameters (Note [Static quantization scheme]). state_dict: qweight, scales, bias (as
// DynamicQuantizedLinear), input_scale, output_scale (float32 [1]), input_zero_point,
// output_zero_point (int32 [1]).
class StaticQuantizedLinearImpl : public nn::Module, public QuantizedLayer {
 public:
  StaticQuantizedLinearImpl(const nn::LinearImpl& linear, QParams input_qparams, QParams output_qparams,
                            bool relu = false);
  // Empty, to load a state_dict into.
  StaticQuantizedLinearImpl(int64_t in_features, int64_t out_features, bool bias = true, bool relu = false);

  // input [..., in_features] float32 values or uint8 codes on the input grid -> [...,
  // out_features] float32 values on the output grid (uint8 codes with output_codes).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  bool relu() const { return relu_; }
  QParams input_qparams() const override;
  QParams output_qparams() const override;
  void set_input_qparams(QParams q) override;
  static constexpr int32_t kActQMin = 0, kActQMax = 127;

  Tensor qweight, scales, bias, input_scale, input_zero_point, output_scale, output_zero_point;

 private:
  std::shared_ptr<const std::vector<int32_t>> row_sums();
  int64_t in_features_ = 0, out_features_ = 0;
  bool relu_ = false;
  std::mutex mu_;
  std::shared_ptr<const std::vector<int32_t>> row_sums_;
  uint32_t seen_version_ = UINT32_MAX;
  const void* seen_data_ = nullptr;
};

class StaticQuantizedLinear : public nn::ModuleHolder<StaticQuantizedLinearImpl> {
 public:
  using nn::ModuleHolder<StaticQuantizedLinearImpl>::ModuleHolder;
};

// A Conv2d (BatchNorm already folded into it) and the ReLU fused into it, with observers on
// its input and output; what prepare() puts in the model.
class ObservedConv2dImpl : public nn::Module {
 public:
  ObservedConv2dImpl(std::shared_ptr<nn::Conv2dImpl> conv, bool relu, const QConfig& config);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;

  std::shared_ptr<nn::Conv2dImpl> conv;
  bool relu;
  std::unique_ptr<Observer> input_observer, output_observer;
};

// nn.Conv2d (+ ReLU) with int8 weights (per output channel, symmetric) and activations on
// calibrated grids (torch.ao.nn.quantized.Conv2d / intrinsic ConvReLU2d; Note [Quantized
// convolution] in quantized_ops.cpp). Zero padding only. state_dict: qweight (int8 [out, in /
// groups, kH, kW]), scales (float32 [out]), bias (float32 [out], when the conv has one),
// input_scale, output_scale (float32 [1]), input_zero_point, output_zero_point (int32 [1]).
class QuantizedConv2dImpl : public nn::Module, public QuantizedLayer {
 public:
  QuantizedConv2dImpl(const nn::Conv2dImpl& conv, QParams input_qparams, QParams output_qparams, bool relu = false);
  // Empty weights of the shape the options give, to load a state_dict into.
  explicit QuantizedConv2dImpl(const nn::Conv2dOptions& options, bool relu = false);

  // input [N, C, H, W] (or [C, H, W]) float32 values or uint8 codes on the input grid ->
  // float32 values on the output grid (uint8 codes, channels-last, with output_codes).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;

  const nn::Conv2dOptions& options() const { return options_; }
  bool relu() const { return relu_; }
  // Numeric padding ("same" and "valid" resolved).
  const std::vector<int64_t>& padding() const { return padding_; }
  QParams input_qparams() const override;
  QParams output_qparams() const override;
  void set_input_qparams(QParams q) override;

  Tensor qweight, scales, bias, input_scale, input_zero_point, output_scale, output_zero_point;

 private:
  std::shared_ptr<const detail::PackedConv> packed();
  nn::Conv2dOptions options_;
  std::vector<int64_t> padding_;
  bool relu_ = false;
  std::mutex mu_;
  std::shared_ptr<const detail::PackedConv> packed_;
  uint32_t seen_version_ = UINT32_MAX;
  const void* seen_data_ = nullptr;
};

class QuantizedConv2d : public nn::ModuleHolder<QuantizedConv2dImpl> {
 public:
  using nn::ModuleHolder<QuantizedConv2dImpl>::ModuleHolder;
};

// nn.MaxPool2d that takes uint8 codes (quant::quantized_max_pool2d, the output on the input's
// grid) as well as float tensors (ember::max_pool2d); convert() puts it between quantized layers.
class QuantizedMaxPool2dImpl : public nn::Module {
 public:
  explicit QuantizedMaxPool2dImpl(const nn::MaxPool2dOptions& options);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;
  nn::MaxPool2dOptions options;
};

class QuantizedMaxPool2d : public nn::ModuleHolder<QuantizedMaxPool2dImpl> {
 public:
  using nn::ModuleHolder<QuantizedMaxPool2dImpl>::ModuleHolder;
};

// nn.AvgPool2d / nn.AdaptiveAvgPool2d that take uint8 codes (quant::quantized_avg_pool2d /
// quantized_adaptive_avg_pool2d: the output on the input's grid, zero_point being that grid's)
// as well as float tensors (ember::avg_pool2d / adaptive_avg_pool2d); convert() puts them
// between quantized layers with the producer's zero point.
class QuantizedAvgPool2dImpl : public nn::Module {
 public:
  QuantizedAvgPool2dImpl(const nn::AvgPool2dOptions& options, int64_t zero_point);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;
  nn::AvgPool2dOptions options;
  int64_t zero_point;
};

class QuantizedAvgPool2d : public nn::ModuleHolder<QuantizedAvgPool2dImpl> {
 public:
  using nn::ModuleHolder<QuantizedAvgPool2dImpl>::ModuleHolder;
};

class QuantizedAdaptiveAvgPool2dImpl : public nn::Module {
 public:
  QuantizedAdaptiveAvgPool2dImpl(const nn::AdaptiveAvgPool2dOptions& options, int64_t zero_point);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;
  nn::AdaptiveAvgPool2dOptions options;
  int64_t zero_point;
};

class QuantizedAdaptiveAvgPool2d : public nn::ModuleHolder<QuantizedAdaptiveAvgPool2dImpl> {
 public:
  using nn::ModuleHolder<QuantizedAdaptiveAvgPool2dImpl>::ModuleHolder;
};

// The additions and concatenations of a custom module's forward, made quantizable
// (torch.ao.nn.quantized.FloatFunctional; Note [FloatFunctional]). Register one per call site
// and call it instead of the float op:
//
//   struct BlockImpl : nn::Module {
//     BlockImpl() { body = register_module("body", nn::Sequential(...)); skip = register_module("skip", quant::FloatFunctional()); }
//     Tensor forward(const Tensor& x) override { return skip->add_relu(body->forward(x), x); }
//     nn::Sequential body;
//     quant::FloatFunctional skip;
//   };
//
// Note [FloatFunctional]: it changes state in place (so that the parent's holder member stays
// valid): float (plain ember::add / relu / cat) -> observing after quant::prepare or prepare_qat
// (the float result, with an observer on each input and on the output) -> quantized after
// quant::convert (quant::quantized_add / quantized_cat on the calibrated grids, returning float32
// values on the output grid, or the same for uint8 code inputs on the input grids). Each input's
// grid is the one its observer computed; an input that comes straight from a quantized layer was
// observed on the same values as that layer's output observer, so the two grids are the same and
// re-quantizing its output recovers its codes exactly. One instance serves one call site: calls
// from several places would mix their ranges (and a call with a different number of inputs, or
// another op, is an error once observed). state_dict after convert: input_scales (float32 [k]),
// input_zero_points (int32 [k]), output_scale (float32 [1]), output_zero_point (int32 [1]).
class FloatFunctionalImpl : public nn::Module {
 public:
  enum class Mode { Float, Observing, Quantized };
  FloatFunctionalImpl();

  // a + b (broadcasting), (a + b).relu(), cat(inputs, dim).
  Tensor add(const Tensor& a, const Tensor& b);
  Tensor add_relu(const Tensor& a, const Tensor& b);
  Tensor cat(const std::vector<Tensor>& inputs, int64_t dim = 0);
  // An error: the op is chosen by calling add, add_relu or cat.
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;

  Mode mode() const { return mode_; }
  // The op seen while observing ("add", "add_relu", "cat"; "" before any call).
  const std::string& observed_op() const { return op_; }
  // prepare / prepare_qat: float -> observing (an error in any other mode).
  void start_observing(const QConfig& config);
  // Whether every observer has seen data (false before any observed call).
  bool calibrated() const;
  // convert: observing -> quantized with the observers' grids (an error when not calibrated).
  void convert_to_quantized();
  QParams input_qparams(size_t i) const;
  QParams output_qparams() const;

  std::vector<std::unique_ptr<Observer>> input_observers;
  std::unique_ptr<Observer> output_observer;
  Tensor input_scales, input_zero_points, output_scale, output_zero_point;

 protected:
  void assign_clone_of(const nn::Module& other) override;

 private:
  void take_state_of(const FloatFunctionalImpl& other);
  Tensor run(const std::string& op, const std::vector<Tensor>& inputs, int64_t dim);
  Mode mode_ = Mode::Float;
  std::string op_;
  int64_t dim_ = 0;
  QConfig config_;
};

class FloatFunctional : public nn::ModuleHolder<FloatFunctionalImpl> {
 public:
  using nn::ModuleHolder<FloatFunctionalImpl>::ModuleHolder;
};

// A Conv2d followed by a BatchNorm2d in eval mode, as one Conv2d (torch's fuse_conv_bn_eval):
// w' = w * (gamma / sqrt(running_var + eps)) per output channel,
// b' = (b - running_mean) * gamma / sqrt(running_var + eps) + beta. The inputs are not changed.
std::shared_ptr<nn::Conv2dImpl> fuse_conv_bn(const nn::Conv2dImpl& conv, const nn::BatchNorm2dImpl& bn);

// In place, in every nn::Sequential of model: a Conv2d directly followed by a BatchNorm2d
// becomes their fused Conv2d, the BatchNorm an nn::Identity (torch.ao.quantization.fuse_modules
// for conv+bn; prepare() does it itself). Returns the names of the fused Conv2d layers. The
// model must be in eval mode (the running statistics are folded).
std::vector<std::string> fuse_modules(nn::Module& model);

// In place: every Conv2d in `model` becomes an ObservedConv2d and every Linear an
// ObservedLinear. In an nn::Sequential, a Conv2d directly followed by a BatchNorm2d is fused
// with it first (fuse_conv_bn), and a ReLU directly after a Conv2d (or its BatchNorm2d) or a
// Linear is fused into it; the fused modules become nn::Identity. Returns the qualified names of
// the observed layers. Put the model in eval() mode first (an error otherwise: calibration
// should see inference behaviour, e.g. of Dropout and BatchNorm). A Conv2d whose padding_mode
// is not "zeros", or whose "same" padding is uneven, stays float (with a warning).
std::vector<std::string> prepare(nn::Module& model, const QConfig& config = {});

// In place: every ObservedConv2d becomes a QuantizedConv2d and every ObservedLinear a
// StaticQuantizedLinear, with the parameters their observers computed (QAT modules too:
// quant/qat.h). Then, in each nn::Sequential, a converted layer followed (through nothing but
// nn::Identity, nn::MaxPool2d and nn::Flatten) by another hands it uint8 codes: its
// output_codes is set, the consumer's input grid becomes its output grid, and the MaxPool2d
// layers between them become QuantizedMaxPool2d. An error, before anything is replaced, when
// an observer has seen no data or when the model holds nothing to convert. Returns the
// names of the converted layers.
std::vector<std::string> convert(nn::Module& model);

}  // namespace ember::quant
