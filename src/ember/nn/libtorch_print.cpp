// libtorch's printing of the layers declared before the libtorch-parity ones
// (`torch::nn::Linear(in_features=3, out_features=4, bias=true)`): Module::pretty_print
// asks here first, so that those headers need no per-class override.

#include <ostream>

#include "ember/nn/loss.h"
#include "ember/nn/modules/activation.h"
#include "ember/nn/modules/batchnorm.h"
#include "ember/nn/modules/bilinear.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/embedding.h"
#include "ember/nn/modules/linear.h"
#include "ember/nn/modules/normalization.h"
#include "ember/nn/modules/pooling.h"
#include "ember/nn/modules/rnn.h"
#include "ember/nn/modules/attention.h"

namespace ember::nn::detail {

namespace {
const char* b(bool v) { return v ? "true" : "false"; }
void list(std::ostream& os, IntArrayRef v, size_t d) {
  if (d == 1) {
    os << (v.empty() ? 0 : v[0]);
    return;
  }
  os << "[";
  for (size_t i = 0; i < d; ++i) {
    const int64_t x = v.size() == d ? v[i] : v.empty() ? 0 : v[0];
    os << (i ? ", " : "");
    if (x < 0) {
      os << "None";  // an adaptive pool's kept dimension
    } else {
      os << x;
    }
  }
  os << "]";
}
template <typename T>
const T* as(const Module& m) {
  return dynamic_cast<const T*>(&m);
}
}  // namespace

// true when m is one of the layers below (and was printed).
bool print_builtin(std::ostream& os, const Module& m) {
  const auto cell = [&os](const char* name, const RNNCellOptions& o, bool has_nonlinearity) {
    os << "torch::nn::" << name << "(" << o.input_size() << ", " << o.hidden_size();
    if (!o.bias()) os << ", bias=false";
    if (has_nonlinearity && o.nonlinearity() != "tanh") os << ", nonlinearity=kReLU";
    os << ")";
  };
  const auto rnn = [&os](const char* name, const auto& o) {
    os << "torch::nn::" << name << "(input_size=" << o.input_size() << ", hidden_size=" << o.hidden_size()
       << ", num_layers=" << o.num_layers() << ", bias=" << b(o.bias()) << ", batch_first=" << b(o.batch_first())
       << ", dropout=" << o.dropout() << ", bidirectional=" << b(o.bidirectional()) << ")";
  };
  if (auto* p = as<RNNImpl>(m)) {
    rnn("RNN", p->options);
  } else if (auto* p = as<LSTMImpl>(m)) {
    rnn("LSTM", p->options);
  } else if (auto* p = as<GRUImpl>(m)) {
    rnn("GRU", p->options);
  } else if (auto* p = as<RNNCellImpl>(m)) {
    cell("RNNCell", p->options, true);
  } else if (auto* p = as<LSTMCellImpl>(m)) {
    cell("LSTMCell", p->options, false);
  } else if (auto* p = as<GRUCellImpl>(m)) {
    cell("GRUCell", p->options, false);
  } else if (as<MultiheadAttentionImpl>(m)) {
    os << "torch::nn::MultiheadAttention";
  } else if (auto* p = as<LinearImpl>(m)) {
    os << "torch::nn::Linear(in_features=" << p->options.in_features() << ", out_features=" << p->options.out_features()
       << ", bias=" << b(p->options.bias()) << ")";
  } else if (auto* p = as<BilinearImpl>(m)) {
    os << "torch::nn::Bilinear(in1_features=" << p->options.in1_features()
       << ", in2_features=" << p->options.in2_features() << ", out_features=" << p->options.out_features()
       << ", bias=" << b(p->options.bias()) << ")";
  } else if (as<IdentityImpl>(m)) {
    os << "torch::nn::Identity()";
  } else if (auto* p = as<FlattenImpl>(m)) {
    os << "torch::nn::Flatten(start_dim=" << p->options.start_dim() << ", end_dim=" << p->options.end_dim() << ")";
  } else if (auto* p = as<UnflattenImpl>(m)) {
    os << "torch::nn::Unflatten(dim=" << p->options.dim() << ", unflattened_size={";
    const auto& s = p->options.sizes();
    for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
    os << "})";
  } else if (auto* p = as<EmbeddingImpl>(m)) {
    const auto& o = p->options;
    os << "torch::nn::Embedding(num_embeddings=" << o.num_embeddings() << ", embedding_dim=" << o.embedding_dim();
    if (o.padding_idx()) os << ", padding_idx=" << *o.padding_idx();
    if (o.max_norm()) os << ", max_norm=" << *o.max_norm();
    if (o.norm_type() != 2) os << ", norm_type=" << o.norm_type();
    if (o.scale_grad_by_freq()) os << ", scale_grad_by_freq=" << b(o.scale_grad_by_freq());
    if (o.sparse()) os << ", sparse=" << b(o.sparse());
    os << ")";
  } else if (auto* p = as<DropoutImpl>(m)) {
    os << "torch::nn::Dropout(p=" << p->p << ", inplace=" << b(p->inplace) << ")";
  } else if (auto* p = as<ReLUImpl>(m)) {
    os << "torch::nn::ReLU(" << (p->options.inplace() ? "inplace=true" : "") << ")";
  } else if (as<SigmoidImpl>(m)) {
    os << "torch::nn::Sigmoid()";
  } else if (as<TanhImpl>(m)) {
    os << "torch::nn::Tanh()";
  } else if (as<SiLUImpl>(m)) {
    os << "torch::nn::SiLU()";
  } else if (as<GELUImpl>(m)) {
    os << "torch::nn::GELU()";
  } else if (auto* p = as<LeakyReLUImpl>(m)) {
    os << "torch::nn::LeakyReLU(negative_slope=" << p->negative_slope << (p->inplace ? ", inplace=true" : "") << ")";
  } else if (auto* p = as<SoftmaxImpl>(m)) {
    os << "torch::nn::Softmax(dim=" << p->dim << ")";
  } else if (auto* p = as<LogSoftmaxImpl>(m)) {
    os << "torch::nn::LogSoftmax(dim=" << p->dim << ")";
  } else if (auto* p = as<BatchNormImplBase>(m)) {
    const auto& o = p->options;
    os << "torch::nn::" << m.name() << "(" << o.num_features() << ", eps=" << o.eps() << ", momentum=";
    if (o.momentum()) {
      os << *o.momentum();
    } else {
      os << "None";
    }
    os << ", affine=" << b(o.affine()) << ", track_running_stats=" << b(o.track_running_stats()) << ")";
  } else if (auto* p = as<LayerNormImpl>(m)) {
    const auto& o = p->options;
    os << "torch::nn::LayerNorm([";
    for (size_t i = 0; i < o.normalized_shape().size(); ++i) os << (i ? ", " : "") << o.normalized_shape()[i];
    os << "], eps=" << o.eps() << ", elementwise_affine=" << b(o.elementwise_affine()) << ")";
  } else if (auto* p = as<GroupNormImpl>(m)) {
    const auto& o = p->options;
    os << "torch::nn::GroupNorm(" << o.num_groups() << ", " << o.num_channels() << ", eps=" << o.eps()
       << ", affine=" << b(o.affine()) << ")";
  } else if (auto* p = as<MaxPool1dImpl>(m)) {
    const auto& o = p->options;
    os << "torch::nn::MaxPool1d(kernel_size=";
    list(os, o.kernel_size(), 1);
    os << ", stride=";
    list(os, o.stride().empty() ? o.kernel_size() : o.stride(), 1);
    os << ", padding=";
    list(os, o.padding(), 1);
    os << ", dilation=";
    list(os, o.dilation(), 1);
    os << ", ceil_mode=" << b(o.ceil_mode()) << ")";
  } else if (auto* p = as<MaxPool2dImpl>(m)) {
    const auto& o = p->options;
    os << "torch::nn::MaxPool2d(kernel_size=";
    list(os, o.kernel_size(), 2);
    os << ", stride=";
    list(os, o.stride().empty() ? o.kernel_size() : o.stride(), 2);
    os << ", padding=";
    list(os, o.padding(), 2);
    os << ", dilation=";
    list(os, o.dilation(), 2);
    os << ", ceil_mode=" << b(o.ceil_mode()) << ")";
  } else if (auto* p = as<AvgPool1dImpl>(m)) {
    const auto& o = p->options;
    os << "torch::nn::AvgPool1d(kernel_size=";
    list(os, o.kernel_size(), 1);
    os << ", stride=";
    list(os, o.stride().empty() ? o.kernel_size() : o.stride(), 1);
    os << ", padding=";
    list(os, o.padding(), 1);
    os << ")";
  } else if (auto* p = as<AvgPool2dImpl>(m)) {
    const auto& o = p->options;
    os << "torch::nn::AvgPool2d(kernel_size=";
    list(os, o.kernel_size(), 2);
    os << ", stride=";
    list(os, o.stride().empty() ? o.kernel_size() : o.stride(), 2);
    os << ", padding=";
    list(os, o.padding(), 2);
    os << ")";
  } else if (auto* p = as<AdaptiveAvgPool2dImpl>(m)) {
    os << "torch::nn::AdaptiveAvgPool2d(output_size=";
    list(os, p->options.output_size(), 2);
    os << ")";
  } else if (as<SequentialImpl>(m) || as<ModuleListImpl>(m) || as<ModuleDictImpl>(m)) {
    os << "torch::nn::" << m.name();
  } else if (as<LossModule>(m)) {
    os << "torch::nn::" << m.name() << "()";
  } else {
    return false;
  }
  return true;
}

}  // namespace ember::nn::detail
