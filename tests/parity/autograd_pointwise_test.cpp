// Gradients of element-wise ops, sum/mean, views and copies against libtorch 1.13: same
// inputs (contiguous, transposed and broadcast), same random output gradient.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ember/ember.h>

#include <string>
#include <vector>

#include "parity/grad_parity.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace autograd_pointwise_parity {

using ET = ember::Tensor;
using TT = torch::Tensor;
using EV = std::vector<ET>;
using TV = std::vector<TT>;

ET U(std::vector<int64_t> sizes, double lo, double hi) {
  return ember::rand(sizes, ember::TensorOptions(ember::kFloat64)) * (hi - lo) + lo;
}

struct Unary {
  const char* name;
  ET (*e)(const ET&);
  TT (*t)(const TT&);
  double lo, hi;
};

TEST(GradParity, UnaryOps) {
  const std::vector<Unary> ops = {
      {"exp", [](const ET& x) { return x.exp(); }, [](const TT& x) { return x.exp(); }, -2, 2},
      {"log", [](const ET& x) { return x.log(); }, [](const TT& x) { return x.log(); }, 0.1, 3},
      {"log1p", [](const ET& x) { return x.log1p(); }, [](const TT& x) { return x.log1p(); }, -0.5, 3},
      {"sqrt", [](const ET& x) { return x.sqrt(); }, [](const TT& x) { return x.sqrt(); }, 0.1, 3},
      {"rsqrt", [](const ET& x) { return x.rsqrt(); }, [](const TT& x) { return x.rsqrt(); }, 0.1, 3},
      {"sin", [](const ET& x) { return x.sin(); }, [](const TT& x) { return x.sin(); }, -3, 3},
      {"cos", [](const ET& x) { return x.cos(); }, [](const TT& x) { return x.cos(); }, -3, 3},
      {"tan", [](const ET& x) { return x.tan(); }, [](const TT& x) { return x.tan(); }, -1, 1},
      {"asin", [](const ET& x) { return x.asin(); }, [](const TT& x) { return x.asin(); }, -0.9, 0.9},
      {"acos", [](const ET& x) { return x.acos(); }, [](const TT& x) { return x.acos(); }, -0.9, 0.9},
      {"atan", [](const ET& x) { return x.atan(); }, [](const TT& x) { return x.atan(); }, -3, 3},
      {"sinh", [](const ET& x) { return x.sinh(); }, [](const TT& x) { return x.sinh(); }, -2, 2},
      {"cosh", [](const ET& x) { return x.cosh(); }, [](const TT& x) { return x.cosh(); }, -2, 2},
      {"tanh", [](const ET& x) { return x.tanh(); }, [](const TT& x) { return x.tanh(); }, -3, 3},
      {"sigmoid", [](const ET& x) { return x.sigmoid(); }, [](const TT& x) { return x.sigmoid(); }, -4, 4},
      {"relu", [](const ET& x) { return x.relu(); }, [](const TT& x) { return x.relu(); }, -2, 2},
      {"gelu", [](const ET& x) { return x.gelu(); }, [](const TT& x) { return torch::gelu(x); }, -3, 3},
      {"gelu_tanh", [](const ET& x) { return x.gelu("tanh"); }, [](const TT& x) { return torch::gelu(x, "tanh"); },
       -3, 3},
      {"silu", [](const ET& x) { return x.silu(); }, [](const TT& x) { return torch::silu(x); }, -3, 3},
      {"erf", [](const ET& x) { return x.erf(); }, [](const TT& x) { return x.erf(); }, -2, 2},
      {"erfinv", [](const ET& x) { return x.erfinv(); }, [](const TT& x) { return x.erfinv(); }, -0.9, 0.9},
      {"abs", [](const ET& x) { return x.abs(); }, [](const TT& x) { return x.abs(); }, -2, 2},
      {"neg", [](const ET& x) { return -x; }, [](const TT& x) { return -x; }, -2, 2},
      {"reciprocal", [](const ET& x) { return x.reciprocal(); }, [](const TT& x) { return x.reciprocal(); }, 0.2, 2},
      {"expm1", [](const ET& x) { return x.expm1(); }, [](const TT& x) { return x.expm1(); }, -2, 2},
      {"log2", [](const ET& x) { return x.log2(); }, [](const TT& x) { return x.log2(); }, 0.1, 3},
      {"frac", [](const ET& x) { return x.frac(); }, [](const TT& x) { return x.frac(); }, -3, 3},
      {"floor", [](const ET& x) { return x.floor(); }, [](const TT& x) { return x.floor(); }, -3, 3},
      {"softplus", [](const ET& x) { return x.softplus(2, 1); }, [](const TT& x) { return torch::softplus(x, 2, 1); },
       -3, 3},
      {"leaky_relu", [](const ET& x) { return ember::leaky_relu(x, 0.2); },
       [](const TT& x) { return torch::leaky_relu(x, 0.2); }, -2, 2},
      {"logit", [](const ET& x) { return ember::logit(x); }, [](const TT& x) { return torch::logit(x); }, 0.05, 0.95},
      {"logit_eps", [](const ET& x) { return ember::logit(x, 0.25); }, [](const TT& x) { return torch::logit(x, 0.25); },
       0.05, 0.95},
      {"pow3", [](const ET& x) { return x.pow(3); }, [](const TT& x) { return x.pow(3); }, -2, 2},
      {"pow2.5", [](const ET& x) { return x.pow(2.5); }, [](const TT& x) { return x.pow(2.5); }, 0.1, 2},
  };
  for (const Unary& op : ops) {
    for (bool transposed : {false, true}) {
      ET x = U({5, 4}, op.lo, op.hi);
      if (transposed) x = x.t();
      parity::check_grad_parity(std::string(op.name) + (transposed ? " (transposed)" : ""),
                                [&](const EV& v) { return op.e(v[0]); }, [&](const TV& v) { return op.t(v[0]); },
                                {x});
    }
  }
}

