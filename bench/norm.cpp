// bench/norm: BatchNorm2d (training mode) and LayerNorm, ember vs libtorch 1.13 on the
// same inputs and weights, in one process, both with the same number of threads (2 by
// default, --threads N). Forward runs with grad mode on (as in training); fwd+bwd adds
// backward with a fixed output gradient into input, weight and bias. Prints both medians
// and the ratio ember/torch (below 1.0 means ember is faster).

#include <torch/torch.h>

#include <ember/ember.h>

#include "bench_util.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using bench::median_ms;
using bench::to_torch;




// One layer in both libraries with the same weights, input and output gradient.
struct Pair {
  ember::Tensor ex, eg;
  torch::Tensor tx, tg;
  std::function<ember::Tensor(const ember::Tensor&)> efwd;
  std::function<torch::Tensor(const torch::Tensor&)> tfwd;
  std::vector<ember::Tensor> eparams;
  std::vector<torch::Tensor> tparams;

  void ember_step(bool backward) {
    ember::Tensor y = efwd(ex);
    if (!backward) return;
    y.backward(eg);
    ex.mutable_grad() = ember::Tensor();
    for (ember::Tensor& p : eparams) p.mutable_grad() = ember::Tensor();
  }
  void torch_step(bool backward) {
    torch::Tensor y = tfwd(tx);
    if (!backward) return;
    y.backward(tg);
    tx.mutable_grad().reset();
    for (torch::Tensor& p : tparams) p.mutable_grad().reset();
  }
};

Pair batch_norm_pair(int64_t n, int64_t c, int64_t hw) {
  ember::nn::BatchNorm2d em(c);
  torch::nn::BatchNorm2d tm(c);
  {
    torch::NoGradGuard ng;
    ember::NoGradGuard eng;
    em->weight.uniform_(0.5, 1.5);
    em->bias.uniform_(-1, 1);
    tm->weight.copy_(to_torch(em->weight));
    tm->bias.copy_(to_torch(em->bias));
  }
  Pair p;
  p.ex = ember::randn({n, c, hw, hw}).requires_grad_();
  p.eg = ember::randn({n, c, hw, hw});
  p.tx = to_torch(p.ex.detach()).requires_grad_();
  p.tg = to_torch(p.eg);
  p.efwd = [em](const ember::Tensor& x) { return em(x); };
  p.tfwd = [tm](const torch::Tensor& x) mutable { return tm(x); };
  p.eparams = {em->weight, em->bias};
  p.tparams = {tm->weight, tm->bias};
  return p;
}

Pair layer_norm_pair(int64_t rows, int64_t cols) {
  ember::nn::LayerNorm em(std::vector<int64_t>{cols});
  torch::nn::LayerNorm tm(torch::nn::LayerNormOptions({cols}));
  {
    torch::NoGradGuard ng;
    ember::NoGradGuard eng;
    em->weight.uniform_(0.5, 1.5);
    em->bias.uniform_(-1, 1);
    tm->weight.copy_(to_torch(em->weight));
    tm->bias.copy_(to_torch(em->bias));
  }
  Pair p;
  p.ex = ember::randn({rows, cols}).requires_grad_();
  p.eg = ember::randn({rows, cols});
  p.tx = to_torch(p.ex.detach()).requires_grad_();
  p.tg = to_torch(p.eg);
  p.efwd = [em](const ember::Tensor& x) { return em(x); };
  p.tfwd = [tm](const torch::Tensor& x) mutable { return tm(x); };
  p.eparams = {em->weight, em->bias};
  p.tparams = {tm->weight, tm->bias};
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Options options = bench::parse_options(argc, argv);

  Pair bn32 = batch_norm_pair(64, 32, 28);
  Pair bn64 = batch_norm_pair(64, 64, 14);
  Pair ln = layer_norm_pair(4096, 512);
  std::vector<bench::Case> cases = {
      {"BatchNorm2d 64x32x28x28 fwd", [&] { bn32.ember_step(false); }, [&] { bn32.torch_step(false); }, 30},
      {"BatchNorm2d 64x32x28x28 f+b", [&] { bn32.ember_step(true); }, [&] { bn32.torch_step(true); }, 20},
      {"BatchNorm2d 64x64x14x14 fwd", [&] { bn64.ember_step(false); }, [&] { bn64.torch_step(false); }, 30},
      {"BatchNorm2d 64x64x14x14 f+b", [&] { bn64.ember_step(true); }, [&] { bn64.torch_step(true); }, 20},
      {"LayerNorm(512) 4096x512 fwd", [&] { ln.ember_step(false); }, [&] { ln.torch_step(false); }, 30},
      {"LayerNorm(512) 4096x512 f+b", [&] { ln.ember_step(true); }, [&] { ln.torch_step(true); }, 20},
  };

  bench::run_cases("bench/norm", cases, options, 3, 4);
  return 0;
}
