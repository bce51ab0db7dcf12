// bench/norm: BatchNorm2d (the main job's shapes) and LayerNorm, forward and
// forward + backward (bench/harness.h; run by bench/run.py).

#include <cstdint>
#include <memory>

#include "harness.h"

namespace {

using bench::Case;
using bench::clear_grad;
using bench::keep;
using bench::Limit;
using bench::Tensor;

// A module applied to x; with `backward`, the gradient gy is sent back through
// it and the gradients of x, the weight and the bias are dropped again.
template <typename Module>
std::function<void()> step(Module m, std::vector<int64_t> shape, bool backward) {
  {
    lib::NoGradGuard g;
    m->weight.uniform_(0.5, 1.5);
    m->bias.uniform_(-1, 1);
  }
  auto x = std::make_shared<Tensor>(lib::randn(shape).requires_grad_());
  auto gy = std::make_shared<Tensor>(lib::randn(shape));
  return [m, x, gy, backward]() mutable {
    if (!backward) {
      lib::NoGradGuard g;
      keep(m(*x));
      return;
    }
    m(*x).backward(*gy);
    clear_grad(*x);
    clear_grad(m->weight);
    clear_grad(m->bias);
  };
}

Case batch_norm(std::string name, int64_t n, int64_t c, int64_t hw, bool backward) {
  const double bytes = n * c * hw * hw * 4.0 * (backward ? 5 : 3);  // fwd: stats read + read + write
  return {std::move(name),
          [=] {
            return step(lib::nn::BatchNorm2d(c), {n, c, hw, hw}, backward);
          },
          backward ? 20 : 30,
          1,
          bytes,
          0,
          Limit::Copy};
}

Case layer_norm(std::string name, int64_t rows, int64_t cols, bool backward) {
  const double bytes = rows * cols * 4.0 * (backward ? 5 : 2);
  return {std::move(name),
          [=] {
            return step(lib::nn::LayerNorm(lib::nn::LayerNormOptions({cols})), {rows, cols}, backward);
          },
          backward ? 20 : 30,
          1,
          bytes,
          0,
          Limit::Copy};
}

std::vector<Case> cases() {
  return {
      batch_norm("BatchNorm2d 64x32x28x28 fwd (train)", 64, 32, 28, false),
      batch_norm("BatchNorm2d 64x32x28x28 fwd+bwd", 64, 32, 28, true),
      batch_norm("BatchNorm2d 64x64x14x14 fwd (train)", 64, 64, 14, false),
      batch_norm("BatchNorm2d 64x64x14x14 fwd+bwd", 64, 64, 14, true),
      layer_norm("LayerNorm(512) 4096x512 fwd", 4096, 512, false),
      layer_norm("LayerNorm(512) 4096x512 fwd+bwd", 4096, 512, true),
      layer_norm("LayerNorm(1024) 4096x1024 fwd", 4096, 1024, false),
  };
}

}  // namespace

int main(int argc, char **argv) { return bench::main_with_cases(argc, argv, cases()); }
