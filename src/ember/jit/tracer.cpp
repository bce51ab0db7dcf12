// jit::trace: records the ops a forward runs (Note [Trace recording], jit/trace_hook.h)
// into a Graph, and finds the dynamic batch dim by tracing twice (Note [Two traces]).

#include <algorithm>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/warning.h"
#include "ember/guards/quiet.h"
#include "ember/jit/jit.h"
#include "ember/jit/ops.h"
#include "ember/jit/trace_hook.h"
#include "ember/nn/module.h"
#include "ember/ops/join.h"

namespace ember::jit {
namespace {
// Tracer errors name jit::trace, the call the user made, not the op running inside it.
template <typename... Args>
[[noreturn]] void trace_error(const Args&... args) {
  throw Error(Error::OwnOp{}, "jit::trace", ember::detail::str_cat(args...));
}
}  // namespace

namespace detail {

[[gnu::tls_model("initial-exec")]] constinit thread_local Recorder* tl_recorder = nullptr;
[[gnu::tls_model("initial-exec")]] constinit thread_local int tl_trace_depth = 0;

// Ops run by the tracer itself (copying a constant) are not part of the graph.
class PauseRecording {
 public:
  PauseRecording() : saved_(tl_recorder), depth_(tl_trace_depth) { tl_recorder = nullptr; }
  ~PauseRecording() {
    tl_recorder = saved_;
    tl_trace_depth = depth_;
  }
  PauseRecording(const PauseRecording&) = delete;
  PauseRecording& operator=(const PauseRecording&) = delete;

 private:
  Recorder* saved_;
  int depth_;
};

class Recorder {
 public:
  Graph graph;
  std::unordered_map<const TensorImpl*, int> ids;
  std::vector<Tensor> keep;  // every tensor seen stays alive, so no address is reused
  std::unordered_map<const TensorImpl*, std::string> param_names;
  std::unordered_set<const TensorImpl*> constants;
  bool allow_constants = false;
  std::thread::id thread = std::this_thread::get_id();
  // Op-scope bookkeeping (observer): the outermost op now running and the node count when
  // it began; the last outermost op that recorded nothing.
  int scope_depth = 0;
  const char* scope_op = nullptr;
  size_t nodes_at_scope = 0;
  std::string last_unrecorded;

  std::string describe(const Tensor& t) const {
    std::ostringstream os;
    os << dtype_short_name(t.dtype()) << t.sizes();
    return os.str();
  }

  int var_of(const char* op, size_t index, const Tensor& t) {
    if (!t.defined()) return -1;
    auto it = ids.find(t.impl());
    if (it != ids.end()) return it->second;
    keep.push_back(t);
    int id;
    if (auto p = param_names.find(t.impl()); p != param_names.end()) {
      id = graph.add_param(p->second, t);
    } else if (constants.count(t.impl()) != 0 || allow_constants) {
      PauseRecording pause;
      id = graph.add_const(t.detach().clone());
    } else {
      std::ostringstream os;
      os << "input " << index << " of '" << op << "' (a " << describe(t)
         << " tensor) was not made by an op the tracer records and is not an input, parameter or buffer of the "
            "model";
      if (!last_unrecorded.empty())
        os << "; the last op that recorded nothing was '" << last_unrecorded
           << "', which the tracer does not support yet";
      os << ". If it is a constant (a tensor member that is not a registered buffer), call jit::mark_constant(t) "
            "inside the forward, register it as a buffer, or set TraceOptions::allow_constants";
      trace_error(os.str());
    }
    ids[t.impl()] = id;
    return id;
  }

