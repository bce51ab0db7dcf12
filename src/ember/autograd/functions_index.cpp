// Backward formulas of the indexing family: index_select, gather, the scatter family,
// index_add/copy/fill, the masked ops, advanced indexing (index, index_put_) and the
// value-selecting sorts (sort, topk, kthvalue). PyTorch 1.13's derivatives.yaml is the
// model for each formula. Formulas are written with ember ops (mostly the ops of this
// very family), so they are differentiable again. Index tensors and masks are never
// differentiable; duplicate indices add up in every gradient that reads through them.
//
// Where a formula builds a gradient from zeros it writes into the fresh zeros in place
// (index_add_, scatter_, scatter_add_, index_put_, masked_scatter_, copy_ on a view):
// the zeros are never seen by anyone else, so no copy is needed, and the in-place op
// records its own node when the incoming gradient requires grad (double backward).

#include "ember/autograd/functions_index.h"

#include <string_view>

#include "ember/autograd/fn_node.h"
#include "ember/core/check.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/sort.h"
#include "ember/ops/view.h"

namespace ember::autograd::fn {

namespace {

Tensor zeros_of(const FnNode& n, size_t input, DType dt) {
  return zeros(n.in(input).sizes, TensorOptions(dt));
}

// A gradient `g` computed for the first g.size(d) positions of every dim of an input of
// shape `sizes` (a scatter reads only the part of src its index covers), padded with
// zeros to the whole input. A 1-element g for a 0-d input is reshaped.
Tensor fit_to(const Tensor& g, IntArrayRef sizes) {
  if (g.sizes() == sizes) return g;
  if (g.dim() != static_cast<int64_t>(sizes.size())) {
    if (g.numel() == 0) return zeros(sizes, TensorOptions(g.dtype()));
    return g.reshape(sizes);
  }
  Tensor r = zeros(sizes, TensorOptions(g.dtype()));
  Tensor part = r;
  for (int64_t d = 0; d < g.dim(); ++d) part = part.narrow(d, 0, g.size(d));
  part.copy_(g);
  return r;
}

// The part of src that a scatter with `index` reads (its leading block of index's shape).
Tensor covered_part(const Tensor& src, const Tensor& index) {
  if (src.sizes() == index.sizes() || src.dim() != index.dim()) return src;
  Tensor part = src;
  for (int64_t d = 0; d < src.dim(); ++d) part = part.narrow(d, 0, index.size(d));
  return part;
}

// ---------------------------------------------------------------------------------------
// index_select / gather

// i0 = dim; saved 0 = index.
variable_list index_select_formula(FnNode& n, const variable_list& grads) {
  Tensor r = zeros_of(n, 0, grads[0].dtype());
  r.index_add_(n.i0, n.saved(0), grads[0]);
  return {r};
}

// i0 = dim; saved 0 = index.
variable_list gather_formula(FnNode& n, const variable_list& grads) {
  Tensor r = zeros_of(n, 0, grads[0].dtype());
  r.scatter_add_(n.i0, n.saved(0), grads[0]);
  return {r};
}

// ---------------------------------------------------------------------------------------
// scatter family

enum class ScatterReduceOp : int64_t { Sum, Prod, Mean, Amax, Amin };

ScatterReduceOp reduce_of(std::string_view r) {
  if (r == "sum") return ScatterReduceOp::Sum;
  if (r == "prod") return ScatterReduceOp::Prod;
  if (r == "mean") return ScatterReduceOp::Mean;
  if (r == "amax") return ScatterReduceOp::Amax;
  if (r == "amin") return ScatterReduceOp::Amin;
  EMBER_ERROR("[scatter_reduce] reduce argument must be one of sum, prod, mean, amax or amin, got '", r, "'");
}

bool reduce_reads_values(ScatterReduceOp r) { return r == ScatterReduceOp::Prod || r == ScatterReduceOp::Amax || r == ScatterReduceOp::Amin; }

// i0 = dim; saved 0 = index. Scatter with src: self loses the written positions, src
// gets the gradient it was written to.
variable_list scatter_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const Tensor index = n.saved(0);
  Tensor gs, gsrc;
  if (n.should_compute_output(0)) gs = g.scatter(n.i0, index, 0);
  if (n.num_outputs() > 1 && n.should_compute_output(1)) gsrc = fit_to(g.gather(n.i0, index), n.in(1).sizes);
  return {gs, gsrc};
}

// i0 = dim; saved 0 = index.
variable_list scatter_add_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  Tensor gsrc;
  if (n.should_compute_output(1)) gsrc = fit_to(g.gather(n.i0, n.saved(0)), n.in(1).sizes);
  return {g, gsrc};
}

