#pragma once
// Dynamic int8 quantization, in the spirit of torch.quantization.quantize_dynamic.
//
//   auto model = nn::Sequential(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
//   ... train ...
//   model->eval();
//   quant::quantize_dynamic(*model, {quant::ModuleKind::Linear});  // in place
//   Tensor logits = model->forward(x);  // int8 GEMMs inside the Linear layers
//
// {quant::ModuleKind::LSTM} turns nn::LSTM layers into DynamicQuantizedLSTM the same way.
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
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/nn/module.h"
#include "ember/nn/modules/rnn.h"

namespace ember::nn {
class LinearImpl;
}

namespace ember::quant {
namespace detail {
class RowSumCache;
}

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
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;

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

// nn.LSTM with int8 weights, PyTorch's nn.quantized.dynamic.LSTM (Note [Dynamic
// quantization scheme] for every product): per layer and direction, the input projection
// of all time steps is one dynamic int8 product ([L*N, in] x W_ih^T, one activation grid for
// the whole sequence), then each step's hidden projection ([N, hidden] x W_hh^T, a grid per
// step) is another; the gates (sigmoid, tanh) and the cell state stay float32. forward is
// nn::LSTM's: forward(input, (h0, c0)) -> (output, (h_n, c_n)), same shapes, batch_first,
// bidirectional, stacked layers and unbatched [L, input_size] inputs. Inference only: no
// gradient, and dropout between layers is never applied. state_dict, per layer and
// direction (suffix _l0, _l0_reverse, ...): weight_ih (int8 [4*hidden, in]),
// weight_ih_scales (float32 [4*hidden]), weight_hh, weight_hh_scales and, with a bias,
// bias_ih and bias_hh (float32 [4*hidden]).
class DynamicQuantizedLSTMImpl : public nn::Module {
 public:
  using State = std::tuple<Tensor, Tensor>;
  // From a float LSTM (its weights as they are now).
  explicit DynamicQuantizedLSTMImpl(const nn::LSTMImpl& lstm);
  // Zero int8 weights of the given shape, to load a state_dict into.
  explicit DynamicQuantizedLSTMImpl(const nn::LSTMOptions& options);
  ~DynamicQuantizedLSTMImpl() override;

  // input [L, N, input_size] ([N, L, ...] with batch_first, or unbatched [L, input_size]),
  // float32; h0, c0 [num_layers * D, N, hidden] (zeros when absent; D = 2 if bidirectional).
  std::tuple<Tensor, State> forward(const Tensor& input, const std::optional<State>& hx = std::nullopt);
  std::tuple<Tensor, State> operator()(const Tensor& input, const std::optional<State>& hx = std::nullopt);
  bool _forward_has_default_args() override { return true; }
  unsigned int _forward_num_required_args() override { return 1; }
  std::vector<nn::AnyValue> _forward_populate_default_args(std::vector<nn::AnyValue>&& arguments) override;
  std::string extra_repr() const override;
  std::shared_ptr<nn::Module> clone(const std::optional<Device>& = std::nullopt) const override;

  nn::LSTMOptions options;
  // Per layer and direction, in PyTorch's order (l0, l0_reverse, l1, ...).
  struct Weights {
    Tensor weight_ih, weight_ih_scales, weight_hh, weight_hh_scales, bias_ih, bias_hh;
  };
  const std::vector<Weights>& weights() const { return weights_; }

 private:
  void register_weights();
  std::vector<Weights> weights_;
  // Row sums of each weight_ih / weight_hh (2 per entry of weights_), kept until the codes change.
  std::vector<std::shared_ptr<detail::RowSumCache>> sums_;
};

class DynamicQuantizedLSTM : public nn::ModuleHolder<DynamicQuantizedLSTMImpl> {
 public:
  using nn::ModuleHolder<DynamicQuantizedLSTMImpl>::ModuleHolder;
};

// Replaces, in place, every submodule of `model` whose kind is in `kinds` with its dynamic
// int8 counterpart (Linear -> DynamicQuantizedLinear, LSTM -> DynamicQuantizedLSTM) and
// returns the qualified names of the modules replaced. dtype must be kInt8 (PyTorch's
// torch.qint8). Submodules are swapped where they are registered (Sequential, ModuleList
// and ModuleDict follow); a custom module that calls a child through its own holder member
// (`fc1(x)`) keeps calling the float one — a warning names each such child. The model
// itself cannot be a Linear or an LSTM (quantize its parent, or construct the quantized
// module from it directly).
std::vector<std::string> quantize_dynamic(nn::Module& model, const std::set<ModuleKind>& kinds = {ModuleKind::Linear},
                                          DType dtype = kInt8);

// Bytes the model's state_dict holds (what a checkpoint of it stores, headers aside).
int64_t state_dict_bytes(const nn::Module& model);

}  // namespace ember::quant
