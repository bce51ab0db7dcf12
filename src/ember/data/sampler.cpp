#include "ember/data/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ember/core/check.h"
#include "ember/core/generator.h"
#include "ember/ops/creation.h"

namespace ember::data {

namespace {

Generator epoch_generator(uint64_t seed, int64_t epoch) { return Generator(seed + static_cast<uint64_t>(epoch)); }

std::vector<int64_t> permutation(int64_t n, Generator& gen) { return randperm(n, gen).to_vector<int64_t>(); }

// n doubles uniform in [0, 1).
std::vector<double> uniforms(int64_t n, Generator& gen) {
  if (n == 0) return {};
  return rand({n}, gen, TensorOptions(kFloat64)).to_vector<double>();
}

}  // namespace

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  EMBER_CHECK(n >= 0, "[SequentialSampler] n must be non-negative, got ", n);
}

std::vector<int64_t> SequentialSampler::indices() const {
  std::vector<int64_t> out(static_cast<size_t>(n_));
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

RandomSampler::RandomSampler(int64_t n, bool replacement, std::optional<int64_t> num_samples, uint64_t seed)
    : n_(n), num_samples_(num_samples.value_or(n)), replacement_(replacement), seed_(seed) {
  EMBER_CHECK(n >= 0, "[RandomSampler] n must be non-negative, got ", n);
  EMBER_CHECK(num_samples_ >= 0, "[RandomSampler] num_samples must be non-negative, got ", num_samples_);
  EMBER_CHECK(n > 0 || num_samples_ == 0, "[RandomSampler] cannot draw ", num_samples_, " samples from an empty data set");
}

std::vector<int64_t> RandomSampler::indices() const {
  Generator gen = epoch_generator(seed_, epoch_);
  if (replacement_) {
    if (num_samples_ == 0) return {};
    return randint(0, n_, {num_samples_}, gen).to_vector<int64_t>();
  }
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  while (static_cast<int64_t>(out.size()) < num_samples_) {
    std::vector<int64_t> perm = permutation(n_, gen);
    const auto take = std::min<int64_t>(n_, num_samples_ - static_cast<int64_t>(out.size()));
    out.insert(out.end(), perm.begin(), perm.begin() + take);
  }
  return out;
}

WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement,
                                             uint64_t seed)
    : weights_(std::move(weights)), num_samples_(num_samples), replacement_(replacement), seed_(seed) {
  EMBER_CHECK(!weights_.empty(), "[WeightedRandomSampler] weights must not be empty");
  EMBER_CHECK(num_samples_ >= 0, "[WeightedRandomSampler] num_samples must be non-negative, got ", num_samples_);
  int64_t nonzero = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    EMBER_CHECK(weights_[i] >= 0 && std::isfinite(weights_[i]), "[WeightedRandomSampler] weight ", i, " is ",
                weights_[i], "; weights must be finite and non-negative");
    nonzero += weights_[i] > 0;
  }
  EMBER_CHECK(nonzero > 0, "[WeightedRandomSampler] all weights are zero");
  EMBER_CHECK(replacement_ || num_samples_ <= nonzero, "[WeightedRandomSampler] cannot draw ", num_samples_,
              " samples without replacement from ", nonzero, " non-zero weights; use replacement=true");
}

