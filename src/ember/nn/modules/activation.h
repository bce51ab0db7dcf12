#pragma once
// Activation layers and Dropout.

#include <string>

#include "ember/nn/functional_options.h"
#include "ember/nn/module.h"

namespace ember::nn {

// A stateless layer around a function of one tensor; `repr` is its extra_repr.
#define EMBER_SIMPLE_LAYER(Name, expr, repr)                                              \
  class Name##Impl : public Module {                                                    \
   public:                                                                              \
    Name##Impl() : Module(#Name) {}                                                     \
    Tensor forward(const Tensor& input) override { return expr; }                       \
    std::string extra_repr() const override { return repr; }                            \
    std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override { return std::make_shared<Name##Impl>(); } \
  };                                                                                    \
  EMBER_MODULE(Name)

EMBER_SIMPLE_LAYER(SiLU, input.silu(), "");
EMBER_SIMPLE_LAYER(Tanh, input.tanh(), "");
EMBER_SIMPLE_LAYER(Sigmoid, input.sigmoid(), "");
#undef EMBER_SIMPLE_LAYER

// ReLU(ReLUOptions().inplace(true)) / ReLU(true) as libtorch; inplace overwrites the input.
class ReLUImpl : public Module {
 public:
  explicit ReLUImpl(const ReLUOptions& options_ = {}) : Module("ReLU"), options(options_) {}
  Tensor forward(const Tensor& input) override;
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override { return std::make_shared<ReLUImpl>(options); }
  ReLUOptions options;
};
EMBER_MODULE(ReLU);

class LeakyReLUImpl : public Module {
 public:
  explicit LeakyReLUImpl(double negative_slope = 0.01) : Module("LeakyReLU"), negative_slope(negative_slope) {}
  explicit LeakyReLUImpl(const LeakyReLUOptions& o) : LeakyReLUImpl(o.negative_slope()) { inplace = o.inplace(); }
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override { return std::make_shared<LeakyReLUImpl>(negative_slope); }
  double negative_slope;
  bool inplace = false;
};
EMBER_MODULE(LeakyReLU);

class GELUImpl : public Module {
 public:
  explicit GELUImpl(std::string approximate = "none") : Module("GELU"), approximate(std::move(approximate)) {}
  explicit GELUImpl(const GELUOptions& o) : GELUImpl(o.approximate()) {}
  Tensor forward(const Tensor& input) override { return input.gelu(approximate); }
  std::string extra_repr() const override { return "approximate='" + approximate + "'"; }
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override { return std::make_shared<GELUImpl>(approximate); }
  std::string approximate;
};
EMBER_MODULE(GELU);

class SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(int64_t dim) : Module("Softmax"), dim(dim) {}
  explicit SoftmaxImpl(const SoftmaxOptions& o) : SoftmaxImpl(o.dim()) {}
  Tensor forward(const Tensor& input) override { return input.softmax(dim); }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override { return std::make_shared<SoftmaxImpl>(dim); }
  int64_t dim;
};
EMBER_MODULE(Softmax);

class LogSoftmaxImpl : public Module {
 public:
  explicit LogSoftmaxImpl(int64_t dim) : Module("LogSoftmax"), dim(dim) {}
  explicit LogSoftmaxImpl(const LogSoftmaxOptions& o) : LogSoftmaxImpl(o.dim()) {}
  Tensor forward(const Tensor& input) override { return input.log_softmax(dim); }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override { return std::make_shared<LogSoftmaxImpl>(dim); }
  int64_t dim;
};
EMBER_MODULE(LogSoftmax);

// Zeroes inputs with probability p in training (scaling the rest by 1/(1-p)); the
// identity in eval().
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(double p = 0.5);
  explicit DropoutImpl(const DropoutOptions& o) : DropoutImpl(o.p()) { inplace = o.inplace(); }
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;
  double p;
  bool inplace = false;
};
EMBER_MODULE(Dropout);

}  // namespace ember::nn
