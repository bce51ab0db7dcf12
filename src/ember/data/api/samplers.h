#pragma once
// libtorch-style samplers (torch::data::samplers): a sampler hands out the next batch
// request (by default a vector of indices) for a batch size, and nullopt when the epoch
// is over; reset() starts a new epoch (optionally with a new size); save()/load() write
// and read its position through an archive.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "ember/data/api/archive.h"
#include "ember/data/api/types.h"
#include "ember/ops/creation.h"

namespace ember::data::api::samplers {

// A batch request that is not a vector of indices; the loader only needs its size().
struct CustomBatchRequest {
  CustomBatchRequest() = default;
  CustomBatchRequest(const CustomBatchRequest&) = default;
  CustomBatchRequest(CustomBatchRequest&&) noexcept = default;
  CustomBatchRequest& operator=(const CustomBatchRequest&) = default;
  CustomBatchRequest& operator=(CustomBatchRequest&&) noexcept = default;
  virtual ~CustomBatchRequest() = default;
  // How many examples the request is for.
  virtual size_t size() const = 0;
};

template <typename BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;
  virtual ~Sampler() = default;
  // Starts a new epoch; new_size, when given, replaces the number of examples.
  virtual void reset(std::optional<size_t> new_size) = 0;
  // The next request for at most batch_size examples; nullopt when the epoch is over.
  virtual std::optional<BatchRequest> next(size_t batch_size) = 0;
  virtual void save(serialize::OutputArchive& archive) const = 0;
  virtual void load(serialize::InputArchive& archive) = 0;
};

namespace sampler_detail {
inline Tensor index_tensor(size_t v) { return ember::tensor(std::vector<int64_t>{static_cast<int64_t>(v)}); }
inline size_t read_index(serialize::InputArchive& archive, const std::string& key) {
  Tensor t;
  archive.read(key, t);
  return static_cast<size_t>(t.reshape({-1})[0].item<int64_t>());
}
inline Tensor indices_tensor(const std::vector<size_t>& v) {
  std::vector<int64_t> x(v.begin(), v.end());
  return ember::tensor(x);
}
inline std::vector<size_t> read_indices(serialize::InputArchive& archive, const std::string& key) {
  Tensor t;
  archive.read(key, t);
  t = t.reshape({-1}).contiguous();
  const int64_t* p = t.data_ptr<int64_t>();
  return std::vector<size_t>(p, p + t.numel());
}
}  // namespace sampler_detail

// 0, 1, ..., size - 1.
class SequentialSampler : public Sampler<> {
 public:
  explicit SequentialSampler(size_t size) : size_(size) {}

  void reset(std::optional<size_t> new_size = std::nullopt) override {
    if (new_size) size_ = *new_size;
    index_ = 0;
  }
  std::optional<std::vector<size_t>> next(size_t batch_size) override {
    const size_t end = std::min(size_, index_ + batch_size);
    if (index_ >= end) return std::nullopt;
    std::vector<size_t> out(end - index_);
    std::iota(out.begin(), out.end(), index_);
    index_ = end;
    return out;
  }
  void save(serialize::OutputArchive& archive) const override {
    archive.write("index", sampler_detail::index_tensor(index_), /*is_buffer=*/true);
  }
  void load(serialize::InputArchive& archive) override { index_ = sampler_detail::read_index(archive, "index"); }
  // How many indices this epoch has handed out.
  size_t index() const noexcept { return index_; }

 private:
  size_t size_;
  size_t index_ = 0;
};

// A fresh random permutation of 0..size-1 every epoch (ember::randperm on the default
// generator, so ember::manual_seed makes it reproducible).
class RandomSampler : public Sampler<> {
 public:
  explicit RandomSampler(int64_t size, DType index_dtype = kInt64) : index_dtype_(index_dtype) {
    reset(static_cast<size_t>(size));
  }

  void reset(std::optional<size_t> new_size = std::nullopt) override {
    const int64_t n = new_size ? static_cast<int64_t>(*new_size) : indices_.numel();
    indices_ = ember::randperm(n, TensorOptions().dtype(index_dtype_));
    index_ = 0;
  }
  std::optional<std::vector<size_t>> next(size_t batch_size) override {
    const size_t size = static_cast<size_t>(indices_.numel());
    const size_t end = std::min(size, index_ + batch_size);
    if (index_ >= end) return std::nullopt;
    Tensor slice = indices_.to(kInt64).contiguous();
    const int64_t* p = slice.data_ptr<int64_t>();
    std::vector<size_t> out(p + index_, p + end);
    index_ = end;
    return out;
  }
  void save(serialize::OutputArchive& archive) const override {
    archive.write("index", sampler_detail::index_tensor(index_), /*is_buffer=*/true);
    archive.write("indices", indices_, /*is_buffer=*/true);
  }
  void load(serialize::InputArchive& archive) override {
    Tensor indices;
    archive.read("indices", indices);
    indices_ = indices.to(index_dtype_);
    index_ = sampler_detail::read_index(archive, "index");
  }
  size_t index() const noexcept { return index_; }

 private:
  Tensor indices_;
  size_t index_ = 0;
  DType index_dtype_;
};

// The request of a StreamSampler: just a number of examples.
struct BatchSize : public CustomBatchRequest {
  explicit BatchSize(size_t size) : size_(size) {}
  size_t size() const noexcept override { return size_; }
  operator size_t() const noexcept { return size_; }  // NOLINT: implicit like libtorch
  size_t size_;
};

// For StreamDatasets: hands out batch sizes until epoch_size examples were requested.
class StreamSampler : public Sampler<BatchSize> {
 public:
  explicit StreamSampler(size_t epoch_size) : epoch_size_(epoch_size) {}

