#pragma once
// ember::jit — graph capture, passes, compiled callables and standalone model artifacts
// (the roles of TorchScript, torch.export and torch.compile). docs/jit.md.
//
//   model->eval();
//   jit::TraceOptions opt;
//   opt.dynamic_batch = true;                              // dim 0 of the inputs is B
//   jit::GraphModule g = jit::trace(*model, example, opt); // records the ops forward runs
//   std::cout << g.graph();                                // readable listing
//   g = jit::freeze(g);                                    // fold BN, constants, fuse
//   jit::save(g, "model.ember", meta);                     // one file: graph + weights
//   jit::GraphModule m = jit::load("model.ember");         // no model source needed
//   Tensor y = m.forward(x);

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ember/jit/graph.h"
#include "ember/jit/module.h"
#include "ember/jit/ops.h"
#include "ember/jit/passes.h"
#include "ember/serialize/value.h"

namespace ember::nn {
class Module;
}

namespace ember::jit {

struct TraceOptions {
  // Dim 0 of every input with at least one dim follows the batch symbol B.
  bool dynamic_batch = false;
  // Other (input index, dim) pairs that follow B. All dynamic dims share one size.
  std::vector<std::pair<int, int>> dynamic_dims;
  // Names of the graph's inputs and outputs (default "input0", ..., "output0", ...).
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  // Tensors the forward uses that are neither inputs, parameters, buffers nor made by a
  // traced op (a plain tensor member) become constants instead of an error.
  bool allow_constants = false;
  // Runs the graph on the example inputs and compares it with eager (bit-identical).
  bool check = true;
};

using TraceFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Records the ops fn runs on example_inputs into a graph. module (optional) names
// parameters and buffers ("fc1.weight") so they become named graph inputs, not constants;
// a module in training mode is traced as it runs (with a warning). Tracing never changes
// the module: buffers updated by the forward (batch norm's running statistics) are
// restored. Refused with ember::Error: reading a traced tensor's value (item(),
// to_vector(), nonzero, unique ...), an op the tracer does not record, a graph that
// changes with the batch size when dynamic dims are asked for.
GraphModule trace(const TraceFn& fn, const std::vector<Tensor>& example_inputs, const TraceOptions& options = {},
                  const nn::Module* module = nullptr);
// The module's single-tensor forward (module(x)).
GraphModule trace(nn::Module& module, const Tensor& example_input, const TraceOptions& options = {});
// Any forward signature, through a function that calls the module.
GraphModule trace(nn::Module& module, const TraceFn& fn, const std::vector<Tensor>& example_inputs,
                  const TraceOptions& options = {});

// During a trace: t's current value is a constant of the graph (its value may then be
// read with item() and friends; the graph keeps the value seen while tracing).
void mark_constant(const Tensor& t);
// Whether a trace is being recorded on this thread.
bool is_tracing();

}  // namespace ember::jit
