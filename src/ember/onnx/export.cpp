// ONNX export of jit graphs (export.h, docs/onnx.md).
//
// Note [ONNX export]: each graph node becomes one or a few ONNX nodes; the conversion
// never guesses. A node whose op, attributes or shapes have no exact ONNX form in the
// chosen opset stops the export with an error naming the node, the op and the opset, and
// nothing is written. Shapes come from the graph's vars: a dim that follows the dynamic
// batch is a symbolic dim ("B", "4*B"), and a reshape whose target has such dims copies
// them from the input (0) where the input has the same dim, or infers one of them (-1);
// where that is not enough (two such dims at new places, zeros of size [1, B, H]) the size
// is computed in the graph from the batch size read off an input (Exporter::shape_of).
// The model is built with the protobuf classes generated from onnx.proto (libonnx-dev),
// so the file is exactly what every ONNX reader expects.

#include "ember/onnx/export.h"

#include "ember/core/check.h"
#include "ember/jit/module.h"

#if EMBER_HAVE_ONNX

#include <cmath>
#include <sstream>

#include "ember/jit/ops.h"
#include "ember/onnx/exporter.h"
#include "ember/ops/creation.h"
#include "ember/serialize/atomic_file.h"
#include "ember/serialize/json.h"
#include "ember/serialize/value_json.h"

namespace ember::onnx::detail {

int32_t onnx_dtype(DType dt) {
  switch (dt) {
    case DType::UInt8:
      return pb::TensorProto_DataType_UINT8;
    case DType::Int8:
      return pb::TensorProto_DataType_INT8;
    case DType::Int16:
      return pb::TensorProto_DataType_INT16;
    case DType::Int32:
      return pb::TensorProto_DataType_INT32;
    case DType::Int64:
      return pb::TensorProto_DataType_INT64;
    case DType::Float16:
      return pb::TensorProto_DataType_FLOAT16;
    case DType::Float32:
      return pb::TensorProto_DataType_FLOAT;
    case DType::Float64:
      return pb::TensorProto_DataType_DOUBLE;
    case DType::Bool:
      return pb::TensorProto_DataType_BOOL;
    case DType::BFloat16:
      return pb::TensorProto_DataType_BFLOAT16;
    default:
      break;
  }
  EMBER_ERROR("[onnx::export] a tensor has no dtype (undefined); trace the graph from defined tensors");
}

namespace {
// "B", "4*B", "B+1", "2*B-3": the symbolic dim of a dynamic size.
std::string dim_param(const SymInt& s) {
  std::ostringstream os;
  os << s;  // the graph listing's spelling
  return os.str();
}
}  // namespace

std::vector<int64_t> repeat_to(std::vector<int64_t> v, size_t n, const char* what, const std::string& where) {
  if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  EMBER_CHECK(v.size() == n, "[onnx::export] ", where, ": attribute '", what, "' has ", v.size(), " values for ", n,
              " spatial dims; the graph is malformed (re-trace it)");
  return v;
}

void Exporter::run() {
  name_vars();
  for (const auto& [id, t] : g_.values) init_tensor(var_names_.at(id), t);
  for (int id : g_.inputs) add_value_info(gp_->add_input(), var_names_.at(id), g_.var(id));
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    const jit::Node& n = g_.nodes[k];
    node_ = static_cast<int>(k);
    op_ = n.op;
    node_ptr_ = &n;
    step_.clear();
    std::vector<Operand> in;
    for (int id : n.inputs) in.push_back(operand(id));
    if (n.outputs.size() != 1 || n.op == "chunk" || n.op == "split" || n.op == "unbind") {
      std::vector<Result> outs;
      for (int id : n.outputs) outs.push_back(Result{var_names_.at(id), g_.var(id).dtype, g_.var(id).shape});
      multi(n.op, in, n.attrs, outs);
      continue;
    }
    const jit::Var& ov = g_.var(n.outputs[0]);
    Result out{var_names_.at(n.outputs[0]), ov.dtype, ov.shape};
    if (n.op == "fused_elementwise") {
      fused(in, n.attrs, out);
    } else {
      emit(n.op, in, n.attrs, out);
    }
    if (qop_) qop_follow_grid(in, out);
  }
  for (size_t i = 0; i < g_.outputs.size(); ++i) {
    const int id = g_.outputs[i];
    const std::string& name = output_name(i);
    if (var_names_.at(id) != name) add("Identity", {var_names_.at(id)}, {name});
    add_value_info(gp_->add_output(), name, g_.var(id));
  }
}

std::string Exporter::output_name(size_t i) const {
  return i < g_.output_names.size() && !g_.output_names[i].empty() ? g_.output_names[i] : "output" + std::to_string(i);
}

std::string Exporter::fresh(const std::string& base) {
  std::string name = base;
  for (int n = 1; used_.count(name) != 0; ++n) name = base + "_" + std::to_string(n);
  used_.insert(name);
  return name;
}

