#pragma once
// Recurrent layers as torch.nn: RNN (tanh/relu), LSTM, GRU and their one-step cells.
// Parameter names, gate order, shapes and init follow PyTorch, so state_dicts load
// across. Built from differentiable ember ops: autograd needs no extra formulas.
//
//   nn::LSTM lstm(nn::LSTMOptions(32, 64).num_layers(2).batch_first(true));
//   auto [out, state] = lstm->forward(x);            // x: [N, L, 32] -> out: [N, L, 64]
//   auto [h_n, c_n] = state;                          // each [2, N, 64]

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

// Options shared by RNN, LSTM and GRU (setters return the derived options type).
template <typename Self>
struct RNNOptionsCommon {
  RNNOptionsCommon(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  // Stacked layers; layer k > 0 reads the output of layer k - 1.
  Self& num_layers(int64_t v) { return set(num_layers_, v); }
  // With false, no bias_ih / bias_hh parameters.
  Self& bias(bool v) { return set(bias_, v); }
  // Input and output as [N, L, features] instead of [L, N, features] (h_n stays [layers*D, N, H]).
  Self& batch_first(bool v) { return set(batch_first_, v); }
  // Dropout probability on the outputs of every layer but the last (training only).
  Self& dropout(double v) { return set(dropout_, v); }
  // A second direction reading the sequence backwards; outputs concatenate to 2 * hidden.
  Self& bidirectional(bool v) { return set(bidirectional_, v); }
  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }
  int64_t num_layers() const { return num_layers_; }
  bool bias() const { return bias_; }
  bool batch_first() const { return batch_first_; }
  double dropout() const { return dropout_; }
  bool bidirectional() const { return bidirectional_; }

 private:
  template <typename T>
  Self& set(T& field, T v) {
    field = v;
    return static_cast<Self&>(*this);
  }
  int64_t input_size_, hidden_size_;
  int64_t num_layers_ = 1;
  bool bias_ = true, batch_first_ = false;
  double dropout_ = 0.0;
  bool bidirectional_ = false;
};

struct RNNOptions : RNNOptionsCommon<RNNOptions> {
  using RNNOptionsCommon::RNNOptionsCommon;
  // "tanh" (default) or "relu".
  RNNOptions& nonlinearity(std::string v) {
    nonlinearity_ = std::move(v);
    return *this;
  }
  const std::string& nonlinearity() const { return nonlinearity_; }

 private:
  std::string nonlinearity_ = "tanh";
};
struct LSTMOptions : RNNOptionsCommon<LSTMOptions> {
  using RNNOptionsCommon::RNNOptionsCommon;
};
struct GRUOptions : RNNOptionsCommon<GRUOptions> {
  using RNNOptionsCommon::RNNOptionsCommon;
};

namespace detail {
enum class RNNMode { RNN_TANH, RNN_RELU, LSTM, GRU };

// The plain settings the shared implementation reads (built from any options type).
struct RNNConfig {
  RNNMode mode;
  int64_t input_size, hidden_size, num_layers;
  bool bias, batch_first;
  double dropout;
  bool bidirectional;
};

// Base of RNNImpl / LSTMImpl / GRUImpl: parameters and the sequence loop.
class RNNBase : public Module {
 public:
  // Parameters in PyTorch's order (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0,
  // then the _reverse ones, then layer 1 ...); PyTorch's `all_weights` flattened.
  const std::vector<Tensor>& flat_weights() const { return flat_weights_; }
  // Draws every parameter from U(-1/sqrt(hidden), 1/sqrt(hidden)), as PyTorch.
  void reset_parameters();
  std::string extra_repr() const override;

 protected:
  RNNBase(std::string name, const RNNConfig& config);
  void reset_flat_weights();
  // Runs all layers; c0 is used (and c_n returned) by LSTM only. Undefined h0/c0 mean zeros.
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, const Tensor& h0, const Tensor& c0, const char* op);

  RNNConfig config_;
  std::vector<Tensor> flat_weights_;
};
}  // namespace detail

// Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act = tanh or relu.
// forward(input, h0) returns (output, h_n):
//   input [L, N, input_size] ([N, L, ...] with batch_first, or unbatched [L, input_size]),
//   h0 [num_layers * D, N, hidden] (zeros when undefined; D = 2 if bidirectional),
//   output [L, N, D * hidden] (the last layer's h_t for every t), h_n like h0.
class RNNImpl : public detail::RNNBase {
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& options);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& h0 = {});
  std::tuple<Tensor, Tensor> operator()(const Tensor& input, const Tensor& h0 = {});
  // The hidden state may be left out when run through AnyModule / Sequential (libtorch's
  // FORWARD_HAS_DEFAULT_ARGS; defined in rnn.cpp to keep AnyValue out of this header).
  bool _forward_has_default_args() override { return true; }
  unsigned int _forward_num_required_args() override { return 1; }
  std::vector<AnyValue> _forward_populate_default_args(std::vector<AnyValue>&& arguments) override;
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;
  RNNOptions options;
};
EMBER_MODULE(RNN);

