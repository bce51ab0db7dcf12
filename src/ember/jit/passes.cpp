// Graph passes (jit/passes.h, docs/jit.md).

#include "ember/jit/passes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/jit/ops.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise_nodes.h"

namespace ember::jit {

namespace {

// Drops the nodes not kept and every var no longer defined or referenced (unused
// parameters and constants), renumbering vars in their old order.
void compact(Graph& g, const std::vector<char>& keep_node) {
  std::vector<char> referenced(g.vars.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (!keep_node[k]) continue;
    for (int i : g.nodes[k].inputs) {
      if (i >= 0) referenced[static_cast<size_t>(i)] = 1;
    }
  }
  for (int o : g.outputs) referenced[static_cast<size_t>(o)] = 1;
  std::vector<int> node_map(g.nodes.size(), -1);
  int next_node = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (keep_node[k]) node_map[k] = next_node++;
  }
  std::vector<int> var_map(g.vars.size(), -1);
  std::vector<Var> vars;
  for (size_t i = 0; i < g.vars.size(); ++i) {
    const Var& v = g.vars[i];
    bool keep = false;
    switch (v.kind) {
      case VarKind::Input: keep = true; break;
      case VarKind::Param:
      case VarKind::Const: keep = referenced[i] != 0; break;
      case VarKind::Node: keep = v.producer >= 0 && keep_node[static_cast<size_t>(v.producer)]; break;
    }
    if (!keep) continue;
    var_map[i] = static_cast<int>(vars.size());
    vars.push_back(v);
    if (v.kind == VarKind::Node) vars.back().producer = node_map[static_cast<size_t>(v.producer)];
  }
  auto remap = [&](int id) { return id < 0 ? -1 : var_map[static_cast<size_t>(id)]; };
  std::vector<Node> nodes;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (!keep_node[k]) continue;
    Node n = std::move(g.nodes[k]);
    for (int& i : n.inputs) i = remap(i);
    for (int& o : n.outputs) o = remap(o);
    nodes.push_back(std::move(n));
  }
  std::map<int, Tensor> values;
  for (auto& [id, t] : g.values) {
    const int m = remap(id);
    if (m >= 0) values[m] = std::move(t);
  }
  for (int& i : g.inputs) i = remap(i);
  for (int& o : g.outputs) o = remap(o);
  g.vars = std::move(vars);
  g.nodes = std::move(nodes);
  g.values = std::move(values);
}

void replace_uses(Graph& g, int from, int to) {
  for (Node& n : g.nodes) {
    for (int& i : n.inputs) {
      if (i == from) i = to;
    }
  }
  for (int& o : g.outputs) {
    if (o == from) o = to;
  }
}

bool is_constant(const Graph& g, int id, bool include_params) {
  if (id < 0) return true;
  const VarKind k = g.var(id).kind;
  return k == VarKind::Const || (include_params && k == VarKind::Param);
}

void key_of(std::ostream& os, const Value& v) {
  os << static_cast<int>(v.kind()) << ':';
  switch (v.kind()) {
    case Value::Kind::Bool: os << v.to_bool(); break;
    case Value::Kind::Int: os << v.to_int(); break;
    case Value::Kind::Double: {
      double d = v.to_double();
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      os << bits;
      break;
    }
    case Value::Kind::String: os << v.to_string().size() << ':' << v.to_string(); break;
    case Value::Kind::List:
      os << '[';
      for (const Value& e : v.to_list()) {
        key_of(os, e);
        os << ',';
      }
      os << ']';
      break;
    case Value::Kind::Dict:
      os << '{';
      for (const auto& it : v.to_dict()) {
        os << it.key() << '=';
        key_of(os, it.value());
        os << ',';
      }
      os << '}';
      break;
    default: break;
  }
}

int64_t var_bytes(const Var& v, int64_t batch) {
  int64_t n = 1;
  for (const SymInt& s : v.shape) n *= s.eval(batch);
  return n * static_cast<int64_t>(element_size(v.dtype));
}

// The node defining each var (-1 for inputs, parameters and constants).
std::vector<int> producers(const Graph& g) {
  std::vector<int> producer(g.vars.size(), -1);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (int o : g.nodes[k].outputs) producer[static_cast<size_t>(o)] = static_cast<int>(k);
  }
  return producer;
}

bool is_table_op(const std::string& op) { return detail::is_unary_node(op) || detail::is_binary_node(op); }

}  // namespace

