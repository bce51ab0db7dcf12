#include "ember/nn/modules/activation.h"

#include <sstream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/guards/guards.h"
#include "ember/nn/functional.h"

namespace ember::nn {

namespace {
std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

Tensor LeakyReLUImpl::forward(const Tensor& input) {
  Tensor out = functional::leaky_relu(input, negative_slope);
  if (!inplace) return out;
  Tensor t = input;
  t.copy_(out);
  return t;
}

Tensor ReLUImpl::forward(const Tensor& input) {
  if (!options.inplace()) return input.relu();
  Tensor t = input;
  t.relu_();
  return t;
}
std::string LeakyReLUImpl::extra_repr() const { return "negative_slope=" + num(negative_slope); }

DropoutImpl::DropoutImpl(double p) : Module("Dropout"), p(p) {
  EMBER_CHECK(p >= 0 && p <= 1, "[nn.Dropout] dropout probability has to be between 0 and 1, but got ", p);
}
Tensor DropoutImpl::forward(const Tensor& input) {
  if (is_training() && p > 0 && !GradMode::is_enabled() && guards::is_enabled(guards::Guard::EvalMode)) {
    guards::detail::eval_mode_warning("nn.Dropout");
  }
  Tensor out = functional::dropout(input, p, is_training());
  if (!inplace || !is_training()) return out;
  Tensor t = input;
  t.copy_(out);
  return t;
}
std::string DropoutImpl::extra_repr() const { return "p=" + num(p) + ", inplace=False"; }
std::shared_ptr<Module> DropoutImpl::clone(const std::optional<Device>& /*device*/) const {
  auto c = std::make_shared<DropoutImpl>(p);
  c->train(is_training());
  return c;
}

}  // namespace ember::nn
