// quant::DynamicQuantizedLSTM: its arithmetic against the dynamic Linear it is built from
// (bit for bit), the error against the float LSTM (a bound derived from the quantization
// steps for one step; measured tolerances for sequences), every LSTM option, threads,
// quantize_dynamic on a model that mixes Linear and LSTM, state_dict / clone, and errors.

#include <ember/ember.h>
#include <ember/quant/quant.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace quant_dynamic_lstm_test {

using ember::testing::ExpectError;
using ember::testing::Floats;
using ember::testing::Sizes;
using I64 = std::vector<int64_t>;
using State = std::tuple<Tensor, Tensor>;

float MaxAbsDiff(const Tensor& a, const Tensor& b) { return (a - b).abs().amax().item<float>(); }

// A DynamicQuantizedLinear holding one of the LSTM's int8 products.
quant::DynamicQuantizedLinear Product(const Tensor& qweight, const Tensor& scales, const Tensor& bias) {
  quant::DynamicQuantizedLinear q(qweight.size(1), qweight.size(0), bias.defined());
  NoGradGuard g;
  q->qweight.copy_(qweight);
  q->scales.copy_(scales);
  if (bias.defined()) q->bias.copy_(bias);
  return q;
}

TEST(DynamicQuantizedLSTM, IsTheDynamicLinearProductsPlusFloatGates) {
  // One layer, one direction, [L, N, in]: the input projection of the whole sequence is one
  // DynamicQuantizedLinear call, each step's hidden projection another; same bits.
  manual_seed(1);
  const int64_t L = 6, N = 9, in = 12, H = 10;
  nn::LSTM lstm(in, H);
  quant::DynamicQuantizedLSTM q(*lstm);
  const auto& w = q->weights().at(0);
  quant::DynamicQuantizedLinear ih = Product(w.weight_ih, w.weight_ih_scales, w.bias_ih);
  quant::DynamicQuantizedLinear hh = Product(w.weight_hh, w.weight_hh_scales, w.bias_hh);
  const Tensor x = randn({L, N, in}), h0 = randn({1, N, H}) * 0.5, c0 = randn({1, N, H});
  const Tensor xg = ih(x.reshape({L * N, in}));
  Tensor h = h0[0].contiguous(), c = c0[0];
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < L; ++t) {
    Tensor gates = hh(h);
    gates.add_(xg.narrow(0, t * N, N));
    const std::vector<Tensor> g = gates.chunk(4, 1);
    c = g[1].sigmoid() * c + g[0].sigmoid() * g[2].tanh();
    h = g[3].sigmoid() * c.tanh();
    outs.push_back(h);
  }
  auto [out, state] = q(x, State{h0, c0});
  EXPECT_EQ(Floats(out), Floats(stack(outs, 0)));
  EXPECT_EQ(Floats(std::get<0>(state)), Floats(h.unsqueeze(0)));
  EXPECT_EQ(Floats(std::get<1>(state)), Floats(c.unsqueeze(0)));
  EXPECT_FALSE(out.requires_grad());
}

// Per element of y = x W^T + b computed through the dynamic int8 scheme: |x^ w^ - x w| <=
// |w| |x^ - x| + |x^| |w^ - w| <= |w| sx / 2 + (|x| + sx / 2) sw / 2, summed over k.
Tensor ProductErrorBound(const Tensor& x, const Tensor& w, const Tensor& sw) {
  const float lo = std::min(0.0f, x.amin().item<float>()), hi = std::max(0.0f, x.amax().item<float>());
  const float sx = quant::choose_qparams(lo, hi, 0, 127).scale;
  return mm(x.abs() + sx / 2, sw.unsqueeze(1).expand(w.sizes()).t() / 2) +
         (w.abs().sum(1) * (sx / 2)).unsqueeze(0);
}

