// Normalisation, embedding and bilinear layers against libtorch 1.13: the same weights
// in both, then forward outputs, input/weight/bias gradients and running statistics
// after several training-mode calls (and the eval output afterwards).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ember/ember.h>

#include <functional>
#include <string>
#include <vector>

#include "parity/grad_parity.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace norm_parity {

using ET = ember::Tensor;
using TT = torch::Tensor;

// Copies every torch parameter and buffer into the ember module's tensor of the same name.
template <typename EM, typename TM>
void copy_state(EM& em, TM& tm) {
  torch::NoGradGuard tng;
  ember::NoGradGuard eng;
  auto es = em->named_parameters();
  for (const auto& item : tm->named_parameters()) {
    ember::Tensor* e = es.find(item.key());
    ASSERT_NE(e, nullptr) << item.key();
    tm->named_parameters()[item.key()].uniform_(-1.5, 1.5);  // not the default ones/zeros
    e->copy_(parity::to_ember(item.value()));
  }
}

// Compares parameters and buffers by name, and their gradients.
template <typename EM, typename TM>
void expect_state_close(EM& em, TM& tm, const std::string& what, double tol) {
  auto ep = em->named_parameters();
  for (const auto& item : tm->named_parameters()) {
    ember::Tensor* e = ep.find(item.key());
    ASSERT_NE(e, nullptr) << item.key();
    parity::expect_tensor_close(e->grad(), item.value().grad(), what + " grad of " + item.key(), tol, tol);
  }
  auto eb = em->named_buffers();
  for (const auto& item : tm->named_buffers()) {
    if (!item.value().defined()) continue;  // track_running_stats=false: None buffers
    ember::Tensor* e = eb.find(item.key());
    ASSERT_NE(e, nullptr) << item.key();
    parity::expect_tensor_close(*e, item.value(), what + " buffer " + item.key(), tol, tol);
  }
}

// Runs `steps` training calls on fresh inputs made by `make` (an ember tensor, maybe a
// non-contiguous view), backward with the same random gradient in both, comparing outputs,
// input gradients, parameter gradients (accumulated) and buffers; then one eval call.
template <typename EM, typename TM>
void run_module(const std::string& what, EM& em, TM& tm, const std::function<ET()>& make, int steps, double tol) {
  SCOPED_TRACE(what);
  copy_state(em, tm);
  for (int step = 0; step < steps; ++step) {
    const std::string tag = what + " step " + std::to_string(step);
    ET ex = make().requires_grad_();
    TT tx = parity::to_torch(ex.detach()).requires_grad_();
    ET ey = em(ex);
    TT ty = tm(tx);
    parity::expect_tensor_close(ey, ty, tag + " forward", tol, tol);
    TT g = torch::randn(ty.sizes());
    ty.backward(g);
    ey.backward(parity::to_ember(g));
    parity::expect_tensor_close(ex.grad(), tx.grad(), tag + " input grad", tol, tol);
    expect_state_close(em, tm, tag, tol);
  }
  em->eval();
  tm->eval();
  ET ex = make();
  parity::expect_tensor_close(em(ex), tm(parity::to_torch(ex)), what + " eval forward", tol, tol);
}

TEST(NormParity, BatchNorm1d2d) {
  ember::nn::BatchNorm1d em(5);
  torch::nn::BatchNorm1d tm(5);
  run_module("BatchNorm1d [N, C]", em, tm, [] { return ember::randn({16, 5}) * 2 + 1; }, 3, 1e-5);
}

TEST(NormParity, BatchNorm1d3dNonContiguous) {
  ember::nn::BatchNorm1d em(ember::nn::BatchNorm1dOptions(4).momentum(0.3).eps(1e-3));
  torch::nn::BatchNorm1d tm(torch::nn::BatchNorm1dOptions(4).momentum(0.3).eps(1e-3));
  // [N, C, L] as a transposed view of [N, L, C].
  run_module("BatchNorm1d [N, C, L]", em, tm, [] { return (ember::randn({6, 7, 4}) - 0.5).transpose(1, 2); }, 3,
             1e-5);
}

