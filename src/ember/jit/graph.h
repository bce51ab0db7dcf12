#pragma once
// The graph IR of ember::jit (docs/jit.md). A Graph is a list of nodes in execution order
// over SSA variables: every Var is defined once, by a graph input, a parameter, a
// constant, or one node's output, and used only after its definition.
//
//   graph(%x: f32[B,784]):
//     %fc1.weight: f32[128,784]  (param)
//     %2: f32[B,128] = linear(%x, %fc1.weight, %fc1.bias)
//     %3: f32[B,128] = relu(%2)
//     return (%3)
//
// One dimension symbol, B (the dynamic batch), may appear in shapes and in integer
// attributes (a reshape to [B * heads, L, E]); every size is a*B + b (SymInt).

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "ember/core/ordered_dict.h"
#include "ember/core/tensor.h"
#include "ember/serialize/value.h"

namespace ember::jit {

// a * B + b; a static size has a == 0.
struct SymInt {
  int64_t a = 0;
  int64_t b = 0;
  bool is_static() const { return a == 0; }
  int64_t eval(int64_t batch) const { return a * batch + b; }
  bool operator==(const SymInt&) const = default;
};
std::ostream& operator<<(std::ostream& os, const SymInt& s);

enum class VarKind : uint8_t { Input, Param, Const, Node };

struct Var {
  std::string name;  // inputs and params: their names; node outputs: "" (printed %<id>)
  VarKind kind = VarKind::Node;
  DType dtype = kFloat32;
  std::vector<SymInt> shape;
  int producer = -1;  // the node defining it (kind Node)
  std::vector<int64_t> sizes(int64_t batch) const;
  bool has_dynamic_dim() const;
};

// An integer attribute that follows B: attrs[attr] (or element `index` of a list) = a*B+b.
struct SymAttr {
  std::string attr;
  int64_t index = -1;  // -1: the attribute itself is the integer
  SymInt value;
};

struct Node {
  std::string op;           // the public op name ("linear", "relu", "view")
  std::vector<int> inputs;  // var ids; -1 = an absent optional tensor (no bias)
  std::vector<int> outputs;
  Value::Dict attrs;  // non-tensor arguments by name
  std::vector<SymAttr> sym;
  // attrs with the dynamic ones evaluated at `batch`.
  Value::Dict attrs_at(int64_t batch) const;
};

class Graph {
 public:
  std::vector<Var> vars;
  std::vector<Node> nodes;
  std::vector<int> inputs;   // graph inputs, in call order
  std::vector<int> outputs;  // graph outputs, in return order
  std::vector<std::string> output_names;  // one per output ("output0" ... unless named)
  std::map<int, Tensor> values;  // the tensors of Param and Const vars
  int64_t traced_batch = 0;      // B when traced (0: no dynamic dim)

  // ---- building by hand (tests, passes) ----
  int add_input(std::string name, DType dtype, std::vector<SymInt> shape);
  int add_param(std::string name, Tensor value);
  int add_const(Tensor value);
  // Appends a node; its outputs get dtype/shape from infer_shapes() (or the tracer).
  std::vector<int> add_node(std::string op, std::vector<int> inputs, Value::Dict attrs = {}, int num_outputs = 1);
  // Runs the graph on zeros shaped like its inputs (B = traced_batch or 2) and stores every
  // node output's dtype and shape (static; the tracer marks dynamic dims itself).
  void infer_shapes();

  // ---- reading ----
  const Var& var(int id) const { return vars.at(static_cast<size_t>(id)); }
  std::string var_name(int id) const;  // "%x", "%fc1.weight", "%7"
  // For each var, the index of the last node that reads it (-1: none; graph outputs: size()).
  std::vector<int> last_uses() const;
  // How many nodes use each var (graph outputs count once more).
  std::vector<int> use_counts() const;
  // Checks SSA (each var defined once, before use), producers, input/output ids, param
  // values and op names; throws ember::Error "[jit::verify] ..." naming the node.
  void verify() const;
  // verify(), then runs the graph on zeros at B = traced_batch (2 without one) and, with a
  // dynamic dim, at B + 1, checking every node output's dtype and sizes against its var's
  // declared dtype and shape; throws "[jit::verify] node k (op): ..." at the first mismatch.
  void verify_shapes() const;
  void print(std::ostream& os) const;
  std::string str() const;
  // Node count per op, sorted by op name.
  std::map<std::string, int> op_histogram() const;
  int64_t parameter_count() const;  // elements of Param vars

 private:
  int add_value(VarKind kind, std::string name, Tensor value);
};
std::ostream& operator<<(std::ostream& os, const Graph& g);

// Short dtype names used in listings and specs ("f32", "i64", "bool").
std::string dtype_short_name(DType dt);
// Parses a short name or a full one ("float32"); throws on an unknown name.
DType dtype_from_short_name(const std::string& name);

}  // namespace ember::jit
