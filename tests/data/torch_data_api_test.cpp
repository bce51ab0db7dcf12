// The libtorch-style data API (ember/data/torch_data.h, ember::data::api): data sets and
// map(), transforms, samplers (sequences, reset, save/load), the loader with and without
// workers (ordering, drop_last, errors, timeouts), stateful and chunk data sets.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ember/data/torch_data.h"
#include "ember/ember.h"

namespace ember::data {
namespace data_torch_api_test {

namespace datasets = ::ember::data::api::datasets;
namespace samplers = ::ember::data::api::samplers;
namespace transforms = ::ember::data::api::transforms;
using ::ember::Tensor;

// Example i is the int i * 10.
struct Tens : datasets::Dataset<Tens, int> {
  explicit Tens(size_t n = 20) : n(n) {}
  int get(size_t index) override { return static_cast<int>(index) * 10; }
  std::optional<size_t> size() const override { return n; }
  size_t n;
};

template <typename Loader>
std::vector<int> flatten(Loader& loader) {
  std::vector<int> out;
  for (auto& batch : loader) out.insert(out.end(), batch.begin(), batch.end());
  return out;
}

std::vector<int> tens(size_t n) {
  std::vector<int> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int>(i) * 10;
  return v;
}

TEST(TorchDataApi, DatasetBuildsBatchesFromGet) {
  Tens d;
  EXPECT_EQ(d.get_batch({3, 1}), (std::vector<int>{30, 10}));
  EXPECT_EQ(d.get_batch(size_t{4}), (std::vector<int>{40}));  // one index
  EXPECT_FALSE(Tens::is_stateful);
}

TEST(TorchDataApi, MapAppliesTransformsInOrder) {
  auto d = Tens()
               .map(transforms::Lambda<int>([](int x) { return x + 1; }))
               .map(transforms::Lambda<int, std::string>([](int x) { return std::to_string(x); }))
               .map(transforms::BatchLambda<std::vector<std::string>, std::string>([](std::vector<std::string> v) {
                 std::string s;
                 for (auto& x : v) s += x + ";";
                 return s;
               }));
  EXPECT_EQ(d.get_batch({0, 2, 5}), "1;21;51;");
  EXPECT_EQ(d.size().value(), 20u);
  auto sum =
      Tens().map(transforms::Collate<int>([](std::vector<int> v) { return std::accumulate(v.begin(), v.end(), 0); }));
  EXPECT_EQ(sum.get_batch({1, 2, 3}), 60);
}

TEST(TorchDataApi, TensorDatasetStackAndTensorLambda) {
  Tensor x = ember::arange(12, ember::TensorOptions().dtype(ember::kFloat32)).reshape({4, 3});
  datasets::TensorDataset ds(x);
  EXPECT_EQ(ds.size().value(), 4u);
  EXPECT_TRUE(ember::equal(ds.get(2).data, x[2]));
  auto stacked = datasets::TensorDataset(x).map(transforms::Stack<api::TensorExample>());
  api::TensorExample b = stacked.get_batch({1, 3});
  EXPECT_EQ(b.data.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(ember::equal(b.data[1], x[3]));

  struct Pairs : datasets::Dataset<Pairs> {
    api::Example<> get(size_t i) override {
      return {ember::full({2}, static_cast<double>(i)),
              ember::full({1}, static_cast<double>(-static_cast<int64_t>(i)))};
    }
    std::optional<size_t> size() const override { return 5; }
  };
  auto doubled = Pairs().map(transforms::TensorLambda<>([](Tensor t) { return t * 2; })).map(transforms::Stack<>());
  api::Example<> e = doubled.get_batch({1, 4});
  EXPECT_EQ(e.data.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(e.target.sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_DOUBLE_EQ(e.data[1][0].item<double>(), 8.0);     // data doubled
  EXPECT_DOUBLE_EQ(e.target[1][0].item<double>(), -4.0);  // target untouched
}

TEST(TorchDataApi, NormalizePerChannelAndShared) {
  struct Img : datasets::Dataset<Img, api::Example<Tensor, int>> {
    api::Example<Tensor, int> get(size_t) override { return {ember::ones({2, 3, 3}), 7}; }
    std::optional<size_t> size() const override { return 1; }
  };
  auto per_channel = Img().map(transforms::Normalize<int>({0.5, 2.0}, {0.25, 0.5}));
  auto out = per_channel.get_batch(size_t{0}).at(0);
  EXPECT_EQ(out.target, 7);
  EXPECT_DOUBLE_EQ(out.data[0][1][1].item<double>(), 2.0);   // (1 - 0.5) / 0.25
  EXPECT_DOUBLE_EQ(out.data[1][2][0].item<double>(), -2.0);  // (1 - 2) / 0.5
  auto shared = Img().map(transforms::Normalize<int>(1.5, 0.5));
  auto o2 = shared.get_batch(size_t{0}).at(0).data;
  EXPECT_EQ(o2.sizes(), (std::vector<int64_t>{2, 3, 3}));
  EXPECT_DOUBLE_EQ(o2[1][0][0].item<double>(), -1.0);
}

TEST(TorchDataApi, SequentialSamplerSequenceResetAndSaveLoad) {
  samplers::SequentialSampler s(5);
  EXPECT_EQ(s.next(2).value(), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(s.next(10).value(), (std::vector<size_t>{2, 3, 4}));
  EXPECT_FALSE(s.next(1).has_value());
  s.reset(3);
  EXPECT_EQ(s.next(2).value(), (std::vector<size_t>{0, 1}));
  std::stringstream stream;
  ember::save(s, stream);
  samplers::SequentialSampler t(3);
  ember::load(t, stream);
  EXPECT_EQ(t.index(), 2u);
  EXPECT_EQ(t.next(5).value(), (std::vector<size_t>{2}));
}

TEST(TorchDataApi, RandomSamplerIsASeededPermutation) {
  ember::manual_seed(123);
  samplers::RandomSampler a(10);
  std::vector<size_t> first = a.next(4).value(), rest = a.next(100).value();
  EXPECT_FALSE(a.next(1).has_value());
  first.insert(first.end(), rest.begin(), rest.end());
  std::vector<size_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_t> iota(10);
  std::iota(iota.begin(), iota.end(), size_t{0});
  EXPECT_EQ(sorted, iota);
  ember::manual_seed(123);
  samplers::RandomSampler b(10);
  EXPECT_EQ(b.next(10).value(), first);  // same seed, same order

  // save/load carries the permutation and the position.
  samplers::RandomSampler c(10);
  c.next(3);
  std::stringstream stream;
  ember::save(c, stream);
  samplers::RandomSampler d(10);
  ember::load(d, stream);
  EXPECT_EQ(d.index(), 3u);
  EXPECT_EQ(d.next(10).value(), c.next(10).value());
}

TEST(TorchDataApi, StreamAndDistributedSamplers) {
  samplers::StreamSampler s(7);
  EXPECT_EQ(s.next(5).value().size(), 5u);
  EXPECT_EQ(static_cast<size_t>(s.next(5).value()), 2u);
  EXPECT_FALSE(s.next(5).has_value());

  // 10 indices over 3 replicas: blocks of 4 with duplicates (wrapping), of 3 without.
  std::vector<size_t> all;
  for (size_t rank = 0; rank < 3; ++rank) {
    samplers::DistributedSequentialSampler d(10, 3, rank, /*allow_duplicates=*/true);
    while (auto idx = d.next(3)) all.insert(all.end(), idx->begin(), idx->end());
  }
  EXPECT_EQ(all, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}));
  samplers::DistributedRandomSampler r(10, 3, 1, /*allow_duplicates=*/false);
  r.set_epoch(4);
  r.reset();
  auto got = r.next(10).value();
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<size_t>{3, 4, 5}));
  std::stringstream stream;
  ember::save(r, stream);
  samplers::DistributedRandomSampler r2(10, 3, 1, false);
  ember::load(r2, stream);
  EXPECT_EQ(r2.epoch(), 4u);
  EXPECT_EQ(r2.index(), 3u);
}

TEST(TorchDataApi, LoaderWithoutAndWithWorkersSeesEveryExampleInOrder) {
  for (size_t workers : {0, 2}) {
    auto loader =
        api::make_data_loader<samplers::SequentialSampler>(Tens(23), api::DataLoaderOptions(5).workers(workers));
    EXPECT_EQ(loader->options().max_jobs, 2 * workers);
    for (int epoch = 0; epoch < 2; ++epoch) EXPECT_EQ(flatten(*loader), tens(23)) << workers << " workers";
  }
}

// Later indices come back first unless the loader reorders them.
struct Slow : datasets::Dataset<Slow, int> {
  int get(size_t index) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(5 * (8 - static_cast<int>(index))));
    return static_cast<int>(index);
  }
  std::optional<size_t> size() const override { return 8; }
};