  void record(const char* op, const std::vector<Tensor>& inputs, const Attrs& attrs,
              const std::vector<Tensor>& outputs, bool inplace) {
    if (find_op(op) == nullptr)
      trace_error("op '", op, "' recorded itself but has no row in the graph op set (jit/ops.cpp); this is a bug in ember");
    std::vector<int> in;
    in.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) in.push_back(var_of(op, i, inputs[i]));
    if (inplace) {
      const Tensor& self = outputs.at(0);
      for (const auto& [impl, id] : ids) {
        (void)id;
        if (impl != self.impl() && impl->storage() == self.storage() &&
            graph.var(id).kind == VarKind::Node) {
          trace_error("in-place op '", op, "_' writes into a ", describe(self),
                      " tensor that shares memory with another traced tensor (a view of it, or the tensor it views); "
                      "the graph could not keep both up to date. Use the out-of-place op '", op, "' instead");
        }
      }
    }
    Value::Dict dict;
    for (const auto& [name, value] : attrs) dict.insert_or_assign(name, value);
    std::vector<int> out = graph.add_node(op, std::move(in), std::move(dict), static_cast<int>(outputs.size()));
    for (size_t k = 0; k < outputs.size(); ++k) {
      Var& v = graph.vars[static_cast<size_t>(out[k])];
      const Tensor& t = outputs[k];
      if (!t.defined()) trace_error("op '", op, "' returned an undefined tensor as output ", k);
      v.dtype = t.dtype();
      for (int64_t s : t.sizes()) v.shape.push_back({0, s});
      keep.push_back(t);
      ids[t.impl()] = out[k];
    }
  }
};

Value dtype_value(DType dt) { return Value(dtype_short_name(dt)); }

void record_node(const char* op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                 const std::vector<Tensor>& outputs, bool inplace) {
  if (tl_recorder != nullptr) tl_recorder->record(op, inputs, attrs, outputs, inplace);
}

void value_read_slow(const char* op, const Tensor& t) {
  Recorder* r = tl_recorder;
  // Inside a recorded op the read is that op's own business (the node holds the op).
  if (r == nullptr || tl_trace_depth > 0 || !t.defined() || r->constants.count(t.impl()) != 0) return;
  auto it = r->ids.find(t.impl());
  if (it == r->ids.end()) return;  // not part of the graph: a plain tensor
  const Var& v = r->graph.var(it->second);
  if (v.kind == VarKind::Param || v.kind == VarKind::Const) return;
  EMBER_ERROR("[", op, "] reads the value of a traced tensor (", r->graph.var_name(it->second), ": ",
              r->describe(t), ") while tracing: a graph cannot branch on data, so the value seen now would be "
              "baked in for every input. Compute with tensor ops instead (where, masked_fill, clamp), or, if the "
              "value truly never changes, call jit::mark_constant(t) before reading it");
}

}  // namespace detail

namespace {

using detail::Recorder;

// Installs a recorder on this thread for its lifetime, with an op observer that notes
// outermost ops which recorded nothing (named in the error when their output is used).
class RecorderScope {
 public:
  explicit RecorderScope(Recorder& r) : r_(r) {
    EMBER_CHECK(detail::tl_recorder == nullptr, "[jit::trace] a trace is already being recorded on this thread; "
                                                "jit::trace cannot be nested");
    observer_ = add_op_observer([rec = &r_](const OpEvent& e) {
      if (std::this_thread::get_id() != rec->thread || detail::tl_recorder != rec) return;
      if (e.entering) {
        if (rec->scope_depth++ == 0) {
          rec->scope_op = e.name;
          rec->nodes_at_scope = rec->graph.nodes.size();
        }
      } else if (--rec->scope_depth == 0) {
        // Inside a TraceOp the op records after its scope closes.
        if (!e.threw && detail::tl_trace_depth == 0 && rec->graph.nodes.size() == rec->nodes_at_scope)
          rec->last_unrecorded = e.name;
      }
    });
    detail::tl_recorder = &r_;
    detail::tl_trace_depth = 0;
  }
  ~RecorderScope() {
    detail::tl_recorder = nullptr;
    detail::tl_trace_depth = 0;
    remove_op_observer(observer_);
  }
  RecorderScope(const RecorderScope&) = delete;
  RecorderScope& operator=(const RecorderScope&) = delete;

