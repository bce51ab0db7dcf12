#pragma once
// Data sets. A map-style Dataset knows its size and returns sample i; an IterableDataset
// is a stream. Wrappers compose them (Subset, ConcatDataset), as in torch.utils.data.
// DataLoader workers call get() from several threads at once: get() must be thread-safe
// (the built-in data sets only read shared state).

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ember/data/example.h"
#include "ember/data/transforms.h"

namespace ember::data {

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Sample `index` (0 <= index < size()); built-in data sets apply transform() last.
  virtual Example get(int64_t index) = 0;
  // Optional fast path: fills `out` with the collated batch of `indices` and returns true;
  // false (the default) makes the loader call get() per sample and collate.
  virtual bool get_batch(const std::vector<int64_t>& indices, Example& out);

  // A per-sample transform of `data` (see transforms.h); an empty one removes it.
  void set_transform(Transform transform) { transform_ = std::move(transform); }
  const Transform& transform() const { return transform_; }

 protected:
  // Applies transform() to example.data when one is set.
  Example apply_transform(Example example) const;

 private:
  Transform transform_;
};

// A stream of samples: next() returns std::nullopt at the end; reset() starts over (the
// loader calls it at the start of every epoch).
class IterableDataset {
 public:
  virtual ~IterableDataset() = default;
  virtual std::optional<Example> next() = 0;
  virtual void reset() {}
};

// Rows of `data` (and of `targets` when defined) along dim 0; samples are views.
class TensorDataset : public Dataset {
 public:
  explicit TensorDataset(Tensor data, Tensor targets = {});
  int64_t size() const override { return data_.size(0); }
  Example get(int64_t index) override;
  bool get_batch(const std::vector<int64_t>& indices, Example& out) override;
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_, targets_;
};

// The samples of `dataset` at `indices`, in that order.
class Subset : public Dataset {
 public:
  Subset(std::shared_ptr<Dataset> dataset, std::vector<int64_t> indices);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Example get(int64_t index) override;
  bool get_batch(const std::vector<int64_t>& indices, Example& out) override;
  const std::vector<int64_t>& indices() const { return indices_; }
  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }

 private:
  std::shared_ptr<Dataset> dataset_;
  std::vector<int64_t> indices_;
};

// The data sets one after the other.
class ConcatDataset : public Dataset {
 public:
  explicit ConcatDataset(std::vector<std::shared_ptr<Dataset>> datasets);
  int64_t size() const override { return offsets_.empty() ? 0 : offsets_.back(); }
  Example get(int64_t index) override;

 private:
  std::vector<std::shared_ptr<Dataset>> datasets_;
  std::vector<int64_t> offsets_;  // cumulative sizes
};

// Splits `dataset` into non-overlapping random subsets. `lengths` are sample counts that sum
// to size(), or fractions that sum to 1 (floor(f * size()) each, the remainder handed out
// round-robin from the first subset, as in PyTorch). The permutation comes from
// Generator(seed): random_split(ds, {50000, 10000}) or random_split(ds, {0.8, 0.2}, 42).
std::vector<std::shared_ptr<Subset>> random_split(std::shared_ptr<Dataset> dataset,
                                                  const std::vector<double>& lengths, uint64_t seed = 0);

}  // namespace ember::data
