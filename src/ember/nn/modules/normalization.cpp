#include "ember/nn/modules/normalization.h"

#include <sstream>

#include "ember/core/check.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/ops/creation.h"

namespace ember::nn {

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options_) : Cloneable("LayerNorm"), options(options_) {
  EMBER_CHECK(!options.normalized_shape().empty(), "[nn.LayerNorm] normalized_shape must have at least one dim");
  reset();
}

void LayerNormImpl::reset() {
  if (options.elementwise_affine()) {
    weight = register_parameter("weight", ember::empty(IntArrayRef(options.normalized_shape())));
    bias = register_parameter("bias", ember::empty(IntArrayRef(options.normalized_shape())));
  }
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (!options.elementwise_affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& input) {
  return functional::layer_norm(input, options.normalized_shape(), weight, bias, options.eps());
}

std::string LayerNormImpl::extra_repr() const {
  // PyTorch prints normalized_shape as a Python tuple: (512,) or (4, 5).
  std::ostringstream os;
  const auto& shape = options.normalized_shape();
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << (shape.size() == 1 ? ",)" : ")") << ", eps=" << options.eps()
     << ", elementwise_affine=" << (options.elementwise_affine() ? "True" : "False");
  return os.str();
}

GroupNormImpl::GroupNormImpl(const GroupNormOptions& options_) : Cloneable("GroupNorm"), options(options_) {
  EMBER_CHECK(options.num_groups() > 0 && options.num_channels() % options.num_groups() == 0,
              "[nn.GroupNorm] num_channels=", options.num_channels(), " must be divisible by num_groups=",
              options.num_groups());
  reset();
}

void GroupNormImpl::reset() {
  if (options.affine()) {
    weight = register_parameter("weight", empty({options.num_channels()}));
    bias = register_parameter("bias", empty({options.num_channels()}));
  }
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (!options.affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor GroupNormImpl::forward(const Tensor& input) {
  EMBER_CHECK(input.defined() && input.dim() >= 2 && input.size(1) == options.num_channels(), "[nn.GroupNorm] input",
              input.defined() ? " of sizes " : " (undefined)", input.defined() ? input.sizes() : IntArrayRef(),
              " does not have num_channels=", options.num_channels(), " channels in dim 1");
  return functional::group_norm(input, options.num_groups(), weight, bias, options.eps());
}

std::string GroupNormImpl::extra_repr() const {
  std::ostringstream os;
  os << options.num_groups() << ", " << options.num_channels() << ", eps=" << options.eps()
     << ", affine=" << (options.affine() ? "True" : "False");
  return os.str();
}

}  // namespace ember::nn
