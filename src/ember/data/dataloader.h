#pragma once
// DataLoader: batches from a data set, assembled by worker threads (torch.utils.data.DataLoader).
//
//   ed::DataLoader loader(ds, ed::DataLoaderOptions().batch_size(64).shuffle(true).num_workers(2).seed(0));
//   for (ed::Example& batch : loader) { ... }   // batch.data [64, ...], batch.target [64]
//
// Note [Deterministic loading]: the epoch's batches are fixed up front by the sampler
// (Generator(seed + epoch)); workers build batch k in any order but the loader yields
// batch k only after k - 1, and random transforms draw from per-sample streams keyed by
// (seed, epoch, index). The batches are therefore identical for any num_workers. An epoch
// that runs to its end advances epoch() by one; set_epoch() picks one explicitly.
// state_dict() records (epoch, seed, batches consumed) so a resumed run sees the same
// remaining batches.

#include <any>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "ember/data/collate.h"
#include "ember/data/dataset.h"
#include "ember/data/example.h"
#include "ember/data/sampler.h"
#include "ember/serialize/value.h"

namespace ember::data {

class DataLoaderOptions {
 public:
  DataLoaderOptions() = default;
  explicit DataLoaderOptions(int64_t batch_size) : batch_size_(batch_size) {}

#define EMBER_DATA_OPTION(type, name, init)   \
 public:                                      \
  DataLoaderOptions& name(type value) {       \
    name##_ = std::move(value);               \
    return *this;                             \
  }                                           \
  const type& name() const { return name##_; } \
                                              \
 private:                                     \
  type name##_ = init;

  // Samples per batch (ignored when a batch_sampler is given).
  EMBER_DATA_OPTION(int64_t, batch_size, 1)
  // Reshuffle every epoch (a RandomSampler seeded with seed()); exclusive with sampler.
  EMBER_DATA_OPTION(bool, shuffle, false)
  // Which indices an epoch visits; default Sequential or Random (shuffle).
  EMBER_DATA_OPTION(std::shared_ptr<Sampler>, sampler, nullptr)
  // Yields the batches' indices directly; exclusive with batch_size/shuffle/sampler/drop_last.
  EMBER_DATA_OPTION(std::shared_ptr<BatchSampler>, batch_sampler, nullptr)
  // Drop the last batch when it is smaller than batch_size.
  EMBER_DATA_OPTION(bool, drop_last, false)
  // Worker threads; 0 loads in the calling thread.
  EMBER_DATA_OPTION(int, num_workers, 0)
  // Batches in flight per worker.
  EMBER_DATA_OPTION(int, prefetch_factor, 2)
  // Keep the worker threads between epochs.
  EMBER_DATA_OPTION(bool, persistent_workers, false)
  // Seed of the shuffle and of per-sample random transforms; drawn from the default
  // generator when not given.
  EMBER_DATA_OPTION(std::optional<uint64_t>, seed, std::nullopt)
#undef EMBER_DATA_OPTION
};

namespace detail {

struct LoaderRun;

// The type-erased engine behind BasicDataLoader<Batch> (dataloader.cpp): samplers, worker
// threads, ordering, errors, state.
class LoaderCore {
 public:
  using CollateAny = std::function<std::any(std::vector<Example>&&)>;
  LoaderCore(std::shared_ptr<Dataset> dataset, std::shared_ptr<IterableDataset> iterable,
             const DataLoaderOptions& options, CollateAny collate, bool fast_path);
  ~LoaderCore();
  LoaderCore(const LoaderCore&) = delete;
  LoaderCore& operator=(const LoaderCore&) = delete;

  int64_t size() const;
  void set_epoch(int64_t epoch);
  int64_t epoch() const;
  uint64_t seed() const { return seed_; }
  Value state_dict() const;
  void load_state_dict(const Value& state);
  const DataLoaderOptions& options() const { return options_; }

  // Starts an epoch (invalidating an unfinished one).
  std::shared_ptr<LoaderRun> start();
  // The run's next batch into out; false at the end of the epoch.
  bool next(LoaderRun& run, std::any& out);
  // Ends the run early or after its end (stops non-persistent workers).
  void finish(LoaderRun& run);

