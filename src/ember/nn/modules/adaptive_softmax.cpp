// AdaptiveLogSoftmaxWithLoss (Grave et al., "Efficient softmax approximation for GPUs"):
// frequent classes get a full softmax in the head; rarer classes are split into clusters,
// each a token of the head followed by a smaller softmax over a low-rank projection.

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/nn/modules/extra.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"

namespace ember::nn {

AdaptiveLogSoftmaxWithLossImpl::AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions options_)
    : Cloneable("AdaptiveLogSoftmaxWithLoss"), options(std::move(options_)) {
  reset();
}

void AdaptiveLogSoftmaxWithLossImpl::reset() {
  const auto& c = options.cutoffs();
  const int64_t n_classes = options.n_classes();
  bool ok = !c.empty();
  for (size_t i = 0; i < c.size(); ++i) {
    ok = ok && c[i] > 0 && c[i] <= n_classes - 1 && (i == 0 || c[i] > c[i - 1]);
  }
  EMBER_CHECK(ok, "[nn.AdaptiveLogSoftmaxWithLoss] cutoffs should be a sequence of unique, positive integers sorted in "
                  "an increasing order, where each value is between 1 and n_classes-1 (n_classes = ",
              n_classes, ")");
  EMBER_CHECK(options.in_features() > 0, "[nn.AdaptiveLogSoftmaxWithLoss] in_features must be positive, got ",
              options.in_features());
  cutoffs = c;
  cutoffs.push_back(n_classes);
  shortlist_size = cutoffs[0];
  n_clusters = static_cast<int64_t>(cutoffs.size()) - 1;
  head_size = shortlist_size + n_clusters;
  // reset() also runs on a copy being cloned, whose children exist already.
  const bool again = named_children().contains("head");
  Linear new_head(LinearOptions(options.in_features(), head_size).bias(options.head_bias()));
  head = again ? replace_module("head", new_head) : register_module("head", new_head);
  tail = again ? replace_module("tail", ModuleList()) : register_module("tail", ModuleList());
  for (int64_t i = 0; i < n_clusters; ++i) {
    const auto hsz = static_cast<int64_t>(
        std::floor(static_cast<double>(options.in_features()) / std::pow(options.div_value(), static_cast<double>(i + 1))));
    const int64_t osz = cutoffs[static_cast<size_t>(i + 1)] - cutoffs[static_cast<size_t>(i)];
    tail->push_back(Sequential(Linear(LinearOptions(options.in_features(), hsz).bias(false)),
                               Linear(LinearOptions(hsz, osz).bias(false))));
  }
}

void AdaptiveLogSoftmaxWithLossImpl::reset_parameters() {
  head->reset_parameters();
  for (const auto& m : *tail) {
    for (const auto& child : m->children()) {
      if (auto* lin = child->as<LinearImpl>()) lin->reset_parameters();
    }
  }
}

