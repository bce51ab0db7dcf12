#pragma once
// A minimal intrusive reference-counted pointer. Tensors and storages are copied on
// every op call, so the count lives inside the object (one allocation, one atomic add).

#include <atomic>
#include <cstdint>
#include <utility>

namespace ember {

// Base class for objects owned through IntrusivePtr.
class IntrusiveTarget {
 public:
  IntrusiveTarget() = default;
  IntrusiveTarget(const IntrusiveTarget&) = delete;
  IntrusiveTarget& operator=(const IntrusiveTarget&) = delete;
  virtual ~IntrusiveTarget() = default;

  uint32_t use_count() const { return refcount_.load(std::memory_order_relaxed); }

 private:
  template <typename T>
  friend class IntrusivePtr;
  mutable std::atomic<uint32_t> refcount_{0};
};

template <typename T>
class IntrusivePtr {
 public:
  IntrusivePtr() noexcept = default;
  IntrusivePtr(std::nullptr_t) noexcept {}
  // Takes a reference to p (which may be freshly created with a count of zero).
  explicit IntrusivePtr(T* p) noexcept : ptr_(p) { retain(); }
  IntrusivePtr(const IntrusivePtr& o) noexcept : ptr_(o.ptr_) { retain(); }
  IntrusivePtr(IntrusivePtr&& o) noexcept : ptr_(o.ptr_) { o.ptr_ = nullptr; }
  template <typename U>
  IntrusivePtr(const IntrusivePtr<U>& o) noexcept : ptr_(o.get()) {
    retain();
  }
  ~IntrusivePtr() { release(); }

  IntrusivePtr& operator=(const IntrusivePtr& o) noexcept {
    IntrusivePtr(o).swap(*this);
    return *this;
  }
  IntrusivePtr& operator=(IntrusivePtr&& o) noexcept {
    IntrusivePtr(std::move(o)).swap(*this);
    return *this;
  }

  // A new object owned by the returned pointer. Note [Unshared reference counts]: nothing
  // else can see the object yet, so its count is set with a plain store, not an atomic add.
  template <typename... Args>
  static IntrusivePtr make(Args&&... args) {
    T* p = new T(std::forward<Args>(args)...);
    p->refcount_.store(1, std::memory_order_relaxed);
    return IntrusivePtr(p, AdoptTag{});
  }

  T* get() const noexcept { return ptr_; }
  T* operator->() const noexcept { return ptr_; }
  T& operator*() const noexcept { return *ptr_; }
  explicit operator bool() const noexcept { return ptr_ != nullptr; }
  void swap(IntrusivePtr& o) noexcept { std::swap(ptr_, o.ptr_); }
  void reset() noexcept { IntrusivePtr().swap(*this); }
  uint32_t use_count() const noexcept { return ptr_ ? ptr_->use_count() : 0; }
  bool operator==(const IntrusivePtr& o) const noexcept { return ptr_ == o.ptr_; }

 private:
  void retain() noexcept {
    if (ptr_) ptr_->refcount_.fetch_add(1, std::memory_order_relaxed);
  }
  // Note [Unshared reference counts]: a count of 1 seen by the holder of that one reference
  // cannot change under it (another thread would need a reference to add one), so the last
  // owner deletes without the atomic subtraction; the acquire load orders the delete after
  // every other owner's earlier release, as the acq_rel subtraction does.
  void release() noexcept {
    if (!ptr_) return;
    if (ptr_->refcount_.load(std::memory_order_acquire) == 1 ||
        ptr_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete ptr_;
    }
  }
  struct AdoptTag {};
  IntrusivePtr(T* p, AdoptTag) noexcept : ptr_(p) {}
  T* ptr_ = nullptr;
};

}  // namespace ember
