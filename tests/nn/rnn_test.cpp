// Recurrent layers: parameter names/shapes, output and state shapes (batch_first,
// bidirectional, multi-layer, unbatched), gate order against hand-written formulas,
// cells against the layers, error messages, gradcheck in float64.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <cmath>
#include <string>
#include <vector>

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace nn_rnn_test {

using Keys = std::vector<std::string>;
using Sizes = std::vector<int64_t>;

using ember::testing::ErrorOf;

void ExpectClose(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.sizes().vec(), b.sizes().vec());
  EXPECT_TRUE(a.allclose(b, tol, tol)) << a << "\nvs\n" << b;
}

TEST(RNN, ParameterNamesAndShapes) {
  nn::LSTM lstm(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true));
  EXPECT_EQ(lstm->named_parameters().keys(),
            (Keys{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l0_reverse",
                  "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse", "weight_ih_l1", "weight_hh_l1",
                  "bias_ih_l1", "bias_hh_l1", "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse",
                  "bias_hh_l1_reverse"}));
  auto p = lstm->named_parameters();
  EXPECT_EQ(p["weight_ih_l0"].sizes().vec(), (Sizes{20, 3}));
  EXPECT_EQ(p["weight_hh_l0"].sizes().vec(), (Sizes{20, 5}));
  EXPECT_EQ(p["weight_ih_l1_reverse"].sizes().vec(), (Sizes{20, 10}));
  EXPECT_EQ(p["bias_hh_l1"].sizes().vec(), (Sizes{20}));
  // U(-1/sqrt(5), 1/sqrt(5)).
  for (const Tensor& w : lstm->parameters()) EXPECT_LE(w.abs().max().item<float>(), 1.0 / std::sqrt(5.0) + 1e-6);
  nn::GRU gru(nn::GRUOptions(4, 6).bias(false));
  EXPECT_EQ(gru->named_parameters().keys(), (Keys{"weight_ih_l0", "weight_hh_l0"}));
  EXPECT_EQ(gru->named_parameters()["weight_ih_l0"].sizes().vec(), (Sizes{18, 4}));
  nn::RNN rnn(nn::RNNOptions(4, 6).nonlinearity("relu").num_layers(3));
  EXPECT_EQ(rnn->parameters().size(), 12u);
  EXPECT_EQ(rnn->named_parameters()["weight_hh_l2"].sizes().vec(), (Sizes{6, 6}));
  EXPECT_NE(rnn->repr().find("RNN(4, 6, num_layers=3, nonlinearity=relu)"), std::string::npos) << rnn->repr();
  nn::LSTMCell cell(3, 7);
  EXPECT_EQ(cell->named_parameters().keys(), (Keys{"weight_ih", "weight_hh", "bias_ih", "bias_hh"}));
  EXPECT_EQ(cell->weight_ih.sizes().vec(), (Sizes{28, 3}));
}

TEST(RNN, OutputAndStateShapes) {
  for (bool batch_first : {false, true}) {
    nn::LSTM lstm(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true).batch_first(batch_first));
    Tensor x = batch_first ? randn({4, 7, 3}) : randn({7, 4, 3});  // N = 4, L = 7
    auto [out, state] = lstm->forward(x);
    auto [h, c] = state;
    EXPECT_EQ(out.sizes().vec(), batch_first ? (Sizes{4, 7, 10}) : (Sizes{7, 4, 10}));
    EXPECT_EQ(h.sizes().vec(), (Sizes{4, 4, 5}));
    EXPECT_EQ(c.sizes().vec(), (Sizes{4, 4, 5}));
    // The last layer's forward direction ends at t = L-1, the reverse one at t = 0.
    Tensor out_lnh = batch_first ? out.transpose(0, 1) : out;
    ExpectClose(out_lnh[6].narrow(1, 0, 5), h[2]);
    ExpectClose(out_lnh[0].narrow(1, 5, 5), h[3]);
  }
  nn::GRU gru(nn::GRUOptions(3, 5).batch_first(true));
  auto [o, hn] = gru->forward(randn({2, 6, 3}), zeros({1, 2, 5}));
  EXPECT_EQ(o.sizes().vec(), (Sizes{2, 6, 5}));
  EXPECT_EQ(hn.sizes().vec(), (Sizes{1, 2, 5}));
  // Unbatched: [L, in] -> [L, H], h_n [layers * D, H]; equal to the batch of one.
  nn::RNN rnn(nn::RNNOptions(3, 4).bidirectional(true));
  Tensor x = randn({5, 3});
  auto [uo, uh] = rnn->forward(x);
  EXPECT_EQ(uo.sizes().vec(), (Sizes{5, 8}));
  EXPECT_EQ(uh.sizes().vec(), (Sizes{2, 4}));
  auto [bo, bh] = rnn->forward(x.unsqueeze(1));
  ExpectClose(uo, bo.squeeze(1));
  ExpectClose(uh, bh.squeeze(1));
}