// Inputs and outputs keep their names exactly; parameters, constants and intermediates
// get theirs (made unique) afterwards.
void Exporter::name_vars() {
  for (int id : g_.inputs) {
    const std::string& name = g_.var(id).name;
    EMBER_CHECK(used_.insert(name).second, "[onnx::export] two graph inputs are named '", name,
                "'; give the inputs distinct names (TraceOptions::input_names)");
    var_names_[id] = name;
  }
  for (size_t i = 0; i < g_.outputs.size(); ++i) {
    const std::string name = output_name(i);
    EMBER_CHECK(used_.insert(name).second, "[onnx::export] output name '", name,
                "' is also the name of an input or another output; ONNX needs distinct names "
                "(TraceOptions::output_names)");
    const int id = g_.outputs[i];
    if (g_.var(id).kind == jit::VarKind::Node && var_names_.count(id) == 0) var_names_[id] = name;
  }
  // Parameters and constants before intermediates, so that they keep their own names.
  for (bool params : {true, false}) {
    for (size_t id = 0; id < g_.vars.size(); ++id) {
      const int v = static_cast<int>(id);
      const jit::Var& var = g_.vars[id];
      const bool is_value = var.kind == jit::VarKind::Param || var.kind == jit::VarKind::Const;
      if (var_names_.count(v) != 0 || is_value != params) continue;
      // Appended, not "v" + std::to_string(id): GCC 12 -O3 warns falsely on the latter here.
      std::string base = var.name;
      if (!is_value || base.empty()) {
        base = is_value ? "const" : "v";
        base += std::to_string(id);
      }
      // Note [QOperator export]: codes are named "<x>_quantized", their grid "<x>_scale" and "<x>_zero_point".
      if (qop_ && !is_value && var.dtype == kUInt8) base += "_quantized";
      var_names_[v] = fresh(base);
    }
  }
}

Operand Exporter::operand(int id) {
  if (id < 0) return {};
  const jit::Var& v = g_.var(id);
  Operand o{var_names_.at(id), v.dtype, v.shape, nullptr, id};
  if (auto it = g_.values.find(id); it != g_.values.end()) o.value = &it->second;
  return o;
}

std::string Exporter::node_desc() const { return "node " + std::to_string(node_) + " (op '" + op_ + "')" + step_; }

bool Exporter::attr_is_dynamic(const char* attr, int64_t index) const {
  if (node_ptr_ == nullptr || !step_.empty()) return false;
  for (const jit::SymAttr& s : node_ptr_->sym) {
    if (s.attr == attr && (index < 0 || s.index == index || s.index < 0)) return true;
  }
  return false;
}

std::string Exporter::shape_of(const std::vector<SymInt>& shape, const std::string& base) {
  bool dynamic = false;
  for (const SymInt& s : shape) dynamic = dynamic || !s.is_static();
  if (!dynamic) {
    std::vector<int64_t> dims;
    for (const SymInt& s : shape) dims.push_back(s.b);
    return init_i64(base, dims);
  }
  if (batch_.empty()) {
    // B itself is a dim of some graph input; read it from there at run time.
    for (int id : g_.inputs) {
      const std::vector<SymInt>& in = g_.var(id).shape;
      for (size_t k = 0; k < in.size() && batch_.empty(); ++k) {
        if (in[k] != SymInt{1, 0}) continue;
        const std::string shape_name = fresh("input_shape");
        add("Shape", {var_names_.at(id)}, {shape_name});
        batch_ = fresh("batch_size");
        set_int(add("Gather", {shape_name, init_i64("batch_dim", {static_cast<int64_t>(k)})}, {batch_}), "axis", 0);
      }
      if (!batch_.empty()) break;
    }
    if (batch_.empty()) unsupported("a size follows the batch but no graph input has the batch as a dim");
  }
  std::vector<std::string> parts;
  for (size_t k = 0; k < shape.size(); ++k) {
    const SymInt& s = shape[k];
    if (s.is_static()) {
      parts.push_back(init_i64(base + "_dim", {s.b}));
      continue;
    }
    std::string d = batch_;
    if (s.a != 1) {
      const std::string scaled = fresh(base + "_dim");
      add("Mul", {d, init_i64(base + "_scale", {s.a})}, {scaled});
      d = scaled;
    }
    if (s.b != 0) {
      const std::string shifted = fresh(base + "_dim");
      add("Add", {d, init_i64(base + "_offset", {s.b})}, {shifted});
      d = shifted;
    }
    parts.push_back(d);
  }
  const std::string name = fresh(base);
  set_int(add("Concat", parts, {name}), "axis", 0);
  return name;
}

