// Reducer: DistributedDataParallel's gradient averaging, Note [DDP buckets] in ddp.h.

#include "ember/distributed/reducer.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_set>

#include "ember/autograd/autograd_meta.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/node.h"
#include "ember/core/check.h"
#include "ember/distributed/distributed.h"
#include "ember/ops/creation.h"

namespace ember::distributed {

Reducer::Reducer(std::vector<std::string> names, std::vector<Tensor> params, ProcessGroupPtr group,
                 ReducerOptions options, std::string op)
    : op_(std::move(op)),
      options_(options),
      group_(group ? std::move(group) : default_group()),
      names_(std::move(names)),
      params_(std::move(params)) {
  EMBER_CHECK(options_.bucket_cap_mb > 0 && options_.first_bucket_mb > 0, "[", op_, "] bucket_cap_mb (",
              options_.bucket_cap_mb, ") and first_bucket_mb (", options_.first_bucket_mb, ") must be positive");
  EMBER_CHECK(names_.size() == params_.size(), "[", op_, "] got ", names_.size(), " names for ", params_.size(),
              " parameters; pass one name per parameter");
  for (size_t i = 0; i < params_.size(); ++i) {
    EMBER_CHECK(params_[i].defined() && params_[i].requires_grad(), "[", op_, "] parameter '", names_[i],
                "' does not require grad; pass only the parameters to train");
  }
  std::vector<size_t> reversed;
  for (size_t k = params_.size(); k-- > 0;) reversed.push_back(k);
  build_buckets(reversed);
  ready_.assign(params_.size(), 0);
  used_.assign(params_.size(), 0);
  unused_.assign(params_.size(), 0);
  for (size_t i = 0; i < params_.size(); ++i) {
    hooks_.push_back(params_[i].register_post_accumulate_grad_hook([this, i](const Tensor&) { on_grad_ready(i); }));
  }
}

Reducer::~Reducer() {
  for (auto& h : hooks_) h.remove();
  // Reductions still in flight write into the buckets: let them finish.
  for (auto& b : buckets_) {
    if (b.future) {
      try {
        b.future->wait();
      } catch (...) {
      }
    }
  }
}

void Reducer::register_comm_hook(CommHook hook) {
  EMBER_CHECK(hook != nullptr, "[", op_, ".register_comm_hook] the hook is empty; pass a function of a GradBucket");
  EMBER_CHECK(comm_hook_ == nullptr, "[", op_,
              ".register_comm_hook] a communication hook is already registered, and register_comm_hook can be "
              "called only once (as in PyTorch); combine both into one hook");
  EMBER_CHECK(!backward_seen_, "[", op_,
              ".register_comm_hook] called after a backward pass; register the hook before the first backward "
              "(right after constructing ",
              op_, ")");
  comm_hook_ = std::move(hook);
}

void Reducer::prepare_forward(bool require_sync) {
  finish_gradient_sync();
  maybe_rebuild_buckets();
  sync_this_backward_ = require_sync;
  // Note [Static graph]: once known, the unused parameters are the first iteration's.
  if (static_known_) {
    unused_ = static_unused_;
  } else {
    std::fill(unused_.begin(), unused_.end(), 0);
  }
}

Tensor Reducer::slot_view(size_t i) const {
  const Bucket& b = buckets_[bucket_of_[i]];
  return b.flat.narrow(0, b.offsets[slot_of_[i]], params_[i].numel()).view(params_[i].sizes());
}

namespace {
// True when a and b are the same elements of the same storage.
bool same_memory(const Tensor& a, const Tensor& b) {
  return a.is_alias_of(b) && a.data_ptr() == b.data_ptr() && a.sizes() == b.sizes() && a.strides() == b.strides();
}
}  // namespace

void Reducer::build_buckets(const std::vector<size_t>& order) {
  // One open bucket per dtype; a bucket closes once it reaches its cap (the first one at
  // first_bucket_mb).
  struct Open {
    std::vector<size_t> params;
    size_t bytes = 0;
  };
  std::map<DType, Open> open;
  std::vector<std::vector<size_t>> closed;
  bool first = true;
  auto cap = [&] {
    return static_cast<size_t>((first ? options_.first_bucket_mb : options_.bucket_cap_mb) * 1024.0 * 1024.0);
  };
  std::vector<size_t> position(params_.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  for (size_t k : order) {
    Open& o = open[params_[k].dtype()];
    o.params.push_back(k);
    o.bytes += params_[k].nbytes();
    if (o.bytes >= cap()) {
      closed.push_back(std::move(o.params));
      o = Open{};
      first = false;
    }
  }
  for (auto& [dtype, o] : open)
    if (!o.params.empty()) closed.push_back(std::move(o.params));
  // Buckets in the order their first parameter comes in `order`.
  std::stable_sort(closed.begin(), closed.end(), [&](const std::vector<size_t>& a, const std::vector<size_t>& b) {
    return position[a[0]] < position[b[0]];
  });
  bucket_of_.assign(params_.size(), 0);
  slot_of_.assign(params_.size(), 0);
  buckets_.clear();
  for (size_t bi = 0; bi < closed.size(); ++bi) {
    Bucket b;
    b.params = closed[bi];
    int64_t n = 0;
    for (size_t s = 0; s < b.params.size(); ++s) {
      bucket_of_[b.params[s]] = bi;
      slot_of_[b.params[s]] = s;
      b.offsets.push_back(n);
      n += params_[b.params[s]].numel();
    }
    b.flat = zeros({n}, TensorOptions(params_[b.params[0]].dtype()));
    b.pending = b.params.size();
    buckets_.push_back(std::move(b));
  }
  if (options_.gradient_as_bucket_view) {
    // Gradients that exist already move into the (new) buckets.
    NoGradGuard ng;
    for (size_t i = 0; i < params_.size(); ++i) {
      const Tensor& g = params_[i].grad();
      if (!g.defined()) continue;
      Tensor view = slot_view(i);
      view.copy_(g);
      params_[i].set_grad(view);
    }
  }
}

std::vector<Tensor> Reducer::bucket_buffers() const {
  std::vector<Tensor> out;
  for (const auto& b : buckets_) out.push_back(b.flat);
  return out;
}

std::vector<std::vector<std::string>> Reducer::bucket_names() const {
  std::vector<std::vector<std::string>> out;
  for (const auto& b : buckets_) {
    out.emplace_back();
    for (size_t p : b.params) out.back().push_back(names_[p]);
  }
  return out;
}

void Reducer::reset_iteration() {
  std::fill(ready_.begin(), ready_.end(), 0);
  std::fill(used_.begin(), used_.end(), 0);
  ready_count_ = 0;
  next_launch_ = 0;
  in_progress_ = false;
  for (auto& b : buckets_) {
    b.pending = b.params.size();
    b.future.reset();
  }
}

void Reducer::abandon_iteration() {
  for (auto& b : buckets_) {
    if (b.future) {
      try {
        b.future->wait();
      } catch (...) {
      }
    }
  }
  reset_iteration();
}

void Reducer::finish_gradient_sync() {
  if (!in_progress_) return;
  std::vector<std::string> missing;
  for (size_t i = 0; i < params_.size(); ++i)
    if (!ready_[i]) missing.push_back(names_[i]);
  // Leave a clean state behind, so that a caught error does not repeat forever.
  abandon_iteration();
  ready_order_.clear();  // an incomplete order is no basis for a rebuild
  std::ostringstream os;
  os << "[" << op_ << "] the last backward did not produce gradients for " << missing.size() << " of " << params_.size()
     << " parameters on rank " << get_rank() << ", so their gradients were never "
     << "averaged: ";
  for (size_t i = 0; i < missing.size() && i < 10; ++i) os << (i ? ", " : "") << "'" << missing[i] << "'";
  if (missing.size() > 10) os << ", ... (" << missing.size() - 10 << " more)";
  if (static_known_) {
    os << ". With static_graph=true the parameters that get gradients must be those of the first iteration; "
          "construct it without static_graph (and with find_unused_parameters=true) if they change";
  } else {
    os << ". Pass find_unused_parameters=true if parts of the model are skipped on purpose, or make every "
          "parameter take part in the loss";
  }
  throw Error(os.str());
}

void Reducer::maybe_rebuild_buckets() {
  // With find_unused_parameters the order may change from step to step, unless the graph
  // is static (Note [Static graph]).
  if (rebuilt_ || (options_.find_unused_parameters && !options_.static_graph) || ready_order_.size() != params_.size())
    return;
  // Rank 0's order everywhere: the ranks' orders agree for the same model, but a bucket
  // layout that differed between ranks would reduce unrelated gradients together.
  std::vector<int64_t> order(ready_order_.begin(), ready_order_.end());
  Tensor t = tensor(order);
  broadcast(t, group_->global_rank(0), group_);
  std::vector<size_t> agreed;
  for (int64_t k : t.to_vector<int64_t>()) agreed.push_back(static_cast<size_t>(k));
  build_buckets(agreed);
  rebuilt_ = true;
  ready_order_.clear();
}

void Reducer::after_forward(const std::vector<Tensor>& outputs) {
  // Note [Static graph]: the walk runs until the first synchronized iteration has fixed the
  // unused parameters.
  const bool search = options_.static_graph ? !static_known_ : options_.find_unused_parameters;
  if (!search || !sync_this_backward_ || !GradMode::is_enabled()) return;
  // Parameters the outputs' graph does not reach get no gradient this iteration.
  std::unordered_set<const TensorImpl*> reached;
  std::unordered_set<const autograd::Node*> seen;
  std::vector<std::shared_ptr<autograd::Node>> stack;
  for (const auto& o : outputs) {
    if (!o.defined()) continue;
    if (o.grad_fn()) {
      stack.push_back(o.grad_fn());
    } else if (o.requires_grad()) {
      reached.insert(o.impl());
    }
  }
  while (!stack.empty()) {
    auto node = std::move(stack.back());
    stack.pop_back();
    if (!node || !seen.insert(node.get()).second) continue;
    if (auto* acc = dynamic_cast<autograd::AccumulateGrad*>(node.get())) reached.insert(acc->variable().impl());
    for (const auto& e : node->next_edges())
      if (e.function) stack.push_back(e.function);
  }
  for (size_t i = 0; i < params_.size(); ++i) unused_[i] = reached.count(params_[i].impl()) ? 0 : 1;
}

void Reducer::keep_accumulation_counts(size_t index) {
  // Note [Counting accumulations] (autograd/node.cpp) restarts a gradient's count when its
  // storage changed since its last accumulation. View grads share their bucket's storage,
  // so another parameter's accumulation into the same bucket would restart it too. When
  // the storage moved by exactly this accumulation since the last one in the bucket, the
  // gradients that were current then are current now. Anything else (zero_grad, a
  // reduction) restarts them, as the copy back into .grad does without the option.
  const Tensor& g = params_[index].grad();
  Bucket& b = buckets_[bucket_of_[index]];
  if (!g.defined() || !g.is_alias_of(b.flat)) return;
  const uint32_t now = g._version();
  if (now == b.version_seen + 1) {
    for (size_t p : b.params) {
      autograd::AutogradMeta* meta = params_[p].impl()->autograd_meta();
      if (meta && meta->grad.defined() && meta->grad.is_alias_of(b.flat) && meta->grad_version == b.version_seen) {
        meta->grad_version = now;
      }
    }
  }
  b.version_seen = now;
}

void Reducer::on_grad_ready(size_t index) {
  backward_seen_ = true;
  if (options_.gradient_as_bucket_view) keep_accumulation_counts(index);
  // One rank has nothing to average, unless a hook wants to see the buckets or the
  // gradients are to become views of them.
  if (!sync_this_backward_ || (group_->size() == 1 && !comm_hook_ && !options_.gradient_as_bucket_view)) return;
  if (!in_progress_) {
    in_progress_ = true;
    // Parameters the forward did not reach are ready from the start (their slots are 0).
    for (size_t i = 0; i < params_.size(); ++i)
      if (unused_[i]) mark_ready(i, false);
  }
  EMBER_CHECK(!(static_known_ && static_unused_[index]), "[", op_, "] parameter '", names_[index],
              "' got a gradient, but none in the first iteration; with static_graph=true the parameters that get "
              "gradients must stay those of the first iteration: construct it without static_graph (and with "
              "find_unused_parameters=true) if they change");
  EMBER_CHECK(!ready_[index], "[", op_, "] parameter '", names_[index],
              "' received its gradient twice in one backward pass (or in two backward passes after one forward); "
              "DDP reduces each gradient once per iteration: run a forward before each backward");
  mark_ready(index, true);
  if (!rebuilt_ && (!options_.find_unused_parameters || options_.static_graph)) ready_order_.push_back(index);
  launch_ready_buckets();
  if (next_launch_ == buckets_.size()) finalize();
}

void Reducer::mark_ready(size_t index, bool has_grad) {
  if (ready_[index]) return;
  ready_[index] = 1;
  used_[index] = has_grad ? 1 : 0;
  ++ready_count_;
  Bucket& b = buckets_[bucket_of_[index]];
  Tensor& p = params_[index];
  NoGradGuard ng;
  Tensor dst = slot_view(index);
  const Tensor g = p.grad();
  // Writing this slot leaves the other view grads' accumulation counts alone (the
  // copying mode does not touch them either).
  const uint32_t before = b.flat._version();
  if (has_grad && g.defined()) {
    // Note [Gradients as bucket views]: a view grad is in place already.
    if (!same_memory(g, dst)) {
      dst.copy_(g);
      if (options_.gradient_as_bucket_view) p.set_grad(dst);
    }
  } else {
    // This rank contributes zeros. A view grad is moved out first, so that a parameter
    // unused on every rank keeps its gradient as the copying mode does.
    if (g.defined() && same_memory(g, dst)) p.set_grad(g.clone());
    dst.zero_();
  }
  if (options_.gradient_as_bucket_view) {
    const uint32_t after = b.flat._version();
    for (size_t k : b.params) {
      autograd::AutogradMeta* meta = params_[k].impl()->autograd_meta();
      if (k != index && meta && meta->grad.defined() && meta->grad.is_alias_of(b.flat) &&
          meta->grad_version == before) {
        meta->grad_version = after;
      }
    }
    if (b.version_seen == before) b.version_seen = after;
  }
  --b.pending;
}

void Reducer::launch_ready_buckets() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    const size_t index = next_launch_;
    Bucket& b = buckets_[index];
    if (comm_hook_) {
      std::vector<Tensor> params;
      for (size_t p : b.params) params.push_back(params_[p]);
      GradBucket gb(index, index + 1 == buckets_.size(), b.flat, b.offsets, std::move(params));
      try {
        b.future = comm_hook_(gb);
      } catch (...) {
        abandon_iteration();
        throw;
      }
      if (!b.future) {
        abandon_iteration();
        EMBER_ERROR("[", op_, ".register_comm_hook] the hook returned a null future for bucket ", index,
                    "; return the Future of its reduction (e.g. Future::from_work(work, bucket.buffer()))");
      }
    } else {
      {
        NoGradGuard ng;
        b.flat.div_(group_->size());
      }
      b.future = Future::from_work(all_reduce(b.flat, ReduceOp::SUM, group_, /*async_op=*/true), b.flat);
    }
    ++next_launch_;
  }
}

