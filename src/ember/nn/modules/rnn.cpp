#include "ember/nn/modules/rnn.h"

#include <cmath>

#include "ember/nn/modules/clone_dtype.h"
#include <sstream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"
#include "ember/ops/linalg.h"
#include "ember/nn/modules/any.h"

namespace ember::nn {
namespace detail {
namespace {

int64_t gate_count(RNNMode mode) {
  switch (mode) {
    case RNNMode::LSTM: return 4;
    case RNNMode::GRU: return 3;
    default: return 1;
  }
}

RNNMode rnn_mode(const std::string& nonlinearity, const char* op) {
  if (nonlinearity == "tanh") return RNNMode::RNN_TANH;
  if (nonlinearity == "relu") return RNNMode::RNN_RELU;
  EMBER_ERROR("[", op, "] unknown nonlinearity '", nonlinearity, "'; use \"tanh\" or \"relu\"");
}

template <typename Options>
RNNConfig make_config(RNNMode mode, const Options& o) {
  return RNNConfig{mode,     o.input_size(), o.hidden_size(), o.num_layers(), o.bias(), o.batch_first(),
                   o.dropout(), o.bidirectional()};
}

// One step of the recurrence. `xg` is this step's input projection [N, G*H]; for RNN and
// LSTM it already holds both biases, for GRU only b_ih (b_hn must stay inside r * (...)).
// Returns the new h (and updates c for LSTM).
Tensor cell_step(RNNMode mode, const Tensor& xg, const Tensor& h, Tensor& c, const Tensor& w_hh,
                 const Tensor& b_hh) {
  switch (mode) {
    case RNNMode::RNN_TANH: return addmm(xg, h, w_hh.t()).tanh();
    case RNNMode::RNN_RELU: return addmm(xg, h, w_hh.t()).relu();
    case RNNMode::LSTM: {
      std::vector<Tensor> g = addmm(xg, h, w_hh.t()).chunk(4, 1);
      Tensor i = g[0].sigmoid(), f = g[1].sigmoid(), cell = g[2].tanh(), o = g[3].sigmoid();
      c = f * c + i * cell;
      return o * c.tanh();
    }
    case RNNMode::GRU: {
      Tensor hg = b_hh.defined() ? addmm(b_hh, h, w_hh.t()) : h.mm(w_hh.t());
      const int64_t H = h.size(1);
      // r and z in one sigmoid over the first 2H columns.
      Tensor rz = (xg.narrow(1, 0, 2 * H) + hg.narrow(1, 0, 2 * H)).sigmoid();
      std::vector<Tensor> parts = rz.chunk(2, 1);
      Tensor n = (xg.narrow(1, 2 * H, H) + parts[0] * hg.narrow(1, 2 * H, H)).tanh();
      return n + parts[1] * (h - n);
    }
  }
  return {};
}

// Input projection of a whole sequence in one matmul: [L, N, in] -> L tensors [N, G*H].
std::vector<Tensor> project_input(RNNMode mode, const Tensor& x, const Tensor& w_ih, const Tensor& b_ih,
                                  const Tensor& b_hh) {
  const int64_t L = x.size(0), N = x.size(1);
  Tensor x2 = x.reshape({L * N, x.size(2)});
  Tensor proj;
  if (!b_ih.defined()) {
    proj = x2.mm(w_ih.t());
  } else if (mode == RNNMode::GRU) {
    proj = addmm(b_ih, x2, w_ih.t());
  } else {
    proj = addmm(b_ih + b_hh, x2, w_ih.t());
  }
  // unbind: one backward node that stacks the step gradients (select would zero-fill
  // the whole projection once per step).
  return proj.view({L, N, w_ih.size(0)}).unbind(0);
}

}  // namespace

RNNBase::RNNBase(std::string name, const RNNConfig& config) : Module(std::move(name)), config_(config) {
  const char* op = this->name().c_str();
  EMBER_CHECK(config.input_size >= 0 && config.hidden_size > 0, "[nn.", op,
              "] hidden_size must be positive and input_size non-negative, got input_size=", config.input_size,
              " hidden_size=", config.hidden_size);
  EMBER_CHECK(config.num_layers >= 1, "[nn.", op, "] num_layers must be at least 1, got ", config.num_layers);
  EMBER_CHECK(config.dropout >= 0 && config.dropout <= 1, "[nn.", op,
              "] dropout should be a number in range [0, 1] representing the probability of an element being "
              "zeroed, got ",
              config.dropout);
  reset_flat_weights();
}

void RNNBase::reset_flat_weights() {
  flat_weights_.clear();
  const int64_t G = gate_count(config_.mode), H = config_.hidden_size;
  const int64_t D = config_.bidirectional ? 2 : 1;
  for (int64_t layer = 0; layer < config_.num_layers; ++layer) {
    for (int64_t dir = 0; dir < D; ++dir) {
      const int64_t in = layer == 0 ? config_.input_size : H * D;
      const std::string suffix = "_l" + std::to_string(layer) + (dir == 1 ? "_reverse" : "");
      flat_weights_.push_back(register_parameter("weight_ih" + suffix, empty({G * H, in})));
      flat_weights_.push_back(register_parameter("weight_hh" + suffix, empty({G * H, H})));
      if (config_.bias) {
        flat_weights_.push_back(register_parameter("bias_ih" + suffix, empty({G * H})));
        flat_weights_.push_back(register_parameter("bias_hh" + suffix, empty({G * H})));
      }
    }
  }
  reset_parameters();
}

void RNNBase::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(config_.hidden_size));
  for (Tensor& w : flat_weights_) init::uniform_(w, -bound, bound);
}

