// bench/autograd: forward + backward in ember vs libtorch 1.13, same inputs, same thread
// count (2 by default, --threads N), one process. Prints medians and ember/torch.
//   tiny: y = (x*x).sum(); y.backward() on 10 elements — the per-node overhead.
//   mlp:  3-layer MLP (784-256-256-10, ReLU) forward + backward at batch 64.

#include <torch/torch.h>

#include <ember/ember.h>

#include "bench_util.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using bench::median_ms;
using bench::to_torch;



struct Layer {
  ember::Tensor w, b;
  torch::Tensor tw, tb;
};

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

  // tiny
  ember::Tensor x = ember::randn({10}).requires_grad_();
  torch::Tensor tx = to_torch(x.detach()).requires_grad_();

  // mlp
  std::vector<Layer> layers;
  const int64_t dims[] = {784, 256, 256, 10};
  for (int i = 0; i < 3; ++i) {
    Layer l;
    l.w = (ember::randn({dims[i + 1], dims[i]}) * (1.0 / std::sqrt(double(dims[i])))).requires_grad_();
    l.b = ember::zeros({dims[i + 1]}).requires_grad_();
    l.tw = to_torch(l.w.detach()).requires_grad_();
    l.tb = to_torch(l.b.detach()).requires_grad_();
    layers.push_back(l);
  }
  ember::Tensor input = ember::randn({64, 784});
  torch::Tensor tinput = to_torch(input);

  auto ember_mlp = [&] {
    ember::Tensor h = input;
    for (int i = 0; i < 3; ++i) {
      h = ember::linear(h, layers[i].w, layers[i].b);
      if (i < 2) h = h.relu();
    }
    (h * h).mean().backward();
    for (auto& l : layers) {
      l.w.mutable_grad() = ember::Tensor();
      l.b.mutable_grad() = ember::Tensor();
    }
  };
  auto torch_mlp = [&] {
    torch::Tensor h = tinput;
    for (int i = 0; i < 3; ++i) {
      h = torch::linear(h, layers[i].tw, layers[i].tb);
      if (i < 2) h = h.relu();
    }
    (h * h).mean().backward();
    for (auto& l : layers) {
      l.tw.mutable_grad() = torch::Tensor();
      l.tb.mutable_grad() = torch::Tensor();
    }
  };

  // Check once that both compute the same gradients before timing.
  if (only.empty() || std::string("MLP").find(only) != std::string::npos) {
    ember::Tensor h = input;
    torch::Tensor th = tinput;
    for (int i = 0; i < 3; ++i) {
      h = ember::linear(h, layers[i].w, layers[i].b);
      th = torch::linear(th, layers[i].tw, layers[i].tb);
      if (i < 2) {
        h = h.relu();
        th = th.relu();
      }
    }
    (h * h).mean().backward();
    (th * th).mean().backward();
    const bool same = torch::allclose(to_torch(layers[0].w.grad()), layers[0].tw.grad(), 1e-4, 1e-6);
    std::printf("mlp gradients match torch: %s\n", same ? "yes" : "NO");
    for (auto& l : layers) {
      l.w.mutable_grad() = ember::Tensor();
      l.b.mutable_grad() = ember::Tensor();
      l.tw.mutable_grad() = torch::Tensor();
      l.tb.mutable_grad() = torch::Tensor();
    }
    if (!same) return 1;
  }

  struct Case {
    const char* name;
    std::function<void()> e, t;
    int reps, inner;
  };
  std::vector<Case> cases = {
      {"tiny (x*x).sum().backward() 10 el",
       [&] {
         (x * x).sum().backward();
         x.mutable_grad() = ember::Tensor();
       },
       [&] {
         (tx * tx).sum().backward();
         tx.mutable_grad() = torch::Tensor();
       },
       30, 1000},
      {"MLP 784-256-256-10 fwd+bwd b64", ember_mlp, torch_mlp, 30, 5},
  };
  std::printf("bench/autograd: ember vs libtorch %s, %d threads, median of N runs\n", TORCH_VERSION, threads);
  std::printf("%-32s %12s %12s %8s\n", "case", "ember ms", "torch ms", "ratio");
  for (const auto& c : cases) {
    if (!only.empty() && std::string(c.name).find(only) == std::string::npos) continue;
    auto run_e = [&] { for (int i = 0; i < c.inner; ++i) c.e(); };
    auto run_t = [&] { for (int i = 0; i < c.inner; ++i) c.t(); };
    double e1 = median_ms(run_e, c.reps, 2), t1 = median_ms(run_t, c.reps, 2);
    double e2 = median_ms(run_e, c.reps, 0), t2 = median_ms(run_t, c.reps, 0);
    double e = std::min(e1, e2) / c.inner, t = std::min(t1, t2) / c.inner;
    std::printf("%-32s %12.4f %12.4f %8.2f (per call)\n", c.name, e, t, e / t);
  }
  return 0;
}
