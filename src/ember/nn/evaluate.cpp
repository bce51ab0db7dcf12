#include "ember/nn/evaluate.h"

namespace ember::nn {

EvalScope::EvalScope(Module& module) {
  for (const std::shared_ptr<Module>& m : module.modules()) modes_.emplace_back(m, m->is_training());
  module.eval();
}

EvalScope::~EvalScope() {
  // Module::train recurses; modes_ lists parents before their descendants, so each module
  // ends with its own flag.
  for (auto& [m, training] : modes_) m->train(training);
}

}  // namespace ember::nn