TEST(NormParity, BatchNorm2dNonContiguous) {
  ember::nn::BatchNorm2d em(8);
  torch::nn::BatchNorm2d tm(8);
  // Channels-last layout: a permuted view of [N, H, W, C].
  run_module("BatchNorm2d", em, tm, [] { return ember::randn({4, 6, 5, 8}).permute({0, 3, 1, 2}) * 3; }, 3, 1e-5);
}

TEST(NormParity, BatchNorm2dMomentumNone) {
  ember::nn::BatchNorm2d em(ember::nn::BatchNorm2dOptions(3).momentum(std::nullopt));
  torch::nn::BatchNorm2d tm(torch::nn::BatchNorm2dOptions(3).momentum(c10::nullopt));
  run_module("BatchNorm2d momentum=None", em, tm, [] { return ember::randn({5, 3, 4, 4}) + 2; }, 4, 1e-5);
}

TEST(NormParity, BatchNorm2dNoAffineNoTracking) {
  ember::nn::BatchNorm2d em(ember::nn::BatchNorm2dOptions(3).affine(false).track_running_stats(false));
  torch::nn::BatchNorm2d tm(torch::nn::BatchNorm2dOptions(3).affine(false).track_running_stats(false));
  run_module("BatchNorm2d no affine", em, tm, [] { return ember::randn({5, 3, 2, 3}); }, 2, 1e-5);
}

TEST(NormParity, LayerNormMultiDim) {
  ember::nn::LayerNorm em(ember::nn::LayerNormOptions({4, 6}).eps(1e-4));
  torch::nn::LayerNorm tm(torch::nn::LayerNormOptions({4, 6}).eps(1e-4));
  run_module("LayerNorm (4, 6)", em, tm, [] { return ember::randn({3, 6, 4}).transpose(1, 2) * 2 - 1; }, 2, 1e-5);
}

TEST(NormParity, LayerNormWide) {
  ember::nn::LayerNorm em(std::vector<int64_t>{512});
  torch::nn::LayerNorm tm(torch::nn::LayerNormOptions({512}));
  run_module("LayerNorm 512", em, tm, [] { return ember::randn({300, 512}); }, 1, 2e-5);
}

TEST(NormParity, GroupNorm) {
  ember::nn::GroupNorm em(3, 6);
  torch::nn::GroupNorm tm(3, 6);
  run_module("GroupNorm", em, tm, [] { return ember::randn({4, 5, 3, 6}).permute({0, 3, 1, 2}) + 1; }, 2, 1e-5);
}

TEST(NormParity, EmbeddingPadding) {
  ember::nn::Embedding em(ember::nn::EmbeddingOptions(12, 5).padding_idx(3));
  torch::nn::Embedding tm(torch::nn::EmbeddingOptions(12, 5).padding_idx(3));
  copy_state(em, tm);
  ET idx = ember::tensor({3, 1, 3, 7, 11, 1, 0, 3}, ember::kInt64).view({2, 4});
  ET ey = em(idx);
  TT ty = tm(parity::to_torch(idx));
  parity::expect_tensor_close(ey, ty, "embedding forward", 0, 0);
  TT g = torch::randn(ty.sizes());
  ty.backward(g);
  ey.backward(parity::to_ember(g));
  parity::expect_tensor_close(em->weight.grad(), tm->weight.grad(), "embedding weight grad", 1e-6, 1e-6);
}

TEST(NormParity, Bilinear) {
  ember::nn::Bilinear em(4, 3, 5);
  torch::nn::Bilinear tm(4, 3, 5);
  copy_state(em, tm);
  ET x1 = ember::randn({2, 6, 4}), x2 = ember::randn({3, 2, 6}).permute({1, 2, 0});  // non-contiguous
  ET e1 = x1.detach().requires_grad_(), e2 = x2.detach().requires_grad_();
  TT t1 = parity::to_torch(x1).requires_grad_(), t2 = parity::to_torch(x2).requires_grad_();
  ET ey = em(e1, e2);
  TT ty = tm(t1, t2);
  parity::expect_tensor_close(ey, ty, "bilinear forward", 1e-5, 1e-5);
  TT g = torch::randn(ty.sizes());
  ty.backward(g);
  ey.backward(parity::to_ember(g));
  parity::expect_tensor_close(e1.grad(), t1.grad(), "bilinear x1 grad", 1e-5, 1e-5);
  parity::expect_tensor_close(e2.grad(), t2.grad(), "bilinear x2 grad", 1e-5, 1e-5);
  parity::expect_tensor_close(em->weight.grad(), tm->weight.grad(), "bilinear weight grad", 1e-5, 1e-5);
  parity::expect_tensor_close(em->bias.grad(), tm->bias.grad(), "bilinear bias grad", 1e-5, 1e-5);
}

