#include "ember/nn/modules/linear.h"

#include <cmath>
#include <sstream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/ops/creation.h"

namespace ember::nn {

LinearImpl::LinearImpl(const LinearOptions& options_) : Cloneable("Linear"), options(options_) {
  EMBER_CHECK(options.in_features() >= 0 && options.out_features() >= 0,
              "[nn.Linear] in_features and out_features must be non-negative, got ", options.in_features(), " and ",
              options.out_features());
  reset();
}

void LinearImpl::reset() {
  weight = register_parameter("weight", empty({options.out_features(), options.in_features()}));
  bias = register_parameter("bias", options.bias() ? empty({options.out_features()}) : Tensor(), options.bias());
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  // PyTorch: kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = options.in_features() > 0 ? 1.0 / std::sqrt(static_cast<double>(options.in_features())) : 0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor LinearImpl::forward(const Tensor& input) {
  EMBER_CHECK(input.defined(), "[nn.Linear] called with an undefined tensor");
  EMBER_CHECK(input.dim() >= 1 && input.size(-1) == options.in_features(), "[nn.Linear] input of sizes ",
              input.sizes(), " does not end in in_features=", options.in_features(),
              " (expected [..., ", options.in_features(), "])");
  return functional::linear(input, weight, bias);
}

std::string LinearImpl::extra_repr() const {
  std::ostringstream os;
  os << "in_features=" << options.in_features() << ", out_features=" << options.out_features()
     << ", bias=" << (options.bias() ? "True" : "False");
  return os.str();
}

std::string FlattenImpl::extra_repr() const {
  std::ostringstream os;
  os << "start_dim=" << options.start_dim() << ", end_dim=" << options.end_dim();
  return os.str();
}

std::string UnflattenImpl::extra_repr() const {
  std::ostringstream os;
  os << "dim=" << options.dim() << ", unflattened_size=(";
  for (size_t i = 0; i < options.sizes().size(); ++i) os << (i ? ", " : "") << options.sizes()[i];
  os << (options.sizes().size() == 1 ? ",)" : ")");
  return os.str();
}

}  // namespace ember::nn
