// nn layers and losses against libtorch 1.13: same weights and inputs, compare outputs
// and gradients.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ember/ember.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "parity/grad_parity.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace nn_parity {

using ET = ember::Tensor;
using TT = torch::Tensor;
using EV = std::vector<ET>;
using TV = std::vector<TT>;
namespace EF = ember::nn::functional;
namespace TF = torch::nn::functional;
using ember::nn::Reduction;

ET R(std::vector<int64_t> s) { return ember::randn(s, ember::TensorOptions(ember::kFloat64)); }

TEST(NNParity, LinearForwardBackward) {
  ember::nn::Linear lin(6, 4);
  torch::nn::Linear tlin(6, 4);
  {
    torch::NoGradGuard ng;
    tlin->weight.copy_(parity::to_torch(lin->weight.detach()));
    tlin->bias.copy_(parity::to_torch(lin->bias.detach()));
  }
  ET x = ember::randn({3, 5, 6});
  ET y = lin(x);
  TT ty = tlin(parity::to_torch(x));
  parity::expect_tensor_close(y, ty, "linear forward", 1e-5, 1e-6);
  TT g = torch::randn(ty.sizes());
  ty.backward(g);
  y.backward(parity::to_ember(g));
  parity::expect_tensor_close(lin->weight.grad(), tlin->weight.grad(), "linear weight grad", 1e-4, 1e-5);
  parity::expect_tensor_close(lin->bias.grad(), tlin->bias.grad(), "linear bias grad", 1e-4, 1e-5);
}

TEST(NNParity, Losses) {
  ET x = R({5, 4}), y = R({5, 4});
  const std::vector<std::pair<Reduction, torch::nn::MSELossOptions::reduction_t>> reductions = {
      {Reduction::Mean, torch::kMean}, {Reduction::Sum, torch::kSum}, {Reduction::None, torch::kNone}};
  for (size_t k = 0; k < reductions.size(); ++k) {
    const Reduction r = reductions[k].first;
    const auto tr = reductions[k].second;
    const std::string tag = " reduction " + std::to_string(k);
    parity::check_grad_parity("mse" + tag, [r](const EV& v) { return EF::mse_loss(v[0], v[1], r); },
                              [tr](const TV& v) { return TF::mse_loss(v[0], v[1], TF::MSELossFuncOptions().reduction(tr)); },
                              {x, y});
    parity::check_grad_parity("l1" + tag, [r](const EV& v) { return EF::l1_loss(v[0], v[1], r); },
                              [tr](const TV& v) { return TF::l1_loss(v[0], v[1], TF::L1LossFuncOptions().reduction(tr)); },
                              {x, y});
    parity::check_grad_parity(
        "smooth_l1" + tag, [r](const EV& v) { return EF::smooth_l1_loss(v[0], v[1], r, 0.5); },
        [tr](const TV& v) { return TF::smooth_l1_loss(v[0], v[1], TF::SmoothL1LossFuncOptions().reduction(tr), 0.5); },
        {x, y});
    parity::check_grad_parity(
        "huber" + tag, [r](const EV& v) { return EF::huber_loss(v[0], v[1], r, 0.7); },
        [tr](const TV& v) { return TF::huber_loss(v[0], v[1], TF::HuberLossFuncOptions().reduction(tr).delta(0.7)); },
        {x, y});
  }
  // Cross entropy: indices with weight, ignore_index and label smoothing; probabilities;
  // spatial [N, C, H, W].
  ET logits = R({6, 5});
  ET target = ember::tensor({0, 4, 2, -100, 1, 3}, ember::kInt64);
  ET w = ember::rand({5}, ember::TensorOptions(ember::kFloat64)) + 0.5;
  for (double ls : {0.0, 0.2}) {
    parity::check_grad_parity(
        "cross_entropy weight/ignore ls=" + std::to_string(ls),
        [&](const EV& v) { return EF::cross_entropy(v[0], v[1], v[2].detach(), -100, Reduction::Mean, ls); },
        [&](const TV& v) {
          return TF::cross_entropy(
              v[0], v[1], TF::CrossEntropyFuncOptions().weight(v[2].detach()).ignore_index(-100).label_smoothing(ls));
        },
        {logits, target, w});
  }
  ET probs = R({6, 5}).softmax(1);
  parity::check_grad_parity("cross_entropy probabilities",
                            [](const EV& v) { return EF::cross_entropy(v[0], v[1].detach()); },
                            [](const TV& v) { return TF::cross_entropy(v[0], v[1].detach()); }, {logits, probs});
  ET spatial = R({2, 3, 4, 4});
  ET starget = ember::randint(0, 3, {2, 4, 4});
  parity::check_grad_parity("cross_entropy spatial", [](const EV& v) { return EF::cross_entropy(v[0], v[1]); },
                            [](const TV& v) { return TF::cross_entropy(v[0], v[1]); }, {spatial, starget});
  parity::check_grad_parity(
      "nll sum", [](const EV& v) { return EF::nll_loss(v[0].log_softmax(1), v[1], {}, -100, Reduction::Sum); },
      [](const TV& v) { return TF::nll_loss(v[0].log_softmax(1), v[1], TF::NLLLossFuncOptions().reduction(torch::kSum)); },
      {logits, ember::tensor({0, 4, 2, 3, 1, 3}, ember::kInt64)});
  // Binary losses.
  ET p = ember::rand({4, 3}, ember::TensorOptions(ember::kFloat64)) * 0.9 + 0.05;
  ET t = ember::rand({4, 3}, ember::TensorOptions(ember::kFloat64));
  parity::check_grad_parity("bce", [](const EV& v) { return EF::binary_cross_entropy(v[0], v[1]); },
                            [](const TV& v) { return TF::binary_cross_entropy(v[0], v[1]); }, {p, t});
  ET pw = ember::rand({3}, ember::TensorOptions(ember::kFloat64)) + 0.5;
  parity::check_grad_parity(
      "bce_with_logits pos_weight",
      [](const EV& v) { return EF::binary_cross_entropy_with_logits(v[0] * 10, v[1], {}, v[2].detach()); },
      [](const TV& v) {
        return TF::binary_cross_entropy_with_logits(
            v[0] * 10, v[1], TF::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(v[2].detach()));
      },
      {R({4, 3}), t, pw});
  parity::check_grad_parity(
      "kl_div batchmean",
      [](const EV& v) { return EF::kl_div(v[0].log_softmax(1), v[1].softmax(1), Reduction::BatchMean); },
      [](const TV& v) {
        return TF::kl_div(v[0].log_softmax(1), v[1].softmax(1), TF::KLDivFuncOptions().reduction(torch::kBatchMean));
      },
      {R({4, 5}), R({4, 5})});
}

