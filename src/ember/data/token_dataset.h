#pragma once
// A memory-mapped stream of tokens for language-model training (the nanoGPT pattern): a
// flat binary file of uint16 or uint32 token ids, cut into blocks of block_size.

#include <cstdint>
#include <memory>
#include <string>

#include "ember/data/dataset.h"

namespace ember::data {

// How token ids are stored: unsigned, little-endian (numpy's uint16 / uint32 .bin files).
enum class TokenDType { UInt16, UInt32 };

// Example i: data = tokens[i*block_size, (i+1)*block_size) and target = the same window
// shifted by one token, both int64 [block_size]. size() = (n_tokens - 1) / block_size.
// The file is mapped read-only (mmap), so only the pages the samples touch are read.
class TokenDataset : public Dataset {
 public:
  TokenDataset(const std::string& path, int64_t block_size, TokenDType dtype = TokenDType::UInt16);
  int64_t size() const override;
  Example get(int64_t index) override;
  bool get_batch(const std::vector<int64_t>& indices, Example& out) override;
  int64_t num_tokens() const { return n_tokens_; }
  int64_t block_size() const { return block_size_; }
  // Token t (0 <= t < num_tokens()).
  int64_t token(int64_t t) const;

 private:
  void copy_block(int64_t start, int64_t* dst) const;
  struct Mapping;
  std::shared_ptr<Mapping> map_;
  std::string path_;
  int64_t block_size_;
  size_t width_;
  int64_t n_tokens_ = 0;
};

}  // namespace ember::data
