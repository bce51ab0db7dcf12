// Backward formulas of the view ops and of the copies (clone, to, copy_, fill_). A view's
// gradient is the incoming gradient put back into the input's geometry; formulas that
// scatter into zeros use copy_ on a view, so they are differentiable themselves.

#include <algorithm>

#include "ember/autograd/fn_node.h"
#include "ember/autograd/functions.h"
#include "ember/core/check.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"

namespace ember::autograd::fn {

namespace {

Tensor zeros_in(const FnNode& n, const Tensor& g) {
  return zeros(n.in(0).sizes, TensorOptions(g.dtype()));
}

variable_list reshape_formula(FnNode& n, const variable_list& grads) {
  return {grads[0].reshape(n.in(0).sizes)};
}

// The broadcast dims are summed by FnNode::apply (sum_to the input's sizes).
variable_list identity_formula(FnNode&, const variable_list& grads) { return {grads[0]}; }

// ints = the permutation.
variable_list permute_formula(FnNode& n, const variable_list& grads) {
  DimVector inv(n.ints.size());
  for (size_t i = 0; i < n.ints.size(); ++i) inv[n.ints[i]] = static_cast<int64_t>(i);
  return {grads[0].permute(inv)};
}

// i0, i1 = the swapped dims.
variable_list transpose_formula(FnNode& n, const variable_list& grads) {
  return {grads[0].transpose(n.i0, n.i1)};
}

// i0 = dim, i1 = start, i2 = end, ints[0] = step.
variable_list slice_formula(FnNode& n, const variable_list& grads) {
  Tensor r = zeros_in(n, grads[0]);
  r.slice(n.i0, n.i1, n.i2, n.ints[0]).copy_(grads[0]);
  return {r};
}

// i0 = dim, i1 = index.
variable_list select_formula(FnNode& n, const variable_list& grads) {
  Tensor r = zeros_in(n, grads[0]);
  r.select(n.i0, n.i1).copy_(grads[0]);
  return {r};
}

// i0 = offset, i1 = dim1, i2 = dim2.
variable_list diagonal_formula(FnNode& n, const variable_list& grads) {
  Tensor r = zeros_in(n, grads[0]);
  r.diagonal(n.i0, n.i1, n.i2).copy_(grads[0]);
  return {r};
}

// lists = {input sizes, input strides, output sizes, output strides}; i0 = input
// offset, i1 = output offset (storage offsets). The gradient is added up per storage
// element (outputs may overlap) and read back through the input's geometry; where the
// input itself overlaps, each element's share is divided by its multiplicity.
int64_t last_index(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  int64_t last = offset;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return offset - 1;
    last += (sizes[i] - 1) * strides[i];
  }
  return last;
}

bool overlaps_itself(IntArrayRef sizes, IntArrayRef strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] > 1) dims.emplace_back(strides[i], sizes[i]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t span = 1;  // elements covered by the dims so far, if they do not overlap
  for (auto [stride, size] : dims) {
    if (stride < span) return true;
    span = stride * (size - 1) + span;
  }
  return false;
}

variable_list strided_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const DimVector &in_sizes = n.lists[0], &in_strides = n.lists[1];
  const DimVector &out_sizes = n.lists[2], &out_strides = n.lists[3];
  const int64_t lo = std::min(n.i0, n.i1);
  const int64_t hi = std::max(last_index(in_sizes, in_strides, n.i0), last_index(out_sizes, out_strides, n.i1));
  const int64_t extent = std::max<int64_t>(hi - lo + 1, 1);
  const Tensor pos = arange(extent, TensorOptions(kInt64));
  const Tensor out_idx = pos.as_strided(out_sizes, out_strides, n.i1 - lo).reshape({-1});
  const Tensor in_idx = pos.as_strided(in_sizes, in_strides, n.i0 - lo).reshape({-1});
  Tensor flat = zeros({extent}, TensorOptions(g.dtype())).index_add(0, out_idx, g.reshape({-1}));
  Tensor r = flat.index_select(0, in_idx);
  if (overlaps_itself(in_sizes, in_strides)) {
    Tensor count = zeros({extent}, TensorOptions(g.dtype()))
                       .index_add(0, in_idx, ones({in_idx.numel()}, TensorOptions(g.dtype())));
    r = r / count.index_select(0, in_idx);
  }
  return {r.reshape(in_sizes)};
}

// ints = the outputs' sizes along dim i0.
variable_list split_formula(FnNode& n, const variable_list& grads) {
  std::vector<Tensor> parts;
  DType dt = n.in(0).dtype;
  for (const Tensor& g : grads) {
    if (g.defined()) dt = g.dtype();
  }
  for (size_t k = 0; k < n.ints.size(); ++k) {
    if (k < grads.size() && grads[k].defined()) {
      parts.push_back(grads[k]);
    } else {
      DimVector shape(n.in(0).sizes);
      shape[n.i0] = n.ints[k];
      parts.push_back(zeros(shape, TensorOptions(dt)));
    }
  }
  return {cat(parts, n.i0)};
}