TEST(RNN, GateOrderMatchesPyTorchFormulas) {
  const int64_t H = 3;
  Tensor x = randn({2, 4}), h = randn({2, H}), c = randn({2, H});
  nn::LSTM lstm(4, H);
  auto p = lstm->named_parameters();
  auto [out, state] = lstm->forward(x.unsqueeze(0), nn::LSTMImpl::State{h.unsqueeze(0), c.unsqueeze(0)});
  Tensor gates = x.matmul(p["weight_ih_l0"].t()) + p["bias_ih_l0"] + h.matmul(p["weight_hh_l0"].t()) + p["bias_hh_l0"];
  auto g = gates.chunk(4, 1);  // i, f, g, o
  Tensor c1 = g[1].sigmoid() * c + g[0].sigmoid() * g[2].tanh();
  Tensor h1 = g[3].sigmoid() * c1.tanh();
  ExpectClose(std::get<0>(state)[0], h1);
  ExpectClose(std::get<1>(state)[0], c1);
  ExpectClose(out[0], h1);

  nn::GRU gru(4, H);
  auto q = gru->named_parameters();
  auto [gout, gh] = gru->forward(x.unsqueeze(0), h.unsqueeze(0));
  auto xi = (x.matmul(q["weight_ih_l0"].t()) + q["bias_ih_l0"]).chunk(3, 1);
  auto hh = (h.matmul(q["weight_hh_l0"].t()) + q["bias_hh_l0"]).chunk(3, 1);
  Tensor r = (xi[0] + hh[0]).sigmoid(), z = (xi[1] + hh[1]).sigmoid();
  Tensor n = (xi[2] + r * hh[2]).tanh();
  ExpectClose(gh[0], (1 - z) * n + z * h);

  nn::RNN rnn(nn::RNNOptions(4, H).nonlinearity("relu"));
  auto s = rnn->named_parameters();
  auto [rout, rh] = rnn->forward(x.unsqueeze(0), h.unsqueeze(0));
  ExpectClose(rh[0], (x.matmul(s["weight_ih_l0"].t()) + s["bias_ih_l0"] + h.matmul(s["weight_hh_l0"].t()) +
                      s["bias_hh_l0"]).relu());
}

TEST(RNN, CellsMatchOneStepOfTheLayers) {
  Tensor x = randn({3, 4}), h = randn({3, 5}), c = randn({3, 5});
  nn::LSTMCell lcell(4, 5);
  nn::LSTM lstm(4, 5);
  lstm->load_state_dict({{"weight_ih_l0", lcell->weight_ih}, {"weight_hh_l0", lcell->weight_hh},
                         {"bias_ih_l0", lcell->bias_ih}, {"bias_hh_l0", lcell->bias_hh}});
  auto [h1, c1] = lcell(x, nn::LSTMCellImpl::State{h, c});
  auto [out, st] = lstm(x.unsqueeze(0), nn::LSTMImpl::State{h.unsqueeze(0), c.unsqueeze(0)});
  ExpectClose(h1, std::get<0>(st)[0]);
  ExpectClose(c1, std::get<1>(st)[0]);

  nn::GRUCell gcell(4, 5);
  nn::GRU gru(4, 5);
  gru->load_state_dict({{"weight_ih_l0", gcell->weight_ih}, {"weight_hh_l0", gcell->weight_hh},
                        {"bias_ih_l0", gcell->bias_ih}, {"bias_hh_l0", gcell->bias_hh}});
  ExpectClose(gcell(x, h), std::get<1>(gru(x.unsqueeze(0), h.unsqueeze(0)))[0]);
  // Unbatched cell input and a zero default state.
  EXPECT_EQ(gcell(randn({4})).sizes().vec(), (Sizes{5}));
  nn::RNNCell rcell(nn::RNNCellOptions(4, 5).nonlinearity("relu"));
  EXPECT_TRUE(rcell(x).ge(0).all().item<bool>());
}

