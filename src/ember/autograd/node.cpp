#include "ember/autograd/node.h"

#include <atomic>

#include "ember/autograd/autograd_meta.h"
#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/ops/creation.h"

namespace ember::autograd {

namespace {
[[gnu::tls_model("initial-exec")]] thread_local uint64_t t_sequence_nr = 0;
std::atomic<int> g_hook_id{0};
}  // namespace

Node::Node() : sequence_nr_(t_sequence_nr++) {}

const std::string& Node::forward_trace() const {
  static const std::string none;
  return anomaly_ ? anomaly_->trace : none;
}

void Node::set_forward_trace(std::string trace, const Node* parent) {
  auto record = std::make_shared<AnomalyRecord>();
  record->trace = std::move(trace);
  if (parent != nullptr && parent->anomaly_) {
    record->parent_name = parent->name();
    record->parent = parent->anomaly_;
  }
  anomaly_ = std::move(record);
}

namespace detail {
// The engine's reentrant backward on a new thread continues this thread's numbering
// (Note [Deep reentrant backward], engine.cpp).
uint64_t next_sequence_nr() { return t_sequence_nr; }
void set_next_sequence_nr(uint64_t nr) { t_sequence_nr = nr; }
}  // namespace detail
Node::~Node() = default;

std::vector<std::pair<std::shared_ptr<Node>, uint32_t>> Node::next_functions() const {
  std::vector<std::pair<std::shared_ptr<Node>, uint32_t>> out;
  out.reserve(next_edges_.size());
  for (const Edge& e : next_edges_) out.emplace_back(e.function, e.input_nr);
  return out;
}

uint32_t Node::add_input_metadata(const Tensor& t) {
  if (t.defined()) {
    input_meta_.push_back({DimVector(t.sizes()), t.dtype()});
  } else {
    input_meta_.push_back({});  // an undefined output keeps the output numbering
  }
  return static_cast<uint32_t>(input_meta_.size() - 1);
}

int Node::add_pre_hook(uint32_t output_nr, GradHook hook) {
  const int id = ++g_hook_id;
  pre_hooks_.push_back({id, output_nr, std::move(hook)});
  return id;
}

void Node::remove_pre_hook(int id) {
  for (auto it = pre_hooks_.begin(); it != pre_hooks_.end(); ++it) {
    if (it->id == id) {
      pre_hooks_.erase(it);
      return;
    }
  }
}

void Node::run_pre_hooks(variable_list& grads) {
  // Copy: a hook may register or remove hooks.
  const std::vector<PreHook> hooks = pre_hooks_;
  for (const PreHook& h : hooks) {
    if (h.output_nr >= grads.size() || !grads[h.output_nr].defined()) continue;
    Tensor replaced = h.fn(grads[h.output_nr]);
    if (replaced.defined()) grads[h.output_nr] = std::move(replaced);
  }
}

// ---- SavedVariable ----

SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  EMBER_CHECK(!t.is_inference(),
              "[autograd] Inference tensors cannot be saved for backward. clone() the tensor "
              "outside InferenceMode to get a normal tensor and use that in autograd");
  was_defined_ = true;
  is_output_ = is_output;
  version_ = t._version();
  requires_grad_ = t.requires_grad();
  if (is_output) {
    // An alias without autograd state: holding the output itself would keep its
    // grad_fn (this node) alive from inside the node.
    output_nr_ = t.output_nr();
    data_ = Tensor(IntrusivePtr<TensorImpl>::make(t.impl()->storage(), t.dtype(), t.sizes(), t.strides(),
                                                   t.storage_offset()));
  } else {
    data_ = t;
  }
  if (!(t.is_leaf() && requires_grad_)) bytes_ = guards::detail::SavedBytes(static_cast<int64_t>(t.nbytes()));
}

