#pragma once
// MultiheadAttention as torch.nn.MultiheadAttention (PyTorch's parameter names, init and
// mask conventions). The functional scaled_dot_product_attention is in nn/functional.h.
//
//   nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(256, 8).batch_first(true));
//   auto [out, weights] = mha->forward(x, x, x);   // x: [N, L, 256]; weights: [N, L, L]

#include <tuple>

#include "ember/nn/module.h"
#include "ember/nn/modules/linear.h"

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
  bool bias_ = true, batch_first_ = false;
};

// Attention over num_heads heads of embed_dim / num_heads features each, then out_proj.
// Parameters: in_proj_weight [3E, E] (xavier_uniform_), in_proj_bias [3E] (zeros),
// out_proj.weight [E, E], out_proj.bias [E] (zeros); or q/k/v_proj_weight when kdim or
// vdim differ from embed_dim. add_bias_kv / add_zero_attn are not supported.
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
  // xavier_uniform_ on the input projections, zeros on the biases (out_proj.weight keeps
  // Linear's init, as in PyTorch).
  void reset_parameters();
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;

  MultiheadAttentionOptions options;
  Tensor in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias;
  Linear out_proj{nullptr};
  int64_t head_dim;
};
EMBER_MODULE(MultiheadAttention);

}  // namespace ember::nn