int eliminate_dead_code(Graph& g) {
  std::vector<char> needed(g.vars.size(), 0);
  for (int o : g.outputs) needed[static_cast<size_t>(o)] = 1;
  std::vector<char> keep(g.nodes.size(), 0);
  for (size_t k = g.nodes.size(); k-- > 0;) {
    const Node& n = g.nodes[k];
    const bool live = std::any_of(n.outputs.begin(), n.outputs.end(), [&](int o) { return needed[static_cast<size_t>(o)] != 0; });
    if (!live) continue;
    keep[k] = 1;
    for (int i : n.inputs) {
      if (i >= 0) needed[static_cast<size_t>(i)] = 1;
    }
  }
  const int removed = static_cast<int>(std::count(keep.begin(), keep.end(), 0));
  compact(g, keep);
  return removed;
}

int eliminate_common_subexpressions(Graph& g) {
  std::map<std::string, int> seen;  // key -> node index
  int merged = 0;
  std::vector<char> keep(g.nodes.size(), 1);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& n = g.nodes[k];
    const OpDef* def = find_op(n.op);
    if (def == nullptr || def->random) continue;
    std::ostringstream key;
    key << n.op << '(';
    for (int i : n.inputs) key << i << ',';
    key << ')';
    key_of(key, Value(n.attrs));
    for (const SymAttr& s : n.sym) key << '|' << s.attr << s.index << ':' << s.value.a << ',' << s.value.b;
    auto [it, inserted] = seen.emplace(key.str(), static_cast<int>(k));
    if (inserted) continue;
    const Node& first = g.nodes[static_cast<size_t>(it->second)];
    for (size_t o = 0; o < n.outputs.size(); ++o) replace_uses(g, n.outputs[o], first.outputs[o]);
    keep[k] = 0;
    ++merged;
  }
  if (merged > 0) compact(g, keep);
  return merged;
}

int fold_constants(Graph& g, bool include_params) {
  int folded = 0;
  NoGradGuard no_grad;
  std::vector<char> keep(g.nodes.size(), 1);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node n = g.nodes[k];
    const OpDef* def = find_op(n.op);
    if (def == nullptr || def->random || !n.sym.empty()) continue;
    if (!std::all_of(n.inputs.begin(), n.inputs.end(), [&](int i) { return is_constant(g, i, include_params); }))
      continue;
    std::vector<Tensor> in;
    for (int i : n.inputs) in.push_back(i < 0 ? Tensor() : g.values.at(i));
    std::vector<Tensor> out = call_op(*def, in, n.attrs);
    int64_t numel = 0;
    for (const Tensor& t : out) numel += t.numel();
    if (numel > (int64_t{1} << 24)) continue;  // a huge creation op stays a node
    for (size_t o = 0; o < out.size(); ++o) {
      // Contiguous, as the constant will be after a save and load: the graph computes the
      // same in memory and from its file.
      const int c = g.add_const(out[o].contiguous());
      replace_uses(g, n.outputs[o], c);
    }
    keep[k] = 0;
    ++folded;
  }
  if (folded > 0) compact(g, keep);
  return folded;
}

