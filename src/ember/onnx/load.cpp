// ONNX import (load.h, docs/onnx.md).
//
// Note [ONNX import]: each ONNX node becomes the ember graph op that computes the same thing
// (Conv -> conv2d, Gemm -> linear, BatchNormalization -> batch_norm in inference mode), so
// the imported graph runs on the same interpreter, passes and artifacts as a traced one.
// As in export (Note [ONNX export]), nothing is guessed: an op, an attribute or a padding
// with no exact ember form stops the import naming the node. Shapes are not read from the
// file beyond the inputs: the graph is run on zeros at B = 2 and B = 3 (infer_shapes) and
// every dim that moves with B becomes a*B + b, as jit::trace does. Sizes the file computes
// at run time (Shape, then Gather/Mul/Add/Concat) are followed symbolically instead and end
// as size attributes that follow B (Node::sym) of the op that reads them.

#include "ember/onnx/load.h"

#include "ember/core/check.h"
#include "ember/jit/module.h"

#if EMBER_HAVE_ONNX

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "ember/jit/graph.h"
#include "ember/onnx/export.h"
#include "ember/ops/creation.h"
#include "ember/quant/qlinear.h"

namespace ember::onnx {

namespace {

namespace pb = ::onnx;
using jit::SymInt;
using Dict = Value::Dict;

DType ember_dtype(int32_t t, const std::string& what) {
  switch (t) {
    case pb::TensorProto_DataType_FLOAT:
      return kFloat32;
    case pb::TensorProto_DataType_DOUBLE:
      return kFloat64;
    case pb::TensorProto_DataType_INT64:
      return kInt64;
    case pb::TensorProto_DataType_INT32:
      return kInt32;
    case pb::TensorProto_DataType_INT8:
      return kInt8;
    case pb::TensorProto_DataType_UINT8:
      return kUInt8;
    case pb::TensorProto_DataType_BOOL:
      return kBool;
    default:
      break;
  }
  EMBER_ERROR("[onnx::load] ", what, " has ONNX element type ", pb::TensorProto_DataType_Name(t),
              ", which ember does not read (float32/64, int8/32/64, uint8, bool)");
}

Tensor read_tensor(const pb::TensorProto& p) {
  const std::string what = "tensor '" + p.name() + "'";
  if (p.data_location() == pb::TensorProto_DataLocation_EXTERNAL) {
    EMBER_ERROR("[onnx::load] ", what, " is stored in an external file, which ember does not read");
  }
  const DType dt = ember_dtype(p.data_type(), what);
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  Tensor t = empty(dims, TensorOptions(dt));
  const size_t bytes = static_cast<size_t>(t.nbytes());
  auto fill = [&](const auto& field, auto tag) {
    using T = decltype(tag);
    EMBER_CHECK(static_cast<size_t>(field.size()) * sizeof(T) == bytes, "[onnx::load] ", what, " holds ", field.size(),
                " values for shape ", IntArrayRef(dims));
    T* out = static_cast<T*>(t.data_ptr());
    for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
  };
  if (p.has_raw_data()) {
    EMBER_CHECK(p.raw_data().size() == bytes, "[onnx::load] ", what, " holds ", p.raw_data().size(),
                " bytes for shape ", IntArrayRef(dims), " (", bytes, " expected)");
    if (bytes > 0) std::memcpy(t.data_ptr(), p.raw_data().data(), bytes);  // little-endian hosts
  } else if (dt == kFloat32) {
    fill(p.float_data(), float{});
  } else if (dt == kFloat64) {
    fill(p.double_data(), double{});
  } else if (dt == kInt64) {
    fill(p.int64_data(), int64_t{});
  } else if (dt == kInt32) {
    fill(p.int32_data(), int32_t{});
  } else if (dt == kInt8) {
    fill(p.int32_data(), int8_t{});
  } else if (dt == kUInt8) {
    fill(p.int32_data(), uint8_t{});
  } else {
    fill(p.int32_data(), bool{});
  }
  return t;
}

constexpr int64_t kShapeBatch = 2;
// ONNX Runtime's operator domain, whose int8 operators ember's QOperator export writes.
constexpr const char* kContribDomain = "com.microsoft";

class Importer {
 public:
  Importer(const pb::GraphProto& gp, int opset) : gp_(gp), opset_(opset) {}

  jit::Graph run() {
    for (const pb::TensorProto& t : gp_.initializer()) {
      ids_[t.name()] = g_.add_param(t.name(), read_tensor(t));
      values_[t.name()] = g_.values.at(ids_[t.name()]);
    }
    for (const pb::ValueInfoProto& vi : gp_.input()) {
      if (ids_.count(vi.name()) != 0) continue;  // an initializer listed as an input too
      add_input(vi);
    }
    for (int k = 0; k < gp_.node_size(); ++k) {
      node_ = k;
      convert(gp_.node(k));
    }
    for (const pb::ValueInfoProto& vi : gp_.output()) {
      g_.outputs.push_back(value(vi.name()));
      g_.output_names.push_back(vi.name());
    }
    infer_dynamic_shapes();
    g_.verify_shapes();
    return std::move(g_);
  }

 private:
  const pb::GraphProto& gp_;
  const int opset_;
  jit::Graph g_;
  std::map<std::string, int> ids_;
  std::map<std::string, Tensor> values_;  // initializers and Constant outputs
  // Sizes computed in the graph from Shape (a*B + b each): never tensors of the ember
  // graph, they become the size attributes of the ops that read them (Note [ONNX import]).
  std::map<std::string, std::vector<SymInt>> sizes_;
  bool dynamic_ = false;
  std::string batch_name_;  // the dim_param read as B
  int node_ = -1;
  const pb::NodeProto* n_ = nullptr;

