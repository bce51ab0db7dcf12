#pragma once
// The autograd graph: a Node is the backward of one forward op call. It receives the
// gradients of the op's outputs and returns the gradients of its inputs, which flow
// along its next edges to the nodes that produced those inputs (or to AccumulateGrad
// for leaves). Nodes are named as in PyTorch (AddBackward0, MmBackward0, ...).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/guards/guards.h"

namespace ember::autograd {

class Node;
using variable_list = std::vector<Tensor>;

// Where a gradient goes: input `input_nr` of `function`. Invalid when the forward input
// did not require grad.
struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  Edge() = default;
  Edge(std::shared_ptr<Node> fn, uint32_t nr) : function(std::move(fn)), input_nr(nr) {}
  bool is_valid() const { return function != nullptr; }
};

// Shape and dtype of one forward output, so the engine can check gradient shapes.
struct OutputMeta {
  DimVector sizes;
  DType dtype = kFloat32;
};

// Anomaly mode's record of where a node was made: the forward call's stack trace and, for a
// node made while another node's backward ran (a recorded backward, create_graph), that
// node's name and record (the "previous calculation" that induced this one).
struct AnomalyRecord {
  std::string trace;
  std::string parent_name;
  std::shared_ptr<const AnomalyRecord> parent;
};

// A gradient hook: returns a replacement gradient, or an undefined tensor to keep it.
using GradHook = std::function<Tensor(const Tensor&)>;

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Gradients of the forward inputs (one per next edge) from those of the outputs.
  // Runs with grad mode set to the backward call's create_graph.
  virtual variable_list apply(variable_list&& grads) = 0;
  virtual std::string name() const = 0;
  // Drops saved tensors once backward has passed (unless retain_graph).
  virtual void release_variables() {}

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  std::vector<Edge>& mutable_next_edges() { return next_edges_; }
  // PyTorch's next_functions: (node, input_nr) for each input; null node where the
  // input did not require grad.
  std::vector<std::pair<std::shared_ptr<Node>, uint32_t>> next_functions() const;
  const Edge& next_edge(size_t i) const { return next_edges_[i]; }
  size_t num_outputs() const { return next_edges_.size(); }
  // Whether input i's gradient is wanted (its edge is valid).
  bool should_compute_output(size_t i) const { return i < next_edges_.size() && next_edges_[i].is_valid(); }

  // Metadata of the forward outputs this node receives gradients for.
  size_t num_inputs() const { return input_meta_.size(); }
  uint32_t add_input_metadata(const Tensor& t);
  const OutputMeta& input_meta(size_t i) const { return input_meta_[i]; }

  // Order of creation on this thread; the engine runs later nodes first.
  uint64_t sequence_nr() const { return sequence_nr_; }

  // Hooks on the gradient of forward output `output_nr` (Tensor::register_hook on a
  // non-leaf), run before apply. Returns an id for remove_pre_hook.
  int add_pre_hook(uint32_t output_nr, GradHook hook);
  void remove_pre_hook(int id);
  bool has_pre_hooks() const { return !pre_hooks_.empty(); }
  void run_pre_hooks(variable_list& grads);

  // Anomaly mode: the forward op's stack trace, captured when the node was created.
  const std::string& forward_trace() const;
  const AnomalyRecord* anomaly_record() const { return anomaly_.get(); }
  // parent: the node whose backward is running while this one is made (null in a forward).
  void set_forward_trace(std::string trace, const Node* parent = nullptr);

 protected:
  std::vector<Edge> next_edges_;
  std::vector<OutputMeta> input_meta_;

 private:
  struct PreHook {
    int id;
    uint32_t output_nr;
    GradHook fn;
  };
  uint64_t sequence_nr_;
  std::vector<PreHook> pre_hooks_;
  std::shared_ptr<const AnomalyRecord> anomaly_;
};

// A tensor kept for backward, with the version it had when saved so that a later
// in-place change is detected instead of silently giving wrong gradients. An output of
// the node that saves it is stored without its grad_fn (that would be a reference
// cycle) and gets it back on unpack.
class SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& t, bool is_output);
  // The saved tensor; `node` is the node unpacking it (needed for saved outputs).
  Tensor unpack(const std::shared_ptr<Node>& node = nullptr) const;
  void reset();
  bool defined() const { return was_defined_; }

 private:
  Tensor data_;  // the input itself, or for an output an alias without autograd state
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool was_defined_ = false;
  bool is_output_ = false;
  bool requires_grad_ = false;
  bool released_ = false;
  guards::detail::SavedBytes bytes_;  // counted for the GraphRetention guard (parameters are not)
};

// The sink of a leaf: adds incoming gradients into leaf.grad (never replaces), then
// runs the leaf's post-accumulate-grad hooks.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor variable);
  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
};

// A node whose gradients are all errors: used for ops that are not differentiable.
class NotDifferentiable final : public Node {
 public:
  explicit NotDifferentiable(std::string op) : op_(std::move(op)) {}
  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return "NotImplemented"; }

 private:
  std::string op_;
};

}  // namespace ember::autograd