TEST(GradParity, BinaryOpsBroadcast) {
  struct Binary {
    const char* name;
    ET (*e)(const ET&, const ET&);
    TT (*t)(const TT&, const TT&);
    double lo, hi;
  };
  const std::vector<Binary> ops = {
      {"add", [](const ET& a, const ET& b) { return a.add(b, 2); }, [](const TT& a, const TT& b) { return a.add(b, 2); },
       -2, 2},
      {"sub", [](const ET& a, const ET& b) { return a - b; }, [](const TT& a, const TT& b) { return a - b; }, -2, 2},
      {"mul", [](const ET& a, const ET& b) { return a * b; }, [](const TT& a, const TT& b) { return a * b; }, -2, 2},
      {"div", [](const ET& a, const ET& b) { return a / b; }, [](const TT& a, const TT& b) { return a / b; }, 0.5, 2},
      {"pow", [](const ET& a, const ET& b) { return a.pow(b); }, [](const TT& a, const TT& b) { return a.pow(b); }, 0.5,
       2},
      {"atan2", [](const ET& a, const ET& b) { return ember::atan2(a, b); },
       [](const TT& a, const TT& b) { return torch::atan2(a, b); }, 0.5, 2},
      {"maximum", [](const ET& a, const ET& b) { return ember::maximum(a, b); },
       [](const TT& a, const TT& b) { return torch::maximum(a, b); }, -2, 2},
      {"minimum", [](const ET& a, const ET& b) { return ember::minimum(a, b); },
       [](const TT& a, const TT& b) { return torch::minimum(a, b); }, -2, 2},
      {"remainder", [](const ET& a, const ET& b) { return a.remainder(b); },
       [](const TT& a, const TT& b) { return a.remainder(b); }, 0.5, 2},
  };
  for (const auto& op : ops) {
    ET a = U({4, 5}, op.lo, op.hi), b = U({5}, op.lo, op.hi), c = U({4, 1}, op.lo, op.hi);
    auto e = [&](const EV& v) { return op.e(v[0], v[1]); };
    auto t = [&](const TV& v) { return op.t(v[0], v[1]); };
    parity::check_grad_parity(std::string(op.name) + " [4,5] x [5]", e, t, {a, b});
    parity::check_grad_parity(std::string(op.name) + " [4,1] x [5,4]^T", e, t, {c, U({5, 4}, op.lo, op.hi).t()});
  }
  // Ties in maximum/minimum split the gradient in half, as torch does.
  ET a = ember::tensor({1.0, 2.0, 3.0}, ember::kFloat64), b = ember::tensor({1.0, 5.0, 3.0}, ember::kFloat64);
  parity::check_grad_parity("maximum ties", [](const EV& v) { return ember::maximum(v[0], v[1]); },
                            [](const TV& v) { return torch::maximum(v[0], v[1]); }, {a, b});
}

TEST(GradParity, ReductionsAndViews) {
  ET x = U({3, 4, 5}, -2, 2);
  parity::check_grad_parity("sum dims", [](const EV& v) { return v[0].sum({0, 2}); },
                            [](const TV& v) { return v[0].sum(torch::IntArrayRef{0, 2}); }, {x});
  parity::check_grad_parity("mean keepdim", [](const EV& v) { return v[0].mean({-1}, true); },
                            [](const TV& v) { return v[0].mean({-1}, true); }, {x.transpose(0, 2)});
  parity::check_grad_parity(
      "view chain", [](const EV& v) { return v[0].permute({2, 0, 1}).reshape({5, 12}).slice(1, 1, 11, 3).t() * 2; },
      [](const TV& v) { return v[0].permute({2, 0, 1}).reshape({5, 12}).slice(1, 1, 11, 3).t() * 2; }, {x});
  parity::check_grad_parity(
      "select/diagonal/unfold",
      [](const EV& v) { return v[0].select(1, 2).diagonal(0, 0, 1).unsqueeze(1).expand({3, 4}) * v[0].select(2, 0); },
      [](const TV& v) { return v[0].select(1, 2).diagonal(0, 0, 1).unsqueeze(1).expand({3, 4}) * v[0].select(2, 0); },
      {x});
  parity::check_grad_parity(
      "split/unbind", [](const EV& v) { return v[0].split(2, 2)[1] * v[0].unbind(2)[4].unsqueeze(-1); },
      [](const TV& v) { return v[0].split(2, 2)[1] * v[0].unbind(2)[4].unsqueeze(-1); }, {x});
  parity::check_grad_parity(
      "in-place through a view",
      [](const EV& v) {
        ET y = v[0] * 1;
        y.select(0, 1).mul_(v[0].select(0, 0)).exp_();
        return y;
      },
      [](const TV& v) {
        TT y = v[0] * 1;
        y.select(0, 1).mul_(v[0].select(0, 0)).exp_();
        return y;
      },
      {x});
}

}  // namespace autograd_pointwise_parity
