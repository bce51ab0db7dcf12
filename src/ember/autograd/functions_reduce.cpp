// Backward formulas of the reductions.

#include <algorithm>
#include <cmath>
#include <vector>

#include "ember/autograd/fn_node.h"
#include "ember/autograd/functions.h"
#include "ember/core/check.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"
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
  set_history(out, reduction_node(dims.empty() ? "SumBackward0" : "SumBackward1", sum_formula, t, dims, keepdim));
  return out;
}

Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim, Forward forward) {
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  set_history(out, reduction_node(dims.empty() ? "MeanBackward0" : "MeanBackward1", mean_formula, t, dims, keepdim));
  return out;
}

}  // namespace ember::autograd::fn

namespace ember::autograd::fn {

namespace {

const char* reduce_name(Reduce k, bool all_dims) {
  switch (k) {
    case Reduce::Amax: return "AmaxBackward0";
    case Reduce::Amin: return "AminBackward0";
    case Reduce::Max: return "MaxBackward1";
    case Reduce::Min: return "MinBackward1";
    case Reduce::Var: return "VarBackward0";
    case Reduce::Std: return "StdBackward0";
    case Reduce::Norm: return all_dims ? "NormBackward0" : "NormBackward1";
    case Reduce::Logsumexp: return "LogsumexpBackward0";
    case Reduce::Prod: return all_dims ? "ProdBackward0" : "ProdBackward1";
    case Reduce::Cumsum: return "CumsumBackward0";
    case Reduce::Cumprod: return "CumprodBackward0";
    case Reduce::Softmax: return "SoftmaxBackward0";
    case Reduce::LogSoftmax: return "LogSoftmaxBackward0";
  }
  return "?";
}

// Sum of g along dim d from each position to the end (a reversed cumsum).
Tensor reverse_cumsum(const Tensor& g, int64_t d) { return g.sum({d}, true) - g.cumsum(d) + g; }

// Saved: 0 = input x, 1 = output y. ints = reduced dims (sorted), b0 = keepdim,
// i0 = number of reduced elements, i1 = kind, d0 = param.
variable_list general_formula(FnNode& n, const variable_list& grads) {
  const auto kind = static_cast<Reduce>(n.i1);
  const Tensor& g = grads[0];
  const Tensor x = n.saved(0), y = n.saved(1);
  switch (kind) {
    case Reduce::Amax: case Reduce::Amin: case Reduce::Max: case Reduce::Min: {
      // Split evenly among the elements equal to the extreme value.
      const Tensor yr = restore_dims(y, n), gr = restore_dims(g, n);
      const Tensor mask = (x == yr).to(g.dtype());
      return {gr * mask / mask.sum(n.ints, true)};
    }
    case Reduce::Var: case Reduce::Std: {
      const double denom = std::max<double>(static_cast<double>(n.i0) - n.d0, 0.0);
      const Tensor centered = x - x.mean(n.ints, true);
      Tensor gr = restore_dims(g, n);
      if (kind == Reduce::Std) gr = gr / restore_dims(y, n);
      return {gr * centered * ((kind == Reduce::Var ? 2.0 : 1.0) / denom)};
    }
    case Reduce::Norm: {
      const double p = n.d0;
      const Tensor gr = restore_dims(g, n);
      if (p == 0) return {zeros_like(x)};
      if (p == 1) return {gr * x.sign()};
      const Tensor yr = restore_dims(y, n);
      if (std::isinf(p)) {
        const Tensor mask = (x.abs() == yr).to(g.dtype());
        return {gr * x.sign() * mask / mask.sum(n.ints, true)};
      }
      // d|x|_p / dx = x |x|^(p-2) / |x|_p^(p-1); zero where the norm is zero.
      const Tensor safe = where(yr == 0, ones_like(yr), yr);
      Tensor num = p == 2 ? x : x * x.abs().pow(p - 2);
      Tensor r = gr * num / (p == 2 ? safe : safe.pow(p - 1));
      return {where(yr == 0, zeros_like(r), r)};
    }
    case Reduce::Logsumexp:
      return {restore_dims(g, n) * (x - restore_dims(y, n)).exp()};
    case Reduce::Prod: {
      const Tensor gr = restore_dims(g, n);
      const bool has_zero = (x == 0).any().item<bool>();
      if (!has_zero) return {gr * restore_dims(y, n) / x};
      // With zeros: the product of all the other elements, from exclusive prefix and
      // suffix products along the (single, or flattened) reduced dim.
      Tensor xf = x;
      int64_t d = n.ints.empty() ? 0 : n.ints[0];
      if (n.ints.size() != 1) {
        xf = x.reshape({-1});
        d = 0;
      }
      const int64_t len = xf.size(d);
      Tensor ones_slice = ones_like(xf.narrow(d, 0, 1));
      Tensor prefix = ember::cat({ones_slice, xf.narrow(d, 0, len - 1).cumprod(d)}, d);
      Tensor rev = xf.flip({d});
      Tensor suffix = ember::cat({ones_slice, rev.narrow(d, 0, len - 1).cumprod(d)}, d).flip({d});
      Tensor others = prefix * suffix;
      if (n.ints.size() != 1) others = others.reshape(x.sizes());
      return {gr * others};
    }
    case Reduce::Cumsum:
      return {reverse_cumsum(g, n.ints[0])};
    case Reduce::Cumprod: {
      // dx_i = sum_{j >= i} g_j * prod_{k <= j, k != i} x_k. Without zeros that is
      // sum_{j >= i} g_j y_j / x_i; with zeros, each i is done directly (x_i replaced by
      // 1), which costs one cumprod per position along the dim.
      const int64_t d = n.ints[0];
      if (!(x == 0).any().item<bool>()) return {reverse_cumsum(g * y, d) / x};
      const int64_t len = x.size(d);
      DimVector shape(static_cast<size_t>(x.dim()), 1);
      shape[static_cast<size_t>(d)] = len;
      const Tensor pos = arange(len, TensorOptions(kInt64)).view(shape);
      std::vector<Tensor> parts;
      for (int64_t i = 0; i < len; ++i) {
        const Tensor c = where(pos == i, ones_like(x), x).cumprod(d);
        parts.push_back(where(pos >= i, g * c, zeros_like(c)).sum({d}, true));
      }
      return {ember::cat(parts, d)};
    }
    case Reduce::Softmax: {
      const int64_t d = n.ints[0];
      return {y * (g - (g * y).sum({d}, true))};
    }
    case Reduce::LogSoftmax: {
      const int64_t d = n.ints[0];
      return {g - y.exp() * g.sum({d}, true)};
    }
  }
  return {Tensor()};
}

// ints = {dim}, b0 = keepdim; saved 0 = indices. The values' gradient goes to the
// returned index of each slice (ties: that one element, as PyTorch).
variable_list max_dim_formula(FnNode& n, const variable_list& grads) {
  const int64_t d = n.ints[0];
  Tensor g = grads[0], idx = n.saved(0);
  if (!n.b0) {
    g = g.unsqueeze(d);
    idx = idx.unsqueeze(d);
  }
  const int64_t size = n.in(0).sizes[static_cast<size_t>(d)];
  DimVector shape(n.in(0).sizes.size(), 1);
  shape[static_cast<size_t>(d)] = size;
  const Tensor positions = arange(size, TensorOptions(kInt64)).view(shape);
  return {where(positions == idx, g, zeros_like(g))};
}

}  // namespace

Tensor reduction(Reduce kind, const Tensor& t, IntArrayRef dims, bool keepdim, double param, Forward forward) {
  Tensor out;
  {
    AutoGradMode off(false);
    out = forward();
  }
  if (!is_floating_point(out.dtype())) return out;
  const bool dimwise = kind == Reduce::Cumsum || kind == Reduce::Cumprod || kind == Reduce::Softmax ||
                       kind == Reduce::LogSoftmax;
  auto node = make_node(reduce_name(kind, dims.empty()), general_formula, {&t});
  if (dimwise) {
    node->ints.push_back(t.dim() == 0 ? 0 : (dims[0] < 0 ? dims[0] + t.dim() : dims[0]));
    node->b0 = true;
  } else {
    node->ints = reduced_dims(dims, t.dim());
    node->b0 = keepdim || t.dim() == 0;
  }
  int64_t count = 1;
  for (int64_t d : node->ints) count *= t.dim() == 0 ? 1 : t.size(d);
  node->i0 = count;
  node->i1 = static_cast<int64_t>(kind);
  node->d0 = param;
  const bool needs_x = kind != Reduce::Softmax && kind != Reduce::LogSoftmax && kind != Reduce::Cumsum;
  const bool needs_y = kind != Reduce::Cumsum && kind != Reduce::Var && !(kind == Reduce::Norm && (param == 0 || param == 1));
  node->save(needs_x ? t : Tensor());
  set_history(out, node);
  node->save(needs_y ? out : Tensor(), true);
  return out;
}

void max_dim(bool is_max, const Tensor& t, int64_t dim, bool keepdim, const Tensor& values, const Tensor& indices) {
  if (!is_floating_point(values.dtype())) return;
  auto node = make_node(is_max ? "MaxBackward0" : "MinBackward0", max_dim_formula, {&t});
  node->ints.push_back(t.dim() == 0 ? 0 : (dim < 0 ? dim + t.dim() : dim));
  node->b0 = keepdim || t.dim() == 0;
  node->save(indices);
  set_history(values, node);
}

}  // namespace ember::autograd::fn
