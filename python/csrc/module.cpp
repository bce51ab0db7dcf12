// ember._C: the extension module under the `ember` Python package (python/ember). The
// Python side (nn, optim, utils.data, ...) is written in Python over these bindings, as
// torch's is; see docs/python.md.

#include <pybind11/pybind11.h>

#include "bind.h"

namespace ember::python {

namespace {
py::object g_size_class;             // ember.Size, set by the package at import
py::object g_return_types;           // dict name -> namedtuple class
}  // namespace

bool is_number(py::handle h) {
  if (PyBool_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr())) return true;
  // numpy scalars (np.float32(1), np.int64(2)) expose __index__ or __float__.
  return !as_tensor(h) && !PySequence_Check(h.ptr()) &&
         (PyObject_HasAttrString(h.ptr(), "__index__") || PyObject_HasAttrString(h.ptr(), "__float__")) &&
         !PyUnicode_Check(h.ptr());
}

const Tensor* as_tensor(py::handle h) {
  // A type check first: pybind11's caster, on a failed load, also looks for a foreign
  // module's type (a failing attribute lookup), which tripled the cost of `x * 2`.
  static PyTypeObject* const tensor_type = reinterpret_cast<PyTypeObject*>(py::type::of<Tensor>().ptr());
  if (!PyObject_TypeCheck(h.ptr(), tensor_type)) return nullptr;
  py::detail::make_caster<Tensor> c;
  if (!c.load(h, false)) return nullptr;
  return &py::detail::cast_op<const Tensor&>(c);
}

Scalar to_scalar(py::handle h, const char* op) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) return Scalar(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0) throw py::value_error(std::string(op) + "(): the integer " + py::str(h).cast<std::string>() +
                                             " does not fit in int64");
    return Scalar(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(o)) return Scalar(PyFloat_AS_DOUBLE(o));
  if (const Tensor* t = as_tensor(h)) {
    if (t->numel() == 1) return t->item();
  }
  if (!PyUnicode_Check(o) && PyObject_HasAttrString(o, "__index__") && !as_tensor(h)) {
    return Scalar(static_cast<int64_t>(h.attr("__index__")().cast<long long>()));
  }
  if (!PyUnicode_Check(o) && PyObject_HasAttrString(o, "__float__") && !as_tensor(h)) {
    return Scalar(h.attr("__float__")().cast<double>());
  }
  throw py::type_error(std::string(op) + "(): expected a number (bool, int or float), got " +
                       std::string(py::str(py::type::handle_of(h).attr("__name__"))));
}

std::vector<int64_t> to_int_list(py::handle h, const char* op, const char* arg) {
  std::vector<int64_t> out;
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) {
    out.push_back(h.cast<int64_t>());
    return out;
  }
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    py::sequence s = py::reinterpret_borrow<py::sequence>(h);
    out.reserve(s.size());
    for (py::handle item : s) {
      if (!PyLong_Check(item.ptr()) || PyBool_Check(item.ptr())) {
        if (const Tensor* t = as_tensor(item); t && t->numel() == 1 && !t->is_floating_point()) {
          out.push_back(t->item<int64_t>());
          continue;
        }
        if (PyObject_HasAttrString(item.ptr(), "__index__") && !as_tensor(item)) {
          out.push_back(item.attr("__index__")().cast<int64_t>());
          continue;
        }
        throw py::type_error(std::string(op) + "(): argument '" + arg + "' must be a tuple of ints, but found element of type " +
                             std::string(py::str(py::type::handle_of(item).attr("__name__"))));
      }
      out.push_back(item.cast<int64_t>());
    }
    return out;
  }
  if (PyObject_HasAttrString(h.ptr(), "__index__") && !as_tensor(h)) {
    out.push_back(h.attr("__index__")().cast<int64_t>());
    return out;
  }
  throw py::type_error(std::string(op) + "(): argument '" + arg + "' must be an int or a tuple of ints, not " +
                       std::string(py::str(py::type::handle_of(h).attr("__name__"))));
}

std::vector<int64_t> shape_from_args(const py::args& args, const char* op) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return to_int_list(args[0], op, "size");
  std::vector<int64_t> out;
  out.reserve(args.size());
  for (py::handle a : args) {
    if (!PyLong_Check(a.ptr()) || PyBool_Check(a.ptr())) {
      std::vector<int64_t> one = to_int_list(a, op, "size");
      if (one.size() != 1)
        throw py::type_error(std::string(op) + "(): size must be given as ints or as one tuple of ints");
      out.push_back(one[0]);
      continue;
    }
    out.push_back(a.cast<int64_t>());
  }
  return out;
}

