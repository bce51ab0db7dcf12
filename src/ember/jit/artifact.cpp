// Model artifacts: jit::save / jit::load (jit/artifact.h).

#include "ember/jit/artifact.h"

#include <algorithm>
#include <sstream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/jit/ops.h"
#include "ember/ops/reduce.h"
#include "ember/serialize/checkpoint.h"

namespace ember::jit {

namespace {

Value shape_value(const std::vector<SymInt>& shape) {
  Value::List dims;
  for (const SymInt& s : shape) dims.push_back(Value(std::vector<int64_t>{s.a, s.b}));
  return Value(dims);
}

std::vector<SymInt> shape_from(const Value& v, const std::string& where) {
  std::vector<SymInt> out;
  for (const Value& d : v.to_list()) {
    const std::vector<int64_t> ab = d.to_int_list();
    EMBER_CHECK(ab.size() == 2, "[jit::load] ", where, ": a dim must be [a, b] (a*B + b), got ", ab.size(), " numbers");
    out.push_back({ab[0], ab[1]});
  }
  return out;
}

const char* kind_name(VarKind k) {
  switch (k) {
    case VarKind::Input: return "input";
    case VarKind::Param: return "param";
    case VarKind::Const: return "const";
    case VarKind::Node: return "node";
  }
  return "?";
}

VarKind kind_from(const std::string& s) {
  if (s == "input") return VarKind::Input;
  if (s == "param") return VarKind::Param;
  if (s == "const") return VarKind::Const;
  EMBER_CHECK(s == "node", "[jit::load] unknown var kind '", s, "'");
  return VarKind::Node;
}

std::string shape_string(const std::vector<SymInt>& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < shape.size(); ++d) os << (d ? "," : "") << shape[d];
  os << "]";
  return os.str();
}

std::string value_key(const Graph& g, int id) {
  const Var& v = g.var(id);
  return v.kind == VarKind::Param ? v.name : "const." + std::to_string(id);
}

}  // namespace

Value graph_to_value(const Graph& g) {
  Value out = Value::dict();
  Value::List vars;
  for (const Var& v : g.vars) {
    Value d = Value::dict();
    d["kind"] = kind_name(v.kind);
    if (!v.name.empty()) d["name"] = v.name;
    d["dtype"] = dtype_short_name(v.dtype);
    d["shape"] = shape_value(v.shape);
    vars.push_back(std::move(d));
  }
  out["vars"] = Value(vars);
  Value::List nodes;
  for (const Node& n : g.nodes) {
    Value d = Value::dict();
    d["op"] = n.op;
    d["inputs"] = Value(std::vector<int64_t>(n.inputs.begin(), n.inputs.end()));
    d["outputs"] = Value(std::vector<int64_t>(n.outputs.begin(), n.outputs.end()));
    d["attrs"] = Value(n.attrs);
    if (!n.sym.empty()) {
      Value::List sym;
      for (const SymAttr& s : n.sym) {
        Value e = Value::dict();
        e["attr"] = s.attr;
        e["index"] = s.index;
        e["a"] = s.value.a;
        e["b"] = s.value.b;
        sym.push_back(std::move(e));
      }
      d["sym"] = Value(sym);
    }
    nodes.push_back(std::move(d));
  }
  out["nodes"] = Value(nodes);
  out["inputs"] = Value(std::vector<int64_t>(g.inputs.begin(), g.inputs.end()));
  out["outputs"] = Value(std::vector<int64_t>(g.outputs.begin(), g.outputs.end()));
  Value::List names;
  for (const std::string& s : g.output_names) names.push_back(Value(s));
  out["output_names"] = Value(names);
  out["traced_batch"] = g.traced_batch;
  return out;
}

Graph graph_from_value(const Value& v) {
  Graph g;
  const Value::List& vars = v.at("vars").to_list();
  for (size_t i = 0; i < vars.size(); ++i) {
    const Value& d = vars[i];
    Var var;
    var.kind = kind_from(d.at("kind").to_string());
    if (d.contains("name")) var.name = d.at("name").to_string();
    var.dtype = dtype_from_short_name(d.at("dtype").to_string());
    var.shape = shape_from(d.at("shape"), "var " + std::to_string(i));
    g.vars.push_back(std::move(var));
  }
  const int nv = static_cast<int>(g.vars.size());
  auto check_ids = [&](const std::vector<int64_t>& ids, const std::string& where, bool allow_absent) {
    std::vector<int> out;
    for (int64_t id : ids) {
      EMBER_CHECK((allow_absent && id == -1) || (id >= 0 && id < nv), "[jit::load] ", where, " refers to var ", id,
                  ", but the graph has ", nv, " vars");
      out.push_back(static_cast<int>(id));
    }
    return out;
  };
  const Value::List& nodes = v.at("nodes").to_list();
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Value& d = nodes[k];
    Node n;
    n.op = d.at("op").to_string();
    const std::string where = "node " + std::to_string(k) + " (" + n.op + ")";
    n.inputs = check_ids(d.at("inputs").to_int_list(), where, true);
    n.outputs = check_ids(d.at("outputs").to_int_list(), where, false);
    n.attrs = d.at("attrs").to_dict();
    if (d.contains("sym")) {
      for (const Value& e : d.at("sym").to_list()) {
        n.sym.push_back({e.at("attr").to_string(), e.at("index").to_int(), {e.at("a").to_int(), e.at("b").to_int()}});
      }
    }
    for (int o : n.outputs) {
      Var& var = g.vars[static_cast<size_t>(o)];
      EMBER_CHECK(var.kind == VarKind::Node && var.producer == -1, "[jit::load] ", where, " defines var ", o,
                  ", which is not a node output or is defined twice");
      var.producer = static_cast<int>(k);
    }
    g.nodes.push_back(std::move(n));
  }
  g.inputs = check_ids(v.at("inputs").to_int_list(), "the input list", false);
  g.outputs = check_ids(v.at("outputs").to_int_list(), "the output list", false);
  for (const Value& s : v.at("output_names").to_list()) g.output_names.push_back(s.to_string());
  EMBER_CHECK(g.output_names.size() == g.outputs.size(), "[jit::load] ", g.output_names.size(), " output names for ",
              g.outputs.size(), " outputs");
  g.traced_batch = v.at("traced_batch").to_int();
  return g;
}