// The functional forms in float64, with double backward where libtorch has it.
TEST(NormParity, FunctionalFloat64) {
  namespace EF = ember::nn::functional;
  namespace TF = torch::nn::functional;
  using EV = std::vector<ET>;
  using TV = std::vector<TT>;
  auto R = [](std::vector<int64_t> s) { return ember::randn(s, ember::TensorOptions(ember::kFloat64)); };
  parity::check_grad_parity(
      "batch_norm train", [](const EV& v) { return EF::batch_norm(v[0], {}, {}, v[1], v[2], true, 0.1, 1e-5); },
      [](const TV& v) {
        return TF::batch_norm(v[0], TT(), TT(), TF::BatchNormFuncOptions().weight(v[1]).bias(v[2]).training(true));
      },
      {R({6, 3, 5}), R({3}), R({3})}, 1e-9, 1e-10);
  ET rm = R({3}), rv = ember::rand({3}, ember::TensorOptions(ember::kFloat64)) + 0.5;
  parity::check_grad_parity(
      "batch_norm eval", [&](const EV& v) { return EF::batch_norm(v[0], rm, rv, v[1], v[2], false); },
      [&](const TV& v) {
        return TF::batch_norm(v[0], parity::to_torch(rm), parity::to_torch(rv),
                              TF::BatchNormFuncOptions().weight(v[1]).bias(v[2]).training(false));
      },
      {R({6, 3, 5}), R({3}), R({3})}, 1e-9, 1e-10);
  parity::check_grad_parity(
      "layer_norm", [](const EV& v) { return EF::layer_norm(v[0], {2, 5}, v[1], v[2]); },
      [](const TV& v) { return TF::layer_norm(v[0], TF::LayerNormFuncOptions({2, 5}).weight(v[1]).bias(v[2])); },
      {R({3, 2, 5}), R({2, 5}), R({2, 5})}, 1e-9, 1e-10);
  parity::check_grad_parity(
      "group_norm", [](const EV& v) { return EF::group_norm(v[0], 2, v[1], v[2]); },
      [](const TV& v) { return TF::group_norm(v[0], TF::GroupNormFuncOptions(2).weight(v[1]).bias(v[2])); },
      {R({3, 4, 5}), R({4}), R({4})}, 1e-9, 1e-10);
}

// Gradient of a gradient through batch norm (create_graph uses the composed formula).
TEST(NormParity, BatchNormDoubleBackward) {
  ET x = ember::randn({5, 3, 4}, ember::TensorOptions(ember::kFloat64));
  ET w = ember::randn({3}, ember::TensorOptions(ember::kFloat64));
  ET ex = x.detach().requires_grad_(), ew = w.detach().requires_grad_();
  TT tx = parity::to_torch(x).requires_grad_(), tw = parity::to_torch(w).requires_grad_();
  ET ey = ember::nn::functional::batch_norm(ex, {}, {}, ew, {}, true);
  TT ty = torch::batch_norm(tx, tw, TT(), TT(), TT(), true, 0.1, 1e-5, false);
  ET eloss = (ey * ey.sin()).sum();
  TT tloss = (ty * ty.sin()).sum();
  auto eg = ember::autograd::grad({eloss}, {ex, ew}, {}, std::nullopt, true);
  auto tg = torch::autograd::grad({tloss}, {tx, tw}, {}, c10::nullopt, true);
  ET epen = eg[0].pow(2).sum() + eg[1].pow(2).sum();
  TT tpen = tg[0].pow(2).sum() + tg[1].pow(2).sum();
  epen.backward();
  tpen.backward();
  parity::expect_tensor_close(ex.grad(), tx.grad(), "double backward x", 1e-8, 1e-8);
  parity::expect_tensor_close(ew.grad(), tw.grad(), "double backward w", 1e-8, 1e-8);
}

}  // namespace norm_parity
