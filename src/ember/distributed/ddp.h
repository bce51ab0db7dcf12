#pragma once
// DistributedDataParallel (torch.nn.parallel.DistributedDataParallel): data-parallel
// training over a process group. Each rank holds a full replica; after every backward
// the gradients are averaged over the ranks, so an optimizer step is the same everywhere.
//
//   auto ddp = nn::parallel::DistributedDataParallel(model);   // after init_process_group
//   auto loss = F::cross_entropy(ddp(x), y);                    // this rank's share of a batch
//   loss.backward();                                            // gradients averaged here
//   opt.step();
//
// Note [DDP buckets] (implemented by distributed::Reducer, reducer.h): gradients are reduced in buckets: parameters in
// reverse registration order (roughly the order backward produces their gradients), the first bucket closed at
// first_bucket_mb (1 MiB), the next ones at bucket_cap_mb (25 MiB), one dtype per bucket. A post-accumulate-grad hook
// on each parameter copies its gradient into its bucket's flat buffer; a full bucket is divided by the world size and
// its all-reduce started asynchronously (buckets start in index order on every rank), so communication overlaps the
// rest of backward. When the last bucket has started, the hook waits for all of them and writes the averages back into
// the .grad tensors: when backward returns, the gradients are synchronized. A fixed world size gives bit-identical
// results run to run (Gloo's ring reduction has a fixed order).
//
// Note [Bucket rebuild]: like PyTorch, the first synchronized backward records the order
// in which gradients became ready; the next forward rebuilds the buckets once in that
// order (same caps; rank 0's order, broadcast, so that every rank agrees), so that the
// first bucket fills, and its all-reduce starts, as early as the model allows. Not done
// with find_unused_parameters (the order may change from step to step), as in PyTorch.
//
// Construction broadcasts parameters and buffers from rank 0; with broadcast_buffers,
// every forward broadcasts the buffers again (BatchNorm's running statistics).
// no_sync() skips the reduction for backward passes whose forward ran under it
// (gradient accumulation): the next synchronized backward reduces the accumulated sum.
// A parameter that got no gradient leaves its bucket incomplete: the next forward (or
// finish_gradient_sync()) raises an error naming it, unless find_unused_parameters, which
// walks the autograd graph after each forward and counts unreached parameters as ready.
//
// Communication hooks (comm_hooks.h): register_comm_hook(state, hook) replaces each
// bucket's divide-and-all-reduce by hook(state, bucket), which returns a Future of the
// reduced bucket; built-ins in distributed::algorithms::ddp_comm_hooks::default_hooks.
//
// Note [Gradients as bucket views]: with gradient_as_bucket_view, each parameter's .grad
// is a view of its slot in the bucket's buffer (from the first backward on, or from
// construction for gradients that exist then), so nothing is copied between the two:
// backward accumulates into the bucket, the reduction overwrites it in place. A .grad
// replaced by another tensor (zero_grad with set_to_none, set_grad) is copied into the
// bucket by the next synchronized backward, which makes .grad the view again; zero_grad
// without set_to_none zeroes the view in place. A parameter with no gradient on this rank
// contributes zeros; if its .grad was a view, it is first replaced by a copy, so that a
// parameter unused on every rank keeps its gradient, as without the option. Gradients
// are bit-identical to the copying mode's. A bucket rebuild moves the views to the new
// buffers.
//
// Note [Static graph]: static_graph promises that every iteration uses the same
// parameters. The first synchronized iteration finds the unused ones as
// find_unused_parameters does (so a fixed set of unused parameters needs no
// find_unused_parameters) and which of them are used on no rank; later iterations reuse
// both, without the graph walk after the forward and without the all-reduce of the used
// parameters after backward. The buckets are rebuilt after the first iteration even with
// find_unused_parameters (the unused parameters go last). A parameter whose use changes
// raises an error naming it.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/distributed/comm_hooks.h"
#include "ember/distributed/process_group.h"
#include "ember/distributed/reducer.h"
#include "ember/nn/module.h"

