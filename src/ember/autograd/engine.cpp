// The backward engine. Note [Engine]: one graph task per backward/grad call. It counts,
// for every node reachable from the roots, how many edges point at it; a node is ready
// when all of them have delivered (its input buffer is complete). Ready nodes run in
// decreasing sequence number (later forward ops first, leaves' AccumulateGrad as soon
// as they are ready), on the calling thread.

#include <optional>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <queue>
#include <thread>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ember/profiler/record.h"
#include "ember/amp/autocast.h"
#include "ember/autograd/autograd.h"
#include "ember/core/warning.h"
#include "ember/autograd/autograd_meta.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/guards/guards.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/reduce.h"

namespace ember::autograd {

namespace {
std::atomic<bool> g_anomaly{false};
std::atomic<bool> g_anomaly_check_nan{true};

std::string shape_str(IntArrayRef s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

bool is_accumulate_grad(Node* n) { return typeid(*n) == typeid(AccumulateGrad); }  // final class

struct Capture {
  uint32_t input_nr;
  size_t index;
};

// Note [Graph task node table]: a backward call on a small graph spends more time on its
// bookkeeping than on its formulas when every node costs an allocation in each of several
// hash containers. The graph task numbers the nodes it reaches in discovery order and keeps
// their state (dependency count, input buffer, flags) in one vector; this open-addressing
// table of (node, number) pairs, one allocation for small graphs, maps a node to its number.
class NodeTable {
 public:
  static constexpr uint32_t kAbsent = UINT32_MAX;

  NodeTable() : slots_(16), shift_(64 - 4) {}
  // n's number, or kAbsent.
  uint32_t find(const Node* n) const {
    for (size_t i = slot_of(n);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].node == n) return slots_[i].index;
      if (!slots_[i].node) return kAbsent;
    }
  }
  // Numbers n with `next` unless it has a number already; returns whether it was added.
  bool insert(const Node* n, uint32_t next) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (size_t i = slot_of(n);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].node == n) return false;
      if (!slots_[i].node) {
        slots_[i] = {n, next};
        ++size_;
        return true;
      }
    }
  }

 private:
  struct Slot {
    const Node* node = nullptr;
    uint32_t index = 0;
  };
  size_t slot_of(const Node* n) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(n) * UINT64_C(0x9E3779B97F4A7C15)) >> shift_);
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    --shift_;
    size_ = 0;
    for (const Slot& s : old) {
      if (s.node) insert(s.node, s.index);
    }
  }
  std::vector<Slot> slots_;  // a power of two, at most half full
  int shift_;
  size_t size_ = 0;
};

class GraphTask;
// The graph task whose node this thread is running (null outside backward); nested
// (reentrant) backward calls save and restore it.
[[gnu::tls_model("initial-exec")]] thread_local const GraphTask* tl_running_task = nullptr;
// The node whose backward this thread is running (anomaly mode records it as the parent of
// nodes made meanwhile).
[[gnu::tls_model("initial-exec")]] thread_local const Node* tl_running_node = nullptr;

// Anomaly mode: names the forward call of a node whose backward failed, then those of the
// nodes whose backward made it (as PyTorch's warnings), before the error goes on.
void warn_anomaly_traces(const Node& node) {
  warn("[autograd] Error detected in " + node.name() + ". Traceback of forward call that caused the error:\n" +
       node.forward_trace());
  for (const AnomalyRecord* r = node.anomaly_record(); r != nullptr && r->parent; r = r->parent.get()) {
    warn("[autograd] Previous calculation was induced by " + r->parent_name +
         ". Traceback of forward call that induced the previous calculation:\n" + r->parent->trace);
  }
}

class GraphTask {
 public:
  GraphTask(bool keep_graph, bool create_graph) : keep_graph_(keep_graph), create_graph_(create_graph) {}

  // Whether a gradient sent along e is used by this backward: always, unless grad() or
  // backward(inputs) restricts it to the paths towards the requested tensors.
  bool edge_needed(const Edge& e) const {
    if (!e.is_valid()) return false;
    if (!restrict_exec_) return true;
    if (captures_ != nullptr && captures_->count(e.function.get()) > 0) return true;
    // A node this task never reached (made by a forward that runs inside the backward,
    // e.g. a checkpoint's recomputation) is not trimmed.
    const uint32_t k = table_.find(e.function.get());
    return k == NodeTable::kAbsent || nodes_[k].needed;
  }