// i0 = dim, i1 = ScatterReduceOp, b0 = include_self; saved 0 = index, and for prod/amax/amin
// 1 = self (old value), 2 = src, 3 = result.
variable_list scatter_reduce_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const int64_t dim = n.i0;
  const auto reduce = static_cast<ScatterReduceOp>(n.i1);
  const bool include_self = n.b0;
  const Tensor index = n.saved(0);
  const DType dt = g.dtype();
  const bool want_self = n.should_compute_output(0), want_src = n.should_compute_output(1);
  Tensor gs, gsrc;
  switch (reduce) {
    case ScatterReduceOp::Sum:
      gs = g;
      if (want_src) gsrc = g.gather(dim, index);
      break;
    case ScatterReduceOp::Mean: {
      // Each output is divided by how many values it averaged (at least 1).
      Tensor count = include_self ? ones(n.in(0).sizes, TensorOptions(dt)) : zeros_of(n, 0, dt);
      count.scatter_add_(dim, index, ones(index.sizes(), TensorOptions(dt)));
      count.masked_fill_(count.eq(0), 1);
      gs = g / count;
      if (want_src) gsrc = gs.gather(dim, index);
      break;
    }
    case ScatterReduceOp::Amax:
    case ScatterReduceOp::Amin: {
      // The gradient is shared evenly among the values equal to the result.
      const Tensor self = n.saved(1), result = n.saved(3);
      const Tensor src = covered_part(n.saved(2), index);
      const Tensor self_hit = self.eq(result).to(dt);
      const Tensor src_hit = src.eq(result.gather(dim, index)).to(dt);
      const Tensor share = g / self_hit.scatter_add(dim, index, src_hit);
      if (want_self) gs = self_hit * share;
      if (want_src) gsrc = src_hit * share.gather(dim, index);
      break;
    }
    case ScatterReduceOp::Prod: {
      // The product of the other factors, computed without dividing by a zero factor.
      const Tensor self = n.saved(1), result = n.saved(3);
      const Tensor src = covered_part(n.saved(2), index);
      if (want_self) {
        const Tensor self_nz = self.masked_fill(self.eq(0), 1);
        gs = g * self_nz.scatter_reduce(dim, index, src, "prod", include_self) / self_nz;
      }
      if (want_src) {
        const Tensor src_zero = src.eq(0);
        Tensor zeros_per_out = zeros_of(n, 0, dt);
        zeros_per_out.scatter_add_(dim, index, src_zero.to(dt));
        // A zero factor that is the only zero of its output: its gradient is the product
        // of the others; other factors divide the result by themselves.
        const Tensor lone_zero = src_zero.logical_and(zeros_per_out.gather(dim, index).eq(1));
        const Tensor others = self.scatter_reduce(dim, index, src.masked_fill(lone_zero, 1), "prod", include_self);
        const Tensor at_zero = (g * others).gather(dim, index).masked_fill(lone_zero.logical_not(), 0);
        const Tensor elsewhere =
            ((g * result).gather(dim, index) / src.masked_fill(src_zero, 1)).masked_fill(lone_zero, 0);
        gsrc = at_zero + elsewhere;
      }
      break;
    }
  }
  // Without include_self, the scattered-to positions of self do not reach the result.
  if (want_self && !include_self) gs = gs.scatter(dim, index, 0);
  if (gsrc.defined()) gsrc = fit_to(gsrc, n.in(1).sizes);
  return {want_self ? gs : Tensor(), gsrc};
}

const char* scatter_name(ScatterKind kind) {
  switch (kind) {
    case ScatterKind::Src: return "ScatterBackward0";
    case ScatterKind::Value: return "ScatterBackward1";
    case ScatterKind::Add: return "ScatterAddBackward0";
    case ScatterKind::Reduce: return "ScatterReduceBackward0";
  }
  return "ScatterBackward0";
}

Formula scatter_formula_of(ScatterKind kind) {
  switch (kind) {
    case ScatterKind::Add: return scatter_add_formula;
    case ScatterKind::Reduce: return scatter_reduce_formula;
    default: return scatter_formula;
  }
}

