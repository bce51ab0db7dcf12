#pragma once
// Shapes and strides: IntArrayRef (a non-owning view, like c10::IntArrayRef) and
// DimVector (an owning small vector that keeps up to 5 dims inline, so making a
// tensor of ordinary rank allocates nothing for its sizes and strides).

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <vector>

namespace ember {

// Non-owning view of int64 values. Cheap to pass by value; never store one.
class IntArrayRef {
 public:
  constexpr IntArrayRef() = default;
  constexpr IntArrayRef(const int64_t* data, size_t size) : data_(data), size_(size) {}
  // A single value, as in t.sum(1) or zeros(5).
  constexpr IntArrayRef(const int64_t& one) : data_(&one), size_(1) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  // The list lives until the end of the full expression, which is as long as an
  // IntArrayRef argument is used (the same contract as c10::ArrayRef).
  constexpr IntArrayRef(std::initializer_list<int64_t> list)
      : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  IntArrayRef(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}

  constexpr const int64_t* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const int64_t* begin() const { return data_; }
  constexpr const int64_t* end() const { return data_ + size_; }
  constexpr int64_t operator[](size_t i) const { return data_[i]; }
  int64_t front() const { return data_[0]; }
  int64_t back() const { return data_[size_ - 1]; }
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
  bool equals(IntArrayRef other) const;
  bool operator==(IntArrayRef other) const { return equals(other); }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

// Prints like PyTorch's torch.Size: [2, 3].
std::ostream& operator<<(std::ostream& os, IntArrayRef a);

// Owning vector of int64 with 5 inline slots.
class DimVector {
 public:
  static constexpr size_t kInline = 5;

  DimVector() = default;
  explicit DimVector(size_t n, int64_t value = 0) { assign(n, value); }
  DimVector(IntArrayRef a) { assign(a); }
  DimVector(std::initializer_list<int64_t> list) { assign(IntArrayRef(list)); }
  DimVector(const DimVector& o) { assign(IntArrayRef(o)); }
  DimVector(DimVector&& o) noexcept { move_from(o); }
  DimVector& operator=(const DimVector& o) {
    if (this != &o) assign(IntArrayRef(o));
    return *this;
  }
  DimVector& operator=(DimVector&& o) noexcept {
    if (this != &o) {
      free_heap();
      move_from(o);
    }
    return *this;
  }
  ~DimVector() { free_heap(); }

  operator IntArrayRef() const { return IntArrayRef(data_, size_); }
  IntArrayRef ref() const { return IntArrayRef(data_, size_); }
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }

  int64_t* data() { return data_; }
  const int64_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* begin() { return data_; }
  int64_t* end() { return data_ + size_; }
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  int64_t& operator[](size_t i) { return data_[i]; }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t& back() { return data_[size_ - 1]; }
  int64_t back() const { return data_[size_ - 1]; }

  void assign(size_t n, int64_t value);
  void assign(IntArrayRef a);
  void resize(size_t n, int64_t value = 0);
  void push_back(int64_t v) {
    if (size_ == cap_) grow(cap_ * 2);
    data_[size_++] = v;
  }
  void insert(size_t pos, int64_t v);
  void erase(size_t pos);
  void clear() { size_ = 0; }
  bool operator==(const DimVector& o) const { return ref().equals(o.ref()); }

 private:
  void grow(size_t cap);
  void free_heap() {
    if (data_ != inline_) delete[] data_;
  }
  void move_from(DimVector& o) noexcept;

  int64_t* data_ = inline_;
  size_t size_ = 0;
  size_t cap_ = kInline;
  int64_t inline_[kInline];
};

}  // namespace ember
