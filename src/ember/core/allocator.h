#pragma once
// Memory for tensor storages. The CPU allocator hands out 64-byte-aligned blocks (one
// cache line, the widest AVX-512 load) and keeps statistics readable through
// ember::memory_stats(), so tests and the profiler can see what a program holds.
// Note [Large-block cache]: freed blocks of 128 KiB or more are kept (up to a limit) and
// handed out again for requests of the same rounded size (32 KiB steps below 1 MiB, 256 KiB
// from there). The system returns large blocks to the OS on free, so every big op output
// would otherwise pay a page fault per 4 KiB on first touch; a training loop allocates the
// same sizes every step. (From 1 MiB only, an LSTM(256, 256) step on a batch of 64, whose
// gates take 256 KiB, faulted in 53 pages per step through glibc's trimming of its heap.)
// Note [Small-block cache] (allocator.cpp): freed blocks of up to 4 KiB are kept per thread
// (16 per 64-byte size class) and handed out again, which takes glibc's slow aligned
// allocation off the path of every op on a small tensor.
// Note [Huge pages for large blocks] (allocator.cpp): blocks of 2 MiB or more are mapped at
// 2 MiB boundaries and marked for transparent huge pages (EMBER_HUGEPAGES=0 turns it off).

#include <cstddef>
#include <cstdint>

#include "ember/core/device.h"

namespace ember {

// An owned block of memory and how to free it. Move-only.
class DataPtr {
 public:
  using Deleter = void (*)(void* ctx, void* data);
  DataPtr() = default;
  DataPtr(void* data, void* ctx, Deleter deleter, Device device)
      : data_(data), ctx_(ctx), deleter_(deleter), device_(device) {}
  DataPtr(const DataPtr&) = delete;
  DataPtr& operator=(const DataPtr&) = delete;
  DataPtr(DataPtr&& o) noexcept { *this = static_cast<DataPtr&&>(o); }
  DataPtr& operator=(DataPtr&& o) noexcept;
  ~DataPtr() { reset(); }

  void* get() const { return data_; }
  Device device() const { return device_; }
  void reset();

 private:
  void* data_ = nullptr;
  void* ctx_ = nullptr;
  Deleter deleter_ = nullptr;
  Device device_;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns a block of at least nbytes; a zero-byte request returns a null block.
  virtual DataPtr allocate(size_t nbytes) = 0;
};

// The allocator for a device type; throws ember::Error for a backend not built.
Allocator* get_allocator(DeviceType type);

inline constexpr size_t kCpuAlignment = 64;

// Counters of the CPU allocator. Bytes are the sizes requested, before alignment padding.
struct MemoryStats {
  int64_t allocated_bytes = 0;       // held now
  int64_t peak_allocated_bytes = 0;  // highest value of allocated_bytes since the last reset
  int64_t num_allocations = 0;       // allocate() calls that returned memory, ever
  int64_t num_frees = 0;             // blocks given back, ever
  int64_t active_allocations = 0;    // blocks held now
  int64_t cached_bytes = 0;          // freed blocks kept for reuse (not held by tensors), all caches
  int64_t cached_small_bytes = 0;    // the part of cached_bytes in the per-thread small-block caches
  // Bytes of the tensors autograd graphs keep for backward (parameters not counted; counted
  // while the GraphRetention guard is on, docs/guards.md). They share storage with other
  // tensors, so this is a view of allocated_bytes, not a part to add.
  int64_t saved_for_backward_bytes = 0;
};

MemoryStats memory_stats(Device device = Device(kCPU));
// Sets the peak to the current number of allocated bytes.
void reset_peak_memory_stats(Device device = Device(kCPU));
// Shorthand for memory_stats().allocated_bytes (torch.cuda.memory_allocated's CPU twin).
int64_t memory_allocated(Device device = Device(kCPU));
// Returns the cached blocks, large and small (every thread's), to the system
// (torch.cuda.empty_cache's CPU twin).
void empty_cache(Device device = Device(kCPU));
// Upper bound on cached large-block bytes (default 1 GiB); 0 disables caching, the
// per-thread small-block caches included.
void set_allocator_cache_limit(int64_t bytes);

namespace detail {
// Called on every CPU allocation and free while installed (the profiler's memory
// tracking); nullptr to remove. The hook must not allocate through ember.
struct AllocationHook {
  virtual ~AllocationHook() = default;
  virtual void on_allocate(const void* ptr, size_t nbytes) = 0;
  virtual void on_free(const void* ptr, size_t nbytes) = 0;
};
void set_allocation_hook(AllocationHook* hook);
}  // namespace detail

}  // namespace ember
