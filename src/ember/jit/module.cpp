// The graph interpreter: GraphModule::run.

#include "ember/jit/module.h"

#include <sstream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/jit/ops.h"
#include "ember/ops/pointwise_nodes.h"

namespace ember::jit {

// What run() needs, resolved once: each node's op and whether its attributes follow B,
// and the node after which each var dies.
struct GraphModule::Plan {
  Graph graph;
  std::vector<const OpDef*> defs;
  std::vector<std::vector<int>> frees;  // per node: vars to release after it runs
  std::vector<char> may_reuse;          // per node: element-wise, first input may be written
  std::vector<int> last_use;
  std::vector<std::pair<int, int>> dynamic_inputs;  // (input position, dim) that follow B
};

namespace {
thread_local RunStats tl_stats;

std::string spec_string(const Graph& g, int id) {
  std::ostringstream os;
  const Var& v = g.var(id);
  os << dtype_short_name(v.dtype) << "[";
  for (size_t d = 0; d < v.shape.size(); ++d) os << (d ? "," : "") << v.shape[d];
  os << "]";
  return os.str();
}
}  // namespace

GraphModule::GraphModule(Graph graph, Value metadata) : metadata_(std::move(metadata)) {
  if (!metadata_.is_dict()) metadata_ = Value::dict();
  set_graph(std::move(graph));
}

void GraphModule::set_graph(Graph graph) {
  graph.verify();
  auto plan = std::make_shared<Plan>();
  plan->graph = std::move(graph);
  const Graph& g = plan->graph;
  plan->last_use = g.last_uses();
  plan->frees.resize(g.nodes.size());
  plan->may_reuse.resize(g.nodes.size(), 0);
  for (int id = 0; id < static_cast<int>(g.vars.size()); ++id) {
    const int last = plan->last_use[static_cast<size_t>(id)];
    if (g.var(id).kind == VarKind::Node && last >= 0 && last < static_cast<int>(g.nodes.size())) {
      plan->frees[static_cast<size_t>(last)].push_back(id);
    }
  }
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    plan->defs.push_back(find_op(n.op));
    const bool table = detail::is_unary_node(n.op) || detail::is_binary_node(n.op);
    if (table && !n.inputs.empty() && n.inputs[0] >= 0) {
      const int x = n.inputs[0];
      const bool dies_here = plan->last_use[static_cast<size_t>(x)] == static_cast<int>(k) &&
                             std::count(n.inputs.begin(), n.inputs.end(), x) == 1;
      plan->may_reuse[k] = dies_here && g.var(x).kind == VarKind::Node;
    }
  }
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Var& v = g.var(g.inputs[i]);
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (!v.shape[d].is_static()) plan->dynamic_inputs.emplace_back(static_cast<int>(i), static_cast<int>(d));
    }
  }
  plan_ = std::move(plan);
}

const Graph& GraphModule::graph() const {
  EMBER_CHECK(plan_ != nullptr, "[jit::GraphModule] the module holds no graph");
  return plan_->graph;
}

RunStats GraphModule::last_run_stats() const { return tl_stats; }

