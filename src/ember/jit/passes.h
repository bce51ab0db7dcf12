#pragma once
// Graph passes (docs/jit.md). Each rewrites a Graph in place, keeps it valid (verify()),
// and returns how many nodes it removed or rewrote.

#include <cstdint>

#include "ember/jit/graph.h"
#include "ember/jit/module.h"

namespace ember::jit {

// Removes nodes whose outputs nothing uses (random ops included: their draws are unused),
// then unused parameters and constants.
int eliminate_dead_code(Graph& g);
// Merges nodes with the same op, inputs and attributes (never random ops).
int eliminate_common_subexpressions(Graph& g);
// Evaluates nodes whose inputs are all constants (and parameters when include_params)
// and replaces them by constants.
int fold_constants(Graph& g, bool include_params = false);
// conv1d/conv2d/linear followed by an inference batch_norm (running statistics, parameters
// or constants) becomes one conv/linear with scaled weights and a shifted bias. Only where
// the conv's output has no other use.
int fold_batch_norm(Graph& g);
// conv/linear followed by relu (the conv's output used only there) become one node with
// attribute activation="relu", applied to the output buffer in place.
int fuse_epilogues(Graph& g);
// Chains of element-wise ops on float32 tensors of one shape (with scalar or broadcast
// constant operands) become one "fused_elementwise" node that runs the chain per block of
// elements in cache, with no intermediate tensors.
int fuse_elementwise(Graph& g);

// Peak bytes of intermediate tensors when each is freed after its last use, against
// keeping all of them, at batch size `batch` (traced B when 0).
struct MemoryPlan {
  int64_t total_bytes = 0;  // all intermediates (no reuse)
  int64_t peak_bytes = 0;   // freed after last use
  int inplace_nodes = 0;    // element-wise nodes that can write into a dying input
};
MemoryPlan plan_memory(const Graph& g, int64_t batch = 0);

struct FreezeOptions {
  bool fold_batch_norm = true;
  bool fold_constants = true;
  bool fuse_epilogues = true;
  bool fuse_elementwise = true;
  bool eliminate_common_subexpressions = true;
};
// Inference form: parameters become constants (copied, so later training does not change
// the frozen graph), then the passes above run. Results equal the unfrozen graph within
// float rounding (folding and fusion change the order of some operations).
GraphModule freeze(const GraphModule& m, const FreezeOptions& options = {});

}  // namespace ember::jit
