#pragma once
// The read-bandwidth kernel shared by bench_stream (the run-wide limits) and the harness's
// bandwidth beside each case (Note [Bandwidth beside the case] in harness_main.cpp), so both
// measure the same loop.

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>

namespace bench {

// Note [Limits on huge pages]: the limit kernels stream through buffers on 2 MiB pages, as
// ember's own large blocks are (Note [Huge pages for large blocks], core/allocator.cpp):
// through 4 KiB pages every 4 KiB read costs a TLB miss and a page walk, which on this VM
// (nested paging) held a 64 MiB read to 46 GB/s where 2 MiB pages gave 70-90. The limit is
// what the machine can do, so it is measured the faster way. `n` floats set to `value`
// (touched here, so no page faults when timed).
class HugeBuffer {
 public:
  HugeBuffer(size_t n, float value) : n_(n) {
    constexpr uintptr_t kHuge = uintptr_t(2) << 20;
    len_ = (n * sizeof(float) + kHuge - 1) / kHuge * kHuge + kHuge;
    base_ = mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t b = reinterpret_cast<uintptr_t>(base_);
    data_ = reinterpret_cast<float *>((b + kHuge - 1) / kHuge * kHuge);
    madvise(data_, len_ - kHuge, MADV_HUGEPAGE);
    for (size_t i = 0; i < n; ++i) data_[i] = value;
  }
  HugeBuffer(const HugeBuffer &) = delete;
  HugeBuffer &operator=(const HugeBuffer &) = delete;
  ~HugeBuffer() { munmap(base_, len_); }
  float *data() const { return data_; }
  size_t size() const { return n_; }

 private:
  size_t n_, len_;
  void *base_;
  float *data_;
};

// The sum of p[0, n), in 16 independent lanes (the loads, not the adds, bound it).
inline float read_sum(const float *p, size_t n) {
  float acc[16] = {};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < 16; ++k) acc[k] += p[i + k];
  }
  for (; i < n; ++i) acc[0] += p[i];
  float s = 0;
  for (float a : acc) s += a;
  return s;
}

}  // namespace bench
