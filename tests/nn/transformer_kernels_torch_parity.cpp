// The fused kernels of the transformer training step against libtorch 1.13: ember's
// scaled_dot_product_attention (Note [Fused attention]) against the formula written out in
// torch (1.13 has no scaled_dot_product_attention), and GELU's one-pass backward against
// torch::gelu. Forward and every input gradient, on random, non-contiguous and broadcast
// inputs. Its own small binary, so that this work does not rebuild the big parity target.

#include <ember/ember.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "parity/grad_parity.h"

namespace {

namespace F = ember::nn::functional;
using ET = ember::Tensor;
using TT = torch::Tensor;
using parity::check_grad_parity;

// torch: softmax(q k^T / sqrt(E) + mask) v, causal as ones(L, S).triu(1) masked to -inf,
// a bool mask marking the positions that take part.
TT torch_attention(const TT& q, const TT& k, const TT& v, const TT& mask, bool causal) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  TT scores = torch::matmul(q * scale, k.transpose(-2, -1));
  const double inf = std::numeric_limits<double>::infinity();
  if (causal) {
    scores = scores.masked_fill(torch::ones({q.size(-2), k.size(-2)}, torch::kBool).triu(1), -inf);
  } else if (mask.defined()) {
    scores = mask.scalar_type() == torch::kBool ? scores.masked_fill(mask.logical_not(), -inf) : scores + mask;
  }
  return torch::matmul(scores.softmax(-1), v);
}

// Runs one case: q, k, v as given (views allowed), a mask captured by both sides.
void check_attention(const std::string& what, const ET& q, const ET& k, const ET& v, const ET& mask = {},
                     bool causal = false, double tol = 1e-5) {
  const TT tmask = mask.defined() ? parity::to_torch(mask) : TT();
  check_grad_parity(
      what,
      [&](const std::vector<ET>& in) {
        return F::scaled_dot_product_attention(in[0], in[1], in[2], mask, 0.0, causal);
      },
      [&](const std::vector<TT>& in) { return torch_attention(in[0], in[1], in[2], tmask, causal); }, {q, k, v}, tol,
      tol);
}

// The fused kernel ran (not the written-out fallback): its backward node names it.
void expect_fused(const ET& q, const ET& k, const ET& v, const ET& mask = {}, bool causal = false) {
  const ET out = F::scaled_dot_product_attention(q.detach().requires_grad_(), k, v, mask, 0.0, causal);
  ASSERT_TRUE(out.grad_fn() != nullptr);
  EXPECT_EQ(out.grad_fn()->name(), "ScaledDotProductAttentionBackward0");
}

TEST(TransformerKernelsParity, AttentionRandom) {
  ember::manual_seed(1);
  const ET q = ember::randn({2, 3, 5, 8}), k = ember::randn({2, 3, 7, 8}), v = ember::randn({2, 3, 7, 6});
  expect_fused(q, k, v);
  check_attention("plain", q, k, v);
  check_attention("causal L < S", q, k, v, {}, true);
  const ET q2 = ember::randn({2, 2, 9, 4});
  check_attention("causal L > S", q2, ember::randn({2, 2, 6, 4}), ember::randn({2, 2, 6, 3}), {}, true);
  // Several row blocks of the causal path, the last one ragged (100 = 3 x 32 + 4).
  const ET ql = ember::randn({1, 2, 100, 16}), kl = ember::randn({1, 2, 100, 16}), vl = ember::randn({1, 2, 100, 16});
  check_attention("causal, 100 positions", ql, kl, vl, {}, true, 2e-5);
  check_attention("3-d inputs", ember::randn({4, 6, 5}), ember::randn({4, 3, 5}), ember::randn({4, 3, 2}));
  check_attention("float64", ember::randn({2, 4, 5}, ember::TensorOptions(ember::kFloat64)),
                  ember::randn({2, 6, 5}, ember::TensorOptions(ember::kFloat64)),
                  ember::randn({2, 6, 3}, ember::TensorOptions(ember::kFloat64)), {}, true, 1e-10);
}

