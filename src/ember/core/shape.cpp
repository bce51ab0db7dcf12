#include "ember/core/shape.h"

#include <algorithm>
#include <cstring>
#include <ostream>

namespace ember {

bool IntArrayRef::equals(IntArrayRef other) const {
  return size_ == other.size_ && std::equal(begin(), end(), other.begin());
}

std::ostream& operator<<(std::ostream& os, IntArrayRef a) {
  os << '[';
  for (size_t i = 0; i < a.size(); ++i) os << (i ? ", " : "") << a[i];
  return os << ']';
}

void DimVector::grow(size_t cap) {
  if (cap <= cap_) return;
  auto* fresh = new int64_t[cap];
  if (size_) std::memcpy(fresh, data_, size_ * sizeof(int64_t));
  free_heap();
  data_ = fresh;
  cap_ = cap;
}

void DimVector::assign(size_t n, int64_t value) {
  if (n > cap_) grow(n);
  std::fill(data_, data_ + n, value);
  size_ = n;
}

void DimVector::assign(IntArrayRef a) {
  if (a.size() > cap_) grow(a.size());
  if (a.size()) std::memmove(data_, a.data(), a.size() * sizeof(int64_t));
  size_ = a.size();
}

void DimVector::resize(size_t n, int64_t value) {
  if (n > cap_) grow(std::max(n, cap_ * 2));
  for (size_t i = size_; i < n; ++i) data_[i] = value;
  size_ = n;
}

void DimVector::insert(size_t pos, int64_t v) {
  if (size_ == cap_) grow(cap_ * 2);
  std::memmove(data_ + pos + 1, data_ + pos, (size_ - pos) * sizeof(int64_t));
  data_[pos] = v;
  ++size_;
}

void DimVector::erase(size_t pos) {
  std::memmove(data_ + pos, data_ + pos + 1, (size_ - pos - 1) * sizeof(int64_t));
  --size_;
}

void DimVector::move_from(DimVector& o) noexcept {
  if (o.data_ == o.inline_) {
    data_ = inline_;
    cap_ = kInline;
    std::memcpy(inline_, o.inline_, o.size_ * sizeof(int64_t));
  } else {
    data_ = o.data_;
    cap_ = o.cap_;
    o.data_ = o.inline_;
    o.cap_ = kInline;
  }
  size_ = o.size_;
  o.size_ = 0;
}

}  // namespace ember