[[noreturn]] void Exporter::unsupported(const std::string& why) const {
  EMBER_ERROR("[onnx::export] node ", node_, " (op '", op_, "')", step_, " has no ONNX form in opset ", opset_, ": ",
              why,
              ". Export a graph without it (docs/onnx.md lists the ops the exporter converts), "
              "or convert that part by hand");
}

void Exporter::add_value_info(pb::ValueInfoProto* vi, const std::string& name, const jit::Var& v) {
  vi->set_name(name);
  pb::TypeProto_Tensor* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_dtype(v.dtype));
  pb::TensorShapeProto* shape = tt->mutable_shape();
  for (const SymInt& s : v.shape) {
    pb::TensorShapeProto_Dimension* d = shape->add_dim();
    if (s.is_static())
      d->set_dim_value(s.b);
    else
      d->set_dim_param(dim_param(s));
  }
}

pb::NodeProto* Exporter::add(const char* type, const std::vector<std::string>& ins,
                             const std::vector<std::string>& outs) {
  pb::NodeProto* n = gp_->add_node();
  n->set_op_type(type);
  // Appended piecewise: GCC 12 at -O3 warns (stringop-overflow, a false positive) on
  // "n" + std::to_string(...) in this file.
  std::string name = "n";
  name += std::to_string(node_);
  name += '_';
  name += type;
  n->set_name(fresh(name));
  for (const std::string& s : ins) n->add_input(s);
  for (const std::string& s : outs) n->add_output(s);
  return n;
}
void Exporter::set_int(pb::NodeProto* n, const char* name, int64_t v) {
  pb::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto_AttributeType_INT);
  a->set_i(v);
}
void Exporter::set_ints(pb::NodeProto* n, const char* name, const std::vector<int64_t>& v) {
  pb::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto_AttributeType_INTS);
  for (int64_t x : v) a->add_ints(x);
}
void Exporter::set_float(pb::NodeProto* n, const char* name, double v) {
  pb::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto_AttributeType_FLOAT);
  a->set_f(static_cast<float>(v));
}

// ---- initializers ----
void Exporter::init_tensor(const std::string& name, const Tensor& value) {
  const Tensor t = value.contiguous();
  pb::TensorProto* p = gp_->add_initializer();
  p->set_name(name);
  p->set_data_type(onnx_dtype(t.dtype()));
  for (int64_t k = 0; k < t.dim(); ++k) p->add_dims(t.size(k));
  p->set_raw_data(static_cast<const char*>(t.data_ptr()), t.nbytes());  // little-endian hosts
}
std::string Exporter::init_i64(const std::string& base, const std::vector<int64_t>& v) {
  const std::string name = fresh(base);
  pb::TensorProto* p = gp_->add_initializer();
  p->set_name(name);
  p->set_data_type(pb::TensorProto_DataType_INT64);
  p->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) p->add_int64_data(x);
  return name;
}
// A rank-0 initializer of dtype dt holding the number v.
std::string Exporter::init_scalar(const std::string& base, DType dt, double v) {
  const std::string name = fresh(base);
  pb::TensorProto* p = gp_->add_initializer();
  p->set_name(name);
  p->set_data_type(onnx_dtype(dt));
  switch (dt) {
    case DType::Float32:
      p->add_float_data(static_cast<float>(v));
      break;
    case DType::Float64:
      p->add_double_data(v);
      break;
    case DType::Int64:
      p->add_int64_data(static_cast<int64_t>(v));
      break;
    case DType::Int32:
    case DType::Int16:
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool:
      p->add_int32_data(static_cast<int32_t>(v));
      break;
    default:
      unsupported("a scalar operand of dtype " + jit::dtype_short_name(dt) + " (use float32)");
  }
  return name;
}
std::string Exporter::init_ones(const std::string& base, DType dt, const std::vector<int64_t>& dims) {
  Tensor t = ones(dims, TensorOptions(dt));
  const std::string name = fresh(base);
  init_tensor(name, t);
  return name;
}

std::string Exporter::cast(const Operand& o, DType to) {
  if (o.dtype == to) return o.name;
  const std::string name = fresh(o.name + "_" + jit::dtype_short_name(to));
  set_int(add("Cast", {o.name}, {name}), "to", onnx_dtype(to));
  return name;
}

// Static dims of a shape (for sizes the exporter needs to know: channels, kernels).
std::vector<int64_t> Exporter::static_dims(const std::vector<SymInt>& shape, const char* what) const {
  std::vector<int64_t> d;
  for (const SymInt& s : shape) {
    if (!s.is_static()) unsupported(std::string("the ") + what + " has a dim that follows the batch");
    d.push_back(s.b);
  }
  return d;
}

