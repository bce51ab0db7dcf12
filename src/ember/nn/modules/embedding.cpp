#include "ember/nn/modules/embedding.h"

#include <sstream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_extra.h"
#include "ember/nn/init.h"
#include "ember/ops/creation.h"

namespace ember::nn {

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options_) : Cloneable("Embedding"), options(options_) {
  const int64_t num = options.num_embeddings();
  EMBER_CHECK(num >= 0 && options.embedding_dim() >= 0, "[nn.Embedding] num_embeddings and embedding_dim must be "
              "non-negative, got ", num, " and ", options.embedding_dim());
  if (auto p = options.padding_idx()) {
    EMBER_CHECK(*p >= -num && *p < num, "[nn.Embedding] padding_idx=", *p, " must be within [", -num, ", ", num,
                ") for num_embeddings=", num);
    if (*p < 0) options.padding_idx(*p + num);
  }
  reset();
}

void EmbeddingImpl::reset() {
  weight = register_parameter("weight", empty({options.num_embeddings(), options.embedding_dim()}));
  reset_parameters();
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (auto p = options.padding_idx()) {
    NoGradGuard no_grad;
    weight.select(0, *p).zero_();
  }
}

Tensor EmbeddingImpl::forward(const Tensor& input) {
  return functional::embedding(input, weight,
                               functional::EmbeddingFuncOptions()
                                   .padding_idx(options.padding_idx())
                                   .max_norm(options.max_norm())
                                   .norm_type(options.norm_type())
                                   .scale_grad_by_freq(options.scale_grad_by_freq())
                                   .sparse(options.sparse()));
}

std::string EmbeddingImpl::extra_repr() const {
  std::ostringstream os;
  os << options.num_embeddings() << ", " << options.embedding_dim();
  if (options.padding_idx()) os << ", padding_idx=" << *options.padding_idx();
  if (options.max_norm()) os << ", max_norm=" << *options.max_norm();
  if (options.norm_type() != 2.0) os << ", norm_type=" << options.norm_type();
  if (options.scale_grad_by_freq()) os << ", scale_grad_by_freq=True";
  if (options.sparse()) os << ", sparse=True";
  return os.str();
}

Embedding Embedding::from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options) {
  EMBER_CHECK(embeddings.defined() && embeddings.dim() == 2,
              "[nn.Embedding.from_pretrained] embeddings must be a 2-d tensor [num_embeddings, embedding_dim]");
  Embedding e(EmbeddingOptions(embeddings.size(0), embeddings.size(1))
                  .padding_idx(options.padding_idx())
                  .max_norm(options.max_norm())
                  .norm_type(options.norm_type())
                  .scale_grad_by_freq(options.scale_grad_by_freq())
                  .sparse(options.sparse()));
  {
    NoGradGuard no_grad;
    e->weight.copy_(embeddings);
  }
  e->weight.requires_grad_(!options.freeze());
  return e;
}

}  // namespace ember::nn
