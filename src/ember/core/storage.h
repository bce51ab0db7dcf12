#pragma once
// Storage: the flat block of bytes that one tensor and all of its views share.
// Note [Version counter]: the counter of in-place writes lives here, in the storage, so
// every view of the same memory sees every write (autograd compares it against the
// value saved at forward time to detect a modified input).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "ember/core/allocator.h"
#include "ember/core/intrusive_ptr.h"

namespace ember {

class StorageImpl final : public IntrusiveTarget {
 public:
  StorageImpl(DataPtr data, size_t nbytes) : data_(std::move(data)), nbytes_(nbytes) {}

  void* data() const { return data_.get(); }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return data_.device(); }

  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }
  // Exchanges the buffers of two storages: Tensor::resize_ grows a storage in place, so
  // every view of it sees the new buffer.
  void swap_data(StorageImpl& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(nbytes_, other.nbytes_);
  }

 private:
  DataPtr data_;
  size_t nbytes_;
  std::atomic<uint32_t> version_{0};
};

using Storage = IntrusivePtr<StorageImpl>;

// A new storage of nbytes from the device's allocator.
Storage make_storage(size_t nbytes, Device device);

}  // namespace ember