void Reducer::finalize() {
  // The reduced values land in each bucket's buffer (a hook may return another tensor).
  for (size_t bi = 0; bi < buckets_.size(); ++bi) {
    Bucket& b = buckets_[bi];
    Tensor result;
    try {
      result = b.future->wait();
    } catch (...) {
      abandon_iteration();
      throw;
    }
    if (!result.defined() || result.numel() != b.flat.numel() || result.dtype() != b.flat.dtype()) {
      abandon_iteration();
      EMBER_ERROR("[", op_, ".register_comm_hook] the future of bucket ", bi, " holds ",
                  result.defined()
                      ? std::to_string(result.numel()) + " elements of " + std::string(dtype_name(result.dtype()))
                      : std::string("an undefined tensor"),
                  ", but the bucket has ", b.flat.numel(), " elements of ", dtype_name(b.flat.dtype()),
                  "; the hook's result must have the shape and dtype of bucket.buffer()");
    }
    if (!same_memory(result, b.flat)) {
      NoGradGuard ng;
      b.flat.copy_(result.reshape({-1}));
    }
  }
  std::vector<int32_t> global_used;
  if (static_known_) {
    global_used = static_global_used_;
  } else if (options_.find_unused_parameters || options_.static_graph) {
    // Which parameters got a gradient on some rank: the others keep their .grad as is.
    std::vector<int32_t> local(used_.begin(), used_.end());
    Tensor counts = tensor(std::vector<int32_t>(local));
    all_reduce(counts, ReduceOp::SUM, group_);
    global_used = counts.to_vector<int32_t>();
  }
  if (options_.static_graph && !static_known_) {
    // Note [Static graph]: this iteration fixes the unused parameters; they go last in the
    // order the buckets are rebuilt in.
    static_unused_.assign(params_.size(), 0);
    for (size_t i = 0; i < params_.size(); ++i) {
      if (used_[i]) continue;
      static_unused_[i] = 1;
      if (!rebuilt_) ready_order_.push_back(i);
    }
    static_global_used_ = global_used;
    static_known_ = true;
  }
  NoGradGuard ng;
  for (auto& b : buckets_) {
    for (size_t s = 0; s < b.params.size(); ++s) {
      const size_t i = b.params[s];
      if (!global_used.empty() && global_used[i] == 0) continue;
      Tensor& p = params_[i];
      Tensor avg = b.flat.narrow(0, b.offsets[s], p.numel()).view(p.sizes());
      if (options_.gradient_as_bucket_view) {
        // Note [Gradients as bucket views]: only a parameter unused on this rank has no view yet.
        if (!p.grad().defined() || !same_memory(p.grad(), avg)) p.set_grad(avg);
      } else if (p.grad().defined()) {
        p.mutable_grad().copy_(avg);
      } else {
        p.set_grad(avg.clone());
      }
    }
  }
  reset_iteration();
}

}  // namespace ember::distributed