// LSTM with PyTorch's gate order (i, f, g, o) in weight_ih [4*hidden, in] etc.
// forward(input, (h0, c0)) returns (output, (h_n, c_n)); shapes as RNN, c like h.
class LSTMImpl : public detail::RNNBase {
 public:
  using State = std::tuple<Tensor, Tensor>;
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options);
  std::tuple<Tensor, State> forward(const Tensor& input, const std::optional<State>& hx = std::nullopt);
  std::tuple<Tensor, State> operator()(const Tensor& input, const std::optional<State>& hx = std::nullopt);
  // The hidden state may be left out when run through AnyModule / Sequential (libtorch's
  // FORWARD_HAS_DEFAULT_ARGS; defined in rnn.cpp to keep AnyValue out of this header).
  bool _forward_has_default_args() override { return true; }
  unsigned int _forward_num_required_args() override { return 1; }
  std::vector<AnyValue> _forward_populate_default_args(std::vector<AnyValue>&& arguments) override;
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;
  LSTMOptions options;
};
EMBER_MODULE(LSTM);

// GRU with PyTorch's gate order (r, z, n): n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),
// h' = (1 - z) * n + z * h. forward(input, h0) returns (output, h_n), shapes as RNN.
class GRUImpl : public detail::RNNBase {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& h0 = {});
  std::tuple<Tensor, Tensor> operator()(const Tensor& input, const Tensor& h0 = {});
  // The hidden state may be left out when run through AnyModule / Sequential (libtorch's
  // FORWARD_HAS_DEFAULT_ARGS; defined in rnn.cpp to keep AnyValue out of this header).
  bool _forward_has_default_args() override { return true; }
  unsigned int _forward_num_required_args() override { return 1; }
  std::vector<AnyValue> _forward_populate_default_args(std::vector<AnyValue>&& arguments) override;
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;
  GRUOptions options;
};
EMBER_MODULE(GRU);

// ---- cells: one time step, input [N, input_size] or unbatched [input_size] ----

struct RNNCellOptions {
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  RNNCellOptions& bias(bool v) {
    bias_ = v;
    return *this;
  }
  // "tanh" (default) or "relu"; ignored by LSTMCell and GRUCell.
  RNNCellOptions& nonlinearity(std::string v) {
    nonlinearity_ = std::move(v);
    return *this;
  }
  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }
  bool bias() const { return bias_; }
  const std::string& nonlinearity() const { return nonlinearity_; }

 private:
  int64_t input_size_, hidden_size_;
  bool bias_ = true;
  std::string nonlinearity_ = "tanh";
};
using LSTMCellOptions = RNNCellOptions;
using GRUCellOptions = RNNCellOptions;

namespace detail {
// Parameters weight_ih [G*hidden, in], weight_hh [G*hidden, hidden], bias_ih, bias_hh.
class RNNCellBase : public Module {
 public:
  void reset_parameters();
  std::string extra_repr() const override;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  RNNCellBase(std::string name, const RNNCellOptions& options, int64_t gates);
  // Checks input/hidden shapes; returns (input, hx) batched (hx zeros when undefined) and
  // whether the input was unbatched.
  std::tuple<Tensor, Tensor, bool> prepare(const Tensor& input, const Tensor& hx, const char* op) const;
  RNNCellOptions cell_options_;
};
}  // namespace detail

// h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh); forward(input, hx) returns h'.
class RNNCellImpl : public detail::RNNCellBase {
 public:
  RNNCellImpl(int64_t input_size, int64_t hidden_size) : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit RNNCellImpl(const RNNCellOptions& options);
  Tensor forward(const Tensor& input, const Tensor& hx = {});
  Tensor operator()(const Tensor& input, const Tensor& hx = {}) { return forward(input, hx); }
  // The hidden state may be left out when run through AnyModule / Sequential (libtorch's
  // FORWARD_HAS_DEFAULT_ARGS; defined in rnn.cpp to keep AnyValue out of this header).
  bool _forward_has_default_args() override { return true; }
  unsigned int _forward_num_required_args() override { return 1; }
  std::vector<AnyValue> _forward_populate_default_args(std::vector<AnyValue>&& arguments) override;
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;
  RNNCellOptions options;
};
EMBER_MODULE(RNNCell);

// One LSTM step; forward(input, (h, c)) returns (h', c').
class LSTMCellImpl : public detail::RNNCellBase {
 public:
  using State = std::tuple<Tensor, Tensor>;
  LSTMCellImpl(int64_t input_size, int64_t hidden_size) : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const LSTMCellOptions& options);
  State forward(const Tensor& input, const std::optional<State>& hx = std::nullopt);
  State operator()(const Tensor& input, const std::optional<State>& hx = std::nullopt) { return forward(input, hx); }
  // The hidden state may be left out when run through AnyModule / Sequential (libtorch's
  // FORWARD_HAS_DEFAULT_ARGS; defined in rnn.cpp to keep AnyValue out of this header).
  bool _forward_has_default_args() override { return true; }
  unsigned int _forward_num_required_args() override { return 1; }
  std::vector<AnyValue> _forward_populate_default_args(std::vector<AnyValue>&& arguments) override;
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;
  LSTMCellOptions options;
};
EMBER_MODULE(LSTMCell);

// One GRU step; forward(input, hx) returns h'.
class GRUCellImpl : public detail::RNNCellBase {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size) : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const GRUCellOptions& options);
  Tensor forward(const Tensor& input, const Tensor& hx = {});
  Tensor operator()(const Tensor& input, const Tensor& hx = {}) { return forward(input, hx); }
  // The hidden state may be left out when run through AnyModule / Sequential (libtorch's
  // FORWARD_HAS_DEFAULT_ARGS; defined in rnn.cpp to keep AnyValue out of this header).
  bool _forward_has_default_args() override { return true; }
  unsigned int _forward_num_required_args() override { return 1; }
  std::vector<AnyValue> _forward_populate_default_args(std::vector<AnyValue>&& arguments) override;
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;
  GRUCellOptions options;
};
EMBER_MODULE(GRUCell);

}  // namespace ember::nn