TEST(RNN, ErrorsNameTheShapes) {
  nn::LSTM lstm(nn::LSTMOptions(3, 5).num_layers(2));
  std::string e = ErrorOf([&] { lstm->forward(randn({7, 2, 4})); });
  EXPECT_NE(e.find("[lstm] input.size(-1) must be equal to input_size. Expected 3, got 4"), std::string::npos) << e;
  e = ErrorOf([&] { lstm->forward(randn({7, 2, 3}), nn::LSTMImpl::State{zeros({1, 2, 5}), zeros({2, 2, 5})}); });
  EXPECT_NE(e.find("expected hidden state h0 of sizes [2, 2, 5], got [1, 2, 5]"), std::string::npos) << e;
  e = ErrorOf([&] { lstm->forward(randn({2, 3, 4, 3})); });
  EXPECT_NE(e.find("2 (unbatched) or 3 dims"), std::string::npos) << e;
  e = ErrorOf([&] { nn::RNN(nn::RNNOptions(2, 3).nonlinearity("sigmoid")); });
  EXPECT_NE(e.find("unknown nonlinearity 'sigmoid'"), std::string::npos) << e;
  nn::GRUCell cell(3, 4);
  e = ErrorOf([&] { cell(randn({2, 3}), randn({3, 4})); });
  EXPECT_NE(e.find("expected hidden state of sizes [2, 4], got [3, 4]"), std::string::npos) << e;
}

TEST(RNN, DropoutBetweenLayersOnlyInTraining) {
  nn::GRU gru(nn::GRUOptions(3, 8).num_layers(2).dropout(0.5));
  Tensor x = randn({4, 2, 3});
  manual_seed(1);
  Tensor a = std::get<0>(gru(x));
  manual_seed(2);
  Tensor b = std::get<0>(gru(x));
  EXPECT_FALSE(a.allclose(b));
  gru->eval();
  EXPECT_TRUE(std::get<0>(gru(x)).equal(std::get<0>(gru(x))));
}

TEST(RNN, GradcheckFloat64) {
  manual_seed(0);
  nn::LSTM lstm(nn::LSTMOptions(2, 3).num_layers(2).bidirectional(true).batch_first(true));
  lstm->to(kFloat64);
  Tensor x = randn({2, 3, 2}, TensorOptions(kFloat64)).requires_grad_();
  Tensor h0 = randn({4, 2, 3}, TensorOptions(kFloat64)).requires_grad_();
  Tensor c0 = randn({4, 2, 3}, TensorOptions(kFloat64)).requires_grad_();
  Tensor w = lstm->named_parameters()["weight_hh_l1_reverse"];
  EXPECT_TRUE(autograd::gradcheck(
      [&](const autograd::variable_list& in) {
        auto [out, st] = lstm->forward(in[0], nn::LSTMImpl::State{in[1], in[2]});
        return autograd::variable_list{out, std::get<0>(st), std::get<1>(st)};
      },
      {x, h0, c0}));
  nn::GRU gru(nn::GRUOptions(2, 3).bidirectional(true));
  gru->to(kFloat64);
  EXPECT_TRUE(autograd::gradcheck(
      [&](const autograd::variable_list& in) {
        auto [out, h] = gru->forward(in[0], in[1]);
        return autograd::variable_list{out, h};
      },
      {randn({3, 2, 2}, TensorOptions(kFloat64)).requires_grad_(),
       randn({2, 2, 3}, TensorOptions(kFloat64)).requires_grad_()}));
  nn::RNN rnn(nn::RNNOptions(2, 3).num_layers(2));
  rnn->to(kFloat64);
  EXPECT_TRUE(autograd::gradcheck(
      [&](const autograd::variable_list& in) { return autograd::variable_list{std::get<0>(rnn->forward(in[0]))}; },
      {randn({3, 2, 2}, TensorOptions(kFloat64)).requires_grad_()}));
  // Parameters get gradients too.
  auto [out, st] = lstm->forward(x);
  out.sum().backward();
  for (const Tensor& p : lstm->parameters()) EXPECT_TRUE(p.grad().defined());
  EXPECT_GT(w.grad().abs().sum().item<double>(), 0);
}

TEST(RNN, CloneCopiesValues) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2));
  auto copy = std::dynamic_pointer_cast<nn::LSTMImpl>(lstm->clone());
  ASSERT_TRUE(copy);
  Tensor x = randn({2, 1, 3});
  EXPECT_TRUE(std::get<0>(copy->forward(x)).equal(std::get<0>(lstm->forward(x))));
  EXPECT_FALSE(copy->flat_weights()[0].is_alias_of(lstm->flat_weights()[0]));
}

}  // namespace
}  // namespace ember
