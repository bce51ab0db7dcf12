#include "ember/core/allocator.h"

#include <atomic>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <new>
#include <thread>
#include <unordered_map>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define EMBER_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define EMBER_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define EMBER_POISON(p, n) ((void)(p), (void)(n))
#define EMBER_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#include "ember/core/check.h"
#include "ember/guards/guards.h"

namespace ember {

DataPtr& DataPtr::operator=(DataPtr&& o) noexcept {
  if (this != &o) {
    reset();
    data_ = o.data_;
    ctx_ = o.ctx_;
    deleter_ = o.deleter_;
    device_ = o.device_;
    o.data_ = nullptr;
    o.ctx_ = nullptr;
    o.deleter_ = nullptr;
  }
  return *this;
}

void DataPtr::reset() {
  if (deleter_) deleter_(ctx_, data_);
  data_ = nullptr;
  ctx_ = nullptr;
  deleter_ = nullptr;
}

namespace {

struct Counters {
  std::atomic<int64_t> allocated{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> num_allocations{0};
  std::atomic<int64_t> num_frees{0};
};

Counters& cpu_counters() {
  static Counters c;
  return c;
}

constexpr size_t kCacheMin = size_t(1) << 17;  // blocks from 128 KiB are cached,
// rounded up to 32 KiB below 1 MiB and to 256 KiB from there.
constexpr size_t cache_size(size_t padded) {
  const size_t granule = padded < (size_t(1) << 20) ? size_t(1) << 15 : size_t(1) << 18;
  return (padded + granule - 1) / granule * granule;
}

// Note [Huge pages for large blocks]: blocks of 2 MiB or more are mapped on their own, at a
// 2 MiB boundary, and marked MADV_HUGEPAGE, so the kernel backs them with 2 MiB pages where
// transparent huge pages are enabled ("always" or "madvise", the usual default). Streaming
// through 4 KiB pages costs a TLB miss, and a page walk, every 4 KiB; on the VMs we measure
// on (nested paging) a 64 MiB float32 sum read 30-45% faster from huge pages, and the width
// of the loads stopped mattering (through 4 KiB pages 128-bit loads streamed 14% faster than
// 512-bit ones). A block's tail past its last 2 MiB boundary keeps 4 KiB pages, so nothing
// is rounded up. EMBER_HUGEPAGES=0 turns this off (blocks then come from the C library, as
// smaller ones do); sanitizer builds keep the C library's blocks, whose redzones they check.
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kPage = 4096;

bool huge_pages_on() {
#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
  static const bool on = [] {
    const char* env = std::getenv("EMBER_HUGEPAGES");
    if (!env || !*env || std::strcmp(env, "1") == 0) return true;
    if (std::strcmp(env, "0") == 0) return false;
    EMBER_ERROR("[allocate] EMBER_HUGEPAGES=", env, " is not 0 or 1; unset it (huge pages for blocks of 2 MiB ",
                "or more) or set it to 0 (the C library's blocks)");
  }();
  return on;
#else
  return false;
#endif
}

// Whether a block of `size` bytes (as rounded by cache_size) is mapped on its own.
bool mapped_block(size_t size) { return size >= kHugePage && huge_pages_on(); }

void* map_block(size_t size) {
#if defined(__linux__)
  const size_t len = (size + kPage - 1) / kPage * kPage;
  void* base = mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  const uintptr_t b = reinterpret_cast<uintptr_t>(base), end = b + len + kHugePage;
  const uintptr_t a = (b + kHugePage - 1) / kHugePage * kHugePage;
  if (a > b) munmap(base, a - b);
  if (end > a + len) munmap(reinterpret_cast<void*>(a + len), end - (a + len));
  madvise(reinterpret_cast<void*>(a), len, MADV_HUGEPAGE);  // a hint: THP off leaves 4 KiB pages
  return reinterpret_cast<void*>(a);
#else
  (void)size;
  return nullptr;
#endif
}

// Gives a block of `size` bytes (as rounded by cache_size) back to the system.
void release_block(void* p, size_t size) {
#if defined(__linux__)
  if (mapped_block(size)) {
    munmap(p, (size + kPage - 1) / kPage * kPage);
    return;
  }
#endif
  std::free(p);
}

// Freed large blocks by rounded size. See Note [Large-block cache].
class BlockCache {
 public:
  void* take(size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(size);
    if (it == blocks_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= static_cast<int64_t>(size);
    return p;
  }
  bool put(void* p, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_ + static_cast<int64_t>(size) > limit_) return false;
    blocks_[size].push_back(p);
    cached_ += static_cast<int64_t>(size);
    return true;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, list] : blocks_) {
      for (void* p : list) release_block(p, size);
    }
    blocks_.clear();
    cached_ = 0;
  }
  void set_limit(int64_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      limit_ = bytes;
    }
    clear();
  }
  int64_t cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> blocks_;
  int64_t cached_ = 0;
  int64_t limit_ = int64_t(1) << 30;
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache();  // never destroyed: frees may run at exit
  return *cache;
}

