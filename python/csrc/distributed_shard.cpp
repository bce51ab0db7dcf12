// ember._C._distributed, continued: FullyShardedDataParallel over Python modules and the
// sharded checkpoint files (src/ember/distributed/fsdp.h, sharded_checkpoint.h). The
// Python layer (python/ember/distributed/fsdp, checkpoint) builds on these.
//
// Note [FSDP over Python modules]: ember's FSDP works on C++ modules, and a Python module
// is not one. ModuleMirror is a C++ module tree built to match the Python one: the same
// child names, and parameters and buffers that are the very tensors (one TensorImpl) of
// the Python module. FSDP shards the mirror; because it swaps each parameter's data in
// place (set_data), the Python layers read the gathered or freed parameters through their
// own attributes. The Python wrapper routes each unit's forward through the mirror's
// hooks (run_with_hooks), which gather before it and hook the outputs after it; backward
// needs nothing more, since gradients reach the same tensors the C++ hooks watch.

#include <pybind11/stl.h>

#include "bind.h"

#ifdef EMBER_PYTHON_DISTRIBUTED
#include "ember/distributed/distributed.h"
#include "ember/distributed/fsdp.h"
#include "ember/distributed/sharded_checkpoint.h"
#endif

namespace ember::python {

#ifdef EMBER_PYTHON_DISTRIBUTED
namespace {
namespace dist = ember::distributed;
using nn::TensorList;
using nn::parallel::FullyShardedDataParallelImpl;
using nn::parallel::ShardingStrategy;

// call(f): bind.h's distributed_call (without the GIL; ember::Error -> RuntimeError).
template <typename F>
auto call(F&& f) {
  return distributed_call(std::forward<F>(f));
}

// Note [FSDP over Python modules].
class ModuleMirror : public nn::Module {
 public:
  explicit ModuleMirror(std::string name) : Module(std::move(name)) {}
  void add_parameter(const std::string& name, const Tensor& t) { register_parameter(name, t, t.requires_grad()); }
  void add_buffer(const std::string& name, const Tensor& t) { register_buffer(name, t); }
  void add_child(const std::string& name, std::shared_ptr<ModuleMirror> child) {
    register_module(name, std::move(child));
  }
  TensorList call_with_hooks(const TensorList& inputs, const std::function<TensorList(const TensorList&)>& fn) {
    return run_with_hooks(inputs, fn);
  }
};

py::list to_pairs(const OrderedDict<std::string, Tensor>& d) {
  py::list out;
  for (const auto& item : d) out.append(py::make_tuple(item.key(), item.value()));
  return out;
}

// The replicated part of a checkpoint: None, bool, int, float, str, lists/tuples, dicts
// with str keys and tensors, as a Value, and back (tuples come back as lists).
Value to_value(py::handle h, const std::string& where) {
  if (h.is_none()) return Value();
  if (PyBool_Check(h.ptr())) return Value(h.cast<bool>());
  if (PyLong_Check(h.ptr())) return Value(h.cast<int64_t>());
  if (PyFloat_Check(h.ptr())) return Value(h.cast<double>());
  if (PyUnicode_Check(h.ptr())) return Value(h.cast<std::string>());
  if (const Tensor* t = as_tensor(h)) return Value(*t);
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    Value out = Value::list();
    size_t i = 0;
    for (py::handle item : py::reinterpret_borrow<py::sequence>(h))
      out.push_back(to_value(item, where + "[" + std::to_string(i++) + "]"));
    return out;
  }
  if (PyDict_Check(h.ptr())) {
    Value out = Value::dict();
    for (auto item : py::reinterpret_borrow<py::dict>(h)) {
      if (!PyUnicode_Check(item.first.ptr()))
        throw py::type_error("[save_state_dict] the key " + py::repr(item.first).cast<std::string>() + " in " + where +
                             " is not a str; sharded checkpoints keep dicts with str keys only");
      const auto key = item.first.cast<std::string>();
      out[key] = to_value(item.second, where + "['" + key + "']");
    }
    return out;
  }
  throw py::type_error("[save_state_dict] " + where + " is a " +
                       py::str(py::type::handle_of(h).attr("__name__")).cast<std::string>() +
                       "; a sharded checkpoint holds tensors, None, bool, int, float, str, lists and dicts of them");
}

py::object to_py(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None:
      return py::none();
    case Value::Kind::Bool:
      return py::bool_(v.to_bool());
    case Value::Kind::Int:
      return py::int_(v.to_int());
    case Value::Kind::Double:
      return py::float_(v.to_double());
    case Value::Kind::String:
      return py::str(v.to_string());
    case Value::Kind::Tensor:
      return py::cast(v.to_tensor());
    case Value::Kind::List: {
      py::list out;
      for (const Value& x : v.to_list()) out.append(to_py(x));
      return out;
    }
    case Value::Kind::Dict: {
      py::dict out;
      for (const auto& item : v.to_dict()) out[py::str(item.key())] = to_py(item.value());
      return out;
    }
  }
  return py::none();
}

