#pragma once
// The libtorch-style DataLoader (torch::data::make_data_loader). A loader asks its sampler
// (stateless data sets) or its data set (stateful ones) for batch requests and turns them
// into batches, in the calling thread (workers == 0) or in worker threads that each hold a
// copy of the data set (a SharedBatchDataset shares one). With workers, up to max_jobs
// requests are in flight; results come back in request order when enforce_ordering.
//
// begin() starts an epoch (resetting the sampler / data set) and returns an input iterator
// that loads its first batch when first dereferenced or compared; end() is a sentinel.
// Only one epoch can be in flight: begin() throws while the previous one has jobs out.

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/data/api/datasets.h"
#include "ember/data/api/detail.h"
#include "ember/data/api/samplers.h"
#include "ember/data/api/types.h"

namespace ember::data::api {

// Options of make_data_loader; the setters chain: DataLoaderOptions(64).workers(2).
class DataLoaderOptions {
 public:
  DataLoaderOptions() = default;
  /* implicit */ DataLoaderOptions(size_t batch_size) : batch_size_(batch_size) {}  // NOLINT

#define EMBER_API_LOADER_OPTION(T, name)             \
  DataLoaderOptions& name(const T& value) {          \
    name##_ = value;                                 \
    return *this;                                    \
  }                                                  \
  const T& name() const noexcept { return name##_; } \
  T& name() noexcept { return name##_; }

  // Examples per batch.
  EMBER_API_LOADER_OPTION(size_t, batch_size)
  // Worker threads; 0 loads in the thread that iterates.
  EMBER_API_LOADER_OPTION(size_t, workers)
  // Requests in flight at once; default 2 * workers.
  EMBER_API_LOADER_OPTION(std::optional<size_t>, max_jobs)
  // How long to wait for a worker's batch before throwing; default forever.
  EMBER_API_LOADER_OPTION(std::optional<std::chrono::milliseconds>, timeout)
  // Yield the batches in request order (workers finish in any order).
  EMBER_API_LOADER_OPTION(bool, enforce_ordering)
  // Skip a last batch smaller than batch_size.
  EMBER_API_LOADER_OPTION(bool, drop_last)
#undef EMBER_API_LOADER_OPTION

 private:
  size_t batch_size_ = 1;
  size_t workers_ = 0;
  std::optional<size_t> max_jobs_;
  std::optional<std::chrono::milliseconds> timeout_;
  bool enforce_ordering_ = true;
  bool drop_last_ = false;
};

// DataLoaderOptions with the defaults filled in (max_jobs = 2 * workers).
struct FullDataLoaderOptions {
  explicit FullDataLoaderOptions(DataLoaderOptions options)
      : batch_size(options.batch_size()),
        workers(options.workers()),
        max_jobs(options.max_jobs().value_or(2 * options.workers())),
        timeout(options.timeout()),
        enforce_ordering(options.enforce_ordering()),
        drop_last(options.drop_last()) {}

  size_t batch_size;
  size_t workers;
  size_t max_jobs;
  std::optional<std::chrono::milliseconds> timeout;
  bool enforce_ordering;
  bool drop_last;
};

// What iterating a loader throws when a worker's get_batch threw; original_exception is
// the worker's exception (std::rethrow_exception it to handle it by type).
class WorkerException : public std::exception {
 public:
  explicit WorkerException(std::exception_ptr original) : original_exception(std::move(original)) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(original_exception);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    message = "Caught exception in DataLoader worker thread. Original message: " + what;
  }
  const char* what() const noexcept override { return message.c_str(); }

  std::exception_ptr original_exception;
  std::string message;
};

namespace detail {

// Behind Iterator: a loader's iterator (lazy: loads on first use) or the end sentinel.
template <typename Batch>
class IteratorImpl {
 public:
  virtual ~IteratorImpl() = default;
  virtual void next() = 0;
  virtual Batch& get() = 0;
  virtual bool is_sentinel() const = 0;
  // Whether a valid iterator has no batch left (false for the sentinel).
  virtual bool exhausted() = 0;
};

template <typename Batch>
class ValidIterator final : public IteratorImpl<Batch> {
 public:
  using BatchProducer = std::function<std::optional<Batch>()>;
  explicit ValidIterator(BatchProducer next_batch) : next_batch_(std::move(next_batch)) {}

  void next() override {
    lazy_initialize();
    detail::check(batch_.has_value(), "Attempted to increment iterator past the end");
    batch_ = next_batch_();
  }
  Batch& get() override {
    lazy_initialize();
    detail::check(batch_.has_value(), "Attempted to dereference iterator that was past the end");
    return *batch_;
  }
  bool is_sentinel() const override { return false; }
  bool exhausted() override {
    lazy_initialize();
    return !batch_.has_value();
  }

