// DataLoader: batch contents and order for any num_workers, errors from workers, early
// shutdown, resume from state_dict, iterable data sets, padded batches.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace ember::data {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace data_dataloader_test {

// Sample i: data [2] = {i, i + 0.5} plus a random draw from the sample's stream; target i.
class CountingDataset : public Dataset {
 public:
  explicit CountingDataset(int64_t n, int64_t fail_at = -1, int sleep_us = 0)
      : n_(n), fail_at_(fail_at), sleep_us_(sleep_us) {}
  int64_t size() const override { return n_; }
  Example get(int64_t i) override {
    if (i == fail_at_) throw std::runtime_error("broken sample file");
    if (sleep_us_) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
    ++calls;
    Tensor d = tensor({static_cast<double>(i), static_cast<double>(i) + 0.5, sample_uniform()},
                      TensorOptions(kFloat64));
    return apply_transform({d, tensor(i)});
  }
  std::atomic<int64_t> calls{0};

 private:
  int64_t n_, fail_at_;
  int sleep_us_;
};

std::vector<std::vector<double>> Epoch(DataLoader& loader) {
  std::vector<std::vector<double>> out;
  for (Example& b : loader) {
    EXPECT_EQ(b.data.dim(), 2);
    EXPECT_EQ(b.target.dim(), 1);
    EXPECT_EQ(b.data.size(0), b.target.size(0));
    std::vector<double> v = b.data.to_vector<double>();
    for (int64_t t : b.target.to_vector<int64_t>()) v.push_back(static_cast<double>(t));
    out.push_back(v);
  }
  return out;
}

