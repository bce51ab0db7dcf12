#pragma once
// ChunkDataset (torch::data::datasets::ChunkDataset): a stateful data set over data that
// comes in chunks (files, shards). Preloader threads pick chunks with the chunk sampler
// (cross_chunk_shuffle_count chunks at a time), read them with the ChunkDataReader, apply
// the optional preprocessing policy, order the examples with the example sampler and put
// them into a cache of at most cache_size examples, cut into batches of batch_size
// (batches span chunk boundaries). get_batch() takes batches from the cache; nullopt once
// every chunk was read and the cache is empty. reset() (called by the loader at begin())
// restarts the preloaders; save()/load() write and read the chunk sampler's position.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "ember/data/api/archive.h"
#include "ember/data/api/datasets.h"
#include "ember/data/api/samplers.h"
#include "ember/data/api/types.h"

namespace ember::data::api::datasets {

// Reads whole chunks; chunk_count() chunks exist; reset() before each epoch.
template <typename ExampleType_, typename ChunkType_ = std::vector<ExampleType_>>
class ChunkDataReader {
 public:
  using ChunkType = ChunkType_;
  using ExampleType = ExampleType_;
  virtual ~ChunkDataReader() = default;
  virtual ChunkType read_chunk(size_t chunk_index) = 0;
  virtual size_t chunk_count() = 0;
  virtual void reset() = 0;
};

struct ChunkDatasetOptions {
  ChunkDatasetOptions() = delete;
  ChunkDatasetOptions(size_t preloader_count, size_t batch_size, size_t cache_size = 2048,
                      size_t cross_chunk_shuffle_count = 1)
      : preloader_count_(preloader_count),
        batch_size_(batch_size),
        cache_size_(cache_size),
        cross_chunk_shuffle_count_(cross_chunk_shuffle_count) {
    detail::check(preloader_count_ > 0, "Preloader count is 0. At least one preloader needs to be specified.");
    detail::check(batch_size_ > 0, "Batch size is 0. A positive batch size needs to be specified.");
    detail::check(cache_size_ > 0, "Cache size is 0. A positive cache size needs to be specified.");
    detail::check(cache_size_ >= batch_size_,
                  "Cache size is less than batch size. Cache needs to be large enough to hold at least one batch.");
    detail::check(cross_chunk_shuffle_count_ > 0, "cross_chunk_shuffle_count needs to be greater than 0.");
  }

#define EMBER_API_CHUNK_OPTION(name)        \
  ChunkDatasetOptions& name(size_t value) { \
    name##_ = value;                        \
    return *this;                           \
  }                                         \
  size_t name() const noexcept { return name##_; }

  // Threads reading chunks.
  EMBER_API_CHUNK_OPTION(preloader_count)
  // Examples per batch (the loader must ask for exactly this many).
  EMBER_API_CHUNK_OPTION(batch_size)
  // Examples the cache holds before the preloaders wait.
  EMBER_API_CHUNK_OPTION(cache_size)
  // Chunks read together and shuffled as one by the example sampler.
  EMBER_API_CHUNK_OPTION(cross_chunk_shuffle_count)
#undef EMBER_API_CHUNK_OPTION

 private:
  size_t preloader_count_, batch_size_, cache_size_, cross_chunk_shuffle_count_;
};

namespace chunk_detail {

// The cache between the preloaders and get_batch(): batches of examples (the last one may
// be partial) and preloader errors, in arrival order.
template <typename Batch>
class BatchBuffer {
 public:
  BatchBuffer(size_t batch_size, size_t cache_size, size_t producers)
      : batch_size_(batch_size), cache_size_(cache_size), producers_(producers) {}

  // Blocks while the cache is full; returns false when stopped.
  bool add(Batch data) {
    std::unique_lock<std::mutex> lock(mutex_);
    space_.wait(lock, [this] { return stopped_ || total_ < cache_size_; });
    if (stopped_) return false;
    size_t pos = 0;
    if (!entries_.empty() && !entries_.back().error && entries_.back().batch.size() < batch_size_) {
      auto& back = entries_.back().batch;
      const size_t n = std::min(batch_size_ - back.size(), data.size());
      back.insert(back.end(), std::make_move_iterator(data.begin()), std::make_move_iterator(data.begin() + n));
      pos = n;
    }
    while (pos < data.size()) {
      const size_t n = std::min(batch_size_, data.size() - pos);
      Entry e;
      e.batch.insert(e.batch.end(), std::make_move_iterator(data.begin() + pos),
                     std::make_move_iterator(data.begin() + pos + n));
      entries_.push_back(std::move(e));
      pos += n;
    }
    total_ += data.size();
    lock.unlock();
    ready_.notify_all();
    return true;
  }
  void add_error(std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Entry e;
      e.error = std::move(error);
      entries_.push_back(std::move(e));
    }
    ready_.notify_all();
  }
  // A producer has no more chunks.
  void producer_done() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --producers_;
    }
    ready_.notify_all();
  }
  // The next full batch (or the last, partial one); nullopt when all is consumed.
  std::optional<Batch> get() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [this] {
      return stopped_ || producers_ == 0 || total_ >= batch_size_ || (!entries_.empty() && entries_.front().error);
    });
    if (entries_.empty() || stopped_) return std::nullopt;
    Entry e = std::move(entries_.front());
    entries_.pop_front();
    if (e.error) std::rethrow_exception(e.error);
    total_ -= e.batch.size();
    lock.unlock();
    space_.notify_all();
    return std::move(e.batch);
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
    }
    ready_.notify_all();
    space_.notify_all();
  }

 private:
  struct Entry {
    Batch batch;
    std::exception_ptr error;
  };
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<Entry> entries_;
  size_t batch_size_, cache_size_, producers_;
  size_t total_ = 0;
  bool stopped_ = false;
};

}  // namespace chunk_detail