TEST(TorchDataApi, EnforceOrderingKeepsSamplerOrderAcrossWorkers) {
  auto loader = api::make_data_loader(Slow(), samplers::SequentialSampler(8),
                                      api::DataLoaderOptions(1).workers(4).enforce_ordering(true));
  std::vector<int> got;
  for (auto& b : *loader) got.push_back(b.at(0));
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  auto unordered = api::make_data_loader(Slow(), samplers::SequentialSampler(8),
                                         api::DataLoaderOptions(1).workers(4).enforce_ordering(false));
  got.clear();
  for (auto& b : *unordered) got.push_back(b.at(0));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(TorchDataApi, DropLast) {
  auto keep = api::make_data_loader<samplers::SequentialSampler>(Tens(10), api::DataLoaderOptions(4));
  std::vector<size_t> sizes;
  for (auto& b : *keep) sizes.push_back(b.size());
  EXPECT_EQ(sizes, (std::vector<size_t>{4, 4, 2}));
  auto drop = api::make_data_loader<samplers::SequentialSampler>(Tens(10),
                                                                 api::DataLoaderOptions(4).drop_last(true).workers(2));
  sizes.clear();
  for (auto& b : *drop) sizes.push_back(b.size());
  EXPECT_EQ(sizes, (std::vector<size_t>{4, 4}));
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(TorchDataApi, IteratorAndLoaderErrors) {
  auto loader = api::make_data_loader(Tens(4), api::DataLoaderOptions(4));
  auto it = loader->begin();
  auto end = loader->end();
  EXPECT_NE(it, end);
  ++it;
  EXPECT_EQ(it, end);
  EXPECT_NE(error_of([&] { ++it; }).find("Attempted to increment iterator past the end"), std::string::npos);
  EXPECT_NE(error_of([&] { *it; }).find("Attempted to dereference iterator that was past the end"), std::string::npos);
  EXPECT_NE(error_of([&] { *end; }).find("Dereferencing the DataLoader's past-the-end iterator is not allowed"),
            std::string::npos);

  auto busy = api::make_data_loader(Tens(40), api::DataLoaderOptions(1).workers(2));
  auto first = busy->begin();
  EXPECT_NE(error_of([&] { busy->begin(); }).find("while another iterator is not yet exhausted"), std::string::npos);

  struct Unsized : datasets::Dataset<Unsized, int> {
    int get(size_t) override { return 0; }
    std::optional<size_t> size() const override { return std::nullopt; }
  };
  EXPECT_NE(error_of([] { api::make_data_loader(Unsized()); }).find("Expected the dataset to be sized"),
            std::string::npos);
}

TEST(TorchDataApi, WorkerExceptionsAndTimeouts) {
  struct Bad : datasets::Dataset<Bad, int> {
    int get(size_t) override { throw std::out_of_range("no such row"); }
    std::optional<size_t> size() const override { return 10; }
  };
  auto loader = api::make_data_loader(Bad(), api::DataLoaderOptions(2).workers(2));
  try {
    (void)*loader->begin();
    ADD_FAILURE() << "expected a WorkerException";
  } catch (const api::WorkerException& e) {
    EXPECT_EQ(std::string(e.what()), "Caught exception in DataLoader worker thread. Original message: no such row");
    EXPECT_THROW(std::rethrow_exception(e.original_exception), std::out_of_range);
  }

  api::detail::Queue<int> q;
  EXPECT_NE(error_of([&] {
              q.pop(std::chrono::milliseconds(5));
            }).find("Timeout in DataLoader queue while waiting for next batch (timeout was 5 ms)"),
            std::string::npos);

  struct Sleepy : datasets::Dataset<Sleepy, int> {
    int get(size_t) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      return 0;
    }
    std::optional<size_t> size() const override { return 2; }
  };
  auto slow =
      api::make_data_loader(Sleepy(), api::DataLoaderOptions(1).workers(1).timeout(std::chrono::milliseconds(20)));
  EXPECT_NE(error_of([&] { (void)*slow->begin(); }).find("Timeout"), std::string::npos);
}

TEST(TorchDataApi, SequencersAndShuttle) {
  struct R {
    size_t sequence_number;
  };
  api::detail::sequencers::OrderedSequencer<R> seq(3);
  std::vector<size_t> arrivals = {2, 1, 0};
  size_t k = 0;
  auto producer = [&]() -> std::optional<R> { return R{arrivals.at(k++)}; };
  EXPECT_EQ(seq.next(producer)->sequence_number, 0u);
  EXPECT_EQ(seq.next(producer)->sequence_number, 1u);
  EXPECT_EQ(seq.next(producer)->sequence_number, 2u);
  EXPECT_EQ(k, 3u);

  api::detail::DataShuttle<int, int> shuttle;
  EXPECT_FALSE(shuttle.pop_result().has_value());
  shuttle.push_job(7);
  EXPECT_EQ(shuttle.in_flight_jobs(), 1u);
  EXPECT_EQ(shuttle.pop_job(), 7);
  shuttle.push_result(70);
  EXPECT_EQ(shuttle.pop_result().value(), 70);
  EXPECT_EQ(shuttle.in_flight_jobs(), 0u);
}

// Hands out 0..limit-1, one per batch, then nullopt; thread-safe.
struct Counter : datasets::StatefulDataset<Counter, int, size_t> {
  explicit Counter(int limit) : limit(limit) {}
  std::optional<int> get_batch(size_t) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (next < limit) return next++;
    return std::nullopt;
  }
  std::optional<size_t> size() const override { return std::nullopt; }
  void reset() override { next = 0; }
  void save(ember::serialize::OutputArchive& archive) const override {
    archive.write("next", ember::tensor(std::vector<int64_t>{next}));
  }
  void load(ember::serialize::InputArchive& archive) override {
    Tensor t;
    archive.read("next", t);
    next = static_cast<int>(t[0].item<int64_t>());
  }
  int limit;
  int next = 0;
  std::mutex mutex;
};

