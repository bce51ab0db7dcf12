#include "ember/jit/compile.h"

#include <map>
#include <mutex>
#include <sstream>

#include "ember/core/check.h"
#include "ember/core/warning.h"
#include "ember/jit/passes.h"
#include "ember/nn/module.h"

namespace ember::jit {

struct CompiledModule::State {
  std::shared_ptr<nn::Module> module;
  TraceFn fn;
  CompileOptions options;
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<GraphModule>> graphs;  // by signature
  int compiled = 0;
  int eager = 0;
  bool warned = false;
  std::shared_ptr<GraphModule> last;
};

namespace {

// The signature a graph serves: dtypes, ranks and sizes (without dim 0 when the batch is
// dynamic), and the module's mode.
std::string signature(const std::vector<Tensor>& inputs, bool dynamic_batch, bool training, bool with_batch) {
  std::ostringstream os;
  os << (training ? "train" : "eval");
  for (const Tensor& t : inputs) {
    os << '|';
    if (!t.defined()) {
      os << "undef";
      continue;
    }
    os << static_cast<int>(t.dtype()) << ':';
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d == 0 && dynamic_batch && !with_batch) os << "B,";
      else os << t.size(d) << ',';
    }
  }
  return os.str();
}

}  // namespace

std::vector<Tensor> CompiledModule::run(const std::vector<Tensor>& inputs) {
  State& s = *state_;
  // The lock covers the cache and tracing; graphs run outside it, so threads sharing a
  // compiled model run concurrently once it is compiled.
  std::unique_lock<std::mutex> lock(s.mutex);
  const bool training = s.module->is_training();
  const std::string dyn_key = signature(inputs, s.options.dynamic_batch, training, false);
  const std::string static_key = signature(inputs, s.options.dynamic_batch, training, true);
  auto found = s.graphs.find(dyn_key);
  if (found == s.graphs.end()) found = s.graphs.find(static_key);
  if (found == s.graphs.end()) {
    if (s.compiled >= s.options.max_graphs) {
      if (!s.warned) {
        warn("[jit::compile] " + std::to_string(s.compiled) +
             " graphs compiled for this model (CompileOptions::max_graphs); new input signatures run eagerly. Inputs "
             "with changing sizes other than the batch dim recompile on every new size");
        s.warned = true;
      }
      ++s.eager;
      s.last = nullptr;
      lock.unlock();
      return s.fn(inputs);
    }
    TraceOptions topt;
    topt.dynamic_batch = s.options.dynamic_batch;
    std::string key = dyn_key;
    GraphModule traced;
    try {
      traced = trace(*s.module, s.fn, inputs, topt);
    } catch (const Error& e) {
      // A forward that is not batch-polymorphic gets one graph per exact shape.
      if (!s.options.dynamic_batch || std::string(e.what()).find("different graph at batch size") == std::string::npos)
        throw;
      topt.dynamic_batch = false;
      traced = trace(*s.module, s.fn, inputs, topt);
      key = static_key;
    }
    auto gm = std::make_shared<GraphModule>(s.options.optimize && !training ? freeze(traced) : traced);
    found = s.graphs.emplace(key, std::move(gm)).first;
    ++s.compiled;
  }
  s.last = found->second;
  std::shared_ptr<GraphModule> graph = found->second;
  lock.unlock();
  return graph->run(inputs);
}

Tensor CompiledModule::operator()(const Tensor& input) {
  std::vector<Tensor> out = run({input});
  EMBER_CHECK(out.size() == 1, "[jit::compile] the model returns ", out.size(), " tensors; call run()");
  return out[0];
}

int CompiledModule::graphs_compiled() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->compiled;
}
int CompiledModule::eager_calls() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->eager;
}
const GraphModule* CompiledModule::last_graph() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->last.get();
}

CompiledModule compile(std::shared_ptr<nn::Module> module, TraceFn fn, const CompileOptions& options) {
  EMBER_CHECK(module != nullptr, "[jit::compile] no module given");
  EMBER_CHECK(static_cast<bool>(fn), "[jit::compile] no forward function given");
  auto state = std::make_shared<CompiledModule::State>();
  state->module = std::move(module);
  state->fn = std::move(fn);
  state->options = options;
  return CompiledModule(std::move(state));
}

CompiledModule compile(std::shared_ptr<nn::Module> module, const CompileOptions& options) {
  nn::Module* m = module.get();
  return compile(std::move(module), [m](const std::vector<Tensor>& in) { return std::vector<Tensor>{(*m)(in[0])}; },
                 options);
}

}  // namespace ember::jit
