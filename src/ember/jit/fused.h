#pragma once
// Internal: the kernel of "fused_elementwise" nodes (Note [Fused element-wise chains]).

#include <vector>

#include "ember/core/tensor.h"
#include "ember/serialize/value.h"

namespace ember::jit {

// Note [Fused element-wise chains]: fuse_elementwise (jit/passes.cpp) replaces a chain of
// element-wise table ops on float32 tensors of one shape by one node. Its attributes hold
// the chain as a small program: "ops" (the op names), "args" (per step, the operands:
// k >= 0 is the node's input k, -1 - j the result of step j) and "attrs" (per step, the
// op's own attributes). The last step's result is the node's output. The kernel runs the
// whole program on one block of elements at a time (kFusedBlock floats per step, in the
// thread's cache), so the intermediate tensors of the unfused chain never exist. Each
// step is the same kernel the op runs eagerly, so results are bit-identical to the chain.
inline constexpr int64_t kFusedBlock = 2048;

Tensor run_fused_elementwise(const std::vector<Tensor>& inputs, const Value::Dict& attrs);

}  // namespace ember::jit