  [[noreturn]] void unsupported(const std::string& why) const {
    const std::string domain = n_->domain().empty() || n_->domain() == "ai.onnx" ? "" : n_->domain() + ":";
    EMBER_ERROR("[onnx::load] node ", node_, " ('", n_->name(), "', op ", domain, n_->op_type(), ") in opset ", opset_,
                " has no ember form: ", why, ". docs/onnx.md lists the ONNX ops ember reads");
  }

  void add_input(const pb::ValueInfoProto& vi) {
    EMBER_CHECK(vi.type().has_tensor_type(), "[onnx::load] graph input '", vi.name(), "' is not a tensor");
    const pb::TypeProto_Tensor& tt = vi.type().tensor_type();
    std::vector<SymInt> shape;
    for (const pb::TensorShapeProto_Dimension& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        shape.push_back(SymInt{0, d.dim_value()});
      } else {
        // A named (or unnamed) dim: the batch, the one size ember lets vary.
        const std::string& name = d.dim_param();
        if (!batch_name_.empty() && !name.empty() && name != batch_name_) {
          EMBER_ERROR("[onnx::load] graph input '", vi.name(), "' has the dims '", batch_name_, "' and '", name,
                      "' that vary independently; ember graphs have one dynamic dim (the batch): export the "
                      "model with the other dims fixed");
        }
        if (!name.empty()) batch_name_ = name;
        shape.push_back(SymInt{1, 0});
        dynamic_ = true;
      }
    }
    ids_[vi.name()] = g_.add_input(vi.name(), ember_dtype(tt.elem_type(), "graph input '" + vi.name() + "'"), shape);
  }

  int value(const std::string& name) const {
    auto it = ids_.find(name);
    EMBER_CHECK(it != ids_.end(), "[onnx::load] value '", name, "' is used before any node makes it");
    return it->second;
  }
  int input(int k) const {
    if (k >= n_->input_size() || n_->input(k).empty()) return -1;
    return value(n_->input(k));
  }
  const Tensor* constant(int k) const {
    if (k >= n_->input_size()) return nullptr;
    auto it = values_.find(n_->input(k));
    return it == values_.end() ? nullptr : &it->second;
  }
  std::vector<int64_t> constant_ints(int k, const char* what) const {
    const Tensor* t = constant(k);
    if (t == nullptr) unsupported(std::string(what) + " is computed in the graph, not a constant");
    const Tensor c = t->to(kInt64).contiguous();
    const int64_t* p = c.data_ptr<int64_t>();
    return std::vector<int64_t>(p, p + c.numel());
  }