TEST(DynamicQuantizedLSTM, OneStepWithinBoundDerivedFromTheQuantizationSteps) {
  manual_seed(2);
  const int64_t N = 5, in = 16, H = 12;
  nn::LSTM lstm(in, H);
  quant::DynamicQuantizedLSTM q(*lstm);
  const Tensor x = randn({1, N, in}), h0 = randn({1, N, H}) * 0.5, c0 = randn({1, N, H});
  auto [out_q, st_q] = q(x, State{h0, c0});
  Tensor out_f, h_f, c_f;
  {
    NoGradGuard g;
    auto [o, st] = lstm(x, State{h0, c0});
    out_f = o;
    h_f = std::get<0>(st);
    c_f = std::get<1>(st);
  }
  // Gate pre-activation errors, then through sigmoid (slope <= 1/4), tanh (<= 1) and the
  // products of values in [-1, 1] (i, f, o, g, tanh c).
  const auto& w = q->weights().at(0);
  const Tensor e = ProductErrorBound(x[0], lstm->flat_weights()[0].detach(), w.weight_ih_scales) +
                   ProductErrorBound(h0[0], lstm->flat_weights()[1].detach(), w.weight_hh_scales);
  const std::vector<Tensor> eg = e.chunk(4, 1);
  const Tensor di = eg[0] / 4, df = eg[1] / 4, dg = eg[2], d_o = eg[3] / 4;
  const Tensor dc = df * c0[0].abs() + di + dg;
  const Tensor dh = d_o + dc;
  const float slack = 1e-5f;  // float32 rounding of the gate arithmetic
  EXPECT_TRUE(((std::get<1>(st_q)[0] - c_f[0]).abs() <= dc + slack).all().item<bool>());
  EXPECT_TRUE(((std::get<0>(st_q)[0] - h_f[0]).abs() <= dh + slack).all().item<bool>());
  EXPECT_EQ(Floats(out_q[0]), Floats(std::get<0>(st_q)[0]));
  // The bound is a worst case over k (every rounding error of the same sign), ~10x the
  // measured error, yet well below the values' own size (|h| < 1, |c| up to ~4).
  EXPECT_LT(dh.amax().item<float>(), 0.3f);
  EXPECT_LT(dc.amax().item<float>(), 0.3f);
  std::printf("one step: max |h_q - h_f| %.3g (bound %.3g), max |c_q - c_f| %.3g (bound %.3g)\n",
              MaxAbsDiff(std::get<0>(st_q), h_f), dh.amax().item<float>(), MaxAbsDiff(std::get<1>(st_q), c_f),
              dc.amax().item<float>());
}

struct Config {
  const char* name;
  int64_t layers;
  bool bidirectional, batch_first, bias, with_state, unbatched;
};

TEST(DynamicQuantizedLSTM, CloseToFloatForEveryOption) {
  const int64_t L = 7, N = 4, in = 20, H = 16;
  const Config configs[] = {
      {"1 layer", 1, false, false, true, false, false},
      {"2 layers", 2, false, false, true, false, false},
      {"bidirectional", 1, true, false, true, false, false},
      {"2 layers bidirectional batch_first, h0 c0", 2, true, true, true, true, false},
      {"no bias, h0 c0", 1, false, false, false, true, false},
      {"unbatched 2 layers bidirectional, h0 c0", 2, true, false, true, true, true},
      {"unbatched batch_first (ignored)", 1, false, true, true, false, true},
  };
  int seed = 10;
  for (const Config& cf : configs) {
    manual_seed(seed++);
    nn::LSTM lstm(nn::LSTMOptions(in, H)
                      .num_layers(cf.layers)
                      .bidirectional(cf.bidirectional)
                      .batch_first(cf.batch_first)
                      .bias(cf.bias)
                      .dropout(cf.layers > 1 ? 0.5 : 0.0));
    lstm->eval();
    quant::DynamicQuantizedLSTM q(*lstm);
    const int64_t D = cf.bidirectional ? 2 : 1;
    const Tensor x = cf.unbatched ? randn({L, in}) : cf.batch_first ? randn({N, L, in}) : randn({L, N, in});
    std::optional<State> hx;
    if (cf.with_state) {
      const I64 s = cf.unbatched ? I64{cf.layers * D, H} : I64{cf.layers * D, N, H};
      hx = State{randn(s) * 0.5, randn(s)};
    }
    Tensor out_f, h_f, c_f;
    {
      NoGradGuard g;
      auto [o, st] = lstm(x, hx);
      out_f = o;
      std::tie(h_f, c_f) = st;
    }
    auto [out_q, st_q] = q(x, hx);
    ASSERT_EQ(Sizes(out_q), Sizes(out_f)) << cf.name;
    ASSERT_EQ(Sizes(std::get<0>(st_q)), Sizes(h_f)) << cf.name;
    ASSERT_EQ(Sizes(std::get<1>(st_q)), Sizes(c_f)) << cf.name;
    const float eo = MaxAbsDiff(out_q, out_f), eh = MaxAbsDiff(std::get<0>(st_q), h_f),
                ec = MaxAbsDiff(std::get<1>(st_q), c_f);
    // One step's bound (test above) is ~0.05 for these sizes; over 7 steps and 2 layers the
    // errors do not add up, the recurrence being contractive at PyTorch's init. Measured:
    // at most ~0.01 on the outputs and ~0.02 on c.
    EXPECT_LT(eo, 0.03f) << cf.name;
    EXPECT_LT(eh, 0.03f) << cf.name;
    EXPECT_LT(ec, 0.05f) << cf.name;
    EXPECT_GT(eo, 0.0f) << cf.name;  // it is int8, not a copy of the float path
    std::printf("%s: max error output %.3g, h_n %.3g, c_n %.3g\n", cf.name, eo, eh, ec);
  }
}