  // Runs backward from root edges with their gradients. Captures (for grad()) map a
  // node's input to a result slot; when `targets` is non-empty only nodes leading to
  // a target run.
  void run(const std::vector<Edge>& roots, variable_list root_grads,
           const std::unordered_map<Node*, std::vector<Capture>>& captures, const std::unordered_set<Node*>& exec_targets,
           bool restrict_exec, variable_list* captured) {
    // Backward formulas run outside autocast: each gradient keeps the dtype its forward
    // op computed in, and the cast nodes bring it back to the leaf's dtype.
    amp::detail::AutocastSuspend no_autocast;
    restrict_exec_ = restrict_exec;
    captures_ = &captures;
    // Dependencies and the set of reachable nodes, numbered in discovery order.
    std::vector<uint32_t> stack;
    for (const Edge& e : roots) {
      if (e.is_valid() && add_node(e.function.get())) stack.push_back(static_cast<uint32_t>(nodes_.size() - 1));
    }
    std::vector<uint32_t> order;
    order.reserve(nodes_.size());
    while (!stack.empty()) {
      const uint32_t k = stack.back();
      stack.pop_back();
      order.push_back(k);
      for (const Edge& e : nodes_[k].node->next_edges()) {
        if (!e.is_valid()) continue;
        if (add_node(e.function.get())) stack.push_back(static_cast<uint32_t>(nodes_.size() - 1));
        ++nodes_[table_.find(e.function.get())].deps;
      }
    }
    // Which nodes must run: those on a path to a target (grad() and backward(inputs)).
    if (restrict_exec) {
      // Iterate to a fixed point in reverse discovery order (children mostly after parents).
      bool changed = true;
      while (changed) {
        changed = false;
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
          NodeState& st = nodes_[*it];
          if (st.needed) continue;
          bool need = exec_targets.count(st.node) > 0;
          for (const Edge& e : st.node->next_edges()) {
            if (need) break;
            if (!e.is_valid()) continue;
            Node* c = e.function.get();
            need = nodes_[table_.find(c)].needed || (captures.count(c) > 0);
          }
          if (need) {
            st.needed = true;
            changed = true;
          }
        }
      }
    }

    std::priority_queue<ReadyEntry> ready;
    for (size_t i = 0; i < roots.size(); ++i) {
      if (!roots[i].is_valid()) continue;
      add_to_buffer(state_of(roots[i].function.get()), roots[i].input_nr, std::move(root_grads[i]));
    }
    for (const Edge& e : roots) {
      Node* n = e.function.get();
      if (!n) continue;
      NodeState& st = state_of(n);
      if (st.deps == 0 && !st.queued) push_ready(ready, st);
    }

