#pragma once
// Internal to src/ember/onnx (built only with libonnx-dev): the converter of one jit graph
// into an ONNX GraphProto (Note [ONNX export] in export.cpp). export.cpp holds the driver,
// naming, initializers and the first op families (element-wise, conv, linear, pool,
// norms, reshapes); export_ops.cpp the joins, slices, reductions, selections, creation
// ops and the decomposed activations.

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ember/jit/graph.h"
#include "ember/serialize/value.h"

namespace ember::onnx::detail {

namespace pb = ::onnx;
using jit::SymInt;
using Dict = Value::Dict;

int32_t onnx_dtype(DType dt);
// v with one value repeated n times, or v itself when it has n values; else an error naming
// the node (where) and the attribute.
std::vector<int64_t> repeat_to(std::vector<int64_t> v, size_t n, const char* what, const std::string& where);

// One tensor operand of an op being converted: its ONNX value name (empty: an absent
// optional input), dtype, shape and, for parameters and constants, its value.
struct Operand {
  std::string name;
  DType dtype = kFloat32;
  std::vector<SymInt> shape;
  const Tensor* value = nullptr;
  int var = -1;
  bool present() const { return !name.empty(); }
};

// What one converted op produces.
struct Result {
  std::string name;
  DType dtype = kFloat32;
  std::vector<SymInt> shape;
};

class Exporter {
 public:
  // qoperator: static int8 ops as QLinearConv & co. (Note [QOperator export]) instead of QDQ.
  Exporter(const jit::Graph& g, int opset, pb::GraphProto* gp, bool qoperator = false)
      : g_(g), opset_(opset), gp_(gp), qop_(qoperator) {}
  void run();
  // Whether the graph uses ONNX Runtime's com.microsoft operators (QLinearAdd, ...).
  bool uses_contrib_domain() const { return contrib_; }

 private:
  const jit::Graph& g_;
  const int opset_;
  pb::GraphProto* gp_;
  const bool qop_;
  bool contrib_ = false;
  std::set<std::string> used_;
  std::map<int, std::string> var_names_;
  std::map<int, std::string> transposed_;  // weight var -> its transposed initializer
  std::string batch_;                      // a [1] int64 value holding B (shape_of)
  const jit::Node* node_ptr_ = nullptr;    // the node being converted (null inside a fused step)
  int node_ = -1;
  std::string op_;
  std::string step_;  // " step 2 ('mul')" inside a fused node

  // ---- naming, building (export.cpp) ----
  std::string output_name(size_t i) const;
  std::string fresh(const std::string& base);
  void name_vars();
  Operand operand(int id);
  [[noreturn]] void unsupported(const std::string& why) const;
  std::string node_desc() const;  // "node 7 (op 'cat')", with the fused step
  void add_value_info(pb::ValueInfoProto* vi, const std::string& name, const jit::Var& v);
  pb::NodeProto* add(const char* type, const std::vector<std::string>& ins, const std::vector<std::string>& outs);
  static void set_int(pb::NodeProto* n, const char* name, int64_t v);
  static void set_ints(pb::NodeProto* n, const char* name, const std::vector<int64_t>& v);
  static void set_float(pb::NodeProto* n, const char* name, double v);
  void init_tensor(const std::string& name, const Tensor& value);
  std::string init_i64(const std::string& base, const std::vector<int64_t>& v);
  std::string init_scalar(const std::string& base, DType dt, double v);
  std::string init_ones(const std::string& base, DType dt, const std::vector<int64_t>& dims);
  std::string cast(const Operand& o, DType to);
  std::vector<int64_t> static_dims(const std::vector<SymInt>& shape, const char* what) const;
  // A 1-D int64 value holding `shape` at run time: an initializer when every dim is static,
  // else built from the batch size read off a graph input (Shape, Gather, Mul, Add, Concat).
  std::string shape_of(const std::vector<SymInt>& shape, const std::string& base);
  // Whether attribute `attr` (element `index` of a list, -1: itself) follows the batch.
  bool attr_is_dynamic(const char* attr, int64_t index = -1) const;

  // ---- ops (export.cpp) ----
  void emit(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  void binary(const char* type, const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  void conv(const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  void linear(const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  void pool(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  void adaptive_avg_pool(const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  void batch_norm(const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  void layer_norm(const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  void reshape(const Operand& x, const Result& out);
  void fused(const std::vector<Operand>& in, const Dict& attrs, const Result& out);

  // ---- ops (export_ops.cpp) ----
  // Converts op when it is one of this file's; false when it is not.
  bool emit_more(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  // chunk, split, unbind: one Slice (or Gather) per output.
  void multi(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const std::vector<Result>& outs);
  bool unary_more(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  bool binary_more(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  void gelu(const Operand& x, const Dict& attrs, const Result& out);
  void group_norm(const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  void embedding(const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  void reduce(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  void slice(const Operand& x, int64_t dim, int64_t start, int64_t end, int64_t step, const std::string& out);
  void select(const Operand& x, int64_t dim, int64_t index, const std::string& out);
  void expand(const Operand& x, const Result& out);
  void creation(const std::string& op, const Dict& attrs, const Result& out);
  void matmul_add(const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  void conv_transpose(const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  // A scalar attribute (clamp's min, masked_fill's value) as a rank-0 initializer of dt.
  std::string scalar_attr(const Value& v, DType dt, const std::string& base);
  int64_t norm_dim(int64_t d, size_t rank) const;

  // ---- quantized ops in QDQ form (export_quant.cpp) ----
  // Converts op when it is a static int8 op (quant/quantized_ops.h); false when it is not.
  bool emit_quantized(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  // The float32 values of an operand on the grid (scale, zero_point): DequantizeLinear of uint8
  // codes, or, for float32 input, its clamped QuantizeLinear -> DequantizeLinear.
  std::string dequantized_input(const Operand& x, double scale, int64_t zero_point, const std::string& base);
  // Float32 y onto the grid, as codes (uint8) or their values, into out.
  void requantize_output(const std::string& y, double scale, int64_t zero_point, bool relu, DType dtype,
                         const std::string& out);
  // DequantizeLinear of int8 per-channel weights (axis 0, zero points 0).
  std::string dequantized_weight(const Operand& qweight, const Operand& scales);
  // The grids of uint8 values (var id -> scale, zero point), for max pooling's QDQ pair.
  std::map<int, std::pair<double, int64_t>> grid_;

  // ---- quantized ops in QOperator form (export_qoperator.cpp) ----
  bool emit_qoperator(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const Result& out);
  // The uint8 codes of x on (scale, zero_point) as an ONNX value whose grid is named after it:
  // x itself for codes, a Clip + QuantizeLinear of float values into "<base>_quantized".
  std::string qop_codes(const Operand& x, double scale, int64_t zero_point, const std::string& base);
  // Creates "<prefix>scale" and "<prefix>zero_point" for codes named "<prefix>quantized".
  void qop_grid(const std::string& codes, double scale, int64_t zero_point);
  std::string qop_scale(const std::string& codes) const;
  std::string qop_zero_point(const std::string& codes) const;
  // After a non-quantized op (flatten, view, ...) on codes: its uint8 output keeps the grid.
  void qop_follow_grid(const std::vector<Operand>& in, const Result& out);
  std::set<std::string> grid_named_;
};

}  // namespace ember::onnx::detail
