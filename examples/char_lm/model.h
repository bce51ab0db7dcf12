#pragma once
// The char_lm model: a small decoder-only transformer (GPT-style, pre-norm). Token and
// position embeddings, `layers` blocks of causal multi-head self-attention and a GELU MLP,
// each behind a LayerNorm with a residual connection, a final LayerNorm, and logits from
// the token embedding matrix (weight tying). Shared by examples/char_lm and bench/char_lm.
//
// Generation keeps each layer's keys and values (KVCache), so a new token costs one
// position's work instead of re-running the whole prefix.

#include <ember/ember.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace char_lm {

namespace nn = ember::nn;
using ember::Tensor;

struct Config {
  int64_t vocab = 0;
  int64_t block = 128;  // context length
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t dim = 128;
  double dropout = 0.0;
};

// Keys and values of every layer: [B, heads, block, head_dim] each, valid up to `length`.
struct KVCache {
  std::vector<Tensor> k, v;
  int64_t length = 0;
};

class BlockImpl : public nn::Module {
 public:
  BlockImpl(const Config& c) : nn::Module("Block"), heads_(c.heads), dropout_(c.dropout) {
    ln_1 = register_module("ln_1", nn::LayerNorm(std::vector<int64_t>{c.dim}));
    c_attn = register_module("c_attn", nn::Linear(c.dim, 3 * c.dim));
    attn_proj = register_module("attn_proj", nn::Linear(c.dim, c.dim));
    ln_2 = register_module("ln_2", nn::LayerNorm(std::vector<int64_t>{c.dim}));
    c_fc = register_module("c_fc", nn::Linear(c.dim, 4 * c.dim));
    mlp_proj = register_module("mlp_proj", nn::Linear(4 * c.dim, c.dim));
    drop = register_module("drop", nn::Dropout(c.dropout));
  }

  // x [B, T, C] -> [B, T, C]. With a cache, x holds the positions from cache->length on
  // (the whole prompt when the cache is empty, else one token), and their keys and values
  // are appended to layer `layer`'s slots.
  Tensor forward(const Tensor& x, KVCache* cache = nullptr, size_t layer = 0) {
    Tensor a = attention(ln_1(x), cache, layer);
    Tensor h = x + drop(attn_proj(a));
    return h + drop(mlp_proj(c_fc(ln_2(h)).gelu()));
  }

  nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  nn::Linear c_attn{nullptr}, attn_proj{nullptr}, c_fc{nullptr}, mlp_proj{nullptr};
  nn::Dropout drop{nullptr};

 private:
  Tensor attention(const Tensor& x, KVCache* cache, size_t layer) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hd = C / heads_;
    std::vector<Tensor> qkv = c_attn(x).chunk(3, -1);
    auto heads = [&](const Tensor& t) { return t.reshape({B, T, heads_, hd}).transpose(1, 2); };  // [B, H, T, hd]
    Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
    bool causal = true;
    if (cache) {
      const int64_t start = cache->length;
      cache->k[layer].narrow(2, start, T).copy_(k);
      cache->v[layer].narrow(2, start, T).copy_(v);
      k = cache->k[layer].narrow(2, 0, start + T);
      v = cache->v[layer].narrow(2, 0, start + T);
      causal = T > 1;  // a prompt fills an empty cache; one new token sees every cached position
    }
    const double p = is_training() ? dropout_ : 0.0;
    Tensor y = nn::functional::scaled_dot_product_attention(q, k, v, {}, p, causal);
    return y.transpose(1, 2).reshape({B, T, C});
  }

  int64_t heads_;
  double dropout_;
};
EMBER_MODULE(Block);

class TransformerImpl : public nn::Module {
 public:
  explicit TransformerImpl(const Config& c) : nn::Module("CharTransformer"), config(c) {
    wte = register_module("wte", nn::Embedding(c.vocab, c.dim));
    wpe = register_parameter("wpe", ember::zeros({c.block, c.dim}));
    blocks = register_module("blocks", nn::ModuleList());
    for (int64_t i = 0; i < c.layers; ++i) blocks->push_back(Block(c));
    ln_f = register_module("ln_f", nn::LayerNorm(std::vector<int64_t>{c.dim}));
    drop = register_module("drop", nn::Dropout(c.dropout));
    // GPT-2's init: N(0, 0.02) weights, zero biases, residual projections scaled by
    // 1/sqrt(2 * layers) so the residual stream's variance does not grow with depth.
    ember::NoGradGuard no_grad;
    for (auto& item : named_parameters()) {
      const std::string& name = item.key();
      Tensor p = item.value();
      if (p.dim() < 2) continue;  // biases and LayerNorm affine keep their init
      const bool residual =
          name.find("attn_proj.weight") != std::string::npos || name.find("mlp_proj.weight") != std::string::npos;
      nn::init::normal_(p, 0.0, residual ? 0.02 / std::sqrt(2.0 * static_cast<double>(c.layers)) : 0.02);
    }
    for (auto& item : named_parameters()) {
      if (item.key().size() > 5 && item.key().compare(item.key().size() - 5, 5, ".bias") == 0) {
        nn::init::zeros_(item.value());
      }
    }
  }

