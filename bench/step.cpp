// bench/step: where a training step of the main job (examples/fashion_mnist: a
// CNN on 64 Fashion-MNIST-sized images, Adam) spends its time — each stage
// forward + backward on its own, then the whole step (bench/harness.h; run by
// bench/run.py). The stages' times add up to about the step's; the table shows
// which stage each library is fast or slow at.

#include <cstdint>
#include <memory>

#include "harness.h"

namespace {

using bench::Case;
using bench::clear_grad;
using bench::keep;
using bench::Limit;
using bench::Tensor;

constexpr int64_t kBatch = 64;

Tensor param(std::vector<int64_t> shape, double scale) { return (lib::randn(shape) * scale).requires_grad_(); }

// One stage: f(inputs...) forward, then backward with a random upstream
// gradient of the output's shape; the gradients of `params` are dropped after
// each call.
Case stage(std::string name, std::function<std::function<void()>()> setup, double flops = 0) {
  return {std::move(name), std::move(setup), 30, 1, 0, flops, flops > 0 ? Limit::Gemm : Limit::None};
}

lib::nn::Sequential model() {
  namespace nn = lib::nn;
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)),
                        nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(3136, 128),
                        nn::ReLU(), nn::Linear(128, 10));
}

std::vector<Case> cases() {
  const double conv1_flops = 2.0 * kBatch * 32 * 28 * 28 * 9, conv2_flops = 2.0 * kBatch * 64 * 14 * 14 * 32 * 9;
  return {
      stage(
          "1 conv 1->32 (w, b grads)",
          [] {
            auto x = std::make_shared<Tensor>(lib::randn({kBatch, 1, 28, 28}));
            auto w = std::make_shared<Tensor>(param({32, 1, 3, 3}, 0.3)),
                 b = std::make_shared<Tensor>(param({32}, 0.1));
            auto gy = std::make_shared<Tensor>(lib::randn({kBatch, 32, 28, 28}));
            return std::function<void()>([=] {
              lib::conv2d(*x, *w, *b, 1, 1).backward(*gy);
              clear_grad(*w);
              clear_grad(*b);
            });
          },
          2 * conv1_flops),
      stage("2 relu + max_pool2d 64x32x28x28",
            [] {
              auto x = std::make_shared<Tensor>(lib::randn({kBatch, 32, 28, 28}));
              auto gy = std::make_shared<Tensor>(lib::randn({kBatch, 32, 14, 14}));
              return std::function<void()>([=] {
                Tensor xr = x->detach().requires_grad_();
                lib::max_pool2d(xr.relu(), 2).backward(*gy);
                keep(xr.grad());
              });
            }),
      stage(
          "3 conv 32->64 (x, w, b grads)",
          [] {
            auto x = std::make_shared<Tensor>(lib::randn({kBatch, 32, 14, 14}));
            auto w = std::make_shared<Tensor>(param({64, 32, 3, 3}, 0.06)),
                 b = std::make_shared<Tensor>(param({64}, 0.1));
            auto gy = std::make_shared<Tensor>(lib::randn({kBatch, 64, 14, 14}));
            return std::function<void()>([=] {
              Tensor xr = x->detach().requires_grad_();
              lib::conv2d(xr, *w, *b, 1, 1).backward(*gy);
              keep(xr.grad());
              clear_grad(*w);
              clear_grad(*b);
            });
          },
          3 * conv2_flops),
      stage("4 relu + max_pool2d 64x64x14x14",
            [] {
              auto x = std::make_shared<Tensor>(lib::randn({kBatch, 64, 14, 14}));
              auto gy = std::make_shared<Tensor>(lib::randn({kBatch, 64, 7, 7}));
              return std::function<void()>([=] {
                Tensor xr = x->detach().requires_grad_();
                lib::max_pool2d(xr.relu(), 2).backward(*gy);
                keep(xr.grad());
              });
            }),
      stage(
          "5 flatten, linear 3136->128, relu, linear 128->10, cross_entropy",
          [] {
            auto x = std::make_shared<Tensor>(lib::randn({kBatch, 64, 7, 7}));
            auto w1 = std::make_shared<Tensor>(param({128, 3136}, 0.018)),
                 b1 = std::make_shared<Tensor>(param({128}, 0.01));
            auto w2 = std::make_shared<Tensor>(param({10, 128}, 0.09)),
                 b2 = std::make_shared<Tensor>(param({10}, 0.01));
            auto target = std::make_shared<Tensor>(lib::randint(0, 10, {kBatch}));
            return std::function<void()>([=] {
              Tensor xr = x->detach().requires_grad_();
              Tensor h = lib::linear(xr.flatten(1), *w1, *b1).relu();
              lib::nn::functional::cross_entropy(lib::linear(h, *w2, *b2), *target).backward();
              keep(xr.grad());
              for (Tensor *p : {w1.get(), b1.get(), w2.get(), b2.get()}) clear_grad(*p);
            });
          },
          3 * 2.0 * kBatch * (3136 * 128 + 128 * 10)),
      {"6 Adam step (421k parameters)",
       [] {
         auto m = std::make_shared<lib::nn::Sequential>(model());
         for (auto &p : (*m)->parameters()) p.mutable_grad() = lib::randn(p.sizes());
         auto opt = std::make_shared<lib::optim::Adam>((*m)->parameters(), lib::optim::AdamOptions(1e-3));
         return std::function<void()>([m, opt] { opt->step(); });
       },
       30},
      {"whole step: zero_grad, forward, cross_entropy, backward, Adam",
       [] {
         auto m = std::make_shared<lib::nn::Sequential>(model());
         auto opt = std::make_shared<lib::optim::Adam>((*m)->parameters(), lib::optim::AdamOptions(1e-3));
         auto x = std::make_shared<Tensor>(lib::randn({kBatch, 1, 28, 28}));
         auto target = std::make_shared<Tensor>(lib::randint(0, 10, {kBatch}));
         return std::function<void()>([=] {
           opt->zero_grad();
           lib::nn::functional::cross_entropy((*m)->forward(*x), *target).backward();
           opt->step();
         });
       },
       30, 1, 0, 2 * conv1_flops + 3 * conv2_flops + 3 * 2.0 * kBatch * (3136 * 128 + 128 * 10), Limit::Gemm},
  };
}

}  // namespace

int main(int argc, char **argv) { return bench::main_with_cases(argc, argv, cases()); }
