// quant::DynamicQuantizedLSTM: nn.LSTM whose products run through the dynamic int8 GEMM.

#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/jit/trace_hook.h"
#include "ember/nn/modules/any.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"
#include "ember/quant/qkernels.h"
#include "ember/quant/quant.h"

namespace ember::quant {

namespace detail {

// The row sums of one int8 weight, recomputed when its codes change (load_state_dict
// copies into the tensor and bumps its version). Callers on other threads keep the sums
// they took until they are done with them.
class RowSumCache {
 public:
  std::shared_ptr<const std::vector<int32_t>> get(const Tensor& qweight) {
    std::lock_guard<std::mutex> lock(mu_);
    const void* data = qweight.data_ptr();
    if (sums_ && data == data_ && qweight._version() == version_) return sums_;
    sums_ = std::make_shared<const std::vector<int32_t>>(row_sums(qweight));
    data_ = data;
    version_ = qweight._version();
    return sums_;
  }

 private:
  std::mutex mu_;
  std::shared_ptr<const std::vector<int32_t>> sums_;
  const void* data_ = nullptr;
  uint32_t version_ = UINT32_MAX;
};

}  // namespace detail

namespace {

constexpr const char* kOp = "[DynamicQuantizedLSTM]";

std::string describe(const Tensor& t) {
  return t.defined() ? ::ember::detail::str_cat(t.dtype(), " ", t.sizes()) : std::string("undefined");
}

void check_weight(const Tensor& q, const Tensor& scales, const std::string& name, int64_t rows, int64_t cols) {
  EMBER_CHECK(q.defined() && q.dtype() == kInt8 && q.dim() == 2 && q.size(0) == rows && q.size(1) == cols &&
                  q.is_contiguous(),
              kOp, " ", name, " must be a contiguous int8 tensor of sizes [", rows, ", ", cols, "], got ",
              describe(q), "; load weights with load_state_dict, or quantize an LSTM with quant::quantize_dynamic");
  EMBER_CHECK(scales.defined() && scales.dtype() == kFloat32 && scales.dim() == 1 && scales.size(0) == rows &&
                  scales.is_contiguous(),
              kOp, " ", name, "_scales must be a contiguous float32 tensor of sizes [", rows, "], got ",
              describe(scales), " (Module::to(dtype) converts it; quantized modules stay float32)");
}

void check_bias(const Tensor& b, const std::string& name, int64_t rows) {
  EMBER_CHECK(b.defined() && b.dtype() == kFloat32 && b.dim() == 1 && b.size(0) == rows && b.is_contiguous(), kOp,
              " ", name, " must be a contiguous float32 tensor of sizes [", rows, "], got ", describe(b));
}

std::string suffix(int64_t layer, int64_t dir) {
  return "_l" + std::to_string(layer) + (dir == 1 ? "_reverse" : "");
}

}  // namespace

void DynamicQuantizedLSTMImpl::register_weights() {
  const int64_t H = options.hidden_size(), D = options.bidirectional() ? 2 : 1, G = 4 * H;
  EMBER_CHECK(options.input_size() >= 0 && H > 0 && options.num_layers() > 0, kOp,
              " hidden_size and num_layers must be positive and input_size non-negative, got input_size=",
              options.input_size(), " hidden_size=", H, " num_layers=", options.num_layers());
  for (int64_t layer = 0; layer < options.num_layers(); ++layer) {
    for (int64_t dir = 0; dir < D; ++dir) {
      const int64_t in = layer == 0 ? options.input_size() : H * D;
      const std::string s = suffix(layer, dir);
      Weights w;
      w.weight_ih = register_buffer("weight_ih" + s, zeros({G, in}, TensorOptions(kInt8)));
      w.weight_ih_scales = register_buffer("weight_ih" + s + "_scales", full({G}, 1.0, TensorOptions(kFloat32)));
      w.weight_hh = register_buffer("weight_hh" + s, zeros({G, H}, TensorOptions(kInt8)));
      w.weight_hh_scales = register_buffer("weight_hh" + s + "_scales", full({G}, 1.0, TensorOptions(kFloat32)));
      if (options.bias()) {
        w.bias_ih = register_buffer("bias_ih" + s, zeros({G}, TensorOptions(kFloat32)));
        w.bias_hh = register_buffer("bias_hh" + s, zeros({G}, TensorOptions(kFloat32)));
      }
      weights_.push_back(w);
      sums_.push_back(std::make_shared<detail::RowSumCache>());
      sums_.push_back(std::make_shared<detail::RowSumCache>());
    }
  }
}

DynamicQuantizedLSTMImpl::DynamicQuantizedLSTMImpl(const nn::LSTMOptions& options_)
    : Module("DynamicQuantizedLSTM"), options(options_) {
  register_weights();
}

DynamicQuantizedLSTMImpl::DynamicQuantizedLSTMImpl(const nn::LSTMImpl& lstm)
    : Module("DynamicQuantizedLSTM"), options(lstm.options) {
  register_weights();
  // flat_weights: weight_ih, weight_hh (, bias_ih, bias_hh) per layer and direction.
  const std::vector<Tensor>& flat = lstm.flat_weights();
  const size_t per = options.bias() ? 4 : 2;
  EMBER_CHECK(flat.size() == weights_.size() * per, kOp, " the LSTM has ", flat.size(), " weight tensors, expected ",
              weights_.size() * per);
  NoGradGuard no_grad;
  for (size_t i = 0; i < weights_.size(); ++i) {
    Weights& w = weights_[i];
    const PerChannelWeight ih = quantize_weight_per_channel(flat[i * per]);
    const PerChannelWeight hh = quantize_weight_per_channel(flat[i * per + 1]);
    w.weight_ih.copy_(ih.qweight);
    w.weight_ih_scales.copy_(ih.scales);
    w.weight_hh.copy_(hh.qweight);
    w.weight_hh_scales.copy_(hh.scales);
    if (options.bias()) {
      w.bias_ih.copy_(flat[i * per + 2].detach().to(kFloat32));
      w.bias_hh.copy_(flat[i * per + 3].detach().to(kFloat32));
    }
  }
  train(lstm.is_training());
}

DynamicQuantizedLSTMImpl::~DynamicQuantizedLSTMImpl() = default;

std::tuple<Tensor, DynamicQuantizedLSTMImpl::State> DynamicQuantizedLSTMImpl::forward(
    const Tensor& input, const std::optional<State>& hx) {
  const int64_t H = options.hidden_size(), D = options.bidirectional() ? 2 : 1, G = 4 * H;
  const int64_t layers = options.num_layers();
  Tensor h0, c0;
  if (hx) std::tie(h0, c0) = *hx;
  EMBER_CHECK(h0.defined() == c0.defined(), kOp, " pass both h0 and c0, or neither");
  EMBER_CHECK(input.defined(), kOp, " called with an undefined input");
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, kOp, " expected input of 2 (unbatched) or 3 dims, got ",
              input.dim(), " dims with sizes ", input.sizes());
  EMBER_CHECK(input.dtype() == kFloat32, kOp, " expects a float32 input, got ", input.dtype(), " of sizes ",
              input.sizes(), "; convert it with .to(ember::kFloat32)");
  EMBER_CHECK(input.size(-1) == options.input_size(), kOp, " input.size(-1) must be equal to input_size=",
              options.input_size(), ", got input of sizes ", input.sizes());
  EMBER_CHECK(jit::detail::tl_recorder == nullptr, kOp,
              " cannot be traced yet: jit::trace the float model, or run the quantized one eagerly");
  for (size_t i = 0; i < weights_.size(); ++i) {
    const Weights& w = weights_[i];
    const int64_t layer = static_cast<int64_t>(i) / D, dir = static_cast<int64_t>(i) % D;
    const std::string s = suffix(layer, dir);
    check_weight(w.weight_ih, w.weight_ih_scales, "weight_ih" + s, G, layer == 0 ? options.input_size() : D * H);
    check_weight(w.weight_hh, w.weight_hh_scales, "weight_hh" + s, G, H);
    if (options.bias()) {
      check_bias(w.bias_ih, "bias_ih" + s, G);
      check_bias(w.bias_hh, "bias_hh" + s, G);
    }
  }

