// Gradients of reductions, scans, softmax, matrix products and shaping ops against
// libtorch 1.13 on the same inputs (contiguous and transposed).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ember/ember.h>

#include <limits>
#include <string>
#include <vector>

#include "parity/grad_parity.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace autograd_reduce_shape_parity {

using ET = ember::Tensor;
using TT = torch::Tensor;
using EV = std::vector<ET>;
using TV = std::vector<TT>;

ET R(std::vector<int64_t> s) { return ember::randn(s, ember::TensorOptions(ember::kFloat64)); }

struct Case {
  const char* name;
  std::function<ET(const EV&)> e;
  std::function<TT(const TV&)> t;
};

void run(const std::vector<Case>& cases, const std::vector<ET>& inputs) {
  for (const Case& c : cases) parity::check_grad_parity(c.name, c.e, c.t, inputs);
}

TEST(GradParity, Reductions) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Case> cases = {
      {"amax", [](const EV& v) { return v[0].amax({1}); }, [](const TV& v) { return v[0].amax({1}); }},
      {"max dim", [](const EV& v) { return std::get<0>(v[0].max(0, true)); },
       [](const TV& v) { return std::get<0>(v[0].max(0, true)); }},
      {"min all", [](const EV& v) { return v[0].min(); }, [](const TV& v) { return v[0].min(); }},
      {"var", [](const EV& v) { return v[0].var({1}); }, [](const TV& v) { return v[0].var({1}); }},
      {"std c0", [](const EV& v) { return v[0].std({0}, 0); },
       [](const TV& v) { return v[0].std(torch::IntArrayRef{0}, /*correction=*/0); }},
      {"norm", [](const EV& v) { return v[0].norm(2, {1}); },
       [](const TV& v) { return v[0].norm(2, torch::IntArrayRef{1}); }},
      {"norm 3", [](const EV& v) { return v[0].norm(3); }, [](const TV& v) { return v[0].norm(3); }},
      {"norm inf", [inf](const EV& v) { return v[0].norm(inf, {0}); },
       [inf](const TV& v) { return v[0].norm(inf, torch::IntArrayRef{0}); }},
      {"logsumexp", [](const EV& v) { return v[0].logsumexp({1}); }, [](const TV& v) { return v[0].logsumexp({1}); }},
      {"prod", [](const EV& v) { return v[0].prod(1); }, [](const TV& v) { return v[0].prod(1); }},
      {"cumsum", [](const EV& v) { return v[0].cumsum(0); }, [](const TV& v) { return v[0].cumsum(0); }},
      {"cumprod", [](const EV& v) { return v[0].cumprod(1); }, [](const TV& v) { return v[0].cumprod(1); }},
      {"softmax", [](const EV& v) { return v[0].softmax(1); }, [](const TV& v) { return v[0].softmax(1); }},
      {"log_softmax", [](const EV& v) { return v[0].log_softmax(0); }, [](const TV& v) { return v[0].log_softmax(0); }},
  };
  run(cases, {R({4, 5})});
  run(cases, {R({5, 4}).t()});
}

TEST(GradParity, MatrixProducts) {
  parity::check_grad_parity("mm", [](const EV& v) { return v[0].mm(v[1]); }, [](const TV& v) { return v[0].mm(v[1]); },
                            {R({3, 4}), R({5, 4}).t()});
  parity::check_grad_parity("matmul broadcast batch", [](const EV& v) { return v[0].matmul(v[1]); },
                            [](const TV& v) { return v[0].matmul(v[1]); }, {R({2, 1, 3, 4}), R({3, 4, 2})});
  parity::check_grad_parity("matmul vec", [](const EV& v) { return v[0].matmul(v[1]); },
                            [](const TV& v) { return v[0].matmul(v[1]); }, {R({4}), R({2, 4, 3})});
  parity::check_grad_parity("addmm", [](const EV& v) { return ember::addmm(v[0], v[1], v[2], 0.5, 2.0); },
                            [](const TV& v) { return torch::addmm(v[0], v[1], v[2], 0.5, 2.0); },
                            {R({3}), R({2, 4}), R({4, 3})});
  parity::check_grad_parity("baddbmm", [](const EV& v) { return ember::baddbmm(v[0], v[1], v[2]); },
                            [](const TV& v) { return torch::baddbmm(v[0], v[1], v[2]); },
                            {R({2, 3, 3}), R({2, 3, 4}), R({2, 4, 3})});
  parity::check_grad_parity("linear 3-D", [](const EV& v) { return ember::linear(v[0], v[1], v[2]); },
                            [](const TV& v) { return torch::linear(v[0], v[1], v[2]); },
                            {R({2, 3, 4}), R({5, 4}), R({5})});
}

TEST(GradParity, Shaping) {
  const std::vector<Case> cases = {
      {"cat", [](const EV& v) { return ember::cat({v[0], v[0] * 2}, 1); },
       [](const TV& v) { return torch::cat({v[0], v[0] * 2}, 1); }},
      {"stack", [](const EV& v) { return ember::stack({v[0], v[0].exp()}, 0); },
       [](const TV& v) { return torch::stack({v[0], v[0].exp()}, 0); }},
      {"flip", [](const EV& v) { return v[0].flip({1}); }, [](const TV& v) { return v[0].flip({1}); }},
      {"roll", [](const EV& v) { return v[0].roll({2}, {1}); }, [](const TV& v) { return v[0].roll({2}, {1}); }},
      {"repeat", [](const EV& v) { return v[0].repeat({2, 3}); }, [](const TV& v) { return v[0].repeat({2, 3}); }},
      {"repeat_interleave", [](const EV& v) { return v[0].repeat_interleave(3, 0); },
       [](const TV& v) { return v[0].repeat_interleave(3, 0); }},
      {"tril", [](const EV& v) { return v[0].tril(1); }, [](const TV& v) { return v[0].tril(1); }},
      {"triu", [](const EV& v) { return v[0].triu(-1); }, [](const TV& v) { return v[0].triu(-1); }},
      {"pad constant", [](const EV& v) { return ember::pad(v[0], {1, 2}); },
       [](const TV& v) { return torch::constant_pad_nd(v[0], {1, 2}); }},
      {"pad reflect", [](const EV& v) { return ember::pad(v[0].unsqueeze(0), {2, 2, 1, 1}, "reflect"); },
       [](const TV& v) {
         return torch::nn::functional::pad(v[0].unsqueeze(0),
                                           torch::nn::functional::PadFuncOptions({2, 2, 1, 1}).mode(torch::kReflect));
       }},
      {"pad replicate", [](const EV& v) { return ember::pad(v[0].unsqueeze(0), {3, 1}, "replicate"); },
       [](const TV& v) {
         return torch::nn::functional::pad(v[0].unsqueeze(0),
                                           torch::nn::functional::PadFuncOptions({3, 1}).mode(torch::kReplicate));
       }},
      {"where", [](const EV& v) { return ember::where(v[0] > 0, v[0], v[0] * 3); },
       [](const TV& v) { return torch::where(v[0] > 0, v[0], v[0] * 3); }},
      {"clamp", [](const EV& v) { return v[0].clamp(-0.5, 0.5); }, [](const TV& v) { return v[0].clamp(-0.5, 0.5); }},
      {"softplus", [](const EV& v) { return v[0].softplus(2, 1); },
       [](const TV& v) { return torch::softplus(v[0], 2, 1); }},
  };
  run(cases, {R({4, 5})});
  run(cases, {R({5, 4}).t()});
}

}  // namespace autograd_reduce_shape_parity
