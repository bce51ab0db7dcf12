#include "ember/nn/modules/transformer.h"

#include <sstream>

#include "ember/nn/modules/clone_dtype.h"

#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/ops/creation.h"

namespace ember::nn {

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options_)
    : Module("TransformerEncoderLayer"), options(options_) {
  EMBER_CHECK(options.activation() == "relu" || options.activation() == "gelu",
              "[nn.TransformerEncoderLayer] activation should be \"relu\" or \"gelu\", got \"", options.activation(),
              "\"");
  const int64_t d = options.d_model();
  self_attn = register_module("self_attn",
                              MultiheadAttention(MultiheadAttentionOptions(d, options.nhead())
                                                     .dropout(options.dropout())
                                                     .batch_first(options.batch_first())));
  linear1 = register_module("linear1", Linear(d, options.dim_feedforward()));
  dropout = register_module("dropout", Dropout(options.dropout()));
  linear2 = register_module("linear2", Linear(options.dim_feedforward(), d));
  norm1 = register_module("norm1", LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps())));
  norm2 = register_module("norm2", LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps())));
  dropout1 = register_module("dropout1", Dropout(options.dropout()));
  dropout2 = register_module("dropout2", Dropout(options.dropout()));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask, bool is_causal) {
  OpScope scope("transformer_encoder_layer", {&src, &src_mask, &src_key_padding_mask});
  auto sa_block = [&](const Tensor& x) {
    Tensor a = std::get<0>(self_attn->forward(x, x, x, src_key_padding_mask, /*need_weights=*/false, src_mask,
                                              /*average_attn_weights=*/true, is_causal && !src_mask.defined()));
    return dropout1(a);
  };
  auto ff_block = [&](const Tensor& x) {
    Tensor h = linear1(x);
    h = options.activation() == "gelu" ? h.gelu() : h.relu();
    return dropout2(linear2(dropout(h)));
  };
  Tensor x = src;
  if (options.norm_first()) {
    x = x + sa_block(norm1(x));
    x = x + ff_block(norm2(x));
  } else {
    x = norm1(x + sa_block(x));
    x = norm2(x + ff_block(x));
  }
  return x;
}

std::shared_ptr<Module> TransformerEncoderLayerImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<TransformerEncoderLayerImpl>(options);
  match_dtype(*this, *copy);
  clone_into(*copy);
  return copy;
}

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerEncoderLayer& layer, int64_t num_layers,
                                               std::shared_ptr<Module> norm_)
    : Module("TransformerEncoder") {
  EMBER_CHECK(num_layers >= 1, "[nn.TransformerEncoder] num_layers must be at least 1, got ", num_layers);
  layers = register_module("layers", ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) layers->push_back(layer->clone());
  if (norm_) norm = register_module("norm", std::move(norm_));
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                       bool is_causal) {
  OpScope scope("transformer_encoder", {&src, &mask, &src_key_padding_mask});
  Tensor x = src;
  for (const auto& m : *layers) {
    x = std::static_pointer_cast<TransformerEncoderLayerImpl>(m)->forward(x, mask, src_key_padding_mask, is_causal);
  }
  return norm ? (*norm)(x) : x;
}

}  // namespace ember::nn
