// Recurrent layers, MultiheadAttention and TransformerEncoderLayer against libtorch 1.13:
// the same weights copied by name, the same inputs; outputs, states and every gradient
// (inputs, initial states, parameters) are compared.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ember/ember.h>

#include <cmath>
#include <string>
#include <vector>

#include "parity/grad_parity.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace rnn_parity {

using ET = ember::Tensor;
using TT = torch::Tensor;
using parity::expect_tensor_close;

// Copies every ember parameter into the torch parameter of the same name; the name sets
// must be equal.
void copy_params(const ember::nn::Module& e, torch::nn::Module& t) {
  auto ep = e.named_parameters();
  auto tp = t.named_parameters();
  ASSERT_EQ(ep.size(), tp.size());
  torch::NoGradGuard ng;
  for (auto& item : tp) {
    const ET* src = ep.find(item.key());
    ASSERT_NE(src, nullptr) << "ember has no parameter " << item.key();
    item.value().copy_(parity::to_torch(*src));
  }
}

// Parameter gradients, compared by name.
void expect_param_grads(const ember::nn::Module& e, const torch::nn::Module& t, double tol) {
  auto ep = e.named_parameters();
  for (const auto& item : t.named_parameters()) {
    expect_tensor_close(ep[item.key()].grad(), item.value().grad(), "grad of " + item.key(), tol, tol);
  }
}

// Random weights for out (ember and torch copies of the same values).
std::pair<ET, TT> grad_like(const ET& out) {
  ET g = ember::randn(out.sizes());
  return {g, parity::to_torch(g)};
}

TEST(RNNParity, LSTMMultiLayerBidirectionalBatchFirst) {
  for (bool batch_first : {true, false}) {
    SCOPED_TRACE(batch_first ? "batch_first" : "seq_first");
    ember::nn::LSTM e(ember::nn::LSTMOptions(5, 6).num_layers(2).bidirectional(true).batch_first(batch_first));
    torch::nn::LSTM t(torch::nn::LSTMOptions(5, 6).num_layers(2).bidirectional(true).batch_first(batch_first));
    copy_params(*e, *t);
    // A non-contiguous input (a transposed view).
    ET x = batch_first ? ember::randn({7, 3, 5}).transpose(0, 1) : ember::randn({3, 7, 5}).transpose(0, 1);
    x.requires_grad_();
    ET h0 = ember::randn({4, 3, 6}).requires_grad_(), c0 = ember::randn({4, 3, 6}).requires_grad_();
    TT tx = parity::to_torch(x).requires_grad_(), th0 = parity::to_torch(h0).requires_grad_(),
       tc0 = parity::to_torch(c0).requires_grad_();
    auto [out, st] = e->forward(x, ember::nn::LSTMImpl::State{h0, c0});
    auto [tout, tst] = t->forward(tx, std::make_tuple(th0, tc0));
    expect_tensor_close(out, tout, "output", 1e-5, 1e-5);
    expect_tensor_close(std::get<0>(st), std::get<0>(tst), "h_n", 1e-5, 1e-5);
    expect_tensor_close(std::get<1>(st), std::get<1>(tst), "c_n", 1e-5, 1e-5);
    auto [g1, tg1] = grad_like(out);
    auto [g2, tg2] = grad_like(std::get<0>(st));
    auto [g3, tg3] = grad_like(std::get<1>(st));
    ((out * g1).sum() + (std::get<0>(st) * g2).sum() + (std::get<1>(st) * g3).sum()).backward();
    ((tout * tg1).sum() + (std::get<0>(tst) * tg2).sum() + (std::get<1>(tst) * tg3).sum()).backward();
    expect_tensor_close(x.grad(), tx.grad(), "input grad", 1e-4, 1e-5);
    expect_tensor_close(h0.grad(), th0.grad(), "h0 grad", 1e-4, 1e-5);
    expect_tensor_close(c0.grad(), tc0.grad(), "c0 grad", 1e-4, 1e-5);
    expect_param_grads(*e, *t, 1e-4);
  }
}