  // idx [B, T] int64 token ids -> logits [B, T, vocab]. With a cache, idx continues the
  // cached sequence (positions cache->length ...), and the cache grows by T.
  Tensor forward(const Tensor& idx, KVCache* cache = nullptr) {
    const int64_t T = idx.size(1), start = cache ? cache->length : 0;
    Tensor x = drop(wte(idx) + wpe.narrow(0, start, T));
    for (size_t i = 0; i < blocks->size(); ++i) x = blocks->at<BlockImpl>(i).forward(x, cache, i);
    if (cache) cache->length += T;
    return nn::functional::linear(ln_f(x), wte->weight);  // tied: the embedding matrix reads out
  }

  // An empty cache for `batch` sequences of up to config.block positions.
  KVCache make_cache(int64_t batch) const {
    KVCache c;
    const int64_t hd = config.dim / config.heads;
    for (int64_t i = 0; i < config.layers; ++i) {
      c.k.push_back(ember::zeros({batch, config.heads, config.block, hd}));
      c.v.push_back(ember::zeros({batch, config.heads, config.block, hd}));
    }
    return c;
  }

  Config config;
  nn::Embedding wte{nullptr};
  Tensor wpe;
  nn::ModuleList blocks{nullptr};
  nn::LayerNorm ln_f{nullptr};
  nn::Dropout drop{nullptr};
};
EMBER_MODULE(Transformer);

// Cross-entropy of next-token prediction, nats per token.
inline Tensor lm_loss(Transformer& model, const Tensor& x, const Tensor& y) {
  Tensor logits = model->forward(x);
  const int64_t V = logits.size(-1);
  return nn::functional::cross_entropy(logits.reshape({-1, V}), y.reshape({-1}));
}

// AdamW groups as GPT training does: weight decay on matrices (dim >= 2: linear weights,
// embeddings), none on biases and LayerNorm gains.
inline std::vector<ember::optim::OptimizerParamGroup> adamw_groups(nn::Module& model, double weight_decay) {
  std::vector<Tensor> decay, no_decay;
  for (const Tensor& p : model.parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  std::vector<ember::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, ember::optim::AdamWOptions().weight_decay(weight_decay));
  groups.emplace_back(no_decay, ember::optim::AdamWOptions().weight_decay(0.0));
  return groups;
}

// Draws a token id from logits [V] (float32): divide by temperature, keep the top_k
// largest (0: all), softmax, sample.
inline int64_t sample_token(const Tensor& logits, double temperature, int64_t top_k, std::mt19937_64& rng) {
  const Tensor l = logits.contiguous();
  const float* p = l.data_ptr<float>();
  std::vector<double> z(p, p + l.numel());
  if (temperature <= 0) return std::max_element(z.begin(), z.end()) - z.begin();  // greedy
  double threshold = -INFINITY;
  if (top_k > 0 && top_k < static_cast<int64_t>(z.size())) {
    std::vector<double> sorted = z;
    std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<double>());
    threshold = sorted[static_cast<size_t>(top_k - 1)];
  }
  const double top = *std::max_element(z.begin(), z.end());
  for (double& v : z) v = v < threshold ? 0.0 : std::exp((v - top) / temperature);
  std::discrete_distribution<int64_t> pick(z.begin(), z.end());
  return pick(rng);
}

// Generates n tokens after `prompt` (non-empty) with a KV cache: the prompt is run once, then
// each new token costs one position. When the context is full, the cache is refilled from the
// last half of the context (positions are absolute, so a cache cannot simply slide).
inline std::vector<int64_t> generate(Transformer& model, const std::vector<int64_t>& prompt, int64_t n,
                                     double temperature, int64_t top_k, std::mt19937_64& rng) {
  ember::InferenceMode inference;
  nn::EvalScope eval(model);
  const int64_t block = model->config.block;
  std::vector<int64_t> out(prompt);
  KVCache cache = model->make_cache(1);
  auto run = [&](std::vector<int64_t> ids) {
    return model->forward(ember::tensor(ids).reshape({1, static_cast<int64_t>(ids.size())}), &cache);
  };
  const int64_t keep = std::min<int64_t>(static_cast<int64_t>(prompt.size()), block);
  Tensor logits = run(std::vector<int64_t>(out.end() - keep, out.end()));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t next = sample_token(logits.select(1, logits.size(1) - 1).select(0, 0), temperature, top_k, rng);
    out.push_back(next);
    if (cache.length == block) {
      cache.length = 0;
      logits = run(std::vector<int64_t>(out.end() - block / 2, out.end()));
    } else {
      logits = run({next});
    }
  }
  return out;
}

}  // namespace char_lm
