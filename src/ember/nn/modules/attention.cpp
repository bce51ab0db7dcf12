#include "ember/nn/modules/attention.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "ember/amp/autocast.h"
#include "ember/autograd/functions_attention.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/jit/trace_hook.h"
#include "ember/kernels/cpu/attention.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/nn/modules/clone_dtype.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"
#include "ember/ops/linalg.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/view.h"

namespace ember::nn {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// A bool mask (true = ignore) as an additive float mask of dtype dt; float masks pass.
Tensor additive_mask(const Tensor& mask, DType dt, const char* op, const char* what) {
  if (mask.dtype() == kBool) return zeros(mask.sizes(), TensorOptions(dt)).masked_fill(mask, kNegInf);
  EMBER_CHECK(mask.is_floating_point(), "[", op, "] ", what, " must be bool or floating point, got ", mask.dtype());
  return mask.dtype() == dt ? mask : mask.to(dt);
}

// The fused kernel (Note [Fused attention]) for float32/float64 inputs of one dtype without
// dropout, a mask that needs a gradient, or an active jit trace (which records the
// written-out ops); an undefined result leaves the call to the written-out formula.
Tensor fused_attention(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask,
                       double dropout_p, bool is_causal, double scale) {
  const DType dt = query.dtype();
  if ((dt != kFloat32 && dt != kFloat64) || key.dtype() != dt || value.dtype() != dt || dropout_p > 0 ||
      jit::detail::tl_recorder != nullptr) {
    return {};
  }
  if (attn_mask.defined() && attn_mask.dtype() != kBool &&
      (attn_mask.dtype() != dt || autograd::requires_grad_fast(attn_mask))) {
    return {};
  }
  const int64_t L = query.size(-2), S = key.size(-2), E = query.size(-1), Ev = value.size(-1);
  if (L == 0 || S == 0 || E == 0 || Ev == 0 || std::max({L, S, E, Ev}) > INT_MAX / 2) return {};
  auto batch_of = [](const Tensor& t, int64_t trailing) {
    DimVector d(t.sizes());
    d.resize(d.size() - static_cast<size_t>(trailing));
    return d;
  };
  // Batch dims that do not broadcast, or a mask that would widen the result, are left to the
  // written-out formula (and its errors).
  DimVector batch;
  try {
    batch = broadcast_shapes({batch_of(query, 2), batch_of(key, 2), batch_of(value, 2)});
    if (attn_mask.defined() && (attn_mask.dim() < 2 || !(broadcast_shapes(batch, batch_of(attn_mask, 2)) == batch) ||
                                (attn_mask.size(-2) != 1 && attn_mask.size(-2) != L) ||
                                (attn_mask.size(-1) != 1 && attn_mask.size(-1) != S))) {
      return {};
    }
  } catch (const Error&) {
    return {};
  }
  int64_t count = 1;
  for (int64_t d : batch) count *= d;
  if (count == 0) return {};

  const Tensor q = autograd::fn::attention_operand(query, batch), k = autograd::fn::attention_operand(key, batch),
               v = autograd::fn::attention_operand(value, batch);
  Tensor mask;
  if (attn_mask.defined()) {
    DimVector mask_sizes = batch;
    mask_sizes.push_back(L);
    mask_sizes.push_back(S);
    // A bool mask marks the positions that take part; the kernel adds -inf elsewhere.
    mask = attn_mask.dtype() == kBool
               ? additive_mask(attn_mask.logical_not(), dt, "scaled_dot_product_attention", "attn_mask")
               : attn_mask.detach();
    mask = mask.expand(mask_sizes);
  }
  kernels::cpu::AttentionShape s;
  s.L = L;
  s.S = S;
  s.E = E;
  s.Ev = Ev;
  s.scale = scale;
  s.causal = is_causal;
  DimVector out_sizes = batch;
  out_sizes.push_back(L);
  out_sizes.push_back(Ev);
  Tensor out = autograd::fn::empty_attention_output(out_sizes, dt);
  const bool grad = autograd::needs_grad(query, key, value);
  const Tensor probs = grad ? empty({count, L, S}, TensorOptions(dt)) : Tensor();
  kernels::cpu::attention_forward(out, probs, q, k, v, mask, s);
  if (grad) autograd::fn::scaled_dot_product_attention(out, query, key, value, batch, mask, probs, s);
  return out;
}

}  // namespace