TEST(RNNParity, GRUAndRNNMultiLayerBidirectional) {
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE(kind == 0 ? "GRU" : kind == 1 ? "RNN tanh" : "RNN relu");
    std::shared_ptr<ember::nn::Module> em;
    std::shared_ptr<torch::nn::Module> tm;
    ember::nn::GRU eg{nullptr};
    ember::nn::RNN er{nullptr};
    torch::nn::GRU tg{nullptr};
    torch::nn::RNN tr{nullptr};
    if (kind == 0) {
      eg = ember::nn::GRU(ember::nn::GRUOptions(4, 5).num_layers(3).bidirectional(true).batch_first(true));
      tg = torch::nn::GRU(torch::nn::GRUOptions(4, 5).num_layers(3).bidirectional(true).batch_first(true));
      em = eg.ptr(), tm = tg.ptr();
    } else {
      er = ember::nn::RNN(ember::nn::RNNOptions(4, 5).num_layers(3).bidirectional(true).batch_first(true).nonlinearity(
          kind == 1 ? "tanh" : "relu"));
      auto opts = torch::nn::RNNOptions(4, 5).num_layers(3).bidirectional(true).batch_first(true);
      if (kind == 2) opts.nonlinearity(torch::kReLU);
      tr = torch::nn::RNN(opts);
      em = er.ptr(), tm = tr.ptr();
    }
    copy_params(*em, *tm);
    ET x = ember::randn({3, 6, 4}).requires_grad_();
    ET h0 = ember::randn({6, 3, 5}).requires_grad_();
    TT tx = parity::to_torch(x).requires_grad_(), th0 = parity::to_torch(h0).requires_grad_();
    auto [out, hn] = kind == 0 ? eg->forward(x, h0) : er->forward(x, h0);
    auto [tout, thn] = kind == 0 ? tg->forward(tx, th0) : tr->forward(tx, th0);
    expect_tensor_close(out, tout, "output", 1e-5, 1e-5);
    expect_tensor_close(hn, thn, "h_n", 1e-5, 1e-5);
    auto [g1, tg1] = grad_like(out);
    auto [g2, tg2] = grad_like(hn);
    ((out * g1).sum() + (hn * g2).sum()).backward();
    ((tout * tg1).sum() + (thn * tg2).sum()).backward();
    expect_tensor_close(x.grad(), tx.grad(), "input grad", 1e-4, 1e-5);
    expect_tensor_close(h0.grad(), th0.grad(), "h0 grad", 1e-4, 1e-5);
    expect_param_grads(*em, *tm, 1e-4);
  }
}

TEST(RNNParity, Cells) {
  ember::nn::LSTMCell el(4, 5);
  torch::nn::LSTMCell tl(4, 5);
  copy_params(*el, *tl);
  ET x = ember::randn({3, 4}), h = ember::randn({3, 5}), c = ember::randn({3, 5});
  auto [h1, c1] = el(x, ember::nn::LSTMCellImpl::State{h, c});
  auto [th1, tc1] = tl(parity::to_torch(x), std::make_tuple(parity::to_torch(h), parity::to_torch(c)));
  expect_tensor_close(h1, th1, "LSTMCell h", 1e-5, 1e-6);
  expect_tensor_close(c1, tc1, "LSTMCell c", 1e-5, 1e-6);
  ember::nn::GRUCell eg(4, 5);
  torch::nn::GRUCell tg(4, 5);
  copy_params(*eg, *tg);
  expect_tensor_close(eg(x, h), tg(parity::to_torch(x), parity::to_torch(h)), "GRUCell", 1e-5, 1e-6);
  ember::nn::RNNCell er(4, 5);
  torch::nn::RNNCell tr(4, 5);
  copy_params(*er, *tr);
  expect_tensor_close(er(x, h), tr(parity::to_torch(x), parity::to_torch(h)), "RNNCell", 1e-5, 1e-6);
}