 private:
  bool next_batch(LoaderRun& run, std::any& out);  // next() without the DataLoaderWait guard's timing
  struct Impl;
  std::unique_ptr<Impl> impl_;
  DataLoaderOptions options_;
  uint64_t seed_ = 0;
};

}  // namespace detail

template <typename Batch = Example>
class BasicDataLoader {
 public:
  using CollateFn = std::function<Batch(std::vector<Example>&&)>;

  // collate defaults to default_collate for Example batches and PadCollate{} for
  // PaddedBatch; other batch types need one (Batch must be copyable).
  explicit BasicDataLoader(std::shared_ptr<Dataset> dataset, const DataLoaderOptions& options = {},
                           CollateFn collate = {})
      : core_(make_core(std::move(dataset), nullptr, options, std::move(collate))) {}
  explicit BasicDataLoader(std::shared_ptr<IterableDataset> dataset, const DataLoaderOptions& options = {},
                           CollateFn collate = {})
      : core_(make_core(nullptr, std::move(dataset), options, std::move(collate))) {}

  class iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    iterator(iterator&& other) noexcept = default;
    iterator& operator=(iterator&& other) noexcept = default;
    ~iterator() {
      if (run_) core_->finish(*run_);
    }
    Batch& operator*() { return current_; }
    Batch* operator->() { return &current_; }
    iterator& operator++() {
      std::any out;
      if (core_->next(*run_, out)) {
        current_ = std::any_cast<Batch&&>(std::move(out));
      } else {
        current_ = Batch();
        done_ = true;
      }
      return *this;
    }
    bool operator==(std::default_sentinel_t) const { return done_; }

   private:
    friend class BasicDataLoader;
    explicit iterator(std::shared_ptr<detail::LoaderCore> core) : core_(std::move(core)), run_(core_->start()) {}
    std::shared_ptr<detail::LoaderCore> core_;
    std::shared_ptr<detail::LoaderRun> run_;
    Batch current_{};
    bool done_ = false;
  };

  // Starts an epoch and loads its first batch.
  iterator begin() {
    iterator it(core_);
    ++it;
    return it;
  }
  std::default_sentinel_t end() const { return {}; }

  // Batches per epoch (throws for an IterableDataset, whose length is unknown).
  int64_t size() const { return core_->size(); }
  // The epoch the next begin() loads; set_epoch(e) also forgets a resumed position.
  void set_epoch(int64_t epoch) { core_->set_epoch(epoch); }
  int64_t epoch() const { return core_->epoch(); }
  uint64_t seed() const { return core_->seed(); }
  // {"epoch", "seed", "batches_consumed"}: restore with load_state_dict to resume mid-epoch.
  Value state_dict() const { return core_->state_dict(); }
  void load_state_dict(const Value& state) { core_->load_state_dict(state); }
  const DataLoaderOptions& options() const { return core_->options(); }

 private:
  static std::shared_ptr<detail::LoaderCore> make_core(std::shared_ptr<Dataset> ds,
                                                       std::shared_ptr<IterableDataset> it,
                                                       const DataLoaderOptions& options, CollateFn collate) {
    bool fast_path = false;
    if (!collate) {
      if constexpr (std::is_same_v<Batch, Example>) {
        collate = default_collate;
        fast_path = true;
      } else if constexpr (std::is_same_v<Batch, PaddedBatch>) {
        collate = PadCollate{};
      }
    }
    detail::LoaderCore::CollateAny any_collate;
    if (collate) {
      any_collate = [fn = std::move(collate)](std::vector<Example>&& samples) -> std::any {
        return std::any(fn(std::move(samples)));
      };
    }
    return std::make_shared<detail::LoaderCore>(std::move(ds), std::move(it), options, std::move(any_collate),
                                                fast_path);
  }

  std::shared_ptr<detail::LoaderCore> core_;
};

// Yields Example batches (default_collate); the loader the examples use.
using DataLoader = BasicDataLoader<Example>;
// Yields padded sequence batches (pad_collate).
using PaddedDataLoader = BasicDataLoader<PaddedBatch>;

}  // namespace ember::data