 private:
  void lazy_initialize() {
    if (!initialized_) {
      batch_ = next_batch_();
      initialized_ = true;
    }
  }
  BatchProducer next_batch_;
  std::optional<Batch> batch_;
  bool initialized_ = false;
};

template <typename Batch>
class SentinelIterator final : public IteratorImpl<Batch> {
 public:
  void next() override { detail::check(false, "Incrementing the DataLoader's past-the-end iterator is not allowed"); }
  Batch& get() override {
    detail::check(false, "Dereferencing the DataLoader's past-the-end iterator is not allowed");
    throw;  // unreachable
  }
  bool is_sentinel() const override { return true; }
  bool exhausted() override { return false; }
};

}  // namespace detail

// An input iterator over a loader's batches. Copies share their position.
template <typename Batch>
class Iterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Batch;
  using difference_type = std::ptrdiff_t;
  using pointer = Batch*;
  using reference = Batch&;

  explicit Iterator(std::shared_ptr<detail::IteratorImpl<Batch>> impl) : impl_(std::move(impl)) {}

  Iterator& operator++() {
    impl_->next();
    return *this;
  }
  Batch& operator*() { return impl_->get(); }
  Batch* operator->() { return &impl_->get(); }

  // Two sentinels are equal; a valid iterator equals a sentinel once it is exhausted and
  // only itself (or its copies) otherwise.
  bool operator==(const Iterator& other) const {
    const bool a = impl_->is_sentinel(), b = other.impl_->is_sentinel();
    if (a && b) return true;
    if (a) return other.impl_->exhausted();
    if (b) return impl_->exhausted();
    return impl_ == other.impl_;
  }
  bool operator!=(const Iterator& other) const { return !(*this == other); }

 private:
  std::shared_ptr<detail::IteratorImpl<Batch>> impl_;
};

// The worker machinery shared by StatelessDataLoader and StatefulDataLoader.
template <typename Dataset, typename Batch, typename BatchRequest>
class DataLoaderBase {
 public:
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;

  DataLoaderBase(DataLoaderOptions options, std::unique_ptr<Dataset> main_thread_dataset = nullptr)
      : options_(std::move(options)), main_thread_dataset_(std::move(main_thread_dataset)) {}
  DataLoaderBase(const DataLoaderBase&) = delete;
  DataLoaderBase& operator=(const DataLoaderBase&) = delete;
  virtual ~DataLoaderBase() { join(); }

  // Starts an epoch. Throws while the previous epoch still has batches in flight.
  Iterator<Batch> begin() {
    detail::check(shuttle_.in_flight_jobs() == 0,
                  "Attempted to get a new DataLoader iterator while another iterator is not yet exhausted");
    reset();
    return Iterator<Batch>(std::make_shared<detail::ValidIterator<Batch>>([this] { return this->next(); }));
  }
  Iterator<Batch> end() { return Iterator<Batch>(std::make_shared<detail::SentinelIterator<Batch>>()); }

  // Stops the worker threads (the destructor does it too).
  void join() {
    if (joined_) return;
    joined_ = true;
    try {
      shuttle_.drain();
    } catch (...) {
    }
    for (size_t i = 0; i < workers_.size(); ++i) shuttle_.push_job(Job{});
    for (auto& w : workers_)
      if (w.joinable()) w.join();
  }

  const FullDataLoaderOptions& options() const noexcept { return options_; }

 protected:
  // A request for a worker; quit (no request) stops it.
  struct Job {
    std::optional<BatchRequest> batch_request;
    size_t sequence_number = 0;
  };
  struct Result {
    std::optional<Batch> batch;
    std::exception_ptr exception;
    size_t sequence_number = 0;
  };

  // The next request; nullopt ends the epoch.
  virtual std::optional<BatchRequest> get_batch_request() = 0;

  virtual void reset() {
    shuttle_.drain();
    sequence_number_ = 0;
    if (options_.enforce_ordering)
      sequencer_ = std::make_unique<detail::sequencers::OrderedSequencer<Result>>(options_.max_jobs);
    else
      sequencer_ = std::make_unique<detail::sequencers::NoSequencer<Result>>();
    prefetch(options_.max_jobs);
  }

  // Sends up to n requests to the workers.
  void prefetch(size_t n) {
    if (workers_.empty()) return;
    for (; n > 0; --n) {
      auto request = get_batch_request();
      if (!request) break;
      shuttle_.push_job(Job{std::move(request), sequence_number_++});
    }
  }

  // The next batch of the epoch; nullopt at its end.
  std::optional<Batch> next() {
    if (!workers_.empty()) {
      while (auto result = sequencer_->next([this] { return shuttle_.pop_result(options_.timeout); })) {
        if (result->exception) throw WorkerException(result->exception);
        if (result->batch) {
          prefetch(1);
          return std::move(result->batch);
        }
      }
      return std::nullopt;
    }
    auto request = get_batch_request();
    if (!request) return std::nullopt;
    return main_thread_dataset_->get_batch(std::move(*request));
  }

