#pragma once
// Internals of the libtorch-style DataLoader (torch::data::detail): a blocking queue with
// an optional timeout, the DataShuttle that carries jobs to the worker threads and results
// back, and the sequencers that put results back into job order (enforce_ordering).

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ember/data/api/types.h"

namespace ember::data::api::detail {

// A thread-safe FIFO queue; pop() blocks until an element is there (or the timeout passes).
template <typename T>
class Queue {
 public:
  void push(T value) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push(std::move(value));
    }
    cv_.notify_one();
  }

  // The front element; waits for one, at most timeout when given (then throws).
  T pop(std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (timeout) {
      if (!cv_.wait_for(lock, *timeout, [this] { return !queue_.empty(); })) {
        throw std::runtime_error("Timeout in DataLoader queue while waiting for next batch (timeout was " +
                                 std::to_string(timeout->count()) + " ms)");
      }
    } else {
      cv_.wait(lock, [this] { return !queue_.empty(); });
    }
    T value = std::move(queue_.front());
    queue_.pop();
    return value;
  }

  // Empties the queue; returns how many elements it dropped.
  size_t clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t n = queue_.size();
    while (!queue_.empty()) queue_.pop();
    return n;
  }

 private:
  std::queue<T> queue_;
  std::mutex mutex_;
  std::condition_variable cv_;
};

// Jobs go to the workers, results come back; counts the jobs in flight (pushed, and whose
// result was not popped yet).
template <typename Job, typename Result>
class DataShuttle {
 public:
  void push_job(Job job) {
    new_jobs_.push(std::move(job));
    ++in_flight_jobs_;
  }
  void push_result(Result result) { results_.push(std::move(result)); }
  // For the workers: blocks until a job is there.
  Job pop_job() { return new_jobs_.pop(); }

  // The next result, or nullopt when no job is in flight; throws after timeout.
  std::optional<Result> pop_result(std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    if (in_flight_jobs_ == 0) return std::nullopt;
    Result result = results_.pop(timeout);
    --in_flight_jobs_;
    return result;
  }

  // Drops the jobs no worker took yet and waits for (and discards) the results of the rest.
  void drain() {
    const size_t dropped = new_jobs_.clear();
    in_flight_jobs_ -= std::min(dropped, in_flight_jobs_);
    while (in_flight_jobs_ > 0) pop_result();
  }

  size_t in_flight_jobs() const noexcept { return in_flight_jobs_; }

 private:
  Queue<Job> new_jobs_;
  Queue<Result> results_;
  size_t in_flight_jobs_ = 0;  // touched by the main thread only
};

namespace sequencers {

template <typename Result>
using ResultProducer = std::function<std::optional<Result>()>;

// Orders the results a ResultProducer yields.
template <typename Result>
struct Sequencer {
  virtual ~Sequencer() = default;
  virtual std::optional<Result> next(ResultProducer<Result> next_result) = 0;
};

// Results in the order they arrive.
template <typename Result>
struct NoSequencer final : public Sequencer<Result> {
  std::optional<Result> next(ResultProducer<Result> next_result) override { return next_result(); }
};

// Results in sequence_number order: results that arrive early wait in a ring buffer of
// max_jobs slots (at most max_jobs jobs are in flight, so they fit).
template <typename Result>
struct OrderedSequencer : public Sequencer<Result> {
  explicit OrderedSequencer(size_t max_jobs) : buffer_(max_jobs) {}

  std::optional<Result> next(ResultProducer<Result> next_result) override {
    if (auto& slot = buffer(next_sequence_number_)) {
      Result result = std::move(*slot);
      slot.reset();
      ++next_sequence_number_;
      return result;
    }
    while (auto result = next_result()) {
      if (result->sequence_number == next_sequence_number_) {
        ++next_sequence_number_;
        return result;
      }
      auto& slot = buffer(result->sequence_number);
      ::ember::data::api::detail::check(
          !slot.has_value(), "[OrderedSequencer] two results for slot of sequence number ", result->sequence_number);
      slot = std::move(result);
    }
    return std::nullopt;
  }

  std::optional<Result>& buffer(size_t sequence_number) {
    ::ember::data::api::detail::check(!buffer_.empty(), "[OrderedSequencer] max_jobs is 0");
    return buffer_[sequence_number % buffer_.size()];
  }

  // The sequence number of the result next() returns next.
  size_t next_sequence_number_ = 0;
  // Results that arrived before their turn.
  std::vector<std::optional<Result>> buffer_;
};

}  // namespace sequencers
}  // namespace ember::data::api::detail
