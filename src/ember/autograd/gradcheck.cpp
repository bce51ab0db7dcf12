#include "ember/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "ember/autograd/autograd.h"
#include "ember/core/check.h"
#include "ember/ops/creation.h"

namespace ember::autograd {

namespace {

variable_list float_outputs(const GradcheckFn& fn, const variable_list& inputs) {
  variable_list outs = fn(inputs);
  variable_list r;
  for (const Tensor& o : outs)
    if (o.defined() && is_floating_point(o.dtype())) r.push_back(o);
  return r;
}

// Flat float64 copies of the outputs, for finite differences. Runs in grad mode: fn may
// itself differentiate (gradgradcheck's fn calls grad()).
std::vector<std::vector<double>> eval(const GradcheckFn& fn, const variable_list& inputs,
                                      const variable_list& reference) {
  std::vector<std::vector<double>> r;
  variable_list outs = float_outputs(fn, inputs);
  EMBER_CHECK(outs.size() == reference.size(), "[gradcheck] fn returned ", outs.size(),
              " floating-point outputs for perturbed inputs but ", reference.size(), " for the original ones");
  for (size_t i = 0; i < outs.size(); ++i) {
    EMBER_CHECK(outs[i].numel() == reference[i].numel(), "[gradcheck] output ", i,
                " changed its number of elements when an input was perturbed");
    r.push_back(outs[i].detach().to_vector<double>());
  }
  return r;
}

// Element c (in row-major order) of t, as a 0-d view; works for any strides.
Tensor element(const Tensor& t, int64_t c) {
  Tensor e = t;
  int64_t stride = t.numel();
  for (int64_t d = 0; d < t.dim(); ++d) {
    stride /= t.size(d);
    e = e.select(0, c / stride);
    c %= stride;
  }
  return e;
}

}  // namespace

bool gradcheck(const GradcheckFn& fn, const variable_list& inputs, const GradcheckOptions& opt) {
  std::vector<size_t> diff_inputs;
  for (size_t j = 0; j < inputs.size(); ++j) {
    const Tensor& t = inputs[j];
    if (!t.defined() || !t.requires_grad()) continue;
    EMBER_CHECK(t.dtype() == kFloat64, "[gradcheck] input ", j, " requires grad but has dtype ", t.dtype(),
                "; gradcheck needs float64 inputs for accurate finite differences (use .to(ember::kFloat64))");
    diff_inputs.push_back(j);
  }
  EMBER_CHECK(!diff_inputs.empty(), "[gradcheck] no input requires grad");
  // Analytical Jacobian rows: one backward per output element.
  variable_list outs = float_outputs(fn, inputs);
  variable_list diff;
  for (size_t j : diff_inputs) diff.push_back(inputs[j]);
  for (size_t oi = 0; oi < outs.size(); ++oi) {
    // A fresh graph per output: the finite differences of the previous output changed
    // the inputs' versions (they are perturbed in place and restored).
    if (oi > 0) outs = float_outputs(fn, inputs);
    const Tensor& out = outs[oi];
    const int64_t n_out = out.numel();
    // analytic[j][r][c]: d out[r] / d input_j[c]
    std::vector<std::vector<std::vector<double>>> analytic(diff.size());
    for (size_t j = 0; j < diff.size(); ++j)
      analytic[j].assign(static_cast<size_t>(n_out), std::vector<double>(static_cast<size_t>(diff[j].numel()), 0.0));
    for (int64_t r = 0; r < n_out; ++r) {
      Tensor go = zeros(out.sizes(), TensorOptions(out.dtype()));
      go.view({-1}).select(0, r).fill_(1.0);
      variable_list g;
      if (out.requires_grad()) g = grad({out}, diff, {go}, /*retain_graph=*/true, false, /*allow_unused=*/true);
      for (size_t j = 0; j < diff.size(); ++j) {
        if (j >= g.size() || !g[j].defined()) continue;
        const std::vector<double> v = g[j].to_vector<double>();
        for (size_t c = 0; c < v.size(); ++c) analytic[j][static_cast<size_t>(r)][c] = v[c];
      }
    }
    // Numerical Jacobian columns: central differences, one input element at a time.
    for (size_t j = 0; j < diff.size(); ++j) {
      Tensor x = diff[j];
      Tensor data = x.detach();
      const int64_t n_in = x.numel();
      double worst = -1;
      int64_t wr = 0, wc = 0;
      double wa = 0, wn = 0;
      for (int64_t c = 0; c < n_in; ++c) {
        double orig;
        {
          NoGradGuard ng;
          orig = element(data, c).item<double>();
          element(data, c).fill_(orig + opt.eps);
        }
        auto plus = eval(fn, inputs, outs);
        {
          NoGradGuard ng;
          element(data, c).fill_(orig - opt.eps);
        }
        auto minus = eval(fn, inputs, outs);
        {
          NoGradGuard ng;
          element(data, c).fill_(orig);
        }
        for (int64_t r = 0; r < n_out; ++r) {
          const double num = (plus[oi][static_cast<size_t>(r)] - minus[oi][static_cast<size_t>(r)]) / (2 * opt.eps);
          const double ana = analytic[j][static_cast<size_t>(r)][static_cast<size_t>(c)];
          const double err = std::fabs(num - ana) - (opt.atol + opt.rtol * std::fabs(num));
          if (err > worst || std::isnan(ana) != std::isnan(num)) {
            worst = std::isnan(ana) != std::isnan(num) ? INFINITY : err;
            wr = r;
            wc = c;
            wa = ana;
            wn = num;
          }
        }
      }
      if (worst > 0) {
        if (!opt.raise) return false;
        std::ostringstream os;
        os << "[gradcheck] Jacobian mismatch for output " << oi << " with respect to input " << diff_inputs[j]
           << ": worst element is d output[" << wr << "] / d input[" << wc << "]: numerical " << wn
           << ", analytical " << wa << " (atol " << opt.atol << ", rtol " << opt.rtol << ")";
        throw Error(os.str());
      }
    }
  }
  return true;
}

bool gradgradcheck(const GradcheckFn& fn, const variable_list& inputs, const GradcheckOptions& opt) {
  variable_list outs = float_outputs(fn, inputs);
  variable_list grad_outputs;
  Generator gen(0);
  for (const Tensor& o : outs) grad_outputs.push_back(randn(o.sizes(), gen, TensorOptions(kFloat64)).requires_grad_());
  const size_t n_in = inputs.size();
  GradcheckFn second = [&fn, n_in](const variable_list& all) {
    variable_list in(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n_in));
    variable_list gos(all.begin() + static_cast<std::ptrdiff_t>(n_in), all.end());
    variable_list o = float_outputs(fn, in);
    variable_list diff;
    for (const Tensor& t : in)
      if (t.defined() && t.requires_grad()) diff.push_back(t);
    variable_list used_o, used_g;
    for (size_t i = 0; i < o.size(); ++i) {
      if (!o[i].requires_grad()) continue;
      used_o.push_back(o[i]);
      used_g.push_back(gos[i]);
    }
    if (used_o.empty()) return variable_list{};
    return grad(used_o, diff, used_g, true, /*create_graph=*/true, /*allow_unused=*/true);
  };
  variable_list all = inputs;
  all.insert(all.end(), grad_outputs.begin(), grad_outputs.end());
  return gradcheck(second, all, opt);
}

}  // namespace ember::autograd