std::string RNNBase::extra_repr() const {
  std::ostringstream os;
  os << config_.input_size << ", " << config_.hidden_size;
  if (config_.num_layers != 1) os << ", num_layers=" << config_.num_layers;
  if (config_.mode == RNNMode::RNN_RELU) os << ", nonlinearity=relu";
  if (!config_.bias) os << ", bias=False";
  if (config_.batch_first) os << ", batch_first=True";
  if (config_.dropout != 0) os << ", dropout=" << config_.dropout;
  if (config_.bidirectional) os << ", bidirectional=True";
  return os.str();
}

std::tuple<Tensor, Tensor, Tensor> RNNBase::run(const Tensor& input, const Tensor& h0, const Tensor& c0,
                                                const char* op) {
  const RNNConfig& cf = config_;
  const bool lstm = cf.mode == RNNMode::LSTM;
  EMBER_CHECK(input.defined(), "[", op, "] called with an undefined input");
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, "[", op, "] expected input of 2 (unbatched) or 3 dims, got ",
              input.dim(), " dims with sizes ", input.sizes());
  EMBER_CHECK(input.is_floating_point(), "[", op, "] input must be floating point, got ", input.dtype());
  EMBER_CHECK(input.size(-1) == cf.input_size, "[", op, "] input.size(-1) must be equal to input_size. Expected ",
              cf.input_size, ", got ", input.size(-1), " (input sizes ", input.sizes(), ")");
  const bool unbatched = input.dim() == 2;
  Tensor x = unbatched ? input.unsqueeze(1) : cf.batch_first ? input.transpose(0, 1) : input;
  const int64_t L = x.size(0), N = x.size(1), H = cf.hidden_size;
  const int64_t D = cf.bidirectional ? 2 : 1;
  const std::vector<int64_t> state_shape =
      unbatched ? std::vector<int64_t>{cf.num_layers * D, H} : std::vector<int64_t>{cf.num_layers * D, N, H};
  auto batched_state = [&](const Tensor& s, const char* what) -> Tensor {
    if (!s.defined()) return zeros({cf.num_layers * D, N, H}, TensorOptions(x.dtype()));
    EMBER_CHECK(s.sizes().vec() == state_shape, "[", op, "] expected ", what, " of sizes ", IntArrayRef(state_shape),
                ", got ", s.sizes(), " (for input of sizes ", input.sizes(), ")");
    return unbatched ? s.unsqueeze(1) : s;
  };
  Tensor hx = batched_state(h0, "hidden state h0");
  Tensor cx = lstm ? batched_state(c0, "cell state c0") : Tensor();
  std::vector<Tensor> h_states = hx.unbind(0);
  std::vector<Tensor> c_states = lstm ? cx.unbind(0) : std::vector<Tensor>();
  std::vector<Tensor> h_n, c_n;
  const size_t per_dir = cf.bias ? 4 : 2;

  Tensor layer_input = x;
  for (int64_t layer = 0; layer < cf.num_layers; ++layer) {
    std::vector<Tensor> dir_outputs;
    for (int64_t dir = 0; dir < D; ++dir) {
      const size_t idx = static_cast<size_t>(layer * D + dir);
      const Tensor& w_ih = flat_weights_[idx * per_dir];
      const Tensor& w_hh = flat_weights_[idx * per_dir + 1];
      const Tensor b_ih = cf.bias ? flat_weights_[idx * per_dir + 2] : Tensor();
      const Tensor b_hh = cf.bias ? flat_weights_[idx * per_dir + 3] : Tensor();
      std::vector<Tensor> xs = project_input(cf.mode, layer_input, w_ih, b_ih, b_hh);
      // Without a bias the GRU's h projection has none either; for the others the bias is
      // already in xs.
      const Tensor gru_b_hh = cf.mode == RNNMode::GRU ? b_hh : Tensor();
      Tensor h = h_states[idx];
      Tensor c = lstm ? c_states[idx] : Tensor();
      std::vector<Tensor> outs(static_cast<size_t>(L));
      for (int64_t s = 0; s < L; ++s) {
        const size_t t = static_cast<size_t>(dir == 0 ? s : L - 1 - s);
        h = cell_step(cf.mode, xs[t], h, c, w_hh, gru_b_hh);
        outs[t] = h;
      }
      dir_outputs.push_back(L > 0 ? stack(outs, 0) : zeros({0, N, H}, TensorOptions(x.dtype())));
      h_n.push_back(h);
      if (lstm) c_n.push_back(c);
    }
    layer_input = D == 2 ? cat(dir_outputs, 2) : dir_outputs[0];
    if (cf.dropout > 0 && is_training() && layer + 1 < cf.num_layers) {
      layer_input = functional::dropout(layer_input, cf.dropout, true);
    }
  }
  Tensor output = unbatched ? layer_input.squeeze(1) : cf.batch_first ? layer_input.transpose(0, 1) : layer_input;
  Tensor hn = stack(h_n, 0), cn = lstm ? stack(c_n, 0) : Tensor();
  if (unbatched) {
    hn = hn.squeeze(1);
    if (lstm) cn = cn.squeeze(1);
  }
  return {output, hn, cn};
}

