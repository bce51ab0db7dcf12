#pragma once
// Internal: the backward node used by ember's op formulas. One class for every op keeps
// the formulas short: each is a plain function that reads the node's saved tensors and
// attributes. After the formula runs, each input gradient is summed back over
// broadcast dims and cast to the input's dtype, so formulas may return gradients in the
// broadcast (output) shape.

#include <memory>
#include <vector>

#include "ember/autograd/record.h"
#include "ember/core/scalar.h"

namespace ember::autograd {

class FnNode;
using Formula = variable_list (*)(FnNode& node, const variable_list& grads);

class FnNode final : public Node {
 public:
  FnNode(const char* name, Formula formula) : name_(name), formula_(formula) {}
  std::string name() const override { return name_; }
  variable_list apply(variable_list&& grads) override;
  void release_variables() override {
    for (SavedVariable& s : saved_) s.reset();
  }

  // Saves a forward input (is_output = false) or output for the formula.
  void save(const Tensor& t, bool is_output = false) {
    if (saved_.capacity() == 0) saved_.reserve(4);  // one allocation for the usual 1 to 4
    saved_.emplace_back(t, is_output);
  }
  Tensor saved(size_t i) { return saved_[i].unpack(shared_from_this()); }
  // Shapes and dtypes of the tensor inputs (one per next edge).
  const OutputMeta& in(size_t i) const { return in_meta_[i]; }
  void add_input(const Tensor* t);

  // Attributes for the formulas.
  DimVector ints, ints2;
  std::vector<DimVector> lists;  // more shapes (e.g. the output sizes of a split)
  Scalar s0, s1;
  double d0 = 0, d1 = 0;
  int64_t i0 = 0, i1 = 0, i2 = 0;
  bool b0 = false, b1 = false;

 private:
  const char* name_;
  Formula formula_;
  std::vector<SavedVariable> saved_;
  std::vector<OutputMeta> in_meta_;
};

// Creates the node for an op whose forward inputs are `inputs` (null or undefined for
// non-tensor or non-differentiable arguments): next edges and input metadata.
std::shared_ptr<FnNode> make_node(const char* name, Formula formula, std::initializer_list<const Tensor*> inputs);
std::shared_ptr<FnNode> make_node(const char* name, Formula formula, const std::vector<Tensor>& inputs);

}  // namespace ember::autograd