int fold_batch_norm(Graph& g) {
  const std::vector<int> uses = g.use_counts();
  int folded = 0;
  NoGradGuard no_grad;
  std::vector<char> keep(g.nodes.size(), 1);
  const std::vector<int> producer = producers(g);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& bn = g.nodes[k];
    if (bn.op != "batch_norm" || attr_bool(bn.attrs, "training", false) || bn.inputs.size() != 5) continue;
    const int x = bn.inputs[0];
    const int pk = producer[static_cast<size_t>(x)];
    if (pk < 0 || uses[static_cast<size_t>(x)] != 1) continue;
    Node& conv = g.nodes[static_cast<size_t>(pk)];
    if (conv.op != "conv2d" && conv.op != "conv1d" && conv.op != "linear") continue;
    if (conv.attrs.contains("activation")) continue;
    const int w = conv.inputs[1];
    const int b = conv.inputs.size() > 2 ? conv.inputs[2] : -1;
    if (!is_constant(g, w, true) || !is_constant(g, b, true)) continue;
    if (!std::all_of(bn.inputs.begin() + 1, bn.inputs.end(), [&](int i) { return is_constant(g, i, true); })) continue;
    if (bn.inputs[1] < 0 || bn.inputs[2] < 0) continue;
    const Tensor W = g.values.at(w);
    const DType dt = W.dtype();
    const int64_t out_ch = W.size(0);
    const double eps = attr_double(bn.attrs, "eps", 1e-5);
    Tensor mean = g.values.at(bn.inputs[1]).to(kFloat64);
    Tensor var = g.values.at(bn.inputs[2]).to(kFloat64);
    Tensor gamma = bn.inputs[3] >= 0 ? g.values.at(bn.inputs[3]).to(kFloat64) : ones({out_ch}, TensorOptions(kFloat64));
    Tensor beta = bn.inputs[4] >= 0 ? g.values.at(bn.inputs[4]).to(kFloat64) : zeros({out_ch}, TensorOptions(kFloat64));
    if (mean.numel() != out_ch) continue;
    Tensor scale = gamma * (var + eps).rsqrt();
    std::vector<int64_t> shape(static_cast<size_t>(W.dim()), 1);
    shape[0] = out_ch;
    Tensor new_w = (W.to(kFloat64) * scale.view(shape)).to(dt);
    Tensor bias = b >= 0 ? g.values.at(b).to(kFloat64) : zeros({out_ch}, TensorOptions(kFloat64));
    Tensor new_b = ((bias - mean) * scale + beta).to(dt);
    // New parameters named after the conv's ("conv1.weight"), replacing the old ones where
    // only this conv used them.
    auto replace_param = [&](int old_id, const Tensor& value, const std::string& fallback_name) {
      if (old_id >= 0 && uses[static_cast<size_t>(old_id)] == 1 && g.var(old_id).kind == VarKind::Param) {
        g.values[old_id] = value;
        return old_id;
      }
      std::string name = fallback_name;
      for (int suffix = 1; std::any_of(g.vars.begin(), g.vars.end(), [&](const Var& v) { return v.name == name; });
           ++suffix)
        name = fallback_name + "_" + std::to_string(suffix);
      return g.add_param(name, value);
    };
    const std::string wname = g.var(w).name.empty() ? "folded" : g.var(w).name;
    const std::string base = wname.size() > 7 && wname.ends_with(".weight") ? wname.substr(0, wname.size() - 7) : wname;
    const int nw = replace_param(w, new_w, base + ".weight_folded");
    const int nb = replace_param(b, new_b, base + ".bias");
    Node& c = g.nodes[static_cast<size_t>(pk)];  // add_param may not move nodes, but be safe
    c.inputs[1] = nw;
    if (c.inputs.size() > 2) c.inputs[2] = nb;
    else c.inputs.push_back(nb);
    replace_uses(g, g.nodes[k].outputs[0], c.outputs[0]);
    keep[k] = 0;
    ++folded;
  }
  if (folded > 0) compact(g, keep);
  return folded;
}

int fuse_epilogues(Graph& g) {
  const std::vector<int> uses = g.use_counts();
  const std::vector<int> producer = producers(g);
  std::vector<char> keep(g.nodes.size(), 1);
  int fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& act = g.nodes[k];
    if (act.op != "relu" || act.inputs.size() != 1) continue;
    const int x = act.inputs[0];
    const int pk = producer[static_cast<size_t>(x)];
    if (pk < 0 || uses[static_cast<size_t>(x)] != 1 || !keep[static_cast<size_t>(pk)]) continue;
    Node& conv = g.nodes[static_cast<size_t>(pk)];
    if ((conv.op != "conv2d" && conv.op != "linear") || conv.attrs.contains("activation")) continue;
    conv.attrs.insert_or_assign("activation", Value("relu"));
    replace_uses(g, act.outputs[0], conv.outputs[0]);
    keep[k] = 0;
    ++fused;
  }
  if (fused > 0) compact(g, keep);
  return fused;
}

