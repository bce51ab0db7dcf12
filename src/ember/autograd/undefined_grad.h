#pragma once
// libtorch's UndefinedGrad (torch/csrc/autograd/functions/basic_ops.h): apply({x, ...})
// returns copies of its inputs whose backward passes an undefined gradient to them, so
// tests of custom Functions can see what "no gradient" looks like to a backward
// (materialized as zeros, or left undefined with set_materialize_grads(false)).

#include <vector>

#include "ember/core/tensor.h"

namespace ember::autograd {

struct UndefinedGrad {
  std::vector<Tensor> apply(std::vector<Tensor>&& inputs) const;
  std::vector<Tensor> operator()(std::vector<Tensor>&& inputs) const { return apply(std::move(inputs)); }
};

}  // namespace ember::autograd
