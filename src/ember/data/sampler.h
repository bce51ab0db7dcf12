#pragma once
// Samplers: which sample indices an epoch visits, in which order (torch.utils.data's
// samplers). A sampler hands out a whole epoch at once (indices()); random ones draw from
// Generator(seed + epoch), so set_epoch(e) gives epoch e's order reproducibly on any
// machine and with any number of loader workers.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace ember::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The indices of the current epoch, in order.
  virtual std::vector<int64_t> indices() const = 0;
  // How many indices an epoch has.
  virtual int64_t size() const = 0;
  virtual void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }

 protected:
  int64_t epoch_ = 0;
};

// 0, 1, ..., n - 1.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);
  std::vector<int64_t> indices() const override;
  int64_t size() const override { return n_; }

 private:
  int64_t n_;
};

// A random permutation of 0..n-1 (repeated permutations when num_samples > n), or with
// replacement num_samples uniform draws. num_samples defaults to n.
class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(int64_t n, bool replacement = false, std::optional<int64_t> num_samples = std::nullopt,
                         uint64_t seed = 0);
  std::vector<int64_t> indices() const override;
  int64_t size() const override { return num_samples_; }

 private:
  int64_t n_, num_samples_;
  bool replacement_;
  uint64_t seed_;
};

// num_samples indices drawn with probability weights[i] / sum(weights); without
// replacement each index appears at most once (num_samples <= number of non-zero weights).
class WeightedRandomSampler : public Sampler {
 public:
  WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement = true, uint64_t seed = 0);
  std::vector<int64_t> indices() const override;
  int64_t size() const override { return num_samples_; }

 private:
  std::vector<double> weights_;
  int64_t num_samples_;
  bool replacement_;
  uint64_t seed_;
};

// Rank `rank`'s share of n samples among num_replicas processes, with PyTorch's exact
// algorithm: permute with Generator(seed + epoch) (when shuffle), pad by repeating indices
// from the start up to a multiple of num_replicas (or drop the tail when drop_last), then
// take indices[rank::num_replicas]. Every rank gets size() = ceil(n / num_replicas)
// (floor when drop_last). Call set_epoch() each epoch to reshuffle.
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t n, int64_t num_replicas, int64_t rank, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false);
  std::vector<int64_t> indices() const override;
  int64_t size() const override { return num_samples_; }

 private:
  int64_t n_, num_replicas_, rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t num_samples_, total_size_;
};

// Groups a sampler's indices into batches of batch_size; the last, shorter batch is kept
// unless drop_last.
class BatchSampler {
 public:
  BatchSampler(std::shared_ptr<Sampler> sampler, int64_t batch_size, bool drop_last = false);
  std::vector<std::vector<int64_t>> batches() const;
  // Batches per epoch.
  int64_t size() const;
  void set_epoch(int64_t epoch) { sampler_->set_epoch(epoch); }
  int64_t batch_size() const { return batch_size_; }
  bool drop_last() const { return drop_last_; }
  const std::shared_ptr<Sampler>& sampler() const { return sampler_; }

 private:
  std::shared_ptr<Sampler> sampler_;
  int64_t batch_size_;
  bool drop_last_;
};

}  // namespace ember::data