template <typename ChunkReader, typename ChunkSampler = samplers::RandomSampler,
          typename ExampleSampler = samplers::RandomSampler>
class ChunkDataset final : public StatefulDataset<ChunkDataset<ChunkReader, ChunkSampler, ExampleSampler>,
                                                  typename ChunkReader::ChunkType, size_t> {
 public:
  using BatchType = std::optional<typename ChunkReader::ChunkType>;
  using UnwrappedBatchType = typename ChunkReader::ChunkType;
  using BatchRequestType = size_t;
  using ChunkSamplerType = ChunkSampler;
  using ExampleSamplerType = ExampleSampler;

  ChunkDataset(ChunkReader chunk_reader, ChunkSampler chunk_sampler, ExampleSampler example_sampler,
               ChunkDatasetOptions options, std::function<void(UnwrappedBatchType&)> preprocessing_policy = nullptr)
      : chunk_reader_(std::move(chunk_reader)),
        chunk_sampler_(std::move(chunk_sampler)),
        example_sampler_(std::move(example_sampler)),
        options_(std::move(options)),
        preprocessing_policy_(std::move(preprocessing_policy)) {}

  ~ChunkDataset() override { free_workers(); }

  // The next batch from the cache (exactly options.batch_size() examples but the last).
  BatchType get_batch(size_t batch_size) override {
    detail::check(buffer_ != nullptr, "Dataset needs to call reset() before calling get_batch().");
    detail::check(batch_size == options_.batch_size(),
                  "The requested batch size does not match with the initialized batch size.\n"
                  " The requested batch size is ",
                  batch_size, ", while the dataset is created with batch size equal to ", options_.batch_size());
    return buffer_->get();
  }
  BatchType get_batch() { return get_batch(options_.batch_size()); }

  // Starts an epoch: stops the preloaders, resets reader and chunk sampler (unless a
  // position was just load()ed) and starts them again.
  void reset() override {
    free_workers();
    if (!load_checkpoint_) {
      chunk_reader_.reset();
      std::lock_guard<std::mutex> lock(chunk_index_guard_);
      chunk_sampler_.reset(chunk_reader_.chunk_count());
    }
    load_checkpoint_ = false;
    quit_ = false;
    buffer_ = std::make_unique<chunk_detail::BatchBuffer<UnwrappedBatchType>>(
        options_.batch_size(), options_.cache_size(), options_.preloader_count());
    for (size_t i = 0; i < options_.preloader_count(); ++i) preloaders_.emplace_back([this] { preloader_loop(); });
  }

  std::optional<size_t> size() const override { return std::nullopt; }

  // The chunk sampler (its position tells which chunks were handed to the preloaders).
  ChunkSampler& chunk_sampler() { return chunk_sampler_; }

  void save(serialize::OutputArchive& archive) const override {
    std::lock_guard<std::mutex> lock(chunk_index_guard_);
    chunk_sampler_.save(archive);
  }
  void load(serialize::InputArchive& archive) override {
    std::lock_guard<std::mutex> lock(chunk_index_guard_);
    chunk_sampler_.load(archive);
    load_checkpoint_ = true;
  }

 private:
  void preloader_loop() {
    while (!quit_) {
      std::vector<size_t> chunks;
      {
        std::lock_guard<std::mutex> lock(chunk_index_guard_);
        auto next = chunk_sampler_.next(options_.cross_chunk_shuffle_count());
        if (!next) break;
        chunks.assign(next->begin(), next->end());
      }
      if (chunks.empty()) break;
      try {
        UnwrappedBatchType data;
        for (size_t c : chunks) {
          auto chunk = chunk_reader_.read_chunk(c);
          data.insert(data.end(), std::make_move_iterator(chunk.begin()), std::make_move_iterator(chunk.end()));
        }
        if (preprocessing_policy_) preprocessing_policy_(data);
        if (!data.empty()) {
          std::vector<size_t> order;
          {
            std::lock_guard<std::mutex> lock(example_sampler_guard_);
            example_sampler_.reset(data.size());
            while (order.size() < data.size()) {
              auto idx = example_sampler_.next(data.size() - order.size());
              if (!idx) break;
              order.insert(order.end(), idx->begin(), idx->end());
            }
          }
          UnwrappedBatchType ordered;
          ordered.reserve(order.size());
          for (size_t i : order) ordered.push_back(data.at(i));
          if (!buffer_->add(std::move(ordered))) break;
        }
      } catch (...) {
        buffer_->add_error(std::current_exception());
      }
    }
    buffer_->producer_done();
  }

  void free_workers() {
    quit_ = true;
    if (buffer_) buffer_->stop();
    for (auto& t : preloaders_)
      if (t.joinable()) t.join();
    preloaders_.clear();
  }

  ChunkReader chunk_reader_;
  ChunkSampler chunk_sampler_;
  ExampleSampler example_sampler_;
  ChunkDatasetOptions options_;
  std::function<void(UnwrappedBatchType&)> preprocessing_policy_;
  std::unique_ptr<chunk_detail::BatchBuffer<UnwrappedBatchType>> buffer_;
  std::vector<std::thread> preloaders_;
  mutable std::mutex chunk_index_guard_;
  std::mutex example_sampler_guard_;
  std::atomic<bool> quit_{false};
  bool load_checkpoint_ = false;
};

}  // namespace ember::data::api::datasets
