#pragma once
// Static post-training int8 quantization (eager mode, in the spirit of torch.ao.quantization's
// prepare -> calibrate -> convert) for Linear and Linear+ReLU; docs/quantization.md.
// Its own header, outside ember.h (which includes quant/quant.h), so that work on it does not
// rebuild everything.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ember/quant/quant.h"

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
class StaticQuantizedLinearImpl : public nn::Module {
 public:
  StaticQuantizedLinearImpl(const nn::LinearImpl& linear, QParams input_qparams, QParams output_qparams,
                            bool relu = false);
  // Empty, to load a state_dict into.
  StaticQuantizedLinearImpl(int64_t in_features, int64_t out_features, bool bias = true, bool relu = false);

  // input [..., in_features] float32 -> [..., out_features] float32 on the output grid.
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  bool relu() const { return relu_; }
  QParams input_qparams() const;
  QParams output_qparams() const;
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

// In place: every Linear in `model` becomes an ObservedLinear; a Linear directly followed by
// a ReLU in an nn::Sequential is fused with it (the ReLU becomes an nn::Identity). Returns the
// qualified names of the observed Linear layers. Put the model in eval() mode first (an
// error otherwise: calibration should see inference behaviour, e.g. of Dropout).
std::vector<std::string> prepare(nn::Module& model, const QConfig& config = {});

// In place: every ObservedLinear becomes a StaticQuantizedLinear with the parameters its
// observers computed. An error, before anything is replaced, when an observer has seen no
// data or when the model holds no ObservedLinear. Returns the names replaced.
std::vector<std::string> convert(nn::Module& model);

}  // namespace ember::quant
