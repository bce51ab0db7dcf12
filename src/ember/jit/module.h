#pragma once
// GraphModule: a graph ready to run, with no model source and no autograd (docs/jit.md).
// What jit::trace, jit::load and jit::compile hand back.
//
//   jit::GraphModule m = jit::load("model.ember");
//   Tensor logits = m.forward(images);          // one input, one output
//   std::vector<Tensor> outs = m.run({a, b});   // any number of each

#include <memory>
#include <string>
#include <vector>

#include "ember/jit/graph.h"
#include "ember/serialize/value.h"

namespace ember::jit {

// What the interpreter did on its last call (for tests and ember-inspect).
struct RunStats {
  int64_t peak_bytes = 0;       // most bytes held by intermediate tensors at once
  int64_t allocated_bytes = 0;  // bytes of all intermediate tensors made (no reuse)
  int inplace_nodes = 0;        // nodes that wrote into a dead input's buffer
};

class GraphModule {
 public:
  GraphModule() = default;
  explicit GraphModule(Graph graph, Value metadata = Value::dict());

  // Checks the inputs against the graph's input specs (dtype, rank, static sizes, one
  // consistent B), then runs every node under inference mode, freeing each intermediate
  // after its last use. Throws ember::Error "[jit::run] ..." naming the input or node.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  // A graph with one input and one output.
  Tensor forward(const Tensor& input) const;
  Tensor operator()(const Tensor& input) const { return forward(input); }

  const Graph& graph() const;
  // Replaces the graph (after a pass); verifies it first.
  void set_graph(Graph graph);
  const Value& metadata() const { return metadata_; }
  Value& metadata() { return metadata_; }
  bool defined() const { return plan_ != nullptr; }
  // Statistics of the last run() on this thread's latest call (not thread-safe to read
  // while another thread runs).
  RunStats last_run_stats() const;

  struct Plan;

 private:
  std::shared_ptr<Plan> plan_;
  Value metadata_ = Value::dict();
};

}  // namespace ember::jit
