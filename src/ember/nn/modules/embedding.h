#pragma once
// Embedding (torch.nn.Embedding): a lookup table of num_embeddings rows of embedding_dim.

#include <optional>

#include "ember/nn/module.h"

namespace ember::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  // A row that gets no gradient and starts at zero (negative counts from the end).
  EmbeddingOptions& padding_idx(std::optional<int64_t> v) {
    padding_idx_ = v;
    return *this;
  }
  // Rows read with a norm_type-norm above max_norm are rescaled to max_norm, in place.
  EmbeddingOptions& max_norm(std::optional<double> v) {
    max_norm_ = v;
    return *this;
  }
  EmbeddingOptions& norm_type(double v) {
    norm_type_ = v;
    return *this;
  }
  // Each row's gradient is divided by how often its index occurs in the batch.
  EmbeddingOptions& scale_grad_by_freq(bool v) {
    scale_grad_by_freq_ = v;
    return *this;
  }
  // Accepted for libtorch compatibility: ember has no sparse tensors, so the weight's
  // gradient is dense either way (the optimizers treat it the same).
  EmbeddingOptions& sparse(bool v) {
    sparse_ = v;
    return *this;
  }
  bool scale_grad_by_freq() const { return scale_grad_by_freq_; }
  bool sparse() const { return sparse_; }
  int64_t num_embeddings() const { return num_embeddings_; }
  int64_t embedding_dim() const { return embedding_dim_; }
  std::optional<int64_t> padding_idx() const { return padding_idx_; }
  std::optional<double> max_norm() const { return max_norm_; }
  double norm_type() const { return norm_type_; }

 private:
  int64_t num_embeddings_, embedding_dim_;
  std::optional<int64_t> padding_idx_;
  std::optional<double> max_norm_;
  double norm_type_ = 2.0;
  bool scale_grad_by_freq_ = false, sparse_ = false;
};

struct EmbeddingFromPretrainedOptions {
  EmbeddingFromPretrainedOptions& freeze(bool v) {
    freeze_ = v;
    return *this;
  }
  EmbeddingFromPretrainedOptions& padding_idx(std::optional<int64_t> v) {
    padding_idx_ = v;
    return *this;
  }
  EmbeddingFromPretrainedOptions& max_norm(std::optional<double> v) {
    max_norm_ = v;
    return *this;
  }
  EmbeddingFromPretrainedOptions& norm_type(double v) {
    norm_type_ = v;
    return *this;
  }
  // Each row's gradient is divided by how often its index occurs in the batch.
  EmbeddingFromPretrainedOptions& scale_grad_by_freq(bool v) {
    scale_grad_by_freq_ = v;
    return *this;
  }
  // Accepted for libtorch compatibility: ember has no sparse tensors, so the weight's
  // gradient is dense either way (the optimizers treat it the same).
  EmbeddingFromPretrainedOptions& sparse(bool v) {
    sparse_ = v;
    return *this;
  }
  bool scale_grad_by_freq() const { return scale_grad_by_freq_; }
  bool sparse() const { return sparse_; }
  bool freeze() const { return freeze_; }
  std::optional<int64_t> padding_idx() const { return padding_idx_; }
  std::optional<double> max_norm() const { return max_norm_; }
  double norm_type() const { return norm_type_; }

 private:
  bool freeze_ = true;
  std::optional<int64_t> padding_idx_;
  std::optional<double> max_norm_;
  double norm_type_ = 2.0;
  bool scale_grad_by_freq_ = false, sparse_ = false;
};

// weight [num_embeddings, embedding_dim] drawn from N(0, 1), the padding row zeroed.
// forward(indices) returns indices.sizes() + [embedding_dim].
class EmbeddingImpl : public Cloneable<EmbeddingImpl> {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(const EmbeddingOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  EmbeddingOptions options;  // padding_idx is stored non-negative
  Tensor weight;
};

class Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder<EmbeddingImpl>::ModuleHolder;
  // An Embedding whose weight is a copy of `embeddings` (2-d); freeze (the default)
  // turns its gradient off.
  static Embedding from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options = {});
};

}  // namespace ember::nn