  const pb::AttributeProto* attr(const char* name) const {
    for (const pb::AttributeProto& a : n_->attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }
  int64_t attr_int(const char* name, int64_t fallback) const {
    const pb::AttributeProto* a = attr(name);
    return a == nullptr ? fallback : a->i();
  }
  double attr_float(const char* name, double fallback) const {
    const pb::AttributeProto* a = attr(name);
    return a == nullptr ? fallback : a->f();
  }
  std::vector<int64_t> attr_ints(const char* name, std::vector<int64_t> fallback) const {
    const pb::AttributeProto* a = attr(name);
    return a == nullptr ? fallback : std::vector<int64_t>(a->ints().begin(), a->ints().end());
  }
  void refuse_attr(const char* name, const std::string& why) const {
    if (attr(name) != nullptr) unsupported("attribute '" + std::string(name) + "' " + why);
  }

  // Adds one ember node for the ONNX node's (first) output; returns its var.
  int emit(const char* op, std::vector<int> inputs, Dict attrs = {}) {
    const int out = g_.add_node(op, std::move(inputs), std::move(attrs))[0];
    ids_[n_->output(0)] = out;
    return out;
  }
  // The rank of value k of the node (shapes inferred so far).
  int64_t rank_of(int k) {
    const int id = input(k);
    if (g_.var(id).kind == jit::VarKind::Node) infer_dynamic_shapes();
    return static_cast<int64_t>(g_.var(id).shape.size());
  }
  DType dtype_of(int k) {
    const int id = input(k);
    if (g_.var(id).kind == jit::VarKind::Node) infer_dynamic_shapes();
    return g_.var(id).dtype;
  }

  // QuantizeLinear / DequantizeLinear: a node, or, when every input is a constant (int8 weights
  // under a per-channel DequantizeLinear in QDQ files), the values computed now, a parameter
  // named after the output, so that Conv and Gemm see constant weights.
  void quantize_linear(bool quantize) {
    if (n_->input_size() < 2) unsupported("it lacks its scale input");
    if (opset_ >= 19 && attr("saturate") != nullptr) unsupported("attribute 'saturate'");
    const int64_t axis = attr_int("axis", 1);
    const bool folds = constant(0) != nullptr && constant(1) != nullptr &&
                       (n_->input_size() < 3 || n_->input(2).empty() || constant(2) != nullptr);
    if (folds) {
      const Tensor zp = n_->input_size() > 2 && !n_->input(2).empty() ? *constant(2) : Tensor();
      Tensor t;
      try {
        t = quantize ? quant::quantize_linear(*constant(0), *constant(1), zp, axis)
                     : quant::dequantize_linear(*constant(0), *constant(1), zp, axis);
      } catch (const Error& e) {
        unsupported(std::string("its constant inputs are refused: ") + e.what());
      }
      ids_[n_->output(0)] = g_.add_param(n_->output(0), t);
      values_[n_->output(0)] = t;
      return;
    }
    Dict a;
    a.insert("axis", Value(axis));
    emit(quantize ? "quantize_linear" : "dequantize_linear",
         {input(0), input(1), n_->input_size() > 2 ? input(2) : -1}, a);
  }

  void qlinear_conv() {
    if (n_->input_size() < 8) unsupported("it lacks some of the 8 inputs of QLinearConv");
    const Tensor* w = constant(3);
    if (w != nullptr && w->dim() != 4) unsupported("a " + std::to_string(w->dim() - 2) + "-D convolution");
    Dict a;
    a.insert("stride", Value(attr_ints("strides", {1, 1})));
    a.insert("padding", Value(symmetric_pads(2)));
    a.insert("dilation", Value(attr_ints("dilations", {1, 1})));
    a.insert("groups", Value(attr_int("group", 1)));
    std::vector<int> ins;
    for (int k = 0; k < 9; ++k) ins.push_back(input(k));
    emit("qlinear_conv2d", ins, a);
  }

  // ONNX Runtime's com.microsoft int8 operators that ember's QOperator export writes.
  void contrib(const pb::NodeProto& n) {
    const std::string& op = n.op_type();
    if (n.output_size() != 1 || n.output(0).empty()) unsupported("it does not have one output");
    if (attr_int("channels_last", 0) != 0) unsupported("channels_last = 1 (ember reads NCHW)");
    std::vector<int> ins;
    for (int k = 0; k < n.input_size(); ++k) ins.push_back(input(k));
    if (op == "QLinearAdd") {
      if (n.input_size() < 7) unsupported("it lacks some of the inputs of QLinearAdd");
      ins.resize(8, -1);
      emit("qlinear_add", ins);
    } else if (op == "QLinearConcat") {
      if (n.input_size() < 5 || (n.input_size() - 2) % 3 != 0) {
        unsupported("its inputs are not y_scale, y_zero_point and (codes, scale, zero point) per joined tensor");
      }
      Dict a;
      a.insert("dim", Value(attr_int("axis", 0)));
      emit("qlinear_concat", ins, a);
    } else if (op == "QLinearAveragePool") {
      if (n.input_size() < 4) unsupported("it lacks some of the inputs of QLinearAveragePool");
      ins.resize(5, -1);
      const std::vector<int64_t> kernel = attr_ints("kernel_shape", {});
      if (kernel.size() != 2) unsupported("a pool that is not 2-D");
      refuse_attr("dilations", "is not read");
      Dict a;
      a.insert("kernel_size", Value(kernel));
      a.insert("stride", Value(attr_ints("strides", {1, 1})));
      a.insert("padding", Value(symmetric_pads(2)));
      a.insert("ceil_mode", Value(attr_int("ceil_mode", 0) != 0));
      a.insert("count_include_pad", Value(attr_int("count_include_pad", 0) != 0));
      emit("qlinear_avg_pool2d", ins, a);
    } else if (op == "QLinearGlobalAveragePool") {
      if (n.input_size() < 4) unsupported("it lacks some of the inputs of QLinearGlobalAveragePool");
      ins.resize(5, -1);
      emit("qlinear_global_avg_pool2d", ins);
    } else {
      unsupported("ember reads only QLinearAdd, QLinearConcat, QLinearAveragePool and QLinearGlobalAveragePool of "
                  "the domain '" + std::string(kContribDomain) + "'");
    }
  }

  // Axes from input k (opset 13+) or, for the ops that kept it there, the 'axes' attribute.
  std::vector<int64_t> axes_of(int k, int64_t rank) {
    std::vector<int64_t> axes =
        k < n_->input_size() && !n_->input(k).empty() ? constant_ints(k, "axes") : attr_ints("axes", {});
    for (int64_t& a : axes) a = a < 0 ? a + rank : a;
    return axes;
  }

  // ONNX pads [begin..., end...] as ember's symmetric padding.
  std::vector<int64_t> symmetric_pads(size_t n) const {
    if (const pb::AttributeProto* a = attr("auto_pad"); a != nullptr && a->s() != "NOTSET") {
      unsupported("auto_pad " + a->s() + " (write explicit pads)");
    }
    const std::vector<int64_t> pads = attr_ints("pads", std::vector<int64_t>(2 * n, 0));
    if (pads.size() != 2 * n) unsupported("pads has " + std::to_string(pads.size()) + " values");
    for (size_t k = 0; k < n; ++k) {
      if (pads[k] != pads[k + n]) unsupported("asymmetric pads (ember pads both sides alike)");
    }
    return std::vector<int64_t>(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(n));
  }

  void convert(const pb::NodeProto& n) {
    n_ = &n;
    const std::string& op = n.op_type();
    if (n.domain() == kContribDomain) {
      contrib(n);
      return;
    }
    if (!n.domain().empty() && n.domain() != "ai.onnx") unsupported("domain '" + n.domain() + "'");
    static const std::map<std::string, const char*, std::less<>> kUnary = {
        {"Relu", "relu"},   {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"},   {"Exp", "exp"},
        {"Neg", "neg"},     {"Abs", "abs"},         {"Sqrt", "sqrt"},   {"Log", "log"},
        {"Erf", "erf"},     {"Sin", "sin"},         {"Cos", "cos"},     {"Reciprocal", "reciprocal"},
        {"Floor", "floor"}, {"Ceil", "ceil"},       {"Sign", "sign"},   {"Not", "logical_not"},
        {"Tan", "tan"},     {"Asin", "asin"},       {"Acos", "acos"},   {"Atan", "atan"},
        {"Sinh", "sinh"},   {"Cosh", "cosh"},       {"Round", "round"}, {"IsNaN", "isnan"},
        {"IsInf", "isinf"}};
    static const std::map<std::string, const char*, std::less<>> kBinary = {
        {"Add", "add"},         {"Sub", "sub"},        {"Mul", "mul"},        {"Div", "div"},
        {"Pow", "pow"},         {"Max", "maximum"},    {"Min", "minimum"},    {"Equal", "eq"},
        {"Less", "lt"},         {"LessOrEqual", "le"}, {"Greater", "gt"},     {"GreaterOrEqual", "ge"},
        {"And", "logical_and"}, {"Or", "logical_or"},  {"Xor", "logical_xor"}};
    if (n.output_size() < 1 || n.output(0).empty()) unsupported("it has no output");
    if (n.output_size() != 1 && op != "Dropout" && op != "BatchNormalization" && op != "LayerNormalization") {
      unsupported("it has " + std::to_string(n.output_size()) + " outputs");
    }
    if (size_arithmetic(op)) return;
    if (auto it = kUnary.find(op); it != kUnary.end()) {
      emit(it->second, {input(0)});
    } else if (auto bt = kBinary.find(op); bt != kBinary.end()) {
      if (n.input_size() != 2) unsupported("it does not have two inputs");
      emit(bt->second, {input(0), input(1)});
    } else if (op == "Constant") {
      const pb::AttributeProto* a = attr("value");
      if (a == nullptr || !a->has_t()) unsupported("a Constant without a tensor 'value'");
      Tensor t = read_tensor(a->t());
      const int id = g_.add_const(t);
      ids_[n.output(0)] = id;
      values_[n.output(0)] = t;
    } else if (op == "Identity" || op == "Dropout") {
      if (op == "Dropout" && n.output_size() > 1 && !n.output(1).empty()) unsupported("its mask output is used");
      emit("clone", {input(0)});
    } else if (op == "Conv") {
      conv(n);
    } else if (op == "Gemm") {
      gemm(n);
    } else if (op == "MatMul") {
      emit("matmul", {input(0), input(1)});
    } else if (op == "MaxPool" || op == "AveragePool") {
      pool(op);
    } else if (op == "QuantizeLinear" || op == "DequantizeLinear") {
      quantize_linear(op == "QuantizeLinear");
    } else if (op == "QLinearConv") {
      qlinear_conv();
    } else if (op == "QLinearMatMul") {
      if (n.input_size() != 8) unsupported("it does not have the 8 inputs of QLinearMatMul");
      std::vector<int> ins;
      for (int k = 0; k < 8; ++k) ins.push_back(input(k));
      emit("qlinear_matmul", ins);
    } else if (op == "GlobalAveragePool") {
      Dict a;
      a.insert("output_size", Value(std::vector<int64_t>{1, 1}));
      emit("adaptive_avg_pool2d", {input(0)}, a);
    } else if (op == "BatchNormalization") {
      if (attr_int("training_mode", 0) != 0) unsupported("training_mode");
      for (int k = 1; k < n.output_size(); ++k) {
        if (!n.output(k).empty()) unsupported("its running statistics outputs are used (training)");
      }
      Dict a;
      a.insert("training", Value(false));
      a.insert("momentum", Value(1.0 - attr_float("momentum", 0.9)));  // ONNX weighs the old statistics
      a.insert("eps", Value(attr_float("epsilon", 1e-5)));
      emit("batch_norm", {input(0), input(3), input(4), input(1), input(2)}, a);
    } else if (op == "LayerNormalization") {
      layer_norm(n);
    } else if (op == "Flatten") {
      Dict a;
      a.insert("start_dim", Value(attr_int("axis", 1)));
      a.insert("end_dim", Value(int64_t(-1)));
      if (attr_int("axis", 1) != 1) unsupported("Flatten with axis other than 1");
      emit("flatten", {input(0)}, a);
    } else if (op == "Reshape") {
      reshape(n);
    } else if (op == "Transpose") {
      Dict a;
      a.insert("dims", Value(attr_ints("perm", {})));
      if (attr("perm") == nullptr) unsupported("Transpose without perm");
      emit("permute", {input(0)}, a);
    } else if (op == "Softmax" || op == "LogSoftmax") {
      Dict a;
      a.insert("dim", Value(attr_int("axis", -1)));
      emit(op == "Softmax" ? "softmax" : "log_softmax", {input(0)}, a);
    } else if (op == "LeakyRelu") {
      Dict a;
      a.insert("negative_slope", Value(attr_float("alpha", 0.01)));
      emit("leaky_relu", {input(0)}, a);
    } else if (op == "Clip") {
      clip();
    } else if (op == "Mod") {
      // fmod = 1: C's fmod, eager's fmod; fmod = 0 (integers): the divisor's sign, remainder.
      emit(attr_int("fmod", 0) != 0 ? "fmod" : "remainder", {input(0), input(1)});
    } else if (op == "Where") {
      emit("where", {input(0), input(1), input(2)});
    } else if (op == "Cast") {
      Dict a;
      a.insert("dtype",
               Value(jit::dtype_short_name(ember_dtype(static_cast<int32_t>(attr_int("to", 0)), "Cast's 'to'"))));
      a.insert("copy", Value(false));
      emit("to", {input(0)}, a);
    } else if (op == "Trilu") {
      Dict a;
      a.insert("diagonal", Value(n.input_size() > 1 && !n.input(1).empty() ? constant_ints(1, "k").at(0) : int64_t(0)));
      emit(attr_int("upper", 1) != 0 ? "triu" : "tril", {input(0)}, a);
    } else if (op == "Expand") {
      expand();
    } else if (op == "InstanceNormalization") {
      // Instance norm over [N, C, *] is group norm with one channel per group.
      const Tensor* scale = constant(1);
      if (scale == nullptr || scale->dim() != 1) unsupported("a scale that is not a constant vector");
      Dict a;
      a.insert("num_groups", Value(scale->size(0)));
      a.insert("eps", Value(attr_float("epsilon", 1e-5)));
      emit("group_norm", {input(0), input(1), input(2)}, a);
    } else if (op == "ConvTranspose") {
      conv_transpose(n);
    } else if (op == "Unsqueeze" || op == "Squeeze") {
      squeeze(op == "Unsqueeze");
    } else if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin") {
      reduce(op);
    } else if (op == "Gather") {
      gather();
    } else if (op == "Slice") {
      slice();
    } else if (op == "Concat") {
      std::vector<int> ins;
      for (int k = 0; k < n.input_size(); ++k) ins.push_back(input(k));
      Dict a;
      a.insert("dim", Value(attr_int("axis", 0)));
      emit("cat", ins, a);
    } else {
      unsupported("ember reads no " + op + " yet");
    }
  }

  void conv(const pb::NodeProto& n) {
    const Tensor* w = constant(1);
    if (w == nullptr) unsupported("the weight is computed in the graph, not an initializer");
    const size_t sp = static_cast<size_t>(w->dim()) - 2;
    if (sp != 1 && sp != 2) unsupported("a " + std::to_string(sp) + "-D convolution");
    Dict a;
    a.insert("stride", Value(attr_ints("strides", std::vector<int64_t>(sp, 1))));
    a.insert("padding", Value(symmetric_pads(sp)));
    a.insert("dilation", Value(attr_ints("dilations", std::vector<int64_t>(sp, 1))));
    a.insert("groups", Value(attr_int("group", 1)));
    emit(sp == 2 ? "conv2d" : "conv1d", {input(0), input(1), n.input_size() > 2 ? input(2) : -1}, a);
  }

  // Y = alpha * A' B' + beta * C: linear(A, W, C) when B' is a constant and alpha = beta = 1.
  void gemm(const pb::NodeProto& n) {
    if (attr_int("transA", 0) != 0) unsupported("transA");
    if (attr_float("alpha", 1.0) != 1.0 || attr_float("beta", 1.0) != 1.0) unsupported("alpha or beta other than 1");
    int w = input(1);
    if (attr_int("transB", 0) == 0) {
      // linear wants [out, in]: a transposed copy of a constant B.
      const Tensor* b = constant(1);
      if (b == nullptr) unsupported("transB = 0 with a B computed in the graph");
      w = g_.add_param(n.input(1) + ".T", b->t().contiguous());
    }
    emit("linear", {input(0), w, n.input_size() > 2 ? input(2) : -1});
  }

  void pool(const std::string& op) {
    const std::vector<int64_t> kernel = attr_ints("kernel_shape", {});
    if (kernel.size() != 2) unsupported("a pool that is not 2-D");
    Dict a;
    a.insert("kernel_size", Value(kernel));
    a.insert("stride", Value(attr_ints("strides", {1, 1})));
    a.insert("padding", Value(symmetric_pads(2)));
    a.insert("ceil_mode", Value(attr_int("ceil_mode", 0) != 0));
    if (op == "MaxPool") {
      if (n_->output_size() > 1) unsupported("its indices output");
      refuse_attr("storage_order", "is not read");
      a.insert("dilation", Value(attr_ints("dilations", {1, 1})));
      // Codes: the max of codes is the code of the max (the grid stays the input's).
      const DType dt = dtype_of(0);
      if (dt == kInt8) unsupported("a MaxPool of int8 codes (ember pools uint8 codes)");
      emit(dt == kUInt8 ? "quantized_max_pool2d" : "max_pool2d", {input(0)}, a);
    } else {
      a.insert("count_include_pad", Value(attr_int("count_include_pad", 0) != 0));
      emit("avg_pool2d", {input(0)}, a);
    }
  }

  void layer_norm(const pb::NodeProto& n) {
    const jit::Var& x = g_.var(input(0));
    if (x.kind == jit::VarKind::Node) infer_dynamic_shapes();  // the shapes so far
    const int64_t r = static_cast<int64_t>(x.shape.size());
    int64_t axis = attr_int("axis", -1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) unsupported("axis out of range");
    std::vector<int64_t> shape;
    for (int64_t d = axis; d < r; ++d) {
      if (!x.shape[static_cast<size_t>(d)].is_static()) unsupported("normalizing over the batch dim");
      shape.push_back(x.shape[static_cast<size_t>(d)].b);
    }
    if (n.output_size() > 1 && !n.output(1).empty()) unsupported("its mean / inverse std outputs");
    Dict a;
    a.insert("normalized_shape", Value(shape));
    a.insert("eps", Value(attr_float("epsilon", 1e-5)));
    emit("layer_norm", {input(0), input(1), n.input_size() > 2 ? input(2) : -1}, a);
  }

  void squeeze(bool unsqueeze) {
    const int64_t r = rank_of(0);
    std::vector<int64_t> axes =
        n_->input_size() > 1 && !n_->input(1).empty() ? constant_ints(1, "axes") : attr_ints("axes", {});
    // Unsqueeze's axes count in the output's rank.
    const int64_t rank = unsqueeze ? r + static_cast<int64_t>(axes.size()) : r;
    for (int64_t& v : axes) v = v < 0 ? v + rank : v;
    int x = input(0);
    if (!unsqueeze && axes.empty()) {
      emit("squeeze", {x});  // every dim of size 1
      return;
    }
    // One dim at a time: ascending for unsqueeze (axes of the output), descending for squeeze.
    std::sort(axes.begin(), axes.end());
    if (!unsqueeze) std::reverse(axes.begin(), axes.end());
    for (int64_t a : axes) {
      Dict d;
      d.insert("dim", Value(a));
      x = emit(unsqueeze ? "unsqueeze" : "squeeze", {x}, d);
    }
  }

  void reduce(const std::string& op) {
    const int64_t r = rank_of(0);
    // ReduceSum takes its axes as an input from opset 13; the others until opset 18.
    const std::vector<int64_t> axes = axes_of(op == "ReduceSum" ? 1 : 99, r);
    if (axes.empty() && attr_int("noop_with_empty_axes", 0) != 0) unsupported("noop_with_empty_axes");
    Dict a;
    a.insert("dim", Value(axes));  // empty: every dim, as ONNX
    a.insert("keepdim", Value(attr_int("keepdims", 1) != 0));
    const char* name = op == "ReduceSum" ? "sum" : op == "ReduceMean" ? "mean" : op == "ReduceMax" ? "amax" : "amin";
    if (op == "ReduceSum" || op == "ReduceMean") a.insert("dtype", Value());
    emit(name, {input(0)}, a);
  }

  // Gather of one constant index drops the axis: select. Rows of a constant matrix picked by
  // computed indices: embedding.
  void gather() {
    const int64_t axis = attr_int("axis", 0);
    const Tensor* idx = constant(1);
    if (idx != nullptr && idx->dim() == 0) {
      Dict a;
      a.insert("dim", Value(axis));
      a.insert("index", Value(idx->to(kInt64).item().to_long()));
      emit("select", {input(0)}, a);
      return;
    }
    const Tensor* w = constant(0);
    if (w != nullptr && w->dim() == 2 && (axis == 0 || axis == -2) && idx == nullptr) {
      Dict a;
      a.insert("padding_idx", Value());
      a.insert("max_norm", Value());
      a.insert("norm_type", Value(2.0));
      emit("embedding", {input(1), input(0)}, a);
      return;
    }
    unsupported("a Gather that is neither one constant index nor rows of a constant matrix");
  }

  void slice() {
    const std::vector<int64_t> starts = constant_ints(1, "starts"), ends = constant_ints(2, "ends");
    const int64_t r = rank_of(0);
    std::vector<int64_t> axes(starts.size()), steps(starts.size(), 1);
    for (size_t k = 0; k < axes.size(); ++k) axes[k] = static_cast<int64_t>(k);
    if (n_->input_size() > 3 && !n_->input(3).empty()) axes = constant_ints(3, "axes");
    if (n_->input_size() > 4 && !n_->input(4).empty()) steps = constant_ints(4, "steps");
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
      unsupported("starts, ends, axes and steps of different lengths");
    }
    int x = input(0);
    for (size_t k = 0; k < starts.size(); ++k) {
      if (steps[k] <= 0) unsupported("a step below 1");
      Dict a;
      a.insert("dim", Value(axes[k] < 0 ? axes[k] + r : axes[k]));
      a.insert("start", Value(starts[k]));
      // An end past any size (INT64_MAX from exporters) is the end of the dim.
      a.insert("end", ends[k] >= (int64_t{1} << 62) ? Value() : Value(ends[k]));
      a.insert("step", Value(steps[k]));
      x = emit("slice", {x}, a);
    }
  }