namespace functional {

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("scaled_dot_product_attention"), query, key, value, attn_mask)) return scaled_dot_product_attention((*c)[0], (*c)[1], (*c)[2], (*c)[3], dropout_p, is_causal);
  }
  OpScope scope("scaled_dot_product_attention", {&query, &key, &value, &attn_mask});
  const char* op = "scaled_dot_product_attention";
  EMBER_CHECK(query.defined() && key.defined() && value.defined(), "[", op, "] query, key and value must be defined");
  EMBER_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2, "[", op,
              "] query, key and value need at least 2 dims ([..., L, E]), got sizes ", query.sizes(), ", ",
              key.sizes(), ", ", value.sizes());
  EMBER_CHECK(query.size(-1) == key.size(-1), "[", op, "] query and key must have the same last dim, got query ",
              query.sizes(), " and key ", key.sizes());
  EMBER_CHECK(key.size(-2) == value.size(-2), "[", op, "] key and value must have the same sequence length (dim -2), got key ",
              key.sizes(), " and value ", value.sizes());
  EMBER_CHECK(!(is_causal && attn_mask.defined()), "[", op,
              "] pass either attn_mask or is_causal=true, not both");
  EMBER_CHECK(dropout_p >= 0 && dropout_p <= 1, "[", op, "] dropout_p must be in [0, 1], got ", dropout_p);
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  if (Tensor out = fused_attention(query, key, value, attn_mask, dropout_p, is_causal, scale); out.defined())
    return out;
  const int64_t L = query.size(-2), S = key.size(-2);
  Tensor scores = (query * scale).matmul(key.transpose(-2, -1));
  if (is_causal) {
    Tensor future = ones({L, S}, TensorOptions(kBool)).triu(1);
    scores = scores.masked_fill(future, kNegInf);
  } else if (attn_mask.defined()) {
    // PyTorch's convention here: a bool mask marks the positions that TAKE PART.
    if (attn_mask.dtype() == kBool) {
      scores = scores.masked_fill(attn_mask.logical_not(), kNegInf);
    } else {
      scores = scores + attn_mask;
    }
  }
  Tensor weights = scores.softmax(-1);
  if (dropout_p > 0) weights = dropout(weights, dropout_p, true);
  return weights.matmul(value);
}

}  // namespace functional

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options_)
    : Module("MultiheadAttention"), options(options_) {
  const int64_t E = options.embed_dim(), heads = options.num_heads();
  EMBER_CHECK(E > 0 && heads > 0, "[nn.MultiheadAttention] embed_dim and num_heads must be positive, got ", E, " and ",
              heads);
  EMBER_CHECK(E % heads == 0, "[nn.MultiheadAttention] embed_dim must be divisible by num_heads, got embed_dim=", E,
              " num_heads=", heads);
  EMBER_CHECK(options.dropout() >= 0 && options.dropout() <= 1,
              "[nn.MultiheadAttention] dropout must be in [0, 1], got ", options.dropout());
  head_dim = E / heads;
  const bool same = options.kdim() == E && options.vdim() == E;
  if (same) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * E, E}));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({E, E}));
    k_proj_weight = register_parameter("k_proj_weight", empty({E, options.kdim()}));
    v_proj_weight = register_parameter("v_proj_weight", empty({E, options.vdim()}));
    register_parameter("in_proj_weight", Tensor(), false);
  }
  _qkv_same_embed_dim = same;
  in_proj_bias = register_parameter("in_proj_bias", options.bias() ? empty({3 * E}) : Tensor(), options.bias());
  out_proj = register_module("out_proj", Linear(LinearOptions(E, E).bias(options.bias())));
  if (options.add_bias_kv()) {
    bias_k = register_parameter("bias_k", empty({1, 1, E}));
    bias_v = register_parameter("bias_v", empty({1, 1, E}));
  }
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  if (in_proj_weight.defined()) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
  if (bias_k.defined()) init::xavier_normal_(bias_k);
  if (bias_v.defined()) init::xavier_normal_(bias_v);
}

std::shared_ptr<Module> MultiheadAttentionImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<MultiheadAttentionImpl>(options);
  match_dtype(*this, *copy);
  clone_into(*copy);
  return copy;
}

