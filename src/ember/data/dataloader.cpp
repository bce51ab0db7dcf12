#include "ember/profiler/record.h"
#include "ember/data/dataloader.h"

#include <chrono>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "ember/core/check.h"
#include "ember/data/sample_rng.h"
#include "ember/guards/guards.h"
#include "ember/ops/creation.h"

namespace ember::data {
namespace detail {

// One epoch's worth of work. Guarded by Impl::mu.
struct LoaderRun {
  struct Slot {
    std::any batch;
    std::string error;  // non-empty when building the batch failed
  };
  int64_t epoch = 0;
  uint64_t seed = 0;
  std::vector<std::vector<int64_t>> batches;  // map-style: each batch's sample indices
  int64_t total = -1;                         // batches in the epoch; -1 while a stream is open
  int64_t next_task = 0;                      // next batch a worker will build
  int64_t next_yield = 0;                     // next batch the consumer receives
  int64_t streamed = 0;                       // samples pulled from an IterableDataset
  std::map<int64_t, Slot> ready;              // built, not yet yielded
  bool cancelled = false;
  bool finished = false;
  // The DataLoaderWait guard: time the consumer spent inside next() after the first batch,
  // against the time since the first batch arrived (waiting + the consumer's own work).
  struct Wait {
    using Clock = std::chrono::steady_clock;
    Clock::time_point first;
    int64_t batches = -1;  // -1 until the first batch arrived
    double waited_s = 0;
    int64_t steps_at_first = 0;
    bool judged = false;
  } wait;
};

struct LoaderCore::Impl {
  std::shared_ptr<Dataset> dataset;
  std::shared_ptr<IterableDataset> iterable;
  CollateAny collate;
  bool fast_path = false;
  int num_workers = 0;
  int64_t window = 1;  // batches in flight ahead of the consumer

  mutable std::mutex mu;
  std::condition_variable work_cv;   // workers wait here for tasks
  std::condition_variable ready_cv;  // the consumer waits here for batches
  std::vector<std::thread> threads;
  bool stop = false;
  std::shared_ptr<LoaderRun> run;  // the run workers serve

  int64_t epoch = 0;
  int64_t consumed = 0;  // batches yielded in `epoch`
  bool resume = false;   // the next start() continues at `consumed`

  bool has_task(const LoaderRun& r) const {
    if (r.cancelled) return false;
    if (r.total >= 0 && r.next_task >= r.total) return false;
    return r.next_task < r.next_yield + window;
  }

  // Pulls the samples of batch k from the stream (caller holds mu when workers exist);
  // sets r.total when the stream ends. Returns false when batch k does not exist.
  bool pull(LoaderRun& r, int64_t batch_size, bool drop_last, std::vector<Example>& samples, std::string& error) {
    const int64_t k = r.next_task;
    try {
      while (static_cast<int64_t>(samples.size()) < batch_size) {
        std::optional<Example> ex = iterable->next();
        if (!ex) break;
        samples.push_back(std::move(*ex));
        ++r.streamed;
      }
    } catch (const std::exception& e) {
      error = ember::detail::str_cat("[DataLoader] the IterableDataset failed at sample ", r.streamed, " (batch ", k,
                              ", epoch ", r.epoch, "): ", e.what());
      r.total = k + 1;
      return true;
    }
    if (static_cast<int64_t>(samples.size()) < batch_size) {
      const bool keep = !samples.empty() && !drop_last;
      r.total = keep ? k + 1 : k;
      return keep;
    }
    return true;
  }

