#pragma once
// The IDX format of MNIST-style data sets, and the MNIST / Fashion-MNIST data sets.
// IDX: two zero bytes, a type code (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
// 0x0D float32, 0x0E float64), the number of dims, the dims as big-endian int32, then the
// elements big-endian in row-major order.

#include <string>
#include <vector>

#include "ember/data/dataset.h"

namespace ember::data {

// Reads an IDX file, plain or gzip-compressed (zlib), into a tensor with the header's dims
// and type. Throws ember::Error naming the path for a missing file, a bad magic number, a
// truncated file or data past the declared dims.
Tensor read_idx(const std::string& path);
// Writes a uint8/int8/int16/int32/float32/float64 tensor as IDX, gzip-compressed when
// the path ends in ".gz" (for tests and tools).
void write_idx(const Tensor& t, const std::string& path);

// MNIST-format image classification: {train,t10k}-images-idx3-ubyte[.gz] and
// {train,t10k}-labels-idx1-ubyte[.gz] in root. The files are decoded once at
// construction and kept as uint8. A sample is data float32 [1, H, W] in [0, 1] (as
// torchvision's ToTensor) and target an int64 0-d tensor; the transform applies to data.
class MNIST : public Dataset {
 public:
  explicit MNIST(const std::string& root, bool train = true);
  int64_t size() const override { return images_.size(0); }
  Example get(int64_t index) override;
  // Converts a whole batch straight into the batch tensor when no transform or only a
  // Normalize is set.
  bool get_batch(const std::vector<int64_t>& indices, Example& out) override;
  // uint8 [N, H, W] and int64 [N].
  const Tensor& images() const { return images_; }
  const Tensor& targets() const { return targets_; }

 protected:
  MNIST(const std::string& root, bool train, const char* name, const std::string& missing_hint);

 private:
  void load(const std::string& root, bool train, const char* name, const std::string& missing_hint);
  Tensor images_, targets_;
  const char* name_ = "MNIST";
};

// Fashion-MNIST (Zalando): 60000 train / 10000 test 28x28 grey images of 10 clothing
// classes; Debian's dataset-fashion-mnist installs it in the default root.
class FashionMNIST : public MNIST {
 public:
  explicit FashionMNIST(const std::string& root = "/usr/share/datasets/fashion-mnist", bool train = true);
  // "T-shirt/top", "Trouser", ..., "Ankle boot".
  static const std::vector<std::string>& classes();
};

}  // namespace ember::data