std::vector<int64_t> WeightedRandomSampler::indices() const {
  Generator gen = epoch_generator(seed_, epoch_);
  const std::vector<double> u = uniforms(num_samples_ == 0 ? 0 : (replacement_ ? num_samples_ : static_cast<int64_t>(weights_.size())), gen);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  if (replacement_) {
    // Inverse CDF: the first index whose cumulative weight exceeds u * total.
    std::vector<double> cdf(weights_.size());
    std::partial_sum(weights_.begin(), weights_.end(), cdf.begin());
    const double total = cdf.back();
    for (double x : u) {
      auto it = std::upper_bound(cdf.begin(), cdf.end(), x * total);
      auto k = static_cast<int64_t>(it - cdf.begin());
      k = std::min<int64_t>(k, static_cast<int64_t>(cdf.size()) - 1);
      while (weights_[static_cast<size_t>(k)] == 0 && k > 0) --k;  // never land on a zero weight
      out.push_back(k);
    }
    return out;
  }
  // Without replacement: the num_samples smallest keys -log(u) / w (exponential races).
  std::vector<std::pair<double, int64_t>> keys;
  for (size_t i = 0; i < weights_.size(); ++i) {
    if (weights_[i] > 0) keys.emplace_back(-std::log1p(-u[i]) / weights_[i], static_cast<int64_t>(i));
  }
  std::partial_sort(keys.begin(), keys.begin() + num_samples_, keys.end());
  for (int64_t i = 0; i < num_samples_; ++i) out.push_back(keys[static_cast<size_t>(i)].second);
  return out;
}

DistributedSampler::DistributedSampler(int64_t n, int64_t num_replicas, int64_t rank, bool shuffle, uint64_t seed,
                                       bool drop_last)
    : n_(n), num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle), seed_(seed), drop_last_(drop_last) {
  EMBER_CHECK(n >= 0, "[DistributedSampler] n must be non-negative, got ", n);
  EMBER_CHECK(num_replicas >= 1, "[DistributedSampler] num_replicas must be >= 1, got ", num_replicas);
  EMBER_CHECK(rank >= 0 && rank < num_replicas, "[DistributedSampler] invalid rank ", rank,
              ", rank should be in the interval [0, ", num_replicas - 1, "]");
  if (drop_last_ && n_ % num_replicas_ != 0) {
    num_samples_ = (n_ - num_replicas_ + num_replicas_ - 1) / num_replicas_;  // ceil((n - R) / R)
    if (n_ < num_replicas_) num_samples_ = 0;
  } else {
    num_samples_ = (n_ + num_replicas_ - 1) / num_replicas_;
  }
  total_size_ = num_samples_ * num_replicas_;
  EMBER_CHECK(drop_last_ || n_ > 0 || total_size_ == 0, "[DistributedSampler] empty data set");
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> idx;
  if (shuffle_) {
    Generator gen = epoch_generator(seed_, epoch_);
    idx = permutation(n_, gen);
  } else {
    idx.resize(static_cast<size_t>(n_));
    std::iota(idx.begin(), idx.end(), int64_t{0});
  }
  if (!drop_last_) {
    // Pad from the start, repeating the whole list as often as needed.
    const size_t len = idx.size();
    for (size_t k = 0; idx.size() < static_cast<size_t>(total_size_) && len > 0; ++k) idx.push_back(idx[k % len]);
  } else {
    idx.resize(static_cast<size_t>(total_size_));
  }
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  for (int64_t i = rank_; i < total_size_; i += num_replicas_) out.push_back(idx[static_cast<size_t>(i)]);
  return out;
}

BatchSampler::BatchSampler(std::shared_ptr<Sampler> sampler, int64_t batch_size, bool drop_last)
    : sampler_(std::move(sampler)), batch_size_(batch_size), drop_last_(drop_last) {
  EMBER_CHECK(sampler_ != nullptr, "[BatchSampler] got a null sampler");
  EMBER_CHECK(batch_size >= 1, "[BatchSampler] batch_size should be a positive integer, got ", batch_size);
}

int64_t BatchSampler::size() const {
  const int64_t n = sampler_->size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

std::vector<std::vector<int64_t>> BatchSampler::batches() const {
  const std::vector<int64_t> idx = sampler_->indices();
  std::vector<std::vector<int64_t>> out;
  out.reserve(static_cast<size_t>(size()));
  for (size_t start = 0; start < idx.size(); start += static_cast<size_t>(batch_size_)) {
    const size_t end = std::min(idx.size(), start + static_cast<size_t>(batch_size_));
    if (drop_last_ && end - start < static_cast<size_t>(batch_size_)) break;
    out.emplace_back(idx.begin() + static_cast<std::ptrdiff_t>(start), idx.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

}  // namespace ember::data