  NoGradGuard no_grad;
  const bool unbatched = input.dim() == 2;
  const Tensor in = input.detach();
  Tensor x = unbatched ? in.unsqueeze(1) : options.batch_first() ? in.transpose(0, 1) : in;
  const int64_t L = x.size(0), N = x.size(1);
  const std::vector<int64_t> state_shape =
      unbatched ? std::vector<int64_t>{layers * D, H} : std::vector<int64_t>{layers * D, N, H};
  auto batched_state = [&](const Tensor& s, const char* what) -> Tensor {
    if (!s.defined()) return zeros({layers * D, N, H}, TensorOptions(kFloat32));
    EMBER_CHECK(s.sizes().vec() == state_shape, kOp, " expected ", what, " of sizes ", IntArrayRef(state_shape),
                ", got ", s.sizes(), " (for input of sizes ", input.sizes(), ")");
    EMBER_CHECK(s.dtype() == kFloat32, kOp, " expects a float32 ", what, ", got ", s.dtype(),
                "; convert it with .to(ember::kFloat32)");
    return unbatched ? s.detach().unsqueeze(1) : s.detach();
  };
  const std::vector<Tensor> h_states = batched_state(h0, "hidden state h0").unbind(0);
  const std::vector<Tensor> c_states = batched_state(c0, "cell state c0").unbind(0);
  std::vector<Tensor> h_n, c_n;