 private:
  Recorder& r_;
  int observer_ = -1;
};

// Restores the module's parameters and buffers that the forward changed (batch norm's
// running statistics in training mode) to their values before the trace.
class StateSnapshot {
 public:
  explicit StateSnapshot(const nn::Module* m) {
    if (m == nullptr) return;
    NoGradGuard g;
    auto keep = [&](const Tensor& t) {
      if (t.defined()) saved_.push_back({t, t.clone(), t._version()});
    };
    for (const auto& it : m->named_parameters()) keep(it.value());
    for (const auto& it : m->named_buffers()) keep(it.value());
  }
  ~StateSnapshot() {
    NoGradGuard g;
    for (Saved& s : saved_) {
      if (s.live._version() != s.version) s.live.copy_(s.copy);
    }
  }
  StateSnapshot(const StateSnapshot&) = delete;
  StateSnapshot& operator=(const StateSnapshot&) = delete;

 private:
  struct Saved {
    Tensor live, copy;
    uint32_t version;
  };
  std::vector<Saved> saved_;
};

struct TraceRun {
  Graph graph;
  std::vector<Tensor> outputs;
};

TraceRun trace_once(const TraceFn& fn, const std::vector<Tensor>& inputs, const TraceOptions& options,
                    const nn::Module* module, const std::vector<std::string>& input_names) {
  Recorder rec;
  rec.allow_constants = options.allow_constants;
  if (module != nullptr) {
    for (const auto& it : module->named_parameters()) rec.param_names[it.value().impl()] = it.key();
    for (const auto& it : module->named_buffers()) {
      if (it.value().defined()) rec.param_names[it.value().impl()] = it.key();
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    EMBER_CHECK(t.defined(), "[jit::trace] example input ", i, " is an undefined tensor");
    EMBER_CHECK(rec.ids.count(t.impl()) == 0, "[jit::trace] example input ", i,
                " is the same tensor as an earlier input; pass each input once");
    std::vector<SymInt> shape;
    for (int64_t s : t.sizes()) shape.push_back({0, s});
    const int id = rec.graph.add_input(input_names[i], t.dtype(), shape);
    rec.ids[t.impl()] = id;
    rec.keep.push_back(t);
  }
  TraceRun run;
  {
    RecorderScope scope(rec);
    NoGradGuard no_grad;
    guards::detail::EvalModeQuiet quiet;  // trace() warns about training mode itself
    run.outputs = fn(inputs);
  }
  EMBER_CHECK(!run.outputs.empty(), "[jit::trace] the traced function returned no tensors");
  for (size_t k = 0; k < run.outputs.size(); ++k) {
    const Tensor& t = run.outputs[k];
    EMBER_CHECK(t.defined(), "[jit::trace] output ", k, " of the traced function is an undefined tensor");
    auto it = rec.ids.find(t.impl());
    if (it == rec.ids.end()) {
      std::ostringstream os;
      os << "output " << k << " (a " << rec.describe(t)
         << " tensor) was not made by an op the tracer records";
      if (!rec.last_unrecorded.empty())
        os << "; the last op that recorded nothing was '" << rec.last_unrecorded
           << "', which the tracer does not support yet";
      trace_error(os.str());
    }
    rec.graph.outputs.push_back(it->second);
  }
  run.graph = std::move(rec.graph);
  return run;
}

// Note [Two traces]: a graph with a dynamic batch dim B is traced at the example's batch
// size b and again at b + 1 (the inputs grown by one row along their dynamic dims). The
// two graphs must have the same ops in the same order; every shape or integer attribute
// that differs is a linear function of B, a*B + c, solved from the two values (a reshape
// to [b * heads, L, E] becomes [heads*B, L, E]). Anything else that differs (a float, a
// string, the op sequence) means the forward depends on the batch size in a way one graph
// cannot express, and is refused.
bool merge_value(const Value& v1, const Value& v2, int64_t b1, const std::string& attr, int64_t index,
                 std::vector<SymAttr>& sym) {
  if (v1.kind() != v2.kind()) return false;
  if (v1.is_int()) {
    if (v1.to_int() == v2.to_int()) return true;
    const int64_t a = v2.to_int() - v1.to_int();
    sym.push_back({attr, index, {a, v1.to_int() - a * b1}});
    return true;
  }
  if (v1.is_list()) {
    if (v1.size() != v2.size()) return false;
    for (size_t i = 0; i < v1.size(); ++i) {
      const Value& e1 = v1.to_list()[i];
      const Value& e2 = v2.to_list()[i];
      if (index >= 0 || !(e1.is_int() || e1 == e2)) {
        if (!(e1 == e2)) return false;
        continue;
      }
      if (!merge_value(e1, e2, b1, attr, static_cast<int64_t>(i), sym)) return false;
    }
    return true;
  }
  return v1 == v2;
}

void merge_traces(Graph& g1, const Graph& g2, int64_t b1) {
  auto differ = [&](const std::string& what) {
    trace_error("the forward records a different graph at batch size ", b1, " and ", b1 + 1, ": ", what,
                ". A graph with a dynamic batch dim needs a forward whose ops do not depend on the batch size; trace "
                "without dynamic dims (one graph per shape) or remove the dependence");
  };
  if (g1.nodes.size() != g2.nodes.size() || g1.vars.size() != g2.vars.size())
    differ(std::to_string(g1.nodes.size()) + " vs " + std::to_string(g2.nodes.size()) + " nodes");
  for (size_t k = 0; k < g1.nodes.size(); ++k) {
    Node& n1 = g1.nodes[k];
    const Node& n2 = g2.nodes[k];
    if (n1.op != n2.op || n1.inputs != n2.inputs || n1.attrs.size() != n2.attrs.size())
      differ("node " + std::to_string(k) + " is '" + n1.op + "' in one and '" + n2.op + "' in the other");
    for (size_t a = 0; a < n1.attrs.size(); ++a) {
      const auto& i1 = n1.attrs[a];
      const auto& i2 = n2.attrs[a];
      if (i1.key() != i2.key() || !merge_value(i1.value(), i2.value(), b1, i1.key(), -1, n1.sym))
        differ("attribute '" + i1.key() + "' of node " + std::to_string(k) + " ('" + n1.op + "')");
    }
  }
  for (size_t i = 0; i < g1.vars.size(); ++i) {
    Var& v1 = g1.vars[i];
    const Var& v2 = g2.vars[i];
    if (v1.kind != v2.kind || v1.dtype != v2.dtype || v1.shape.size() != v2.shape.size())
      differ("var " + g1.var_name(static_cast<int>(i)) + " has another dtype or rank");
    for (size_t d = 0; d < v1.shape.size(); ++d) {
      if (v1.shape[d].b == v2.shape[d].b) continue;
      if (v1.kind == VarKind::Param || v1.kind == VarKind::Const)
        differ("constant " + g1.var_name(static_cast<int>(i)) + " changes shape with the batch size");
      const int64_t a = v2.shape[d].b - v1.shape[d].b;
      v1.shape[d] = {a, v1.shape[d].b - a * b1};
    }
  }
  g1.traced_batch = b1;
}

std::string default_name(const std::vector<std::string>& names, size_t i, const char* prefix) {
  if (i < names.size() && !names[i].empty()) return names[i];
  return prefix + std::to_string(i);
}

}  // namespace

GraphModule trace(const TraceFn& fn, const std::vector<Tensor>& example_inputs, const TraceOptions& options,
                  const nn::Module* module) {
  EMBER_CHECK(static_cast<bool>(fn), "[jit::trace] no function to trace");
  if (module != nullptr && module->is_training()) {
    warn("[jit::trace] the model is in training mode: dropout and batch norm are recorded as in training (random "
         "masks, batch statistics). Call model->eval() before tracing a model for inference");
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < example_inputs.size(); ++i) names.push_back(default_name(options.input_names, i, "input"));
  // The dynamic dims: (input, dim) pairs, all of one size b.
  std::vector<std::pair<int, int>> dyn = options.dynamic_dims;
  if (options.dynamic_batch) {
    for (size_t i = 0; i < example_inputs.size(); ++i) {
      if (example_inputs[i].defined() && example_inputs[i].dim() > 0) dyn.emplace_back(static_cast<int>(i), 0);
    }
  }
  int64_t b1 = -1;
  for (auto [i, d] : dyn) {
    EMBER_CHECK(i >= 0 && i < static_cast<int>(example_inputs.size()), "[jit::trace] dynamic dim names input ", i,
                ", but there are ", example_inputs.size(), " inputs");
    const Tensor& t = example_inputs[static_cast<size_t>(i)];
    EMBER_CHECK(d >= 0 && d < t.dim(), "[jit::trace] dynamic dim ", d, " of input ", i, " (sizes ", t.sizes(),
                ") is out of range");
    EMBER_CHECK(b1 < 0 || t.size(d) == b1, "[jit::trace] all dynamic dims must have one size (the batch B), but input ",
                i, " dim ", d, " is ", t.size(d), " and an earlier one is ", b1);
    b1 = t.size(d);
    EMBER_CHECK(b1 >= 1, "[jit::trace] a dynamic dim needs an example size of at least 1, got input ", i, " dim ", d,
                " of size 0");
  }
  StateSnapshot snapshot(module);
  TraceRun first = trace_once(fn, example_inputs, options, module, names);
  Graph graph = std::move(first.graph);
  if (!dyn.empty()) {
    std::vector<Tensor> grown = example_inputs;
    for (size_t i = 0; i < grown.size(); ++i) {
      for (auto [ii, d] : dyn) {
        if (ii == static_cast<int>(i)) grown[i] = cat({example_inputs[i], example_inputs[i].narrow(d, 0, 1)}, d);
      }
    }
    TraceRun second = trace_once(fn, grown, options, module, names);
    merge_traces(graph, second.graph, b1);
  }
  for (size_t k = 0; k < graph.outputs.size(); ++k) graph.output_names.push_back(default_name(options.output_names, k, "output"));
  eliminate_dead_code(graph);
  graph.verify();
  GraphModule gm(std::move(graph));
  if (options.check) {
    std::vector<Tensor> got = gm.run(example_inputs);
    for (size_t k = 0; k < got.size(); ++k) {
      const Tensor& want = first.outputs[k];
      const bool random = std::any_of(gm.graph().nodes.begin(), gm.graph().nodes.end(),
                                      [](const Node& n) { return find_op(n.op)->random; });
      if (random) break;
      EMBER_CHECK(got[k].sizes() == want.sizes() && got[k].dtype() == want.dtype() &&
                      (got[k].numel() == 0 || got[k].equal(want) ||
                       (got[k].is_floating_point() && got[k].isnan().equal(want.isnan()))),
                  "[jit::trace] the traced graph's output ", k, " differs from the eager forward's on the example "
                  "inputs; the forward may depend on something the tracer cannot see (global state, Python-side "
                  "values). Please report this with the model");
    }
  }
  return gm;
}

GraphModule trace(nn::Module& module, const Tensor& example_input, const TraceOptions& options) {
  return trace([&module](const std::vector<Tensor>& in) { return std::vector<Tensor>{module(in[0])}; },
               {example_input}, options, &module);
}

GraphModule trace(nn::Module& module, const TraceFn& fn, const std::vector<Tensor>& example_inputs,
                  const TraceOptions& options) {
  return trace(fn, example_inputs, options, &module);
}

void mark_constant(const Tensor& t) {
  detail::Recorder* r = detail::tl_recorder;
  EMBER_CHECK(r != nullptr, "[jit::mark_constant] called outside jit::trace");
  if (!t.defined()) return;
  if (r->ids.count(t.impl()) == 0) {
    r->keep.push_back(t);
    r->constants.insert(t.impl());
    return;
  }
  // A traced value: its current value becomes a constant from here on.
  Tensor value;
  {
    detail::PauseRecording pause;
    value = t.detach().clone();
  }
  r->keep.push_back(t);
  r->ids[t.impl()] = r->graph.add_const(value);
  r->constants.insert(t.impl());
}

bool is_tracing() { return detail::tl_recorder != nullptr; }

}  // namespace ember::jit
