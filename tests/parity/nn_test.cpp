// nn layers and losses against libtorch 1.13: same weights and inputs, compare outputs
// and gradients.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ember/ember.h>

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

}  // namespace nn_parity
