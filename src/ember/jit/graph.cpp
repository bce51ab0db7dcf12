#include "ember/jit/graph.h"

#include <algorithm>
#include <ostream>
#include <set>
#include <sstream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/jit/module.h"
#include "ember/jit/ops.h"
#include "ember/ops/creation.h"

namespace ember::jit {

std::ostream& operator<<(std::ostream& os, const SymInt& s) {
  if (s.a == 0) return os << s.b;
  if (s.a == 1) os << "B";
  else if (s.a == -1) os << "-B";
  else os << s.a << "*B";
  if (s.b > 0) os << "+" << s.b;
  else if (s.b < 0) os << s.b;
  return os;
}

std::vector<int64_t> Var::sizes(int64_t batch) const {
  std::vector<int64_t> out;
  out.reserve(shape.size());
  for (const SymInt& s : shape) out.push_back(s.eval(batch));
  return out;
}

bool Var::has_dynamic_dim() const {
  return std::any_of(shape.begin(), shape.end(), [](const SymInt& s) { return !s.is_static(); });
}

Value::Dict Node::attrs_at(int64_t batch) const {
  Value::Dict out = attrs;
  for (const SymAttr& s : sym) {
    Value* v = out.find(s.attr);
    EMBER_CHECK(v != nullptr, "[jit] node '", op, "' has a dynamic attribute '", s.attr, "' that it does not hold");
    if (s.index < 0) {
      *v = Value(s.value.eval(batch));
    } else {
      EMBER_CHECK(v->is_list() && s.index < static_cast<int64_t>(v->size()), "[jit] node '", op,
                  "': dynamic element ", s.index, " of attribute '", s.attr, "' is out of range");
      v->to_list()[static_cast<size_t>(s.index)] = Value(s.value.eval(batch));
    }
  }
  return out;
}

namespace {

std::vector<SymInt> static_shape(IntArrayRef sizes) {
  std::vector<SymInt> out;
  for (int64_t s : sizes) out.push_back({0, s});
  return out;
}

void print_value(std::ostream& os, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None: os << "None"; break;
    case Value::Kind::Bool: os << (v.to_bool() ? "True" : "False"); break;
    case Value::Kind::Int: os << v.to_int(); break;
    case Value::Kind::Double: {
      std::ostringstream s;
      s.precision(8);
      s << v.to_double();
      std::string str = s.str();
      if (str.find_first_of(".einf") == std::string::npos) str += ".0";
      os << str;
      break;
    }
    case Value::Kind::String: os << '"' << v.to_string() << '"'; break;
    case Value::Kind::Tensor: os << "<tensor>"; break;
    case Value::Kind::List: {
      os << "[";
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) os << ", ";
        print_value(os, v.to_list()[i]);
      }
      os << "]";
      break;
    }
    case Value::Kind::Dict: {
      os << "{";
      bool first = true;
      for (const auto& it : v.to_dict()) {
        if (!first) os << ", ";
        first = false;
        os << it.key() << ": ";
        print_value(os, it.value());
      }
      os << "}";
      break;
    }
  }
}

}  // namespace

std::string dtype_short_name(DType dt) {
  switch (dt) {
    case kUInt8: return "u8";
    case kInt8: return "i8";
    case kInt16: return "i16";
    case kInt32: return "i32";
    case kInt64: return "i64";
    case kFloat16: return "f16";
    case kFloat32: return "f32";
    case kFloat64: return "f64";
    case kBool: return "bool";
    case kBFloat16: return "bf16";
    default: return "undefined";
  }
}

DType dtype_from_short_name(const std::string& name) {
  for (DType dt : {kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kFloat32, kFloat64, kBool, kBFloat16}) {
    if (name == dtype_short_name(dt) || name == dtype_name(dt)) return dt;
  }
  EMBER_ERROR("[jit] unknown dtype name '", name, "'; expected one of u8, i8, i16, i32, i64, f16, f32, f64, bool, bf16");
}

int Graph::add_input(std::string name, DType dtype, std::vector<SymInt> shape) {
  Var v;
  v.name = std::move(name);
  v.kind = VarKind::Input;
  v.dtype = dtype;
  v.shape = std::move(shape);
  vars.push_back(std::move(v));
  const int id = static_cast<int>(vars.size()) - 1;
  inputs.push_back(id);
  return id;
}

