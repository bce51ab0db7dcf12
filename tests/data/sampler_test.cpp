// Samplers: permutations, reproducibility, weighted frequencies, distributed partitions,
// batch grouping.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

namespace ember::data {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace data_sampler_test {

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

using ember::testing::ErrorOf;

TEST(Sampler, SequentialIsInOrder) {
  SequentialSampler s(5);
  EXPECT_EQ(s.indices(), Iota(5));
  EXPECT_EQ(s.size(), 5);
}

TEST(Sampler, RandomIsAReproduciblePermutation) {
  RandomSampler a(1000, false, std::nullopt, 7), b(1000, false, std::nullopt, 7), c(1000, false, std::nullopt, 8);
  const auto ia = a.indices();
  EXPECT_EQ(Sorted(ia), Iota(1000));
  EXPECT_NE(ia, Iota(1000));
  EXPECT_EQ(ia, b.indices());
  EXPECT_EQ(ia, a.indices());  // same epoch, same order
  EXPECT_NE(ia, c.indices());
  a.set_epoch(1);
  EXPECT_NE(ia, a.indices());
  EXPECT_EQ(Sorted(a.indices()), Iota(1000));
}

TEST(Sampler, RandomNumSamplesAndReplacement) {
  RandomSampler more(10, false, 25, 1);
  const auto m = more.indices();
  ASSERT_EQ(m.size(), 25u);
  EXPECT_EQ(Sorted(std::vector<int64_t>(m.begin(), m.begin() + 10)), Iota(10));  // whole permutations first
  RandomSampler rep(5, true, 10000, 3);
  const auto r = rep.indices();
  ASSERT_EQ(r.size(), 10000u);
  std::vector<int> counts(5);
  for (int64_t i : r) {
    ASSERT_GE(i, 0);
    ASSERT_LT(i, 5);
    ++counts[static_cast<size_t>(i)];
  }
  for (int c : counts) EXPECT_NEAR(c / 10000.0, 0.2, 0.02);
}

TEST(Sampler, WeightedFrequenciesFollowTheWeights) {
  const std::vector<double> w{1, 0, 2, 3, 4};
  WeightedRandomSampler s(w, 100000, true, 11);
  const auto idx = s.indices();
  ASSERT_EQ(idx.size(), 100000u);
  std::vector<double> freq(5);
  for (int64_t i : idx) freq[static_cast<size_t>(i)] += 1.0 / 100000;
  for (size_t k = 0; k < w.size(); ++k) EXPECT_NEAR(freq[k], w[k] / 10.0, 0.006) << "index " << k;
  EXPECT_EQ(freq[1], 0.0);
  EXPECT_EQ(idx, WeightedRandomSampler(w, 100000, true, 11).indices());
}

TEST(Sampler, WeightedWithoutReplacementIsDistinct) {
  WeightedRandomSampler s({5, 1, 1, 0, 1}, 4, false, 2);
  const auto idx = s.indices();
  ASSERT_EQ(idx.size(), 4u);
  EXPECT_EQ(Sorted(idx), (std::vector<int64_t>{0, 1, 2, 4}));
  // A heavy weight comes first most of the time.
  int first_heavy = 0;
  for (int e = 0; e < 400; ++e) {
    s.set_epoch(e);
    first_heavy += s.indices()[0] == 0;
  }
  EXPECT_NEAR(first_heavy / 400.0, 5.0 / 8.0, 0.08);
  EXPECT_NE(ErrorOf([] { WeightedRandomSampler({1, 0}, 2, false); }).find("without replacement"), std::string::npos);
  EXPECT_NE(ErrorOf([] { WeightedRandomSampler({1, -1}, 2); }).find("weight 1"), std::string::npos);
}

TEST(Sampler, DistributedPartitionsAreDisjointCompleteAndEqual) {
  for (int64_t n : {10, 11, 12, 3}) {
    const int64_t replicas = 4;
    std::vector<int64_t> all;
    for (int64_t rank = 0; rank < replicas; ++rank) {
      DistributedSampler s(n, replicas, rank, true, 5);
      const auto idx = s.indices();
      EXPECT_EQ(static_cast<int64_t>(idx.size()), (n + replicas - 1) / replicas);
      EXPECT_EQ(s.size(), static_cast<int64_t>(idx.size()));
      all.insert(all.end(), idx.begin(), idx.end());
    }
    const int64_t padding = (n + replicas - 1) / replicas * replicas - n;
    EXPECT_EQ(static_cast<int64_t>(all.size()), n + padding);
    std::set<int64_t> unique(all.begin(), all.end());
    EXPECT_EQ(static_cast<int64_t>(unique.size()), n) << "every index appears (n=" << n << ")";
  }
}

TEST(Sampler, DistributedMatchesPyTorchsAlgorithm) {
  // No shuffle: indices 0..9 padded with 0, 1 to 12, then [rank::3] (PyTorch's result).
  EXPECT_EQ(DistributedSampler(10, 3, 0, false).indices(), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(DistributedSampler(10, 3, 1, false).indices(), (std::vector<int64_t>{1, 4, 7, 0}));
  EXPECT_EQ(DistributedSampler(10, 3, 2, false).indices(), (std::vector<int64_t>{2, 5, 8, 1}));
  // Padding longer than the data repeats it: n=2 over 5 replicas -> 0 1 0 1 0.
  EXPECT_EQ(DistributedSampler(2, 5, 4, false).indices(), (std::vector<int64_t>{0}));
  EXPECT_EQ(DistributedSampler(2, 5, 3, false).indices(), (std::vector<int64_t>{1}));
  // drop_last: 10 over 3 -> 3 each from the first 9.
  DistributedSampler d(10, 3, 2, false, 0, true);
  EXPECT_EQ(d.size(), 3);
  EXPECT_EQ(d.indices(), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_NE(ErrorOf([] { DistributedSampler(10, 3, 3); }).find("invalid rank 3"), std::string::npos);
}

TEST(Sampler, DistributedSetEpochReshufflesConsistentlyAcrossRanks) {
  DistributedSampler r0(100, 2, 0, true, 9), r1(100, 2, 1, true, 9);
  const auto e0 = r0.indices();
  r0.set_epoch(1);
  r1.set_epoch(1);
  const auto a = r0.indices(), b = r1.indices();
  EXPECT_NE(a, e0);
  std::vector<int64_t> all(a);
  all.insert(all.end(), b.begin(), b.end());
  EXPECT_EQ(Sorted(all), Iota(100));
}

TEST(Sampler, BatchSamplerGroups) {
  auto seq = std::make_shared<SequentialSampler>(7);
  BatchSampler keep(seq, 3, false), drop(seq, 3, true);
  EXPECT_EQ(keep.size(), 3);
  EXPECT_EQ(drop.size(), 2);
  const auto b = keep.batches();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[2], (std::vector<int64_t>{6}));
  EXPECT_EQ(drop.batches().back(), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_NE(ErrorOf([&] { BatchSampler(seq, 0); }).find("batch_size"), std::string::npos);
}

}  // namespace
}  // namespace ember::data
