// Backward formulas of the reductions.

#include <algorithm>
#include <vector>

#include "ember/autograd/fn_node.h"
#include "ember/autograd/functions.h"
#include "ember/core/check.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/reduce.h"

namespace ember::autograd::fn {

namespace {

// Normalised, sorted reduced dims (all dims when `dims` is empty).
DimVector reduced_dims(IntArrayRef dims, int64_t ndim) {
  DimVector out;
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  std::vector<int64_t> v;
  for (int64_t d : dims) v.push_back(d < 0 ? d + ndim : d);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  for (int64_t d : v) out.push_back(d);
  return out;
}

// A reduced gradient (or result) with the reduced dims put back as size 1.
Tensor restore_dims(const Tensor& g, const FnNode& n) {
  if (n.b0) return g;  // keepdim
  Tensor r = g;
  for (int64_t d : n.ints) r = r.unsqueeze(d);
  return r;
}

// ints = reduced dims (sorted), b0 = keepdim, i0 = number of reduced elements.
variable_list sum_formula(FnNode& n, const variable_list& grads) {
  return {restore_dims(grads[0], n).expand(n.in(0).sizes)};
}

variable_list mean_formula(FnNode& n, const variable_list& grads) {
  return {restore_dims(grads[0], n).expand(n.in(0).sizes) / static_cast<double>(n.i0)};
}

std::shared_ptr<FnNode> reduction_node(const char* name, Formula f, const Tensor& t, IntArrayRef dims, bool keepdim) {
  auto node = make_node(name, f, {&t});
  node->ints = reduced_dims(dims, t.dim());
  node->b0 = keepdim;
  int64_t count = 1;
  for (int64_t d : node->ints) count *= t.dim() == 0 ? 1 : t.size(d);
  node->i0 = count;
  return node;
}

}  // namespace

Tensor sum(const Tensor& t, IntArrayRef dims, bool keepdim, Forward forward) {
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  if (!is_floating_point(out.dtype())) return out;
  set_history(out, reduction_node("SumBackward1", sum_formula, t, dims, keepdim));
  return out;
}

Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim, Forward forward) {
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  set_history(out, reduction_node("MeanBackward1", mean_formula, t, dims, keepdim));
  return out;
}

}  // namespace ember::autograd::fn