// ---- ops ----
void Exporter::emit(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  auto need_inputs = [&](size_t n) {
    if (in.size() < n || !in[0].present()) {
      unsupported("it has " + std::to_string(in.size()) + " tensor inputs, fewer than the op needs");
    }
  };
  static const std::map<std::string, const char*, std::less<>> kUnary = {
      {"relu", "Relu"},   {"sigmoid", "Sigmoid"}, {"tanh", "Tanh"}, {"exp", "Exp"},
      {"neg", "Neg"},     {"abs", "Abs"},         {"sqrt", "Sqrt"}, {"log", "Log"},
      {"erf", "Erf"},     {"sin", "Sin"},         {"cos", "Cos"},   {"reciprocal", "Reciprocal"},
      {"floor", "Floor"}, {"ceil", "Ceil"},       {"sign", "Sign"}};
  static const std::map<std::string, const char*, std::less<>> kBinary = {
      {"add", "Add"}, {"sub", "Sub"},     {"mul", "Mul"},    {"div", "Div"},
      {"pow", "Pow"}, {"maximum", "Max"}, {"minimum", "Min"}};
  if (auto it = kUnary.find(op); it != kUnary.end()) {
    need_inputs(1);
    if (!attrs.empty()) unsupported("attribute '" + attrs.begin()->key() + "' is not converted");
    add(it->second, {cast(in[0], out.dtype)}, {out.name});
  } else if (kBinary.count(op) != 0) {
    binary(kBinary.at(op), in, attrs, out);
  } else if (emit_quantized(op, in, attrs, out)) {
    // quantize_per_tensor, quantized_conv2d, ...: QuantizeLinear / DequantizeLinear around float ops
  } else if (op == "conv2d" || op == "conv1d") {
    conv(in, attrs, out);
  } else if (op == "linear") {
    linear(in, attrs, out);
  } else if (op == "matmul" || op == "mm" || op == "bmm") {
    need_inputs(2);
    add("MatMul", {in[0].name, in[1].name}, {out.name});
  } else if (op == "max_pool2d" || op == "avg_pool2d") {
    pool(op, in, attrs, out);
  } else if (op == "adaptive_avg_pool2d") {
    adaptive_avg_pool(in, attrs, out);
  } else if (op == "batch_norm") {
    batch_norm(in, attrs, out);
  } else if (op == "layer_norm") {
    layer_norm(in, attrs, out);
  } else if (op == "softmax" || op == "log_softmax") {
    need_inputs(1);
    std::string x = in[0].name;
    if (in[0].dtype != out.dtype) x = cast(in[0], out.dtype);
    set_int(add(op == "softmax" ? "Softmax" : "LogSoftmax", {x}, {out.name}), "axis", jit::attr_int(attrs, "dim"));
  } else if (op == "flatten") {
    need_inputs(1);
    const int64_t r = static_cast<int64_t>(in[0].shape.size());
    int64_t s = jit::attr_int(attrs, "start_dim", 0), e = jit::attr_int(attrs, "end_dim", -1);
    if (s < 0) s += r;
    if (e < 0) e += r;
    if (r >= 2 && s == 1 && e == r - 1) {
      set_int(add("Flatten", {in[0].name}, {out.name}), "axis", 1);
    } else {
      reshape(in[0], out);
    }
  } else if (op == "view" || op == "reshape" || op == "unflatten" || op == "squeeze" || op == "unsqueeze") {
    need_inputs(1);
    reshape(in[0], out);
  } else if (op == "transpose" || op == "permute" || op == "t") {
    need_inputs(1);
    const int64_t r = static_cast<int64_t>(in[0].shape.size());
    std::vector<int64_t> perm(static_cast<size_t>(r));
    for (int64_t k = 0; k < r; ++k) perm[static_cast<size_t>(k)] = k;
    if (op == "permute") {
      perm = jit::attr_ints(attrs, "dims");
      if (static_cast<int64_t>(perm.size()) != r) unsupported("'dims' does not match the input's rank");
      for (int64_t& p : perm) p = p < 0 ? p + r : p;
    } else if (op == "transpose") {
      int64_t a = jit::attr_int(attrs, "dim0"), b = jit::attr_int(attrs, "dim1");
      a = a < 0 ? a + r : a;
      b = b < 0 ? b + r : b;
      std::swap(perm.at(static_cast<size_t>(a)), perm.at(static_cast<size_t>(b)));
    } else if (r == 2) {
      std::swap(perm[0], perm[1]);
    }
    set_ints(add("Transpose", {in[0].name}, {out.name}), "perm", perm);
  } else if (op == "contiguous" || op == "clone" || (op == "dropout" && !jit::attr_bool(attrs, "training", true))) {
    need_inputs(1);
    add("Identity", {in[0].name}, {out.name});
  } else if (op == "to") {
    need_inputs(1);
    if (in[0].dtype == out.dtype)
      add("Identity", {in[0].name}, {out.name});
    else
      set_int(add("Cast", {in[0].name}, {out.name}), "to", onnx_dtype(out.dtype));
  } else if (op == "dropout") {
    unsupported("dropout in training mode draws random masks; call model->eval() before tracing");
  } else if (!emit_more(op, in, attrs, out)) {
    unsupported("the exporter has no conversion for it");
  }
}

