#pragma once
// Evaluation without the two silent mistakes the EvalMode guard looks for (docs/guards.md):
// a model left in training mode (Dropout active, BatchNorm on batch statistics) and
// autograd recording graphs nobody will use.
//
//   ember::nn::evaluate(model, test_loader, [&](ember::data::Example& b) { ... model->forward(b.data) ... });

#include <utility>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/nn/module.h"

namespace ember::nn {

// For its lifetime: the module and every descendant in eval mode, grad mode off. Restores
// each module's own training flag afterwards (a frozen BatchNorm stays in eval).
class EvalScope {
 public:
  explicit EvalScope(Module& module);
  template <typename Holder, typename = decltype(std::declval<const Holder&>().ptr())>
  explicit EvalScope(const Holder& holder) : EvalScope(*holder.ptr()) {}
  ~EvalScope();
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  std::vector<std::pair<std::shared_ptr<Module>, bool>> modes_;
  NoGradGuard no_grad_;
};

// Calls fn(batch) for every batch of loader with model in eval mode under NoGradGuard, then
// puts the model back in the mode it was in. `model` is a Module or a module holder.
template <typename Model, typename Loader, typename Fn>
void evaluate(Model& model, Loader& loader, Fn&& fn) {
  EvalScope scope(model);
  for (auto& batch : loader) fn(batch);
}

}  // namespace ember::nn
