#pragma once
// DDP communication hooks (torch's DistributedDataParallel.register_comm_hook): a hook
// replaces the reduction of each gradient bucket. DDP calls it during backward, once per
// bucket and step, in bucket order, as soon as the bucket's gradients are all in its flat
// buffer; the hook starts its communication asynchronously and returns a Future whose value
// is the bucket's reduced gradients (a tensor with the buffer's dtype and element count).
// When the last bucket's hook has returned, DDP waits for every future and writes the
// values into .grad. DDP does not divide by the world size when a hook is registered: the
// hook decides (allreduce_hook divides, as torch's does).
//
//   ddp->register_comm_hook(ddp->process_group(),
//                           dist::algorithms::ddp_comm_hooks::default_hooks::fp16_compress_hook);

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/distributed/future.h"
#include "ember/distributed/process_group.h"

namespace ember::distributed {

// One bucket as a hook sees it (torch.distributed.GradBucket).
class GradBucket {
 public:
  GradBucket(size_t index, bool is_last, Tensor buffer, std::vector<int64_t> offsets, std::vector<Tensor> parameters)
      : index_(index),
        is_last_(is_last),
        buffer_(std::move(buffer)),
        offsets_(std::move(offsets)),
        parameters_(std::move(parameters)) {}
  // The bucket's position in the reduction order (0 is reduced first).
  size_t index() const { return index_; }
  // The flat 1-d buffer of this rank's gradients, in parameters() order; the hook may
  // reduce it in place and return it.
  const Tensor& buffer() const { return buffer_; }
  // Each parameter's gradient as a view of buffer(), shaped like the parameter.
  std::vector<Tensor> gradients() const;
  const std::vector<Tensor>& parameters() const { return parameters_; }
  // True for the bucket reduced last in a step.
  bool is_last() const { return is_last_; }

 private:
  size_t index_;
  bool is_last_;
  Tensor buffer_;
  std::vector<int64_t> offsets_;
  std::vector<Tensor> parameters_;
};

// A hook with its state bound (DistributedDataParallel::register_comm_hook binds it).
using CommHook = std::function<FuturePtr(GradBucket&)>;

// torch.distributed.algorithms.ddp_comm_hooks.default_hooks. process_group is the hook's
// state: the group to reduce over; null means the default group, as torch's None (pass
// ddp->process_group() when DDP runs on a subgroup).
namespace algorithms::ddp_comm_hooks::default_hooks {

// Divides the buffer by the group's size and all-reduces it (SUM) in place: DDP's reduction
// without a hook, bit for bit.
FuturePtr allreduce_hook(const ProcessGroupPtr& process_group, GradBucket& bucket);
// Casts the buffer to float16, divides by the group's size, all-reduces that, and copies
// the result back into the buffer (its dtype). Gloo sums 16-bit floats in float32 and
// rounds the sum back, so the bytes sent are not halved there; the result is rounded as
// torch's is.
FuturePtr fp16_compress_hook(const ProcessGroupPtr& process_group, GradBucket& bucket);
// The same with bfloat16.
FuturePtr bf16_compress_hook(const ProcessGroupPtr& process_group, GradBucket& bucket);

}  // namespace algorithms::ddp_comm_hooks::default_hooks

}  // namespace ember::distributed