// The fused cross entropy (Note [Fused cross entropy]): float32 rows shorter and longer
// than the kernel's 2048-value blocks, non-contiguous logits, int32 and int64 targets,
// ignored rows (all of them, too), every reduction, an unbatched [C] input, rows with
// -inf/+inf/NaN logits, a gradient of the gradient, and the same bits for 1 and 2 threads.
TEST(NNParity, FusedCrossEntropy) {
  const std::vector<std::pair<Reduction, int64_t>> reductions = {{Reduction::Mean, 1}, {Reduction::Sum, 2},
                                                                 {Reduction::None, 0}};
  auto treduction = [](int64_t k) -> TF::CrossEntropyFuncOptions::reduction_t {
    if (k == 1) return torch::kMean;
    if (k == 2) return torch::kSum;
    return torch::kNone;
  };
  for (int64_t classes : {1, 7, 1000, 3001}) {
    for (const auto& [r, k] : reductions) {
      const std::string tag = "classes " + std::to_string(classes) + " reduction " + std::to_string(k);
      ET logits = ember::randn({9, classes}) * 3;
      ET target = ember::randint(0, classes, {9});
      target.index_put_({ember::tensor({2, 5}, ember::kInt64)}, ember::tensor({-100, -100}, ember::kInt64));
      const auto tr = treduction(k);
      parity::check_grad_parity(
          "fused cross_entropy " + tag,
          [r = r](const EV& v) { return EF::cross_entropy(v[0], v[1], {}, -100, r); },
          [tr](const TV& v) { return TF::cross_entropy(v[0], v[1], TF::CrossEntropyFuncOptions().reduction(tr)); },
          {logits, target}, 1e-5, 1e-6);
      ET w = ember::rand({classes}) + 0.5;
      parity::check_grad_parity(
          "fused cross_entropy weighted, int32 target " + tag,
          [r = r](const EV& v) { return EF::cross_entropy(v[0], v[1].to(ember::kInt32), v[2].detach(), -100, r); },
          [tr](const TV& v) {
            return TF::cross_entropy(v[0], v[1], TF::CrossEntropyFuncOptions().reduction(tr).weight(v[2].detach()));
          },
          {logits, target, w}, 1e-5, 1e-6);
    }
  }
  // Non-contiguous logits: the transpose of a [C, N] tensor.
  ET tt = ember::randn({40, 11});
  parity::check_grad_parity("fused cross_entropy transposed logits",
                            [](const EV& v) { return EF::cross_entropy(v[0].t(), v[1]); },
                            [](const TV& v) { return TF::cross_entropy(v[0].t(), v[1]); },
                            {tt, ember::randint(0, 40, {11})}, 1e-5, 1e-6);
  // Unbatched [C] input and a target of every row ignored (mean of nothing: NaN).
  parity::check_grad_parity("fused cross_entropy unbatched",
                            [](const EV& v) { return EF::cross_entropy(v[0], v[1]); },
                            [](const TV& v) { return TF::cross_entropy(v[0], v[1]); },
                            {ember::randn({6}), ember::tensor(3, ember::kInt64)}, 1e-5, 1e-6);
  parity::check_grad_parity("fused cross_entropy all ignored",
                            [](const EV& v) { return EF::cross_entropy(v[0], v[1], {}, 1); },
                            [](const TV& v) { return TF::cross_entropy(v[0], v[1], TF::CrossEntropyFuncOptions().ignore_index(1)); },
                            {ember::randn({3, 4}), ember::tensor({1, 1, 1}, ember::kInt64)}, 1e-5, 1e-6);
  // Special values: a -inf logit (ordinary row), a +inf, a NaN and an all -inf row.
  const double inf = std::numeric_limits<double>::infinity();
  ET special = ember::tensor({{1.0, -inf, 2.0}, {1.0, inf, 0.5}, {0.0, std::nan(""), 1.0}, {-inf, -inf, -inf}});
  ET st = ember::tensor({0, 2, 1, 0}, ember::kInt64);
  ET el = EF::cross_entropy(special, st, {}, -100, Reduction::None);
  TT tl = TF::cross_entropy(parity::to_torch(special), parity::to_torch(st),
                            TF::CrossEntropyFuncOptions().reduction(torch::kNone));
  parity::expect_tensor_close(el, tl, "fused cross_entropy special values", 1e-6, 1e-7);
  // Gradient of the gradient (create_graph): the recorded backward must be differentiable.
  {
    ET x = ember::randn({5, 6}, ember::TensorOptions(ember::kFloat64)).requires_grad_(true);
    ET t = ember::tensor({0, 5, 2, 3, 1}, ember::kInt64);
    ET gx = ember::autograd::grad({EF::cross_entropy(x, t)}, {x}, {}, true, true)[0];
    ET gg = ember::autograd::grad({(gx * gx).sum()}, {x})[0];
    TT tx = parity::to_torch(x.detach()).requires_grad_(true);
    TT tgx = torch::autograd::grad({TF::cross_entropy(tx, parity::to_torch(t))}, {tx}, {}, true, true)[0];
    TT tgg = torch::autograd::grad({(tgx * tgx).sum()}, {tx})[0];
    parity::expect_tensor_close(gx, tgx, "fused cross_entropy first gradient (create_graph)", 1e-8, 1e-10);
    parity::expect_tensor_close(gg, tgg, "fused cross_entropy gradient of the gradient", 1e-8, 1e-10);
  }
  // Bit-identical for any thread count (rows are independent, each summed in fixed blocks).
  ET big = ember::randn({300, 2500});
  ET bt = ember::randint(0, 2500, {300});
  auto run = [&](int threads) {
    ember::set_num_threads(threads);
    ET x = big.detach().requires_grad_(true);
    ET loss = EF::cross_entropy(x, bt);
    loss.backward();
    return std::make_pair(loss.detach(), x.grad());
  };
  const int before = ember::get_num_threads();
  const auto one = run(1), two = run(2);
  ember::set_num_threads(before);
  EXPECT_TRUE(one.first.equal(two.first));
  EXPECT_TRUE(one.second.equal(two.second));
}

}  // namespace nn_parity
