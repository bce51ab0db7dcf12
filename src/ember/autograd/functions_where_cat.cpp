// Backward of where and cat.

#include "ember/autograd/fn_node.h"
#include "ember/autograd/functions.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/pointwise.h"

namespace ember::autograd::fn {

namespace {

// Saved: 0 = cond. The gradient goes to a where cond holds, to b elsewhere.
variable_list where_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const Tensor cond = n.saved(0);
  Tensor da, db;
  if (n.should_compute_output(0)) da = ember::where(cond, g, zeros_like(g));
  if (n.should_compute_output(1)) db = ember::where(cond, zeros_like(g), g);
  return {da, db};
}

// i0 = dim; ints = each input's size along dim (-1 for the legacy empty 1-D inputs cat
// skips).
variable_list cat_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  variable_list out;
  int64_t offset = 0;
  for (size_t i = 0; i < n.ints.size(); ++i) {
    const int64_t size = n.ints[i];
    if (size < 0 || !n.should_compute_output(i)) {
      out.emplace_back();
    } else {
      out.push_back(g.narrow(n.i0, offset, size));
    }
    if (size > 0) offset += size;
  }
  return out;
}

// Saved: 0 = mask.
variable_list masked_formula(FnNode& n, const variable_list& grads) {
  return {ember::where(n.saved(0), grads[0], zeros_like(grads[0]))};
}

// lists = per-dim index maps (empty: identity). Every output slice adds its gradient
// to the input slice it came from.
variable_list gather_maps_formula(FnNode& n, const variable_list& grads) {
  Tensor g = grads[0];
  const DimVector& in_sizes = n.in(0).sizes;
  for (size_t d = 0; d < n.lists.size(); ++d) {
    if (n.lists[d].empty()) continue;
    const DimVector& map = n.lists[d];
    Tensor idx = tensor(std::vector<int64_t>(map.begin(), map.end()), TensorOptions(kInt64));
    DimVector shape(g.sizes());
    shape[d] = in_sizes[d];
    g = zeros(shape, TensorOptions(g.dtype())).index_add(static_cast<int64_t>(d), idx, g);
  }
  return {g};
}

// i0 = diagonal, b0 = lower.
variable_list tri_formula(FnNode& n, const variable_list& grads) {
  return {n.b0 ? grads[0].tril(n.i0) : grads[0].triu(n.i0)};
}

// ints = the pads; the gradient is the output gradient padded by the negated amounts
// (cropping what was added, zero-filling what was cropped).
variable_list constant_pad_formula(FnNode& n, const variable_list& grads) {
  DimVector neg;
  for (int64_t p : n.ints) neg.push_back(-p);
  return {ember::pad(grads[0], neg, "constant", 0.0)};
}

}  // namespace

void gather_maps(const char* name, const Tensor& in, const Tensor& out, std::vector<DimVector> idx) {
  if (!is_floating_point(out.dtype())) return;
  auto node = make_node(name, gather_maps_formula, {&in});
  node->lists = std::move(idx);
  set_history(out, node);
}

void tri(bool lower, int64_t diagonal, const Tensor& in, const Tensor& out) {
  if (!is_floating_point(out.dtype())) return;
  auto node = make_node(lower ? "TrilBackward0" : "TriuBackward0", tri_formula, {&in});
  node->i0 = diagonal;
  node->b0 = lower;
  set_history(out, node);
}

void constant_pad(const Tensor& in, const Tensor& out, IntArrayRef pad) {
  if (!is_floating_point(out.dtype())) return;
  auto node = make_node("ConstantPadNdBackward0", constant_pad_formula, {&in});
  node->ints = DimVector(pad);
  set_history(out, node);
}

Tensor masked_grad(const char* name, const Tensor& self, const Tensor& mask, Forward forward) {
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  if (!is_floating_point(out.dtype())) return out;
  auto node = make_node(name, masked_formula, {&self});
  node->save(mask);
  set_history(out, node);
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Forward forward) {
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  if (!is_floating_point(out.dtype())) return out;
  auto node = make_node("WhereBackward0", where_formula, {&a, &b});
  node->save(cond);
  set_history(out, node);
  return out;
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim, Forward forward) {
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  if (!is_floating_point(out.dtype())) return out;
  auto node = make_node("CatBackward0", cat_formula, tensors);
  node->i0 = dim < 0 ? dim + out.dim() : dim;
  for (const Tensor& t : tensors) node->ints.push_back(t.dim() == 1 && t.numel() == 0 ? -1 : t.size(node->i0));
  set_history(out, node);
  return out;
}

}  // namespace ember::autograd::fn