    while (!ready.empty()) {
      NodeState& st = nodes_[ready.top().index];
      Node* node = st.node;
      ready.pop();
      variable_list inputs = take_buffer(st);
      if (node->has_pre_hooks()) node->run_pre_hooks(inputs);
      if (!captures.empty()) {
        if (auto it = captures.find(node); it != captures.end()) {
          for (const Capture& c : it->second) (*captured)[c.index] = inputs[c.input_nr];
        }
      }
      const bool run_node = !restrict_exec || st.needed;
      const bool accumulate = st.accumulate;
      variable_list outputs;
      bool any = false;
      for (const Tensor& t : inputs) any = any || t.defined();
      // A node that got no gradient at all is skipped, except a custom function's: its
      // backward sees zeros (materialized) or undefined gradients, as in libtorch.
      if (run_node && (any || dynamic_cast<CustomNode*>(node) != nullptr)) {
        outputs = call(node, accumulate, std::move(inputs));
      } else if (run_node && !keep_graph_) {
        node->release_variables();
      }
      const auto& edges = node->next_edges();
      for (size_t i = 0; i < edges.size(); ++i) {
        const Edge& e = edges[i];
        if (!e.is_valid()) continue;
        NodeState& next = state_of(e.function.get());  // nodes_ does not grow any more
        if (i < outputs.size() && outputs[i].defined()) add_to_buffer(next, e.input_nr, std::move(outputs[i]));
        if (--next.deps == 0 && !next.queued) push_ready(ready, next);
      }
    }
  }

 private:
  struct NodeState {
    Node* node;
    uint32_t index;
    int deps = 0;
    bool accumulate;  // an AccumulateGrad: runs as soon as it is ready
    bool queued = false;
    bool needed = false;
    variable_list buffer;
  };
  struct ReadyEntry {
    uint64_t priority;
    uint32_t index;
    bool operator<(const ReadyEntry& o) const { return priority < o.priority; }
  };

  // Numbers n if it is new; returns whether it was.
  bool add_node(Node* n) {
    if (!table_.insert(n, static_cast<uint32_t>(nodes_.size()))) return false;
    nodes_.push_back(NodeState{n, static_cast<uint32_t>(nodes_.size()), 0, is_accumulate_grad(n), false, false, {}});
    return true;
  }
  NodeState& state_of(const Node* n) { return nodes_[table_.find(n)]; }
  void push_ready(std::priority_queue<ReadyEntry>& ready, NodeState& st) {
    st.queued = true;
    ready.push({st.accumulate ? UINT64_MAX : st.node->sequence_nr(), st.index});
  }

  variable_list call(Node* node, bool accumulate, variable_list&& inputs) {
    if (AnomalyMode::is_enabled() && !node->forward_trace().empty()) {
      try {
        return call_checked(node, accumulate, std::move(inputs));
      } catch (const std::exception&) {
        warn_anomaly_traces(*node);
        throw;
      }
    }
    return call_checked(node, accumulate, std::move(inputs));
  }

  // Runs node's backward and checks what it returned.
  variable_list call_checked(Node* node, bool accumulate, variable_list&& inputs) {
    variable_list outputs;
    std::optional<profiler::RecordFunction> record;  // the backward node, in a profile
    if (profiler::is_enabled()) record.emplace(node->name(), profiler::EventKind::Backward);
    {
      AutoGradMode mode(create_graph_);
      struct RunningTask {
        const GraphTask* saved;
        const Node* saved_node;
        RunningTask(const GraphTask* t, const Node* n)
            : saved(std::exchange(tl_running_task, t)), saved_node(std::exchange(tl_running_node, n)) {}
        ~RunningTask() {
          tl_running_task = saved;
          tl_running_node = saved_node;
        }
      } running(this, node);
      outputs = node->apply(std::move(inputs));
    }
    if (!keep_graph_) node->release_variables();
    if (accumulate) return outputs;
    EMBER_CHECK(outputs.size() == node->num_outputs(), "[autograd] function ", node->name(), " returned ",
                outputs.size(), " gradients, expected ", node->num_outputs());
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& g = outputs[i];
      if (!g.defined()) continue;
      if (!node->should_compute_output(i)) {
        outputs[i] = Tensor();
        continue;
      }
      const Edge& e = node->next_edge(i);
      if (e.input_nr < e.function->num_inputs()) {
        const OutputMeta& m = e.function->input_meta(e.input_nr);
        EMBER_CHECK(g.sizes() == IntArrayRef(m.sizes), "[autograd] function ", node->name(),
                    " returned an invalid gradient at index ", i, " - got ", shape_str(g.sizes()),
                    " but expected shape compatible with ", shape_str(m.sizes));
        if (g.dtype() != m.dtype) outputs[i] = g.to(m.dtype);
      }
      if (AnomalyMode::is_enabled() && AnomalyMode::should_check_nan() && is_floating_point(g.dtype())) {
        NoGradGuard no_grad;
        if (!ember::isfinite(g).all().item<bool>()) {
          const bool has_nan = ember::isnan(g).any().item<bool>();
          std::string msg = "[autograd] Function '" + node->name() + "' returned " +
                            (has_nan ? "nan" : "inf") + " values in its " + std::to_string(i) +
                            "th output (sequence number " + std::to_string(node->sequence_nr()) + ").";
          if (!node->forward_trace().empty()) {
            msg += " The forward call that created it (" + node->name() + ") was made from:\n" +
                   node->forward_trace();
          } else {
            msg += " Enable anomaly mode before the forward pass to record where it was created.";
          }
          throw Error(msg);
        }
      }
    }
    return outputs;
  }

  void add_to_buffer(NodeState& st, uint32_t input_nr, Tensor&& grad) {
    Node* node = st.node;
    auto& buf = st.buffer;
    if (buf.size() < node->num_inputs()) buf.resize(node->num_inputs());
    if (input_nr >= buf.size()) buf.resize(input_nr + 1);
    Tensor& slot = buf[input_nr];
    if (!slot.defined()) {
      slot = std::move(grad);
    } else {
      AutoGradMode mode(create_graph_);
      slot = slot + grad;
    }
  }

  variable_list take_buffer(NodeState& st) {
    Node* node = st.node;
    variable_list out = std::move(st.buffer);
    st.buffer = variable_list();
    if (out.size() < node->num_inputs()) out.resize(node->num_inputs());
    if (out.empty()) out.resize(1);
    return out;
  }

  bool keep_graph_;
  bool create_graph_;
  bool restrict_exec_ = false;
  const std::unordered_map<Node*, std::vector<Capture>>* captures_ = nullptr;
  NodeTable table_;
  std::vector<NodeState> nodes_;  // by number (Note [Graph task node table])
};