// ---- cells ----

RNNCellBase::RNNCellBase(std::string name, const RNNCellOptions& options, int64_t gates)
    : Module(std::move(name)), cell_options_(options) {
  EMBER_CHECK(options.input_size() >= 0 && options.hidden_size() > 0, "[nn.", this->name(),
              "] hidden_size must be positive and input_size non-negative, got input_size=", options.input_size(),
              " hidden_size=", options.hidden_size());
  const int64_t G = gates * options.hidden_size();
  weight_ih = register_parameter("weight_ih", empty({G, options.input_size()}));
  weight_hh = register_parameter("weight_hh", empty({G, options.hidden_size()}));
  bias_ih = register_parameter("bias_ih", options.bias() ? empty({G}) : Tensor(), options.bias());
  bias_hh = register_parameter("bias_hh", options.bias() ? empty({G}) : Tensor(), options.bias());
  reset_parameters();
}

void RNNCellBase::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(cell_options_.hidden_size()));
  for (Tensor* w : {&weight_ih, &weight_hh, &bias_ih, &bias_hh}) {
    if (w->defined()) init::uniform_(*w, -bound, bound);
  }
}

std::string RNNCellBase::extra_repr() const {
  std::ostringstream os;
  os << cell_options_.input_size() << ", " << cell_options_.hidden_size();
  if (!cell_options_.bias()) os << ", bias=False";
  if (name() == "RNNCell" && cell_options_.nonlinearity() != "tanh") os << ", nonlinearity=" << cell_options_.nonlinearity();
  return os.str();
}

std::tuple<Tensor, Tensor, bool> RNNCellBase::prepare(const Tensor& input, const Tensor& hx, const char* op) const {
  EMBER_CHECK(input.defined(), "[", op, "] called with an undefined input");
  EMBER_CHECK(input.dim() == 1 || input.dim() == 2, "[", op, "] expected input of 1 (unbatched) or 2 dims, got sizes ",
              input.sizes());
  EMBER_CHECK(input.size(-1) == cell_options_.input_size(), "[", op, "] input has inconsistent input_size: got ",
              input.size(-1), " expected ", cell_options_.input_size(), " (input sizes ", input.sizes(), ")");
  const bool unbatched = input.dim() == 1;
  Tensor x = unbatched ? input.unsqueeze(0) : input;
  const int64_t H = cell_options_.hidden_size();
  Tensor h;
  if (!hx.defined()) {
    h = zeros({x.size(0), H}, TensorOptions(x.dtype()));
  } else {
    const std::vector<int64_t> want = unbatched ? std::vector<int64_t>{H} : std::vector<int64_t>{x.size(0), H};
    EMBER_CHECK(hx.sizes().vec() == want, "[", op, "] expected hidden state of sizes ", IntArrayRef(want), ", got ",
                hx.sizes(), " (for input of sizes ", input.sizes(), ")");
    h = unbatched ? hx.unsqueeze(0) : hx;
  }
  return {x, h, unbatched};
}

}  // namespace detail