  // Input k as sizes: a constant int vector, or sizes computed from Shape.
  bool sizes_of(int k, std::vector<SymInt>& out) const {
    if (k >= n_->input_size()) return false;
    if (auto it = sizes_.find(n_->input(k)); it != sizes_.end()) {
      out = it->second;
      return true;
    }
    const Tensor* t = constant(k);
    if (t == nullptr || t->is_floating_point() || t->dim() > 1) return false;
    out.clear();
    for (int64_t v : constant_ints(k, "sizes")) out.push_back(SymInt{0, v});
    return true;
  }
  bool is_sizes(int k) const { return k < n_->input_size() && sizes_.count(n_->input(k)) != 0; }

  // Shape, and Gather, Mul, Add, Concat, Unsqueeze over its sizes; ConstantOfShape of them
  // (a zeros or full node whose size follows the batch). False: not such a node.
  bool size_arithmetic(const std::string& op) {
    const std::string& out = n_->output(0);
    if (op == "Shape") {
      if (attr("start") != nullptr || attr("end") != nullptr) unsupported("Shape with start or end");
      if (g_.var(input(0)).kind == jit::VarKind::Node) infer_dynamic_shapes();
      sizes_[out] = g_.var(input(0)).shape;
      return true;
    }
    std::vector<SymInt> a, b;
    if (op == "Gather" && is_sizes(0)) {
      sizes_of(0, a);
      const std::vector<int64_t> idx = constant_ints(1, "the index of a Gather from a shape");
      std::vector<SymInt> picked;
      for (int64_t i : idx) {
        const int64_t at = i < 0 ? i + static_cast<int64_t>(a.size()) : i;
        if (at < 0 || at >= static_cast<int64_t>(a.size())) unsupported("an index out of range of the shape");
        picked.push_back(a[static_cast<size_t>(at)]);
      }
      sizes_[out] = picked;
      return true;
    }
    if ((op == "Mul" || op == "Add") && (is_sizes(0) || is_sizes(1))) {
      if (!sizes_of(0, a) || !sizes_of(1, b)) unsupported("sizes combined with a value that is not constant");
      if (a.size() != b.size() && a.size() != 1 && b.size() != 1) unsupported("sizes of different lengths");
      std::vector<SymInt> r;
      for (size_t k = 0; k < std::max(a.size(), b.size()); ++k) {
        const SymInt& x = a[a.size() == 1 ? 0 : k];
        const SymInt& y = b[b.size() == 1 ? 0 : k];
        if (op == "Add") {
          r.push_back(SymInt{x.a + y.a, x.b + y.b});
        } else if (x.is_static() || y.is_static()) {
          const SymInt& v = x.is_static() ? y : x;
          const int64_t c = x.is_static() ? x.b : y.b;
          r.push_back(SymInt{v.a * c, v.b * c});
        } else {
          unsupported("a product of two sizes that follow the batch");
        }
      }
      sizes_[out] = r;
      return true;
    }
    bool any_sizes = false;
    for (int k = 0; k < n_->input_size(); ++k) any_sizes = any_sizes || is_sizes(k);
    if ((op == "Concat" && any_sizes) || (op == "Unsqueeze" && is_sizes(0))) {
      std::vector<SymInt> r;
      const int parts = op == "Concat" ? n_->input_size() : 1;
      for (int k = 0; k < parts; ++k) {
        if (!sizes_of(k, a)) unsupported("sizes joined with a value that is not constant");
        r.insert(r.end(), a.begin(), a.end());
      }
      sizes_[out] = r;
      return true;
    }
    if (op == "ConstantOfShape" && sizes_of(0, a)) {
      Tensor value = zeros({1});
      if (const pb::AttributeProto* v = attr("value"); v != nullptr && v->has_t()) value = read_tensor(v->t());
      if (value.numel() != 1) unsupported("a value that is not one number");
      Dict d;
      d.insert("size", Value(std::vector<int64_t>{}));
      d.insert("fill_value", value.dtype() == kBool      ? Value(value.item().to_bool())
                             : value.is_floating_point() ? Value(value.item().to_double())
                                                         : Value(value.item().to_long()));
      d.insert("dtype", Value(jit::dtype_short_name(value.dtype())));
      emit_sized("full", -1, a, d);
      return true;
    }
    return false;
  }

