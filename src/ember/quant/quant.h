#pragma once
// Dynamic int8 quantization, in the spirit of torch.quantization.quantize_dynamic.
//
//   auto model = nn::Sequential(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
//   ... train ...
//   model->eval();
//   quant::quantize_dynamic(*model, {quant::ModuleKind::Linear});  // in place
//   Tensor logits = model->forward(x);  // int8 GEMMs inside the Linear layers
//
// Note [Dynamic quantization scheme] (the one fbgemm uses for PyTorch's dynamic Linear, so
// the two agree closely on the same weights):
//   - weights: int8, symmetric, one scale per output row: scale[n] = max|w[n, :]| / 127.5
//     (at least FLT_EPSILON), q = clamp(round_half_even(w * (1 / scale[n])), -128, 127),
//     zero point 0; done once.
//   - activations: on every call, from the input's min and max (widened to include 0), an
//     affine uint8 scale and zero point over 0..127 (7 bits: Note [int8 GEMM] in
//     kernels/cpu/qgemm.h says why); q = clamp(round_half_even(x * (1 / scale)) + zp, 0, 127).
//   - y[m, n] = (acc[m, n] - zp * sum_k qw[n, k]) * (scale_x * scale[n]) + bias[n], where
//     acc is the exact int32 sum of qx * qw.
// Quantized modules are for inference: their outputs carry no gradient and they cannot be
// traced by jit::trace yet (trace the float model).

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/nn/module.h"

namespace ember::nn {
class LinearImpl;
}

namespace ember::quant {

// The layer kinds quantize_dynamic can replace.
enum class ModuleKind { Linear, LSTM };

// Affine quantization parameters: real = scale * (q - zero_point).
struct QParams {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

// The scale and zero point that map [min(lo, 0), max(hi, 0)] onto the integers qmin..qmax
// with 0.0 exactly representable (fbgemm's ChooseQuantizationParams without its options).
// lo, hi must be finite.
QParams choose_qparams(float lo, float hi, int32_t qmin, int32_t qmax);

// weight [N, K] (floating) -> int8 [N, K] and float32 scales [N] (symmetric per row; Note
// [Dynamic quantization scheme]). Scales are at least FLT_EPSILON (a row of zeros too).
struct PerChannelWeight {
  Tensor qweight;  // int8 [N, K]
  Tensor scales;   // float32 [N]
};
PerChannelWeight quantize_weight_per_channel(const Tensor& weight);

// Quantizes a float32 tensor to uint8 with the given parameters (any shape and strides;
// the result is contiguous): clamp(round_half_even(x * (1 / scale)) + zero_point, qmin, qmax).
Tensor quantize_per_tensor_uint8(const Tensor& x, QParams q, int32_t qmin, int32_t qmax);

// nn.Linear with int8 weights and activations quantized per call (Note [Dynamic
// quantization scheme]). state_dict: qweight (int8 [out, in]), scales (float32 [out]) and,
// with a bias, bias (float32 [out]); loading one recomputes what forward precomputes.
class DynamicQuantizedLinearImpl : public nn::Module {
 public:
  // From a float Linear (its weight and bias as they are now).
  explicit DynamicQuantizedLinearImpl(const nn::LinearImpl& linear);
  // Empty int8 weights of the given size, to load a state_dict into.
  DynamicQuantizedLinearImpl(int64_t in_features, int64_t out_features, bool bias = true);

  // input [..., in_features] float32 (any strides) -> [..., out_features] float32.
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone() const override;

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  // Lowest and highest activation code (0 and 127).
  static constexpr int32_t kActQMin = 0, kActQMax = 127;

  Tensor qweight, scales, bias;

 private:
  // sum_k qweight[n, k] (for the zero-point correction), recomputed when the weights change.
  std::shared_ptr<const std::vector<int32_t>> row_sums();
  int64_t in_features_ = 0, out_features_ = 0;
  std::mutex mu_;  // guards the three below: forward may run on several threads at once
  std::shared_ptr<const std::vector<int32_t>> row_sums_;
  uint32_t seen_version_ = UINT32_MAX;
  const void* seen_data_ = nullptr;
};

// The holder, as nn::Linear is for LinearImpl.
class DynamicQuantizedLinear : public nn::ModuleHolder<DynamicQuantizedLinearImpl> {
 public:
  using nn::ModuleHolder<DynamicQuantizedLinearImpl>::ModuleHolder;
};

// Replaces, in place, every submodule of `model` whose kind is in `kinds` with its dynamic
// int8 counterpart (Linear -> DynamicQuantizedLinear) and returns the qualified names of
// the modules replaced. dtype must be kInt8 (PyTorch's torch.qint8). LSTM is not
// quantized yet: asking for it with an LSTM in the model is an error. Submodules are swapped
// where they are registered (Sequential, ModuleList and ModuleDict follow); a custom module
// that calls a child through its own holder member (`fc1(x)`) keeps calling the float one —
// a warning names each such child. The model itself cannot be a Linear (quantize its parent,
// or construct DynamicQuantizedLinear from it directly).
std::vector<std::string> quantize_dynamic(nn::Module& model, const std::set<ModuleKind>& kinds = {ModuleKind::Linear},
                                          DType dtype = kInt8);

// ---------------------------------------------------------------------------------------
// Static post-training quantization (eager mode, in the spirit of torch.ao.quantization's
// prepare -> calibrate -> convert), for Linear and Linear+ReLU:
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
  std::shared_ptr<nn::Module> clone() const override;

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
  std::shared_ptr<nn::Module> clone() const override;

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

// Bytes the model's state_dict holds (what a checkpoint of it stores, headers aside).
int64_t state_dict_bytes(const nn::Module& model);

}  // namespace ember::quant
