#include "ember/autograd/undefined_grad.h"

#include <memory>
#include <string>

#include "ember/autograd/record.h"

namespace ember::autograd {

namespace {
// Backward of UndefinedGrad: whatever arrives, each input receives an undefined gradient.
class UndefinedGradBackward final : public Node {
 public:
  variable_list apply(variable_list&& /*grads*/) override { return variable_list(num_outputs()); }
  std::string name() const override { return "UndefinedGradBackward"; }
};
}  // namespace

std::vector<Tensor> UndefinedGrad::apply(std::vector<Tensor>&& inputs) const {
  std::vector<Tensor> outputs;
  outputs.reserve(inputs.size());
  Tensor (*copy)(const Tensor&) = [](const Tensor& t) {
    NoGradGuard no_grad;
    return t.defined() ? t.clone() : Tensor();
  };
  for (const Tensor& t : inputs) outputs.push_back(copy(t));
  if (needs_grad_list(inputs)) {
    auto node = std::make_shared<UndefinedGradBackward>();
    collect_next_edges(*node, inputs);
    maybe_record_anomaly(*node);
    for (const Tensor& out : outputs) {
      if (out.defined()) set_history(out, node);
    }
  }
  return outputs;
}

}  // namespace ember::autograd