  void reset(std::optional<size_t> new_size = std::nullopt) override {
    if (new_size) epoch_size_ = *new_size;
    examples_retrieved_so_far_ = 0;
  }
  std::optional<BatchSize> next(size_t batch_size) override {
    if (examples_retrieved_so_far_ >= epoch_size_) return std::nullopt;
    const size_t n = std::min(batch_size, epoch_size_ - examples_retrieved_so_far_);
    examples_retrieved_so_far_ += n;
    return BatchSize(n);
  }
  void save(serialize::OutputArchive& archive) const override {
    archive.write("examples_retrieved_so_far", sampler_detail::index_tensor(examples_retrieved_so_far_),
                  /*is_buffer=*/true);
  }
  void load(serialize::InputArchive& archive) override {
    examples_retrieved_so_far_ = sampler_detail::read_index(archive, "examples_retrieved_so_far");
  }

 private:
  size_t examples_retrieved_so_far_ = 0;
  size_t epoch_size_;
};

// Base of the distributed samplers: replica `rank` of `num_replicas` sees the block
// [rank * n, (rank + 1) * n) of the indices (wrapping around), n = ceil(size / replicas)
// with allow_duplicates (every index is seen, a few twice) or floor(size / replicas)
// without (a few are never seen).
template <typename BatchRequest = std::vector<size_t>>
class DistributedSampler : public Sampler<BatchRequest> {
 public:
  DistributedSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true)
      : size_(size), num_replicas_(num_replicas), rank_(rank), allow_duplicates_(allow_duplicates) {
    detail::check(num_replicas_ > 0, "[DistributedSampler] num_replicas must be positive");
    detail::check(rank_ < num_replicas_, "[DistributedSampler] rank ", rank_, " out of range for ", num_replicas_,
                  " replicas");
    set_local_sample_count();
  }
  // The epoch seeds the shuffle of DistributedRandomSampler.
  void set_epoch(size_t epoch) { epoch_ = epoch; }
  size_t epoch() const { return epoch_; }

 protected:
  size_t local_sample_count() const { return local_sample_count_; }
  void set_local_sample_count() {
    local_sample_count_ = allow_duplicates_ ? (size_ + num_replicas_ - 1) / num_replicas_ : size_ / num_replicas_;
  }
  // This replica's block of indices, in order.
  std::vector<size_t> local_block() const {
    std::vector<size_t> out(local_sample_count_);
    const size_t begin = rank_ * local_sample_count_;
    for (size_t i = 0; i < local_sample_count_; ++i) out[i] = size_ == 0 ? 0 : (begin + i) % size_;
    return out;
  }

  size_t size_;
  size_t num_replicas_;
  size_t rank_;
  size_t epoch_ = 0;
  bool allow_duplicates_;
  size_t local_sample_count_ = 0;
};

namespace sampler_detail {
inline std::optional<std::vector<size_t>> next_of(std::vector<size_t>& indices, size_t& index, size_t batch_size) {
  const size_t end = std::min(indices.size(), index + batch_size);
  if (index >= end) return std::nullopt;
  std::vector<size_t> out(indices.begin() + static_cast<std::ptrdiff_t>(index),
                          indices.begin() + static_cast<std::ptrdiff_t>(end));
  index = end;
  return out;
}
}  // namespace sampler_detail

// This replica's block, shuffled with a generator seeded by the epoch (set_epoch).
class DistributedRandomSampler : public DistributedSampler<> {
 public:
  explicit DistributedRandomSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true)
      : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
    populate_indices();
  }

  void reset(std::optional<size_t> new_size = std::nullopt) override {
    if (new_size) {
      size_ = *new_size;
      set_local_sample_count();
    }
    populate_indices();
    index_ = 0;
  }
  std::optional<std::vector<size_t>> next(size_t batch_size) override {
    return sampler_detail::next_of(indices_, index_, batch_size);
  }
  void save(serialize::OutputArchive& archive) const override {
    archive.write("index", sampler_detail::index_tensor(index_), true);
    archive.write("epoch", sampler_detail::index_tensor(epoch_), true);
    archive.write("indices", sampler_detail::indices_tensor(indices_), true);
  }
  void load(serialize::InputArchive& archive) override {
    index_ = sampler_detail::read_index(archive, "index");
    epoch_ = sampler_detail::read_index(archive, "epoch");
    indices_ = sampler_detail::read_indices(archive, "indices");
  }
  size_t index() const noexcept { return index_; }

 private:
  void populate_indices() {
    indices_ = local_block();
    std::mt19937_64 gen(static_cast<uint64_t>(epoch_));
    std::shuffle(indices_.begin(), indices_.end(), gen);
  }
  std::vector<size_t> indices_;
  size_t index_ = 0;
};

// This replica's block, in order.
class DistributedSequentialSampler : public DistributedSampler<> {
 public:
  explicit DistributedSequentialSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                                        bool allow_duplicates = true)
      : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
    indices_ = local_block();
  }

  void reset(std::optional<size_t> new_size = std::nullopt) override {
    if (new_size) {
      size_ = *new_size;
      set_local_sample_count();
    }
    indices_ = local_block();
    index_ = 0;
  }
  std::optional<std::vector<size_t>> next(size_t batch_size) override {
    return sampler_detail::next_of(indices_, index_, batch_size);
  }
  void save(serialize::OutputArchive& archive) const override {
    archive.write("index", sampler_detail::index_tensor(index_), true);
  }
  void load(serialize::InputArchive& archive) override { index_ = sampler_detail::read_index(archive, "index"); }
  size_t index() const noexcept { return index_; }

 private:
  std::vector<size_t> indices_;
  size_t index_ = 0;
};

}  // namespace ember::data::api::samplers
