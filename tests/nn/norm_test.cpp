// Normalisation, embedding and bilinear layers: values, running statistics, state_dict
// keys, printing, errors, gradients (gradcheck and gradgradcheck in float64), node names
// and thread-count independence.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/grad_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace nn_norm_test {

namespace F = nn::functional;
using testing::check_grads;
using V = std::vector<Tensor>;

Tensor R(std::vector<int64_t> sizes) { return randn(sizes, TensorOptions(kFloat64)); }

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.sizes(), b.sizes());
  EXPECT_TRUE(a.to(kFloat64).allclose(b.to(kFloat64), tol, tol)) << a << "\nvs\n" << b;
}

std::string repr(const nn::Module& m) { return m.repr(); }

// ---------------------------------------------------------------------------------------
// BatchNorm

TEST(BatchNorm, TrainNormalisesPerChannel) {
  nn::BatchNorm2d bn(3);
  Tensor x = randn({4, 3, 5, 5}) * 3 + 2;
  Tensor y = bn(x);
  EXPECT_EQ(y.sizes(), x.sizes());
  expect_close(y.mean({0, 2, 3}), zeros({3}), 1e-5);
  expect_close(y.var({0, 2, 3}, 0), ones({3}), 1e-3);
  EXPECT_EQ(y.grad_fn()->name(), "NativeBatchNormBackward0");
}

TEST(BatchNorm, RunningStatsAfterSteps) {
  nn::BatchNorm1d bn(nn::BatchNorm1dOptions(4).momentum(0.3));
  Tensor exp_mean = zeros({4}), exp_var = ones({4});
  for (int step = 0; step < 3; ++step) {
    Tensor x = randn({8, 4, 6}) + static_cast<double>(step);
    bn(x);
    exp_mean = exp_mean * 0.7 + x.mean({0, 2}) * 0.3;
    exp_var = exp_var * 0.7 + x.var({0, 2}, 1) * 0.3;  // unbiased for the running estimate
  }
  expect_close(bn->running_mean, exp_mean, 1e-5);
  expect_close(bn->running_var, exp_var, 1e-5);
  EXPECT_EQ(bn->num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(bn->num_batches_tracked.dim(), 0);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 3);
}

TEST(BatchNorm, MomentumNoneIsCumulativeAverage) {
  nn::BatchNorm1d bn(nn::BatchNorm1dOptions(3).momentum(std::nullopt));
  Tensor a = randn({10, 3}), b = randn({10, 3}) * 2 + 1, c = randn({10, 3}) - 1;
  bn(a);
  bn(b);
  bn(c);
  expect_close(bn->running_mean, (a.mean({0}) + b.mean({0}) + c.mean({0})) / 3, 1e-5);
  expect_close(bn->running_var, (a.var({0}) + b.var({0}) + c.var({0})) / 3, 1e-5);
  EXPECT_EQ(repr(*bn.ptr()), "BatchNorm1d(3, eps=1e-05, momentum=None, affine=True, track_running_stats=True)");
}

TEST(BatchNorm, EvalUsesRunningStats) {
  nn::BatchNorm2d bn(2);
  {
    NoGradGuard ng;
    bn->running_mean.copy_(tensor({1.0f, -2.0f}));
    bn->running_var.copy_(tensor({4.0f, 0.25f}));
    bn->weight.copy_(tensor({2.0f, 3.0f}));
    bn->bias.copy_(tensor({0.5f, -0.5f}));
  }
  Tensor x = randn({3, 2, 4, 4});
  Tensor train_out = bn(x);
  bn->eval();
  // Training changed the running stats; set them again for the check.
  {
    NoGradGuard ng;
    bn->running_mean.copy_(tensor({1.0f, -2.0f}));
    bn->running_var.copy_(tensor({4.0f, 0.25f}));
  }
  const int64_t before = bn->num_batches_tracked.item<int64_t>();
  Tensor y = bn(x);
  Tensor rm = tensor({1.0f, -2.0f}).view({1, 2, 1, 1}), rv = tensor({4.0f, 0.25f}).view({1, 2, 1, 1});
  Tensor expected = (x - rm) / (rv + 1e-5).sqrt() * tensor({2.0f, 3.0f}).view({1, 2, 1, 1}) +
                    tensor({0.5f, -0.5f}).view({1, 2, 1, 1});
  expect_close(y, expected, 1e-5);
  EXPECT_FALSE(y.allclose(train_out, 1e-3, 1e-3));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), before);  // eval leaves the stats alone
  expect_close(bn->running_mean, tensor({1.0f, -2.0f}), 0);
}

