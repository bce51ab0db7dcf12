#pragma once
// Reducer: the gradient averaging behind DistributedDataParallel (Note [DDP buckets] in
// ddp.h), over a plain list of parameters, so that any front end can use it: the C++
// module wrapper (ddp.h) and the Python one (ember.nn.parallel.DistributedDataParallel,
// whose modules are Python objects). As torch's C++ Reducer, it knows nothing of modules:
// the caller calls prepare_forward() before each forward and after_forward(outputs) after
// it; post-accumulate-grad hooks on the parameters do the rest during backward.

#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/distributed/comm_hooks.h"
#include "ember/distributed/process_group.h"

namespace ember::distributed {

struct ReducerOptions {
  double bucket_cap_mb = 25.0;
  double first_bucket_mb = 1.0;
  bool find_unused_parameters = false;
  // Note [Gradients as bucket views]: each .grad is a view of its bucket's buffer.
  bool gradient_as_bucket_view = false;
  // Note [Static graph]: the same parameters get gradients every iteration.
  bool static_graph = false;
};

class Reducer {
 public:
  // params: the parameters to average (each requires grad), names: theirs, for messages.
  // `op` names the front end in errors ("DistributedDataParallel"). Registers a hook on
  // every parameter (removed by the destructor); collectives are not issued here.
  Reducer(std::vector<std::string> names, std::vector<Tensor> params, ProcessGroupPtr group,
          ReducerOptions options = {}, std::string op = "DistributedDataParallel");
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Before a forward: raises if the last synchronized backward left gradients unreduced,
  // rebuilds the buckets once (Note [Bucket rebuild]; a broadcast on the group), and
  // decides whether the coming backward reduces (require_sync = false under no_sync()).
  void prepare_forward(bool require_sync);
  // After the forward, with its output tensors: with find_unused_parameters (or static_graph,
  // until its first synchronized iteration), walks their autograd graph and counts
  // unreached parameters as ready.
  void after_forward(const std::vector<Tensor>& outputs);
  // Throws when the last synchronized backward left gradients unreduced (a parameter got
  // no gradient); prepare_forward() calls it.
  void finish_gradient_sync();

  // Replaces each bucket's reduction by hook (comm_hooks.h). Once per Reducer, before the
  // first backward.
  void register_comm_hook(CommHook hook);

  std::vector<std::vector<std::string>> bucket_names() const;
  // Each bucket's flat buffer, bucket 0 first (with gradient_as_bucket_view, the .grad
  // tensors are views of these).
  std::vector<Tensor> bucket_buffers() const;
  bool buckets_rebuilt() const { return rebuilt_; }
  const ReducerOptions& options() const { return options_; }
  const ProcessGroupPtr& process_group() const { return group_; }

 private:
  struct Bucket {
    std::vector<size_t> params;    // indices into params_
    std::vector<int64_t> offsets;  // element offset of each in flat
    Tensor flat;
    size_t pending = 0;         // parameters not ready yet this iteration
    FuturePtr future;           // the reduction in flight
    uint32_t version_seen = 0;  // flat's version after the last accumulation (keep_accumulation_counts)
  };

  void build_buckets(const std::vector<size_t>& order);
  void maybe_rebuild_buckets();
  void reset_iteration();
  void on_grad_ready(size_t index);
  void keep_accumulation_counts(size_t index);
  void mark_ready(size_t index, bool has_grad);
  void launch_ready_buckets();
  void finalize();
  // Waits for the reductions in flight (ignoring their errors) and forgets the iteration.
  void abandon_iteration();
  // Parameter i's slot of its bucket, shaped like the parameter.
  Tensor slot_view(size_t i) const;

  std::string op_;
  ReducerOptions options_;
  ProcessGroupPtr group_;
  std::vector<std::string> names_;
  std::vector<Tensor> params_;
  std::vector<size_t> bucket_of_;  // param index -> bucket
  std::vector<size_t> slot_of_;    // param index -> position in its bucket
  std::vector<Bucket> buckets_;
  std::vector<RemovableHandle> hooks_;

  bool sync_this_backward_ = true;  // require_sync as of the last forward
  std::vector<uint8_t> ready_;
  std::vector<uint8_t> used_;  // got a gradient this iteration
  size_t ready_count_ = 0;
  size_t next_launch_ = 0;
  bool in_progress_ = false;         // some parameter is ready, the iteration is not finished
  std::vector<uint8_t> unused_;      // find_unused_parameters: unreached by the last forward
  std::vector<size_t> ready_order_;  // the first synchronized backward's gradient order
  bool rebuilt_ = false;
  CommHook comm_hook_;
  bool backward_seen_ = false;  // some backward reached the hooks (register_comm_hook checks)
  // Note [Static graph]: fixed by the first synchronized iteration.
  bool static_known_ = false;
  std::vector<uint8_t> static_unused_;       // unreached on this rank
  std::vector<int32_t> static_global_used_;  // ranks on which each parameter got a gradient
};

}  // namespace ember::distributed
