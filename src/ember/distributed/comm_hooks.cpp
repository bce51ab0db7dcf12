// DDP communication hooks: GradBucket and the built-in hooks (comm_hooks.h).

#include "ember/distributed/comm_hooks.h"

#include "ember/autograd/grad_mode.h"
#include "ember/distributed/distributed.h"

namespace ember::distributed {

std::vector<Tensor> GradBucket::gradients() const {
  std::vector<Tensor> out;
  out.reserve(parameters_.size());
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& p = parameters_[i];
    out.push_back(buffer_.narrow(0, offsets_[i], p.numel()).view(p.sizes()));
  }
  return out;
}

namespace algorithms::ddp_comm_hooks::default_hooks {

namespace {

ProcessGroupPtr group_or_default(const ProcessGroupPtr& g) { return g ? g : default_group(); }

// Reduces a copy of the buffer in `dtype` and writes the mean back into the buffer.
FuturePtr compressed_allreduce(const ProcessGroupPtr& process_group, GradBucket& bucket, DType dtype) {
  const ProcessGroupPtr group = group_or_default(process_group);
  Tensor compressed;
  {
    NoGradGuard ng;
    compressed = bucket.buffer().to(dtype, /*copy=*/true);
    compressed.div_(group->size());
  }
  WorkPtr work = all_reduce(compressed, ReduceOp::SUM, group, /*async_op=*/true);
  Tensor buffer = bucket.buffer();
  return Future::from_work(std::move(work), compressed)->then([buffer](const Tensor& reduced) {
    NoGradGuard ng;
    buffer.copy_(reduced);
    return buffer;
  });
}

}  // namespace

FuturePtr allreduce_hook(const ProcessGroupPtr& process_group, GradBucket& bucket) {
  const ProcessGroupPtr group = group_or_default(process_group);
  const Tensor& buffer = bucket.buffer();
  {
    // Before the sum, as DDP without a hook: 16-bit buckets do not overflow.
    NoGradGuard ng;
    buffer.div_(group->size());
  }
  return Future::from_work(all_reduce(buffer, ReduceOp::SUM, group, /*async_op=*/true), buffer);
}

FuturePtr fp16_compress_hook(const ProcessGroupPtr& process_group, GradBucket& bucket) {
  return compressed_allreduce(process_group, bucket, kFloat16);
}

FuturePtr bf16_compress_hook(const ProcessGroupPtr& process_group, GradBucket& bucket) {
  return compressed_allreduce(process_group, bucket, kBFloat16);
}

}  // namespace algorithms::ddp_comm_hooks::default_hooks

}  // namespace ember::distributed