  // An op whose "size"/"shape" attribute is `sizes`: written at B = kShapeBatch, the dims
  // that follow the batch recorded as dynamic (Node::sym).
  void emit_sized(const char* op, int x, const std::vector<SymInt>& sizes, Dict attrs, const char* attr_name = "size") {
    std::vector<int64_t> at;
    std::vector<jit::SymAttr> sym;
    for (size_t k = 0; k < sizes.size(); ++k) {
      at.push_back(sizes[k].eval(kShapeBatch));
      if (!sizes[k].is_static()) sym.push_back(jit::SymAttr{attr_name, static_cast<int64_t>(k), sizes[k]});
    }
    if (!sym.empty()) dynamic_ = true;
    Value* slot = attrs.find(attr_name);
    if (slot != nullptr)
      *slot = Value(at);
    else
      attrs.insert(attr_name, Value(at));
    emit(op, x < 0 ? std::vector<int>{} : std::vector<int>{x}, std::move(attrs));
    g_.nodes.back().sym = std::move(sym);
  }

  // Clip with constant bounds (absent: unbounded) is clamp.
  void clip() {
    Dict a;
    for (int k : {1, 2}) {
      Value bound;
      if (k < n_->input_size() && !n_->input(k).empty()) {
        const Tensor* t = constant(k);
        if (t == nullptr || t->numel() != 1) unsupported("a bound that is not a constant number");
        bound =
            t->is_floating_point() ? Value(t->to(kFloat64).item().to_double()) : Value(t->to(kInt64).item().to_long());
      }
      a.insert(k == 1 ? "min" : "max", bound);
    }
    emit("clamp", {input(0)}, a);
  }

