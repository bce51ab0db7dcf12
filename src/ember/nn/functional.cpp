#include "ember/nn/functional.h"

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/ops/creation.h"
#include "ember/ops/linalg.h"
#include "ember/ops/pointwise.h"
#include "ember/jit/trace_hook.h"

namespace ember::nn::functional {

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  OpScope scope("linear", {&input, &weight, &bias});
  return ember::linear(input, weight, bias);
}

Tensor relu(const Tensor& input) { return input.relu(); }

Tensor leaky_relu(const Tensor& input, double negative_slope) {
  OpScope scope("leaky_relu", {&input});
  EMBER_CHECK(input.defined(), "[leaky_relu] called with an undefined tensor");
  return ember::leaky_relu(input, negative_slope);
}

Tensor gelu(const Tensor& input, const std::string& approximate) { return input.gelu(approximate); }
Tensor silu(const Tensor& input) { return input.silu(); }
Tensor tanh(const Tensor& input) { return input.tanh(); }
Tensor sigmoid(const Tensor& input) { return input.sigmoid(); }
Tensor softmax(const Tensor& input, int64_t dim) { return input.softmax(dim); }
Tensor log_softmax(const Tensor& input, int64_t dim) { return input.log_softmax(dim); }

Tensor dropout(const Tensor& input, double p, bool training) {
  jit::detail::TraceOp trace("dropout");
  Tensor out = [&]() -> Tensor {
  OpScope scope("dropout", {&input});
  EMBER_CHECK(p >= 0 && p <= 1, "[dropout] probability has to be between 0 and 1, but got ", p);
  EMBER_CHECK(input.defined(), "[dropout] called with an undefined tensor");
  if (!training || p == 0) return input;
  if (p == 1) return input * 0;
  Tensor mask = empty(input.sizes(), TensorOptions(input.dtype()));
  {
    NoGradGuard no_grad;
    mask.bernoulli_(1 - p);
    mask.div_(1 - p);
  }
  return input * mask;
}();
  // Eval-mode dropout is the identity: its output is its input, nothing to record.
  if (trace.recording() && training && p > 0) trace.record({input}, {{"p", Value(p)}, {"training", Value(training)}}, out);
  return out;
}

}  // namespace ember::nn::functional
