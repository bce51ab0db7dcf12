#pragma once
// MultiheadAttention as torch.nn.MultiheadAttention (PyTorch's parameter names, init and
// mask conventions). The functional scaled_dot_product_attention is in nn/functional.h.
//
//   nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(256, 8).batch_first(true));
//   auto [out, weights] = mha->forward(x, x, x);   // x: [N, L, 256]; weights: [N, L, L]

#include <tuple>
#include <utility>

#include "ember/nn/module.h"
#include "ember/nn/modules/any.h"
#include "ember/nn/modules/linear.h"
#include "ember/nn/options.h"

namespace ember::nn {

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads), kdim_(embed_dim), vdim_(embed_dim) {}
  // Dropout probability on the attention weights (training only).
  MultiheadAttentionOptions& dropout(double v) {
    dropout_ = v;
    return *this;
  }
  // in_proj_bias and out_proj.bias.
  MultiheadAttentionOptions& bias(bool v) {
    bias_ = v;
    return *this;
  }
  // Feature sizes of key and value (default embed_dim); when either differs, the
  // projections are separate parameters q_proj_weight, k_proj_weight, v_proj_weight.
  MultiheadAttentionOptions& kdim(int64_t v) {
    kdim_ = v;
    return *this;
  }
  MultiheadAttentionOptions& vdim(int64_t v) {
    vdim_ = v;
    return *this;
  }
  // Inputs and output as [N, L, E] instead of [L, N, E].
  MultiheadAttentionOptions& batch_first(bool v) {
    batch_first_ = v;
    return *this;
  }
  // Learned key/value rows appended to every sequence (bias_k, bias_v [1, 1, E]).
  MultiheadAttentionOptions& add_bias_kv(bool v) {
    add_bias_kv_ = v;
    return *this;
  }
  // A row of zeros appended to the keys and values of every head.
  MultiheadAttentionOptions& add_zero_attn(bool v) {
    add_zero_attn_ = v;
    return *this;
  }
  bool add_bias_kv() const { return add_bias_kv_; }
  bool add_zero_attn() const { return add_zero_attn_; }
  int64_t embed_dim() const { return embed_dim_; }
  int64_t num_heads() const { return num_heads_; }
  double dropout() const { return dropout_; }
  bool bias() const { return bias_; }
  int64_t kdim() const { return kdim_; }
  int64_t vdim() const { return vdim_; }
  bool batch_first() const { return batch_first_; }

 private:
  int64_t embed_dim_, num_heads_, kdim_, vdim_;
  double dropout_ = 0.0;
  bool bias_ = true, batch_first_ = false, add_bias_kv_ = false, add_zero_attn_ = false;
};

namespace functional {
// libtorch's F::multi_head_attention_forward: the whole of MultiheadAttention's forward on
// given parameters ([L, N, E] layout). Constructor arguments in libtorch's order.
struct MultiheadAttentionForwardFuncOptions {
  MultiheadAttentionForwardFuncOptions(int64_t embed_dim_to_check, int64_t num_heads, Tensor in_proj_weight,
                                       Tensor in_proj_bias, Tensor bias_k, Tensor bias_v, bool add_zero_attn,
                                       double dropout_p, Tensor out_proj_weight, Tensor out_proj_bias)
      : embed_dim_to_check_(embed_dim_to_check), num_heads_(num_heads), in_proj_weight_(std::move(in_proj_weight)),
        in_proj_bias_(std::move(in_proj_bias)), bias_k_(std::move(bias_k)), bias_v_(std::move(bias_v)),
        add_zero_attn_(add_zero_attn), dropout_p_(dropout_p), out_proj_weight_(std::move(out_proj_weight)),
        out_proj_bias_(std::move(out_proj_bias)) {}
  EMBER_NN_ARG(int64_t, embed_dim_to_check);
  EMBER_NN_ARG(int64_t, num_heads);
  EMBER_NN_ARG(Tensor, in_proj_weight);
  EMBER_NN_ARG(Tensor, in_proj_bias);
  EMBER_NN_ARG(Tensor, bias_k);
  EMBER_NN_ARG(Tensor, bias_v);
  EMBER_NN_ARG(bool, add_zero_attn);
  EMBER_NN_ARG(double, dropout_p);
  EMBER_NN_ARG(Tensor, out_proj_weight);
  EMBER_NN_ARG(Tensor, out_proj_bias);
  EMBER_NN_ARG(bool, training) = true;
  EMBER_NN_ARG(Tensor, key_padding_mask);
  EMBER_NN_ARG(bool, need_weights) = true;
  EMBER_NN_ARG(Tensor, attn_mask);
  EMBER_NN_ARG(bool, use_separate_proj_weight) = false;
  EMBER_NN_ARG(Tensor, q_proj_weight);
  EMBER_NN_ARG(Tensor, k_proj_weight);
  EMBER_NN_ARG(Tensor, v_proj_weight);
  // Precomputed keys/values [N * num_heads, S, head_dim] used instead of projecting key/value.
  EMBER_NN_ARG(Tensor, static_k);
  EMBER_NN_ARG(Tensor, static_v);
  EMBER_NN_ARG(bool, average_attn_weights) = true;
};
std::tuple<Tensor, Tensor> multi_head_attention_forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                        const MultiheadAttentionForwardFuncOptions& options);
}  // namespace functional

// Attention over num_heads heads of embed_dim / num_heads features each, then out_proj.
// Parameters: in_proj_weight [3E, E] (xavier_uniform_), in_proj_bias [3E] (zeros),
// out_proj.weight [E, E], out_proj.bias [E] (zeros); or q/k/v_proj_weight when kdim or
// vdim differ from embed_dim; bias_k / bias_v [1, 1, E] (normal init) with add_bias_kv.
class MultiheadAttentionImpl : public Module {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);

  // query [L, N, E], key [S, N, kdim], value [S, N, vdim] ([N, ...] first with batch_first;
  // unbatched [L, E] ... also accepted). Returns (attn_output [L, N, E], attn_weights):
  // weights [N, L, S] averaged over heads (average_attn_weights) or [N, heads, L, S];
  // undefined when need_weights is false.
  // Masks: key_padding_mask [N, S]; attn_mask [L, S] or [N * heads, L, S]. A bool mask
  // marks positions to ignore with true; a float mask is added to the scores. is_causal
  // with no attn_mask applies the causal mask (position i sees keys j <= i).
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = true,
                                     const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                     bool is_causal = false);
  std::tuple<Tensor, Tensor> operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                        const Tensor& key_padding_mask = {}, bool need_weights = true,
                                        const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                        bool is_causal = false) {
    return forward(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal);
  }
  EMBER_FORWARD_HAS_DEFAULT_ARGS({3, AnyValue(Tensor())}, {4, AnyValue(true)}, {5, AnyValue(Tensor())},
                                 {6, AnyValue(true)}, {7, AnyValue(false)})
 public:
  // xavier_uniform_ on the input projections, zeros on the biases (out_proj.weight keeps
  // Linear's init, as in PyTorch).
  void reset_parameters();
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;

  MultiheadAttentionOptions options;
  Tensor in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias, bias_k, bias_v;
  Linear out_proj{nullptr};
  int64_t head_dim;
  // Whether key and value have embed_dim features (one in_proj_weight) - libtorch's name.
  bool _qkv_same_embed_dim = true;
};
EMBER_MODULE(MultiheadAttention);

}  // namespace ember::nn