TEST(AttentionParity, MultiheadAttentionWithMasks) {
  for (bool self : {true, false}) {
    SCOPED_TRACE(self ? "self-attention" : "cross-attention");
    ember::nn::MultiheadAttention e(ember::nn::MultiheadAttentionOptions(8, 2).batch_first(true));
    torch::nn::MultiheadAttention t(torch::nn::MultiheadAttentionOptions(8, 2));
    copy_params(*e, *t);
    const int64_t N = 3, L = 4, S = self ? 4 : 5;
    ET q = ember::randn({N, L, 8}).requires_grad_();
    ET k = self ? q : ember::randn({N, S, 8}).requires_grad_();
    ET v = self ? q : ember::randn({N, S, 8}).requires_grad_();
    ET kpm = ember::zeros({N, S}, ember::TensorOptions(ember::kBool));
    kpm.select(0, 1).narrow(0, S - 2, 2).fill_(true);
    ET am = ember::randn({L, S});
    // torch's C++ module has no batch_first: it gets [L, N, E] views.
    TT tq = parity::to_torch(q).requires_grad_();
    TT tk = self ? tq : parity::to_torch(k).requires_grad_();
    TT tv = self ? tq : parity::to_torch(v).requires_grad_();
    auto [out, w] = e(q, k, v, kpm, true, am);
    auto [tout, tw] = t(tq.transpose(0, 1), tk.transpose(0, 1), tv.transpose(0, 1), parity::to_torch(kpm), true,
                        parity::to_torch(am));
    expect_tensor_close(out, tout.transpose(0, 1), "attn_output", 1e-5, 1e-6);
    expect_tensor_close(w, tw, "averaged attn_weights", 1e-5, 1e-6);
    auto [g1, tg1] = grad_like(out);
    auto [g2, tg2] = grad_like(w);
    ((out * g1).sum() + (w * g2).sum()).backward();
    ((tout.transpose(0, 1) * tg1).sum() + (tw * tg2).sum()).backward();
    expect_tensor_close(q.grad(), tq.grad(), "query grad", 1e-4, 1e-5);
    if (!self) {
      expect_tensor_close(k.grad(), tk.grad(), "key grad", 1e-4, 1e-5);
      expect_tensor_close(v.grad(), tv.grad(), "value grad", 1e-4, 1e-5);
    }
    expect_param_grads(*e, *t, 1e-4);
    // Bool attn_mask (true = masked out, as in Python's torch.nn.MultiheadAttention) and
    // per-head weights. libtorch 1.13's C++ module adds a bool mask as 0/1 numbers instead,
    // so torch gets the equivalent float mask (-inf where true).
    ET bam = ember::rand({L, S}) > 0.7;
    bam.select(1, 0).fill_(false);
    auto [out2, w2] = e(q, k, v, ember::Tensor(), true, bam, false);
    auto [tout2, tw2] = t(tq.transpose(0, 1), tk.transpose(0, 1), tv.transpose(0, 1), TT(), true,
                          parity::to_torch(ember::zeros({L, S}).masked_fill(bam, -INFINITY)),
                          false);
    expect_tensor_close(out2, tout2.transpose(0, 1), "bool mask output", 1e-5, 1e-6);
    expect_tensor_close(w2, tw2, "per-head weights", 1e-5, 1e-6);
  }
}

// torch's C++ TransformerEncoderLayer is post-norm only ([S, N, E]); pre-norm is written
// out with torch's MultiheadAttention, Linear and layer_norm on the same weights.
TEST(TransformerParity, EncoderLayerPostAndPreNormEval) {
  for (bool norm_first : {false, true}) {
    SCOPED_TRACE(norm_first ? "pre-norm" : "post-norm");
    ember::nn::TransformerEncoderLayer e(
        ember::nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).batch_first(true).norm_first(norm_first)
            .activation("gelu"));
    torch::nn::TransformerEncoderLayer t(
        torch::nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).activation(torch::kGELU));
    copy_params(*e, *t);
    e->eval();
    t->eval();
    ET x = ember::randn({3, 5, 8}).requires_grad_();
    ET kpm = ember::zeros({3, 5}, ember::TensorOptions(ember::kBool));
    kpm.select(0, 2).narrow(0, 3, 2).fill_(true);
    TT tx = parity::to_torch(x).requires_grad_();
    TT tkpm = parity::to_torch(kpm);
    ET y = e(x, ember::Tensor(), kpm);
    TT ty;
    if (!norm_first) {
      ty = t(tx.transpose(0, 1), TT(), tkpm).transpose(0, 1);
    } else {
      namespace TF = torch::nn::functional;
      auto ln = [&](const TT& z, torch::nn::LayerNorm& n) { return n(z); };
      TT s = tx.transpose(0, 1);
      TT n1 = ln(s, t->norm1);
      TT a = s + std::get<0>(t->self_attn(n1, n1, n1, tkpm, false));
      TT n2 = ln(a, t->norm2);
      ty = (a + t->linear2(TF::gelu(t->linear1(n2)))).transpose(0, 1);
    }
    expect_tensor_close(y, ty, "output", 1e-5, 1e-5);
    auto [g, tg] = grad_like(y);
    (y * g).sum().backward();
    (ty * tg).sum().backward();
    expect_tensor_close(x.grad(), tx.grad(), "input grad", 1e-4, 1e-5);
    expect_param_grads(*e, *t, 1e-4);
  }
}


