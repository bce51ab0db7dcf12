#pragma once
// datasets::MNIST (torch::data::datasets::MNIST): the MNIST files of a directory as a
// libtorch-style Dataset. Reads {train,t10k}-{images-idx3,labels-idx1}-ubyte, plain or
// .gz, with ember's IDX reader (ember::data::MNIST). An example is data float32 [1, 28, 28]
// in [0, 1] and target an int64 0-d tensor.
//
//   auto train = api::datasets::MNIST("data/mnist")
//                    .map(api::transforms::Normalize<>(0.1307, 0.3081))
//                    .map(api::transforms::Stack<>());

#include <string>

#include "ember/data/api/datasets.h"
#include "ember/data/idx.h"

namespace ember::data::api::datasets {

class MNIST : public Dataset<MNIST> {
 public:
  enum class Mode { kTrain, kTest };

  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain) : mode_(mode) {
    ::ember::data::MNIST files(root, mode == Mode::kTrain);
    images_ = files.images().to(kFloat32).div(255.0).unsqueeze(1).contiguous();
    targets_ = files.targets().to(kInt64);
  }

  Example<> get(size_t index) override {
    const auto i = static_cast<int64_t>(index);
    return {images_[i], targets_[i]};
  }
  std::optional<size_t> size() const override { return static_cast<size_t>(images_.size(0)); }

  bool is_train() const noexcept { return mode_ == Mode::kTrain; }
  // float32 [N, 1, 28, 28] in [0, 1].
  const Tensor& images() const { return images_; }
  // int64 [N].
  const Tensor& targets() const { return targets_; }

 private:
  Tensor images_, targets_;
  Mode mode_;
};

}  // namespace ember::data::api::datasets
