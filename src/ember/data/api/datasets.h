#pragma once
// libtorch-style data sets (torch::data::datasets). A BatchDataset<Self, Batch, Request>
// answers get_batch(request); Dataset<Self, Example> builds a batch from get(index) per
// index; StreamDataset takes a batch size; StatefulDataset returns optional batches (nullopt
// ends the epoch) and has reset/save/load. map(transform) wraps any of them in a
// MapDataset; SharedBatchDataset shares one data set (by shared_ptr) between the loader's
// workers.

#include <cstddef>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/data/api/archive.h"
#include "ember/data/api/types.h"
#include "ember/ops/join.h"

namespace ember::data::api::datasets {

template <typename SourceDataset, typename AppliedTransform>
class MapDataset;

template <typename D, typename T>
MapDataset<D, T> map(D dataset, T transform);

template <typename Self, typename Batch = std::vector<Example<>>, typename BatchRequest = ArrayRef<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  constexpr static bool is_stateful = detail::is_optional<BatchType>::value;

  virtual ~BatchDataset() = default;
  // The batch for a request (indices, a size or a custom request).
  virtual Batch get_batch(BatchRequest request) = 0;
  // The number of examples, nullopt when unknown (a stream).
  virtual std::optional<size_t> size() const = 0;

  // A MapDataset applying transform to each batch of (a copy of) this data set.
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return datasets::map(static_cast<Self&>(*this), std::move(transform));
  }
  // ... of this data set, moved.
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return datasets::map(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

// Batches are vectors of single examples, each from get(index).
template <typename Self, typename SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;
  virtual SingleExample get(size_t index) = 0;
  std::vector<SingleExample> get_batch(ArrayRef<size_t> indices) override {
    std::vector<SingleExample> batch;
    batch.reserve(indices.size());
    for (size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

// A data set that yields batches of a requested size (use with a StreamSampler).
template <typename Self, typename Batch = std::vector<Example<>>>
using StreamDataset = BatchDataset<Self, Batch, /*BatchRequest=*/size_t>;

// A data set with its own position: get_batch returns nullopt when the epoch is over,
// reset() starts the next one, save/load write and read the position.
template <typename Self, typename Batch = std::vector<Example<>>, typename BatchRequest = size_t>
class StatefulDataset : public BatchDataset<Self, std::optional<Batch>, BatchRequest> {
 public:
  virtual void reset() = 0;
  virtual void save(serialize::OutputArchive& archive) const = 0;
  virtual void load(serialize::InputArchive& archive) = 0;
};

template <typename... Args>
serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const StatefulDataset<Args...>& dataset) {
  dataset.save(archive);
  return archive;
}
template <typename... Args>
serialize::InputArchive& operator>>(serialize::InputArchive& archive, StatefulDataset<Args...>& dataset) {
  dataset.load(archive);
  return archive;
}

// SourceDataset's batches passed through transform.apply_batch (for a stateful source, the
// batches that are there).
template <typename SourceDataset, typename AppliedTransform>
class MapDataset
    : public BatchDataset<MapDataset<SourceDataset, AppliedTransform>,
                          detail::optional_if_t<SourceDataset::is_stateful, typename AppliedTransform::OutputBatchType>,
                          typename SourceDataset::BatchRequestType> {
 public:
  using DatasetType = SourceDataset;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename SourceDataset::BatchRequestType;
  using OutputBatchType = detail::optional_if_t<SourceDataset::is_stateful, typename AppliedTransform::OutputBatchType>;

  MapDataset(SourceDataset dataset, AppliedTransform transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

  OutputBatchType get_batch(BatchRequestType request) override {
    if constexpr (SourceDataset::is_stateful) {
      auto batch = dataset_.get_batch(std::move(request));
      if (!batch) return std::nullopt;
      return transform_.apply_batch(std::move(*batch));
    } else {
      return transform_.apply_batch(dataset_.get_batch(std::move(request)));
    }
  }
  std::optional<size_t> size() const noexcept override { return dataset_.size(); }

  // Resets the source (stateful sources only).
  void reset() {
    if constexpr (SourceDataset::is_stateful) dataset_.reset();
  }

  const SourceDataset& dataset() const noexcept { return dataset_; }
  SourceDataset& dataset() noexcept { return dataset_; }
  const AppliedTransform& transform() const noexcept { return transform_; }

 private:
  SourceDataset dataset_;
  AppliedTransform transform_;
};

template <typename D, typename T>
MapDataset<D, T> map(D dataset, T transform) {
  static_assert(
      std::is_same_v<std::conditional_t<D::is_stateful, typename D::BatchType::value_type, typename D::BatchType>,
                     typename T::InputBatchType>,
      "the transform's input batch type does not match the data set's batch type");
  return MapDataset<D, T>(std::move(dataset), std::move(transform));
}

// One data set shared (not copied) by everyone holding this wrapper.
template <typename UnderlyingDataset>
class SharedBatchDataset
    : public BatchDataset<SharedBatchDataset<UnderlyingDataset>, typename UnderlyingDataset::BatchType,
                          typename UnderlyingDataset::BatchRequestType> {
 public:
  using BatchType = typename UnderlyingDataset::BatchType;
  using BatchRequestType = typename UnderlyingDataset::BatchRequestType;

  /* implicit */ SharedBatchDataset(std::shared_ptr<UnderlyingDataset> shared_dataset)  // NOLINT
      : dataset_(std::move(shared_dataset)) {}

  BatchType get_batch(BatchRequestType request) override { return dataset_->get_batch(std::move(request)); }
  std::optional<size_t> size() const override { return dataset_->size(); }

  UnderlyingDataset& operator*() { return *dataset_; }
  const UnderlyingDataset& operator*() const { return *dataset_; }
  UnderlyingDataset* operator->() { return dataset_.get(); }
  const UnderlyingDataset* operator->() const { return dataset_.get(); }

  // Resets the shared data set (stateful ones).
  void reset() {
    if constexpr (requires(UnderlyingDataset & d) { d.reset(); }) dataset_->reset();
  }

 private:
  std::shared_ptr<UnderlyingDataset> dataset_;
};

// A SharedBatchDataset of a UnderlyingDataset constructed in place from args.
template <typename UnderlyingDataset, typename... Args>
SharedBatchDataset<UnderlyingDataset> make_shared_dataset(Args&&... args) {
  return std::make_shared<UnderlyingDataset>(std::forward<Args>(args)...);
}

// The rows of one tensor (dim 0) as unlabeled examples.
struct TensorDataset : public Dataset<TensorDataset, TensorExample> {
  // Stacks the tensors (dim 0).
  explicit TensorDataset(const std::vector<Tensor>& tensors) : TensorDataset(ember::stack(tensors)) {}
  explicit TensorDataset(Tensor tensor) : tensor(std::move(tensor)) {}

  TensorExample get(size_t index) override { return tensor[static_cast<int64_t>(index)]; }
  std::optional<size_t> size() const override { return static_cast<size_t>(tensor.size(0)); }

  Tensor tensor;
};

}  // namespace ember::data::api::datasets
