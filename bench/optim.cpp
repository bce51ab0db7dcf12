// bench/optim: one optimizer step on ~420k float32 parameters (the main job's model size:
// shapes of a small conv net + MLP), ember vs libtorch 1.13, same thread count (2 by
// default, --threads N). Prints medians and ember/torch.

#include <torch/torch.h>

#include <ember/ember.h>

#include "bench_util.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

using bench::median_ms;
using bench::to_torch;


}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
  }
  ember::set_num_threads(threads);
  torch::set_num_threads(threads);
  const std::vector<std::vector<int64_t>> shapes = {{32, 1, 3, 3}, {32}, {64, 32, 3, 3}, {64},
                                                    {128, 3136}, {128}, {10, 128}, {10}};
  std::vector<ember::Tensor> ep;
  std::vector<torch::Tensor> tp;
  int64_t n = 0;
  for (const auto& s : shapes) {
    ember::Tensor p = ember::randn(s).requires_grad_();
    p.mutable_grad() = ember::randn(s);
    ep.push_back(p);
    torch::Tensor t = torch::randn(s, torch::requires_grad());
    t.mutable_grad() = torch::randn(s);
    tp.push_back(t);
    n += p.numel();
  }
  std::printf("optimizer step on %lld parameters, %d threads (median ms)\n", static_cast<long long>(n), threads);
  std::printf("%-10s %10s %10s %8s\n", "optimizer", "ember", "torch", "ratio");
  auto row = [&](const char* name, ember::optim::Optimizer& eo, torch::optim::Optimizer& to) {
    const double e = median_ms([&] { eo.step(); }, 50, 5);
    const double t = median_ms([&] { to.step(); }, 50, 5);
    std::printf("%-10s %10.3f %10.3f %8.2f\n", name, e, t, e / t);
  };
  {
    ember::optim::Adam eo(ep, ember::optim::AdamOptions(1e-3));
    torch::optim::Adam to(tp, torch::optim::AdamOptions(1e-3));
    row("Adam", eo, to);
  }
  {
    ember::optim::AdamW eo(ep, ember::optim::AdamWOptions(1e-3));
    torch::optim::AdamW to(tp, torch::optim::AdamWOptions(1e-3));
    row("AdamW", eo, to);
  }
  {
    ember::optim::SGD eo(ep, ember::optim::SGDOptions(1e-3).momentum(0.9));
    torch::optim::SGD to(tp, torch::optim::SGDOptions(1e-3).momentum(0.9));
    row("SGD+mom", eo, to);
  }
  return 0;
}