TEST(DynamicQuantizedLSTM, SameBitsWithOneOrTwoThreads) {
  manual_seed(3);
  nn::LSTM lstm(nn::LSTMOptions(64, 96).num_layers(2).bidirectional(true));
  quant::DynamicQuantizedLSTM q(*lstm);
  const Tensor x = randn({12, 33, 64});  // 33 rows per step: oneDNN; the ih product: 396 rows
  const int saved = get_num_threads();
  set_num_threads(1);
  auto [o1, s1] = q(x);
  set_num_threads(2);
  auto [o2, s2] = q(x);
  set_num_threads(saved);
  EXPECT_EQ(Floats(o1), Floats(o2));
  EXPECT_EQ(Floats(std::get<1>(s1)), Floats(std::get<1>(s2)));
  // Few rows per step (ember's own GEMM kernel) too.
  const Tensor small = randn({5, 3, 64});
  set_num_threads(1);
  const std::vector<float> a = Floats(std::get<0>(q(small)));
  set_num_threads(2);
  const std::vector<float> b = Floats(std::get<0>(q(small)));
  set_num_threads(saved);
  EXPECT_EQ(a, b);
}

TEST(DynamicQuantizedLSTM, ConcurrentCallsAgree) {
  // Several threads call one module from its first call on (the row sums are set up then).
  manual_seed(8);
  nn::LSTM lstm(nn::LSTMOptions(16, 24).num_layers(2));
  quant::DynamicQuantizedLSTM q(*lstm);
  quant::DynamicQuantizedLSTM fresh(*lstm);
  const Tensor small = randn({4, 2, 16}), large = randn({4, 12, 16});
  const std::vector<float> want_small = Floats(std::get<0>(fresh(small))),
                           want_large = Floats(std::get<0>(fresh(large)));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        if (Floats(std::get<0>(q(small))) != want_small || Floats(std::get<0>(q(large))) != want_large) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(DynamicQuantizedLSTM, EmptySequenceReturnsTheInitialState) {
  manual_seed(4);
  nn::LSTM lstm(6, 5);
  quant::DynamicQuantizedLSTM q(*lstm);
  const Tensor h0 = randn({1, 2, 5}), c0 = randn({1, 2, 5});
  auto [out, st] = q(randn({0, 2, 6}), State{h0, c0});
  EXPECT_EQ(Sizes(out), (I64{0, 2, 5}));
  EXPECT_EQ(Floats(std::get<0>(st)), Floats(h0));
  EXPECT_EQ(Floats(std::get<1>(st)), Floats(c0));
}

// A tagger: Linear embedding -> LSTM -> Linear head, calling its children through the
// module tree so that quantize_dynamic's replacements are the ones that run.
struct TaggerImpl : nn::Module {
  TaggerImpl() : Module("Tagger") {
    register_module("embed", nn::Linear(10, 24));
    register_module("lstm", nn::LSTM(nn::LSTMOptions(24, 32).num_layers(2).batch_first(true)));
    register_module("head", nn::Linear(32, 5));
  }
  Tensor forward(const Tensor& x) override {
    const auto children = named_children();
    const Tensor e = (*children["embed"])(x).relu();
    const std::shared_ptr<nn::Module>& lstm = children["lstm"];
    Tensor seq;
    if (auto* q = dynamic_cast<quant::DynamicQuantizedLSTMImpl*>(lstm.get())) {
      seq = std::get<0>((*q)(e));
    } else {
      seq = std::get<0>(lstm->as<nn::LSTMImpl>()->operator()(e));
    }
    return (*children["head"])(seq);
  }
};
EMBER_MODULE(Tagger);

TEST(QuantizeDynamicLSTM, MixedLinearAndLSTMModel) {
  manual_seed(5);
  Tagger model;
  model->eval();
  const Tensor x = randn({3, 8, 10});
  Tensor fp;
  {
    NoGradGuard g;
    fp = model(x);
  }
  // Only Linear asked: the LSTM stays float.
  Tagger linear_only;
  linear_only->load_state_dict(model->state_dict());
  EXPECT_EQ(quant::quantize_dynamic(*linear_only, {quant::ModuleKind::Linear}),
            (std::vector<std::string>{"embed", "head"}));
  EXPECT_EQ(linear_only->named_children()["lstm"]->name(), "LSTM");

  const std::vector<std::string> names =
      quant::quantize_dynamic(*model, {quant::ModuleKind::Linear, quant::ModuleKind::LSTM});
  EXPECT_EQ(names, (std::vector<std::string>{"embed", "lstm", "head"}));
  EXPECT_EQ(model->parameters().size(), 0u);
  const Tensor got = model(x);
  EXPECT_EQ(Sizes(got), (I64{3, 8, 5}));
  const float err = MaxAbsDiff(got, fp), range = fp.abs().amax().item<float>();
  EXPECT_LT(err, 0.03f * range + 0.01f);
  std::printf("tagger: max |int8 - fp32| %.3g (outputs up to %.3g)\n", err, range);
  const std::string repr = model->repr();
  EXPECT_NE(repr.find("(lstm): DynamicQuantizedLSTM(24, 32, num_layers=2, batch_first=True, dtype=qint8, "
                      "qscheme=per_channel_symmetric)"),
            std::string::npos)
      << repr;
  ExpectError([&] { jit::trace(*model, x); }, {"DynamicQuantized", "cannot be traced"});
  // Asking again replaces nothing.
  EXPECT_TRUE(quant::quantize_dynamic(*model, {quant::ModuleKind::LSTM}).empty());
}

TEST(QuantizeDynamicLSTM, StateDictLoadAndClone) {
  manual_seed(6);
  nn::Sequential model(nn::LSTM(nn::LSTMOptions(8, 12).bidirectional(true)));
  const int64_t fp32_bytes = quant::state_dict_bytes(*model);
  EXPECT_EQ(quant::quantize_dynamic(*model, {quant::ModuleKind::LSTM}), (std::vector<std::string>{"0"}));
  auto q = model->ptr<quant::DynamicQuantizedLSTMImpl>(0);
  const auto sd = model->state_dict();
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{
                           "0.weight_ih_l0", "0.weight_ih_l0_scales", "0.weight_hh_l0", "0.weight_hh_l0_scales",
                           "0.bias_ih_l0", "0.bias_hh_l0", "0.weight_ih_l0_reverse", "0.weight_ih_l0_reverse_scales",
                           "0.weight_hh_l0_reverse", "0.weight_hh_l0_reverse_scales", "0.bias_ih_l0_reverse",
                           "0.bias_hh_l0_reverse"}));
  EXPECT_EQ(sd["0.weight_ih_l0"].dtype(), kInt8);
  EXPECT_EQ(Sizes(sd["0.weight_ih_l0"]), (I64{48, 8}));
  EXPECT_EQ(sd["0.weight_hh_l0_scales"].dtype(), kFloat32);
  // int8 weights, float32 scales and biases: (48*8 + 48*12) bytes + 4 * 48 * 4 bytes per direction.
  EXPECT_EQ(quant::state_dict_bytes(*model), 2 * ((48 * 8 + 48 * 12) + 4 * 48 * 4));
  EXPECT_EQ(fp32_bytes, 2 * 4 * (48 * 8 + 48 * 12 + 2 * 48));

  const Tensor x = randn({5, 2, 8});
  const std::vector<float> want = Floats(std::get<0>((*q)(x)));
  // Through a file, into a module built empty from the options.
  const auto path = std::filesystem::temp_directory_path() / ("ember_qlstm_" + std::to_string(::getpid()) + ".safetensors");
  save(q->state_dict(), path.string());
  quant::DynamicQuantizedLSTM loaded(nn::LSTMOptions(8, 12).bidirectional(true));
  EXPECT_NE(Floats(std::get<0>(loaded(x))), want);  // zero weights before loading
  loaded->load_state_dict(load(path.string()).to_tensor_dict());
  std::filesystem::remove(path);
  EXPECT_EQ(Floats(std::get<0>(loaded(x))), want);
  // clone: a deep copy.
  auto copy = std::dynamic_pointer_cast<quant::DynamicQuantizedLSTMImpl>(q->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(Floats(std::get<0>((*copy)(x))), want);
  {
    NoGradGuard g;
    q->weights()[0].weight_hh.zero_();  // changing the original's codes leaves the copy alone
  }
  EXPECT_EQ(Floats(std::get<0>((*copy)(x))), want);
  EXPECT_NE(Floats(std::get<0>((*q)(x))), want);  // and the original sees its new codes
}

