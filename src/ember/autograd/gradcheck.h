#pragma once
// gradcheck / gradgradcheck: compare the gradients autograd computes with finite
// differences, in float64. On a mismatch they throw ember::Error naming the output and
// input, the worst Jacobian element and both values (or return false with raise=false).

#include <functional>

#include "ember/autograd/node.h"

namespace ember::autograd {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  bool raise = true;
};

using GradcheckFn = std::function<variable_list(const variable_list&)>;

// fn maps the inputs to outputs; inputs that require grad must be float64.
bool gradcheck(const GradcheckFn& fn, const variable_list& inputs, const GradcheckOptions& options = {});
// Checks the gradients of the gradients (random, fixed grad_outputs).
bool gradgradcheck(const GradcheckFn& fn, const variable_list& inputs, const GradcheckOptions& options = {});

}  // namespace ember::autograd
