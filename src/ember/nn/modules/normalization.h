#pragma once
// LayerNorm and GroupNorm (torch.nn.LayerNorm, torch.nn.GroupNorm).

#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  LayerNormOptions& eps(double v) {
    eps_ = v;
    return *this;
  }
  LayerNormOptions& elementwise_affine(bool v) {
    elementwise_affine_ = v;
    return *this;
  }
  const std::vector<int64_t>& normalized_shape() const { return normalized_shape_; }
  double eps() const { return eps_; }
  bool elementwise_affine() const { return elementwise_affine_; }

 private:
  std::vector<int64_t> normalized_shape_;
  double eps_ = 1e-5;
  bool elementwise_affine_ = true;
};

// Normalises over the trailing dims normalized_shape; weight (ones) and bias (zeros) of
// that shape when elementwise_affine.
class LayerNormImpl : public Cloneable<LayerNormImpl> {
 public:
  LayerNormImpl(std::vector<int64_t> normalized_shape) : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))) {}
  explicit LayerNormImpl(const LayerNormOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  LayerNormOptions options;
  Tensor weight, bias;
};
EMBER_MODULE(LayerNorm);

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : num_groups_(num_groups), num_channels_(num_channels) {}
  GroupNormOptions& eps(double v) {
    eps_ = v;
    return *this;
  }
  GroupNormOptions& affine(bool v) {
    affine_ = v;
    return *this;
  }
  int64_t num_groups() const { return num_groups_; }
  int64_t num_channels() const { return num_channels_; }
  double eps() const { return eps_; }
  bool affine() const { return affine_; }

 private:
  int64_t num_groups_, num_channels_;
  double eps_ = 1e-5;
  bool affine_ = true;
};

// Normalises groups of num_channels / num_groups channels of an [N, C, *] input; per-channel
// weight (ones) and bias (zeros) when affine.
class GroupNormImpl : public Cloneable<GroupNormImpl> {
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels) : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  explicit GroupNormImpl(const GroupNormOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  GroupNormOptions options;
  Tensor weight, bias;
};
EMBER_MODULE(GroupNorm);

}  // namespace ember::nn
