// Reducer: DistributedDataParallel's gradient averaging, Note [DDP buckets] in ddp.h.

#include "ember/distributed/reducer.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_set>

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
    if (b.work) {
      try {
        b.work->wait();
      } catch (...) {
      }
    }
  }
}

void Reducer::prepare_forward(bool require_sync) {
  finish_gradient_sync();
  maybe_rebuild_buckets();
  sync_this_backward_ = require_sync;
  std::fill(unused_.begin(), unused_.end(), 0);
}

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
    b.work.reset();
  }
}

void Reducer::finish_gradient_sync() {
  if (!in_progress_) return;
  std::vector<std::string> missing;
  for (size_t i = 0; i < params_.size(); ++i)
    if (!ready_[i]) missing.push_back(names_[i]);
  // Leave a clean state behind, so that a caught error does not repeat forever.
  for (auto& b : buckets_) {
    if (b.work) {
      try {
        b.work->wait();
      } catch (...) {
      }
    }
  }
  reset_iteration();
  ready_order_.clear();  // an incomplete order is no basis for a rebuild
  std::ostringstream os;
  os << "[" << op_ << "] the last backward did not produce gradients for " << missing.size() << " of "
     << params_.size() << " parameters on rank " << get_rank() << ", so their gradients were never "
     << "averaged: ";
  for (size_t i = 0; i < missing.size() && i < 10; ++i) os << (i ? ", " : "") << "'" << missing[i] << "'";
  if (missing.size() > 10) os << ", ... (" << missing.size() - 10 << " more)";
  os << ". Pass find_unused_parameters=true if parts of the model are skipped on purpose, or make every "
        "parameter take part in the loss";
  throw Error(os.str());
}

void Reducer::maybe_rebuild_buckets() {
  if (rebuilt_ || options_.find_unused_parameters || ready_order_.size() != params_.size()) return;
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
  if (!options_.find_unused_parameters || !sync_this_backward_ || !GradMode::is_enabled()) return;
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


void Reducer::on_grad_ready(size_t index) {
  if (!sync_this_backward_ || group_->size() == 1) return;
  if (!in_progress_) {
    in_progress_ = true;
    // Parameters the forward did not reach are ready from the start (their slots are 0).
    for (size_t i = 0; i < params_.size(); ++i)
      if (unused_[i]) mark_ready(i, false);
  }
  EMBER_CHECK(!ready_[index], "[", op_, "] parameter '", names_[index],
              "' received its gradient twice in one backward pass (or in two backward passes after one forward); "
              "DDP reduces each gradient once per iteration: run a forward before each backward");
  mark_ready(index, true);
  if (!rebuilt_ && !options_.find_unused_parameters) ready_order_.push_back(index);
  launch_ready_buckets();
  if (next_launch_ == buckets_.size()) finalize();
}

void Reducer::mark_ready(size_t index, bool has_grad) {
  if (ready_[index]) return;
  ready_[index] = 1;
  used_[index] = has_grad ? 1 : 0;
  ++ready_count_;
  Bucket& b = buckets_[bucket_of_[index]];
  const size_t s = slot_of_[index];
  const Tensor& p = params_[index];
  NoGradGuard ng;
  Tensor dst = b.flat.narrow(0, b.offsets[s], p.numel());
  const Tensor& g = p.grad();
  if (has_grad && g.defined()) {
    dst.copy_(g.reshape({-1}));
  } else {
    dst.zero_();
  }
  --b.pending;
}

void Reducer::launch_ready_buckets() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& b = buckets_[next_launch_];
    {
      NoGradGuard ng;
      b.flat.div_(group_->size());
    }
    b.work = all_reduce(b.flat, ReduceOp::SUM, group_, /*async_op=*/true);
    ++next_launch_;
  }
}

void Reducer::finalize() {
  for (auto& b : buckets_) b.work->wait();
  std::vector<int32_t> global_used;
  if (options_.find_unused_parameters) {
    // Which parameters got a gradient on some rank: the others keep their .grad as is.
    std::vector<int32_t> local(used_.begin(), used_.end());
    Tensor counts = tensor(std::vector<int32_t>(local));
    all_reduce(counts, ReduceOp::SUM, group_);
    global_used = counts.to_vector<int32_t>();
  }
  NoGradGuard ng;
  for (auto& b : buckets_) {
    for (size_t s = 0; s < b.params.size(); ++s) {
      const size_t i = b.params[s];
      if (!global_used.empty() && global_used[i] == 0) continue;
      Tensor& p = params_[i];
      Tensor avg = b.flat.narrow(0, b.offsets[s], p.numel()).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(avg);
      } else {
        p.set_grad(avg.clone());
      }
    }
  }
  reset_iteration();
}

}  // namespace ember::distributed
