// Backward of the matrix products. For out = beta * input + alpha * (a @ b):
//   d a = alpha * g @ b^T,  d b = alpha * a^T @ g,  d input = beta * g,
// each summed back over broadcast batch dims by FnNode::apply.

#include <cstring>

#include "ember/autograd/fn_node.h"
#include "ember/autograd/functions.h"
#include "ember/ops/linalg.h"

namespace ember::autograd::fn {

namespace {

// Saved: 0 = a, 1 = b. s0 = beta, s1 = alpha, b0/b1 = a/b are column-major.
variable_list product_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const bool ga = n.should_compute_output(0), gb = n.should_compute_output(1), gi = n.should_compute_output(2);
  const double alpha = n.s1.to_double();
  Tensor da, db, di;
  // A gradient is computed in its input's layout: for a column-major (transposed) input
  // such as linear's weight.t(), (g^T a)^T instead of a^T g, so that the gradient that
  // reaches the parameter is contiguous (no copy when it is accumulated).
  if (ga) {
    const Tensor b = n.saved(1);
    da = n.b0 ? b.matmul(g.transpose(-1, -2)).transpose(-1, -2) : g.matmul(b.transpose(-1, -2));
    if (alpha != 1.0) da = da * alpha;
  }
  if (gb) {
    const Tensor a = n.saved(0);
    db = n.b1 ? g.transpose(-1, -2).matmul(a).transpose(-1, -2) : a.transpose(-1, -2).matmul(g);
    if (alpha != 1.0) db = db * alpha;
  }
  if (gi) di = n.s0.to_double() == 1.0 ? g : g * n.s0;
  return {da, db, di};
}

bool column_major(const Tensor& t) {
  return t.dim() == 2 && t.size(0) > 1 && t.size(1) > 1 && t.stride(0) == 1 && t.stride(1) == t.size(0);
}

const char* node_name(const char* op, const Tensor& a, const Tensor& input) {
  if (!std::strcmp(op, "addmm") || (!std::strcmp(op, "linear") && input.defined())) return "AddmmBackward0";
  if (!std::strcmp(op, "baddbmm")) return "BaddbmmBackward0";
  if (!std::strcmp(op, "bmm") || a.dim() > 2) return "BmmBackward0";
  return "MmBackward0";
}

}  // namespace

Tensor matrix_product(const char* op, const Tensor& a, const Tensor& b, const Tensor& input, const Scalar& beta,
                      const Scalar& alpha, Forward forward) {
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  if (!is_floating_point(out.dtype())) return out;
  auto node = make_node(node_name(op, a, input), product_formula, {&a, &b, input.defined() ? &input : nullptr});
  node->s0 = beta;
  node->s1 = alpha;
  node->b0 = column_major(a);
  node->b1 = column_major(b);
  node->save(node->should_compute_output(1) ? a : Tensor());
  node->save(node->should_compute_output(0) ? b : Tensor());
  set_history(out, node);
  return out;
}

}  // namespace ember::autograd::fn