// i0 = dim.
variable_list unbind_formula(FnNode& n, const variable_list& grads) {
  DimVector shape(n.in(0).sizes);
  const int64_t count = shape[n.i0];
  shape.erase(n.i0);
  DType dt = n.in(0).dtype;
  for (const Tensor& g : grads) {
    if (g.defined()) dt = g.dtype();
  }
  std::vector<Tensor> parts;
  for (int64_t k = 0; k < count; ++k) {
    const size_t i = static_cast<size_t>(k);
    parts.push_back(i < grads.size() && grads[i].defined() ? grads[i] : zeros(shape, TensorOptions(dt)));
  }
  return {stack(parts, n.i0)};
}

// copy_: self's old value is overwritten (zero gradient), src gets the gradient.
variable_list copy_formula(FnNode& n, const variable_list& grads) {
  Tensor self_grad = n.should_compute_output(0) ? zeros_like(grads[0]) : Tensor();
  return {self_grad, grads[0]};
}

variable_list fill_formula(FnNode&, const variable_list& grads) { return {zeros_like(grads[0])}; }

void record(const char* name, Formula f, const Tensor& self, const Tensor& out,
            const std::function<void(FnNode&)>& attrs = nullptr) {
  auto node = make_node(name, f, {&self});
  if (attrs) attrs(*node);
  set_history(out, node);
}

}  // namespace

void view_reshape(const char* name, const Tensor& self, const Tensor& out) {
  record(name, reshape_formula, self, out);
}

void view_expand(const Tensor& self, const Tensor& out) { record("ExpandBackward0", identity_formula, self, out); }

void view_alias(const Tensor& self, const Tensor& out) { record("AliasBackward0", identity_formula, self, out); }

void view_permute(const Tensor& self, const Tensor& out, IntArrayRef dims) {
  record("PermuteBackward0", permute_formula, self, out, [&](FnNode& n) {
    for (int64_t d : dims) n.ints.push_back(d < 0 ? d + self.dim() : d);
  });
}

void view_transpose(const char* name, const Tensor& self, const Tensor& out, int64_t dim0, int64_t dim1) {
  record(name, transpose_formula, self, out, [&](FnNode& n) {
    n.i0 = dim0;
    n.i1 = dim1;
  });
}

void view_slice(const Tensor& self, const Tensor& out, int64_t dim, int64_t start, int64_t end, int64_t step) {
  record("SliceBackward0", slice_formula, self, out, [&](FnNode& n) {
    n.i0 = dim;
    n.i1 = start;
    n.i2 = end;
    n.ints.push_back(step);
  });
}

void view_select(const Tensor& self, const Tensor& out, int64_t dim, int64_t index) {
  record("SelectBackward0", select_formula, self, out, [&](FnNode& n) {
    n.i0 = dim;
    n.i1 = index;
  });
}

void view_diagonal(const Tensor& self, const Tensor& out, int64_t offset, int64_t dim1, int64_t dim2) {
  record("DiagonalBackward0", diagonal_formula, self, out, [&](FnNode& n) {
    n.i0 = offset;
    n.i1 = dim1;
    n.i2 = dim2;
  });
}

void view_strided(const char* name, const Tensor& self, const Tensor& out) {
  record(name, strided_formula, self, out, [&](FnNode& n) {
    n.lists = {DimVector(self.sizes()), DimVector(self.strides()), DimVector(out.sizes()), DimVector(out.strides())};
    n.i0 = self.storage_offset();
    n.i1 = out.storage_offset();
  });
}

void view_split(const Tensor& self, const std::vector<Tensor>& outs, int64_t dim) {
  auto node = make_node("SplitBackward0", split_formula, {&self});
  node->i0 = dim;
  for (const Tensor& o : outs) {
    node->ints.push_back(o.size(dim));
    set_history(o, node);
  }
}

void view_unbind(const Tensor& self, const std::vector<Tensor>& outs, int64_t dim) {
  auto node = make_node("UnbindBackward0", unbind_formula, {&self});
  node->i0 = dim;
  for (const Tensor& o : outs) set_history(o, node);
}

Tensor clone(const Tensor& self, Forward forward) {
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  record("CloneBackward0", identity_formula, self, out);
  return out;
}

Tensor to_dtype(const Tensor& self, Forward forward) {
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  if (!is_floating_point(out.dtype())) return out;  // integer results are not differentiable
  record("ToCopyBackward0", identity_formula, self, out);
  return out;
}

void copy_(const Tensor& self, const Tensor& src, ForwardInplace forward) {
  check_inplace(self, "copy_");
  if (!is_floating_point(self.dtype())) {
    AutoGradMode off(false);
    forward();
    return;
  }
  auto node = make_node("CopyBackwards", copy_formula, {&self, &src});
  {
    AutoGradMode off(false);
    forward();
  }
  rebase_history(self, node);
}

void fill_(const Tensor& self, ForwardInplace forward) {
  check_inplace(self, "fill_");
  auto node = make_node("FillBackward0", fill_formula, {&self});
  {
    AutoGradMode off(false);
    forward();
  }
  rebase_history(self, node);
}

}  // namespace ember::autograd::fn