void check_device(py::handle device, const char* op) {
  if (device.is_none()) return;
  const std::string d = py::str(device);
  if (d == "cpu" || d.rfind("cpu:", 0) == 0) return;
  throw py::value_error(std::string(op) + "(): ember runs on the CPU only; got device '" + d +
                        "' (drop the device argument or use 'cpu')");
}

py::object make_size(IntArrayRef sizes) {
  py::tuple t(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) t[i] = py::int_(sizes[i]);
  if (!g_size_class) return t;
  return g_size_class(t);
}

py::object values_indices(const char* name, std::tuple<Tensor, Tensor> r) {
  py::object cls = g_return_types ? py::reinterpret_borrow<py::dict>(g_return_types).attr("get")(name)
                                  : py::none();
  if (cls.is_none()) return py::make_tuple(std::get<0>(r), std::get<1>(r));
  return cls(std::get<0>(r), std::get<1>(r));
}

void init_dtype(py::module_& m) {
  py::class_<DType> dt(m, "dtype");
  dt.def("__repr__", [](DType t) { return "ember." + std::string(dtype_name(t)); })
      .def("__eq__", [](DType a, py::handle b) {
        py::detail::make_caster<DType> c;
        return c.load(b, false) && py::detail::cast_op<DType>(c) == a;
      })
      .def("__hash__", [](DType t) { return static_cast<int>(t); })
      .def_property_readonly("is_floating_point", [](DType t) { return is_floating_point(t); })
      .def_property_readonly("is_signed", [](DType t) { return is_signed(t); })
      .def_property_readonly("itemsize", [](DType t) { return element_size(t); })
      .def(py::pickle([](DType t) { return std::string(dtype_name(t)); },
                      [](const std::string& name) {
                        for (int i = 0; i < kNumDTypes; ++i)
                          if (dtype_name(static_cast<DType>(i)) == name) return static_cast<DType>(i);
                        throw py::value_error("unknown dtype " + name);
                      }));
  const std::pair<const char*, DType> names[] = {
      {"float32", kFloat32}, {"float", kFloat32},   {"float64", kFloat64}, {"double", kFloat64},
      {"float16", kFloat16}, {"half", kFloat16},    {"bfloat16", kBFloat16}, {"int8", kInt8},
      {"uint8", kUInt8},     {"int16", kInt16},     {"short", kInt16},     {"int32", kInt32},
      {"int", kInt32},       {"int64", kInt64},     {"long", kInt64},      {"bool", kBool}};
  for (const auto& [name, t] : names) m.attr(name) = py::cast(t);
  m.def("get_default_dtype", &get_default_dtype);
  m.def("set_default_dtype", &set_default_dtype, py::arg("d"));
  m.def("promote_types", &promote_types, py::arg("type1"), py::arg("type2"));
  m.def("_set_size_class", [](py::object cls) { g_size_class = std::move(cls); });
  m.def("_set_return_types", [](py::dict d) { g_return_types = std::move(d); });
}

}  // namespace ember::python

PYBIND11_MODULE(_C, m) {
  m.doc() = "ember's C++ core (tensors, ops, autograd); import the `ember` package instead.";
  using namespace ember::python;
  // ember::Error -> RuntimeError with the same text, or IndexError where torch raises one
  // (an index or dim outside its range), so `except IndexError` code ports unchanged.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ember::Error& e) {
      const std::string_view msg = e.message();
      const bool index = msg.find("out of range") != std::string_view::npos ||
                         msg.find("out of bounds") != std::string_view::npos ||
                         msg.find("index outside") != std::string_view::npos;
      PyErr_SetString(index ? PyExc_IndexError : PyExc_RuntimeError, e.what());
    }
  });
  init_dtype(m);
  init_tensor(m);
  init_functions(m);
  init_autograd(m);
  init_optim(m);
  init_interop(m);
  init_nn_modules(m);
  init_guards(m);
  init_amp(m);
  init_distributed(m);
  // ember::warn (a guard, a recompiling graph, ...) becomes a Python UserWarning, so
  // `warnings` filters, pytest and logging see it; it may come from a thread without the GIL.
  ember::set_warning_handler([](const std::string& message) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) < 0) PyErr_WriteUnraisable(nullptr);
  });
  // Globals holding Python objects must die before the interpreter does.
  py::module_::import("atexit").attr("register")(py::cpp_function([]() {
    ember::set_warning_handler(nullptr);
    g_size_class = py::object();
    g_return_types = py::object();
  }));
}
