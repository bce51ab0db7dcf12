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



struct Case {
  std::string name;
  std::function<void()> ember_fn, torch_fn;
  int reps;
};

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
  int threads = 2;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
  }
  ember::set_num_threads(threads);
  torch::set_num_threads(threads);
  ember::manual_seed(0);

  Pair bn32 = batch_norm_pair(64, 32, 28);
  Pair bn64 = batch_norm_pair(64, 64, 14);
  Pair ln = layer_norm_pair(4096, 512);
  std::vector<Case> cases = {
      {"BatchNorm2d 64x32x28x28 fwd", [&] { bn32.ember_step(false); }, [&] { bn32.torch_step(false); }, 30},
      {"BatchNorm2d 64x32x28x28 f+b", [&] { bn32.ember_step(true); }, [&] { bn32.torch_step(true); }, 20},
      {"BatchNorm2d 64x64x14x14 fwd", [&] { bn64.ember_step(false); }, [&] { bn64.torch_step(false); }, 30},
      {"BatchNorm2d 64x64x14x14 f+b", [&] { bn64.ember_step(true); }, [&] { bn64.torch_step(true); }, 20},
      {"LayerNorm(512) 4096x512 fwd", [&] { ln.ember_step(false); }, [&] { ln.torch_step(false); }, 30},
      {"LayerNorm(512) 4096x512 f+b", [&] { ln.ember_step(true); }, [&] { ln.torch_step(true); }, 20},
  };

  std::printf("bench/norm: ember vs libtorch %s, %d threads, median of N runs\n", TORCH_VERSION, threads);
  std::printf("%-30s %12s %12s %8s\n", "case", "ember ms", "torch ms", "ratio");
  int slower = 0;
  for (const auto& c : cases) {
    if (!only.empty() && c.name.find(only) == std::string::npos) continue;
    // Interleave the two libraries so machine noise hits both alike.
    double e1 = median_ms(c.ember_fn, c.reps, 3), t1 = median_ms(c.torch_fn, c.reps, 3);
    double e2 = median_ms(c.ember_fn, c.reps, 0), t2 = median_ms(c.torch_fn, c.reps, 0);
    double e = std::min(e1, e2), t = std::min(t1, t2);
    std::printf("%-30s %12.4f %12.4f %8.2f\n", c.name.c_str(), e, t, e / t);
    if (e > t) ++slower;
  }
  std::printf("cases where ember is slower than torch: %d\n", slower);
  return 0;
}
