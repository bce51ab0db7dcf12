#include "ember/autograd/functions_attention.h"

#include <algorithm>
#include <limits>

#include "ember/autograd/fn_node.h"
#include "ember/ops/creation.h"
#include "ember/ops/linalg.h"
#include "ember/ops/pointwise.h"

namespace ember::autograd::fn {
namespace {

// d0 = scale, b0 = causal, ints = batch sizes; saved 0..2 = query, key, value, 3 = mask
// (may be undefined), 4 = probs [batch, L, S].
variable_list sdpa_formula(FnNode& n, const variable_list& grads) {
  const Tensor& g = grads[0];
  if (!g.defined()) return {};
  const Tensor query = n.saved(0), key = n.saved(1), value = n.saved(2);
  const bool want_q = n.should_compute_output(0), want_k = n.should_compute_output(1),
             want_v = n.should_compute_output(2);
  if (GradMode::is_enabled()) {
    // create_graph: the same formulas written with ops, the weights recomputed from q and k
    // so that they are differentiable too.
    const Tensor mask = n.saved(3);
    const Tensor &q = query, &k = key, &v = value;
    Tensor scores = (q * n.d0).matmul(k.transpose(-2, -1));
    if (n.b0) {
      scores = scores.masked_fill(ones({q.size(-2), k.size(-2)}, TensorOptions(kBool)).triu(1),
                                  -std::numeric_limits<double>::infinity());
    }
    if (mask.defined()) scores = scores + mask;
    const Tensor p = scores.softmax(-1);
    Tensor dq, dk, dv;
    if (want_v) dv = p.transpose(-2, -1).matmul(g);
    if (want_q || want_k) {
      const Tensor dp = g.matmul(v.transpose(-2, -1));
      const Tensor ds = p * (dp - (dp * p).sum({-1}, true)) * n.d0;
      if (want_q) dq = ds.matmul(k);
      if (want_k) dk = ds.transpose(-2, -1).matmul(q);
    }
    return {dq, dk, dv};
  }
  const Tensor q = attention_operand(query, n.ints), k = attention_operand(key, n.ints),
               v = attention_operand(value, n.ints);
  kernels::cpu::AttentionShape s;
  s.L = q.size(-2);
  s.S = k.size(-2);
  s.E = q.size(-1);
  s.Ev = v.size(-1);
  s.scale = n.d0;
  s.causal = n.b0;
  const Tensor dq = want_q ? empty_attention_output(q.sizes(), q.dtype()) : Tensor();
  const Tensor dk = want_k ? empty_attention_output(k.sizes(), k.dtype()) : Tensor();
  const Tensor dv = want_v ? empty_attention_output(v.sizes(), v.dtype()) : Tensor();
  const Tensor gq = g.dtype() == q.dtype() ? g : g.to(q.dtype());
  kernels::cpu::attention_backward(dq, dk, dv, attention_operand(gq, n.ints), n.saved(4), q, k, v, s);
  return {dq, dk, dv};
}

}  // namespace

Tensor attention_operand(const Tensor& t, IntArrayRef batch) {
  DimVector sizes(batch);
  sizes.push_back(t.size(-2));
  sizes.push_back(t.size(-1));
  const Tensor e = t.sizes() == IntArrayRef(sizes) ? t : t.expand(sizes);
  const int64_t rows = e.size(-2), cols = e.size(-1);
  const bool ok = e.stride(-1) == 1 && (rows <= 1 || e.stride(-2) >= std::max<int64_t>(1, cols));
  return ok ? e : t.contiguous().expand(sizes);
}

Tensor empty_attention_output(IntArrayRef sizes, DType dtype) {
  if (sizes.size() != 4) return empty(sizes, TensorOptions(dtype));
  return empty({sizes[0], sizes[2], sizes[1], sizes[3]}, TensorOptions(dtype)).transpose(1, 2);
}

void scaled_dot_product_attention(const Tensor& out, const Tensor& query, const Tensor& key, const Tensor& value,
                                  IntArrayRef batch, const Tensor& mask, const Tensor& probs,
                                  const kernels::cpu::AttentionShape& shape) {
  auto node = make_node("ScaledDotProductAttentionBackward0", sdpa_formula, {&query, &key, &value});
  node->d0 = shape.scale;
  node->b0 = shape.causal;
  node->ints = DimVector(batch);
  node->save(query);
  node->save(key);
  node->save(value);
  node->save(mask);
  node->save(probs);
  set_history(out, node);
}

}  // namespace ember::autograd::fn