void bind_fsdp(py::module_& m) {
  py::class_<ModuleMirror, nn::Module, std::shared_ptr<ModuleMirror>>(
      m, "ModuleMirror", "A C++ module tree sharing a Python module's tensors (Note [FSDP over Python modules]).")
      .def(py::init<std::string>(), py::arg("name"))
      .def("add_parameter", &ModuleMirror::add_parameter, py::arg("name"), py::arg("tensor"))
      .def("add_buffer", &ModuleMirror::add_buffer, py::arg("name"), py::arg("tensor"))
      .def("add_child", &ModuleMirror::add_child, py::arg("name"), py::arg("child"))
      .def(
          "run_with_hooks",
          [](ModuleMirror& self, const TensorList& inputs, py::function fn) {
            return call([&] {
              return self.call_with_hooks(inputs, [&](const TensorList& in) {
                py::gil_scoped_acquire acquire;
                return fn(in).cast<TensorList>();
              });
            });
          },
          py::arg("inputs"), py::arg("fn"),
          "Runs fn(inputs) -> output tensors between this module's forward pre-hooks and hooks.");

  py::enum_<ShardingStrategy>(m, "ShardingStrategy")
      .value("FULL_SHARD", ShardingStrategy::FULL_SHARD)
      .value("SHARD_GRAD_OP", ShardingStrategy::SHARD_GRAD_OP);

  py::class_<FullyShardedDataParallelImpl, std::shared_ptr<FullyShardedDataParallelImpl>>(
      m, "FSDPCore", "The C++ FullyShardedDataParallel over a ModuleMirror (src/ember/distributed/fsdp.h).")
      .def(py::init([](std::shared_ptr<ModuleMirror> root, dist::ProcessGroupPtr group, ShardingStrategy strategy,
                       bool sync_module_states, py::object policy) {
             nn::parallel::FSDPOptions o;
             o.process_group = std::move(group);
             o.sharding_strategy = strategy;
             o.sync_module_states = sync_module_states;
             if (!policy.is_none()) {
               // Held by FSDP (copied without the GIL): the last copy drops the reference with it.
               std::shared_ptr<py::object> fn(new py::object(policy), [](py::object* p) {
                 py::gil_scoped_acquire acquire;
                 delete p;
               });
               o.auto_wrap_policy = [fn](const nn::Module&, const std::string& name) {
                 py::gil_scoped_acquire acquire;
                 return (*fn)(name).cast<bool>();
               };
             }
             return call([&] { return std::make_shared<FullyShardedDataParallelImpl>(std::move(root), std::move(o)); });
           }),
           py::arg("module"), py::arg("group"), py::arg("sharding_strategy"), py::arg("sync_module_states"),
           py::arg("auto_wrap_policy"))
      .def("prepare_forward", [](FullyShardedDataParallelImpl& f) { call([&] { f.prepare_forward(); }); })
      .def(
          "after_forward",
          [](FullyShardedDataParallelImpl& f, const TensorList& outputs) { call([&] { f.after_forward(outputs); }); },
          py::arg("outputs"))
      .def("unit_names", &FullyShardedDataParallelImpl::unit_names)
      .def("unit_parameter_names", &FullyShardedDataParallelImpl::unit_parameter_names)
      .def(
          "shard",
          [](const FullyShardedDataParallelImpl& f, size_t unit) { return call([&] { return f.shard(unit); }); },
          py::arg("unit"))
      .def("original_state_keys", &FullyShardedDataParallelImpl::original_state_keys)
      .def("full_state_dict",
           [](FullyShardedDataParallelImpl& f) { return to_pairs(call([&] { return f.full_state_dict(); })); })
      .def(
          "load_full_state_dict",
          [](FullyShardedDataParallelImpl& f, const std::vector<std::pair<std::string, Tensor>>& items, bool strict) {
            OrderedDict<std::string, Tensor> d;
            for (const auto& [k, v] : items) d.insert(k, v);
            call([&] { f.load_full_state_dict(d, strict); });
          },
          py::arg("items"), py::arg("strict"))
      .def(
          "local_pieces",
          [](const FullyShardedDataParallelImpl& f) {
            py::list out;
            for (const auto& p : f.local_pieces())
              out.append(py::make_tuple(p.name, p.shape, p.begin, p.end, p.unit, p.shard_offset));
            return out;
          },
          "(name, shape, begin, end, unit, shard_offset) for every original parameter: the elements "
          "[begin, end) of its flattening held in unit's shard from shard_offset on.")
      .def("memory_stats", [](const FullyShardedDataParallelImpl& f) {
        const auto s = f.memory_stats();
        py::dict d;
        d["sharded_parameter_bytes"] = s.sharded_parameter_bytes;
        d["sharded_gradient_bytes"] = s.sharded_gradient_bytes;
        d["full_parameter_bytes"] = s.full_parameter_bytes;
        d["gathered_bytes_now"] = s.gathered_bytes_now;
        d["peak_gathered_bytes"] = s.peak_gathered_bytes;
        return d;
      });
}

