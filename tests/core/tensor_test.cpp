// The tensor object: handles, storage sharing, the version counter, metadata accessors,
// DimVector, and the guarantees against misuse (errors, never crashes).

#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace core_tensor_test {

using namespace ember;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Tensor, HandleCopiesShareTheImpl) {
  Tensor a = zeros({2, 3});
  EXPECT_EQ(a.use_count(), 1u);
  Tensor b = a;
  EXPECT_EQ(a.use_count(), 2u);
  EXPECT_TRUE(b.is_same(a));
  b.fill_(7);
  EXPECT_EQ(a.to_vector<float>()[5], 7.0f);
  Tensor c = std::move(b);
  EXPECT_FALSE(b.defined());
  EXPECT_EQ(a.use_count(), 2u);
}

TEST(Tensor, StorageModelOfTheTransposedMatrix) {
  Tensor a = arange(12).reshape({3, 4});
  EXPECT_EQ(a.strides().vec(), (std::vector<int64_t>{4, 1}));
  EXPECT_TRUE(a.is_contiguous());
  Tensor at = a.t();
  EXPECT_EQ(at.strides().vec(), (std::vector<int64_t>{1, 4}));
  EXPECT_TRUE(at.is_same_storage(a));
  EXPECT_FALSE(at.is_contiguous());
  std::string msg = error_of([&] { at.view({12}); });
  EXPECT_NE(msg.find("[view]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reshape()"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4, 3]"), std::string::npos) << msg;
  Tensor r = at.reshape({12});
  EXPECT_FALSE(r.is_same_storage(a));
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
}

TEST(Tensor, MetadataAccessors) {
  Tensor t = zeros({2, 3, 4}, kFloat64);
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.stride(0), 12);
  EXPECT_EQ(t.element_size(), 8u);
  EXPECT_EQ(t.nbytes(), 192u);
  EXPECT_EQ(t.dtype(), kFloat64);
  EXPECT_TRUE(t.device().is_cpu());
  Tensor s = t.select(0, 1).slice(1, 1, 3);
  EXPECT_EQ(s.storage_offset(), 12 + 1);
  EXPECT_EQ(s.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(s.nbytes(), 3u * 2u * 8u) << "nbytes counts the view's elements";
  EXPECT_EQ(static_cast<char*>(s.data_ptr()) - static_cast<char*>(t.data_ptr()), 13 * 8);
  EXPECT_THROW(t.size(3), Error);
  EXPECT_THROW(t.stride(-4), Error);
  EXPECT_THROW(zeros({}).size(0), Error);
}

TEST(Tensor, VersionCounterIsSharedByViews) {
  Tensor base = zeros({4, 4});
  Tensor row = base[2];
  Tensor col = base.t()[1];
  EXPECT_EQ(base._version(), 0u);
  row.fill_(1.0);
  EXPECT_EQ(base._version(), 1u);
  EXPECT_EQ(col._version(), 1u);
  col.copy_(ones({4}));
  EXPECT_EQ(row._version(), 2u);
  base.zero_();
  EXPECT_EQ(col._version(), 3u);
  // Copies have their own counter.
  Tensor c = base.clone();
  c.fill_(2);
  EXPECT_EQ(base._version(), 3u);
  EXPECT_EQ(c._version(), 1u);
  // Writes through the views land in the base.
  row.fill_(5);
  EXPECT_EQ(base.to_vector<float>()[8], 5.0f);
}

TEST(Tensor, UndefinedTensorsThrowInsteadOfCrashing) {
  Tensor u;
  EXPECT_FALSE(u.defined());
  EXPECT_THROW(u.sizes(), Error);
  EXPECT_THROW(u.numel(), Error);
  EXPECT_THROW(u.dtype(), Error);
  EXPECT_THROW(u.data_ptr(), Error);
  EXPECT_THROW(u.view({1}), Error);
  EXPECT_THROW(u.clone(), Error);
  EXPECT_THROW(zeros({1}).copy_(u), Error);
  EXPECT_THROW(u.item<float>(), Error);
  EXPECT_THROW(u.requires_grad(), Error);
  EXPECT_NE(error_of([&] { u.sizes(); }).find("undefined"), std::string::npos);
}

TEST(Tensor, RequiresGradFlag) {
  Tensor f = zeros({2});
  EXPECT_FALSE(f.requires_grad());
  f.requires_grad_();
  EXPECT_TRUE(f.requires_grad());
  f.requires_grad_(false);
  EXPECT_FALSE(f.requires_grad());
  EXPECT_TRUE(ones({2}, requires_grad()).requires_grad());
  std::string msg = error_of([] { zeros({2}, kInt64).requires_grad_(); });
  EXPECT_NE(msg.find("floating point"), std::string::npos) << msg;
}

TEST(Tensor, ItemAndDataPtr) {
  EXPECT_EQ(tensor(int64_t(7)).item<int64_t>(), 7);
  EXPECT_FLOAT_EQ(tensor({2.5}).item<float>(), 2.5f);
  EXPECT_EQ(tensor({2.5}).item<int>(), 2);
  EXPECT_TRUE(tensor({true}).item<bool>());
  EXPECT_DOUBLE_EQ(tensor({1.25}, kHalf).item().to_double(), 1.25);
  EXPECT_TRUE(tensor({3}).item().is_integral());
  EXPECT_NE(error_of([] { zeros({2}).item<float>(); }).find("2 elements"), std::string::npos);
  Tensor t = zeros({3}, kInt32);
  EXPECT_NO_THROW(t.data_ptr<int32_t>());
  std::string msg = error_of([&] { t.data_ptr<float>(); });
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
}

TEST(Tensor, ContiguityRules) {
  // Size-1 dims do not break contiguity whatever their stride (as in PyTorch).
  Tensor a = zeros({3, 1, 4}).as_strided({3, 1, 4}, {4, 99, 1}, 0);
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_TRUE(zeros({0, 5}).t().is_contiguous());
  EXPECT_FALSE(zeros({2, 3}).expand({4, 2, 3}).is_contiguous());
  EXPECT_TRUE(zeros({1, 3}).expand({1, 3}).is_contiguous());
  EXPECT_EQ(compute_contiguous({2, 3}, {3, 1}), true);
  EXPECT_EQ(contiguous_strides({2, 0, 3}).vec(), (std::vector<int64_t>{3, 3, 1}));
}

TEST(Tensor, ImplSizeIsBounded) { EXPECT_LE(sizeof(TensorImpl), 192u); }

TEST(DimVector, InlineHeapCopyMove) {
  DimVector v{1, 2, 3};
  EXPECT_EQ(v.size(), 3u);
  for (int i = 4; i <= 9; ++i) v.push_back(i);  // spills to the heap past 5
  EXPECT_EQ(v.size(), 9u);
  EXPECT_EQ(v[8], 9);
  DimVector w = v;
  w[0] = 100;
  EXPECT_EQ(v[0], 1);
  DimVector m = std::move(w);
  EXPECT_EQ(m[0], 100);
  EXPECT_EQ(m.size(), 9u);
  m.erase(0);
  EXPECT_EQ(m[0], 2);
  m.insert(1, -5);
  EXPECT_EQ(m.vec(), (std::vector<int64_t>{2, -5, 3, 4, 5, 6, 7, 8, 9}));
  DimVector small{7, 8};
  DimVector moved(std::move(small));
  EXPECT_EQ(moved.vec(), (std::vector<int64_t>{7, 8}));
  m = moved;
  EXPECT_EQ(m.vec(), (std::vector<int64_t>{7, 8}));
  EXPECT_TRUE(IntArrayRef({1, 2}) == IntArrayRef(std::vector<int64_t>{1, 2}));
}

}  // namespace