  // Expand broadcasts: a 1 in the target keeps the input's dim (ember's -1).
  void expand() {
    if (is_sizes(1)) {
      std::vector<SymInt> sizes;
      sizes_of(1, sizes);
      emit_sized("expand", input(0), sizes, {});
      return;
    }
    std::vector<int64_t> target = constant_ints(1, "the target shape");
    const int64_t r = rank_of(0);
    const int64_t lead = static_cast<int64_t>(target.size()) - r;
    if (lead < 0) unsupported("a target of lower rank than the input");
    for (int64_t k = lead; k < static_cast<int64_t>(target.size()); ++k) {
      if (target[static_cast<size_t>(k)] == 1) target[static_cast<size_t>(k)] = -1;
    }
    Dict a;
    a.insert("size", Value(target));
    emit("expand", {input(0)}, a);
  }

  void conv_transpose(const pb::NodeProto& n) {
    const Tensor* w = constant(1);
    if (w == nullptr || w->dim() != 4) unsupported("a weight that is not a constant 4-D tensor");
    if (attr("output_shape") != nullptr) unsupported("output_shape (write pads and output_padding)");
    Dict a;
    a.insert("stride", Value(attr_ints("strides", {1, 1})));
    a.insert("padding", Value(symmetric_pads(2)));
    a.insert("output_padding", Value(attr_ints("output_padding", {0, 0})));
    a.insert("groups", Value(attr_int("group", 1)));
    a.insert("dilation", Value(attr_ints("dilations", {1, 1})));
    emit("conv_transpose2d", {input(0), input(1), n.input_size() > 2 ? input(2) : -1}, a);
  }