  // Builds map-style batch k of r (no lock held). `who` names the thread for errors.
  void build(const LoaderRun& r, int64_t k, const char* who, int worker, LoaderRun::Slot& slot) {
    const std::vector<int64_t>& idx = r.batches[static_cast<size_t>(k)];
    int64_t current = -1;
    try {
      if (fast_path) {
        Example out;
        if (dataset->get_batch(idx, out)) {
          slot.batch = std::move(out);
          return;
        }
      }
      std::vector<Example> samples;
      samples.reserve(idx.size());
      for (int64_t i : idx) {
        current = i;
        SampleScope scope({r.seed, r.epoch, i});
        samples.push_back(dataset->get(i));
      }
      current = -1;
      slot.batch = collate(std::move(samples));
    } catch (const std::exception& e) {
      std::string where = current >= 0 ? ember::detail::str_cat("sample index ", current)
                                       : ember::detail::str_cat("the batch of sample indices starting at ",
                                                         idx.empty() ? -1 : idx.front());
      std::string thread = worker >= 0 ? ember::detail::str_cat(who, " ", worker) : std::string(who);
      slot.error = ember::detail::str_cat("[DataLoader] ", thread, " failed on ", where, " (batch ", k, ", epoch ", r.epoch,
                                   "): ", e.what());
    }
  }

  void worker_loop(int worker, int64_t batch_size, bool drop_last) {
    std::unique_lock<std::mutex> lk(mu);
    while (true) {
      work_cv.wait(lk, [&] { return stop || (run && has_task(*run)); });
      if (stop) return;
      std::shared_ptr<LoaderRun> r = run;
      const int64_t k = r->next_task;
      LoaderRun::Slot slot;
      std::vector<Example> samples;
      if (iterable) {
        // Batch numbers are handed out in stream order, so batch k holds the k-th group
        // of samples whichever worker pulls it.
        if (!pull(*r, batch_size, drop_last, samples, slot.error)) {
          ready_cv.notify_all();
          continue;
        }
      }
      ++r->next_task;
      lk.unlock();
      if (iterable) {
        if (slot.error.empty()) {
          try {
            slot.batch = collate(std::move(samples));
          } catch (const std::exception& e) {
            slot.error = ember::detail::str_cat("[DataLoader] worker ", worker, " failed to collate batch ", k, " (epoch ",
                                         r->epoch, "): ", e.what());
          }
        }
      } else {
        build(*r, k, "worker", worker, slot);
      }
      lk.lock();
      if (!r->cancelled) r->ready.emplace(k, std::move(slot));
      ready_cv.notify_all();
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lk(mu);
      stop = true;
    }
    work_cv.notify_all();
    for (std::thread& t : threads) t.join();
    threads.clear();
    std::lock_guard<std::mutex> lk(mu);
    stop = false;
  }
};

LoaderCore::LoaderCore(std::shared_ptr<Dataset> dataset, std::shared_ptr<IterableDataset> iterable,
                       const DataLoaderOptions& options, CollateAny collate, bool fast_path)
    : impl_(std::make_unique<Impl>()), options_(options) {
  EMBER_CHECK(dataset || iterable, "[DataLoader] got a null dataset");
  EMBER_CHECK(collate, "[DataLoader] this batch type has no default collate function; pass one");
  EMBER_CHECK(options.num_workers() >= 0, "[DataLoader] num_workers must be >= 0, got ", options.num_workers());
  EMBER_CHECK(options.prefetch_factor() >= 1, "[DataLoader] prefetch_factor must be >= 1, got ",
              options.prefetch_factor());
  EMBER_CHECK(options.batch_size() >= 1, "[DataLoader] batch_size must be >= 1, got ", options.batch_size());
  if (options.batch_sampler()) {
    EMBER_CHECK(!options.shuffle() && !options.sampler() && !options.drop_last() && options.batch_size() == 1,
                "[DataLoader] batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                "drop_last");
  }
  EMBER_CHECK(!(options.shuffle() && options.sampler()), "[DataLoader] sampler option is mutually exclusive with shuffle");
  EMBER_CHECK(!iterable || (!options.shuffle() && !options.sampler() && !options.batch_sampler()),
              "[DataLoader] an IterableDataset cannot be used with shuffle, sampler or batch_sampler");
  impl_->dataset = std::move(dataset);
  impl_->iterable = std::move(iterable);
  impl_->collate = std::move(collate);
  impl_->fast_path = fast_path;
  impl_->num_workers = options.num_workers();
  impl_->window = static_cast<int64_t>(options.num_workers()) * options.prefetch_factor();
  if (options.seed()) {
    seed_ = *options.seed();
  } else {
    seed_ = static_cast<uint64_t>(randint(0, std::numeric_limits<int64_t>::max(), {1}).item<int64_t>());
  }
  if (!options_.batch_sampler() && impl_->dataset) {
    std::shared_ptr<Sampler> sampler = options_.sampler();
    if (!sampler) {
      const int64_t n = impl_->dataset->size();
      if (options_.shuffle()) {
        sampler = std::make_shared<RandomSampler>(n, false, std::nullopt, seed_);
      } else {
        sampler = std::make_shared<SequentialSampler>(n);
      }
    }
    options_.batch_sampler(std::make_shared<BatchSampler>(sampler, options_.batch_size(), options_.drop_last()));
  }
}

LoaderCore::~LoaderCore() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    if (impl_->run) impl_->run->cancelled = true;
    impl_->run.reset();
  }
  impl_->stop_workers();
}

int64_t LoaderCore::size() const {
  EMBER_CHECK(!impl_->iterable, "[DataLoader] size() is unknown for an IterableDataset");
  return options_.batch_sampler()->size();
}

void LoaderCore::set_epoch(int64_t epoch) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->epoch = epoch;
  impl_->consumed = 0;
  impl_->resume = false;
}