int Graph::add_value(VarKind kind, std::string name, Tensor value) {
  EMBER_CHECK(value.defined(), "[jit] ", kind == VarKind::Param ? "parameter '" + name + "'" : std::string("constant"),
              " is an undefined tensor");
  Var v;
  v.name = std::move(name);
  v.kind = kind;
  v.dtype = value.dtype();
  v.shape = static_shape(value.sizes());
  vars.push_back(std::move(v));
  const int id = static_cast<int>(vars.size()) - 1;
  values[id] = std::move(value);
  return id;
}

int Graph::add_param(std::string name, Tensor value) { return add_value(VarKind::Param, std::move(name), std::move(value)); }
int Graph::add_const(Tensor value) { return add_value(VarKind::Const, "", std::move(value)); }

std::vector<int> Graph::add_node(std::string op, std::vector<int> in, Value::Dict attrs, int num_outputs) {
  Node n;
  n.op = std::move(op);
  n.inputs = std::move(in);
  n.attrs = std::move(attrs);
  const int index = static_cast<int>(nodes.size());
  for (int i = 0; i < num_outputs; ++i) {
    Var v;
    v.producer = index;
    vars.push_back(std::move(v));
    n.outputs.push_back(static_cast<int>(vars.size()) - 1);
  }
  nodes.push_back(std::move(n));
  return nodes.back().outputs;
}

void Graph::infer_shapes() {
  const int64_t batch = traced_batch > 0 ? traced_batch : 2;
  std::vector<Tensor> slots(vars.size());
  for (const auto& [id, t] : values) slots[static_cast<size_t>(id)] = t;
  for (int id : inputs) slots[static_cast<size_t>(id)] = zeros(var(id).sizes(batch), TensorOptions(var(id).dtype));
  NoGradGuard no_grad;
  for (const Node& n : nodes) {
    const OpDef* def = find_op(n.op);
    EMBER_CHECK(def != nullptr, "[jit::infer_shapes] unknown op '", n.op, "'");
    std::vector<Tensor> in;
    for (int i : n.inputs) in.push_back(i < 0 ? Tensor() : slots[static_cast<size_t>(i)]);
    std::vector<Tensor> out = call_op(*def, in, n.attrs_at(batch));
    EMBER_CHECK(out.size() == n.outputs.size(), "[jit::infer_shapes] op '", n.op, "' returned ", out.size(),
                " tensors, the node has ", n.outputs.size(), " outputs");
    for (size_t k = 0; k < out.size(); ++k) {
      Var& v = vars[static_cast<size_t>(n.outputs[k])];
      v.dtype = out[k].dtype();
      v.shape = static_shape(out[k].sizes());
      slots[static_cast<size_t>(n.outputs[k])] = out[k];
    }
  }
}

void Graph::verify_shapes() const {
  verify();
  const int64_t b0 = traced_batch > 0 ? traced_batch : 2;
  const bool dynamic = std::any_of(vars.begin(), vars.end(), [](const Var& v) { return v.has_dynamic_dim(); });
  NoGradGuard no_grad;
  for (int64_t batch : dynamic ? std::vector<int64_t>{b0, b0 + 1} : std::vector<int64_t>{b0}) {
    std::vector<Tensor> slots(vars.size());
    for (const auto& [id, t] : values) slots[static_cast<size_t>(id)] = t;
    for (int id : inputs) slots[static_cast<size_t>(id)] = zeros(var(id).sizes(batch), TensorOptions(var(id).dtype));
    for (size_t k = 0; k < nodes.size(); ++k) {
      const Node& n = nodes[k];
      std::vector<Tensor> in;
      for (int i : n.inputs) in.push_back(i < 0 ? Tensor() : slots[static_cast<size_t>(i)]);
      std::vector<Tensor> out = call_op(*find_op(n.op), in, n.attrs_at(batch));
      EMBER_CHECK(out.size() == n.outputs.size(), "[jit::verify] node ", k, " (", n.op, ") returned ", out.size(),
                  " tensors for ", n.outputs.size(), " outputs");
      for (size_t o = 0; o < out.size(); ++o) {
        const Var& v = var(n.outputs[o]);
        EMBER_CHECK(out[o].dtype() == v.dtype && out[o].sizes().vec() == v.sizes(batch), "[jit::verify] node ", k,
                    " (", n.op, ") output ", var_name(n.outputs[o]), " is declared ", dtype_short_name(v.dtype),
                    IntArrayRef(v.sizes(batch)), " at B = ", batch, " but computes ", dtype_short_name(out[o].dtype()),
                    out[o].sizes());
        slots[static_cast<size_t>(n.outputs[o])] = out[o];
      }
    }
  }
}

