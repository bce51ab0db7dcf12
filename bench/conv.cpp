// bench/conv: the Fashion-MNIST CNN's layers at batch 64 — convolution, max
// pooling, ReLU — forward (no grad) and forward + backward (bench/harness.h;
// run by bench/run.py).

#include <cstdint>
#include <memory>

#include "harness.h"

namespace {

using bench::Case;
using bench::keep;
using bench::Limit;
using bench::Tensor;

struct ConvLayer {
  Tensor x, w, b, gy;
};

std::shared_ptr<ConvLayer> conv_layer(int64_t n, int64_t cin, int64_t cout, int64_t hw) {
  auto l = std::make_shared<ConvLayer>();
  l->x = lib::randn({n, cin, hw, hw});
  l->w = lib::randn({cout, cin, 3, 3}) * 0.1;
  l->b = lib::randn({cout});
  l->gy = lib::randn({n, cout, hw, hw});
  return l;
}

// A 3x3, padding 1 convolution of an [n, cin, hw, hw] batch; `backward` adds
// the gradients of the weight, the bias and (when input_grad) the input.
Case conv(std::string name, int64_t n, int64_t cin, int64_t cout, int64_t hw, bool backward, bool input_grad) {
  const double fwd_flops = 2.0 * n * cout * hw * hw * cin * 9;
  const double flops = backward ? fwd_flops * (input_grad ? 3 : 2) : fwd_flops;
  return {std::move(name),
          [=] {
            auto l = conv_layer(n, cin, cout, hw);
            if (!backward) {
              return std::function<void()>([l] {
                lib::NoGradGuard g;
                keep(lib::conv2d(l->x, l->w, l->b, 1, 1));
              });
            }
            return std::function<void()>([l, input_grad] {
              Tensor x = input_grad ? l->x.detach().requires_grad_() : l->x;
              Tensor w = l->w.detach().requires_grad_(), b = l->b.detach().requires_grad_();
              lib::conv2d(x, w, b, 1, 1).backward(l->gy);
              keep(w.grad());
            });
          },
          backward ? 15 : 30,
          1,
          0,
          flops,
          Limit::Gemm};
}

std::vector<Case> cases() {
  const int64_t n = 64;
  return {
      conv("conv2d 32->64 3x3 p1, 64x32x14x14 fwd", n, 32, 64, 14, false, false),
      conv("conv2d 32->64 fwd+bwd (x, w, b grads)", n, 32, 64, 14, true, true),
      conv("conv2d 1->32 3x3 p1, 64x1x28x28 fwd", n, 1, 32, 28, false, false),
      conv("conv2d 1->32 fwd+bwd (w, b grads)", n, 1, 32, 28, true, false),
      {"max_pool2d 2, 64x32x28x28 fwd",
       [n] {
         auto x = std::make_shared<Tensor>(lib::randn({n, 32, 28, 28}));
         return std::function<void()>([x] {
           lib::NoGradGuard g;
           keep(lib::max_pool2d(*x, 2));
         });
       },
       30, 1, n * 32 * 28 * 28 * 4.0 * 1.25, 0, Limit::Copy},
      {"max_pool2d 2 fwd+bwd",
       [n] {
         auto x = std::make_shared<Tensor>(lib::randn({n, 32, 28, 28}));
         auto gy = std::make_shared<Tensor>(lib::randn({n, 32, 14, 14}));
         return std::function<void()>([x, gy] {
           Tensor xr = x->detach().requires_grad_();
           lib::max_pool2d(xr, 2).backward(*gy);
           keep(xr.grad());
         });
       },
       30},
      {"relu 64x32x28x28 fwd+bwd",
       [n] {
         auto x = std::make_shared<Tensor>(lib::randn({n, 32, 28, 28}));
         auto gy = std::make_shared<Tensor>(lib::randn({n, 32, 28, 28}));
         return std::function<void()>([x, gy] {
           Tensor xr = x->detach().requires_grad_();
           xr.relu().backward(*gy);
           keep(xr.grad());
         });
       },
       30},
  };
}

}  // namespace

int main(int argc, char **argv) { return bench::main_with_cases(argc, argv, cases()); }
