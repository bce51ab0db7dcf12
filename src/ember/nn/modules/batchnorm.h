#pragma once
// BatchNorm1d, BatchNorm2d, BatchNorm3d (torch.nn.BatchNorm*d): per-channel
// normalisation with learnable weight/bias and running statistics.

#include <optional>

#include "ember/nn/module.h"

namespace ember::nn {

struct BatchNormOptions {
  explicit BatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  BatchNormOptions& eps(double v) {
    eps_ = v;
    return *this;
  }
  // std::nullopt means PyTorch's momentum=None: a cumulative average over
  // num_batches_tracked batches.
  BatchNormOptions& momentum(std::optional<double> v) {
    momentum_ = v;
    return *this;
  }
  BatchNormOptions& affine(bool v) {
    affine_ = v;
    return *this;
  }
  BatchNormOptions& track_running_stats(bool v) {
    track_running_stats_ = v;
    return *this;
  }
  int64_t num_features() const { return num_features_; }
  double eps() const { return eps_; }
  std::optional<double> momentum() const { return momentum_; }
  bool affine() const { return affine_; }
  bool track_running_stats() const { return track_running_stats_; }

 private:
  int64_t num_features_;
  double eps_ = 1e-5;
  std::optional<double> momentum_ = 0.1;
  bool affine_ = true;
  bool track_running_stats_ = true;
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;
using BatchNorm3dOptions = BatchNormOptions;

// The shared part of BatchNorm{1,2,3}d. Parameters weight (ones) and bias (zeros) when
// affine; buffers running_mean (zeros), running_var (ones) and num_batches_tracked (int64
// 0-d) when track_running_stats, so state_dict keys match PyTorch's. Training mode uses
// and updates batch statistics; eval mode uses the running ones.
class BatchNormImplBase : public Module {
 public:
  BatchNormImplBase(const BatchNormOptions& options, const char* name, int64_t dims);
  void reset();
  void reset_running_stats();
  void reset_parameters();
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  BatchNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  int64_t dims_;  // 1, 2 or 3: the accepted input ranks follow from it
};

class BatchNorm1dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm1dImpl(int64_t num_features) : BatchNorm1dImpl(BatchNormOptions(num_features)) {}
  explicit BatchNorm1dImpl(const BatchNormOptions& options) : BatchNormImplBase(options, "BatchNorm1d", 1) {}
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;
};
EMBER_MODULE(BatchNorm1d);

class BatchNorm2dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm2dImpl(int64_t num_features) : BatchNorm2dImpl(BatchNormOptions(num_features)) {}
  explicit BatchNorm2dImpl(const BatchNormOptions& options) : BatchNormImplBase(options, "BatchNorm2d", 2) {}
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;
};
EMBER_MODULE(BatchNorm2d);

class BatchNorm3dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm3dImpl(int64_t num_features) : BatchNorm3dImpl(BatchNormOptions(num_features)) {}
  explicit BatchNorm3dImpl(const BatchNormOptions& options) : BatchNormImplBase(options, "BatchNorm3d", 3) {}
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;
};
EMBER_MODULE(BatchNorm3d);

}  // namespace ember::nn
