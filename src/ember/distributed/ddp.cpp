// DistributedDataParallel: the module wrapper; the gradient averaging is distributed::Reducer
// (Note [DDP buckets] in ddp.h).

#include "ember/distributed/ddp.h"

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/distributed/distributed.h"

namespace ember::nn::parallel {

namespace dist = ember::distributed;

DistributedDataParallelImpl::DistributedDataParallelImpl(std::shared_ptr<Module> module, DDPOptions options)
    : Module("DistributedDataParallel"), module_(std::move(module)), options_(std::move(options)) {
  EMBER_CHECK(module_ != nullptr, "[DistributedDataParallel] the module is null");
  EMBER_CHECK(options_.bucket_cap_mb > 0 && options_.first_bucket_mb > 0, "[DistributedDataParallel] bucket_cap_mb (",
              options_.bucket_cap_mb, ") and first_bucket_mb (", options_.first_bucket_mb, ") must be positive");
  group_ = options_.process_group ? options_.process_group : dist::default_group();
  register_module("module", module_);

  std::vector<std::string> names;
  std::vector<Tensor> params;
  for (const auto& item : module_->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    names.push_back(item.key());
    params.push_back(item.value());
  }
  for (const auto& item : module_->named_buffers()) buffers_.push_back(item.value());

  // Every replica starts from rank 0's state.
  {
    NoGradGuard ng;
    for (const auto& item : module_->named_parameters()) dist::broadcast(item.value(), group_->global_rank(0), group_);
    for (const auto& b : buffers_) dist::broadcast(b, group_->global_rank(0), group_);
  }
  reducer_ =
      std::make_unique<dist::Reducer>(std::move(names), std::move(params), group_,
                                      dist::ReducerOptions{.bucket_cap_mb = options_.bucket_cap_mb,
                                                           .first_bucket_mb = options_.first_bucket_mb,
                                                           .find_unused_parameters = options_.find_unused_parameters,
                                                           .gradient_as_bucket_view = options_.gradient_as_bucket_view,
                                                           .static_graph = options_.static_graph});
}

DistributedDataParallelImpl::~DistributedDataParallelImpl() = default;

void DistributedDataParallelImpl::finish_gradient_sync() { reducer_->finish_gradient_sync(); }

void DistributedDataParallelImpl::prepare_forward() {
  reducer_->prepare_forward(require_sync_);
  if (options_.broadcast_buffers && !buffers_.empty() && group_->size() > 1) {
    NoGradGuard ng;
    for (const auto& b : buffers_) dist::broadcast(b, group_->global_rank(0), group_);
  }
}

void DistributedDataParallelImpl::after_forward(const std::vector<Tensor>& outputs) {
  reducer_->after_forward(outputs);
}

Tensor DistributedDataParallelImpl::forward(const Tensor& input) {
  prepare_forward();
  Tensor out = (*module_)(input);
  after_forward({out});
  return out;
}

}  // namespace ember::nn::parallel