TEST(TorchDataApi, StatefulDatasetWithSharedWorkers) {
  auto loader = api::make_data_loader(datasets::make_shared_dataset<Counter>(12), api::DataLoaderOptions().workers(3));
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::multiset<int> seen;
    for (int v : *loader) seen.insert(v);
    EXPECT_EQ(seen.size(), 12u);
    EXPECT_EQ(*seen.begin(), 0);
    EXPECT_EQ(*seen.rbegin(), 11);
  }
  auto mapped = api::make_data_loader(datasets::make_shared_dataset<Counter>(3).map(
      transforms::BatchLambda<int, std::string>([](int x) { return std::to_string(x); })));
  std::string all;
  for (auto& s : *mapped) all += s;
  EXPECT_EQ(all, "012");

  Counter c(5);
  c.next = 4;
  std::stringstream stream;
  ember::save(c, stream);
  Counter d(5);
  ember::load(d, stream);
  EXPECT_EQ(d.next, 4);
}

// Chunk c holds 4 * c + (0, 1, 2, 3) for c < 5.
struct Chunks : datasets::ChunkDataReader<int> {
  ChunkType read_chunk(size_t c) override {
    ChunkType v(4);
    std::iota(v.begin(), v.end(), static_cast<int>(4 * c));
    return v;
  }
  size_t chunk_count() override { return 5; }
  void reset() override {}
};