void bind_checkpoint(py::module_& m) {
  m.def(
      "save_sharded_state",
      [](const std::vector<std::tuple<std::string, std::vector<int64_t>, DType, int64_t, std::optional<Tensor>>>&
             entries,
         py::handle replicated, const std::string& dir, dist::ProcessGroupPtr group) {
        dist::ShardedState st;
        for (const auto& [name, shape, dtype, begin, local] : entries) {
          dist::ShardedTensor t;
          t.shape = shape;
          t.dtype = dtype;
          t.begin = begin;
          if (local) t.local = *local;
          st.tensors.insert(name, std::move(t));
        }
        st.replicated = to_value(replicated, "the replicated values");
        call([&] { dist::save_sharded_state(st, dir, group); });
      },
      py::arg("entries"), py::arg("replicated"), py::arg("dir"), py::arg("group") = nullptr,
      "Writes a sharded checkpoint (a collective): entries are (name, shape, dtype, begin, local 1-D "
      "tensor or None), every rank's pieces covering each tensor once.");

  py::class_<dist::ShardedCheckpointReader>(m, "ShardedCheckpointReader",
                                            "Reads a sharded checkpoint saved with any number of ranks.")
      .def(py::init([](const std::string& dir) {
             return call([&] { return std::make_unique<dist::ShardedCheckpointReader>(dir); });
           }),
           py::arg("dir"))
      .def_property_readonly("dir", &dist::ShardedCheckpointReader::dir)
      .def_property_readonly("world_size", &dist::ShardedCheckpointReader::world_size)
      .def("names", &dist::ShardedCheckpointReader::names)
      .def("contains", &dist::ShardedCheckpointReader::contains, py::arg("name"))
      .def(
          "shape",
          [](const dist::ShardedCheckpointReader& r, const std::string& n) { return call([&] { return r.shape(n); }); },
          py::arg("name"))
      .def(
          "dtype",
          [](const dist::ShardedCheckpointReader& r, const std::string& n) { return call([&] { return r.dtype(n); }); },
          py::arg("name"))
      .def("replicated", [](const dist::ShardedCheckpointReader& r) { return to_py(r.replicated()); })
      .def(
          "read",
          [](dist::ShardedCheckpointReader& r, const std::string& n, int64_t begin, int64_t end) {
            return call([&] { return r.read(n, begin, end); });
          },
          py::arg("name"), py::arg("begin"), py::arg("end"))
      .def(
          "read_full",
          [](dist::ShardedCheckpointReader& r, const std::string& n) { return call([&] { return r.read_full(n); }); },
          py::arg("name"));
}
}  // namespace
#endif  // EMBER_PYTHON_DISTRIBUTED

void init_distributed_shard(py::module_& d) {
#ifdef EMBER_PYTHON_DISTRIBUTED
  bind_fsdp(d);
  bind_checkpoint(d);
#else
  (void)d;
#endif
}

}  // namespace ember::python