int fuse_elementwise(Graph& g) {
  std::vector<int> uses = g.use_counts();
  const std::vector<int> producer = producers(g);
  auto static_numel_one = [&](int id) {
    const Var& v = g.var(id);
    return std::all_of(v.shape.begin(), v.shape.end(), [](const SymInt& s) { return s.is_static() && s.b == 1; });
  };
  auto fusible = [&](const Node& n) {
    if (!is_table_op(n.op) || !n.sym.empty() || n.outputs.size() != 1) return false;
    const Var& out = g.var(n.outputs[0]);
    if (out.dtype != kFloat32) return false;
    for (int i : n.inputs) {
      if (i < 0) return false;
      const Var& v = g.var(i);
      if (v.dtype != kFloat32) return false;
      if (!(v.shape == out.shape) && !static_numel_one(i)) return false;
    }
    return true;
  };
  struct Group {
    std::vector<int> members;  // node indices, in order
    int output = -1;           // the last member's output var
  };
  std::vector<Group> groups;
  std::vector<int> group_of_node(g.nodes.size(), -1);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (!fusible(n)) continue;
    int join = -1;
    for (int i : n.inputs) {
      const int pk = producer[static_cast<size_t>(i)];
      if (pk < 0) continue;
      const int gi = group_of_node[static_cast<size_t>(pk)];
      if (gi >= 0 && groups[static_cast<size_t>(gi)].output == i && uses[static_cast<size_t>(i)] == 1 &&
          g.var(i).shape == g.var(n.outputs[0]).shape) {
        join = gi;
        break;
      }
    }
    if (join < 0) {
      groups.push_back({});
      join = static_cast<int>(groups.size()) - 1;
    }
    groups[static_cast<size_t>(join)].members.push_back(static_cast<int>(k));
    groups[static_cast<size_t>(join)].output = n.outputs[0];
    group_of_node[k] = join;
  }
  std::vector<char> keep(g.nodes.size(), 1);
  int fused = 0;
  for (const Group& grp : groups) {
    if (grp.members.size() < 2) continue;
    std::vector<int> ext;  // external inputs of the fused node
    std::map<int, int> step_of_var;
    Value::List ops, args, step_attrs;
    for (size_t s = 0; s < grp.members.size(); ++s) {
      const Node& n = g.nodes[static_cast<size_t>(grp.members[s])];
      std::vector<int64_t> a;
      for (int i : n.inputs) {
        if (auto it = step_of_var.find(i); it != step_of_var.end()) {
          a.push_back(-1 - it->second);
          continue;
        }
        auto pos = std::find(ext.begin(), ext.end(), i);
        if (pos == ext.end()) {
          ext.push_back(i);
          pos = ext.end() - 1;
        }
        a.push_back(pos - ext.begin());
      }
      step_of_var[n.outputs[0]] = static_cast<int>(s);
      ops.push_back(Value(n.op));
      args.push_back(Value(a));
      step_attrs.push_back(Value(n.attrs));
    }
    // The fused node takes the last member's place and output var.
    const int last = grp.members.back();
    Node fusedn;
    fusedn.op = "fused_elementwise";
    fusedn.inputs = ext;
    fusedn.outputs = {grp.output};
    fusedn.attrs.insert("ops", Value(ops));
    fusedn.attrs.insert("args", Value(args));
    fusedn.attrs.insert("attrs", Value(step_attrs));
    for (size_t s = 0; s + 1 < grp.members.size(); ++s) keep[static_cast<size_t>(grp.members[s])] = 0;
    g.nodes[static_cast<size_t>(last)] = std::move(fusedn);
    fused += static_cast<int>(grp.members.size());
  }
  if (fused > 0) compact(g, keep);
  return fused;
}

MemoryPlan plan_memory(const Graph& g, int64_t batch) {
  if (batch <= 0) batch = g.traced_batch > 0 ? g.traced_batch : 1;
  MemoryPlan plan;
  const std::vector<int> last = g.last_uses();
  int64_t live = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    const bool reuse = is_table_op(n.op) && !n.inputs.empty() && n.inputs[0] >= 0 &&
                       g.var(n.inputs[0]).kind == VarKind::Node && last[static_cast<size_t>(n.inputs[0])] == static_cast<int>(k) &&
                       g.var(n.inputs[0]).dtype == g.var(n.outputs[0]).dtype &&
                       g.var(n.inputs[0]).shape == g.var(n.outputs[0]).shape;
    if (reuse) {
      ++plan.inplace_nodes;
    } else {
      for (int o : n.outputs) {
        const int64_t b = var_bytes(g.var(o), batch);
        plan.total_bytes += b;
        live += b;
      }
    }
    plan.peak_bytes = std::max(plan.peak_bytes, live);
    for (int i : n.inputs) {
      if (i >= 0 && g.var(i).kind == VarKind::Node && last[static_cast<size_t>(i)] == static_cast<int>(k) &&
          !(reuse && i == n.inputs[0]))
        live -= var_bytes(g.var(i), batch);
    }
  }
  return plan;
}

GraphModule freeze(const GraphModule& m, const FreezeOptions& options) {
  Graph g = m.graph();
  {
    NoGradGuard no_grad;
    for (auto& [id, t] : g.values) t = t.detach().clone();
  }
  if (options.fold_batch_norm) fold_batch_norm(g);
  if (options.fold_constants) fold_constants(g, true);
  if (options.eliminate_common_subexpressions) eliminate_common_subexpressions(g);
  if (options.fuse_epilogues) fuse_epilogues(g);
  if (options.fuse_elementwise) fuse_elementwise(g);
  eliminate_dead_code(g);
  return GraphModule(std::move(g), m.metadata());
}

}  // namespace ember::jit