void Exporter::binary(const char* type, const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  if (in.empty() || !in[0].present()) unsupported("it has no tensor input");
  if (attrs.contains("rounding_mode")) unsupported("div with rounding_mode has no exact ONNX form");
  const DType dt = out.dtype;
  double alpha = 1.0;
  if (const Value* a = attrs.find("alpha"); a != nullptr && !a->is_none()) alpha = a->to_double();
  std::string a, b;
  if (in.size() == 2) {
    a = cast(in[0], dt);
    b = cast(in[1], dt);
    if (alpha != 1.0) {
      const std::string scaled = fresh(out.name + "_alpha");
      add("Mul", {b, init_scalar(out.name + "_alpha_value", dt, alpha)}, {scaled});
      b = scaled;
    }
  } else if (const Value* other = attrs.find("other"); other != nullptr) {
    a = cast(in[0], dt);
    b = init_scalar(out.name + "_other", dt, other->to_double() * alpha);
  } else if (const Value* self = attrs.find("self"); self != nullptr) {
    a = init_scalar(out.name + "_self", dt, self->to_double());
    b = cast(in[0], dt);
  } else {
    unsupported("it has one tensor input and neither an 'other' nor a 'self' attribute");
  }
  add(type, {a, b}, {out.name});
}

void Exporter::conv(const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  if (in.size() < 2 || !in[0].present() || !in[1].present()) unsupported("it lacks its input or weight");
  const std::vector<int64_t> w = static_dims(in[1].shape, "weight");
  if (w.size() < 3) unsupported("the weight has rank " + std::to_string(w.size()));
  const size_t n = w.size() - 2;
  const std::string where = node_desc();
  const std::vector<int64_t> kernel(w.begin() + 2, w.end());
  const std::vector<int64_t> stride = repeat_to(jit::attr_ints(attrs, "stride"), n, "stride", where);
  const std::vector<int64_t> dilation = repeat_to(jit::attr_ints(attrs, "dilation"), n, "dilation", where);
  std::vector<int64_t> pads(2 * n, 0);
  const Value* pad = attrs.find("padding");
  if (pad != nullptr && pad->is_string()) {
    if (pad->to_string() == "same") {
      for (size_t k = 0; k < n; ++k) {  // the extra row (odd total) goes at the end, as eager does
        const int64_t total = dilation[k] * (kernel[k] - 1);
        pads[k] = total / 2;
        pads[k + n] = total - total / 2;
      }
    } else if (pad->to_string() != "valid") {
      unsupported("padding '" + pad->to_string() + "' is neither 'same' nor 'valid'");
    }
  } else if (pad != nullptr) {
    const std::vector<int64_t> p = repeat_to(pad->to_int_list(), n, "padding", where);
    for (size_t k = 0; k < n; ++k) pads[k] = pads[k + n] = p[k];
  }
  const std::string act = jit::attr_string(attrs, "activation", "");
  if (!act.empty() && act != "relu") unsupported("activation '" + act + "' is not converted");
  const std::string y = act.empty() ? out.name : fresh(out.name + "_conv");
  std::vector<std::string> ins{in[0].name, in[1].name};
  if (in.size() > 2 && in[2].present()) ins.push_back(in[2].name);
  pb::NodeProto* c = add("Conv", ins, {y});
  set_ints(c, "kernel_shape", kernel);
  set_ints(c, "strides", stride);
  set_ints(c, "pads", pads);
  set_ints(c, "dilations", dilation);
  set_int(c, "group", jit::attr_int(attrs, "groups", 1));
  if (!act.empty()) add("Relu", {y}, {out.name});
}

void Exporter::linear(const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  if (in.size() < 2 || !in[0].present() || !in[1].present()) unsupported("it lacks its input or weight");
  const Operand& x = in[0];
  const Operand& w = in[1];
  const bool has_bias = in.size() > 2 && in[2].present();
  const std::string act = jit::attr_string(attrs, "activation", "");
  if (!act.empty() && act != "relu") unsupported("activation '" + act + "' is not converted");
  const std::string y = act.empty() ? out.name : fresh(out.name + "_linear");
  if (x.shape.size() == 2 && w.shape.size() == 2) {
    std::vector<std::string> ins{x.name, w.name};
    if (has_bias) ins.push_back(in[2].name);
    set_int(add("Gemm", ins, {y}), "transB", 1);
  } else {
    // x @ w^T (+ b): a transposed copy of a constant weight, else a Transpose node.
    std::string wt;
    if (auto it = transposed_.find(w.var); it != transposed_.end()) {
      wt = it->second;
    } else if (w.value != nullptr && w.value->dim() == 2) {
      wt = fresh(w.name + ".T");
      init_tensor(wt, w.value->t());
      transposed_[w.var] = wt;
    } else {
      wt = fresh(w.name + "_T");
      set_ints(add("Transpose", {w.name}, {wt}), "perm", {1, 0});
    }
    const std::string mm = has_bias ? fresh(out.name + "_matmul") : y;
    add("MatMul", {x.name, wt}, {mm});
    if (has_bias) add("Add", {mm, in[2].name}, {y});
  }
  if (!act.empty()) add("Relu", {y}, {out.name});
}