namespace core_tensor_test {

using namespace ember;

TEST(Allocator, LargeBlocksAreCachedAndReused) {
  empty_cache();
  void* first = nullptr;
  {
    Tensor big = empty({1 << 20});  // 4 MiB
    first = big.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % kCpuAlignment, 0u);
  }
  EXPECT_EQ(memory_stats().cached_bytes, int64_t(4) << 20);
  const int64_t held = memory_allocated();
  Tensor again = empty({1 << 20});
  EXPECT_EQ(again.data_ptr(), first) << "the freed block is handed out again";
  EXPECT_EQ(memory_stats().cached_bytes, 0);
  EXPECT_EQ(memory_allocated(), held + (int64_t(4) << 20)) << "statistics count tensor bytes only";
  again = Tensor();
  empty_cache();
  EXPECT_EQ(memory_stats().cached_bytes, 0);
  set_allocator_cache_limit(0);
  { Tensor t = empty({1 << 20}); }
  EXPECT_EQ(memory_stats().cached_bytes, 0) << "a zero limit disables the cache";
  set_allocator_cache_limit(int64_t(1) << 30);
  EXPECT_THROW(set_allocator_cache_limit(-1), Error);
}

// The VmFlags line of the mapping in /proc/self/smaps that holds p ("" when none does).
std::string vm_flags_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

