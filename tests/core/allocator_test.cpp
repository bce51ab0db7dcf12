// The CPU allocator's per-thread small-block cache (Note [Small-block cache]): reuse by size
// class, alignment, the depth bound, release by empty_cache() on every thread and at thread
// exit, the zero-limit switch, and concurrent use with frees on other threads.

#include <gtest/gtest.h>

#include <ember/ember.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace core_allocator_test {

using namespace ember;

bool aligned(const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % kCpuAlignment == 0; }

TEST(SmallBlockCache, FreedBlockIsReusedForTheSameSizeClass) {
  empty_cache();
  ASSERT_EQ(memory_stats().cached_small_bytes, 0);
  void* first = nullptr;
  {
    Tensor t = empty({10});  // 40 bytes, padded to 64
    first = t.data_ptr();
    EXPECT_TRUE(aligned(t));
  }
  EXPECT_EQ(memory_stats().cached_small_bytes, 64);
  EXPECT_EQ(memory_stats().cached_bytes, 64) << "cached_bytes covers every cache";
  const MemoryStats before = memory_stats();
  Tensor again = empty({16});  // 64 bytes: the same class
  EXPECT_EQ(again.data_ptr(), first) << "the freed block is handed out again";
  EXPECT_TRUE(aligned(again));
  const MemoryStats after = memory_stats();
  EXPECT_EQ(after.cached_small_bytes, 0);
  EXPECT_EQ(after.num_allocations - before.num_allocations, 1) << "a cache hit is still an allocation";
  EXPECT_EQ(after.allocated_bytes - before.allocated_bytes, 64) << "statistics count tensor bytes";
}

TEST(SmallBlockCache, OtherSizeClassesAndLargeBlocksAreNotMixed) {
  empty_cache();
  void* first = nullptr;
  {
    Tensor t = empty({16});  // 64 bytes
    first = t.data_ptr();
  }
  Tensor bigger = empty({32});  // 128 bytes: another class, so the cached block stays
  EXPECT_NE(bigger.data_ptr(), first);
  EXPECT_TRUE(aligned(bigger));
  EXPECT_EQ(memory_stats().cached_small_bytes, 64);
  { Tensor edge = empty({1024}); }  // 4096 bytes: the largest cached size
  EXPECT_EQ(memory_stats().cached_small_bytes, 64 + 4096);
  { Tensor over = empty({1025}); }  // 4100 bytes: past the small cache, below the large one
  EXPECT_EQ(memory_stats().cached_small_bytes, 64 + 4096);
  EXPECT_EQ(memory_stats().cached_bytes, 64 + 4096);
  empty_cache();
  EXPECT_EQ(memory_stats().cached_small_bytes, 0);
  EXPECT_EQ(memory_stats().cached_bytes, 0);
}

TEST(SmallBlockCache, DepthIsBoundedAndBlocksAreDistinct) {
  empty_cache();
  {
    std::vector<Tensor> live;
    for (int i = 0; i < 40; ++i) live.push_back(empty({8}));  // 32 bytes -> the 64-byte class
    std::vector<void*> seen;
    for (const Tensor& t : live) {
      EXPECT_TRUE(aligned(t));
      seen.push_back(t.data_ptr());
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end()) << "live tensors never share a block";
  }
  EXPECT_EQ(memory_stats().cached_small_bytes, 16 * 64) << "16 blocks per class and thread";
  empty_cache();
  EXPECT_EQ(memory_stats().cached_small_bytes, 0);
}

TEST(SmallBlockCache, ReusedBlocksHoldFreshValues) {
  empty_cache();
  { Tensor t = full({10}, 7.0f); }
  Tensor z = zeros({10});  // reuses the block; the factory still writes every element
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(10, 0.0f));
  Tensor a = arange(10, kFloat32);
  Tensor b = ones({10});
  Tensor c;
  for (int i = 0; i < 100; ++i) c = a + b;  // outputs cycle through cached blocks
  std::vector<float> want(10);
  for (int i = 0; i < 10; ++i) want[i] = static_cast<float>(i + 1);
  EXPECT_EQ(c.to_vector<float>(), want);
}