void Exporter::pool(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  if (in.empty() || !in[0].present()) unsupported("it has no input");
  if (in[0].shape.size() != 4) unsupported("the input is not 4-D (N, C, H, W)");
  const std::string where = node_desc();
  const std::vector<int64_t> kernel = repeat_to(jit::attr_ints(attrs, "kernel_size"), 2, "kernel_size", where);
  std::vector<int64_t> stride = jit::attr_ints(attrs, "stride");
  stride = stride.empty() ? kernel : repeat_to(stride, 2, "stride", where);
  const std::vector<int64_t> padding = repeat_to(jit::attr_ints(attrs, "padding"), 2, "padding", where);
  std::vector<int64_t> dilation{1, 1};
  if (attrs.contains("dilation")) dilation = repeat_to(jit::attr_ints(attrs, "dilation"), 2, "dilation", where);
  const bool ceil_mode = jit::attr_bool(attrs, "ceil_mode", false);
  if (ceil_mode) {
    // Eager drops a last window that would start in the right padding; ONNX (before
    // opset 19) does not, so the two agree only where no such window arises.
    for (size_t k = 0; k < 2; ++k) {
      const SymInt& s = in[0].shape[2 + k];
      if (!s.is_static()) unsupported("ceil_mode with a spatial dim that follows the batch");
      const int64_t span = s.b + 2 * padding[k] - dilation[k] * (kernel[k] - 1) - 1;
      const int64_t outn = (span + stride[k] - 1) / stride[k] + 1;
      if ((outn - 1) * stride[k] >= s.b + padding[k]) {
        unsupported("ceil_mode where the last window starts in the padding (ONNX and eager disagree)");
      }
    }
  }
  pb::NodeProto* p;
  if (op == "max_pool2d") {
    p = add("MaxPool", {in[0].name}, {out.name});
    set_ints(p, "dilations", dilation);
  } else {
    if (const Value* d = attrs.find("divisor_override"); d != nullptr && !d->is_none()) {
      unsupported("avg_pool2d with divisor_override");
    }
    p = add("AveragePool", {in[0].name}, {out.name});
    set_int(p, "count_include_pad", jit::attr_bool(attrs, "count_include_pad", true) ? 1 : 0);
  }
  set_ints(p, "kernel_shape", kernel);
  set_ints(p, "strides", stride);
  set_ints(p, "pads", {padding[0], padding[1], padding[0], padding[1]});
  set_int(p, "ceil_mode", ceil_mode ? 1 : 0);
}

void Exporter::adaptive_avg_pool(const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  if (in.empty() || !in[0].present() || in[0].shape.size() != 4) unsupported("the input is not 4-D (N, C, H, W)");
  const std::string where = node_desc();
  const std::vector<int64_t> size = repeat_to(jit::attr_ints(attrs, "output_size"), 2, "output_size", where);
  if (size[0] == 1 && size[1] == 1) {
    add("GlobalAveragePool", {in[0].name}, {out.name});
    return;
  }
  // Where each output cell averages an equal, non-overlapping window it is an AveragePool.
  std::vector<int64_t> kernel;
  for (size_t k = 0; k < 2; ++k) {
    const SymInt& s = in[0].shape[2 + k];
    if (s.is_static() && size[k] > 0 && s.b % size[k] == 0) kernel.push_back(s.b / size[k]);
  }
  if (kernel.size() == 2) {
    pb::NodeProto* p = add("AveragePool", {in[0].name}, {out.name});
    set_ints(p, "kernel_shape", kernel);
    set_ints(p, "strides", kernel);
    return;
  }
  unsupported("adaptive_avg_pool2d to " + std::to_string(size[0]) + "x" + std::to_string(size[1]) +
              " from a size it does not divide (converted: 1x1, and sizes that divide the input's)");
}