TEST(BatchNorm, NoRunningStatsUsesBatchStatsInEval) {
  nn::BatchNorm1d bn(nn::BatchNorm1dOptions(3).track_running_stats(false).affine(false));
  EXPECT_EQ(bn->state_dict().size(), 0u);
  EXPECT_EQ(bn->parameters().size(), 0u);
  bn->eval();
  Tensor x = randn({6, 3});
  expect_close(bn(x), (x - x.mean({0}, true)) / (x.var({0}, 0, true) + 1e-5).sqrt(), 1e-5);
}

TEST(BatchNorm, StateDictKeysAndRepr) {
  nn::BatchNorm2d bn(32);
  std::vector<std::string> keys;
  for (const auto& item : bn->state_dict()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(repr(*bn.ptr()), "BatchNorm2d(32, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  // to(kFloat64) converts the float buffers but keeps the counter int64.
  bn->to(kFloat64);
  EXPECT_EQ(bn->running_mean.dtype(), kFloat64);
  EXPECT_EQ(bn->num_batches_tracked.dtype(), kInt64);
  auto copy = std::dynamic_pointer_cast<nn::BatchNorm2dImpl>(bn->clone());
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->state_dict().size(), 5u);
}

TEST(BatchNorm, Errors) {
  nn::BatchNorm2d bn(3);
  std::string e = error_of([&] { bn(randn({2, 4, 5, 5})); });
  EXPECT_NE(e.find("[2, 4, 5, 5]"), std::string::npos) << e;
  EXPECT_NE(e.find("num_features=3"), std::string::npos) << e;
  e = error_of([&] { bn(randn({2, 3, 5})); });
  EXPECT_NE(e.find("expected 4D input (got 3D input"), std::string::npos) << e;
  e = error_of([&] { F::batch_norm(randn({2, 3}), zeros({4}), ones({3}), {}, {}, true); });
  EXPECT_NE(e.find("running_mean should be a 1-d tensor of 3 elements"), std::string::npos) << e;
  EXPECT_NE(e.find("[2, 3]"), std::string::npos) << e;
  e = error_of([&] { F::batch_norm(randn({1, 3}), {}, {}, {}, {}, true); });
  EXPECT_NE(e.find("more than 1 value per channel"), std::string::npos) << e;
  e = error_of([&] { F::batch_norm(randn({2, 3}), {}, {}, {}, {}, false); });
  EXPECT_NE(e.find("running_mean and running_var must be given"), std::string::npos) << e;
  e = error_of([&] { F::batch_norm(randn({2, 3}), {}, {}, ones({3}, TensorOptions(kFloat64)), {}, true); });
  EXPECT_NE(e.find("weight has dtype"), std::string::npos) << e;
}

TEST(BatchNorm, Gradcheck) {
  const Tensor x = R({3, 2, 4}), w = R({2}), b = R({2});
  // Training (batch statistics), first and second order.
  EXPECT_EQ(check_grads([](const V& v) { return F::batch_norm(v[0], {}, {}, v[1], v[2], true, 0.1, 1e-5); },
                        {x, w, b}),
            "");
  EXPECT_EQ(check_grads([](const V& v) { return F::batch_norm(v[0], {}, {}, {}, {}, true); }, {R({5, 3})}), "");
  // Non-contiguous input.
  EXPECT_EQ(check_grads([](const V& v) { return F::batch_norm(v[0].transpose(0, 2), {}, {}, v[1], v[2], true); },
                        {R({4, 2, 3}), w, b}),
            "");
  // Evaluation with running statistics.
  const Tensor rm = R({2}), rv = rand({2}, TensorOptions(kFloat64)) + 0.5;
  EXPECT_EQ(check_grads([&](const V& v) { return F::batch_norm(v[0], rm, rv, v[1], v[2], false); }, {x, w, b}), "");
}

TEST(BatchNorm, DeterministicAcrossThreadCounts) {
  const Tensor x = randn({16, 8, 33, 31});
  const Tensor g = randn({16, 8, 33, 31});
  auto run = [&](int threads) {
    set_num_threads(threads);
    nn::BatchNorm2d bn(8);
    Tensor xi = x.detach().requires_grad_();
    Tensor y = bn(xi);
    y.backward(g);
    return V{y.detach(), xi.grad(), bn->weight.grad(), bn->bias.grad(), bn->running_var.clone()};
  };
  const int before = get_num_threads();
  V a = run(1), b = run(2);
  set_num_threads(before);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].equal(b[i])) << i;
}

// ---------------------------------------------------------------------------------------
// LayerNorm / GroupNorm