namespace {
// Everything MultiheadAttention's forward needs besides its inputs.
struct MhaParams {
  int64_t E = 0, heads = 1, kdim = 0, vdim = 0;
  Tensor in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias, bias_k, bias_v;
  Tensor out_proj_weight, out_proj_bias, static_k, static_v;
  bool add_zero_attn = false, batch_first = false;
  double dropout = 0.0;  // 0 outside training
};

// The whole of MultiheadAttention's forward on given parameters (the module's forward and
// F::multi_head_attention_forward both land here).
std::tuple<Tensor, Tensor> mha_forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                       const Tensor& key_padding_mask, bool need_weights, const Tensor& attn_mask,
                                       bool average_attn_weights, bool is_causal, const MhaParams& p, const char* op) {
  EMBER_CHECK(query.defined() && key.defined() && value.defined(), "[", op, "] query, key and value must be defined");
  EMBER_CHECK(query.dim() == 3 || query.dim() == 2, "[", op, "] query must have 3 dims (batched) or 2 (unbatched), got ",
              query.sizes());
  EMBER_CHECK(key.dim() == query.dim() && value.dim() == query.dim(), "[", op,
              "] query, key and value must have the same number of dims, got query ", query.sizes(), ", key ",
              key.sizes(), ", value ", value.sizes());
  const bool unbatched = query.dim() == 2;
  const int64_t E = p.E, heads = p.heads, head_dim = E / heads;
  // Inputs stay in their own layout ([N, L, E] with batch_first, else [L, N, E]; unbatched
  // is [L, 1, E]); heads are laid out as PyTorch's [N * heads, L, head_dim] by one copy.
  const bool bf = p.batch_first && !unbatched;
  const bool self_attention = query.is_same(key) && key.is_same(value);
  Tensor q = unbatched ? query.unsqueeze(1) : query;
  Tensor k = self_attention ? q : unbatched ? key.unsqueeze(1) : key;
  Tensor v = self_attention ? q : unbatched ? value.unsqueeze(1) : value;
  const int64_t L = q.size(bf ? 1 : 0), N = q.size(bf ? 0 : 1);
  int64_t S = k.size(bf ? 1 : 0);
  EMBER_CHECK(q.size(2) == E, "[", op, "] query's feature size must be embed_dim=", E, ", got query of sizes ",
              query.sizes());
  EMBER_CHECK(k.size(2) == p.kdim && v.size(2) == p.vdim, "[", op, "] key and value feature sizes must be kdim=",
              p.kdim, " and vdim=", p.vdim, ", got key ", key.sizes(), " and value ", value.sizes());
  EMBER_CHECK(k.size(0) == v.size(0) && k.size(1) == v.size(1) && k.size(bf ? 0 : 1) == N, "[", op,
              "] key and value must have the same sequence length and batch size as each other and the query, got query ",
              query.sizes(), ", key ", key.sizes(), ", value ", value.sizes());
  // [.., .., parts * E] projection -> `parts` tensors [N * heads, len, head_dim].
  auto to_heads = [&](const Tensor& x, int64_t parts, int64_t len) {
    Tensor t = x.view({x.size(0), x.size(1), parts, heads, head_dim});
    t = bf ? t.permute({2, 0, 3, 1, 4}) : t.permute({2, 1, 3, 0, 4});  // [parts, N, heads, len, hd]
    return t.reshape({parts, N * heads, len, head_dim}).unbind(0);
  };

  // Input projections.
  Tensor bq, bk, bv;
  const Tensor& in_proj_weight = p.in_proj_weight;
  const Tensor& in_proj_bias = p.in_proj_bias;
  if (in_proj_bias.defined()) {
    std::vector<Tensor> b = in_proj_bias.chunk(3);
    bq = b[0], bk = b[1], bv = b[2];
  }
  if (self_attention && in_proj_weight.defined() && !p.static_k.defined() && !p.static_v.defined()) {
    std::vector<Tensor> qkv = to_heads(functional::linear(q, in_proj_weight, in_proj_bias), 3, L);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    Tensor wq, wk, wv;
    if (in_proj_weight.defined()) {
      std::vector<Tensor> w = in_proj_weight.chunk(3);
      wq = w[0], wk = w[1], wv = w[2];
    } else {
      wq = p.q_proj_weight, wk = p.k_proj_weight, wv = p.v_proj_weight;
    }
    q = to_heads(functional::linear(q, wq, bq), 1, L)[0];
    k = to_heads(functional::linear(k, wk, bk), 1, S)[0];
    v = to_heads(functional::linear(v, wv, bv), 1, S)[0];
  }
  // Precomputed keys/values replace the projected ones (F::multi_head_attention_forward).
  for (auto [given, target, what] : {std::tuple{&p.static_k, &k, "static_k"}, std::tuple{&p.static_v, &v, "static_v"}}) {
    if (!given->defined()) continue;
    EMBER_CHECK(given->dim() == 3 && given->size(0) == N * heads && given->size(2) == head_dim, "[", op, "] ", what,
                " must be [N * num_heads, S, head_dim] = [", N * heads, ", S, ", head_dim, "], got ", given->sizes());
    *target = *given;
  }
  EMBER_CHECK(k.size(1) == v.size(1), "[", op, "] keys and values have different lengths ", k.size(1), " and ",
              v.size(1));
  S = k.size(1);
  // Extra key/value rows: the learned bias_k / bias_v, then a row of zeros; masks get a
  // column that lets each through.
  int64_t extra = 0;
  if (p.bias_k.defined() || p.bias_v.defined()) {
    EMBER_CHECK(p.bias_k.defined() && p.bias_v.defined(), "[", op, "] bias_k and bias_v must be given together");
    EMBER_CHECK(!p.static_k.defined() && !p.static_v.defined(), "[", op,
                "] bias cannot be added to static key or value");
    EMBER_CHECK(p.bias_k.numel() == E && p.bias_v.numel() == E, "[", op, "] bias_k and bias_v must have embed_dim=", E,
                " values ([1, 1, E]), got ", p.bias_k.sizes(), " and ", p.bias_v.sizes());
    auto rows = [&](const Tensor& b) {
      return b.reshape({1, heads, 1, head_dim}).expand({N, heads, 1, head_dim}).reshape({N * heads, 1, head_dim});
    };
    k = cat({k, rows(p.bias_k)}, 1);
    v = cat({v, rows(p.bias_v)}, 1);
    ++extra;
  }
  if (p.add_zero_attn) {
    k = cat({k, zeros({N * heads, 1, head_dim}, TensorOptions(k.dtype()))}, 1);
    v = cat({v, zeros({N * heads, 1, head_dim}, TensorOptions(v.dtype()))}, 1);
    ++extra;
  }
  const int64_t S0 = S;  // the masks' key length
  S += extra;
  auto widen = [&](const Tensor& m) {
    if (extra == 0) return m;
    DimVector pad(m.sizes());
    pad.back() = extra;
    return cat({m, zeros(pad, TensorOptions(m.dtype()))}, -1);
  };

  // One additive mask [1 or N * heads, L or 1, S] from attn_mask, key_padding_mask, is_causal.
  Tensor mask;
  if (attn_mask.defined()) {
    if (attn_mask.dim() == 2) {
      EMBER_CHECK(attn_mask.size(0) == L && attn_mask.size(1) == S0, "[", op, "] 2-D attn_mask should be [L, S] = [", L,
                  ", ", S0, "], got ", attn_mask.sizes());
      mask = widen(additive_mask(attn_mask, q.dtype(), op, "attn_mask").unsqueeze(0));
    } else {
      EMBER_CHECK(attn_mask.dim() == 3 && attn_mask.size(0) == N * heads && attn_mask.size(1) == L &&
                      attn_mask.size(2) == S0,
                  "[", op, "] attn_mask should be [L, S] = [", L, ", ", S0, "] or [N * num_heads, L, S] = [", N * heads,
                  ", ", L, ", ", S0, "], got ", attn_mask.sizes());
      mask = widen(additive_mask(attn_mask, q.dtype(), op, "attn_mask"));
    }
  } else if (is_causal) {
    mask = widen(additive_mask(ones({L, S0}, TensorOptions(kBool)).triu(1), q.dtype(), op, "causal mask").unsqueeze(0));
  }
  if (key_padding_mask.defined()) {
    const std::vector<int64_t> want = unbatched ? std::vector<int64_t>{S0} : std::vector<int64_t>{N, S0};
    EMBER_CHECK(key_padding_mask.sizes().vec() == want, "[", op, "] key_padding_mask should be [N, S] = [", N, ", ",
                S0, "], got ", key_padding_mask.sizes());
    Tensor kpm = widen(additive_mask(key_padding_mask, q.dtype(), op, "key_padding_mask")
                           .reshape({N, 1, 1, S0})
                           .expand({N, heads, 1, S0})
                           .reshape({N * heads, 1, S0}));
    mask = mask.defined() ? mask + kpm : kpm;
  }

  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  Tensor scores;
  if (mask.defined()) {
    scores = baddbmm(mask.expand({N * heads, L, S}), q, k.transpose(1, 2), 1, scale);
  } else {
    scores = q.bmm(k.transpose(1, 2));
    scores.mul_(scale);  // bmm saves its inputs, not its output, so in place is safe
  }
  Tensor weights = scores.softmax(-1);
  if (p.dropout > 0) weights = functional::dropout(weights, p.dropout, true);
  // [N * heads, L, hd] -> the query's layout [.., .., E], then out_proj.
  Tensor out = weights.bmm(v).view({N, heads, L, head_dim});
  out = (bf ? out.permute({0, 2, 1, 3}) : out.permute({2, 0, 1, 3})).reshape({-1, E});
  out = functional::linear(out, p.out_proj_weight, p.out_proj_bias).view({bf ? N : L, bf ? L : N, E});
  if (unbatched) out = out.squeeze(1);

  Tensor avg;
  if (need_weights) {
    avg = weights.view({N, heads, L, S});
    if (average_attn_weights) avg = avg.sum({1}) / static_cast<double>(heads);
    if (unbatched) avg = avg.squeeze(0);
  }
  return {out, avg};
}

}  // namespace

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                           const Tensor& key_padding_mask, bool need_weights,
                                                           const Tensor& attn_mask, bool average_attn_weights,
                                                           bool is_causal) {
  OpScope scope("multi_head_attention", {&query, &key, &value, &key_padding_mask, &attn_mask});
  MhaParams p;
  p.E = options.embed_dim();
  p.heads = options.num_heads();
  p.kdim = options.kdim();
  p.vdim = options.vdim();
  p.in_proj_weight = in_proj_weight;
  p.q_proj_weight = q_proj_weight;
  p.k_proj_weight = k_proj_weight;
  p.v_proj_weight = v_proj_weight;
  p.in_proj_bias = in_proj_bias;
  p.bias_k = bias_k;
  p.bias_v = bias_v;
  p.add_zero_attn = options.add_zero_attn();
  p.dropout = is_training() ? options.dropout() : 0.0;
  p.out_proj_weight = out_proj->weight;
  p.out_proj_bias = out_proj->bias;
  p.batch_first = options.batch_first();
  return mha_forward(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal, p,
                     "nn.MultiheadAttention");
}