  // A worker: runs jobs until a quit job.
  void worker_thread(Dataset& dataset) {
    while (true) {
      Job job = shuttle_.pop_job();
      if (!job.batch_request) break;
      Result result;
      result.sequence_number = job.sequence_number;
      try {
        result.batch = dataset.get_batch(std::move(*job.batch_request));
      } catch (...) {
        result.exception = std::current_exception();
      }
      shuttle_.push_result(std::move(result));
    }
  }

  FullDataLoaderOptions options_;
  std::unique_ptr<Dataset> main_thread_dataset_;  // workers == 0, or the one stateful data set
  std::vector<std::thread> workers_;
  detail::DataShuttle<Job, Result> shuttle_;
  std::unique_ptr<detail::sequencers::Sequencer<Result>> sequencer_;
  size_t sequence_number_ = 0;
  bool joined_ = false;
};

// A loader over a stateless data set: the sampler says which examples each batch holds.
// Every worker gets its own copy of the data set.
template <typename Dataset, typename Sampler>
class StatelessDataLoader
    : public DataLoaderBase<Dataset, typename Dataset::BatchType, typename Sampler::BatchRequestType> {
  using Base = DataLoaderBase<Dataset, typename Dataset::BatchType, typename Sampler::BatchRequestType>;

 public:
  using typename Base::BatchRequestType;

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : Base(std::move(options)), sampler_(std::move(sampler)) {
    for (size_t w = 0; w < this->options_.workers; ++w) {
      this->workers_.emplace_back([this, dataset]() mutable { this->worker_thread(dataset); });
    }
    if (this->options_.workers == 0) this->main_thread_dataset_ = std::make_unique<Dataset>(std::move(dataset));
  }
  ~StatelessDataLoader() override { this->join(); }

 private:
  void reset() override {
    sampler_.reset();
    Base::reset();
  }
  std::optional<BatchRequestType> get_batch_request() override {
    auto request = sampler_.next(this->options_.batch_size);
    if (!request || (request->size() < this->options_.batch_size && this->options_.drop_last)) return std::nullopt;
    return request;
  }

  Sampler sampler_;
};

// A loader over a stateful data set, which decides itself what each batch holds (until it
// returns nullopt). All workers call the one data set, so it must be thread-safe.
template <typename Dataset>
class StatefulDataLoader
    : public DataLoaderBase<Dataset, typename Dataset::BatchType::value_type, typename Dataset::BatchRequestType> {
  using Base = DataLoaderBase<Dataset, typename Dataset::BatchType::value_type, typename Dataset::BatchRequestType>;

 public:
  using typename Base::BatchRequestType;

  StatefulDataLoader(Dataset dataset, DataLoaderOptions options)
      : Base(std::move(options), std::make_unique<Dataset>(std::move(dataset))) {
    for (size_t w = 0; w < this->options_.workers; ++w) {
      this->workers_.emplace_back([this] { this->worker_thread(*this->main_thread_dataset_); });
    }
  }
  ~StatefulDataLoader() override { this->join(); }

 private:
  void reset() override {
    this->main_thread_dataset_->reset();
    Base::reset();
  }
  std::optional<BatchRequestType> get_batch_request() override { return BatchRequestType(this->options_.batch_size); }
};

// A loader over dataset with the given sampler.
template <typename Dataset, typename Sampler>
requires(!Dataset::is_stateful) std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(
    Dataset dataset, Sampler sampler, DataLoaderOptions options) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(std::move(dataset), std::move(sampler),
                                                                 std::move(options));
}

// A loader over a sized, stateless dataset with a Sampler(dataset.size()) (a RandomSampler
// unless given).
template <typename Sampler = samplers::RandomSampler, typename Dataset>
requires(!Dataset::is_stateful && std::is_constructible_v<Sampler, size_t>)
    std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(
        Dataset dataset, DataLoaderOptions options = DataLoaderOptions()) {
  const std::optional<size_t> size = dataset.size();
  detail::check(size.has_value(), "Expected the dataset to be sized in order to construct the Sampler");
  return make_data_loader(std::move(dataset), Sampler(*size), std::move(options));
}

// A loader over a stateful dataset.
template <typename Dataset>
requires(Dataset::is_stateful) std::unique_ptr<StatefulDataLoader<Dataset>> make_data_loader(
    Dataset dataset, DataLoaderOptions options = DataLoaderOptions()) {
  return std::make_unique<StatefulDataLoader<Dataset>>(std::move(dataset), std::move(options));
}

}  // namespace ember::data::api
