#include "ember/nn/modules/bilinear.h"

#include <cmath>
#include <sstream>

#include "ember/core/check.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/ops/creation.h"

namespace ember::nn {

BilinearImpl::BilinearImpl(const BilinearOptions& options_) : Cloneable("Bilinear"), options(options_) {
  EMBER_CHECK(options.in1_features() > 0 && options.in2_features() >= 0 && options.out_features() >= 0,
              "[nn.Bilinear] in1_features must be positive and in2/out_features non-negative, got ",
              options.in1_features(), ", ", options.in2_features(), ", ", options.out_features());
  reset();
}

void BilinearImpl::reset() {
  weight = register_parameter("weight",
                              empty({options.out_features(), options.in1_features(), options.in2_features()}));
  bias = register_parameter("bias", options.bias() ? empty({options.out_features()}) : Tensor(), options.bias());
  reset_parameters();
}

void BilinearImpl::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(options.in1_features()));
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor BilinearImpl::forward(const Tensor& input1, const Tensor& input2) {
  return functional::bilinear(input1, input2, weight, bias);
}

Tensor BilinearImpl::operator()(const Tensor& input1, const Tensor& input2) {
  if (!has_hooks()) return forward(input1, input2);
  return run_with_hooks({input1, input2}, [this](const TensorList& in) {
           return TensorList{forward(in.at(0), in.at(1))};
         }).at(0);
}

std::string BilinearImpl::extra_repr() const {
  std::ostringstream os;
  os << "in1_features=" << options.in1_features() << ", in2_features=" << options.in2_features()
     << ", out_features=" << options.out_features() << ", bias=" << (options.bias() ? "True" : "False");
  return os.str();
}

}  // namespace ember::nn