int64_t LoaderCore::epoch() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->epoch;
}

Value LoaderCore::state_dict() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  Value v = Value::dict();
  v["epoch"] = impl_->epoch;
  v["seed"] = static_cast<int64_t>(seed_);
  v["batches_consumed"] = impl_->consumed;
  return v;
}

void LoaderCore::load_state_dict(const Value& state) {
  EMBER_CHECK(state.is_dict() && state.contains("epoch") && state.contains("seed") && state.contains("batches_consumed"),
              "[DataLoader] load_state_dict expects a dict with epoch, seed and batches_consumed (from state_dict())");
  const int64_t consumed = state.at("batches_consumed").to_int();
  EMBER_CHECK(consumed >= 0, "[DataLoader] batches_consumed must be non-negative, got ", consumed);
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->epoch = state.at("epoch").to_int();
  seed_ = static_cast<uint64_t>(state.at("seed").to_int());
  impl_->consumed = consumed;
  impl_->resume = true;
  // Samplers built from the loader's own seed pick up the restored one.
  if (!options_.sampler() && options_.shuffle() && impl_->dataset) {
    auto sampler = std::make_shared<RandomSampler>(impl_->dataset->size(), false, std::nullopt, seed_);
    options_.batch_sampler(std::make_shared<BatchSampler>(sampler, options_.batch_size(), options_.drop_last()));
  }
}

std::shared_ptr<LoaderRun> LoaderCore::start() {
  Impl& m = *impl_;
  auto r = std::make_shared<LoaderRun>();
  int64_t skip = 0;
  {
    std::lock_guard<std::mutex> lk(m.mu);
    if (m.run) {
      m.run->cancelled = true;
      m.ready_cv.notify_all();
    }
    if (!m.resume) m.consumed = 0;
    m.resume = false;
    r->epoch = m.epoch;
    r->seed = seed_;
    skip = m.consumed;
  }
  if (m.dataset) {
    BatchSampler& bs = *options_.batch_sampler();
    bs.set_epoch(r->epoch);
    r->batches = bs.batches();
    r->total = static_cast<int64_t>(r->batches.size());
    EMBER_CHECK(skip <= r->total, "[DataLoader] the restored state consumed ", skip, " batches but epoch ", r->epoch,
                " has only ", r->total);
  } else {
    m.iterable->reset();
    // Resuming a stream: replay and drop the samples already consumed.
    for (int64_t i = 0; i < skip * options_.batch_size(); ++i) {
      if (!m.iterable->next()) break;
    }
  }
  r->next_task = r->next_yield = skip;
  if (m.num_workers > 0) {
    if (m.threads.empty()) {
      for (int w = 0; w < m.num_workers; ++w) {
        m.threads.emplace_back([&m, w, bsz = options_.batch_size(), dl = options_.drop_last()] {
          m.worker_loop(w, bsz, dl);
        });
      }
    }
    {
      std::lock_guard<std::mutex> lk(m.mu);
      m.run = r;
    }
    m.work_cv.notify_all();
  }
  return r;
}

