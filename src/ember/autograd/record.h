#pragma once
// Internal: how ops record the autograd graph (not installed API). An op whose result
// needs a gradient (grad mode on and some input requiring grad) computes its forward
// with grad mode off, creates its backward node with edges to the inputs' histories,
// and attaches the node to its outputs.

#include <initializer_list>
#include <memory>

#include "ember/autograd/grad_mode.h"
#include "ember/autograd/node.h"

namespace ember::autograd {

inline bool requires_grad_fast(const Tensor& t) {
  return t.defined() && t.impl()->autograd_meta() != nullptr && t.impl()->requires_grad();
}

// A tensor made outside InferenceMode: an op whose inputs are all inference tensors
// records no graph, even in grad mode (as libtorch, whose inference tensors lack the
// autograd dispatch key).
inline bool is_normal_tensor(const Tensor& t) { return t.defined() && !t.impl()->is_inference(); }

// Grad mode is on, at least one of the tensors requires grad, and not all are inference tensors.
template <typename... Ts>
bool needs_grad(const Ts&... ts) {
  return (requires_grad_fast(ts) || ...) && GradMode::is_enabled() && (is_normal_tensor(ts) || ...);
}
bool needs_grad_list(const std::vector<Tensor>& ts);

// The edge a gradient for t flows along: t's grad_fn, or the AccumulateGrad of a leaf
// that requires grad; invalid otherwise.
Edge gradient_edge(const Tensor& t);
// The leaf's AccumulateGrad node (created on first use, shared while alive).
std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);

// Sets node's next edges from the inputs (one per input, invalid for undefined or
// non-requiring ones).
void collect_next_edges(Node& node, std::initializer_list<const Tensor*> inputs);
void collect_next_edges(Node& node, const std::vector<Tensor>& inputs);

// Makes `out` output number k of node (k = order of calls) with requires_grad.
void set_history(const Tensor& out, const std::shared_ptr<Node>& node);

// A view taken with grad mode off (no grad_fn) whose base requires grad and has been
// modified in place since: an error (its gradient could not reach the base).
void check_mode_view_not_stale(const Tensor& t);

// In-place ops: refuses leaves that require grad (in grad mode) and inference tensors
// outside InferenceMode.
void check_inplace(const Tensor& self, const char* op);

// The part of check_inplace that applies when no graph is recorded.
[[noreturn]] void inference_inplace_error(const char* op);
inline void check_inplace_cheap(const Tensor& self, const char* op) {
  if (self.is_inference() && !InferenceMode::is_enabled()) inference_inplace_error(op);
}

// After an in-place op recorded `node` for self (whose first next edge is self's old
// history): makes node self's grad_fn. When self is a view, the base's history is
// rewritten through a CopySlices node and self becomes an as_strided view of it.
void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node);

// Anomaly mode: records the forward stack trace on the node when enabled.
void maybe_record_anomaly(Node& node);
// Anomaly mode: remembers the first forward output with NaN/inf for the NonFiniteLoss guard.
void check_forward_output(const Tensor& out, const Node& node);

// Sum of grad over the dims that were broadcast to get from `sizes` to grad's shape.
Tensor sum_to(const Tensor& grad, IntArrayRef sizes);

}  // namespace ember::autograd
