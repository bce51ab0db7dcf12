#pragma once
// jit::compile: a callable that traces the model on its first call for each input
// signature, optimises the graph (freeze: batch norm folding, constant folding, fusion)
// and reuses it (the role of torch.compile). docs/jit.md.
//
//   auto fast = jit::compile(model);   // model->eval() first for inference
//   Tensor y = fast(x);                // first call traces; later calls run the graph

#include <memory>
#include <string>
#include <vector>

#include "ember/jit/jit.h"

namespace ember::jit {

struct CompileOptions {
  // Dim 0 of the inputs is the batch: one graph serves every batch size.
  bool dynamic_batch = true;
  // Signatures compiled before falling back to eager (with a warning), as torch.compile's
  // cache size limit.
  int max_graphs = 8;
  // Freeze (fold and fuse) the graph when the model is in eval mode. A model in training
  // mode is traced as is, reading its live parameters.
  bool optimize = true;
};

class CompiledModule {
 public:
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  Tensor operator()(const Tensor& input);
  // Graphs compiled so far (one per signature), and calls that ran eagerly because the
  // limit was reached or tracing was refused.
  int graphs_compiled() const;
  int eager_calls() const;
  // The graph used for the last call (null when it ran eagerly).
  const GraphModule* last_graph() const;

  struct State;
  explicit CompiledModule(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

CompiledModule compile(std::shared_ptr<nn::Module> module, const CompileOptions& options = {});
// A module whose forward takes or returns several tensors, through fn.
CompiledModule compile(std::shared_ptr<nn::Module> module, TraceFn fn, const CompileOptions& options = {});

}  // namespace ember::jit