TEST(LayerNorm, ValuesAndRepr) {
  nn::LayerNorm ln(nn::LayerNormOptions({4, 5}).eps(1e-6));
  {
    NoGradGuard ng;
    ln->weight.uniform_(0.5, 1.5);
    ln->bias.uniform_(-1, 1);
  }
  Tensor x = randn({3, 4, 5}) * 2 + 1;
  Tensor y = ln(x);
  Tensor m = x.mean({1, 2}, true), v = x.var({1, 2}, 0, true);
  expect_close(y, (x - m) / (v + 1e-6).sqrt() * ln->weight + ln->bias, 1e-5);
  EXPECT_EQ(y.grad_fn()->name(), "NativeLayerNormBackward0");
  EXPECT_EQ(repr(*ln.ptr()), "LayerNorm((4, 5), eps=1e-06, elementwise_affine=True)");
  EXPECT_EQ(repr(*nn::LayerNorm(std::vector<int64_t>{512}).ptr()), "LayerNorm((512,), eps=1e-05, elementwise_affine=True)");
  nn::LayerNorm plain(nn::LayerNormOptions({5}).elementwise_affine(false));
  EXPECT_EQ(plain->parameters().size(), 0u);
  std::string e = error_of([&] { ln(randn({3, 5, 4})); });
  EXPECT_NE(e.find("[3, 5, 4]"), std::string::npos) << e;
  EXPECT_NE(e.find("normalized_shape=[4, 5]"), std::string::npos) << e;
}

TEST(LayerNorm, Gradcheck) {
  EXPECT_EQ(check_grads([](const V& v) { return F::layer_norm(v[0], {3, 4}, v[1], v[2]); },
                        {R({2, 3, 4}), R({3, 4}), R({3, 4})}),
            "");
  EXPECT_EQ(check_grads([](const V& v) { return F::layer_norm(v[0], {5}); }, {R({3, 5})}), "");
  // Non-contiguous, weight only.
  EXPECT_EQ(check_grads([](const V& v) { return F::layer_norm(v[0].t(), {3}, v[1]); }, {R({3, 4}), R({3})}), "");
}

TEST(LayerNorm, DeterministicAcrossThreadCounts) {
  const Tensor x = randn({1000, 96}), g = randn({1000, 96});
  auto run = [&](int threads) {
    set_num_threads(threads);
    nn::LayerNorm ln(std::vector<int64_t>{96});
    Tensor xi = x.detach().requires_grad_();
    Tensor y = ln(xi);
    y.backward(g);
    return V{y.detach(), xi.grad(), ln->weight.grad(), ln->bias.grad()};
  };
  const int before = get_num_threads();
  V a = run(1), b = run(2);
  set_num_threads(before);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].equal(b[i])) << i;
}

TEST(GroupNorm, ValuesAndRepr) {
  nn::GroupNorm gn(2, 6);
  {
    NoGradGuard ng;
    gn->weight.uniform_(0.5, 1.5);
    gn->bias.uniform_(-1, 1);
  }
  Tensor x = randn({3, 6, 2, 5});
  Tensor xg = x.view({3, 2, 3 * 2 * 5});
  Tensor norm = ((xg - xg.mean({2}, true)) / (xg.var({2}, 0, true) + 1e-5).sqrt()).view({3, 6, 2, 5});
  expect_close(gn(x), norm * gn->weight.view({1, 6, 1, 1}) + gn->bias.view({1, 6, 1, 1}), 1e-5);
  EXPECT_EQ(repr(*gn.ptr()), "GroupNorm(2, 6, eps=1e-05, affine=True)");
  std::string e = error_of([] { F::group_norm(randn({2, 5, 3}), 2); });
  EXPECT_NE(e.find("divisible by num_groups=2"), std::string::npos) << e;
  EXPECT_NE(e.find("[2, 5, 3]"), std::string::npos) << e;
  e = error_of([&] { gn(randn({2, 4, 3})); });
  EXPECT_NE(e.find("num_channels=6"), std::string::npos) << e;
}

TEST(GroupNorm, Gradcheck) {
  EXPECT_EQ(check_grads([](const V& v) { return F::group_norm(v[0], 2, v[1], v[2]); },
                        {R({2, 4, 3}), R({4}), R({4})}),
            "");
  EXPECT_EQ(check_grads([](const V& v) { return F::group_norm(v[0], 3); }, {R({2, 3, 2, 2})}), "");
}

// ---------------------------------------------------------------------------------------
// Embedding / Bilinear

