#include <gtest/gtest.h>

#include <ember/ember.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace core_parallel_test {

using namespace ember;

struct ThreadsGuard {
  int saved = get_num_threads();
  ~ThreadsGuard() { set_num_threads(saved); }
};

std::vector<std::pair<int64_t, int64_t>> chunks_seen(int threads, int64_t begin, int64_t end,
                                                     int64_t grain) {
  set_num_threads(threads);
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> seen;
  parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(m);
    seen.emplace_back(b, e);
  });
  std::sort(seen.begin(), seen.end());
  return seen;
}

TEST(Parallel, SetAndGetThreads) {
  ThreadsGuard g;
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  EXPECT_THROW(set_num_threads(0), Error);
}

TEST(Parallel, ChunkBoundariesDoNotDependOnThreadCount) {
  ThreadsGuard g;
  auto one = chunks_seen(1, 5, 1005, 64);
  auto two = chunks_seen(2, 5, 1005, 64);
  auto four = chunks_seen(4, 5, 1005, 64);
  EXPECT_EQ(one, two);
  EXPECT_EQ(one, four);
  ASSERT_EQ(one.size(), 16u);  // ceil(1000 / 64)
  EXPECT_EQ(one.front(), std::make_pair(int64_t(5), int64_t(69)));
  EXPECT_EQ(one.back(), std::make_pair(int64_t(965), int64_t(1005)));
  for (size_t i = 1; i < one.size(); ++i) EXPECT_EQ(one[i].first, one[i - 1].second);
  EXPECT_TRUE(chunks_seen(2, 10, 10, 4).empty());
}

TEST(Parallel, UsesMoreThanOneThreadAndNestsSerially) {
  ThreadsGuard g;
  set_num_threads(2);
  std::atomic<int> inside{0};
  std::atomic<int> nested_calls{0};
  parallel_for(0, 64, 1, [&](int64_t, int64_t) {
    if (in_parallel_region()) ++inside;
    parallel_for(0, 4, 1, [&](int64_t, int64_t) { ++nested_calls; });
  });
  EXPECT_EQ(inside.load(), 64);
  EXPECT_EQ(nested_calls.load(), 64 * 4);
  EXPECT_FALSE(in_parallel_region());
}

TEST(Parallel, ExceptionsReachTheCaller) {
  ThreadsGuard g;
  set_num_threads(2);
  EXPECT_THROW(parallel_for(0, 100, 10,
                            [](int64_t b, int64_t) {
                              if (b == 50) throw Error("[test] chunk 50 failed");
                            }),
               Error);
  // The pool still works afterwards.
  std::atomic<int64_t> sum{0};
  parallel_for(0, 100, 7, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(Parallel, LargeCopiesAreIdenticalAcrossThreadCounts) {
  ThreadsGuard g;
  Tensor src = arange(3 * 1000 * 700, kFloat64).reshape({3, 1000, 700}).permute({2, 0, 1});
  set_num_threads(1);
  Tensor a = src.contiguous().to(kFloat16);
  set_num_threads(2);
  Tensor b = src.contiguous().to(kFloat16);
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()), 0);
  EXPECT_EQ(a.to_vector<float>()[1], static_cast<float>(Half(700.0f)));
}

}  // namespace
