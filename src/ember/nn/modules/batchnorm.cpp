#include "ember/nn/modules/batchnorm.h"

#include <sstream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/guards/guards.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/ops/creation.h"

namespace ember::nn {

BatchNormImplBase::BatchNormImplBase(const BatchNormOptions& options_, const char* name, int64_t dims)
    : Module(name), options(options_), dims_(dims) {
  EMBER_CHECK(options.num_features() > 0, "[nn.", name, "] num_features must be positive, got ",
              options.num_features());
  reset();
}

void BatchNormImplBase::reset() {
  const int64_t c = options.num_features();
  if (options.affine()) {
    weight = register_parameter("weight", empty({c}));
    bias = register_parameter("bias", empty({c}));
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", empty({c}));
    running_var = register_buffer("running_var", empty({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros(IntArrayRef(), TensorOptions(kInt64)));
  }
  reset_parameters();
}

void BatchNormImplBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void BatchNormImplBase::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor BatchNormImplBase::forward(const Tensor& input) {
  EMBER_CHECK(input.defined(), "[nn.", name(), "] called with an undefined tensor");
  if (is_training() && !GradMode::is_enabled() && guards::is_enabled(guards::Guard::EvalMode)) {
    guards::detail::eval_mode_warning("nn.BatchNorm");
  }
  const int64_t d = input.dim();
  if (dims_ == 1) {
    EMBER_CHECK(d == 2 || d == 3, "[nn.", name(), "] expected 2D or 3D input (got ", d, "D input of sizes ",
                input.sizes(), ")");
  } else {
    EMBER_CHECK(d == dims_ + 2, "[nn.", name(), "] expected ", dims_ + 2, "D input (got ", d, "D input of sizes ",
                input.sizes(), ")");
  }
  EMBER_CHECK(input.size(1) == options.num_features(), "[nn.", name(), "] input of sizes ", input.sizes(), " has ",
              input.size(1), " channels (dim 1), but the layer was built for num_features=", options.num_features());
  double factor = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats()) {
    {
      NoGradGuard no_grad;
      num_batches_tracked.add_(1);
    }
    // momentum=None: the running statistics are the plain average of all batches so far.
    if (!options.momentum()) factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  const bool use_batch_stats = is_training() || !options.track_running_stats();
  const bool pass_running = !is_training() || options.track_running_stats();
  return functional::batch_norm(input, pass_running ? running_mean : Tensor(), pass_running ? running_var : Tensor(),
                                weight, bias, use_batch_stats, factor, options.eps());
}

std::string BatchNormImplBase::extra_repr() const {
  std::ostringstream os;
  os << options.num_features() << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum()) {
    os << *options.momentum();
  } else {
    os << "None";
  }
  os << ", affine=" << (options.affine() ? "True" : "False")
     << ", track_running_stats=" << (options.track_running_stats() ? "True" : "False");
  return os.str();
}

std::shared_ptr<Module> BatchNorm1dImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<BatchNorm1dImpl>(options);
  clone_into(*copy);
  return copy;
}

std::shared_ptr<Module> BatchNorm2dImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<BatchNorm2dImpl>(options);
  clone_into(*copy);
  return copy;
}

std::shared_ptr<Module> BatchNorm3dImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<BatchNorm3dImpl>(options);
  clone_into(*copy);
  return copy;
}

}  // namespace ember::nn
