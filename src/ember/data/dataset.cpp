#include "ember/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ember/core/check.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"

namespace ember::data {

bool Dataset::get_batch(const std::vector<int64_t>& /*indices*/, Example& /*out*/) { return false; }

Example Dataset::apply_transform(Example example) const {
  if (transform_) example.data = transform_(example.data);
  return example;
}

TensorDataset::TensorDataset(Tensor data, Tensor targets) : data_(std::move(data)), targets_(std::move(targets)) {
  EMBER_CHECK(data_.defined() && data_.dim() >= 1, "[TensorDataset] data must be a tensor with at least one dim");
  EMBER_CHECK(!targets_.defined() || (targets_.dim() >= 1 && targets_.size(0) == data_.size(0)),
              "[TensorDataset] data has ", data_.size(0), " rows but targets has sizes ",
              targets_.defined() ? targets_.sizes() : IntArrayRef(), "; both need the same size along dim 0");
}

Example TensorDataset::get(int64_t index) {
  EMBER_CHECK(index >= 0 && index < size(), "[TensorDataset] index ", index, " is out of range for a data set of size ",
              size());
  Example ex{data_.select(0, index), targets_.defined() ? targets_.select(0, index) : Tensor()};
  return apply_transform(std::move(ex));
}

bool TensorDataset::get_batch(const std::vector<int64_t>& indices, Example& out) {
  if (transform()) return false;
  for (int64_t i : indices) {
    EMBER_CHECK(i >= 0 && i < size(), "[TensorDataset] index ", i, " is out of range for a data set of size ", size());
  }
  Tensor idx = tensor(indices);
  out.data = index_select(data_, 0, idx);
  out.target = targets_.defined() ? index_select(targets_, 0, idx) : Tensor();
  return true;
}

Subset::Subset(std::shared_ptr<Dataset> dataset, std::vector<int64_t> indices)
    : dataset_(std::move(dataset)), indices_(std::move(indices)) {
  EMBER_CHECK(dataset_ != nullptr, "[Subset] got a null dataset");
  const int64_t n = dataset_->size();
  for (int64_t i : indices_) {
    EMBER_CHECK(i >= 0 && i < n, "[Subset] index ", i, " is out of range for a data set of size ", n);
  }
}

Example Subset::get(int64_t index) {
  EMBER_CHECK(index >= 0 && index < size(), "[Subset] index ", index, " is out of range for a subset of size ", size());
  return apply_transform(dataset_->get(indices_[static_cast<size_t>(index)]));
}

bool Subset::get_batch(const std::vector<int64_t>& indices, Example& out) {
  if (transform()) return false;
  std::vector<int64_t> inner;
  inner.reserve(indices.size());
  for (int64_t i : indices) {
    EMBER_CHECK(i >= 0 && i < size(), "[Subset] index ", i, " is out of range for a subset of size ", size());
    inner.push_back(indices_[static_cast<size_t>(i)]);
  }
  return dataset_->get_batch(inner, out);
}

ConcatDataset::ConcatDataset(std::vector<std::shared_ptr<Dataset>> datasets) : datasets_(std::move(datasets)) {
  EMBER_CHECK(!datasets_.empty(), "[ConcatDataset] needs at least one data set");
  int64_t total = 0;
  for (const auto& d : datasets_) {
    EMBER_CHECK(d != nullptr, "[ConcatDataset] got a null dataset");
    total += d->size();
    offsets_.push_back(total);
  }
}

Example ConcatDataset::get(int64_t index) {
  EMBER_CHECK(index >= 0 && index < size(), "[ConcatDataset] index ", index, " is out of range for a data set of size ",
              size());
  const auto it = std::upper_bound(offsets_.begin(), offsets_.end(), index);
  const auto k = static_cast<size_t>(it - offsets_.begin());
  const int64_t start = k == 0 ? 0 : offsets_[k - 1];
  return apply_transform(datasets_[k]->get(index - start));
}

std::vector<std::shared_ptr<Subset>> random_split(std::shared_ptr<Dataset> dataset, const std::vector<double>& lengths,
                                                  uint64_t seed) {
  EMBER_CHECK(dataset != nullptr, "[random_split] got a null dataset");
  const int64_t n = dataset->size();
  const double total = std::accumulate(lengths.begin(), lengths.end(), 0.0);
  std::vector<int64_t> counts;
  if (std::abs(total - 1.0) < 1e-9 && total <= 1.0 + 1e-9) {
    int64_t used = 0;
    for (double f : lengths) {
      EMBER_CHECK(f >= 0.0 && f <= 1.0, "[random_split] fraction ", f, " is not in [0, 1]");
      counts.push_back(static_cast<int64_t>(std::floor(f * static_cast<double>(n))));
      used += counts.back();
    }
    for (int64_t r = 0; r < n - used; ++r) counts[static_cast<size_t>(r) % counts.size()] += 1;
  } else {
    int64_t sum = 0;
    for (double l : lengths) {
      EMBER_CHECK(l >= 0 && l == std::floor(l), "[random_split] length ", l,
                  " is not a non-negative integer (give counts summing to the size, or fractions summing to 1)");
      counts.push_back(static_cast<int64_t>(l));
      sum += counts.back();
    }
    EMBER_CHECK(sum == n, "[random_split] the lengths sum to ", sum, " but the data set has ", n,
                " samples; give counts summing to ", n, " or fractions summing to 1");
  }
  const std::vector<int64_t> perm = randperm(n, Generator(seed)).to_vector<int64_t>();
  std::vector<std::shared_ptr<Subset>> out;
  int64_t offset = 0;
  for (int64_t c : counts) {
    out.push_back(std::make_shared<Subset>(dataset, std::vector<int64_t>(perm.begin() + offset, perm.begin() + offset + c)));
    offset += c;
  }
  return out;
}

}  // namespace ember::data
