#pragma once
// Standalone model artifacts (docs/jit.md): one file holding a graph, its weights, the op
// set version, input/output specs and user metadata. The file is a checkpoint (a
// safetensors file, atomic save, checksummed load): weights are ordinary safetensors
// entries under "weights/", everything else is JSON in the header. Loading only reads
// data: no code from the file ever runs.
//
//   Value meta = Value::dict();
//   meta["model_name"] = "fashion-cnn";
//   meta["labels"] = Value(Value::List{"T-shirt", "Trouser", ...});
//   jit::save(frozen, "model.ember", meta);
//   jit::GraphModule m = jit::load("model.ember");

#include <string>

#include "ember/jit/module.h"
#include "ember/serialize/value.h"

namespace ember::jit {

inline constexpr const char* kArtifactFormat = "ember.graph";

// Writes m (its graph, weights and metadata; `metadata`, when a dict, is merged over
// m.metadata()) to path atomically.
void save(const GraphModule& m, const std::string& path, const Value& metadata = Value());
// Reads an artifact. Throws ember::Error naming the problem for a missing, truncated or
// damaged file, a file that is not an ember graph, an op set newer than this build's, an
// op this build does not have, or a graph that fails verification.
GraphModule load(const std::string& path);

// The graph as a Value (what the file holds) and back; from_value checks everything.
Value graph_to_value(const Graph& g);
Graph graph_from_value(const Value& v);

// Input/output specs as a Value: [{name, dtype, shape}] with dynamic dims as "B", "4*B".
Value specs_of(const Graph& g);

// A reference profile of a batch of inputs for drift checks: count, mean, std, min, max
// overall and, for inputs with a channel dim (dim 1), the per-channel mean and std.
Value input_profile(const Tensor& batch);

}  // namespace ember::jit
