#pragma once
// TransformerEncoderLayer and TransformerEncoder as torch.nn (submodule names self_attn,
// linear1, dropout, linear2, norm1, norm2, dropout1, dropout2; layers.0. ... for the encoder).

#include <string>

#include "ember/nn/module.h"
#include "ember/nn/modules/activation.h"
#include "ember/nn/modules/attention.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/linear.h"
#include "ember/nn/modules/normalization.h"

namespace ember::nn {

struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
#define EMBER_OPTION(type, name)                       \
  TransformerEncoderLayerOptions& name(type v) {       \
    name##_ = std::move(v);                            \
    return *this;                                      \
  }                                                    \
  const type& name() const { return name##_; }
  EMBER_OPTION(int64_t, dim_feedforward)
  EMBER_OPTION(double, dropout)
  // "relu" (default) or "gelu".
  EMBER_OPTION(std::string, activation)
  EMBER_OPTION(double, layer_norm_eps)
  // Inputs as [N, S, E] instead of [S, N, E].
  EMBER_OPTION(bool, batch_first)
  // Pre-norm: x + sa(norm1(x)), x + ff(norm2(x)); otherwise post-norm norm1(x + sa(x)) ...
  EMBER_OPTION(bool, norm_first)
#undef EMBER_OPTION
  int64_t d_model() const { return d_model_; }
  int64_t nhead() const { return nhead_; }

 private:
  int64_t d_model_, nhead_;
  int64_t dim_feedforward_ = 2048;
  double dropout_ = 0.1;
  std::string activation_ = "relu";
  double layer_norm_eps_ = 1e-5;
  bool batch_first_ = false, norm_first_ = false;
};

// Self-attention then a feed-forward block (linear1 -> activation -> dropout -> linear2),
// each with a residual connection and layer norm. forward(src, src_mask,
// src_key_padding_mask, is_causal): masks as MultiheadAttention's attn_mask / key_padding_mask.
class TransformerEncoderLayerImpl : public Module {
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options);
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward(src, {}, {}, false); }
  Tensor operator()(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {},
                    bool is_causal = false) {
    return forward(src, src_mask, src_key_padding_mask, is_causal);
  }
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;

  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr};
};
EMBER_MODULE(TransformerEncoderLayer);

// num_layers deep copies of `layer` (layers.0, layers.1, ...), run in order; an optional
// final norm (e.g. for pre-norm stacks) is the submodule "norm".
class TransformerEncoderImpl : public Module {
 public:
  TransformerEncoderImpl(const TransformerEncoderLayer& layer, int64_t num_layers,
                         std::shared_ptr<Module> norm = nullptr);
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward(src, {}, {}, false); }
  Tensor operator()(const Tensor& src, const Tensor& mask = {}, const Tensor& src_key_padding_mask = {},
                    bool is_causal = false) {
    return forward(src, mask, src_key_padding_mask, is_causal);
  }
  ModuleList layers{nullptr};
  std::shared_ptr<Module> norm;
};
EMBER_MODULE(TransformerEncoder);

}  // namespace ember::nn