TEST(TorchDataApi, ChunkDatasetBatchesSpanChunks) {
  using CD = datasets::ChunkDataset<Chunks, samplers::SequentialSampler, samplers::SequentialSampler>;
  for (size_t workers : {0, 2}) {
    auto ds =
        datasets::make_shared_dataset<CD>(Chunks(), samplers::SequentialSampler(0), samplers::SequentialSampler(0),
                                          datasets::ChunkDatasetOptions(1, 6, 12));
    auto loader = api::make_data_loader(ds, api::DataLoaderOptions(6).workers(workers));
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::vector<int> all;
      std::vector<size_t> sizes;
      for (auto& b : *loader) {
        sizes.push_back(b.size());
        all.insert(all.end(), b.begin(), b.end());
      }
      std::sort(sizes.begin(), sizes.end());
      EXPECT_EQ(sizes, (std::vector<size_t>{2, 6, 6, 6}));
      std::sort(all.begin(), all.end());
      std::vector<int> expected(20);
      std::iota(expected.begin(), expected.end(), 0);
      EXPECT_EQ(all, expected);
    }
    EXPECT_EQ(ds->chunk_sampler().index(), 5u);
  }
  EXPECT_NE(error_of([] { datasets::ChunkDatasetOptions(1, 8, 4); }).find("Cache size is less than batch size"),
            std::string::npos);
}

