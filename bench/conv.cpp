// bench/conv: convolution and pooling, ember vs libtorch 1.13 on the same inputs in one
// process, both with the same number of threads (2 by default, --threads N). The cases
// are the layers of the Fashion-MNIST CNN (batch 64). Prints both medians and the ratio
// ember/torch (below 1.0 means ember is faster).

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




// One layer's tensors in both libraries (same values).
struct ConvLayer {
  ember::Tensor x, w, b, gy;
  torch::Tensor tx, tw, tb, tgy;
  ConvLayer(int64_t n, int64_t cin, int64_t cout, int64_t hw) {
    x = ember::randn({n, cin, hw, hw});
    w = ember::randn({cout, cin, 3, 3}) * 0.1;
    b = ember::randn({cout});
    gy = ember::randn({n, cout, hw, hw});
    tx = to_torch(x), tw = to_torch(w), tb = to_torch(b), tgy = to_torch(gy);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const bench::Options options = bench::parse_options(argc, argv);

  ConvLayer c2(64, 32, 64, 14), c1(64, 1, 32, 28);
  ember::Tensor px = ember::randn({64, 32, 28, 28});
  ember::Tensor pgy = ember::randn({64, 32, 14, 14});
  torch::Tensor tpx = to_torch(px), tpgy = to_torch(pgy);

  // fwd+bwd: x (when input_grad), weight and bias require grad; the gradient of the output is given.
  auto ember_step = [](ConvLayer& l, bool input_grad) {
    ember::Tensor x = input_grad ? l.x.detach().requires_grad_() : l.x;
    ember::Tensor w = l.w.detach().requires_grad_(), b = l.b.detach().requires_grad_();
    ember::conv2d(x, w, b, 1, 1).backward(l.gy);
  };
  auto torch_step = [](ConvLayer& l, bool input_grad) {
    torch::Tensor x = input_grad ? l.tx.detach().requires_grad_() : l.tx;
    torch::Tensor w = l.tw.detach().requires_grad_(), b = l.tb.detach().requires_grad_();
    torch::conv2d(x, w, b, 1, 1).backward(l.tgy);
  };

  std::vector<bench::Case> cases = {
      {"conv2d 32->64 3x3 p1, 64x32x14x14 fwd",
       [&] {
         ember::NoGradGuard g;
         ember::Tensor r = ember::conv2d(c2.x, c2.w, c2.b, 1, 1);
       },
       [&] {
         torch::NoGradGuard g;
         torch::Tensor r = torch::conv2d(c2.tx, c2.tw, c2.tb, 1, 1);
       },
       30},
      {"conv2d 32->64 fwd+bwd (x, w, b grads)", [&] { ember_step(c2, true); }, [&] { torch_step(c2, true); }, 15},
      {"conv2d 1->32 3x3 p1, 64x1x28x28 fwd",
       [&] {
         ember::NoGradGuard g;
         ember::Tensor r = ember::conv2d(c1.x, c1.w, c1.b, 1, 1);
       },
       [&] {
         torch::NoGradGuard g;
         torch::Tensor r = torch::conv2d(c1.tx, c1.tw, c1.tb, 1, 1);
       },
       30},
      {"conv2d 1->32 fwd+bwd (w, b grads)", [&] { ember_step(c1, false); }, [&] { torch_step(c1, false); }, 15},
      {"max_pool2d 2, 64x32x28x28 fwd",
       [&] {
         ember::NoGradGuard g;
         ember::Tensor r = ember::max_pool2d(px, 2);
       },
       [&] {
         torch::NoGradGuard g;
         torch::Tensor r = torch::max_pool2d(tpx, 2);
       },
       30},
      {"max_pool2d 2 fwd+bwd",
       [&] {
         ember::Tensor x = px.detach().requires_grad_();
         ember::max_pool2d(x, 2).backward(pgy);
       },
       [&] {
         torch::Tensor x = tpx.detach().requires_grad_();
         torch::max_pool2d(x, 2).backward(tpgy);
       },
       30},
  };

  bench::run_cases("bench/conv", cases, options, 2, 3);
  return 0;
}
