#pragma once
// Linear, Identity, Flatten, Unflatten.

#include "ember/nn/module.h"

namespace ember::nn {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  LinearOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  bool bias() const { return bias_; }

 private:
  int64_t in_features_, out_features_;
  bool bias_ = true;
};

// y = x W^T + b. weight: [out, in], bias: [out]; both U(-1/sqrt(in), 1/sqrt(in)) as PyTorch.
class LinearImpl : public Cloneable<LinearImpl> {
 public:
  LinearImpl(int64_t in_features, int64_t out_features) : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  LinearOptions options;
  Tensor weight, bias;
};
EMBER_MODULE(Linear);

class IdentityImpl : public Module {
 public:
  IdentityImpl() : Module("Identity") {}
  Tensor forward(const Tensor& input) override { return input; }
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override { return std::make_shared<IdentityImpl>(); }
};
EMBER_MODULE(Identity);

struct FlattenOptions {
  FlattenOptions& start_dim(int64_t d) {
    start_dim_ = d;
    return *this;
  }
  FlattenOptions& end_dim(int64_t d) {
    end_dim_ = d;
    return *this;
  }
  int64_t start_dim() const { return start_dim_; }
  int64_t end_dim() const { return end_dim_; }

 private:
  int64_t start_dim_ = 1, end_dim_ = -1;
};

class FlattenImpl : public Cloneable<FlattenImpl> {
 public:
  explicit FlattenImpl(const FlattenOptions& options = {}) : Cloneable("Flatten"), options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input) override { return input.flatten(options.start_dim(), options.end_dim()); }
  std::string extra_repr() const override;
  FlattenOptions options;
};
EMBER_MODULE(Flatten);

struct UnflattenOptions {
  UnflattenOptions(int64_t dim, std::vector<int64_t> sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  int64_t dim() const { return dim_; }
  const std::vector<int64_t>& sizes() const { return sizes_; }

 private:
  int64_t dim_;
  std::vector<int64_t> sizes_;
};

class UnflattenImpl : public Cloneable<UnflattenImpl> {
 public:
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes) : UnflattenImpl(UnflattenOptions(dim, std::move(sizes))) {}
  explicit UnflattenImpl(const UnflattenOptions& options) : Cloneable("Unflatten"), options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input) override { return input.unflatten(options.dim(), options.sizes()); }
  std::string extra_repr() const override;
  UnflattenOptions options;
};
EMBER_MODULE(Unflatten);

}  // namespace ember::nn
