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
// Note [DDP buckets] (implemented by distributed::Reducer, reducer.h): gradients are reduced in buckets: parameters in reverse
// registration order (roughly the order backward produces their gradients), the first
// bucket closed at first_bucket_mb (1 MiB), the next ones at bucket_cap_mb (25 MiB), one
// dtype per bucket. A post-accumulate-grad hook on each parameter copies its gradient
// into its bucket's flat buffer; a full bucket is divided by the world size and its
// all-reduce started asynchronously (buckets start in index order on every rank), so
// communication overlaps the rest of backward. When the last bucket has started, the
// hook waits for all of them and writes the averages back into the .grad tensors: when
// backward returns, the gradients are synchronized. A fixed world size gives
// bit-identical results run to run (Gloo's ring reduction has a fixed order).
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

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/distributed/process_group.h"
#include "ember/distributed/reducer.h"
#include "ember/nn/module.h"

namespace ember::nn::parallel {

struct DDPOptions {
  double bucket_cap_mb = 25.0;
  double first_bucket_mb = 1.0;
  bool broadcast_buffers = true;
  bool find_unused_parameters = false;
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

  // The parameter names of each bucket, bucket 0 first (reduced first).
  std::vector<std::vector<std::string>> bucket_names() const { return reducer_->bucket_names(); }
  // Whether the buckets were rebuilt from the observed gradient order (Note [Bucket rebuild]).
  bool buckets_rebuilt() const { return reducer_->buckets_rebuilt(); }
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