std::shared_ptr<FnNode> scatter_node(ScatterKind kind, const Tensor& self, int64_t dim, const Tensor& index,
                                     const Tensor& src, std::string_view reduce, bool include_self) {
  auto node = kind == ScatterKind::Value
                  ? make_node(scatter_name(kind), scatter_formula_of(kind), {&self})
                  : make_node(scatter_name(kind), scatter_formula_of(kind), {&self, &src});
  node->i0 = wrap_dim(dim, self.dim(), "scatter");
  node->b0 = include_self;
  if (kind == ScatterKind::Reduce) node->i1 = static_cast<int64_t>(reduce_of(reduce));
  // Summing scatters pass self's gradient through unchanged: the index is read only for
  // src's gradient (or to clear self's scattered-to positions without include_self).
  const bool sums = kind == ScatterKind::Add ||
                    (kind == ScatterKind::Reduce && static_cast<ScatterReduceOp>(node->i1) == ScatterReduceOp::Sum && include_self);
  node->save(!sums || node->should_compute_output(1) ? index : Tensor());
  return node;
}

// ---------------------------------------------------------------------------------------
// index_add / index_copy / index_fill

// i0 = dim, s0 = alpha; saved 0 = index.
variable_list index_add_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  Tensor gsrc;
  if (n.should_compute_output(1)) {
    gsrc = g.index_select(n.i0, n.saved(0));
    if (!(n.s0.to_double() == 1.0)) gsrc = gsrc * n.s0;
  }
  return {g, gsrc};
}

// i0 = dim; saved 0 = index. Every source slice gets the gradient of the slice it was
// written to, duplicates included (as PyTorch).
variable_list index_copy_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const Tensor index = n.saved(0);
  Tensor gs, gsrc;
  if (n.should_compute_output(0)) gs = g.index_fill(n.i0, index, 0);
  if (n.should_compute_output(1)) gsrc = g.index_select(n.i0, index);
  return {gs, gsrc};
}

// i0 = dim; saved 0 = index. With a tensor value (two inputs), the value gets the sum of
// the gradient over the filled slices, each slice once.
variable_list index_fill_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const Tensor index = n.saved(0);
  Tensor gs, gv;
  if (n.should_compute_output(0)) gs = g.index_fill(n.i0, index, 0);
  if (n.num_outputs() > 1 && n.should_compute_output(1)) {
    if (g.dim() == 0) {
      gv = index.numel() > 0 ? g : zeros_like(g);
    } else {
      const int64_t size = g.size(n.i0);
      Tensor ix = index.to(kInt64).reshape({-1});
      ix = where(ix.lt(0), ix + size, ix);
      gv = g.index_select(n.i0, std::get<0>(ember::unique(ix))).sum();
    }
  }
  return {gs, gv};
}

// ---------------------------------------------------------------------------------------
// masked ops

// saved 0 = mask. Two inputs: the value is a 0-d tensor and gets the masked gradient's sum.
variable_list masked_fill_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const Tensor mask = n.saved(0);
  Tensor gs, gv;
  if (n.should_compute_output(0)) gs = g.masked_fill(mask, 0);
  if (n.num_outputs() > 1 && n.should_compute_output(1)) gv = g.masked_select(mask).sum();
  return {gs, gv};
}

// saved 0 = mask. The selected gradients go back to the masked positions of the
// broadcast shape; apply() sums them to self's shape.
variable_list masked_select_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const Tensor mask = n.saved(0);
  Tensor r = zeros(broadcast_shapes(n.in(0).sizes, mask.sizes()), TensorOptions(g.dtype()));
  r.masked_scatter_(mask, g);
  return {r};
}

// saved 0 = mask. Source element k went to the k-th masked position (row-major); source
// elements past the number of masked positions were not read.
variable_list masked_scatter_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const Tensor mask = n.saved(0);
  Tensor gs, gsrc;
  if (n.should_compute_output(0)) gs = g.masked_fill(mask, 0);
  if (n.should_compute_output(1)) {
    const IntArrayRef sizes = n.in(1).sizes;
    int64_t numel = 1;
    for (int64_t s : sizes) numel *= s;
    Tensor picked = g.masked_select(mask);
    if (picked.numel() < numel) {
      Tensor full = zeros({numel}, TensorOptions(g.dtype()));
      full.narrow(0, 0, picked.numel()).copy_(picked);
      picked = full;
    }
    gsrc = picked.reshape(sizes);
  }
  return {gs, gsrc};
}

