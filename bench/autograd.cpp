// bench/autograd: the autograd engine's overhead (a tiny graph) and an MLP's
// forward + backward (bench/harness.h; run by bench/run.py).

#include <cmath>
#include <cstdint>
#include <memory>

#include "harness.h"

namespace {

using bench::Case;
using bench::clear_grad;
using bench::keep;
using bench::Limit;
using bench::Tensor;

struct Mlp {
  std::vector<Tensor> w, b;
  Tensor input;
};

std::vector<Case> cases() {
  return {
      {"tiny (x*x).sum().backward() 10 el (per call)",
       [] {
         auto x = std::make_shared<Tensor>(lib::randn({10}).requires_grad_());
         return std::function<void()>([x] {
           (*x * *x).sum().backward();
           clear_grad(*x);
         });
       },
       21, 2000},
      {"tiny x.exp().mul(2).sum().backward() 10 el (per call)",
       [] {
         auto x = std::make_shared<Tensor>(lib::randn({10}).requires_grad_());
         return std::function<void()>([x] {
           x->exp().mul(2).sum().backward();
           clear_grad(*x);
         });
       },
       21, 2000},
      {"MLP 784-256-256-10 (ReLU) b64 fwd+bwd",
       [] {
         auto m = std::make_shared<Mlp>();
         const int64_t dims[] = {784, 256, 256, 10};
         for (int i = 0; i < 3; ++i) {
           m->w.push_back((lib::randn({dims[i + 1], dims[i]}) * (1.0 / std::sqrt(double(dims[i])))).requires_grad_());
           m->b.push_back(lib::zeros({dims[i + 1]}).requires_grad_());
         }
         m->input = lib::randn({64, 784});
         return std::function<void()>([m] {
           Tensor h = m->input;
           for (int i = 0; i < 3; ++i) {
             h = lib::linear(h, m->w[i], m->b[i]);
             if (i < 2) h = h.relu();
           }
           (h * h).mean().backward();
           for (int i = 0; i < 3; ++i) {
             clear_grad(m->w[i]);
             clear_grad(m->b[i]);
           }
         });
       },
       30, 5, 0, 3 * 2.0 * 64 * (784 * 256 + 256 * 256 + 256 * 10), Limit::Gemm},
  };
}

}  // namespace

int main(int argc, char **argv) { return bench::main_with_cases(argc, argv, cases()); }