TEST(AttentionParity, MultiheadAttentionBiasKvZeroAttnAndKdim) {
  for (int variant = 0; variant < 4; ++variant) {
    const bool bias_kv = variant & 1, zero_attn = variant & 2;
    SCOPED_TRACE("add_bias_kv=" + std::to_string(bias_kv) + " add_zero_attn=" + std::to_string(zero_attn));
    ember::nn::MultiheadAttention e(
        ember::nn::MultiheadAttentionOptions(6, 3).add_bias_kv(bias_kv).add_zero_attn(zero_attn).kdim(5).vdim(5));
    // libtorch 1.13's C++ forward asserts key and value have the same sizes, so kdim == vdim
    // here (both differ from embed_dim: separate q/k/v projection weights).
    torch::nn::MultiheadAttention t(
        torch::nn::MultiheadAttentionOptions(6, 3).add_bias_kv(bias_kv).add_zero_attn(zero_attn).kdim(5).vdim(5));
    copy_params(*e, *t);
    EXPECT_FALSE(e->_qkv_same_embed_dim);
    EXPECT_EQ(e->bias_k.defined(), bias_kv);
    const int64_t N = 2, L = 3, S = 4;
    // [L, N, E] layout; non-contiguous query (a transpose).
    ET q = ember::randn({N, L, 6}).transpose(0, 1).requires_grad_();
    ET k = ember::randn({S, N, 5}).requires_grad_();
    ET v = ember::randn({S, N, 5}).requires_grad_();
    ET kpm = ember::zeros({N, S}, ember::TensorOptions(ember::kBool));
    kpm.select(0, 1).narrow(0, S - 1, 1).fill_(true);
    ET am = ember::randn({L, S});
    TT tq = parity::to_torch(q).requires_grad_(), tk = parity::to_torch(k).requires_grad_(),
       tv = parity::to_torch(v).requires_grad_();
    auto [out, w] = e(q, k, v, kpm, true, am);
    auto [tout, tw] = t(tq, tk, tv, parity::to_torch(kpm), true, parity::to_torch(am));
    expect_tensor_close(out, tout, "attn_output", 1e-5, 1e-6);
    expect_tensor_close(w, tw, "attn_weights", 1e-5, 1e-6);
    auto [g1, tg1] = grad_like(out);
    (out * g1).sum().backward();
    (tout * tg1).sum().backward();
    expect_tensor_close(q.grad(), tq.grad(), "query grad", 1e-4, 1e-5);
    expect_tensor_close(k.grad(), tk.grad(), "key grad", 1e-4, 1e-5);
    expect_tensor_close(v.grad(), tv.grad(), "value grad", 1e-4, 1e-5);
    expect_param_grads(*e, *t, 1e-4);
  }
}

TEST(AttentionParity, MultiHeadAttentionForwardFunctionalWithStaticKv) {
  namespace EF = ember::nn::functional;
  namespace TF = torch::nn::functional;
  const int64_t E = 6, H = 2, N = 2, L = 3, S = 5;
  ET w_in = ember::randn({3 * E, E}), b_in = ember::randn({3 * E}), w_out = ember::randn({E, E}),
     b_out = ember::randn({E});
  ET q = ember::randn({L, N, E}), kv = ember::randn({S, N, E});
  ET sk = ember::randn({N * H, S, E / H}), sv = ember::randn({N * H, S, E / H});
  for (bool with_static : {false, true}) {
    for (bool average : {true, false}) {
      SCOPED_TRACE(std::string(with_static ? "static k/v" : "projected") + (average ? " averaged" : " per head"));
      auto eo = EF::MultiheadAttentionForwardFuncOptions(E, H, w_in, b_in, ET(), ET(), false, 0.0, w_out, b_out)
                    .training(false)
                    .average_attn_weights(average);
      auto to = TF::MultiheadAttentionForwardFuncOptions(E, H, parity::to_torch(w_in), parity::to_torch(b_in), TT(),
                                                         TT(), false, 0.0, parity::to_torch(w_out),
                                                         parity::to_torch(b_out))
                    .training(false)
                    .average_attn_weights(average);
      if (with_static) {
        eo.static_k(sk).static_v(sv);
        to.static_k(parity::to_torch(sk)).static_v(parity::to_torch(sv));
      }
      auto [out, w] = EF::multi_head_attention_forward(q, kv, kv, eo);
      auto [tout, tw] = TF::multi_head_attention_forward(parity::to_torch(q), parity::to_torch(kv),
                                                         parity::to_torch(kv), to);
      expect_tensor_close(out, tout, "output", 1e-5, 1e-6);
      expect_tensor_close(w, tw, "weights", 1e-5, 1e-6);
    }
  }
}

}  // namespace rnn_parity