namespace functional {

std::tuple<Tensor, Tensor> multi_head_attention_forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                        const MultiheadAttentionForwardFuncOptions& o) {
  OpScope scope("multi_head_attention_forward", {&query, &key, &value});
  const char* op = "multi_head_attention_forward";
  MhaParams p;
  p.E = o.embed_dim_to_check();
  p.heads = o.num_heads();
  EMBER_CHECK(p.E > 0 && p.heads > 0 && p.E % p.heads == 0, "[", op,
              "] embed_dim must be positive and divisible by num_heads, got embed_dim=", p.E, " num_heads=", p.heads);
  EMBER_CHECK(query.defined() && key.defined() && value.defined(), "[", op, "] query, key and value must be defined");
  if (o.use_separate_proj_weight()) {
    EMBER_CHECK(o.q_proj_weight().defined() && o.k_proj_weight().defined() && o.v_proj_weight().defined(), "[", op,
                "] use_separate_proj_weight is true but q_proj_weight, k_proj_weight or v_proj_weight is undefined");
    p.q_proj_weight = o.q_proj_weight();
    p.k_proj_weight = o.k_proj_weight();
    p.v_proj_weight = o.v_proj_weight();
    p.kdim = p.k_proj_weight.size(-1);
    p.vdim = p.v_proj_weight.size(-1);
  } else {
    EMBER_CHECK(o.in_proj_weight().defined(), "[", op,
                "] in_proj_weight is undefined; pass it, or use_separate_proj_weight(true) with q/k/v_proj_weight");
    p.in_proj_weight = o.in_proj_weight();
    p.kdim = p.vdim = p.E;
  }
  p.in_proj_bias = o.in_proj_bias();
  p.bias_k = o.bias_k();
  p.bias_v = o.bias_v();
  p.add_zero_attn = o.add_zero_attn();
  p.dropout = o.training() ? o.dropout_p() : 0.0;
  p.out_proj_weight = o.out_proj_weight();
  p.out_proj_bias = o.out_proj_bias();
  p.static_k = o.static_k();
  p.static_v = o.static_v();
  return mha_forward(query, key, value, o.key_padding_mask(), o.need_weights(), o.attn_mask(),
                     o.average_attn_weights(), false, p, op);
}

}  // namespace functional

}  // namespace ember::nn