// Roots and their initial gradients, checked.
void make_roots(const variable_list& tensors, const variable_list& grad_tensors, const char* api,
                std::vector<Edge>& roots, variable_list& grads) {
  EMBER_CHECK(grad_tensors.empty() || grad_tensors.size() == tensors.size(), "[", api, "] got ",
              tensors.size(), " tensors and ", grad_tensors.size(), " gradients; pass one gradient per tensor");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    EMBER_CHECK(t.defined(), "[", api, "] tensor ", i, " is undefined");
    EMBER_CHECK(t.requires_grad(), "[", api, "] element ", i,
                " of tensors does not require grad and does not have a grad_fn; call requires_grad_() on "
                "the leaves, and do not compute it under NoGradGuard");
    Tensor g = grad_tensors.empty() ? Tensor() : grad_tensors[i];
    if (!g.defined()) {
      EMBER_CHECK(t.numel() == 1, "[", api, "] grad can be implicitly created only for scalar outputs; tensor ",
                  i, " has shape ", shape_str(t.sizes()), ", pass a gradient of that shape");
      g = ones_like(t);
    } else {
      EMBER_CHECK(g.sizes() == t.sizes(), "[", api, "] Mismatch in shape: grad_output[", i, "] has a shape of ",
                  shape_str(g.sizes()), " and output[", i, "] has a shape of ", shape_str(t.sizes()));
    }
    roots.push_back(gradient_edge(t));
    grads.push_back(std::move(g));
  }
}

// Note [Deep reentrant backward]: a backward called from inside a node's backward (a custom
// Function that calls backward, or a checkpoint) runs on the calling thread's stack. After
// kMaxReentrantDepth nested backward calls on one thread, the next one runs on a new thread
// with a fresh stack, carrying the caller's grad mode, inference mode and node numbering, while
// the caller waits; so thousands of levels do not overflow the stack (libtorch does the same
// with its worker threads). Errors come back to the caller as they are.
[[gnu::tls_model("initial-exec")]] thread_local int tl_backward_depth = 0;
constexpr int kMaxReentrantDepth = 32;

}  // namespace

namespace detail {
uint64_t next_sequence_nr();             // node.cpp
void set_next_sequence_nr(uint64_t nr);  // node.cpp
}  // namespace detail

namespace {

template <class F>
void run_reentrant_safe(F&& run) {
  if (tl_backward_depth < kMaxReentrantDepth) {
    struct Depth {
      Depth() { ++tl_backward_depth; }
      ~Depth() { --tl_backward_depth; }
    } depth;
    run();
    return;
  }
  const bool grad_mode = GradMode::is_enabled();
  const bool inference = InferenceMode::is_enabled();
  uint64_t sequence_nr = detail::next_sequence_nr();
  std::exception_ptr error;
  std::thread worker([&] {
    InferenceMode inference_mode(inference);
    GradMode::set_enabled(grad_mode);
    detail::set_next_sequence_nr(sequence_nr);
    tl_backward_depth = 1;
    try {
      run();
    } catch (...) {
      error = std::current_exception();
    }
    sequence_nr = detail::next_sequence_nr();
  });
  worker.join();
  detail::set_next_sequence_nr(std::max(sequence_nr, detail::next_sequence_nr()));
  if (error) std::rethrow_exception(error);
}

}  // namespace