bool LoaderCore::next(LoaderRun& r, std::any& out) {
  if (!guards::is_enabled(guards::Guard::DataLoaderWait) || r.wait.judged) return next_batch(r, out);
  using Clock = LoaderRun::Wait::Clock;
  const Clock::time_point t0 = Clock::now();
  const bool got = next_batch(r, out);
  const Clock::time_point t1 = Clock::now();
  LoaderRun::Wait& w = r.wait;
  if (w.batches < 0) {  // the first batch includes starting the workers: not counted
    w.first = t1;
    w.batches = 0;
    w.steps_at_first = guards::optimizer_steps();
    return got;
  }
  w.waited_s += std::chrono::duration<double>(t1 - t0).count();
  if (got) ++w.batches;
  // Judged at the end of the epoch, or after 5x the minimum in a long one, and only for a
  // training loop (optimizer steps happened in between), not for a loop that just reads data.
  const int64_t min_batches = guards::settings().dataloader_min_batches;
  if ((!got && w.batches >= min_batches) || w.batches >= 5 * min_batches) {
    w.judged = true;
    if (guards::optimizer_steps() > w.steps_at_first) {
      guards::detail::dataloader_wait_report(w.waited_s, std::chrono::duration<double>(t1 - w.first).count(),
                                             w.batches, impl_->num_workers);
    }
  }
  return got;
}

bool LoaderCore::next_batch(LoaderRun& r, std::any& out) {
  profiler::RecordFunction record("DataLoader.next", profiler::EventKind::DataLoader);  // the wait for a batch
  Impl& m = *impl_;
  LoaderRun::Slot slot;
  int64_t k = 0;
  {
    std::unique_lock<std::mutex> lk(m.mu);
    EMBER_CHECK(!r.cancelled || r.finished,
                "[DataLoader] this iterator was invalidated: the loader started another epoch (begin() was called again)");
    if (r.finished || (r.total >= 0 && r.next_yield >= r.total)) {
      if (!r.finished) {
        r.finished = true;
        ++m.epoch;
        m.consumed = 0;
      }
      return false;
    }
    k = r.next_yield;
    if (m.num_workers == 0) {
      if (m.iterable) {
        std::vector<Example> samples;
        if (!m.pull(r, options_.batch_size(), options_.drop_last(), samples, slot.error)) {
          r.finished = true;
          ++m.epoch;
          m.consumed = 0;
          return false;
        }
        lk.unlock();
        if (slot.error.empty()) slot.batch = m.collate(std::move(samples));
      } else {
        lk.unlock();
        m.build(r, k, "the main thread", -1, slot);
      }
      lk.lock();
      r.next_task = k + 1;
    } else {
      m.work_cv.notify_all();
      m.ready_cv.wait(lk, [&] { return r.cancelled || r.ready.count(k) || (r.total >= 0 && k >= r.total); });
      EMBER_CHECK(!r.cancelled, "[DataLoader] this iterator was invalidated: the loader started another epoch");
      if (!r.ready.count(k)) {  // the stream ended
        r.finished = true;
        ++m.epoch;
        m.consumed = 0;
        return false;
      }
      auto it = r.ready.find(k);
      slot = std::move(it->second);
      r.ready.erase(it);
    }
    r.next_yield = k + 1;
    m.consumed = k + 1;
  }
  if (m.num_workers > 0) m.work_cv.notify_all();
  if (!slot.error.empty()) throw Error(slot.error);
  out = std::move(slot.batch);
  return true;
}

void LoaderCore::finish(LoaderRun& r) {
  Impl& m = *impl_;
  bool stop_threads = false;
  {
    std::lock_guard<std::mutex> lk(m.mu);
    if (m.run.get() == &r) {
      r.cancelled = true;
      r.ready.clear();
      m.run.reset();
      stop_threads = !options_.persistent_workers();
    } else if (!r.cancelled) {
      r.cancelled = true;
    }
  }
  if (stop_threads) m.stop_workers();
}

}  // namespace detail
}  // namespace ember::data