void Exporter::batch_norm(const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  if (jit::attr_bool(attrs, "training", false)) {
    unsupported("batch_norm in training mode (batch statistics); call model->eval() before tracing");
  }
  if (in.size() < 3 || !in[0].present() || !in[1].present() || !in[2].present()) {
    unsupported("batch_norm without running statistics");
  }
  const std::vector<int64_t> c = static_dims(in[1].shape, "running mean");
  const std::string scale =
      in.size() > 3 && in[3].present() ? in[3].name : init_ones(out.name + "_scale", in[1].dtype, c);
  std::string bias;
  if (in.size() > 4 && in[4].present()) {
    bias = in[4].name;
  } else {
    bias = fresh(out.name + "_bias");
    init_tensor(bias, zeros(c, TensorOptions(in[1].dtype)));
  }
  pb::NodeProto* n = add("BatchNormalization", {in[0].name, scale, bias, in[1].name, in[2].name}, {out.name});
  set_float(n, "epsilon", jit::attr_double(attrs, "eps", 1e-5));
}

void Exporter::layer_norm(const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  if (in.empty() || !in[0].present()) unsupported("it has no input");
  const std::vector<int64_t> shape = jit::attr_ints(attrs, "normalized_shape");
  const int64_t r = static_cast<int64_t>(in[0].shape.size());
  const int64_t k = static_cast<int64_t>(shape.size());
  if (k == 0 || k > r) unsupported("normalized_shape does not fit the input's rank");
  const double eps = jit::attr_double(attrs, "eps", 1e-5);
  const bool has_w = in.size() > 1 && in[1].present();
  const bool has_b = in.size() > 2 && in[2].present();
  if (opset_ >= 17) {
    std::vector<std::string> ins{in[0].name, has_w ? in[1].name : init_ones(out.name + "_scale", in[0].dtype, shape)};
    if (has_b) ins.push_back(in[2].name);
    pb::NodeProto* n = add("LayerNormalization", ins, {out.name});
    set_int(n, "axis", r - k);
    set_float(n, "epsilon", eps);
    return;
  }
  // LayerNormalization arrives in opset 17: (x - mean) / sqrt(var + eps) * w + b.
  std::vector<int64_t> axes;
  for (int64_t d = r - k; d < r; ++d) axes.push_back(d);
  const std::string& x = in[0].name;
  const std::string mean = fresh(out.name + "_mean");
  set_ints(add("ReduceMean", {x}, {mean}), "axes", axes);
  const std::string d = fresh(out.name + "_centered");
  add("Sub", {x, mean}, {d});
  const std::string sq = fresh(out.name + "_squared");
  add("Mul", {d, d}, {sq});
  const std::string var = fresh(out.name + "_var");
  set_ints(add("ReduceMean", {sq}, {var}), "axes", axes);
  const std::string ve = fresh(out.name + "_var_eps");
  add("Add", {var, init_scalar(out.name + "_eps", in[0].dtype, eps)}, {ve});
  const std::string sd = fresh(out.name + "_std");
  add("Sqrt", {ve}, {sd});
  const std::string normed = has_w || has_b ? fresh(out.name + "_normed") : out.name;
  add("Div", {d, sd}, {normed});
  std::string y = normed;
  if (has_w) {
    const std::string scaled = has_b ? fresh(out.name + "_scaled") : out.name;
    add("Mul", {y, in[1].name}, {scaled});
    y = scaled;
  }
  if (has_b) add("Add", {y, in[2].name}, {out.name});
}

// A reshape to out's shape: static dims as they are, dims that follow the batch copied
// from the input (0) where the input has the same dim at that position, else inferred
// (-1) when there is one such dim, else the whole target computed (shape_of).
void Exporter::reshape(const Operand& x, const Result& out) {
  std::vector<int64_t> target;
  int inferred = 0;
  for (size_t k = 0; k < out.shape.size(); ++k) {
    const SymInt& s = out.shape[k];
    if (s.is_static()) {
      if (s.b == 0) unsupported("a reshape to a shape with a zero-size dim");
      target.push_back(s.b);
    } else if (k < x.shape.size() && x.shape[k] == s) {
      target.push_back(0);
    } else {
      ++inferred;
      target.push_back(-1);
    }
  }
  // ONNX infers at most one dim (-1); with more, the target is computed from the batch size.
  const std::string shape =
      inferred > 1 ? shape_of(out.shape, out.name + "_shape") : init_i64(out.name + "_shape", target);
  add("Reshape", {x.name, shape}, {out.name});
}