// Note [Small-block cache]: glibc serves a 64-byte-aligned request through memalign, which
// skips its per-thread fast path and splits a larger chunk, and the split-off pieces make
// later frees consolidate; for a tiny tensor that is a third of an op's time. Each thread
// therefore keeps freed blocks of up to kSmallMax bytes (padded) in its own stacks, one per
// 64-byte size class, kSmallDepth deep, and hands them out again for requests of the same
// padded size. A block freed on another thread than the one that allocated it joins the
// freeing thread's cache, as in glibc's tcache. Each cache has a lock that only
// empty_cache(), memory_stats() and the thread's exit contend for, so the fast path is one
// uncontended exchange. The stacks live outside the blocks, so ASan builds poison cached
// blocks and still report a use after free.
constexpr size_t kSmallMax = 4096;
constexpr size_t kSmallClasses = kSmallMax / kCpuAlignment;
constexpr int kSmallDepth = 16;

class SmallCache {
 public:
  // padded: a multiple of kCpuAlignment, at most kSmallMax.
  void* take(size_t padded) {
    const size_t c = padded / kCpuAlignment - 1;
    void* p = nullptr;
    lock();
    if (count_[c] > 0) {
      p = blocks_[c][--count_[c]];
      bytes_.store(bytes_.load(std::memory_order_relaxed) - static_cast<int64_t>(padded),
                   std::memory_order_relaxed);
    }
    unlock();
    if (p) EMBER_UNPOISON(p, padded);
    return p;
  }
  bool put(void* p, size_t padded) {
    const size_t c = padded / kCpuAlignment - 1;
    bool kept = false;
    lock();
    if (count_[c] < kSmallDepth) {
      EMBER_POISON(p, padded);
      blocks_[c][count_[c]++] = p;
      bytes_.store(bytes_.load(std::memory_order_relaxed) + static_cast<int64_t>(padded),
                   std::memory_order_relaxed);
      kept = true;
    }
    unlock();
    return kept;
  }
  void clear() {
    lock();
    for (size_t c = 0; c < kSmallClasses; ++c) {
      for (int i = 0; i < count_[c]; ++i) {
        EMBER_UNPOISON(blocks_[c][i], (c + 1) * kCpuAlignment);
        std::free(blocks_[c][i]);
      }
      count_[c] = 0;
    }
    bytes_.store(0, std::memory_order_relaxed);
    unlock();
  }
  int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  void lock() {
    while (locked_.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

  std::atomic<bool> locked_{false};
  std::atomic<int64_t> bytes_{0};  // written under the lock, read without it by memory_stats
  uint8_t count_[kSmallClasses] = {};
  void* blocks_[kSmallClasses][kSmallDepth];
};

// Every live thread's cache, so that empty_cache() can release them all.
struct SmallCacheRegistry {
  std::mutex mutex;
  std::vector<SmallCache*> caches;
};

SmallCacheRegistry& small_registry() {
  static SmallCacheRegistry* registry = new SmallCacheRegistry();  // never destroyed, as block_cache
  return *registry;
}

std::atomic<bool> g_small_enabled{true};  // false while the cache limit is zero

// Trivially destructible, so still readable while (and after) thread-local destructors
// run: a tensor freed by a later destructor finds `dead` set and goes straight to free().
[[gnu::tls_model("initial-exec")]] constinit thread_local SmallCache* tl_small_cache = nullptr;
[[gnu::tls_model("initial-exec")]] constinit thread_local bool tl_small_cache_dead = false;

// Gives the thread's cached blocks back when the thread ends.
struct SmallCacheOwner {
  ~SmallCacheOwner() {
    SmallCache* cache = tl_small_cache;
    tl_small_cache = nullptr;
    tl_small_cache_dead = true;
    if (!cache) return;
    {
      SmallCacheRegistry& r = small_registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      std::erase(r.caches, cache);
    }
    cache->clear();
    delete cache;
  }
};

// This thread's cache, created on first use; null once the thread is exiting.
SmallCache* this_thread_small_cache() {
  if (SmallCache* cache = tl_small_cache) return cache;
  if (tl_small_cache_dead) return nullptr;
  static thread_local SmallCacheOwner owner;
  auto* cache = new SmallCache();
  {
    SmallCacheRegistry& r = small_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.caches.push_back(cache);
  }
  tl_small_cache = cache;
  return cache;
}

void clear_small_caches() {
  SmallCacheRegistry& r = small_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (SmallCache* cache : r.caches) cache->clear();
}

int64_t small_cached_bytes() {
  SmallCacheRegistry& r = small_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  int64_t n = 0;
  for (SmallCache* cache : r.caches) n += cache->bytes();
  return n;
}

// "8.0 TiB": a byte count for people.
std::string human_bytes(size_t n) {
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof(buf), "%zu bytes", n);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[u]);
  }
  return buf;
}