TEST(Embedding, LookupPaddingAndRepr) {
  nn::Embedding emb(nn::EmbeddingOptions(10, 3).padding_idx(-1));
  EXPECT_EQ(emb->options.padding_idx().value(), 9);
  EXPECT_TRUE(emb->weight[9].eq(0).all().item<bool>());
  EXPECT_EQ(repr(*emb.ptr()), "Embedding(10, 3, padding_idx=9)");
  Tensor idx = tensor({1, 9, 1, 4, 9, 0}, kInt64).view({2, 3});
  Tensor y = emb(idx);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 3, 3}));
  EXPECT_TRUE(y[0][0].equal(emb->weight[1].detach()));
  EXPECT_EQ(y.grad_fn()->name(), "EmbeddingBackward0");
  Tensor g = randn({2, 3, 3});
  y.backward(g);
  Tensor wg = emb->weight.grad();
  EXPECT_TRUE(wg[9].eq(0).all().item<bool>());  // the padding row gets no gradient
  expect_close(wg[1], g[0][0] + g[0][2], 1e-6);
  expect_close(wg[4], g[1][0], 0);
  EXPECT_TRUE(wg[2].eq(0).all().item<bool>());
  // int32 indices work too.
  EXPECT_TRUE(emb(idx.to(kInt32)).equal(y.detach()));
}

TEST(Embedding, Errors) {
  nn::Embedding emb(10, 3);
  std::string e = error_of([&] { emb(tensor({3, 10}, kInt64)); });
  EXPECT_NE(e.find("index 10 is out of range"), std::string::npos) << e;
  EXPECT_NE(e.find("[10, 3]"), std::string::npos) << e;
  e = error_of([&] { emb(tensor({-1}, kInt64)); });
  EXPECT_NE(e.find("index -1 is out of range"), std::string::npos) << e;
  e = error_of([&] { emb(tensor({1.0f})); });
  EXPECT_NE(e.find("indices must be int64 or int32"), std::string::npos) << e;
  e = error_of([] { nn::Embedding(nn::EmbeddingOptions(4, 2).padding_idx(4)); });
  EXPECT_NE(e.find("padding_idx=4"), std::string::npos) << e;
}

TEST(Embedding, GradcheckMaxNormFromPretrained) {
  const Tensor idx = tensor({0, 2, 2, 3}, kInt64).view({2, 2});
  // padding_idx rows get a zero gradient by design (not the true derivative), so the check
  // uses a padding row the lookup never reads.
  EXPECT_EQ(check_grads([&](const V& v) { return F::embedding(idx, v[0], 1); }, {R({4, 3})}), "");
  EXPECT_EQ(check_grads([&](const V& v) { return F::embedding(idx, v[0]); }, {R({4, 3})}), "");
  // max_norm rescales the rows read (in place), leaves the others.
  Tensor w = tensor({3.0f, 4.0f, 0.3f, 0.4f, 6.0f, 8.0f}).view({3, 2});
  Tensor y = F::embedding(tensor({0, 1}, kInt64), w, std::nullopt, 1.0);
  expect_close(w[0], tensor({0.6f, 0.8f}), 1e-5);
  expect_close(w[1], tensor({0.3f, 0.4f}), 0);
  expect_close(w[2], tensor({6.0f, 8.0f}), 0);
  expect_close(y[0], tensor({0.6f, 0.8f}), 1e-5);
  nn::Embedding pre = nn::Embedding::from_pretrained(w);
  EXPECT_FALSE(pre->weight.requires_grad());
  EXPECT_TRUE(pre->weight.equal(w));
  EXPECT_TRUE(nn::Embedding::from_pretrained(w, nn::EmbeddingFromPretrainedOptions().freeze(false))
                  ->weight.requires_grad());
}

TEST(Bilinear, ValuesGradcheckRepr) {
  nn::Bilinear bl(3, 4, 2);
  EXPECT_EQ(repr(*bl.ptr()), "Bilinear(in1_features=3, in2_features=4, out_features=2, bias=True)");
  EXPECT_EQ(bl->weight.sizes(), IntArrayRef({2, 3, 4}));
  const double bound = 1 / std::sqrt(3.0);
  EXPECT_LE(bl->weight.abs().max().item<float>(), bound);
  Tensor x1 = randn({5, 3}), x2 = randn({5, 4});
  Tensor y = bl(x1, x2);
  ASSERT_EQ(y.sizes(), IntArrayRef({5, 2}));
  for (int64_t n = 0; n < 5; ++n) {
    for (int64_t o = 0; o < 2; ++o) {
      const float ref = (x1[n].view({1, 3}).matmul(bl->weight[o]).matmul(x2[n].view({4, 1}))).item<float>() +
                        bl->bias[o].item<float>();
      EXPECT_NEAR(y[n][o].item<float>(), ref, 1e-4);
    }
  }
  EXPECT_EQ(check_grads([](const V& v) { return F::bilinear(v[0], v[1], v[2], v[3]); },
                        {R({2, 3, 2}), R({2, 3, 4}), R({5, 2, 4}), R({5})}),
            "");
  std::string e = error_of([&] { bl(randn({5, 3}), randn({5, 5})); });
  EXPECT_NE(e.find("[5, 5]"), std::string::npos) << e;
}

}  // namespace
}  // namespace ember
