#pragma once
// Test helpers for the backward formulas: gradcheck / gradgradcheck on random float64
// inputs, with the error text of a failure shown by the test.

#include <gtest/gtest.h>

#include <ember/ember.h>

#include <functional>
#include <string>
#include <vector>

namespace ember::testing {

using ListFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Float64 inputs that require grad; integer/bool inputs are left as they are.
inline std::vector<Tensor> grad_inputs(const std::vector<Tensor>& xs) {
  std::vector<Tensor> out;
  for (const Tensor& x : xs) {
    Tensor t = x.detach();
    if (is_floating_point(t.dtype())) {
      if (t.dtype() != kFloat64) t = t.to(kFloat64);
      t.requires_grad_(true);
    }
    out.push_back(t);
  }
  return out;
}

// Runs gradcheck (and gradgradcheck when `second` is true); returns "" on success, else
// the error message, so tests can EXPECT_EQ(check_grads(...), "").
inline std::string check_grads(const ListFn& fn, const std::vector<Tensor>& xs, bool second = true,
                               autograd::GradcheckOptions opt = {}) {
  std::vector<Tensor> in = grad_inputs(xs);
  auto wrapped = [&](const autograd::variable_list& v) { return autograd::variable_list{fn(v)}; };
  try {
    autograd::gradcheck(wrapped, in, opt);
    if (second) autograd::gradgradcheck(wrapped, in, opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace ember::testing
