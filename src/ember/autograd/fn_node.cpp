#include "ember/autograd/fn_node.h"

#include "ember/autograd/autograd_meta.h"

namespace ember::autograd {

void FnNode::add_input(const Tensor* t) {
  if (t && t->defined()) {
    in_meta_.push_back({DimVector(t->sizes()), t->dtype()});
  } else {
    in_meta_.push_back({});
  }
}

variable_list FnNode::apply(variable_list&& grads) {
  variable_list out = formula_(*this, grads);
  out.resize(num_outputs());
  for (size_t i = 0; i < out.size(); ++i) {
    Tensor& g = out[i];
    if (!g.defined()) continue;
    if (!should_compute_output(i)) {
      g = Tensor();
      continue;
    }
    const OutputMeta& m = in_meta_[i];
    if (g.sizes() != IntArrayRef(m.sizes)) g = sum_to(g, m.sizes);
    if (g.dtype() != m.dtype) g = g.to(m.dtype);
  }
  return out;
}

std::shared_ptr<FnNode> make_node(const char* name, Formula formula, std::initializer_list<const Tensor*> inputs) {
  auto node = std::make_shared<FnNode>(name, formula);
  collect_next_edges(*node, inputs);
  for (const Tensor* t : inputs) node->add_input(t);
  maybe_record_anomaly(*node);
  return node;
}

std::shared_ptr<FnNode> make_node(const char* name, Formula formula, const std::vector<Tensor>& inputs) {
  auto node = std::make_shared<FnNode>(name, formula);
  collect_next_edges(*node, inputs);
  for (const Tensor& t : inputs) node->add_input(&t);
  maybe_record_anomaly(*node);
  return node;
}

}  // namespace ember::autograd
