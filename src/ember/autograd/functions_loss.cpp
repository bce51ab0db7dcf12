// Backward of the fused cross entropy. As with the norms (Note [Fused norm backward]), the
// first-order backward runs the fused kernel, and a recorded backward (create_graph=true)
// writes the same closed form with ember ops so that it can be differentiated again.

#include "ember/autograd/functions_loss.h"

#include "ember/autograd/fn_node.h"
#include "ember/autograd/grad_mode.h"
#include "ember/kernels/cpu/reduce.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/pointwise.h"

namespace ember::autograd::fn {

namespace {

// i0 = ignore_index; saved 0 = logits, 1 = target, 2 = lse.
variable_list cross_entropy_formula(FnNode& n, const variable_list& grads) {
  const Tensor x = n.saved(0), t = n.saved(1), lse = n.saved(2);
  const Tensor kept = t.ne(n.i0);
  const Tensor scale = where(kept, grads[0], Scalar(0.0));  // [rows]; an ignored row gets none, even from inf/NaN
  if (GradMode::is_enabled()) {
    const Tensor safe = where(kept, t, zeros_like(t)).unsqueeze(1);
    const Tensor onehot = zeros_like(x).scatter(1, safe, Scalar(1));
    // softmax recomputed from x: lse is a saved constant, and the second derivative goes
    // through it.
    return {(x.softmax(1) - onehot) * scale.unsqueeze(1)};
  }
  const Tensor sc = scale.contiguous();
  Tensor dx = empty(x.sizes(), TensorOptions(x.dtype()));
  kernels::cpu::cross_entropy_backward(dx, x, lse, t, sc, n.i0);
  return {dx};
}

}  // namespace

void cross_entropy(const Tensor& loss, const Tensor& logits, const Tensor& target, const Tensor& lse,
                   int64_t ignore_index) {
  auto node = make_node("CrossEntropyLossBackward0", cross_entropy_formula, {&logits});
  node->i0 = ignore_index;
  node->save(logits);
  node->save(target);
  node->save(lse);
  set_history(loss, node);
}

}  // namespace ember::autograd::fn