std::atomic<detail::AllocationHook*> g_alloc_hook{nullptr};

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, Device(kCPU));
    size_t padded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    EMBER_CHECK(padded >= nbytes && nbytes <= static_cast<size_t>(INT64_MAX), "[allocate] cannot allocate ",
                human_bytes(nbytes), " (", nbytes, " bytes): the size overflows");
    void* p = nullptr;
    if (padded <= kSmallMax) {
      if (SmallCache* cache = this_thread_small_cache()) p = cache->take(padded);
    } else if (padded >= kCacheMin) {
      padded = cache_size(padded);
      p = block_cache().take(padded);
    }
    if (!p) p = mapped_block(padded) ? map_block(padded) : std::aligned_alloc(kCpuAlignment, padded);
    // The [allocate] prefix becomes the op the user called (Note [Errors name the op the user called]).
    EMBER_CHECK(p != nullptr, "[allocate] cannot allocate ", human_bytes(nbytes), " (", nbytes,
                " bytes) on cpu: out of memory (", human_bytes(static_cast<size_t>(memory_allocated())),
                " already held by tensors)");
    Counters& c = cpu_counters();
    int64_t now = c.allocated.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed) +
                  static_cast<int64_t>(nbytes);
    int64_t peak = c.peak.load(std::memory_order_relaxed);
    while (now > peak && !c.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    c.num_allocations.fetch_add(1, std::memory_order_relaxed);
    if (detail::AllocationHook* h = g_alloc_hook.load(std::memory_order_acquire)) h->on_allocate(p, nbytes);
    // The context carries the requested size so the free updates the counters exactly.
    return DataPtr(p, reinterpret_cast<void*>(nbytes), &CpuAllocator::free_block, Device(kCPU));
  }

 private:
  static void free_block(void* ctx, void* data) {
    const size_t nbytes = reinterpret_cast<size_t>(ctx);
    if (detail::AllocationHook* h = g_alloc_hook.load(std::memory_order_acquire)) h->on_free(data, nbytes);
    const size_t padded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    if (padded <= kSmallMax) {
      bool kept = false;
      if (g_small_enabled.load(std::memory_order_relaxed)) {
        if (SmallCache* cache = this_thread_small_cache()) kept = cache->put(data, padded);
      }
      if (!kept) std::free(data);
    } else if (padded >= kCacheMin) {
      const size_t size = cache_size(padded);
      if (!block_cache().put(data, size)) release_block(data, size);
    } else {
      std::free(data);
    }
    Counters& c = cpu_counters();
    c.allocated.fetch_sub(static_cast<int64_t>(reinterpret_cast<size_t>(ctx)),
                          std::memory_order_relaxed);
    c.num_frees.fetch_add(1, std::memory_order_relaxed);
  }
};

void check_cpu(Device device, const char* op) {
  EMBER_CHECK(device.is_cpu(), "[", op, "] device ", device,
              " is not available: this build of ember has only the cpu backend");
}

}  // namespace

Allocator* get_allocator(DeviceType type) {
  static CpuAllocator cpu;
  check_cpu(Device(type), "get_allocator");
  return &cpu;
}

MemoryStats memory_stats(Device device) {
  check_cpu(device, "memory_stats");
  Counters& c = cpu_counters();
  MemoryStats s;
  s.allocated_bytes = c.allocated.load(std::memory_order_relaxed);
  s.peak_allocated_bytes = c.peak.load(std::memory_order_relaxed);
  s.num_allocations = c.num_allocations.load(std::memory_order_relaxed);
  s.num_frees = c.num_frees.load(std::memory_order_relaxed);
  s.active_allocations = s.num_allocations - s.num_frees;
  s.cached_small_bytes = small_cached_bytes();
  s.cached_bytes = block_cache().cached() + s.cached_small_bytes;
  s.saved_for_backward_bytes = guards::saved_tensor_stats().bytes;
  return s;
}

void reset_peak_memory_stats(Device device) {
  check_cpu(device, "reset_peak_memory_stats");
  Counters& c = cpu_counters();
  c.peak.store(c.allocated.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

void detail::set_allocation_hook(AllocationHook* hook) { g_alloc_hook.store(hook, std::memory_order_release); }

int64_t memory_allocated(Device device) { return memory_stats(device).allocated_bytes; }

void empty_cache(Device device) {
  check_cpu(device, "empty_cache");
  block_cache().clear();
  clear_small_caches();
}

void set_allocator_cache_limit(int64_t bytes) {
  EMBER_CHECK(bytes >= 0, "[set_allocator_cache_limit] the limit must be non-negative, got ", bytes);
  g_small_enabled.store(bytes > 0, std::memory_order_relaxed);
  block_cache().set_limit(bytes);
  clear_small_caches();
}

}  // namespace ember