  // Reshape to a constant target: 0 copies the input's dim; a copied dim that follows the
  // batch is recorded as following it (a dynamic attribute, as tracing records one).
  void reshape(const pb::NodeProto&) {
    if (attr_int("allowzero", 0) != 0) unsupported("allowzero");
    if (is_sizes(1)) {
      std::vector<SymInt> sizes;
      sizes_of(1, sizes);
      emit_sized("reshape", input(0), sizes, {}, "shape");
      return;
    }
    std::vector<int64_t> target = constant_ints(1, "the target shape");
    const jit::Var& x = g_.var(input(0));
    if (x.kind == jit::VarKind::Node) infer_dynamic_shapes();  // the shapes so far
    std::vector<jit::SymAttr> sym;
    for (size_t k = 0; k < target.size(); ++k) {
      if (target[k] != 0) continue;
      if (k >= x.shape.size()) unsupported("a 0 in the target past the input's rank");
      const SymInt& d = x.shape[k];
      target[k] = d.eval(kShapeBatch);
      if (!d.is_static()) sym.push_back(jit::SymAttr{"shape", static_cast<int64_t>(k), d});
    }
    Dict a;
    a.insert("shape", Value(target));
    emit("reshape", {input(0)}, a);
    g_.nodes.back().sym = std::move(sym);
  }