std::vector<Tensor> GraphModule::run(const std::vector<Tensor>& inputs) const {
  EMBER_CHECK(plan_ != nullptr, "[jit::run] the module holds no graph");
  const Plan& p = *plan_;
  const Graph& g = p.graph;
  EMBER_CHECK(inputs.size() == g.inputs.size(), "[jit::run] the graph takes ", g.inputs.size(), " inputs, got ",
              inputs.size());
  // B from the first dynamic dim; every input must match its spec at that B.
  int64_t batch = g.traced_batch;
  if (!p.dynamic_inputs.empty()) {
    const auto [i, d] = p.dynamic_inputs.front();
    const Tensor& t = inputs[static_cast<size_t>(i)];
    const Var& v = g.var(g.inputs[static_cast<size_t>(i)]);
    EMBER_CHECK(t.defined() && t.dim() == static_cast<int64_t>(v.shape.size()), "[jit::run] input ", i, " '", v.name,
                "' should be ", spec_string(g, g.inputs[static_cast<size_t>(i)]), ", got ",
                t.defined() ? std::to_string(t.dim()) + " dims with sizes " : std::string("an undefined tensor"),
                t.defined() ? (std::ostringstream() << t.sizes()).str() : "");
    const SymInt s = v.shape[static_cast<size_t>(d)];
    const int64_t size = t.size(d);
    EMBER_CHECK((size - s.b) % s.a == 0 && (size - s.b) / s.a >= 0, "[jit::run] input ", i, " '", v.name,
                "' dim ", d, " is ", size, ", which is not ", s, " for any batch size B");
    batch = (size - s.b) / s.a;
  }
  std::vector<Tensor> slots(g.vars.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int id = g.inputs[i];
    const Var& v = g.var(id);
    const Tensor& t = inputs[i];
    bool ok = t.defined() && t.dtype() == v.dtype && t.dim() == static_cast<int64_t>(v.shape.size());
    for (size_t d = 0; ok && d < v.shape.size(); ++d) ok = t.size(static_cast<int64_t>(d)) == v.shape[d].eval(batch);
    if (!ok) {
      std::ostringstream got;
      if (t.defined()) got << dtype_short_name(t.dtype()) << t.sizes();
      else got << "an undefined tensor";
      EMBER_ERROR("[jit::run] input ", i, " '", v.name, "' should be ", spec_string(g, id),
                  p.dynamic_inputs.empty() ? "" : (" (B = " + std::to_string(batch) + " from the dynamic dim)"),
                  ", got ", got.str());
    }
    slots[static_cast<size_t>(id)] = t;
  }
  for (const auto& [id, t] : g.values) slots[static_cast<size_t>(id)] = t;

  InferenceMode guard;
  RunStats stats;
  int64_t live = 0;
  std::vector<Tensor> in;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    in.clear();
    for (int i : n.inputs) in.push_back(i < 0 ? Tensor() : slots[static_cast<size_t>(i)]);
    const Value::Dict& attrs = n.sym.empty() ? n.attrs : n.attrs_at(batch);
    std::vector<Tensor> out;
    bool reused = false;
    if (p.may_reuse[k]) {
      // Note [Buffer reuse]: an element-wise node whose first input is an intermediate
      // dying here writes its result into that input's buffer when nothing else holds
      // it (our two handles: the slot and `in`; storage not shared with a view).
      Tensor& x = slots[static_cast<size_t>(n.inputs[0])];
      if (x.use_count() == 2 && x.storage().use_count() == 1 && x.is_contiguous()) {
        in[0] = Tensor();
        reused = n.inputs.size() == 1 ? detail::run_unary_node_out(n.op, x, x, attrs)
                                      : detail::run_binary_node_out(n.op, x, {x, in[1]}, attrs);
        if (reused) out.push_back(x);
        else in[0] = x;
      }
    }
    if (!reused) {
      try {
        out = call_op(*p.defs[k], in, attrs);
      } catch (const Error& e) {
        EMBER_ERROR(e.what(), "\n  (in graph node ", k, ": ", n.op, ")");
      }
      EMBER_CHECK(out.size() == n.outputs.size(), "[jit::run] node ", k, " (", n.op, ") returned ", out.size(),
                  " tensors; the graph expects ", n.outputs.size());
      for (const Tensor& t : out) {
        const int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
        stats.allocated_bytes += bytes;
        live += bytes;
      }
    } else {
      ++stats.inplace_nodes;
    }
    stats.peak_bytes = std::max(stats.peak_bytes, live);
    for (size_t o = 0; o < out.size(); ++o) slots[static_cast<size_t>(n.outputs[o])] = std::move(out[o]);
    for (int dead : p.frees[k]) {
      Tensor& t = slots[static_cast<size_t>(dead)];
      if (t.defined() && t.use_count() == 1 && t.storage().use_count() == 1)
        live -= t.numel() * static_cast<int64_t>(t.element_size());
      t = Tensor();
    }
  }
  std::vector<Tensor> result;
  result.reserve(g.outputs.size());
  for (int o : g.outputs) result.push_back(slots[static_cast<size_t>(o)]);
  tl_stats = stats;
  return result;
}

Tensor GraphModule::forward(const Tensor& input) const {
  EMBER_CHECK(plan_ != nullptr, "[jit::run] the module holds no graph");
  EMBER_CHECK(plan_->graph.inputs.size() == 1 && plan_->graph.outputs.size() == 1, "[jit::forward] the graph takes ",
              plan_->graph.inputs.size(), " inputs and returns ", plan_->graph.outputs.size(),
              " outputs; call run() with a list");
  return run({input}).at(0);
}

}  // namespace ember::jit