// ---- RNN / LSTM / GRU ----

RNNImpl::RNNImpl(const RNNOptions& options_)
    : RNNBase("RNN", detail::make_config(detail::rnn_mode(options_.nonlinearity(), "nn.RNN"), options_)),
      options(options_) {}

namespace {
std::vector<AnyValue> with_default_state(std::vector<AnyValue>&& arguments, AnyValue state) {
  std::vector<AnyValue> result(std::make_move_iterator(arguments.begin()), std::make_move_iterator(arguments.end()));
  if (result.size() < 2) result.push_back(std::move(state));
  return result;
}
}  // namespace

std::vector<AnyValue> RNNImpl::_forward_populate_default_args(std::vector<AnyValue>&& arguments) {
  return with_default_state(std::move(arguments), AnyValue(Tensor()));
}
std::vector<AnyValue> GRUImpl::_forward_populate_default_args(std::vector<AnyValue>&& arguments) {
  return with_default_state(std::move(arguments), AnyValue(Tensor()));
}
std::vector<AnyValue> LSTMImpl::_forward_populate_default_args(std::vector<AnyValue>&& arguments) {
  return with_default_state(std::move(arguments), AnyValue::make_default<std::optional<State>>());
}
std::vector<AnyValue> RNNCellImpl::_forward_populate_default_args(std::vector<AnyValue>&& arguments) {
  return with_default_state(std::move(arguments), AnyValue(Tensor()));
}
std::vector<AnyValue> GRUCellImpl::_forward_populate_default_args(std::vector<AnyValue>&& arguments) {
  return with_default_state(std::move(arguments), AnyValue(Tensor()));
}
std::vector<AnyValue> LSTMCellImpl::_forward_populate_default_args(std::vector<AnyValue>&& arguments) {
  return with_default_state(std::move(arguments), AnyValue::make_default<std::optional<State>>());
}

std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, const Tensor& h0) {
  OpScope scope("rnn", {&input, &h0});
  auto [out, hn, cn] = run(input, h0, {}, "nn.RNN");
  return {out, hn};
}

std::tuple<Tensor, Tensor> RNNImpl::operator()(const Tensor& input, const Tensor& h0) {
  if (!has_hooks()) return forward(input, h0);
  TensorList r = run_with_hooks({input, h0}, [this](const TensorList& in) {
    auto [o, h] = forward(in.at(0), in.at(1));
    return TensorList{o, h};
  });
  return {r.at(0), r.at(1)};
}

std::shared_ptr<Module> RNNImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<RNNImpl>(options);
  match_dtype(*this, *copy);
  clone_into(*copy);
  return copy;
}

LSTMImpl::LSTMImpl(const LSTMOptions& options_)
    : RNNBase("LSTM", detail::make_config(detail::RNNMode::LSTM, options_)), options(options_) {}

std::tuple<Tensor, LSTMImpl::State> LSTMImpl::forward(const Tensor& input, const std::optional<State>& hx) {
  OpScope scope("lstm", {&input});
  Tensor h0, c0;
  if (hx) std::tie(h0, c0) = *hx;
  EMBER_CHECK(h0.defined() == c0.defined(), "[nn.LSTM] pass both h0 and c0, or neither");
  auto [out, hn, cn] = run(input, h0, c0, "nn.LSTM");
  return {out, State{hn, cn}};
}

std::tuple<Tensor, LSTMImpl::State> LSTMImpl::operator()(const Tensor& input, const std::optional<State>& hx) {
  if (!has_hooks()) return forward(input, hx);
  Tensor h0, c0;
  if (hx) std::tie(h0, c0) = *hx;
  TensorList r = run_with_hooks({input, h0, c0}, [this](const TensorList& in) {
    std::optional<State> s;
    if (in.at(1).defined() || in.at(2).defined()) s = State{in.at(1), in.at(2)};
    auto [o, st] = forward(in.at(0), s);
    return TensorList{o, std::get<0>(st), std::get<1>(st)};
  });
  return {r.at(0), State{r.at(1), r.at(2)}};
}