  // Shapes at B = 2 and 3; a dim that differs between them follows the batch. Attributes
  // are written at B = 2 (kShapeBatch), with the dynamic ones recorded in Node::sym.
  void infer_dynamic_shapes() {
    g_.traced_batch = dynamic_ ? kShapeBatch : 0;
    g_.infer_shapes();
    if (!dynamic_) return;
    std::vector<std::vector<SymInt>> at2;
    for (const jit::Var& v : g_.vars) at2.push_back(v.shape);
    g_.traced_batch = 3;
    g_.infer_shapes();
    for (size_t id = 0; id < g_.vars.size(); ++id) {
      jit::Var& v = g_.vars[id];
      if (v.kind != jit::VarKind::Node) continue;
      for (size_t k = 0; k < v.shape.size(); ++k) {
        const int64_t d2 = at2[id][k].b, d3 = v.shape[k].b;
        v.shape[k] = SymInt{d3 - d2, d2 - 2 * (d3 - d2)};
      }
    }
    g_.traced_batch = kShapeBatch;
  }
};

}  // namespace

jit::GraphModule load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK(f.good(), "[onnx::load] cannot open '", path, "'");
  std::stringstream buf;
  buf << f.rdbuf();
  pb::ModelProto model;
  EMBER_CHECK(model.ParseFromString(buf.str()) && model.has_graph(), "[onnx::load] '", path,
              "' is not an ONNX model (protobuf could not parse a ModelProto with a graph)");
  int opset = -1;
  for (const pb::OperatorSetIdProto& os : model.opset_import()) {
    if (os.domain().empty() || os.domain() == "ai.onnx") {
      opset = static_cast<int>(os.version());
    } else if (os.domain() == kContribDomain) {
      // ONNX Runtime's int8 operators (QOperator files); the nodes say which ones.
      EMBER_CHECK(os.version() == 1, "[onnx::load] '", path, "' imports the domain '", kContribDomain, "' version ",
                  os.version(), "; ember reads version 1");
    } else {
      EMBER_ERROR("[onnx::load] '", path, "' imports the operator domain '", os.domain(),
                  "', which ember does not read (it reads the default domain and the int8 operators of '",
                  kContribDomain, "')");
    }
  }
  EMBER_CHECK(opset >= kMinOpset && opset <= kMaxOpset, "[onnx::load] '", path, "' uses opset ", opset,
              "; ember reads opsets ", kMinOpset, " to ", kMaxOpset, " (re-export with one of them)");
  jit::Graph g = Importer(model.graph(), opset).run();
  Value meta = Value::dict();
  meta["producer_name"] = model.producer_name();
  if (!model.producer_version().empty()) meta["producer_version"] = model.producer_version();
  if (!model.doc_string().empty()) meta["doc_string"] = model.doc_string();
  meta["onnx_opset"] = Value(static_cast<int64_t>(opset));
  for (const pb::StringStringEntryProto& p : model.metadata_props()) meta[p.key()] = p.value();
  return jit::GraphModule(std::move(g), std::move(meta));
}

}  // namespace ember::onnx

#else  // no libonnx-dev at configure time

namespace ember::onnx {

jit::GraphModule load(const std::string&) {
  EMBER_ERROR(
      "[onnx::load] this build of ember has no ONNX support; install libonnx-dev "
      "(scripts/setup.sh) and configure again");
}

}  // namespace ember::onnx

#endif