bool AnomalyMode::is_enabled() { return g_anomaly.load(std::memory_order_relaxed); }
void AnomalyMode::set_enabled(bool enabled, bool check_nan) {
  g_anomaly_check_nan.store(check_nan, std::memory_order_relaxed);
  g_anomaly.store(enabled, std::memory_order_relaxed);
}
bool AnomalyMode::should_check_nan() { return g_anomaly_check_nan.load(std::memory_order_relaxed); }

void backward(const variable_list& tensors, const variable_list& grad_tensors, std::optional<bool> retain_graph,
              bool create_graph, const variable_list& inputs) {
  if (create_graph) {
    static bool warned = false;
    warn_once(warned,
              "[backward] Using backward() with create_graph=True will create a reference cycle between the "
              "parameter and its gradient, which can leak memory; use autograd::grad() to build a graph of the "
              "gradients, or reset the parameters' grad() to undefined after use to break the cycle");
  }
  std::vector<Edge> roots;
  variable_list grads;
  make_roots(tensors, grad_tensors, "backward", roots, grads);
  // The NonFiniteLoss guard: one scalar read per backward from a loss.
  if (tensors.size() == 1 && tensors[0].numel() == 1 && tensors[0].is_floating_point() &&
      guards::is_enabled(guards::Guard::NonFiniteLoss)) {
    guards::detail::check_loss(tensors[0].item<double>());
  }
  std::unordered_map<Node*, std::vector<Capture>> captures;
  std::unordered_set<Node*> targets;
  std::vector<std::shared_ptr<Node>> keep;
  variable_list retained;
  for (const Tensor& in : inputs) {
    EMBER_CHECK(in.defined() && in.requires_grad(), "[backward] every tensor in inputs must require grad");
    Edge e = gradient_edge(in);
    if (!in.grad_fn()) {
      targets.insert(e.function.get());
      keep.push_back(e.function);
    } else {
      // A non-leaf input accumulates into its grad() like a retained gradient.
      in.retain_grad();
      targets.insert(e.function.get());
    }
  }
  GraphTask task(retain_graph.value_or(create_graph), create_graph);
  run_reentrant_safe([&] { task.run(roots, std::move(grads), captures, targets, !inputs.empty(), nullptr); });
}

variable_list grad(const variable_list& outputs, const variable_list& inputs, const variable_list& grad_outputs,
                   std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  EMBER_CHECK(!inputs.empty(), "[grad] grad requires non-empty inputs. Name the tensors to differentiate with respect to.");
  std::vector<Edge> roots;
  variable_list grads;
  make_roots(outputs, grad_outputs, "grad", roots, grads);
  std::unordered_map<Node*, std::vector<Capture>> captures;
  std::vector<std::shared_ptr<Node>> keep;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    EMBER_CHECK(in.defined() && in.requires_grad(), "[grad] One of the differentiated Tensors does not require grad (input ",
                i, "); call requires_grad_() on it before the forward, or leave it out of inputs");
    Edge e = gradient_edge(in);
    keep.push_back(e.function);
    captures[e.function.get()].push_back({e.input_nr, i});
  }
  variable_list result(inputs.size());
  GraphTask task(retain_graph.value_or(create_graph), create_graph);
  run_reentrant_safe([&] { task.run(roots, std::move(grads), captures, {}, true, &result); });
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (result[i].defined()) {
      if (result[i].dtype() != inputs[i].dtype()) result[i] = result[i].to(inputs[i].dtype());
      if (!create_graph) result[i] = result[i].detach();
      continue;
    }
    EMBER_CHECK(allow_unused, "[grad] One of the differentiated Tensors (input ", i,
                ") appears to not have been used in the graph. Set allow_unused=True (C++: allow_unused = true) if this is the "
                "desired behavior.");
  }
  return result;
}

namespace detail {
const Node* running_node() { return tl_running_node; }

// Used by AutogradContext::needs_input_grad (custom_function.cpp): whether the running
// backward uses the gradient along e (grad() of some inputs trims the others).
bool running_backward_needs(const Edge& e) {
  return tl_running_task == nullptr ? e.is_valid() : tl_running_task->edge_needed(e);
}
}  // namespace detail

}  // namespace ember::autograd