TEST(QuantizeDynamicLSTM, Errors) {
  manual_seed(7);
  nn::LSTM lstm(nn::LSTMOptions(8, 6).num_layers(2));
  quant::DynamicQuantizedLSTM q(*lstm);
  ExpectError([&] { q(randn({3, 2, 7})); }, {"[DynamicQuantizedLSTM]", "input_size=8", "[3, 2, 7]"});
  ExpectError([&] { q(randn({3, 2, 8}, TensorOptions(kFloat64))); },
              {"[DynamicQuantizedLSTM]", "float32", "float64", ".to(ember::kFloat32)"});
  ExpectError([&] { q(randn({8})); }, {"[DynamicQuantizedLSTM]", "2 (unbatched) or 3 dims"});
  ExpectError([&] { q(Tensor()); }, {"[DynamicQuantizedLSTM]", "undefined"});
  ExpectError([&] { q(randn({3, 2, 8}), State{randn({2, 2, 6}), Tensor()}); },
              {"[DynamicQuantizedLSTM]", "both h0 and c0"});
  ExpectError([&] { q(randn({3, 2, 8}), State{randn({1, 2, 6}), randn({1, 2, 6})}); },
              {"[DynamicQuantizedLSTM]", "hidden state h0", "[2, 2, 6]", "[1, 2, 6]"});
  Tensor bad = randn({3, 2, 8});
  bad[1][0][3].fill_(INFINITY);
  ExpectError([&] { q(bad); }, {"[DynamicQuantizedLSTM]", "[3, 2, 8]", "inf or NaN"});
  // The model itself cannot be swapped in place.
  ExpectError([&] { quant::quantize_dynamic(*lstm, {quant::ModuleKind::LSTM}); },
              {"[quant::quantize_dynamic]", "itself is an LSTM", "DynamicQuantizedLSTM(*lstm)"});
  // Weights converted to float64 name the fix.
  q->to(kFloat64);
  ExpectError([&] { q(randn({3, 2, 8})); }, {"[DynamicQuantizedLSTM]", "weight_ih_l0_scales", "float32", "float64"});
  // Module's one-Tensor forward (what nn::Sequential's Tensor path calls) is refused.
  quant::DynamicQuantizedLSTM q2(*lstm);
  ExpectError([&] { q2->nn::Module::operator()(randn({3, 2, 8})); }, {"DynamicQuantizedLSTM", "no forward(Tensor)"});
}

}  // namespace quant_dynamic_lstm_test
}  // namespace ember
