#include "ember/data/token_dataset.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ember/core/check.h"
#include "ember/ops/creation.h"

namespace ember::data {

struct TokenDataset::Mapping {
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  ~Mapping() {
    if (data && bytes) munmap(const_cast<uint8_t*>(data), bytes);
  }
};

TokenDataset::TokenDataset(const std::string& path, int64_t block_size, TokenDType dtype)
    : map_(std::make_shared<Mapping>()), path_(path), block_size_(block_size) {
  EMBER_CHECK(block_size >= 1, "[TokenDataset] block_size must be >= 1, got ", block_size);
  width_ = dtype == TokenDType::UInt16 ? 2 : 4;
  const int fd = open(path.c_str(), O_RDONLY);
  EMBER_CHECK(fd >= 0, "[TokenDataset] cannot open ", path, ": ", std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    EMBER_ERROR("[TokenDataset] cannot stat ", path, ": ", std::strerror(err));
  }
  const auto bytes = static_cast<size_t>(st.st_size);
  if (bytes % width_ != 0) {
    close(fd);
    EMBER_ERROR("[TokenDataset] ", path, " has ", bytes, " bytes, not a multiple of the token width ", width_,
                "; is the dtype right?");
  }
  if (bytes > 0) {
    void* p = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    close(fd);
    EMBER_CHECK(p != MAP_FAILED, "[TokenDataset] cannot mmap ", path, ": ", std::strerror(err));
    map_->data = static_cast<const uint8_t*>(p);
    map_->bytes = bytes;
  } else {
    close(fd);
  }
  n_tokens_ = static_cast<int64_t>(bytes / width_);
}

int64_t TokenDataset::size() const { return n_tokens_ > 0 ? (n_tokens_ - 1) / block_size_ : 0; }

int64_t TokenDataset::token(int64_t t) const {
  EMBER_CHECK(t >= 0 && t < n_tokens_, "[TokenDataset] token ", t, " is out of range for ", n_tokens_, " tokens");
  const uint8_t* p = map_->data + static_cast<size_t>(t) * width_;
  if (width_ == 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void TokenDataset::copy_block(int64_t start, int64_t* dst) const {
  const uint8_t* p = map_->data + static_cast<size_t>(start) * width_;
  if (width_ == 2) {
    for (int64_t i = 0; i < block_size_; ++i) {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      dst[i] = v;
    }
  } else {
    for (int64_t i = 0; i < block_size_; ++i) {
      uint32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      dst[i] = v;
    }
  }
}

Example TokenDataset::get(int64_t index) {
  EMBER_CHECK(index >= 0 && index < size(), "[TokenDataset] index ", index, " is out of range for ", size(),
              " blocks of ", block_size_, " tokens (", path_, ")");
  Tensor x = empty({block_size_}, TensorOptions(kInt64));
  Tensor y = empty({block_size_}, TensorOptions(kInt64));
  copy_block(index * block_size_, x.data_ptr<int64_t>());
  copy_block(index * block_size_ + 1, y.data_ptr<int64_t>());
  return apply_transform(Example{x, y});
}

bool TokenDataset::get_batch(const std::vector<int64_t>& indices, Example& out) {
  if (transform()) return false;
  const auto b = static_cast<int64_t>(indices.size());
  out.data = empty({b, block_size_}, TensorOptions(kInt64));
  out.target = empty({b, block_size_}, TensorOptions(kInt64));
  for (int64_t k = 0; k < b; ++k) {
    const int64_t i = indices[static_cast<size_t>(k)];
    EMBER_CHECK(i >= 0 && i < size(), "[TokenDataset] index ", i, " is out of range for ", size(), " blocks of ",
                block_size_, " tokens (", path_, ")");
    copy_block(i * block_size_, out.data.data_ptr<int64_t>() + k * block_size_);
    copy_block(i * block_size_ + 1, out.target.data_ptr<int64_t>() + k * block_size_);
  }
  return true;
}

}  // namespace ember::data