TEST(TransformerKernelsParity, AttentionNonContiguous) {
  ember::manual_seed(2);
  // As a transformer calls it: q, k, v are head views of one projection [B, T, 3 * H * hd].
  const int64_t B = 2, T = 10, H = 3, hd = 4;
  const ET qkv = ember::randn({B, T, 3 * H * hd});
  std::vector<ET> parts = qkv.chunk(3, -1);
  auto heads = [&](const ET& t) { return t.reshape({B, T, H, hd}).transpose(1, 2); };
  expect_fused(heads(parts[0]), heads(parts[1]), heads(parts[2]), {}, true);
  check_attention("head views of one projection", heads(parts[0]), heads(parts[1]), heads(parts[2]), {}, true);
  // Last dim not contiguous (a transposed matrix): the kernel reads a copy.
  const ET qt = ember::randn({2, 8, 5}).transpose(-2, -1), kt = ember::randn({2, 8, 7}).transpose(-2, -1);
  check_attention("transposed feature dim", qt, kt, ember::randn({2, 7, 3}));
}

TEST(TransformerKernelsParity, AttentionBroadcastAndMasks) {
  ember::manual_seed(3);
  const ET q = ember::randn({2, 3, 5, 4});
  // key shared by the batch, value without the batch dim: gradients summed over the broadcast.
  const ET k = ember::randn({1, 3, 6, 4}), v = ember::randn({3, 6, 2});
  expect_fused(q, k, v);
  check_attention("broadcast batch dims", q, k, v);
  check_attention("expanded key (stride-0 batch dims)", q, ember::randn({1, 1, 6, 4}).expand({2, 3, 6, 4}), v);
  const ET float_mask = ember::randn({5, 6});
  expect_fused(q, k, v, float_mask);
  check_attention("float mask [L, S]", q, k, v, float_mask);
  ET keep = ember::rand({2, 1, 5, 6}) > 0.4;
  keep.select(-1, 0).fill_(true);  // every row keeps one key
  check_attention("bool mask [B, 1, L, S]", q, k, v, keep);
  check_attention("float mask broadcast over rows [1, S]", q, k, v, ember::randn({1, 6}));
}

TEST(TransformerKernelsParity, GeluBackward) {
  ember::manual_seed(4);
  for (const char* approximate : {"none", "tanh"}) {
    const std::string a = approximate;
    auto efn = [&](const std::vector<ET>& in) { return in[0].gelu(a); };
    auto tfn = [&](const std::vector<TT>& in) { return torch::gelu(in[0], a); };
    // atol 1e-5: torch rounds the tanh form's (1 - t^2) in float, ember's scalar path in double.
    check_grad_parity("gelu " + a + " random", efn, tfn, {ember::randn({64, 33}) * 3.0}, 1e-5, 1e-5);
    check_grad_parity("gelu " + a + " non-contiguous", efn, tfn, {ember::randn({17, 40}).transpose(0, 1) * 3.0}, 1e-5,
                      1e-5);
    check_grad_parity("gelu " + a + " expanded", efn, tfn, {ember::randn({1, 9}).expand({5, 9})}, 1e-5, 1e-6);
    check_grad_parity("gelu " + a + " float64", efn, tfn, {ember::randn({7, 9}, ember::TensorOptions(ember::kFloat64))},
                      1e-12, 1e-12);
    // Special values: the same inf/NaN behaviour as torch's gelu_backward.
    check_grad_parity(
        "gelu " + a + " special values", efn, tfn,
        {ember::tensor({0.0, -0.0, 30.0, -30.0, 1e-20, std::numeric_limits<double>::quiet_NaN()}).to(ember::kFloat32)},
        1e-5, 1e-6);
  }
}

}  // namespace
