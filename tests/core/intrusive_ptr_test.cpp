// IntrusivePtr's counts (Note [Unshared reference counts]): make() starts at one without an
// atomic add, the last owner deletes without an atomic subtraction, and owners on several
// threads dropping the same objects in different orders delete each object exactly once.

#include <gtest/gtest.h>

#include <ember/ember.h>

#include <atomic>
#include <thread>
#include <vector>

// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace core_intrusive_ptr_test {

using namespace ember;

class Counted final : public IntrusiveTarget {
 public:
  explicit Counted(std::atomic<int>* deaths) : deaths_(deaths) {}
  ~Counted() override { deaths_->fetch_add(1); }

 private:
  std::atomic<int>* deaths_;
};

TEST(IntrusivePtr, MakeStartsAtOneAndTheLastOwnerDeletes) {
  std::atomic<int> deaths{0};
  {
    auto p = IntrusivePtr<Counted>::make(&deaths);
    EXPECT_EQ(p.use_count(), 1u);
    IntrusivePtr<Counted> q = p;
    EXPECT_EQ(p.use_count(), 2u);
    q.reset();
    EXPECT_EQ(p.use_count(), 1u);
    IntrusivePtr<Counted> moved = std::move(p);
    EXPECT_EQ(moved.use_count(), 1u);
    EXPECT_EQ(deaths.load(), 0);
  }
  EXPECT_EQ(deaths.load(), 1);
  {
    IntrusivePtr<Counted> adopted(new Counted(&deaths));  // a fresh object with count zero
    EXPECT_EQ(adopted.use_count(), 1u);
  }
  EXPECT_EQ(deaths.load(), 2);
}

TEST(IntrusivePtr, OwnersOnSeveralThreadsDeleteEachObjectOnce) {
  constexpr int kObjects = 2000;
  constexpr int kThreads = 4;
  std::atomic<int> deaths{0};
  std::vector<std::vector<IntrusivePtr<Counted>>> owned(kThreads);
  {
    std::vector<IntrusivePtr<Counted>> objects;
    for (int i = 0; i < kObjects; ++i) objects.push_back(IntrusivePtr<Counted>::make(&deaths));
    for (int t = 0; t < kThreads; ++t) owned[t] = objects;
  }  // now every object has kThreads owners, one per thread
  std::atomic<int> start{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.fetch_add(1);
      while (start.load() < kThreads) {
      }
      auto& mine = owned[t];
      for (int round = 0; round < 3; ++round) {  // extra copies and releases in between
        std::vector<IntrusivePtr<Counted>> copies(mine.begin(), mine.end());
      }
      if (t % 2 == 0) {
        for (auto& p : mine) p.reset();
      } else {
        for (auto it = mine.rbegin(); it != mine.rend(); ++it) it->reset();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(deaths.load(), kObjects);
}

TEST(IntrusivePtr, TensorsSharedAcrossThreadsAreFreedOnce) {
  const int64_t before = memory_allocated();
  {
    std::vector<Tensor> shared;
    for (int i = 0; i < 200; ++i) shared.push_back(full({16}, static_cast<float>(i)));
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([shared]() mutable {  // each thread owns copies of every handle
        for (int round = 0; round < 50; ++round) {
          std::vector<Tensor> copies = shared;
          for (const Tensor& c : copies) (void)c.data_ptr();
        }
        shared.clear();
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(shared[7].use_count(), 1u);
    EXPECT_EQ(shared[7].to_vector<float>(), std::vector<float>(16, 7.0f));
  }
  EXPECT_EQ(memory_allocated(), before);
}

}  // namespace core_intrusive_ptr_test