Value specs_of(const Graph& g) {
  Value specs = Value::dict();
  auto list = [&](const std::vector<int>& ids, const std::vector<std::string>* names) {
    Value::List out;
    for (size_t i = 0; i < ids.size(); ++i) {
      Value d = Value::dict();
      d["name"] = names != nullptr ? (*names)[i] : g.var(ids[i]).name;
      d["dtype"] = dtype_short_name(g.var(ids[i]).dtype);
      d["shape"] = shape_string(g.var(ids[i]).shape);
      out.push_back(std::move(d));
    }
    return Value(out);
  };
  specs["inputs"] = list(g.inputs, nullptr);
  specs["outputs"] = list(g.outputs, &g.output_names);
  return specs;
}

void save(const GraphModule& m, const std::string& path, const Value& metadata) {
  const Graph& g = m.graph();
  Value file = Value::dict();
  file["format"] = kArtifactFormat;
  file["opset"] = static_cast<int64_t>(opset_version());
  file["graph"] = graph_to_value(g);
  file["specs"] = specs_of(g);
  Value meta = m.metadata();
  if (metadata.is_dict()) {
    for (const auto& it : metadata.to_dict()) meta.to_dict().insert_or_assign(it.key(), it.value());
  }
  file["metadata"] = meta;
  Value weights = Value::dict();
  {
    NoGradGuard no_grad;
    for (const auto& [id, t] : g.values) weights[value_key(g, id)] = t.detach().contiguous();
  }
  file["weights"] = weights;
  ember::save(file, path);
}

GraphModule load(const std::string& path) {
  const Value file = ember::load(path);
  EMBER_CHECK(file.is_dict() && file.contains("format") && file.at("format").is_string() &&
                  file.at("format").to_string() == kArtifactFormat,
              "[jit::load] ", path, " is not an ember model artifact (no format \"", kArtifactFormat,
              "\"); is it a checkpoint? Load those with ember::load");
  try {
    const int64_t opset = file.at("opset").to_int();
    EMBER_CHECK(opset <= opset_version(), "[jit::load] ", path, " was written with op set version ", opset,
                ", newer than this build's ", opset_version(), "; load it with a newer ember");
    Graph g = graph_from_value(file.at("graph"));
    const Value& weights = file.at("weights");
    for (int id = 0; id < static_cast<int>(g.vars.size()); ++id) {
      const VarKind k = g.var(id).kind;
      if (k != VarKind::Param && k != VarKind::Const) continue;
      const std::string key = value_key(g, id);
      EMBER_CHECK(weights.contains(key), "[jit::load] ", path, " lacks the weight '", key, "'");
      g.values[id] = weights.at(key).to_tensor();
    }
    for (const Node& n : g.nodes) {
      EMBER_CHECK(find_op(n.op) != nullptr, "[jit::load] ", path, " uses op '", n.op,
                  "', which this build's op set (version ", opset_version(), ") does not have");
    }
    Value meta = file.contains("metadata") ? file.at("metadata") : Value::dict();
    return GraphModule(std::move(g), std::move(meta));
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind("[jit::load]", 0) == 0) throw;
    EMBER_ERROR("[jit::load] ", path, " holds a malformed graph: ", what);
  }
}

Value input_profile(const Tensor& batch) {
  EMBER_CHECK(batch.defined() && batch.numel() > 0, "[jit::input_profile] needs a non-empty tensor");
  NoGradGuard no_grad;
  Tensor x = batch.to(kFloat64);
  Value p = Value::dict();
  p["count"] = x.size(0);
  p["mean"] = x.mean().item().to_double();
  p["std"] = x.numel() > 1 ? x.std().item().to_double() : 0.0;
  p["min"] = x.amin().item().to_double();
  p["max"] = x.amax().item().to_double();
  // Decile bins of all values, for the population stability index of served inputs
  // (ember-serve's drift monitor): interior edges and the share of values in each bin,
  // a value equal to an edge counting in the bin above it.
  std::vector<double> v = x.contiguous().to_vector<double>();
  std::sort(v.begin(), v.end());
  std::vector<double> edges;
  for (int q = 1; q < 10; ++q) {
    const double e = v[std::min(v.size() - 1, v.size() * static_cast<size_t>(q) / 10)];
    if (e > v.front() && (edges.empty() || e > edges.back())) edges.push_back(e);
  }
  std::vector<double> fractions;
  size_t below = 0;
  for (size_t i = 0; i <= edges.size(); ++i) {
    const size_t upto = i < edges.size() ? std::lower_bound(v.begin(), v.end(), edges[i]) - v.begin() : v.size();
    fractions.push_back(static_cast<double>(upto - below) / static_cast<double>(v.size()));
    below = upto;
  }
  p["bin_edges"] = Value(edges);
  p["bin_fractions"] = Value(fractions);
  if (x.dim() >= 2) {
    std::vector<int64_t> dims{0};
    for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
    p["channel_mean"] = Value(mean(x, dims).to_vector<double>());
    if (x.numel() / x.size(1) > 1) p["channel_std"] = Value(ember::std(x, dims).to_vector<double>());
  }
  return p;
}

}  // namespace ember::jit
