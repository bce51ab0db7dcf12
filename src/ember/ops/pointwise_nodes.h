#pragma once
// Internal: the element-wise table's ops (Note [Element-wise op table]) as graph nodes
// (Note [Graph op set]). The ops record themselves under their row's public name ("add",
// "relu", "leaky_relu") with the row's parameters as attributes; these run such a node.

#include <string>
#include <string_view>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/serialize/value.h"

namespace ember::detail {

bool is_unary_node(std::string_view op);
bool is_binary_node(std::string_view op);
// inputs: one tensor.
Tensor run_unary_node(std::string_view op, const Tensor& t, const Value::Dict& attrs);
// inputs: (a, b), or one tensor with the other operand as attribute "other" (tensor op
// scalar) or "self" (scalar op tensor); "alpha" scales b (add, sub); div's
// "rounding_mode" is "trunc" or "floor" when present.
Tensor run_binary_node(std::string_view op, const std::vector<Tensor>& inputs, const Value::Dict& attrs);
std::vector<std::string> pointwise_node_names();
// A scalar attribute as the Scalar it was recorded from (int, float or bool).
Scalar scalar_from_value(const Value& v);
Value value_from_scalar(const Scalar& s);

}  // namespace ember::detail

namespace ember::detail {
// The same nodes computed into `out`, which has the (first) input's dtype and shape: `out`
// may be that input itself (the interpreter reuses an intermediate that dies at this node)
// or a block of a fused kernel's buffer. Return false, doing nothing, when the result's
// dtype or shape would differ from out's; the caller then runs the out-of-place form.
bool run_unary_node_out(std::string_view op, const Tensor& out, const Tensor& t, const Value::Dict& attrs);
bool run_binary_node_out(std::string_view op, const Tensor& out, const std::vector<Tensor>& inputs,
                         const Value::Dict& attrs);
}  // namespace ember::detail