void SavedVariable::reset() {
  if (!was_defined_) return;
  bytes_.release();
  data_ = Tensor();
  released_ = true;
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& node) const {
  if (!was_defined_) return Tensor();
  EMBER_CHECK(!released_,
              "[autograd] Trying to backward through the graph a second time (or directly access "
              "saved tensors after they have already been freed). Saved intermediate values of the "
              "graph are freed when you call backward() or autograd::grad(). Specify "
              "retain_graph=true if you need to backward through the graph a second time or if you "
              "need to access saved tensors after calling backward.");
  const uint32_t now = data_._version();
  if (now != version_) {
    std::string who;
    if (is_output_ && node) {
      who = ", which is output " + std::to_string(output_nr_) + " of " + node->name() + ",";
    } else if (data_.grad_fn()) {
      who = ", which is output " + std::to_string(data_.output_nr()) + " of " + data_.grad_fn()->name() + ",";
    }
    std::string shape = "[";
    for (size_t i = 0; i < data_.sizes().size(); ++i) shape += (i ? ", " : "") + std::to_string(data_.sizes()[i]);
    shape += "]";
    EMBER_ERROR("[autograd] one of the variables needed for gradient computation has been modified "
                "by an inplace operation: [", dtype_name(data_.dtype()), " ", shape, "]", who,
                " is at version ", now, "; expected version ", version_,
                " instead. Hint: enable anomaly detection (ember::autograd::DetectAnomalyGuard) to "
                "find the forward op that saved it, and clone() the tensor before modifying it in "
                "place.");
  }
  if (!is_output_ || !requires_grad_ || !node || !GradMode::is_enabled()) return data_;
  // Give the saved output its history back, so double backward through it works.
  Tensor out(IntrusivePtr<TensorImpl>::make(data_.impl()->storage(), data_.dtype(), data_.sizes(),
                                            data_.strides(), data_.storage_offset()));
  AutogradMeta& meta = out.impl()->ensure_autograd_meta();
  meta.requires_grad = true;
  meta.grad_fn = node;
  meta.output_nr = output_nr_;
  return out;
}

// ---- AccumulateGrad ----

AccumulateGrad::AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {
  // Leaves run as soon as their gradient is complete.
  input_meta_.push_back({DimVector(variable_.sizes()), variable_.dtype()});
}

variable_list AccumulateGrad::apply(variable_list&& grads) {
  Tensor g = std::move(grads[0]);
  if (!g.defined()) return {};
  AutogradMeta& meta = variable_.impl()->ensure_autograd_meta();
  const auto hooks = meta.leaf_hooks;
  for (const auto& h : hooks) {
    if (!h) continue;
    Tensor r = h(g);
    if (r.defined()) g = std::move(r);
  }
  // Note [Counting accumulations]: grad_accumulations counts the backward passes summed into
  // grad since it was created or cleared (zero_grad); a grad changed in place by anything
  // else since the last accumulation (e.g. the user's grad.zero_()) starts a new count.
  const bool restart = !meta.grad.defined() || meta.grad._version() != meta.grad_version;
  meta.grad_accumulations = restart ? 1 : meta.grad_accumulations + 1;
  if (!meta.grad.defined()) {
    // Steal the incoming tensor only when nothing else can see its memory (a user's
    // gradient, or another alias of the same storage, must not be written by later
    // accumulation); otherwise own a copy. Under create_graph keep its history.
    // A view whose base is referenced only by the view itself (e.g. the transpose of a
    // temporary) shares the storage with nothing else either.
    const IntrusivePtr<TensorImpl>& base = g.impl()->view_base_ptr();
    const uint32_t storage_refs =
        base && base.use_count() == 1 && base->storage().get() == g.impl()->storage().get() ? 2u : 1u;
    const bool unique = g.use_count() == 1 && g.impl()->storage().use_count() == storage_refs && g.is_contiguous() &&
                        g.storage_offset() == 0;
    if (GradMode::is_enabled()) {
      meta.grad = unique ? g : g.clone();
    } else {
      meta.grad = unique && !g.requires_grad() ? g : g.detach().clone();
    }
  } else if (GradMode::is_enabled()) {
    meta.grad = meta.grad + g;  // out of place: the old grad may be part of a graph
  } else {
    meta.grad.add_(g);
  }
  meta.grad_version = meta.grad._version();
  const auto post = meta.post_accumulate_hooks;
  for (const auto& h : post) {
    if (h) h(variable_);
  }
  return {};
}

variable_list NotDifferentiable::apply(variable_list&&) {
  EMBER_ERROR("[autograd] the derivative of '", op_, "' is not implemented");
}

}  // namespace ember::autograd
