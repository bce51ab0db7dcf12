#include "ember/core/allocator.h"

#include <atomic>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <new>
#include <unordered_map>
#include <vector>

#include "ember/core/check.h"

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

constexpr size_t kCacheMin = size_t(1) << 20;      // blocks from 1 MiB are cached
constexpr size_t kCacheGranule = size_t(1) << 18;  // and rounded up to 256 KiB

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
      for (void* p : list) std::free(p);
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

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, Device(kCPU));
    size_t padded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    EMBER_CHECK(padded >= nbytes && nbytes <= static_cast<size_t>(INT64_MAX), "[allocate] cannot allocate ",
                human_bytes(nbytes), " (", nbytes, " bytes): the size overflows");
    void* p = nullptr;
    if (padded >= kCacheMin) {
      padded = (padded + kCacheGranule - 1) / kCacheGranule * kCacheGranule;
      p = block_cache().take(padded);
    }
    if (!p) p = std::aligned_alloc(kCpuAlignment, padded);
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
    // The context carries the requested size so the free updates the counters exactly.
    return DataPtr(p, reinterpret_cast<void*>(nbytes), &CpuAllocator::free_block, Device(kCPU));
  }

 private:
  static void free_block(void* ctx, void* data) {
    const size_t nbytes = reinterpret_cast<size_t>(ctx);
    const size_t padded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    if (padded < kCacheMin ||
        !block_cache().put(data, (padded + kCacheGranule - 1) / kCacheGranule * kCacheGranule)) {
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
  s.cached_bytes = block_cache().cached();
  return s;
}

void reset_peak_memory_stats(Device device) {
  check_cpu(device, "reset_peak_memory_stats");
  Counters& c = cpu_counters();
  c.peak.store(c.allocated.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

int64_t memory_allocated(Device device) { return memory_stats(device).allocated_bytes; }

void empty_cache(Device device) {
  check_cpu(device, "empty_cache");
  block_cache().clear();
}

void set_allocator_cache_limit(int64_t bytes) {
  EMBER_CHECK(bytes >= 0, "[set_allocator_cache_limit] the limit must be non-negative, got ", bytes);
  block_cache().set_limit(bytes);
}

}  // namespace ember
