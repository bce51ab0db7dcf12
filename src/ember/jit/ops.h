#pragma once
// The op set a graph may use (Note [Graph op set]): each traceable op's name, how the
// interpreter runs it from its tensor inputs and attributes, and what passes may assume.
//
// Note [Graph op set]: a node names a public op ("conv2d", "relu", "view") and the
// interpreter calls that same public function, so a graph computes exactly what eager
// code computes. The set is versioned (opset_version()): an artifact records the version
// it was written with, and a build refuses artifacts newer than its own or naming an op it
// does not have. Adding an op: record it in the op (TraceOp, jit/trace_hook.h) and add its
// row here; changing an op's attributes incompatibly bumps the version.

#include <string>
#include <string_view>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/serialize/value.h"

namespace ember::jit {

using OpFn = std::vector<Tensor> (*)(const std::vector<Tensor>& inputs, const Value::Dict& attrs);

struct OpDef {
  const char* name;
  OpFn fn;
  bool elementwise;  // output[i] depends only on the inputs' (broadcast) element i
  bool random;       // draws random numbers: never folded, deduplicated or reordered
};

const OpDef* find_op(std::string_view name);
// Runs one node's op (use this, not def.fn: the element-wise rows share one function that
// reads the op name from the call).
std::vector<Tensor> call_op(const OpDef& def, const std::vector<Tensor>& inputs, const Value::Dict& attrs);
std::vector<std::string> op_names();
int opset_version();

// Attribute access with errors naming the op and the attribute.
int64_t attr_int(const Value::Dict& attrs, const char* name);
int64_t attr_int(const Value::Dict& attrs, const char* name, int64_t fallback);
double attr_double(const Value::Dict& attrs, const char* name, double fallback);
bool attr_bool(const Value::Dict& attrs, const char* name, bool fallback);
std::string attr_string(const Value::Dict& attrs, const char* name, const std::string& fallback);
std::vector<int64_t> attr_ints(const Value::Dict& attrs, const char* name);

}  // namespace ember::jit