std::string Graph::var_name(int id) const {
  if (id < 0) return "None";
  const Var& v = var(id);
  std::string out(1, '%');
  out += v.name.empty() ? std::to_string(id) : v.name;
  return out;
}

std::vector<int> Graph::last_uses() const {
  std::vector<int> last(vars.size(), -1);
  for (size_t k = 0; k < nodes.size(); ++k) {
    for (int i : nodes[k].inputs) {
      if (i >= 0) last[static_cast<size_t>(i)] = static_cast<int>(k);
    }
  }
  for (int o : outputs) last[static_cast<size_t>(o)] = static_cast<int>(nodes.size());
  return last;
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> uses(vars.size(), 0);
  for (const Node& n : nodes) {
    for (int i : n.inputs) {
      if (i >= 0) ++uses[static_cast<size_t>(i)];
    }
  }
  for (int o : outputs) ++uses[static_cast<size_t>(o)];
  return uses;
}

void Graph::verify() const {
  const int nv = static_cast<int>(vars.size());
  std::vector<char> defined(vars.size(), 0);
  auto check_id = [&](int id, const std::string& where) {
    EMBER_CHECK(id >= 0 && id < nv, "[jit::verify] ", where, " refers to var ", id, ", but the graph has ", nv,
                " vars");
  };
  std::set<std::string> names;
  for (int id : inputs) {
    check_id(id, "graph input");
    EMBER_CHECK(var(id).kind == VarKind::Input, "[jit::verify] graph input ", var_name(id), " is not an input var");
    EMBER_CHECK(!defined[static_cast<size_t>(id)], "[jit::verify] input ", var_name(id), " is listed twice");
    defined[static_cast<size_t>(id)] = 1;
  }
  for (int id = 0; id < nv; ++id) {
    const Var& v = var(id);
    if (v.kind == VarKind::Param || v.kind == VarKind::Const) {
      auto it = values.find(id);
      EMBER_CHECK(it != values.end() && it->second.defined(), "[jit::verify] ",
                  v.kind == VarKind::Param ? "parameter " : "constant ", var_name(id), " has no tensor");
      EMBER_CHECK(it->second.dtype() == v.dtype && static_shape(it->second.sizes()) == v.shape, "[jit::verify] ",
                  var_name(id), " is declared ", dtype_short_name(v.dtype), " with ", v.shape.size(),
                  " dims but holds a tensor of sizes ", it->second.sizes(), " and dtype ", it->second.dtype());
      defined[static_cast<size_t>(id)] = 1;
    }
    if (v.kind == VarKind::Input) {
      EMBER_CHECK(std::find(inputs.begin(), inputs.end(), id) != inputs.end(), "[jit::verify] input var ",
                  var_name(id), " is not among the graph's inputs");
    }
    if (v.kind == VarKind::Param || v.kind == VarKind::Input) {
      EMBER_CHECK(!v.name.empty(), "[jit::verify] input or parameter var ", id, " has no name");
      EMBER_CHECK(names.insert(v.name).second, "[jit::verify] two vars are named '", v.name, "'");
    }
  }
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& n = nodes[k];
    const std::string where = "node " + std::to_string(k) + " (" + n.op + ")";
    EMBER_CHECK(find_op(n.op) != nullptr, "[jit::verify] ", where, ": unknown op '", n.op,
                "'; the op set of this build (version ", opset_version(), ") does not have it");
    for (int i : n.inputs) {
      if (i < 0) continue;
      check_id(i, where);
      EMBER_CHECK(defined[static_cast<size_t>(i)], "[jit::verify] ", where, " reads ", var_name(i),
                  " before it is defined");
    }
    for (const SymAttr& s : n.sym) {
      EMBER_CHECK(n.attrs.contains(s.attr), "[jit::verify] ", where, ": dynamic attribute '", s.attr,
                  "' is not among its attributes");
    }
    EMBER_CHECK(!n.outputs.empty(), "[jit::verify] ", where, " has no outputs");
    for (int o : n.outputs) {
      check_id(o, where);
      EMBER_CHECK(var(o).kind == VarKind::Node && var(o).producer == static_cast<int>(k), "[jit::verify] ", where,
                  " defines ", var_name(o), ", which names another producer (", var(o).producer, ")");
      EMBER_CHECK(!defined[static_cast<size_t>(o)], "[jit::verify] ", where, " redefines ", var_name(o),
                  " (SSA: one definition per var)");
      defined[static_cast<size_t>(o)] = 1;
    }
  }
  for (int id = 0; id < nv; ++id) {
    if (var(id).kind == VarKind::Node) {
      const int p = var(id).producer;
      EMBER_CHECK(p >= 0 && p < static_cast<int>(nodes.size()), "[jit::verify] ", var_name(id),
                  " has no producing node");
    }
  }
  EMBER_CHECK(!outputs.empty(), "[jit::verify] the graph returns nothing");
  for (int o : outputs) {
    check_id(o, "graph output");
    EMBER_CHECK(defined[static_cast<size_t>(o)], "[jit::verify] graph output ", var_name(o), " is never defined");
  }
}

