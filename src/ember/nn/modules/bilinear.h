#pragma once
// Bilinear (torch.nn.Bilinear): y = x1^T W[o] x2 + b[o].

#include "ember/nn/module.h"

namespace ember::nn {

struct BilinearOptions {
  BilinearOptions(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : in1_(in1_features), in2_(in2_features), out_(out_features) {}
  BilinearOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }
  int64_t in1_features() const { return in1_; }
  int64_t in2_features() const { return in2_; }
  int64_t out_features() const { return out_; }
  bool bias() const { return bias_; }

 private:
  int64_t in1_, in2_, out_;
  bool bias_ = true;
};

// weight [out, in1, in2] and bias [out], both U(-1/sqrt(in1), 1/sqrt(in1)) as PyTorch.
// Called with two tensors: bilinear(x1, x2).
class BilinearImpl : public Cloneable<BilinearImpl> {
 public:
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : BilinearImpl(BilinearOptions(in1_features, in2_features, out_features)) {}
  explicit BilinearImpl(const BilinearOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input1, const Tensor& input2);
  // Runs the forward hooks around forward(input1, input2).
  Tensor operator()(const Tensor& input1, const Tensor& input2);
  std::string extra_repr() const override;

  BilinearOptions options;
  Tensor weight, bias;
};
EMBER_MODULE(Bilinear);

}  // namespace ember::nn