namespace ember::nn::parallel {

struct DDPOptions {
  double bucket_cap_mb = 25.0;
  double first_bucket_mb = 1.0;
  bool broadcast_buffers = true;
  bool find_unused_parameters = false;
  // .grad tensors are views of the buckets (Note [Gradients as bucket views]).
  bool gradient_as_bucket_view = false;
  // The same parameters are used every iteration (Note [Static graph]).
  bool static_graph = false;
  // The group to average over; null: the default group.
  distributed::ProcessGroupPtr process_group = nullptr;
};

class DistributedDataParallelImpl : public Module {
 public:
  explicit DistributedDataParallelImpl(std::shared_ptr<Module> module, DDPOptions options = {});
  template <typename Holder, typename = decltype(std::declval<Holder>().ptr())>
  explicit DistributedDataParallelImpl(const Holder& holder, DDPOptions options = {})
      : DistributedDataParallelImpl(std::static_pointer_cast<Module>(holder.ptr()), std::move(options)) {}
  ~DistributedDataParallelImpl() override;

  // Prepares the reducer for the coming backward, then runs the wrapped module.
  Tensor forward(const Tensor& input) override;
  // For wrapped modules with another forward signature: call prepare_forward() before
  // running the module yourself and after_forward(outputs) with what it returned.
  void prepare_forward();
  void after_forward(const std::vector<Tensor>& outputs);

  // The wrapped module.
  const std::shared_ptr<Module>& module() const { return module_; }

  // While a NoSync is alive, forwards are not followed by gradient reduction.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallelImpl& ddp) : ddp_(&ddp), previous_(ddp.require_sync_) {
      ddp.require_sync_ = false;
    }
    ~NoSync() {
      if (ddp_) ddp_->require_sync_ = previous_;
    }
    NoSync(NoSync&& o) noexcept : ddp_(std::exchange(o.ddp_, nullptr)), previous_(o.previous_) {}
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    NoSync& operator=(NoSync&&) = delete;

   private:
    DistributedDataParallelImpl* ddp_;
    bool previous_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  // Throws when the last synchronized backward left gradients unreduced (a parameter got
  // no gradient); forward() calls it. Harmless to call before optimizer.step().
  void finish_gradient_sync();

  // Replaces each bucket's reduction by hook(state, bucket) (comm_hooks.h), e.g.
  //   ddp->register_comm_hook(ddp->process_group(), default_hooks::allreduce_hook);
  // hook: callable as hook(State&, distributed::GradBucket&) -> distributed::FuturePtr.
  // Once per DDP, before the first backward (an ember::Error otherwise).
  template <typename State, typename Hook>
  void register_comm_hook(State state, Hook hook) {
    reducer_->register_comm_hook([state = std::move(state), hook = std::move(hook)](
                                     distributed::GradBucket& bucket) mutable { return hook(state, bucket); });
  }

  // The parameter names of each bucket, bucket 0 first (reduced first).
  std::vector<std::vector<std::string>> bucket_names() const { return reducer_->bucket_names(); }
  // Whether the buckets were rebuilt from the observed gradient order (Note [Bucket rebuild]).
  bool buckets_rebuilt() const { return reducer_->buckets_rebuilt(); }
  // Each bucket's flat gradient buffer, bucket 0 first.
  std::vector<Tensor> bucket_buffers() const { return reducer_->bucket_buffers(); }
  const distributed::ProcessGroupPtr& process_group() const { return group_; }
  const DDPOptions& options() const { return options_; }

 private:
  std::shared_ptr<Module> module_;
  DDPOptions options_;
  distributed::ProcessGroupPtr group_;
  std::vector<Tensor> buffers_;
  std::unique_ptr<distributed::Reducer> reducer_;
  bool require_sync_ = true;  // no_sync() clears it
};
EMBER_MODULE(DistributedDataParallel);

}  // namespace ember::nn::parallel