void Graph::print(std::ostream& os) const {
  auto type_of = [&](int id) {
    std::ostringstream s;
    const Var& v = var(id);
    s << dtype_short_name(v.dtype) << "[";
    for (size_t d = 0; d < v.shape.size(); ++d) s << (d ? "," : "") << v.shape[d];
    s << "]";
    return s.str();
  };
  os << "graph(";
  for (size_t i = 0; i < inputs.size(); ++i) os << (i ? ", " : "") << var_name(inputs[i]) << ": " << type_of(inputs[i]);
  os << "):\n";
  for (int id = 0; id < static_cast<int>(vars.size()); ++id) {
    const Var& v = var(id);
    if (v.kind == VarKind::Param) os << "  " << var_name(id) << ": " << type_of(id) << " = param\n";
    if (v.kind == VarKind::Const) {
      const Tensor& t = values.at(id);
      os << "  " << var_name(id) << ": " << type_of(id) << " = const";
      if (t.numel() == 1) os << "(" << t.item().to_double() << ")";
      os << "\n";
    }
  }
  for (const Node& n : nodes) {
    os << "  ";
    for (size_t k = 0; k < n.outputs.size(); ++k) os << (k ? ", " : "") << var_name(n.outputs[k]) << ": " << type_of(n.outputs[k]);
    os << " = " << n.op << "(";
    bool first = true;
    for (int i : n.inputs) {
      os << (first ? "" : ", ") << var_name(i);
      first = false;
    }
    for (const auto& it : n.attrs) {
      os << (first ? "" : ", ") << it.key() << "=";
      first = false;
      const SymAttr* whole = nullptr;
      std::vector<const SymAttr*> elems;
      for (const SymAttr& s : n.sym) {
        if (s.attr != it.key()) continue;
        if (s.index < 0) whole = &s;
        else elems.push_back(&s);
      }
      if (whole != nullptr) {
        os << whole->value;
      } else if (!elems.empty() && it.value().is_list()) {
        os << "[";
        for (size_t e = 0; e < it.value().size(); ++e) {
          if (e) os << ", ";
          auto found = std::find_if(elems.begin(), elems.end(),
                                    [&](const SymAttr* s) { return s->index == static_cast<int64_t>(e); });
          if (found != elems.end()) os << (*found)->value;
          else print_value(os, it.value().to_list()[e]);
        }
        os << "]";
      } else {
        print_value(os, it.value());
      }
    }
    os << ")\n";
  }
  os << "  return (";
  for (size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : "") << var_name(outputs[i]);
  os << ")\n";
}

std::string Graph::str() const {
  std::ostringstream os;
  print(os);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Graph& g) {
  g.print(os);
  return os;
}

std::map<std::string, int> Graph::op_histogram() const {
  std::map<std::string, int> h;
  for (const Node& n : nodes) ++h[n.op];
  return h;
}

int64_t Graph::parameter_count() const {
  int64_t count = 0;
  for (const auto& [id, t] : values) {
    if (var(id).kind == VarKind::Param) count += t.numel();
  }
  return count;
}

}  // namespace ember::jit