// ---------------------------------------------------------------------------------------
// advanced indexing

std::vector<Tensor> saved_indices(FnNode& n, size_t first) {
  std::vector<Tensor> out;
  for (int64_t k = 0; k < n.i0; ++k) out.push_back(n.saved(first + static_cast<size_t>(k)));
  return out;
}

// i0 = number of index entries; saved 0.. = the indices (undefined: full slice).
variable_list index_formula(FnNode& n, const variable_list& grads) {
  Tensor r = zeros_of(n, 0, grads[0].dtype());
  r.index_put_(saved_indices(n, 0), grads[0], /*accumulate=*/true);
  return {r};
}

// i0 = number of index entries, b0 = accumulate; saved 0.. = the indices. Without
// accumulate the written positions of self are overwritten (zero gradient there). The
// values get the gradient of the positions they were written to (apply() sums it back
// over broadcast dims), duplicates included, as PyTorch.
variable_list index_put_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const std::vector<Tensor> indices = saved_indices(n, 0);
  Tensor gs, gv;
  if (n.should_compute_output(0)) {
    if (n.b0) {
      gs = g;
    } else {
      gs = g.clone();
      gs.index_put_(indices, zeros({}, TensorOptions(g.dtype())), false);
    }
  }
  if (n.should_compute_output(1)) gv = g.index(indices);
  return {gs, gv};
}

// ---------------------------------------------------------------------------------------
// sort / topk / kthvalue

// i0 = dim, b0 = keepdim; saved 0 = the indices output.
variable_list select_values_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  Tensor r = zeros_of(n, 0, g.dtype());
  const Tensor indices = n.saved(0);
  if (!n.b0 && !n.in(0).sizes.empty()) {
    r.scatter_(n.i0, indices.unsqueeze(n.i0), g.unsqueeze(n.i0));
  } else {
    r.scatter_(n.i0, indices, g);
  }
  return {r};
}

// Runs an out-of-place forward with grad mode off.
Tensor run(Forward forward) {
  AutoGradMode off(false);
  return forward();
}

}  // namespace

// ---------------------------------------------------------------------------------------
// entry points

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index, Forward forward) {
  Tensor out = run(forward);
  auto node = make_node("IndexSelectBackward0", index_select_formula, {&self});
  node->i0 = wrap_dim(dim, self.dim(), "index_select");
  node->save(index);
  set_history(out, node);
  return out;
}

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, Forward forward) {
  Tensor out = run(forward);
  auto node = make_node("GatherBackward0", gather_formula, {&self});
  node->i0 = wrap_dim(dim, self.dim(), "gather");
  node->save(index);
  set_history(out, node);
  return out;
}

Tensor scatter(ScatterKind kind, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
               std::string_view reduce, bool include_self, Forward forward) {
  Tensor out = run(forward);
  auto node = scatter_node(kind, self, dim, index, src, reduce, include_self);
  const bool values = kind == ScatterKind::Reduce && reduce_reads_values(static_cast<ScatterReduceOp>(node->i1));
  if (values) {
    node->save(self);
    node->save(src);
  }
  set_history(out, node);
  if (values) node->save(out, true);
  return out;
}

void scatter_(ScatterKind kind, const char* name, const Tensor& self, int64_t dim, const Tensor& index,
              const Tensor& src, std::string_view reduce, bool include_self, ForwardInplace forward) {
  check_inplace(self, name);
  auto node = scatter_node(kind, self, dim, index, src, reduce, include_self);
  const bool values = kind == ScatterKind::Reduce && reduce_reads_values(static_cast<ScatterReduceOp>(node->i1));
  if (values) {
    // The old value is cloned with grad mode on, so a double backward still sees how it
    // depended on earlier ops.
    node->save(self.clone());
    node->save(src.is_alias_of(self) ? src.clone() : src);
  }
  {
    AutoGradMode off(false);
    forward();
  }
  rebase_history(self, node);
  if (values) node->save(self, true);
}