// A fused element-wise chain: each step becomes its own ONNX node(s).
void Exporter::fused(const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  const Value* ops_v = attrs.find("ops");
  const Value* args_v = attrs.find("args");
  const Value* attrs_v = attrs.find("attrs");
  if (ops_v == nullptr || args_v == nullptr || attrs_v == nullptr) unsupported("its program is missing");
  const Value::List& ops = ops_v->to_list();
  const Value::List& args = args_v->to_list();
  const Value::List& step_attrs = attrs_v->to_list();
  if (ops.empty() || args.size() != ops.size() || step_attrs.size() != ops.size()) {
    unsupported("its program is malformed");
  }
  std::vector<Operand> results;
  for (size_t s = 0; s < ops.size(); ++s) {
    const std::string& op = ops[s].to_string();
    step_ = " step " + std::to_string(s) + " ('" + op + "')";
    std::vector<Operand> operands;
    for (int64_t k : args[s].to_int_list()) {
      if (k >= 0 && k < static_cast<int64_t>(in.size()))
        operands.push_back(in[static_cast<size_t>(k)]);
      else if (k < 0 && -1 - k < static_cast<int64_t>(results.size()))
        operands.push_back(results[static_cast<size_t>(-1 - k)]);
      else
        unsupported("operand " + std::to_string(k) + " does not exist");
    }
    const bool last = s + 1 == ops.size();
    Result r{last ? out.name : fresh(out.name + "_step" + std::to_string(s)), kFloat32, out.shape};
    emit(op, operands, step_attrs[s].to_dict(), r);
    results.push_back(Operand{r.name, r.dtype, r.shape, nullptr, -1});
  }
  step_.clear();
}
}  // namespace ember::onnx::detail

namespace ember::onnx {

namespace {

namespace pb = ::onnx;

pb::ModelProto build(const jit::GraphModule& m, const ExportOptions& opt) {
  EMBER_CHECK(opt.opset >= kMinOpset && opt.opset <= kMaxOpset, "[onnx::export] opset ", opt.opset,
              " is not supported; the exporter writes opsets ", kMinOpset, " to ", kMaxOpset,
              " (ExportOptions::opset, default ", kMaxOpset, ")");
  EMBER_CHECK(m.defined(), "[onnx::export] the GraphModule is empty; trace or load a graph first");
  const jit::Graph& g = m.graph();
  const Value& meta = m.metadata();
  auto meta_string = [&](const char* key) -> std::string {
    if (!meta.is_dict()) return "";
    const Value* v = meta.to_dict().find(key);
    return v != nullptr && v->is_string() ? v->to_string() : "";
  };
  pb::ModelProto model;
  // IR version 7 is what ONNX 1.8-1.9 (opsets 13-14) wrote; 8 from ONNX 1.10 (opset 15).
  model.set_ir_version(opt.opset >= 15 ? 8 : 7);
  model.set_producer_name("ember");
  model.set_producer_version(EMBER_VERSION_STRING);
  pb::OperatorSetIdProto* os = model.add_opset_import();
  os->set_domain("");
  os->set_version(opt.opset);
  std::string doc = opt.doc_string;
  if (doc.empty()) doc = meta_string("doc_string");
  if (doc.empty()) doc = meta_string("description");
  if (doc.empty()) doc = "Exported by ember from a jit graph of " + std::to_string(g.nodes.size()) + " nodes";
  model.set_doc_string(doc);
  if (meta.is_dict()) {
    for (const auto& it : meta.to_dict()) {
      pb::StringStringEntryProto* p = model.add_metadata_props();
      p->set_key(it.key());
      if (it.value().is_string()) {
        p->set_value(it.value().to_string());
      } else {
        std::string text;
        append_value_json(text, it.value());  // tensors as a short description
        p->set_value(text);
      }
    }
  }
  pb::GraphProto* gp = model.mutable_graph();
  std::string name = opt.graph_name;
  if (name.empty()) name = meta_string("model_name");
  gp->set_name(name.empty() ? "ember_graph" : name);
  detail::Exporter exporter(g, opt.opset, gp, opt.quant_format == QuantFormat::QOperator);
  exporter.run();
  if (exporter.uses_contrib_domain()) {
    pb::OperatorSetIdProto* ms = model.add_opset_import();
    ms->set_domain("com.microsoft");
    ms->set_version(1);
  }
  return model;
}

}  // namespace

bool available() { return true; }

std::string export_to_bytes(const jit::GraphModule& g, const ExportOptions& opt) {
  const pb::ModelProto model = build(g, opt);
  std::string bytes;
  EMBER_CHECK(model.SerializeToString(&bytes), "[onnx::export] protobuf could not serialize the model (",
              model.ByteSizeLong(), " bytes; ONNX files are limited to 2 GiB: export the weights separately)");
  return bytes;
}

void export_model(const jit::GraphModule& g, const std::string& path, const ExportOptions& opt) {
  const std::string bytes = export_to_bytes(g, opt);
  ember::detail::AtomicFile file(path);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

}  // namespace ember::onnx

#else  // no libonnx-dev at configure time

namespace ember::onnx {

namespace {
[[noreturn]] void no_onnx() {
  EMBER_ERROR(
      "[onnx::export] this build of ember has no ONNX support; install libonnx-dev "
      "(scripts/setup.sh) and configure again");
}
}  // namespace

bool available() { return false; }
std::string export_to_bytes(const jit::GraphModule&, const ExportOptions&) { no_onnx(); }
void export_model(const jit::GraphModule&, const std::string&, const ExportOptions&) { no_onnx(); }

}  // namespace ember::onnx

#endif
