// ember._C._distributed: the C++ side of ember.distributed (torch.distributed's names) and of
// ember.nn.parallel.DistributedDataParallel (the Reducer). Every call that may wait on other
// processes releases the GIL. Collectives take global ranks, as torch's do; the Python layer
// (python/ember/distributed) adds the defaults, timedelta timeouts, object collectives and
// non-member groups. Built only when the distributed library is (Gloo found); otherwise the
// submodule holds is_available() == False alone.

#include <pybind11/stl.h>

#include <chrono>
#include <optional>

#include "bind.h"
#include "ember/data/sampler.h"

#ifdef EMBER_PYTHON_DISTRIBUTED
#include "ember/distributed/distributed.h"
#include "ember/distributed/reducer.h"
#endif

namespace ember::python {

namespace {

#ifdef EMBER_PYTHON_DISTRIBUTED
namespace dist = ember::distributed;
using std::chrono::milliseconds;

// call(f): bind.h's distributed_call (without the GIL; ember::Error -> RuntimeError).
template <typename F>
auto call(F&& f) {
  return distributed_call(std::forward<F>(f));
}

// A timeout argument: None (the default), a datetime.timedelta, or seconds as a number.
milliseconds to_ms(py::handle t, milliseconds fallback) {
  if (t.is_none()) return fallback;
  double seconds = 0;
  if (py::hasattr(t, "total_seconds")) {
    seconds = t.attr("total_seconds")().cast<double>();
  } else if (PyFloat_Check(t.ptr()) || (PyLong_Check(t.ptr()) && !PyBool_Check(t.ptr()))) {
    seconds = t.cast<double>();
  } else {
    throw py::type_error("timeout must be a datetime.timedelta or a number of seconds, not " +
                         std::string(py::str(py::type::handle_of(t).attr("__name__"))));
  }
  if (!(seconds > 0)) throw py::value_error("timeout must be positive, got " + std::to_string(seconds) + " s");
  return milliseconds(static_cast<int64_t>(seconds * 1000.0 + 0.5));
}

py::bytes to_bytes(const dist::Bytes& b) { return py::bytes(reinterpret_cast<const char*>(b.data()), b.size()); }

dist::Bytes from_value(py::handle v) {
  std::string s;
  if (PyUnicode_Check(v.ptr())) {
    s = v.cast<std::string>();
  } else if (PyBytes_Check(v.ptr()) || PyByteArray_Check(v.ptr())) {
    s = py::bytes(py::reinterpret_borrow<py::object>(v)).cast<std::string>();
  } else {
    throw py::type_error("store values must be str or bytes, not " +
                         std::string(py::str(py::type::handle_of(v).attr("__name__"))));
  }
  return dist::Bytes(s.begin(), s.end());
}

// The Python exception an ember error would raise (Work.exception()).
py::object to_py_exception(std::exception_ptr e) {
  if (!e) return py::none();
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return py::module_::import("builtins").attr("RuntimeError")(std::string(x.what()));
  } catch (...) {
    return py::module_::import("builtins").attr("RuntimeError")("unknown error");
  }
}

// Collectives return the Work when async_op, else None after it finished.
py::object result(const dist::WorkPtr& w, bool async_op) { return async_op ? py::cast(w) : py::none(); }

void bind_stores(py::module_& m) {
  py::class_<dist::Store, std::shared_ptr<dist::Store>>(m, "Store")
      .def("set", [](dist::Store& s, const std::string& k, py::handle v) {
        auto b = from_value(v);
        call([&] { s.set(k, b); });
      }, py::arg("key"), py::arg("value"))
      .def("get", [](dist::Store& s, const std::string& k) { return to_bytes(call([&] { return s.get(k); })); },
           py::arg("key"))
      .def("add", [](dist::Store& s, const std::string& k, int64_t d) { return call([&] { return s.add(k, d); }); },
           py::arg("key"), py::arg("amount"))
      .def("compare_set",
           [](dist::Store& s, const std::string& k, py::handle expected, py::handle desired) {
             auto e = from_value(expected), d = from_value(desired);
             return to_bytes(call([&] { return s.compare_set(k, e, d); }));
           },
           py::arg("key"), py::arg("expected_value"), py::arg("desired_value"))
      .def("wait",
           [](dist::Store& s, const std::vector<std::string>& keys, py::handle timeout) {
             const milliseconds t = to_ms(timeout, s.timeout());
             call([&] { s.wait(keys, t); });
           },
           py::arg("keys"), py::arg("timeout") = py::none())
      .def("check", [](dist::Store& s, const std::vector<std::string>& keys) { return call([&] { return s.check(keys); }); },
           py::arg("keys"))
      .def("delete_key", [](dist::Store& s, const std::string& k) { return call([&] { return s.delete_key(k); }); },
           py::arg("key"))
      .def("num_keys", [](dist::Store& s) { return call([&] { return s.num_keys(); }); })
      .def_property_readonly("timeout", [](const dist::Store& s) {
        return py::module_::import("datetime").attr("timedelta")(py::arg("milliseconds") = s.timeout().count());
      });
  py::class_<dist::TCPStore, dist::Store, std::shared_ptr<dist::TCPStore>>(m, "TCPStore")
      .def(py::init([](const std::string& host, int port, std::optional<int> /*world_size*/, bool is_master,
                       py::handle timeout) {
             const milliseconds t = to_ms(timeout, std::chrono::minutes(5));
             return call([&] { return std::make_shared<dist::TCPStore>(host, port, is_master, t); });
           }),
           py::arg("host_name"), py::arg("port"), py::arg("world_size") = py::none(), py::arg("is_master") = false,
           py::arg("timeout") = py::none())
      .def_property_readonly("port", &dist::TCPStore::port)
      .def_property_readonly("host", &dist::TCPStore::host);
  py::class_<dist::FileStore, dist::Store, std::shared_ptr<dist::FileStore>>(m, "FileStore")
      .def(py::init([](const std::string& path, std::optional<int> /*world_size*/, py::handle timeout) {
             const milliseconds t = to_ms(timeout, dist::kDefaultTimeout);
             return call([&] { return std::make_shared<dist::FileStore>(path, t); });
           }),
           py::arg("file_name"), py::arg("world_size") = py::none(), py::arg("timeout") = py::none());
  py::class_<dist::PrefixStore, dist::Store, std::shared_ptr<dist::PrefixStore>>(m, "PrefixStore")
      .def(py::init([](const std::string& prefix, std::shared_ptr<dist::Store> store) {
             return call([&] { return std::make_shared<dist::PrefixStore>(prefix, std::move(store)); });
           }),
           py::arg("prefix"), py::arg("store"));
}

void bind_groups(py::module_& m) {
  py::enum_<dist::ReduceOp>(m, "ReduceOp")
      .value("SUM", dist::ReduceOp::SUM)
      .value("AVG", dist::ReduceOp::AVG)
      .value("PRODUCT", dist::ReduceOp::PRODUCT)
      .value("MIN", dist::ReduceOp::MIN)
      .value("MAX", dist::ReduceOp::MAX);

  py::class_<dist::Work, dist::WorkPtr>(m, "Work")
      .def("wait",
           [](dist::Work& w, py::handle timeout) {
             const milliseconds t = to_ms(timeout, milliseconds::max());
             call([&] { w.wait(t); });
             return true;
           },
           py::arg("timeout") = py::none(),
           "Waits until the operation finished; raises its error (RuntimeError), or a RuntimeError "
           "when a timeout is given and it is still running then.")
      .def("is_completed", &dist::Work::is_completed)
      .def("is_success", &dist::Work::is_success)
      .def("exception", [](const dist::Work& w) { return to_py_exception(w.exception()); });

  py::class_<dist::ProcessGroup, dist::ProcessGroupPtr>(m, "ProcessGroup")
      .def("rank", &dist::ProcessGroup::rank)
      .def("size", &dist::ProcessGroup::size)
      .def("name", &dist::ProcessGroup::backend)
      .def_property_readonly("ranks", [](const dist::ProcessGroup& g) {
        std::vector<int> r;
        for (int i = 0; i < g.size(); ++i) r.push_back(g.global_rank(i));
        return r;
      })
      .def("global_rank", &dist::ProcessGroup::global_rank, py::arg("group_rank"))
      .def("group_rank", &dist::ProcessGroup::group_rank, py::arg("global_rank"))
      .def("sequence_number", &dist::ProcessGroup::sequence_number)
      .def("__repr__", [](const dist::ProcessGroup& g) {
        return "<ProcessGroup " + g.backend() + " rank " + std::to_string(g.rank()) + " of " +
               std::to_string(g.size()) + ">";
      });

  m.def("init_process_group",
        [](const std::string& backend, const std::string& init_method, int rank, int world_size, py::handle timeout,
           std::shared_ptr<dist::Store> store, std::optional<bool> check_collectives) {
          dist::InitOptions o;
          o.backend = backend;
          o.init_method = init_method;
          o.rank = rank;
          o.world_size = world_size;
          o.timeout = to_ms(timeout, dist::kDefaultTimeout);
          o.store = std::move(store);
          if (check_collectives) o.check_collectives = *check_collectives;
          call([&] { dist::init_process_group(o); });
        },
        py::arg("backend"), py::arg("init_method"), py::arg("rank"), py::arg("world_size"), py::arg("timeout"),
        py::arg("store"), py::arg("check_collectives") = py::none());
  m.def("is_initialized", &dist::is_initialized);
  m.def("destroy_process_group", [] { call([] { dist::destroy_process_group(); }); });
  m.def("default_group", [] { return call([] { return dist::default_group(); }); });
  m.def("default_store", [] { return call([] { return dist::default_store(); }); });
  m.def("get_rank", [](const dist::ProcessGroupPtr& g) { return call([&] { return dist::get_rank(g); }); },
        py::arg("group") = nullptr);
  m.def("get_world_size", [](const dist::ProcessGroupPtr& g) { return call([&] { return dist::get_world_size(g); }); },
        py::arg("group") = nullptr);
  m.def("get_backend", [](const dist::ProcessGroupPtr& g) { return call([&] { return dist::get_backend(g); }); },
        py::arg("group") = nullptr);
  m.def("new_group",
        [](std::vector<int> ranks, py::handle timeout) {
          const milliseconds t = to_ms(timeout, milliseconds(0));
          return call([&] { return dist::new_group(std::move(ranks), t); });
        },
        py::arg("ranks"), py::arg("timeout") = py::none());
}

void bind_collectives(py::module_& m) {
  using G = const dist::ProcessGroupPtr&;
  const auto group = py::arg("group") = nullptr;
  const auto async = py::arg("async_op") = false;
  m.def("all_reduce",
        [](const Tensor& t, dist::ReduceOp op, G g, bool a) {
          return result(call([&] { return dist::all_reduce(t, op, g, a); }), a);
        },
        py::arg("tensor"), py::arg("op"), group, async);
  m.def("broadcast",
        [](const Tensor& t, int src, G g, bool a) {
          return result(call([&] { return dist::broadcast(t, src, g, a); }), a);
        },
        py::arg("tensor"), py::arg("src"), group, async);
  m.def("reduce",
        [](const Tensor& t, int dst, dist::ReduceOp op, G g, bool a) {
          return result(call([&] { return dist::reduce(t, dst, op, g, a); }), a);
        },
        py::arg("tensor"), py::arg("dst"), py::arg("op"), group, async);
  m.def("all_gather",
        [](const std::vector<Tensor>& out, const Tensor& t, G g, bool a) {
          return result(call([&] { return dist::all_gather(out, t, g, a); }), a);
        },
        py::arg("tensor_list"), py::arg("tensor"), group, async);
  m.def("all_gather_into_tensor",
        [](const Tensor& out, const Tensor& in, G g, bool a) {
          return result(call([&] { return dist::all_gather_into_tensor(out, in, g, a); }), a);
        },
        py::arg("output_tensor"), py::arg("input_tensor"), group, async);
  m.def("reduce_scatter",
        [](const Tensor& out, const std::vector<Tensor>& in, dist::ReduceOp op, G g, bool a) {
          return result(call([&] { return dist::reduce_scatter(out, in, op, g, a); }), a);
        },
        py::arg("output"), py::arg("input_list"), py::arg("op"), group, async);
  m.def("reduce_scatter_tensor",
        [](const Tensor& out, const Tensor& in, dist::ReduceOp op, G g, bool a) {
          return result(call([&] { return dist::reduce_scatter_tensor(out, in, op, g, a); }), a);
        },
        py::arg("output"), py::arg("input"), py::arg("op"), group, async);
  m.def("gather",
        [](const Tensor& t, const std::vector<Tensor>& list, int dst, G g, bool a) {
          return result(call([&] { return dist::gather(t, list, dst, g, a); }), a);
        },
        py::arg("tensor"), py::arg("gather_list"), py::arg("dst"), group, async);
  m.def("scatter",
        [](const Tensor& t, const std::vector<Tensor>& list, int src, G g, bool a) {
          return result(call([&] { return dist::scatter(t, list, src, g, a); }), a);
        },
        py::arg("tensor"), py::arg("scatter_list"), py::arg("src"), group, async);
  m.def("all_to_all",
        [](const std::vector<Tensor>& out, const std::vector<Tensor>& in, G g, bool a) {
          return result(call([&] { return dist::all_to_all(out, in, g, a); }), a);
        },
        py::arg("output_tensor_list"), py::arg("input_tensor_list"), group, async);
  m.def("all_to_all_single",
        [](const Tensor& out, const Tensor& in, const std::vector<int64_t>& out_splits,
           const std::vector<int64_t>& in_splits, G g, bool a) {
          return result(call([&] { return dist::all_to_all_single(out, in, out_splits, in_splits, g, a); }), a);
        },
        py::arg("output"), py::arg("input"), py::arg("output_split_sizes"), py::arg("input_split_sizes"), group,
        async);
  m.def("barrier", [](G g, bool a) { return result(call([&] { return dist::barrier(g, a); }), a); }, group, async);
  m.def("send", [](const Tensor& t, int dst, G g, int tag) { call([&] { dist::send(t, dst, g, tag); }); },
        py::arg("tensor"), py::arg("dst"), group, py::arg("tag") = 0);
  m.def("recv", [](const Tensor& t, int src, G g, int tag) { return call([&] { return dist::recv(t, src, g, tag); }); },
        py::arg("tensor"), py::arg("src"), group, py::arg("tag") = 0);
  m.def("isend",
        [](const Tensor& t, int dst, G g, int tag) { return call([&] { return dist::isend(t, dst, g, tag); }); },
        py::arg("tensor"), py::arg("dst"), group, py::arg("tag") = 0);
  m.def("irecv",
        [](const Tensor& t, int src, G g, int tag) { return call([&] { return dist::irecv(t, src, g, tag); }); },
        py::arg("tensor"), py::arg("src"), group, py::arg("tag") = 0);
}

void bind_reducer(py::module_& m) {
  py::class_<dist::Reducer>(m, "Reducer",
                            "DistributedDataParallel's gradient averaging over a list of parameters "
                            "(src/ember/distributed/reducer.h).")
      .def(py::init([](std::vector<std::string> names, std::vector<Tensor> params, dist::ProcessGroupPtr group,
                       double bucket_cap_mb, double first_bucket_mb, bool find_unused_parameters,
                       bool gradient_as_bucket_view, bool static_graph) {
             dist::ReducerOptions o{.bucket_cap_mb = bucket_cap_mb,
                                    .first_bucket_mb = first_bucket_mb,
                                    .find_unused_parameters = find_unused_parameters,
                                    .gradient_as_bucket_view = gradient_as_bucket_view,
                                    .static_graph = static_graph};
             return call([&] {
               return std::make_unique<dist::Reducer>(std::move(names), std::move(params), std::move(group), o);
             });
           }),
           py::arg("names"), py::arg("params"), py::arg("group"), py::arg("bucket_cap_mb"),
           py::arg("first_bucket_mb"), py::arg("find_unused_parameters"), py::arg("gradient_as_bucket_view") = false,
           py::arg("static_graph") = false)
      .def("prepare_forward", [](dist::Reducer& r, bool require_sync) { call([&] { r.prepare_forward(require_sync); }); },
           py::arg("require_sync"))
      .def("after_forward",
           [](dist::Reducer& r, const std::vector<Tensor>& outputs) { call([&] { r.after_forward(outputs); }); },
           py::arg("outputs"))
      .def("finish_gradient_sync", [](dist::Reducer& r) { call([&] { r.finish_gradient_sync(); }); })
      // A built-in communication hook (comm_hooks.h) by name; group None: the default group.
      .def(
          "register_builtin_comm_hook",
          [](dist::Reducer& r, const std::string& name, py::object group) {
            namespace hooks = dist::algorithms::ddp_comm_hooks::default_hooks;
            dist::ProcessGroupPtr g = group.is_none() ? nullptr : group.cast<dist::ProcessGroupPtr>();
            dist::FuturePtr (*hook)(const dist::ProcessGroupPtr&, dist::GradBucket&) = nullptr;
            if (name == "allreduce") hook = hooks::allreduce_hook;
            if (name == "fp16_compress") hook = hooks::fp16_compress_hook;
            if (name == "bf16_compress") hook = hooks::bf16_compress_hook;
            if (!hook) {
              throw py::value_error("[DistributedDataParallel.register_comm_hook] no built-in hook '" + name +
                                    "'; use allreduce, fp16_compress or bf16_compress");
            }
            call([&] { r.register_comm_hook([g, hook](dist::GradBucket& b) { return hook(g, b); }); });
          },
          py::arg("name"), py::arg("group"))
      .def("bucket_names", &dist::Reducer::bucket_names)
      .def_property_readonly("buckets_rebuilt", &dist::Reducer::buckets_rebuilt);
}
#endif  // EMBER_PYTHON_DISTRIBUTED

}  // namespace

void init_distributed(py::module_& m) {
  py::module_ d = m.def_submodule("_distributed", "ember.distributed's C++ side");
  // ember::data::DistributedSampler's indices (libember; no process group needed).
  d.def(
      "distributed_sampler_indices",
      [](int64_t n, int64_t num_replicas, int64_t rank, bool shuffle, uint64_t seed, int64_t epoch, bool drop_last) {
        data::DistributedSampler s(n, num_replicas, rank, shuffle, seed, drop_last);
        s.set_epoch(epoch);
        return s.indices();
      },
      py::arg("n"), py::arg("num_replicas"), py::arg("rank"), py::arg("shuffle"), py::arg("seed"), py::arg("epoch"),
      py::arg("drop_last"));
#ifdef EMBER_PYTHON_DISTRIBUTED
  d.attr("available") = true;
  d.attr("mpi_available") = dist::is_mpi_available();
  bind_stores(d);
  bind_groups(d);
  bind_collectives(d);
  bind_reducer(d);
  init_distributed_shard(d);
#else
  d.attr("available") = false;
#endif
}

}  // namespace ember::python