namespace {

const char* index_func_name(IndexKind kind) {
  switch (kind) {
    case IndexKind::Add: return "IndexAddBackward0";
    case IndexKind::Copy: return "IndexCopyBackward0";
    case IndexKind::Fill: return "IndexFillBackward0";
    case IndexKind::FillTensor: return "IndexFillBackward1";
  }
  return "IndexAddBackward0";
}

std::shared_ptr<FnNode> index_func_node(IndexKind kind, const Tensor& self, int64_t dim, const Tensor& index,
                                        const Tensor& source, const Scalar& alpha) {
  Formula f = kind == IndexKind::Add    ? index_add_formula
              : kind == IndexKind::Copy ? index_copy_formula
                                        : index_fill_formula;
  auto node = kind == IndexKind::Fill ? make_node(index_func_name(kind), f, {&self})
                                      : make_node(index_func_name(kind), f, {&self, &source});
  node->i0 = wrap_dim(dim, self.dim(), "index_func");
  node->s0 = alpha;
  // index_add passes self's gradient through: the index is read only for source's.
  node->save(kind != IndexKind::Add || node->should_compute_output(1) ? index : Tensor());
  return node;
}

}  // namespace

Tensor index_func(IndexKind kind, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                  const Scalar& alpha, Forward forward) {
  Tensor out = run(forward);
  set_history(out, index_func_node(kind, self, dim, index, source, alpha));
  return out;
}

void index_func_(IndexKind kind, const char* name, const Tensor& self, int64_t dim, const Tensor& index,
                 const Tensor& source, const Scalar& alpha, ForwardInplace forward) {
  check_inplace(self, name);
  auto node = index_func_node(kind, self, dim, index, source, alpha);
  {
    AutoGradMode off(false);
    forward();
  }
  rebase_history(self, node);
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value, Forward forward) {
  Tensor out = run(forward);
  auto node = value.defined() ? make_node("MaskedFillBackward1", masked_fill_formula, {&self, &value})
                              : make_node("MaskedFillBackward0", masked_fill_formula, {&self});
  node->save(mask);
  set_history(out, node);
  return out;
}

void masked_fill_(const Tensor& self, const Tensor& mask, const Tensor& value, ForwardInplace forward) {
  check_inplace(self, "masked_fill_");
  auto node = value.defined() ? make_node("MaskedFillBackward1", masked_fill_formula, {&self, &value})
                              : make_node("MaskedFillBackward0", masked_fill_formula, {&self});
  node->save(mask);
  {
    AutoGradMode off(false);
    forward();
  }
  rebase_history(self, node);
}

Tensor masked_select(const Tensor& self, const Tensor& mask, Forward forward) {
  Tensor out = run(forward);
  auto node = make_node("MaskedSelectBackward0", masked_select_formula, {&self});
  node->save(mask);
  set_history(out, node);
  return out;
}

Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source, Forward forward) {
  Tensor out = run(forward);
  auto node = make_node("MaskedScatterBackward0", masked_scatter_formula, {&self, &source});
  node->save(mask);
  set_history(out, node);
  return out;
}

void masked_scatter_(const Tensor& self, const Tensor& mask, const Tensor& source, ForwardInplace forward) {
  check_inplace(self, "masked_scatter_");
  auto node = make_node("MaskedScatterBackward0", masked_scatter_formula, {&self, &source});
  node->save(mask);
  {
    AutoGradMode off(false);
    forward();
  }
  rebase_history(self, node);
}

Tensor index(const Tensor& self, const std::vector<Tensor>& indices, Forward forward) {
  Tensor out = run(forward);
  auto node = make_node("IndexBackward0", index_formula, {&self});
  node->i0 = static_cast<int64_t>(indices.size());
  for (const Tensor& ix : indices) node->save(ix);
  set_history(out, node);
  return out;
}

void index_put_(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate,
                ForwardInplace forward) {
  check_inplace(self, "index_put_");
  auto node = make_node("IndexPutBackward0", index_put_formula, {&self, &values});
  node->i0 = static_cast<int64_t>(indices.size());
  node->b0 = accumulate;
  // Accumulating passes self's gradient through: the indices are read only for values'.
  const bool keep = !accumulate || node->should_compute_output(1);
  for (const Tensor& ix : indices) node->save(keep ? ix : Tensor());
  {
    AutoGradMode off(false);
    forward();
  }
  rebase_history(self, node);
}

std::tuple<Tensor, Tensor> select_values(const char* name, const Tensor& self, int64_t dim, bool keepdim,
                                         ForwardPair forward) {
  std::tuple<Tensor, Tensor> out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  auto node = make_node(name, select_values_formula, {&self});
  node->i0 = wrap_dim(dim, self.dim(), name);
  node->b0 = keepdim;
  node->save(std::get<1>(out));
  set_history(std::get<0>(out), node);
  return out;
}

}  // namespace ember::autograd::fn