TEST(TorchDataApi, ArchiveRoundTripsTensors) {
  ember::serialize::OutputArchive out;
  Tensor f = ember::tensor({1.5, -2.0, 3.25});
  out.write("weights", f.reshape({3, 1}));
  ember::serialize::OutputArchive nested;
  nested.write("step", ember::tensor(std::vector<int64_t>{42}));
  out.write("opt", nested);
  std::stringstream stream;
  out.save_to(stream);
  ember::serialize::InputArchive in;
  in.load_from(stream);
  Tensor g;
  in.read("weights", g);
  EXPECT_EQ(g.sizes(), (std::vector<int64_t>{3, 1}));
  EXPECT_DOUBLE_EQ(g[2][0].item<double>(), 3.25);
  ember::serialize::InputArchive sub;
  in.read("opt", sub);
  Tensor step;
  sub.read("step", step);
  EXPECT_EQ(step[0].item<int64_t>(), 42);
  EXPECT_NE(error_of([&] { in.read("missing", g); }).find("no entry 'missing'"), std::string::npos);
  std::stringstream junk("not an archive");
  EXPECT_NE(error_of([&] { in.load_from(junk); }).find("does not hold an ember archive"), std::string::npos);
}

TEST(TorchDataApi, MnistReadsIdxFiles) {
  char tmpl[] = "/tmp/ember-api-mnist-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  Tensor images = ember::zeros({3, 28, 28}, ember::TensorOptions().dtype(ember::kUInt8));
  images[1].fill_(51);
  write_idx(images, dir + "/t10k-images-idx3-ubyte");
  write_idx(ember::tensor(std::vector<int64_t>{7, 2, 9}).to(ember::kUInt8), dir + "/t10k-labels-idx1-ubyte");
  datasets::MNIST test(dir, datasets::MNIST::Mode::kTest);
  EXPECT_FALSE(test.is_train());
  EXPECT_EQ(test.size().value(), 3u);
  api::Example<> e = test.get(1);
  EXPECT_EQ(e.data.sizes(), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_NEAR(e.data[0][5][5].item<float>(), 0.2f, 1e-6);
  EXPECT_EQ(e.target.item<int64_t>(), 2);
  auto loader = api::make_data_loader<samplers::SequentialSampler>(
      std::move(test).map(transforms::Normalize<>(0.5, 0.5)).map(transforms::Stack<>()), 2);
  std::vector<int64_t> batch_sizes;
  for (auto& b : *loader) {
    batch_sizes.push_back(b.data.size(0));
    EXPECT_NEAR(b.data[0][0][0][0].item<float>(), -1.0f, 1e-6);  // (0 - 0.5) / 0.5
  }
  EXPECT_EQ(batch_sizes, (std::vector<int64_t>{2, 1}));
  EXPECT_THROW(datasets::MNIST(dir, datasets::MNIST::Mode::kTrain), std::exception);  // no train files
  std::remove((dir + "/t10k-images-idx3-ubyte").c_str());
  std::remove((dir + "/t10k-labels-idx1-ubyte").c_str());
  ::rmdir(dir.c_str());
}

}  // namespace data_torch_api_test
}  // namespace ember::data