TEST(SmallBlockCache, ZeroLimitDisablesIt) {
  empty_cache();
  set_allocator_cache_limit(0);
  { Tensor t = empty({10}); }
  EXPECT_EQ(memory_stats().cached_small_bytes, 0) << "a zero limit disables every cache";
  set_allocator_cache_limit(int64_t(1) << 30);
  { Tensor t = empty({10}); }
  EXPECT_EQ(memory_stats().cached_small_bytes, 64);
  set_allocator_cache_limit(int64_t(1) << 30);  // setting a limit also empties the caches
  EXPECT_EQ(memory_stats().cached_small_bytes, 0);
}

TEST(SmallBlockCache, EmptyCacheReleasesOtherThreadsAndExitReleasesTheRest) {
  empty_cache();
  std::mutex m;
  std::condition_variable cv;
  int stage = 0;
  std::thread worker([&] {
    { Tensor t = empty({100}); }  // 400 bytes -> a 448-byte block cached on this thread
    {
      std::lock_guard<std::mutex> lock(m);
      stage = 1;
    }
    cv.notify_all();
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return stage == 2; });
    lock.unlock();
    { Tensor t = empty({100}); }  // cached again; the thread's exit must release it
  });
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return stage == 1; });
  }
  EXPECT_EQ(memory_stats().cached_small_bytes, 448);
  empty_cache();
  EXPECT_EQ(memory_stats().cached_small_bytes, 0) << "empty_cache releases every thread's cache";
  {
    std::lock_guard<std::mutex> lock(m);
    stage = 2;
  }
  cv.notify_all();
  worker.join();
  EXPECT_EQ(memory_stats().cached_small_bytes, 0) << "a thread's cache is released when it ends";
}

// Threads allocate tensors, stamp them with their own pattern, hand some to a neighbour
// that checks and frees them (a free on another thread than the allocation), while one
// thread keeps emptying the caches and reading the statistics. Two live tensors sharing a
// block, or a block freed twice, shows up as a broken pattern or a crash.
TEST(SmallBlockCache, ConcurrentUseWithCrossThreadFreesAndEmptyCache) {
  empty_cache();
  const int64_t held_before = memory_allocated();
  constexpr int kThreads = 4;
  constexpr int kIters = 4000;
  std::mutex qm[kThreads];
  std::deque<Tensor> queue[kThreads];
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  auto check = [&](const Tensor& t) {
    const int32_t* p = t.data_ptr<int32_t>();
    const int32_t stamp = p[0];
    for (int64_t i = 1; i < t.numel(); ++i) {
      if (p[i] != stamp + static_cast<int32_t>(i)) {
        ++bad;
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&, id] {
      std::vector<Tensor> mine;
      for (int it = 0; it < kIters; ++it) {
        const int64_t n = 1 + (it * 7 + id * 13) % 1000;  // 4 to 4000 bytes
        Tensor t = empty({n}, TensorOptions(kInt32));
        int32_t* p = t.data_ptr<int32_t>();
        const int32_t stamp = id * 1000000 + it;
        for (int64_t i = 0; i < n; ++i) p[i] = stamp + static_cast<int32_t>(i);
        if (it % 3 == 0) {
          std::lock_guard<std::mutex> lock(qm[(id + 1) % kThreads]);
          queue[(id + 1) % kThreads].push_back(std::move(t));
        } else {
          mine.push_back(std::move(t));
          if (mine.size() > 8) {
            for (const Tensor& x : mine) check(x);
            mine.clear();
          }
        }
        std::deque<Tensor> incoming;
        {
          std::lock_guard<std::mutex> lock(qm[id]);
          incoming.swap(queue[id]);
        }
        for (const Tensor& x : incoming) check(x);
      }
      for (const Tensor& x : mine) check(x);
    });
  }
  std::thread janitor([&] {
    while (!stop.load()) {
      empty_cache();
      (void)memory_stats();
      std::this_thread::yield();
    }
  });
  for (auto& t : threads) t.join();
  stop = true;
  janitor.join();
  for (int id = 0; id < kThreads; ++id) {
    for (const Tensor& x : queue[id]) check(x);
    queue[id].clear();
  }
  EXPECT_EQ(bad.load(), 0) << "a block was shared by two live tensors";
  EXPECT_EQ(memory_allocated(), held_before);
  empty_cache();
  EXPECT_EQ(memory_stats().cached_small_bytes, 0);
}

}  // namespace core_allocator_test
