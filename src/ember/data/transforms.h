#pragma once
// Per-sample transforms (torchvision.transforms on tensors). A transform is any callable
// Tensor(const Tensor&); the classes below are the common ones. Random transforms draw
// from the current sample's stream (Note [Per-sample random streams], sample_rng.h), so a
// sample gets the same augmentation whatever the number of loader workers.
//
//   ds->set_transform(transforms::Compose({transforms::RandomCrop({28, 28}, 2),
//                                          transforms::Normalize({0.2860}, {0.3530})}));

#include <functional>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::data {

using Transform = std::function<Tensor(const Tensor&)>;

namespace transforms {

// (x - mean[c]) / std[c] over the channels of a floating [C, ...] tensor; mean and std hold
// one value per channel, or one value for all channels.
class Normalize {
 public:
  Normalize(std::vector<double> mean, std::vector<double> std);
  Tensor operator()(const Tensor& x) const;
  const std::vector<double>& mean() const { return mean_; }
  const std::vector<double>& std() const { return std_; }

 private:
  std::vector<double> mean_, std_;
};

// Reverses the last dim (width) with probability p.
class RandomHorizontalFlip {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  Tensor operator()(const Tensor& x) const;

 private:
  double p_;
};

// Pads the last two dims by `padding` on every side with `fill`, then cuts a window of
// `size` {h, w} at a uniformly random position. Input [..., H, W].
class RandomCrop {
 public:
  RandomCrop(std::vector<int64_t> size, int64_t padding = 0, double fill = 0.0);
  Tensor operator()(const Tensor& x) const;

 private:
  std::vector<int64_t> size_;
  int64_t padding_;
  double fill_;
};

// Applies the transforms in order.
class Compose {
 public:
  explicit Compose(std::vector<Transform> transforms);
  Tensor operator()(const Tensor& x) const;

 private:
  std::vector<Transform> transforms_;
};

}  // namespace transforms
}  // namespace ember::data
