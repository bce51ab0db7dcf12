// Backward formulas of batch norm, layer norm (and group norm, which runs layer norm's
// kernel on [N*G, rest] rows) and embedding. See Note [Fused norm backward] in
// functions_norm.h for why there are two paths.

#include "ember/autograd/functions_norm.h"

#include "ember/autograd/fn_node.h"
#include "ember/autograd/grad_mode.h"
#include "ember/kernels/cpu/norm.h"
#include "ember/ops/creation.h"

namespace ember::autograd::fn {

namespace {

Tensor empty_like_contig(const Tensor& t) { return empty(t.sizes(), TensorOptions(t.dtype())); }

// The closed-form input gradient of a normalisation over `dims` with xhat = (x - mean) *
// istd and gw = grad * weight, written with ember ops (differentiable again).
Tensor norm_input_grad(const Tensor& gw, const Tensor& xhat, const Tensor& istd, IntArrayRef dims) {
  return istd * (gw - gw.mean(dims, true) - xhat * (gw * xhat).mean(dims, true));
}

// Sum over dims; with no dims, the tensor itself (sum({}) would reduce everything).
Tensor sum_over(const Tensor& t, IntArrayRef dims) { return dims.empty() ? t : t.sum(dims); }

// ---------------------------------------------------------------------------------------
// batch norm

// b0 = training, d0 = eps; saved 0 = input, 1 = weight, 2 = mean, 3 = invstd.
variable_list batch_norm_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const bool want_x = n.should_compute_output(0), want_w = n.should_compute_output(1),
             want_b = n.should_compute_output(2);
  const Tensor x = n.saved(0), w = n.saved(1), mean = n.saved(2), invstd = n.saved(3);
  const bool training = n.b0;
  const int64_t c = x.size(1);
  if (GradMode::is_enabled()) {
    DimVector dims{0};
    for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
    DimVector shape(static_cast<size_t>(x.dim()), 1);
    shape[1] = c;
    Tensor m, istd;
    if (training) {
      m = x.mean(dims, true);
      const Tensor xc = x - m;
      istd = ((xc * xc).mean(dims, true) + n.d0).rsqrt();
    } else {
      m = mean.view(shape);
      istd = invstd.view(shape);
    }
    const Tensor xhat = (x - m) * istd;
    const Tensor gw = w.defined() ? g * w.view(shape) : g;
    Tensor dx, dw, db;
    if (want_x) dx = training ? norm_input_grad(gw, xhat, istd, dims) : gw * istd;
    if (want_w) dw = (g * xhat).sum(dims);
    if (want_b) db = g.sum(dims);
    return {dx, dw, db};
  }
  const Tensor xc = x.contiguous(), gc = g.contiguous();
  const Tensor wc = w.defined() ? w.contiguous() : Tensor();
  const kernels::cpu::BatchNormShape s{x.size(0), c, c && x.size(0) ? x.numel() / (x.size(0) * c) : 0};
  Tensor dx = want_x ? empty_like_contig(x) : Tensor();
  Tensor dw = want_w ? empty({c}, TensorOptions(x.dtype())) : Tensor();
  Tensor db = want_b ? empty({c}, TensorOptions(x.dtype())) : Tensor();
  kernels::cpu::batch_norm_backward(dx, dw, db, gc, xc, mean, invstd, wc, training, s);
  return {dx, dw, db};
}

// ---------------------------------------------------------------------------------------
// layer norm

// i0 = number of normalised (trailing) dims, d0 = eps; saved 0 = input, 1 = weight,
// 2 = mean, 3 = rstd.
variable_list layer_norm_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  const bool want_x = n.should_compute_output(0), want_w = n.should_compute_output(1),
             want_b = n.should_compute_output(2);
  const Tensor x = n.saved(0), w = n.saved(1), mean = n.saved(2), rstd = n.saved(3);
  const int64_t k = n.i0, lead = x.dim() - k;
  if (GradMode::is_enabled()) {
    DimVector norm_dims, lead_dims;
    for (int64_t d = 0; d < x.dim(); ++d) (d < lead ? lead_dims : norm_dims).push_back(d);
    const Tensor m = x.mean(norm_dims, true);
    const Tensor xc = x - m;
    const Tensor istd = ((xc * xc).mean(norm_dims, true) + n.d0).rsqrt();
    const Tensor xhat = xc * istd;
    Tensor dx, dw, db;
    if (want_x) dx = norm_input_grad(w.defined() ? g * w : g, xhat, istd, norm_dims);
    if (want_w) dw = sum_over(g * xhat, lead_dims);
    if (want_b) db = sum_over(g, lead_dims);
    return {dx, dw, db};
  }
  int64_t rows = 1;
  for (int64_t d = 0; d < lead; ++d) rows *= x.size(d);
  const int64_t cols = rows ? x.numel() / rows : 0;
  const Tensor xc = x.contiguous(), gc = g.contiguous();
  const Tensor wc = w.defined() ? w.contiguous() : Tensor();
  Tensor dx = want_x ? empty_like_contig(x) : Tensor();
  Tensor dw = want_w ? empty(n.in(1).sizes, TensorOptions(x.dtype())) : Tensor();
  Tensor db = want_b ? empty(n.in(2).sizes, TensorOptions(x.dtype())) : Tensor();
  kernels::cpu::layer_norm_backward(dx, dw, db, gc, xc, mean, rstd, wc, rows, cols);
  return {dx, dw, db};
}

// ---------------------------------------------------------------------------------------
// embedding

// i0 = padding_idx (-1: none); saved 0 = indices (int64). The gradient of each row is the
// sum of the output gradients of the positions that read it.
variable_list embedding_formula(FnNode& n, const variable_list& grads) {
  const Tensor idx = n.saved(0).reshape({-1});
  const int64_t dim = n.in(0).sizes[1];
  Tensor g = grads[0].reshape({-1, dim});
  if (n.i0 >= 0) g = g.masked_fill(idx.eq(n.i0).unsqueeze(1), 0);
  Tensor r = zeros(n.in(0).sizes, TensorOptions(g.dtype()));
  r.index_add_(0, idx, g);
  return {r};
}

}  // namespace

void batch_norm(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                const Tensor& mean, const Tensor& invstd, bool training, double eps) {
  auto node = make_node("NativeBatchNormBackward0", batch_norm_formula, {&input, &weight, &bias});
  node->b0 = training;
  node->d0 = eps;
  node->save(input);
  node->save(weight);
  node->save(mean);
  node->save(invstd);
  set_history(out, node);
}

void layer_norm(const char* name, const Tensor& out, const Tensor& input, int64_t norm_dims, const Tensor& weight,
                const Tensor& bias, const Tensor& mean, const Tensor& rstd, double eps) {
  auto node = make_node(name, layer_norm_formula, {&input, &weight, &bias});
  node->i0 = norm_dims;
  node->d0 = eps;
  node->save(input);
  node->save(weight);
  node->save(mean);
  node->save(rstd);
  set_history(out, node);
}

void embedding(const Tensor& out, const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
  auto node = make_node("EmbeddingBackward0", embedding_formula, {&weight});
  node->i0 = padding_idx;
  node->save(indices);
  set_history(out, node);
}

}  // namespace ember::autograd::fn