ASMoutput AdaptiveLogSoftmaxWithLossImpl::forward(const Tensor& input_, const Tensor& target_) {
  OpScope scope("adaptive_log_softmax_with_loss", {&input_, &target_});
  const char* op = "nn.AdaptiveLogSoftmaxWithLoss";
  EMBER_CHECK(input_.defined() && target_.defined(), "[", op, "] input and target must be defined");
  Tensor input = input_, target = target_;
  const bool batched = target.dim() == 1;
  if (batched) {
    EMBER_CHECK(input.dim() == 2, "[", op, "] 1D target tensor expects 2D input tensors, but found inputs with size ",
                input.sizes());
    EMBER_CHECK(input.size(0) == target.size(0), "[", op,
                "] Input and target should have the same size in the batch dimension, got input ", input.sizes(),
                " and target ", target.sizes());
  } else {
    EMBER_CHECK(target.dim() == 0, "[", op, "] 0D or 1D target tensor expected, multi-target not supported, got ",
                target.sizes());
    EMBER_CHECK(input.dim() == 1, "[", op, "] 0D target tensor expects 1D input tensors, but found inputs with size ",
                input.sizes());
    input = input.unsqueeze(0);
    target = target.unsqueeze(0);
  }
  EMBER_CHECK(input.size(1) == options.in_features(), "[", op, "] input has ", input.size(1),
              " features, the layer expects in_features = ", options.in_features());
  EMBER_CHECK(!is_floating_point(target.dtype()) && target.dtype() != kBool, "[", op,
              "] target must hold integer class indices, got dtype ", target.dtype());
  target = target.to(kInt64);
  const int64_t batch = target.size(0);
  Tensor output = zeros({batch}, TensorOptions(input.dtype()));
  Tensor gather_inds = zeros({batch}, TensorOptions(kInt64));
  int64_t used_rows = 0;
  for (int64_t i = 0; i <= n_clusters; ++i) {
    const int64_t low = i == 0 ? 0 : cutoffs[static_cast<size_t>(i - 1)], high = cutoffs[static_cast<size_t>(i)];
    Tensor mask = target.ge(low).logical_and(target.lt(high));
    Tensor rows = mask.nonzero().view({-1});
    if (rows.numel() == 0) continue;
    Tensor picked = target.index_select(0, rows);
    if (i == 0) {
      gather_inds = gather_inds.index_copy(0, rows, picked);
    } else {
      Tensor relative = picked - low;
      Tensor cluster_out = tail[static_cast<size_t>(i - 1)]->as<SequentialImpl>()->forward(input.index_select(0, rows));
      gather_inds = gather_inds.index_fill(0, rows, shortlist_size + i - 1);
      Tensor local = cluster_out.log_softmax(1).gather(1, relative.unsqueeze(1)).squeeze(1);
      output = output.index_copy(0, rows, local);
    }
    used_rows += rows.numel();
  }
  if (used_rows != batch) {
    Tensor t = target;
    EMBER_CHECK(false, "[", op, "] Target values should be in [0, ", options.n_classes() - 1,
                "], but values in range [", t.min().item<int64_t>(), ", ", t.max().item<int64_t>(), "] were found. ");
  }
  Tensor head_logprob = head->forward(input).log_softmax(1);
  output = output + head_logprob.gather(1, gather_inds.unsqueeze(1)).squeeze(1);
  double loss;
  {
    NoGradGuard no_grad;
    loss = (output * -1.0).mean().item<double>();
  }
  if (!batched) output = output.squeeze(0);
  return ASMoutput(output, loss);
}

Tensor AdaptiveLogSoftmaxWithLossImpl::full_log_prob(const Tensor& input, const Tensor& head_output) {
  Tensor head_logprob = head_output.log_softmax(1);
  std::vector<Tensor> parts{head_logprob.narrow(1, 0, shortlist_size)};
  for (int64_t i = 0; i < n_clusters; ++i) {
    Tensor cluster = tail[static_cast<size_t>(i)]->as<SequentialImpl>()->forward(input).log_softmax(1);
    parts.push_back(cluster + head_logprob.narrow(1, shortlist_size + i, 1));
  }
  return cat(parts, 1);
}

Tensor AdaptiveLogSoftmaxWithLossImpl::log_prob(const Tensor& input) {
  OpScope scope("adaptive_log_softmax_with_loss", {&input});
  EMBER_CHECK(input.defined() && input.dim() == 2 && input.size(1) == options.in_features(),
              "[nn.AdaptiveLogSoftmaxWithLoss] log_prob expects input [B, ", options.in_features(), "], got ",
              input.defined() ? input.sizes() : IntArrayRef{});
  return full_log_prob(input, head->forward(input));
}

Tensor AdaptiveLogSoftmaxWithLossImpl::predict(const Tensor& input) { return log_prob(input).argmax(1); }

void AdaptiveLogSoftmaxWithLossImpl::pretty_print(std::ostream& stream) const {
  stream << "torch::nn::AdaptiveLogSoftmaxWithLoss";
}

}  // namespace ember::nn