TEST(DataLoader, SequentialBatches) {
  auto ds = std::make_shared<CountingDataset>(10);
  DataLoader loader(ds, DataLoaderOptions().batch_size(4).seed(0));
  EXPECT_EQ(loader.size(), 3);
  std::vector<int64_t> sizes, targets;
  for (Example& b : loader) {
    sizes.push_back(b.data.size(0));
    for (int64_t t : b.target.to_vector<int64_t>()) targets.push_back(t);
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(targets, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  DataLoader dropping(ds, DataLoaderOptions().batch_size(4).drop_last(true));
  EXPECT_EQ(dropping.size(), 2);
  int n = 0;
  for (Example& b : dropping) n += static_cast<int>(b.data.size(0));
  EXPECT_EQ(n, 8);
}

TEST(DataLoader, OrderIsIndependentOfWorkerCount) {
  auto ds = std::make_shared<CountingDataset>(103);
  std::vector<std::vector<std::vector<double>>> runs;
  for (int workers : {0, 1, 3}) {
    DataLoader loader(ds, DataLoaderOptions().batch_size(8).shuffle(true).num_workers(workers).seed(42));
    runs.push_back(Epoch(loader));
    runs.push_back(Epoch(loader));  // epoch 1: a different shuffle
  }
  ASSERT_EQ(runs[0].size(), 13u);
  EXPECT_NE(runs[0], runs[1]);
  for (size_t r = 2; r < runs.size(); ++r) EXPECT_EQ(runs[r], runs[r % 2]) << "run " << r;
}

TEST(DataLoader, SetEpochIsDeterministicAndSeedMatters) {
  auto ds = std::make_shared<CountingDataset>(50);
  DataLoader a(ds, DataLoaderOptions().batch_size(5).shuffle(true).seed(1).num_workers(2));
  DataLoader b(ds, DataLoaderOptions().batch_size(5).shuffle(true).seed(1));
  DataLoader c(ds, DataLoaderOptions().batch_size(5).shuffle(true).seed(2));
  a.set_epoch(3);
  b.set_epoch(3);
  c.set_epoch(3);
  const auto ea = Epoch(a);
  EXPECT_EQ(ea, Epoch(b));
  EXPECT_NE(ea, Epoch(c));
  EXPECT_EQ(a.epoch(), 4);  // a finished epoch advances
}

TEST(DataLoader, WorkerExceptionNamesTheSampleIndex) {
  for (int workers : {0, 2}) {
    auto ds = std::make_shared<CountingDataset>(40, /*fail_at=*/17);
    DataLoader loader(ds, DataLoaderOptions().batch_size(4).num_workers(workers));
    std::string msg;
    int batches = 0;
    try {
      for (Example& b : loader) {
        (void)b;
        ++batches;
      }
    } catch (const Error& e) {
      msg = e.what();
    }
    EXPECT_EQ(batches, 4) << "batches 0..3 arrive before the failing batch 4";
    EXPECT_NE(msg.find("sample index 17"), std::string::npos) << msg;
    EXPECT_NE(msg.find("broken sample file"), std::string::npos) << msg;
    EXPECT_NE(msg.find("batch 4"), std::string::npos) << msg;
  }
}

TEST(DataLoader, EarlyDestructionShutsDownWithoutHanging) {
  auto ds = std::make_shared<CountingDataset>(100000, -1, /*sleep_us=*/50);
  auto done = std::async(std::launch::async, [ds] {
    for (bool persistent : {false, true}) {
      DataLoader loader(ds, DataLoaderOptions().batch_size(16).num_workers(3).prefetch_factor(2)
                                .persistent_workers(persistent));
      int n = 0;
      for (Example& b : loader) {
        (void)b;
        if (++n == 3) break;  // the iterator dies mid-epoch
      }
      auto it = loader.begin();  // a second, abandoned epoch: the loader dies with workers busy
      EXPECT_EQ((*it).data.size(0), 16);
    }
    return true;
  });
  ASSERT_EQ(done.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "DataLoader shutdown hung";
  EXPECT_TRUE(done.get());
  // Prefetching is bounded: nowhere near all 100000 samples were loaded.
  EXPECT_LT(ds->calls.load(), 2000);
}

TEST(DataLoader, ResumeFromStateDict) {
  auto ds = std::make_shared<CountingDataset>(64);
  auto opts = DataLoaderOptions().batch_size(4).shuffle(true).seed(5).num_workers(2);
  DataLoader full(ds, opts);
  full.set_epoch(2);
  const auto expected = Epoch(full);

  DataLoader first(ds, opts);
  first.set_epoch(2);
  Value state;
  int seen = 0;
  for (Example& b : first) {
    (void)b;
    if (++seen == 6) {
      state = first.state_dict();
      break;
    }
  }
  EXPECT_EQ(state.at("epoch").to_int(), 2);
  EXPECT_EQ(state.at("batches_consumed").to_int(), 6);
  EXPECT_EQ(state.at("seed").to_int(), 5);

  DataLoader resumed(ds, DataLoaderOptions().batch_size(4).shuffle(true).seed(99).num_workers(1));
  resumed.load_state_dict(state);
  const auto rest = Epoch(resumed);
  ASSERT_EQ(rest.size(), expected.size() - 6);
  for (size_t i = 0; i < rest.size(); ++i) EXPECT_EQ(rest[i], expected[i + 6]);
  EXPECT_EQ(resumed.epoch(), 3);
  EXPECT_EQ(Epoch(resumed).size(), 16u);  // the next epoch is whole again
}

TEST(DataLoader, RandomTransformsDoNotDependOnWorkers) {
  auto ds = std::make_shared<TensorDataset>(arange(0, 6 * 8, TensorOptions(kFloat32)).reshape({6, 1, 8}), arange(6));
  ds->set_transform(transforms::RandomHorizontalFlip(0.5));
  std::vector<std::vector<float>> runs;
  for (int workers : {0, 2}) {
    DataLoader loader(ds, DataLoaderOptions().batch_size(6).num_workers(workers).seed(3));
    for (Example& b : loader) runs.push_back(b.data.to_vector<float>());
  }
  EXPECT_EQ(runs[0], runs[1]);
}

TEST(DataLoader, BatchSamplerAndCustomSampler) {
  auto ds = std::make_shared<CountingDataset>(10);
  auto bs = std::make_shared<BatchSampler>(std::make_shared<SequentialSampler>(10), 5);
  DataLoader a(ds, DataLoaderOptions().batch_sampler(bs));
  EXPECT_EQ(a.size(), 2);
  auto sub = std::make_shared<DistributedSampler>(10, 2, 1, false);
  DataLoader b(ds, DataLoaderOptions().batch_size(10).sampler(sub));
  for (Example& e : b) EXPECT_EQ(e.target.to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 5, 7, 9}));
  std::string msg;
  try {
    DataLoader bad(ds, DataLoaderOptions().batch_sampler(bs).shuffle(true));
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("mutually exclusive"), std::string::npos) << msg;
}

class Stream : public IterableDataset {
 public:
  explicit Stream(int64_t n) : n_(n) {}
  std::optional<Example> next() override {
    if (i_ >= n_) return std::nullopt;
    const int64_t i = i_++;
    return Example{tensor({static_cast<double>(i)}), Tensor()};
  }
  void reset() override { i_ = 0; }

 private:
  int64_t n_, i_ = 0;
};

TEST(DataLoader, IterableDatasetKeepsStreamOrder) {
  for (int workers : {0, 3}) {
    DataLoader loader(std::make_shared<Stream>(23), DataLoaderOptions().batch_size(5).num_workers(workers));
    std::vector<double> seen;
    int batches = 0;
    for (int epoch = 0; epoch < 2; ++epoch) {
      seen.clear();
      batches = 0;
      for (Example& b : loader) {
        EXPECT_FALSE(b.target.defined());
        for (double v : b.data.to_vector<double>()) seen.push_back(v);
        ++batches;
      }
    }
    EXPECT_EQ(batches, 5);
    ASSERT_EQ(seen.size(), 23u);
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<double>(i));
  }
}

class Sequences : public Dataset {
 public:
  int64_t size() const override { return 3; }
  Example get(int64_t i) override {
    Tensor d = full({i + 1, 2}, static_cast<double>(i + 1));
    return {d, tensor(i)};
  }
};

TEST(DataLoader, PaddedBatches) {
  PaddedDataLoader loader(std::make_shared<Sequences>(), DataLoaderOptions().batch_size(3).num_workers(1));
  int n = 0;
  for (PaddedBatch& b : loader) {
    ++n;
    EXPECT_EQ(b.data.sizes().vec(), (std::vector<int64_t>{3, 3, 2}));
    EXPECT_EQ(b.lengths.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
    EXPECT_EQ(b.target.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  }
  EXPECT_EQ(n, 1);
}

}  // namespace
}  // namespace ember::data
