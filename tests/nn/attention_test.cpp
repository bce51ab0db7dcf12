// MultiheadAttention, scaled_dot_product_attention and TransformerEncoderLayer: parameter
// names and init, shapes, masks (a masked key changes nothing), causal masking, errors,
// gradcheck in float64.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace nn_attention_test {

using Keys = std::vector<std::string>;
using Sizes = std::vector<int64_t>;
namespace F = nn::functional;

using ember::testing::ErrorOf;

void ExpectClose(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.sizes().vec(), b.sizes().vec());
  EXPECT_TRUE(a.allclose(b, tol, tol)) << a << "\nvs\n" << b;
}

TEST(MultiheadAttention, ParametersAndInit) {
  nn::MultiheadAttention mha(8, 2);
  EXPECT_EQ(mha->named_parameters().keys(), (Keys{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(mha->in_proj_weight.sizes().vec(), (Sizes{24, 8}));
  EXPECT_TRUE(mha->in_proj_bias.eq(0).all().item<bool>());
  EXPECT_TRUE(mha->out_proj->bias.eq(0).all().item<bool>());
  // xavier_uniform_ on [24, 8]: bound sqrt(6 / 32).
  EXPECT_LE(mha->in_proj_weight.abs().max().item<float>(), std::sqrt(6.0 / 32) + 1e-6);
  nn::MultiheadAttention kv(nn::MultiheadAttentionOptions(8, 2).kdim(5).vdim(3));
  EXPECT_EQ(kv->named_parameters().keys(),
            (Keys{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(kv->k_proj_weight.sizes().vec(), (Sizes{8, 5}));
  EXPECT_EQ(kv->v_proj_weight.sizes().vec(), (Sizes{8, 3}));
  nn::MultiheadAttention nb(nn::MultiheadAttentionOptions(8, 2).bias(false));
  EXPECT_EQ(nb->named_parameters().keys(), (Keys{"in_proj_weight", "out_proj.weight"}));
}

TEST(MultiheadAttention, ShapesBothLayouts) {
  for (bool bf : {false, true}) {
    nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 2).batch_first(bf).kdim(6).vdim(4));
    Tensor q = bf ? randn({3, 5, 8}) : randn({5, 3, 8});  // N = 3, L = 5
    Tensor k = bf ? randn({3, 7, 6}) : randn({7, 3, 6});  // S = 7
    Tensor v = bf ? randn({3, 7, 4}) : randn({7, 3, 4});
    auto [out, w] = mha(q, k, v);
    EXPECT_EQ(out.sizes().vec(), bf ? (Sizes{3, 5, 8}) : (Sizes{5, 3, 8}));
    EXPECT_EQ(w.sizes().vec(), (Sizes{3, 5, 7}));
    ExpectClose(w.sum({-1}), ones({3, 5}));
    auto [out2, w2] = mha(q, k, v, Tensor(), true, Tensor(), /*average_attn_weights=*/false);
    EXPECT_EQ(w2.sizes().vec(), (Sizes{3, 2, 5, 7}));
    ExpectClose(w2.mean({1}), w);
    auto [out3, w3] = mha(q, k, v, Tensor(), /*need_weights=*/false);
    EXPECT_FALSE(w3.defined());
    ExpectClose(out3, out);
  }
  // Unbatched [L, E].
  nn::MultiheadAttention mha(8, 4);
  Tensor x = randn({5, 8});
  auto [uo, uw] = mha(x, x, x);
  EXPECT_EQ(uo.sizes().vec(), (Sizes{5, 8}));
  EXPECT_EQ(uw.sizes().vec(), (Sizes{5, 5}));
  ExpectClose(uo, std::get<0>(mha(x.unsqueeze(1), x.unsqueeze(1), x.unsqueeze(1))).squeeze(1));
}

TEST(MultiheadAttention, MaskedKeysChangeNothing) {
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  Tensor q = randn({2, 4, 8}), k = randn({2, 6, 8}), v = randn({2, 6, 8});
  Tensor kpm = zeros({2, 6}, TensorOptions(kBool));
  kpm.select(0, 0).narrow(0, 4, 2).fill_(true);  // batch 0 ignores keys 4, 5
  auto [out, w] = mha(q, k, v, kpm);
  EXPECT_TRUE(w.select(0, 0).narrow(1, 4, 2).eq(0).all().item<bool>());
  Tensor k2 = k.clone(), v2 = v.clone();
  k2.select(0, 0).narrow(0, 4, 2).normal_();
  v2.select(0, 0).narrow(0, 4, 2).mul_(100);
  auto [out2, w2] = mha(q, k2, v2, kpm);
  ExpectClose(out2.select(0, 0), out.select(0, 0));
  // A float key padding mask of -inf is the same as the bool one.
  Tensor fkpm = zeros({2, 6}).masked_fill(kpm, -std::numeric_limits<double>::infinity());
  ExpectClose(std::get<0>(mha(q, k, v, fkpm)), out);
  // attn_mask: bool true = ignore, float added; a per-head 3-D mask.
  Tensor am = rand({4, 6}) > 0.6;
  am.select(1, 0).fill_(false);  // every query keeps key 0
  Tensor fam = zeros({4, 6}).masked_fill(am, -std::numeric_limits<double>::infinity());
  auto [ob, wb] = mha(q, k, v, Tensor(), true, am);
  ExpectClose(std::get<0>(mha(q, k, v, Tensor(), true, fam)), ob);
  Tensor am3 = am.unsqueeze(0).expand({2, 4, 6});
  EXPECT_TRUE(wb.masked_select(am3).eq(0).all().item<bool>());
  ExpectClose(std::get<0>(mha(q, k, v, Tensor(), true, am.unsqueeze(0).expand({4, 4, 6}))), ob);
}

TEST(MultiheadAttention, CausalMask) {
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  Tensor x = randn({2, 5, 8});
  auto [out, w] = mha(x, x, x, Tensor(), true, Tensor(), true, /*is_causal=*/true);
  Tensor future = ones({5, 5}, TensorOptions(kBool)).triu(1);
  ExpectClose(out, std::get<0>(mha(x, x, x, Tensor(), true, future)));
  Tensor future3 = future.unsqueeze(0).expand({2, 5, 5});
  EXPECT_TRUE(w.masked_select(future3).eq(0).all().item<bool>());
  // Changing the last token changes no earlier output.
  Tensor y = x.clone();
  y.select(1, 4).normal_();
  Tensor out2 = std::get<0>(mha(y, y, y, Tensor(), true, Tensor(), true, true));
  ExpectClose(out2.narrow(1, 0, 4), out.narrow(1, 0, 4));
}

TEST(MultiheadAttention, Errors) {
  EXPECT_NE(ErrorOf([] { nn::MultiheadAttention(10, 3); }).find("embed_dim must be divisible by num_heads"),
            std::string::npos);
  nn::MultiheadAttention mha(8, 2);
  Tensor x = randn({5, 3, 8});
  std::string e = ErrorOf([&] { mha(randn({5, 3, 6}), x, x); });
  EXPECT_NE(e.find("query's feature size must be embed_dim=8, got query of sizes [5, 3, 6]"), std::string::npos) << e;
  e = ErrorOf([&] { mha(x, x, x, zeros({3, 4}, TensorOptions(kBool))); });
  EXPECT_NE(e.find("key_padding_mask should be [N, S] = [3, 5], got [3, 4]"), std::string::npos) << e;
  e = ErrorOf([&] { mha(x, x, x, Tensor(), true, zeros({5, 4})); });
  EXPECT_NE(e.find("2-D attn_mask should be [L, S] = [5, 5], got [5, 4]"), std::string::npos) << e;
  e = ErrorOf([&] { mha(x, randn({4, 3, 8}), randn({5, 3, 8})); });
  EXPECT_NE(e.find("same sequence length"), std::string::npos) << e;
}

TEST(MultiheadAttention, GradcheckFloat64) {
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(4, 2).batch_first(true));
  mha->to(kFloat64);
  Tensor kpm = tensor({false, false, true, false, false, false}, TensorOptions(kBool)).reshape({2, 3});
  Tensor am = randn({2, 3}, TensorOptions(kFloat64));
  EXPECT_TRUE(autograd::gradcheck(
      [&](const autograd::variable_list& in) {
        auto [o, w] = mha(in[0], in[1], in[2], kpm, true, am);
        return autograd::variable_list{o, w};
      },
      {randn({2, 2, 4}, TensorOptions(kFloat64)).requires_grad_(),
       randn({2, 3, 4}, TensorOptions(kFloat64)).requires_grad_(),
       randn({2, 3, 4}, TensorOptions(kFloat64)).requires_grad_()}));
  // Self-attention (the packed projection path).
  EXPECT_TRUE(autograd::gradcheck(
      [&](const autograd::variable_list& in) { return autograd::variable_list{std::get<0>(mha(in[0], in[0], in[0]))}; },
      {randn({2, 3, 4}, TensorOptions(kFloat64)).requires_grad_()}));
}

TEST(ScaledDotProductAttention, MatchesFormulaAndMasks) {
  Tensor q = randn({2, 3, 4, 8}), k = randn({2, 3, 6, 8}), v = randn({2, 3, 6, 5});
  Tensor ref = (q.matmul(k.transpose(-2, -1)) / std::sqrt(8.0)).softmax(-1).matmul(v);
  ExpectClose(F::scaled_dot_product_attention(q, k, v), ref);
  // Bool mask: true = take part (PyTorch's convention for this function).
  Tensor keep = rand({4, 6}) > 0.5;
  keep.select(1, 0).fill_(true);
  Tensor add = zeros({4, 6}).masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
  ExpectClose(F::scaled_dot_product_attention(q, k, v, keep), F::scaled_dot_product_attention(q, k, v, add));
  Tensor causal = F::scaled_dot_product_attention(q, k.narrow(2, 0, 4), v.narrow(2, 0, 4), {}, 0.0, true);
  ExpectClose(causal, F::scaled_dot_product_attention(q, k.narrow(2, 0, 4), v.narrow(2, 0, 4),
                                                      ones({4, 4}, TensorOptions(kBool)).tril()));
  EXPECT_NE(ErrorOf([&] { F::scaled_dot_product_attention(q, randn({2, 3, 6, 7}), v); }).find("same last dim"),
            std::string::npos);
  EXPECT_TRUE(autograd::gradcheck(
      [](const autograd::variable_list& in) {
        return autograd::variable_list{F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true)};
      },
      {randn({2, 3, 4}, TensorOptions(kFloat64)).requires_grad_(),
       randn({2, 3, 4}, TensorOptions(kFloat64)).requires_grad_(),
       randn({2, 3, 2}, TensorOptions(kFloat64)).requires_grad_()}));
}

// The fused kernel (Note [Fused attention]): the same bits with 1 and 2 threads, forward and
// backward; the written-out formula's values; second derivatives (create_graph) through the
// ops form of its backward; what it leaves to the written-out path.
TEST(ScaledDotProductAttention, FusedKernelThreadsGradGradAndFallbacks) {
  manual_seed(7);
  const Tensor q0 = randn({3, 4, 70, 16}), k0 = randn({3, 4, 70, 16}), v0 = randn({3, 4, 70, 8});
  const Tensor g = randn({3, 4, 70, 8});
  auto run = [&](int threads) {
    const int before = get_num_threads();
    set_num_threads(threads);
    Tensor q = q0.clone().requires_grad_(), k = k0.clone().requires_grad_(), v = v0.clone().requires_grad_();
    Tensor out = F::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
    EXPECT_EQ(out.grad_fn()->name(), "ScaledDotProductAttentionBackward0");
    out.backward(g);
    set_num_threads(before);
    return std::vector<Tensor>{out.detach(), q.grad(), k.grad(), v.grad()};
  };
  const std::vector<Tensor> one = run(1), two = run(2);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(one[i].equal(two[i])) << "output/gradient " << i;
  // The written-out formula, on the same inputs.
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor ref =
      ((q0.matmul(k0.transpose(-2, -1)) / 4.0).masked_fill(ones({70, 70}, TensorOptions(kBool)).triu(1), -inf))
          .softmax(-1)
          .matmul(v0);
  ExpectClose(one[0], ref, 1e-5);
  // The usual transformer layout comes back as a view: [B, H, L, E] stored as [B, L, H, E].
  EXPECT_EQ(one[0].transpose(1, 2).is_contiguous(), true);
  EXPECT_TRUE(autograd::gradgradcheck(
      [](const autograd::variable_list& in) {
        return autograd::variable_list{F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true)};
      },
      {randn({2, 3, 4}, TensorOptions(kFloat64)).requires_grad_(),
       randn({2, 3, 4}, TensorOptions(kFloat64)).requires_grad_(),
       randn({1, 3, 2}, TensorOptions(kFloat64)).requires_grad_()}));
  // Dropout, a mask that needs a gradient and bfloat16 take the written-out path.
  Tensor q = q0.narrow(2, 0, 5).requires_grad_(), k = k0.narrow(2, 0, 5), v = v0.narrow(2, 0, 5);
  EXPECT_NE(F::scaled_dot_product_attention(q, k, v, {}, 0.5, false).grad_fn()->name(),
            "ScaledDotProductAttentionBackward0");
  EXPECT_NE(F::scaled_dot_product_attention(q, k, v, zeros({5, 5}).requires_grad_()).grad_fn()->name(),
            "ScaledDotProductAttentionBackward0");
  EXPECT_EQ(F::scaled_dot_product_attention(q.to(kBFloat16), k.to(kBFloat16), v.to(kBFloat16)).dtype(), kBFloat16);
}

TEST(TransformerEncoderLayer, NamesShapesAndNormPlacement) {
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).batch_first(true));
  EXPECT_EQ(layer->state_dict().keys(),
            (Keys{"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                  "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                  "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"}));
  EXPECT_EQ(layer->named_children().keys(),
            (Keys{"self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"}));
  layer->eval();
  Tensor x = randn({3, 5, 8});
  Tensor y = layer(x);
  EXPECT_EQ(y.sizes().vec(), (Sizes{3, 5, 8}));
  // Post-norm: the output is normalised (mean 0, variance 1 over features with unit weight).
  ExpectClose(y.mean({-1}), zeros({3, 5}), 1e-5);
  ExpectClose(y.var({-1}, 0), ones({3, 5}), 1e-3);
  // Pre-norm with the same weights gives a different, un-normalised output; and it equals
  // the formula written out.
  nn::TransformerEncoderLayer pre(
      nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).batch_first(true).norm_first(true).activation("gelu"));
  pre->load_state_dict(layer->state_dict());
  pre->eval();
  auto ln = [](const Tensor& t) { return (t - t.mean({-1}, true)) / (t.var({-1}, 0, true) + 1e-5).sqrt(); };
  Tensor n1 = ln(x);
  Tensor a = x + std::get<0>(pre->self_attn(n1, n1, n1));
  Tensor ref = a + pre->linear2(pre->linear1(ln(a)).gelu());
  ExpectClose(pre(x), ref, 1e-4);
  // Padding masks reach the attention: a padded key's values do not matter.
  Tensor kpm = zeros({3, 5}, TensorOptions(kBool));
  kpm.select(1, 4).fill_(true);
  Tensor x2 = x.clone();
  x2.select(1, 4).normal_();
  ExpectClose(layer(x, Tensor(), kpm).narrow(1, 0, 4), layer(x2, Tensor(), kpm).narrow(1, 0, 4), 1e-4);
  EXPECT_NE(ErrorOf([] { nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(8, 2).activation("tanh")); })
                .find("activation should be"),
            std::string::npos);
}

TEST(TransformerEncoderLayer, GradcheckAndEncoder) {
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(4, 2).dim_feedforward(6).dropout(0.0));
  layer->to(kFloat64);
  EXPECT_TRUE(autograd::gradcheck([&](const autograd::variable_list& in) { return autograd::variable_list{layer(in[0])}; },
                                  {randn({3, 2, 4}, TensorOptions(kFloat64)).requires_grad_()}));
  nn::TransformerEncoder enc(layer, 3);
  Keys keys = enc->state_dict().keys();
  EXPECT_EQ(keys.size(), 36u);
  EXPECT_EQ(keys.front(), "layers.0.self_attn.in_proj_weight");
  EXPECT_EQ(keys.back(), "layers.2.norm2.bias");
  enc->eval();
  Tensor x = randn({3, 2, 4}, TensorOptions(kFloat64));
  layer->eval();
  ExpectClose(enc(x), layer(layer(layer(x))), 1e-10);
}

}  // namespace
}  // namespace ember