std::shared_ptr<Module> LSTMImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<LSTMImpl>(options);
  match_dtype(*this, *copy);
  clone_into(*copy);
  return copy;
}

GRUImpl::GRUImpl(const GRUOptions& options_)
    : RNNBase("GRU", detail::make_config(detail::RNNMode::GRU, options_)), options(options_) {}

std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, const Tensor& h0) {
  OpScope scope("gru", {&input, &h0});
  auto [out, hn, cn] = run(input, h0, {}, "nn.GRU");
  return {out, hn};
}

std::tuple<Tensor, Tensor> GRUImpl::operator()(const Tensor& input, const Tensor& h0) {
  if (!has_hooks()) return forward(input, h0);
  TensorList r = run_with_hooks({input, h0}, [this](const TensorList& in) {
    auto [o, h] = forward(in.at(0), in.at(1));
    return TensorList{o, h};
  });
  return {r.at(0), r.at(1)};
}

std::shared_ptr<Module> GRUImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<GRUImpl>(options);
  match_dtype(*this, *copy);
  clone_into(*copy);
  return copy;
}

// ---- cells ----

RNNCellImpl::RNNCellImpl(const RNNCellOptions& options_) : RNNCellBase("RNNCell", options_, 1), options(options_) {
  detail::rnn_mode(options.nonlinearity(), "nn.RNNCell");
}

Tensor RNNCellImpl::forward(const Tensor& input, const Tensor& hx) {
  OpScope scope("rnn_cell", {&input, &hx});
  auto [x, h, unbatched] = prepare(input, hx, "nn.RNNCell");
  Tensor pre = functional::linear(x, weight_ih, bias_ih) + functional::linear(h, weight_hh, bias_hh);
  Tensor out = options.nonlinearity() == "relu" ? pre.relu() : pre.tanh();
  return unbatched ? out.squeeze(0) : out;
}

std::shared_ptr<Module> RNNCellImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<RNNCellImpl>(options);
  match_dtype(*this, *copy);
  clone_into(*copy);
  return copy;
}

LSTMCellImpl::LSTMCellImpl(const LSTMCellOptions& options_)
    : RNNCellBase("LSTMCell", options_, 4), options(options_) {}

LSTMCellImpl::State LSTMCellImpl::forward(const Tensor& input, const std::optional<State>& hx) {
  OpScope scope("lstm_cell", {&input});
  Tensor h0, c0;
  if (hx) std::tie(h0, c0) = *hx;
  EMBER_CHECK(h0.defined() == c0.defined(), "[nn.LSTMCell] pass both h and c, or neither");
  auto [x, h, unbatched] = prepare(input, h0, "nn.LSTMCell");
  Tensor c = std::get<1>(prepare(input, c0, "nn.LSTMCell"));
  Tensor xg = functional::linear(x, weight_ih, bias_ih.defined() ? bias_ih + bias_hh : Tensor());
  Tensor hn = detail::cell_step(detail::RNNMode::LSTM, xg, h, c, weight_hh, {});
  if (unbatched) return {hn.squeeze(0), c.squeeze(0)};
  return {hn, c};
}

std::shared_ptr<Module> LSTMCellImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<LSTMCellImpl>(options);
  match_dtype(*this, *copy);
  clone_into(*copy);
  return copy;
}

GRUCellImpl::GRUCellImpl(const GRUCellOptions& options_) : RNNCellBase("GRUCell", options_, 3), options(options_) {}

Tensor GRUCellImpl::forward(const Tensor& input, const Tensor& hx) {
  OpScope scope("gru_cell", {&input, &hx});
  auto [x, h, unbatched] = prepare(input, hx, "nn.GRUCell");
  Tensor xg = functional::linear(x, weight_ih, bias_ih);
  Tensor c;
  Tensor out = detail::cell_step(detail::RNNMode::GRU, xg, h, c, weight_hh, bias_hh);
  return unbatched ? out.squeeze(0) : out;
}

std::shared_ptr<Module> GRUCellImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<GRUCellImpl>(options);
  match_dtype(*this, *copy);
  clone_into(*copy);
  return copy;
}

}  // namespace ember::nn