bool has_flag(const std::string& flags, const char* flag) {
  std::istringstream in(flags);
  for (std::string f; in >> f;) {
    if (f == flag) return true;
  }
  return false;
}

#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
constexpr bool kHugePageBuild = true;
#else
constexpr bool kHugePageBuild = false;
#endif

// Note [Huge pages for large blocks]: a block of 2 MiB or more starts at a 2 MiB boundary in
// a mapping marked MADV_HUGEPAGE ("hg" in its VmFlags); smaller blocks are the C library's.
TEST(Allocator, LargeBlocksStartAtHugePageBoundariesMarkedForHugePages) {
  if (!kHugePageBuild) GTEST_SKIP() << "sanitizer builds keep the C library's blocks";
  if (const char* env = std::getenv("EMBER_HUGEPAGES"); env && std::string(env) == "0") {
    GTEST_SKIP() << "EMBER_HUGEPAGES=0";
  }
  empty_cache();
  for (int64_t bytes : {int64_t(2) << 20, int64_t(5) << 20, (int64_t(64) << 20) + 4}) {
    Tensor t = empty({bytes}, TensorOptions(kUInt8));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % (uintptr_t(2) << 20), 0u) << bytes << " bytes";
    t.fill_(1);  // the whole block is usable, its unaligned tail included
    EXPECT_EQ(t.sum().item<int64_t>(), bytes);
    const std::string flags = vm_flags_of(t.data_ptr());
    ASSERT_NE(flags, "") << "no mapping holds the block";
    EXPECT_TRUE(has_flag(flags, "hg")) << bytes << " bytes: " << flags;
  }
  Tensor small = empty({int64_t(1) << 20}, TensorOptions(kUInt8));
  EXPECT_FALSE(has_flag(vm_flags_of(small.data_ptr()), "hg")) << "1 MiB is below the threshold";
  empty_cache();
}

// The path of this test program, for the cases below that run it again with another
// environment.
std::string self_path() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Run by the cases below in a child process (EMBER_TEST_HUGEPAGES_CHILD set): with
// EMBER_HUGEPAGES=0 a large block is the C library's, not marked; with a value other than 0
// or 1 the allocation fails with an error naming the variable and the values it takes.
TEST(Allocator, HugePagesChild) {
  const char* mode = std::getenv("EMBER_TEST_HUGEPAGES_CHILD");
  if (!mode) GTEST_SKIP() << "run by the EMBER_HUGEPAGES cases";
  if (std::string(mode) == "off") {
    Tensor t = empty({int64_t(8) << 20}, TensorOptions(kUInt8));
    t.fill_(1);
    EXPECT_FALSE(has_flag(vm_flags_of(t.data_ptr()), "hg")) << vm_flags_of(t.data_ptr());
  } else {
    const std::string msg = error_of([] { empty({int64_t(8) << 20}, TensorOptions(kUInt8)); });
    EXPECT_NE(msg.find("[empty] EMBER_HUGEPAGES=yes is not 0 or 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("set it to 0"), std::string::npos) << msg;
    EXPECT_EQ(error_of([] { empty({16}); }), "") << "small blocks do not read the variable";
  }
}

int run_child(const char* hugepages, const char* mode) {
  const std::string cmd = "EMBER_HUGEPAGES=" + std::string(hugepages) + " EMBER_TEST_HUGEPAGES_CHILD=" + mode +
                          " '" + self_path() + "' --gtest_filter=Allocator.HugePagesChild >/dev/null 2>&1";
  return std::system(cmd.c_str());
}

TEST(Allocator, HugePagesOffWithTheEnvironmentVariable) {
  if (!kHugePageBuild) GTEST_SKIP() << "sanitizer builds keep the C library's blocks";
  EXPECT_EQ(run_child("0", "off"), 0);
  EXPECT_NE(run_child("1", "off"), 0) << "the child must be able to fail: with huge pages on the block is marked";
}

TEST(Allocator, BadHugePagesValueIsAnError) {
  if (!kHugePageBuild) GTEST_SKIP() << "sanitizer builds keep the C library's blocks";
  EXPECT_EQ(run_child("yes", "bad"), 0);
}

}  // namespace