  Tensor layer_input = x.contiguous();
  for (int64_t layer = 0; layer < layers; ++layer) {
    const int64_t in_features = layer_input.size(2);
    std::vector<Tensor> dir_outputs;
    for (int64_t dir = 0; dir < D; ++dir) {
      const size_t idx = static_cast<size_t>(layer * D + dir);
      const Weights& w = weights_[idx];
      const std::shared_ptr<const std::vector<int32_t>> sums_ih = sums_[2 * idx]->get(w.weight_ih);
      const std::shared_ptr<const std::vector<int32_t>> sums_hh = sums_[2 * idx + 1]->get(w.weight_hh);
      const float* b_ih = options.bias() ? w.bias_ih.data_ptr<float>() : nullptr;
      const float* b_hh = options.bias() ? w.bias_hh.data_ptr<float>() : nullptr;
      // The input projection of the whole sequence (b_ih included): [L * N, 4H].
      Tensor xg = empty({L * N, G}, TensorOptions(kFloat32));
      detail::dynamic_linear(kOp, layer_input.data_ptr<float>(), L * N, in_features, w.weight_ih.data_ptr<int8_t>(),
                             G, sums_ih->data(), w.weight_ih_scales.data_ptr<float>(), b_ih, xg.data_ptr<float>(),
                             layer == 0 ? input.sizes() : layer_input.sizes());
      Tensor h = h_states[idx].contiguous(), c = c_states[idx];
      std::vector<Tensor> outs(static_cast<size_t>(L));
      for (int64_t s = 0; s < L; ++s) {
        const int64_t t = dir == 0 ? s : L - 1 - s;
        // The hidden projection (b_hh included), then the gates in float32 as nn::LSTM.
        Tensor gates = empty({N, G}, TensorOptions(kFloat32));
        detail::dynamic_linear(kOp, h.data_ptr<float>(), N, H, w.weight_hh.data_ptr<int8_t>(), G, sums_hh->data(),
                               w.weight_hh_scales.data_ptr<float>(), b_hh, gates.data_ptr<float>(), h.sizes());
        gates.add_(xg.narrow(0, t * N, N));
        const std::vector<Tensor> g = gates.chunk(4, 1);
        const Tensor i = g[0].sigmoid(), f = g[1].sigmoid(), cell = g[2].tanh(), o = g[3].sigmoid();
        c = f * c + i * cell;
        h = o * c.tanh();
        outs[static_cast<size_t>(t)] = h;
      }
      dir_outputs.push_back(L > 0 ? stack(outs, 0) : zeros({0, N, H}, TensorOptions(kFloat32)));
      h_n.push_back(h);
      c_n.push_back(c);
    }
    layer_input = D == 2 ? cat(dir_outputs, 2) : dir_outputs[0];
  }
  Tensor output =
      unbatched ? layer_input.squeeze(1) : options.batch_first() ? layer_input.transpose(0, 1) : layer_input;
  Tensor hn = stack(h_n, 0), cn = stack(c_n, 0);
  if (unbatched) {
    hn = hn.squeeze(1);
    cn = cn.squeeze(1);
  }
  return {output, State{hn, cn}};
}

std::tuple<Tensor, DynamicQuantizedLSTMImpl::State> DynamicQuantizedLSTMImpl::operator()(
    const Tensor& input, const std::optional<State>& hx) {
  if (!has_hooks()) return forward(input, hx);
  Tensor h0, c0;
  if (hx) std::tie(h0, c0) = *hx;
  nn::TensorList r = run_with_hooks({input, h0, c0}, [this](const nn::TensorList& in) {
    std::optional<State> s;
    if (in.at(1).defined() || in.at(2).defined()) s = State{in.at(1), in.at(2)};
    auto [o, st] = forward(in.at(0), s);
    return nn::TensorList{o, std::get<0>(st), std::get<1>(st)};
  });
  return {r.at(0), State{r.at(1), r.at(2)}};
}

std::vector<nn::AnyValue> DynamicQuantizedLSTMImpl::_forward_populate_default_args(
    std::vector<nn::AnyValue>&& arguments) {
  std::vector<nn::AnyValue> result(std::make_move_iterator(arguments.begin()), std::make_move_iterator(arguments.end()));
  if (result.size() < 2) result.push_back(nn::AnyValue::make_default<std::optional<State>>());
  return result;
}

std::string DynamicQuantizedLSTMImpl::extra_repr() const {
  std::ostringstream os;
  os << options.input_size() << ", " << options.hidden_size();
  if (options.num_layers() != 1) os << ", num_layers=" << options.num_layers();
  if (!options.bias()) os << ", bias=False";
  if (options.batch_first()) os << ", batch_first=True";
  if (options.dropout() != 0) os << ", dropout=" << options.dropout();
  if (options.bidirectional()) os << ", bidirectional=True";
  os << ", dtype=qint8, qscheme=per_channel_symmetric";
  return os.str();
}

std::shared_ptr<nn::Module> DynamicQuantizedLSTMImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<DynamicQuantizedLSTMImpl>(options);
  clone_into(*copy);  // copies values into the copy's own tensors (members stay valid)
  copy->train(is_training());
  return copy;
}

}  // namespace ember::quant
