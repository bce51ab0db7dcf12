// ember.Tensor: properties, operators, indexing and methods with torch's Python signatures.
// The element-wise methods come from the op table (ops/pointwise_ops.h), so a new
// table op appears here without an edit.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sstream>

#include "bind.h"
#include "ember/autograd/autograd_meta.h"

namespace ember::python {

namespace {

using TensorClass = py::class_<Tensor>;

const char* type_name(py::handle h) { return Py_TYPE(h.ptr())->tp_name; }

// `self` returned as the same Python object: in-place methods return self, as torch's.
template <Tensor& (Tensor::*F)() const>
py::object inplace0(py::object self) {
  (py::cast<Tensor&>(self).*F)();
  return self;
}

// A binary method whose other operand is a tensor or a number.
template <typename FT, typename FS>
Tensor binary(const Tensor& a, py::handle b, const char* op, FT&& ft, FS&& fs) {
  if (const Tensor* t = as_tensor(b)) return ft(a, *t);
  if (is_number(b)) return fs(a, to_scalar(b, op));
  throw py::type_error(std::string(op) + "(): argument 'other' must be Tensor or Number, not " + type_name(b));
}

// The result of the reflected operator with a number on the left: number op tensor.
Tensor scalar_tensor_like(py::handle b, const Tensor& a, const char* op) {
  return scalar_tensor(to_scalar(b, op), TensorOptions(
      [&] {
        // Type promotion of a wrapped number: the tensor's category wins unless the number
        // is floating and the tensor is not.
        if (PyFloat_Check(b.ptr()) && !a.is_floating_point()) return get_default_dtype();
        if (PyLong_Check(b.ptr()) && !PyBool_Check(b.ptr()) && a.dtype() == kBool) return kInt64;
        return a.dtype();
      }()));
}

std::optional<DType> opt_dtype(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return h.cast<DType>();
}

// dim=None (all dims), an int, or a sequence of ints.
std::vector<int64_t> dims_arg(py::handle h, const char* op) {
  if (h.is_none()) return {};
  return to_int_list(h, op, "dim");
}

// ---- indexing ----
// Note [Python indexing]: x[...] is applied as torch does: ints select (and drop the dim),
// slices narrow, None inserts a dim, ... stands for the dims no other item names, and
// tensors (integer or bool) or lists become advanced indices, gathered afterwards by
// Tensor::index on the basic-indexed view. Advanced indices never copy before the gather.
struct Indexed {
  Tensor view;                       // after ints, slices, None, ...
  std::vector<Tensor> advanced;      // per dim of view; undefined = whole dim
  bool has_advanced = false;
};

Tensor to_index_tensor(py::handle item) {
  if (const Tensor* t = as_tensor(item)) return *t;
  // A list/tuple of ints or bools (nested allowed) becomes a tensor, as in torch.
  py::object tensor_fn = py::module_::import("ember").attr("tensor");
  return tensor_fn(item).cast<Tensor>();
}

Indexed apply_index(const Tensor& self, py::handle key) {
  std::vector<py::handle> items;
  py::tuple tup;
  if (PyTuple_Check(key.ptr())) {
    tup = py::reinterpret_borrow<py::tuple>(key);
    for (py::handle h : tup) items.push_back(h);
  } else {
    items.push_back(key);
  }
  // Dims the items consume (None and ... consume none; a bool tensor consumes its ndim).
  int64_t consumed = 0;
  int ellipses = 0;
  for (py::handle h : items) {
    if (h.is_none()) continue;
    if (h.ptr() == Py_Ellipsis) {
      ++ellipses;
      continue;
    }
    if (const Tensor* t = as_tensor(h); t && t->dtype() == kBool) {
      consumed += std::max<int64_t>(t->dim(), 1);
      continue;
    }
    ++consumed;
  }
  if (ellipses > 1) throw py::index_error("an index can only have a single ellipsis ('...')");
  if (consumed > self.dim())
    throw py::index_error("too many indices for tensor of dimension " + std::to_string(self.dim()));

  Indexed r;
  r.view = self;
  int64_t dim = 0;      // dim of r.view the next item applies to
  int64_t src_dim = 0;  // the same dim counted in self (for error messages)
  std::vector<std::pair<int64_t, Tensor>> adv;
  for (py::handle h : items) {
    PyObject* o = h.ptr();
    if (PyLong_Check(o) && !PyBool_Check(o)) {
      const int64_t i = h.cast<int64_t>();
      const int64_t n = r.view.size(dim);
      if (i < -n || i >= n)
        throw py::index_error("index " + std::to_string(i) + " is out of bounds for dimension " +
                              std::to_string(src_dim) + " with size " + std::to_string(n));
      r.view = r.view.select(dim, i);
      ++src_dim;
      continue;
    }
    if (PySlice_Check(o)) {
      Py_ssize_t start = 0, stop = 0, step = 0;
      if (PySlice_Unpack(o, &start, &stop, &step) < 0) throw py::error_already_set();
      if (step <= 0) throw py::value_error("step must be greater than zero");
      const int64_t n = r.view.size(dim);
      PySlice_AdjustIndices(n, &start, &stop, step);
      if (!(start == 0 && stop == n && step == 1)) r.view = r.view.slice(dim, start, std::max(start, stop), step);
      ++dim;
      ++src_dim;
      continue;
    }
    if (h.is_none()) {
      r.view = r.view.unsqueeze(dim);
      ++dim;
      continue;
    }
    if (o == Py_Ellipsis) {
      dim += self.dim() - consumed;
      src_dim += self.dim() - consumed;
      continue;
    }
    if (PyBool_Check(o)) throw py::index_error("indexing with a Python bool is not supported; use a bool tensor");
    if (!as_tensor(h) && PyObject_HasAttrString(o, "__index__") && !PySequence_Check(o)) {
      const int64_t i = h.attr("__index__")().cast<int64_t>();
      r.view = r.view.select(dim, i);
      continue;
    }
    Tensor t = to_index_tensor(h);
    if (t.dtype() == kBool) {
      if (t.dim() == 0) throw py::index_error("indexing with a 0-d bool tensor is not supported");
      for (int64_t k = 0; k < t.dim(); ++k) {
        if (t.size(k) != r.view.size(dim + k))
          throw py::index_error("The shape of the mask " + py::str(make_size(t.sizes())).cast<std::string>() +
                                " at index " + std::to_string(k) + " does not match the shape of the indexed tensor " +
                                py::str(make_size(r.view.sizes())).cast<std::string>());
      }
      if (t.dim() == 1) {
        adv.emplace_back(dim, t);
      } else {
        Tensor nz = t.nonzero();  // [n, k]
        for (int64_t k = 0; k < t.dim(); ++k) adv.emplace_back(dim + k, nz.select(1, k));
      }
      dim += t.dim();
      continue;
    }
    if (t.is_floating_point())
      throw py::index_error("tensors used as indices must be long, int, byte or bool tensors");
    adv.emplace_back(dim, t);
    ++dim;
  }
  if (!adv.empty()) {
    r.has_advanced = true;
    r.advanced.resize(static_cast<size_t>(adv.back().first + 1));
    for (auto& [d, t] : adv) r.advanced[static_cast<size_t>(d)] = t;
  }
  return r;
}

py::object getitem(const Tensor& self, py::handle key) {
  // Fast path: one int.
  if (PyLong_Check(key.ptr()) && !PyBool_Check(key.ptr())) {
    if (self.dim() == 0) throw py::index_error("invalid index of a 0-dim tensor. Use `tensor.item()` to convert a 0-dim tensor to a number");
    const int64_t i = key.cast<int64_t>();
    const int64_t n = self.size(0);
    if (i < -n || i >= n)
      throw py::index_error("index " + std::to_string(i) + " is out of bounds for dimension 0 with size " + std::to_string(n));
    return wrap(self.select(0, i));
  }
  Indexed r = apply_index(self, key);
  if (!r.has_advanced) {
    // x[...] / x[:] return a new view object, never self (as torch).
    return wrap(r.view.is_same(self) ? self.alias() : r.view);
  }
  return wrap(r.view.index(r.advanced));
}

void setitem(Tensor& self, py::handle key, py::handle value) {
  Indexed r = apply_index(self, key);
  if (r.has_advanced) {
    Tensor v;
    if (const Tensor* t = as_tensor(value)) v = *t;
    else v = scalar_tensor(to_scalar(value, "__setitem__"), TensorOptions(self.dtype()));
    r.view.index_put_(r.advanced, v.dtype() == r.view.dtype() ? v : v.to(r.view.dtype()));
    return;
  }
  if (const Tensor* t = as_tensor(value)) {
    r.view.copy_(*t);
  } else if (is_number(value)) {
    r.view.fill_(to_scalar(value, "__setitem__"));
  } else {
    py::object tensor_fn = py::module_::import("ember").attr("tensor");
    r.view.copy_(tensor_fn(value).cast<Tensor>());
  }
}

std::string repr(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

py::object item(const Tensor& t) {
  if (t.numel() != 1)
    throw py::value_error("only one element tensors can be converted to Python scalars (this one has " +
                          std::to_string(t.numel()) + " elements)");
  if (t.is_floating_point()) return py::float_(t.item<double>());
  if (t.dtype() == kBool) return py::bool_(t.item<bool>());
  return py::int_(t.item<int64_t>());
}

py::object tolist(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::function<py::object(int64_t, int64_t)> rec;
  std::vector<double> fv;
  std::vector<int64_t> iv;
  const bool fl = t.is_floating_point();
  const bool bl = t.dtype() == kBool;
  if (fl) fv = c.to_vector<double>();
  else iv = c.to_vector<int64_t>();
  auto leaf = [&](int64_t i) -> py::object {
    if (fl) return py::float_(fv[static_cast<size_t>(i)]);
    if (bl) return py::bool_(iv[static_cast<size_t>(i)] != 0);
    return py::int_(iv[static_cast<size_t>(i)]);
  };
  if (t.dim() == 0) return leaf(0);
  std::vector<int64_t> stride(static_cast<size_t>(t.dim()), 1);
  for (int64_t d = t.dim() - 2; d >= 0; --d) stride[static_cast<size_t>(d)] = stride[static_cast<size_t>(d + 1)] * t.size(d + 1);
  rec = [&](int64_t d, int64_t off) -> py::object {
    py::list l(static_cast<size_t>(t.size(d)));
    for (int64_t i = 0; i < t.size(d); ++i) {
      const int64_t o = off + i * stride[static_cast<size_t>(d)];
      l[static_cast<size_t>(i)] = d + 1 == t.dim() ? leaf(o) : rec(d + 1, o);
    }
    return l;
  };
  return rec(0, 0);
}

// to(dtype) / to(device) / to(other) / to(device, dtype), with copy=.
Tensor to_method(const Tensor& t, py::args args, py::kwargs kw) {
  std::optional<DType> dtype;
  bool copy = false;
  auto take = [&](py::handle a) {
    if (a.is_none()) return;
    py::detail::make_caster<DType> dc;
    if (dc.load(a, false)) {
      dtype = py::detail::cast_op<DType>(dc);
      return;
    }
    if (const Tensor* o = as_tensor(a)) {
      dtype = o->dtype();
      return;
    }
    check_device(a, "to");
  };
  for (py::handle a : args) {
    if (PyBool_Check(a.ptr())) continue;  // non_blocking
    take(a);
  }
  for (auto [k, v] : kw) {
    const std::string key = py::str(k);
    if (key == "dtype" || key == "device" || key == "other") take(v);
    else if (key == "copy") copy = v.cast<bool>();
    else if (key == "non_blocking" || key == "memory_format") continue;
    else throw py::type_error("to() got an unexpected keyword argument '" + key + "'");
  }
  if (!dtype) return copy ? t.clone() : t;
  return t.to(*dtype, copy);
}

py::object reduce_max_min(const Tensor& t, py::handle dim, bool keepdim, bool is_max) {
  if (dim.is_none()) return wrap(is_max ? t.max() : t.min());
  if (const Tensor* o = as_tensor(dim)) return wrap(is_max ? t.maximum(*o) : t.minimum(*o));
  const int64_t d = dim.cast<int64_t>();
  return values_indices(is_max ? "max" : "min", is_max ? t.max(d, keepdim) : t.min(d, keepdim));
}

py::list tensor_list(std::vector<Tensor> v) {
  py::list l(v.size());
  for (size_t i = 0; i < v.size(); ++i) l[i] = wrap(std::move(v[i]));
  return l;
}
py::tuple tensor_tuple(std::vector<Tensor> v) {
  py::tuple l(v.size());
  for (size_t i = 0; i < v.size(); ++i) l[i] = wrap(std::move(v[i]));
  return l;
}

}  // namespace

void init_tensor(py::module_& m) {
  py::class_<RemovableHandle>(m, "RemovableHandle").def("remove", &RemovableHandle::remove);
  // dynamic_attr: Python code sets attributes on tensors (t.name = ...), as it may on torch's.
  TensorClass cls(m, "Tensor", py::dynamic_attr());
  cls.def(py::init<>())
      .def(py::init([](const Tensor& other) { return Tensor(other.impl_ptr()); }), py::arg("data"))
      .def("__repr__", &repr)
      .def("__str__", &repr)
      .def("__hash__", [](py::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); })
      .def_property_readonly("shape", [](const Tensor& t) { return make_size(t.sizes()); })
      .def("size", [](const Tensor& t, py::object dim) -> py::object {
            if (dim.is_none()) return make_size(t.sizes());
            return py::int_(t.size(dim.cast<int64_t>()));
          }, py::arg("dim") = py::none())
      .def("stride", [](const Tensor& t, py::object dim) -> py::object {
            if (!dim.is_none()) return py::int_(t.stride(dim.cast<int64_t>()));
            py::tuple s(t.strides().size());
            for (size_t i = 0; i < t.strides().size(); ++i) s[i] = t.strides()[i];
            return s;
          }, py::arg("dim") = py::none())
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("ndim", &Tensor::dim)
      .def("dim", &Tensor::dim)
      .def("ndimension", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("nelement", &Tensor::numel)
      .def("element_size", &Tensor::element_size)
      .def_property_readonly("itemsize", &Tensor::element_size)
      .def_property_readonly("nbytes", &Tensor::nbytes)
      .def("storage_offset", &Tensor::storage_offset)
      .def("is_contiguous", [](const Tensor& t, py::object) { return t.is_contiguous(); },
           py::arg("memory_format") = py::none())
      .def("is_floating_point", &Tensor::is_floating_point)
      .def_property_readonly("is_cpu", [](const Tensor&) { return true; })
      .def_property_readonly("is_cuda", [](const Tensor&) { return false; })
      .def_property_readonly("is_quantized", [](const Tensor&) { return false; })
      .def_property_readonly("is_sparse", [](const Tensor&) { return false; })
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); })
      .def("is_set_to", [](const Tensor& a, const Tensor& b) {
            return a.is_alias_of(b) && a.storage_offset() == b.storage_offset() && a.sizes() == b.sizes() &&
                   a.strides() == b.strides();
          })
      .def("_is_view_of", [](const Tensor& a, const Tensor& b) { return a.is_alias_of(b); })
      .def_property_readonly("_version", &Tensor::_version)
      .def_property_readonly("is_inference", &Tensor::is_inference)
      .def("item", &item)
      .def("tolist", &tolist)
      .def("__len__", [](const Tensor& t) {
            if (t.dim() == 0) throw py::type_error("len() of a 0-d tensor");
            return t.size(0);
          })
      .def("__iter__", [](const Tensor& t) {
            if (t.dim() == 0) throw py::type_error("iteration over a 0-d tensor");
            return py::iter(tensor_list(t.unbind(0)));
          })
      .def("__bool__", [](const Tensor& t) {
            if (t.numel() != 1)
              throw std::runtime_error("Boolean value of Tensor with more than one value is ambiguous");
            return t.item<double>() != 0.0;
          })
      .def("__float__", [](const Tensor& t) {
            if (t.numel() != 1) throw py::value_error("only one element tensors can be converted to Python scalars");
            return t.item<double>();
          })
      .def("__int__", [](const Tensor& t) {
            if (t.numel() != 1) throw py::value_error("only one element tensors can be converted to Python scalars");
            return t.item<int64_t>();
          })
      .def("__index__", [](const Tensor& t) {
            if (t.numel() != 1 || t.is_floating_point() || t.dtype() == kBool)
              throw py::type_error("only integer tensors of a single element can be converted to an index");
            return t.item<int64_t>();
          })
      .def("__getitem__", &getitem)
      .def("__setitem__", &setitem);

  // ---- autograd ----
  cls.def_property("requires_grad", &Tensor::requires_grad,
                   [](Tensor& t, bool v) { t.requires_grad_(v); })
      .def("requires_grad_", [](py::object self, bool v) {
            py::cast<Tensor&>(self).requires_grad_(v);
            return self;
          }, py::arg("requires_grad") = true)
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property("grad",
                    [](const Tensor& t) -> py::object {
                      const Tensor& g = t.grad();
                      if (!g.defined()) return py::none();
                      return wrap(g);
                    },
                    [](Tensor& t, py::object g) {
                      if (g.is_none()) t.set_grad(Tensor());
                      else t.set_grad(g.cast<Tensor>());
                    })
      .def_property_readonly("grad_fn", [](const Tensor& t) -> py::object {
            const auto& fn = t.grad_fn();
            if (!fn) return py::none();
            return py::cast(fn);
          })
      .def_property_readonly("output_nr", &Tensor::output_nr)
      // Backward passes summed into .grad since it was last cleared (the GradAccumulation guard).
      .def_property_readonly("_grad_accumulations", [](const Tensor& t) -> int64_t {
            const autograd::AutogradMeta* meta = t.impl()->autograd_meta();
            return meta && meta->grad.defined() ? meta->grad_accumulations : 0;
          })
      .def_property("data", [](const Tensor& t) { return t.detach(); },
                    [](Tensor& t, const Tensor& v) {
                      if (t.sizes() != v.sizes() || t.dtype() != v.dtype())
                        throw py::value_error("setting .data to a tensor of another shape or dtype is not supported; "
                                              "assign a new Parameter instead");
                      NoGradGuard g;
                      t.detach().copy_(v);
                    })
      .def("retain_grad", &Tensor::retain_grad)
      .def_property_readonly("retains_grad", &Tensor::retains_grad)
      .def("detach", &Tensor::detach)
      .def("detach_", [](py::object self) {
            py::cast<Tensor&>(self).detach_();
            return self;
          })
      .def("backward", [](const Tensor& t, py::object gradient, std::optional<bool> retain_graph, bool create_graph,
                          py::object inputs) {
            // None: every leaf; an explicit empty list is refused, as in torch.
            std::optional<std::vector<Tensor>> in;
            if (!inputs.is_none()) {
              if (const Tensor* one = as_tensor(inputs)) in = std::vector<Tensor>{*one};
              else in = inputs.cast<std::vector<Tensor>>();
            }
            const Tensor g = gradient.is_none() ? Tensor() : gradient.cast<Tensor>();
            without_gil([&] {
              t.backward(g, retain_graph, create_graph, in);
              return 0;
            });
          }, py::arg("gradient") = py::none(), py::arg("retain_graph") = py::none(), py::arg("create_graph") = false,
          py::arg("inputs") = py::none())
      .def("register_hook", [](const Tensor& t, py::function hook) {
            auto holder = std::make_shared<PyRef>(std::move(hook));
            RemovableHandle h = t.register_hook_impl([holder](const Tensor& g) -> Tensor {
              py::gil_scoped_acquire gil;
              py::object r = holder->obj(g);
              if (r.is_none()) return Tensor();
              return r.cast<Tensor>();
            });
            return h;
          })
      .def("register_post_accumulate_grad_hook", [](const Tensor& t, py::function hook) {
            auto holder = std::make_shared<PyRef>(std::move(hook));
            return t.register_post_accumulate_grad_hook([holder](const Tensor& p) {
              py::gil_scoped_acquire gil;
              holder->obj(p);
            });
          });

  // ---- shape and views ----
  cls.def("view", [](const Tensor& t, py::args a) {
        if (a.size() == 1) {
          py::detail::make_caster<DType> dc;
          if (dc.load(a[0], false)) {
            if (py::detail::cast_op<DType>(dc) == t.dtype()) return t.alias();
            throw py::type_error("view(dtype) reinterpreting the bytes is not supported; use .to(dtype) to convert");
          }
        }
        return t.view(shape_from_args(a, "view"));
      })
      .def("view_as", &Tensor::view_as)
      .def("reshape", [](const Tensor& t, py::args a) { return t.reshape(shape_from_args(a, "reshape")); })
      .def("reshape_as", &Tensor::reshape_as)
      .def("expand", [](const Tensor& t, py::args a) { return t.expand(shape_from_args(a, "expand")); })
      .def("expand_as", &Tensor::expand_as)
      .def("broadcast_to", [](const Tensor& t, py::object s) { return t.expand(to_int_list(s, "broadcast_to", "size")); })
      .def("repeat", [](const Tensor& t, py::args a) { return t.repeat(shape_from_args(a, "repeat")); })
      .def("tile", [](const Tensor& t, py::args a) { return t.tile(shape_from_args(a, "tile")); })
      .def("permute", [](const Tensor& t, py::args a) { return t.permute(shape_from_args(a, "permute")); })
      .def("flip", [](const Tensor& t, py::args a) { return t.flip(shape_from_args(a, "flip")); })
      .def("t", &Tensor::t)
      .def_property_readonly("T", [](const Tensor& t) {
            std::vector<int64_t> d(static_cast<size_t>(t.dim()));
            for (int64_t i = 0; i < t.dim(); ++i) d[static_cast<size_t>(i)] = t.dim() - 1 - i;
            return t.permute(d);
          })
      .def_property_readonly("mT", [](const Tensor& t) { return t.transpose(-2, -1); })
      .def("transpose", &Tensor::transpose, py::arg("dim0"), py::arg("dim1"))
      .def("swapaxes", &Tensor::transpose, py::arg("axis0"), py::arg("axis1"))
      .def("movedim", &Tensor::movedim, py::arg("source"), py::arg("destination"))
      .def("squeeze", [](const Tensor& t, py::object dim) {
            if (dim.is_none()) return t.squeeze();
            return t.squeeze(dim.cast<int64_t>());
          }, py::arg("dim") = py::none())
      .def("unsqueeze", &Tensor::unsqueeze, py::arg("dim"))
      .def("flatten", &Tensor::flatten, py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      .def("unflatten", [](const Tensor& t, int64_t dim, py::object sizes) {
            return t.unflatten(dim, to_int_list(sizes, "unflatten", "sizes"));
          }, py::arg("dim"), py::arg("sizes"))
      .def("narrow", &Tensor::narrow, py::arg("dim"), py::arg("start"), py::arg("length"))
      .def("select", &Tensor::select, py::arg("dim"), py::arg("index"))
      .def("unfold", &Tensor::unfold, py::arg("dimension"), py::arg("size"), py::arg("step"))
      .def("diagonal", &Tensor::diagonal, py::arg("offset") = 0, py::arg("dim1") = 0, py::arg("dim2") = 1)
      .def("split", [](const Tensor& t, py::object size, int64_t dim) {
            if (PyLong_Check(size.ptr())) return tensor_tuple(t.split(size.cast<int64_t>(), dim));
            return tensor_tuple(t.split_with_sizes(to_int_list(size, "split", "split_size"), dim));
          }, py::arg("split_size"), py::arg("dim") = 0)
      .def("chunk", [](const Tensor& t, int64_t c, int64_t dim) { return tensor_tuple(t.chunk(c, dim)); },
           py::arg("chunks"), py::arg("dim") = 0)
      .def("unbind", [](const Tensor& t, int64_t dim) { return tensor_tuple(t.unbind(dim)); }, py::arg("dim") = 0)
      .def("as_strided", [](const Tensor& t, py::object size, py::object stride, std::optional<int64_t> off) {
            return t.as_strided(to_int_list(size, "as_strided", "size"), to_int_list(stride, "as_strided", "stride"), off);
          }, py::arg("size"), py::arg("stride"), py::arg("storage_offset") = py::none())
      .def("contiguous", [](const Tensor& t, py::object) { return t.contiguous(); }, py::arg("memory_format") = py::none())
      .def("clone", [](const Tensor& t, py::object) { return t.clone(); }, py::arg("memory_format") = py::none())
      .def("to", &to_method)
      .def("type", [](const Tensor& t, py::object dtype) -> py::object {
            if (dtype.is_none()) return py::str("ember." + std::string(
                t.dtype() == kFloat32 ? "FloatTensor" : t.dtype() == kFloat64 ? "DoubleTensor" :
                t.dtype() == kInt64 ? "LongTensor" : t.dtype() == kInt32 ? "IntTensor" :
                t.dtype() == kBool ? "BoolTensor" : t.dtype() == kUInt8 ? "ByteTensor" : "Tensor"));
            return wrap(t.to(dtype.cast<DType>()));
          }, py::arg("dtype") = py::none())
      .def("float", [](const Tensor& t) { return t.to(kFloat32); })
      .def("double", [](const Tensor& t) { return t.to(kFloat64); })
      .def("half", [](const Tensor& t) { return t.to(kFloat16); })
      .def("bfloat16", [](const Tensor& t) { return t.to(kBFloat16); })
      .def("long", [](const Tensor& t) { return t.to(kInt64); })
      .def("int", [](const Tensor& t) { return t.to(kInt32); })
      .def("short", [](const Tensor& t) { return t.to(kInt16); })
      .def("char", [](const Tensor& t) { return t.to(kInt8); })
      .def("byte", [](const Tensor& t) { return t.to(kUInt8); })
      .def("bool", [](const Tensor& t) { return t.to(kBool); })
      .def("type_as", [](const Tensor& t, const Tensor& o) { return t.to(o.dtype()); })
      .def("cpu", [](py::object self) { return self; })
      .def_property_readonly("device", [](const Tensor&) {
            return py::module_::import("ember").attr("device")("cpu");
          });

  // ---- in-place writes ----
  cls.def("copy_", [](py::object self, const Tensor& src, bool) {
        py::cast<Tensor&>(self).copy_(src);
        return self;
      }, py::arg("src"), py::arg("non_blocking") = false)
      .def("fill_", [](py::object self, py::handle v) {
            py::cast<Tensor&>(self).fill_(to_scalar(v, "fill_"));
            return self;
          }, py::arg("value"))
      .def("zero_", &inplace0<&Tensor::zero_>)
      .def("uniform_", [](py::object self, double a, double b) {
            py::cast<Tensor&>(self).uniform_(a, b);
            return self;
          }, py::arg("from") = 0.0, py::arg("to") = 1.0)
      .def("normal_", [](py::object self, double mean, double std) {
            py::cast<Tensor&>(self).normal_(mean, std);
            return self;
          }, py::arg("mean") = 0.0, py::arg("std") = 1.0)
      .def("bernoulli_", [](py::object self, double p) {
            py::cast<Tensor&>(self).bernoulli_(p);
            return self;
          }, py::arg("p") = 0.5)
      .def("random_", [](py::object self, int64_t from, std::optional<int64_t> to) {
            Tensor& t = py::cast<Tensor&>(self);
            if (to) t.random_(from, *to);
            else t.random_(0, from);
            return self;
          }, py::arg("from"), py::arg("to") = py::none());

  // ---- element-wise unary ops from the op table ----
#define EMBER_BIND_UNARY_Full(name) \
  cls.def(#name, [](const Tensor& t) { return t.name(); }); \
  cls.def(#name "_", &inplace0<&Tensor::name##_>);
#define EMBER_BIND_UNARY_Method(name) cls.def(#name, [](const Tensor& t) { return t.name(); });
#define EMBER_BIND_UNARY_Free(name)
#define EMBER_BIND_UNARY_Custom(name)
#define EMBER_UNARY(Id, name, kind, api, backward, saves) EMBER_BIND_UNARY_##api(name)
#include "ember/ops/pointwise_ops.h"
#undef EMBER_BIND_UNARY_Full
#undef EMBER_BIND_UNARY_Method
#undef EMBER_BIND_UNARY_Free
#undef EMBER_BIND_UNARY_Custom
  cls.def("gelu", [](const Tensor& t, const std::string& approximate) { return t.gelu(approximate); },
          py::arg("approximate") = "none")
      .def("softplus", [](const Tensor& t, py::handle beta, py::handle threshold) {
            return t.softplus(to_scalar(beta, "softplus"), to_scalar(threshold, "softplus"));
          }, py::arg("beta") = 1, py::arg("threshold") = 20)
      .def("negative", [](const Tensor& t) { return t.neg(); })
      .def("square", [](const Tensor& t) { return t.mul(t); })
      .def("clamp", [](const Tensor& t, py::handle min, py::handle max) {
            const Tensor* tmin = as_tensor(min);
            const Tensor* tmax = as_tensor(max);
            if (tmin || tmax) {
              Tensor lo = tmin ? *tmin : (min.is_none() ? full_like(t, -std::numeric_limits<double>::infinity()) : full_like(t, to_scalar(min, "clamp")));
              Tensor hi = tmax ? *tmax : (max.is_none() ? full_like(t, std::numeric_limits<double>::infinity()) : full_like(t, to_scalar(max, "clamp")));
              return t.clamp(lo, hi);
            }
            if (min.is_none() && max.is_none())
              throw py::value_error("clamp(): at least one of 'min' or 'max' must not be None");
            std::optional<Scalar> lo, hi;
            if (!min.is_none()) lo = to_scalar(min, "clamp");
            if (!max.is_none()) hi = to_scalar(max, "clamp");
            return t.clamp(lo, hi);
          }, py::arg("min") = py::none(), py::arg("max") = py::none())
      .def("clamp_", [](py::object self, py::handle min, py::handle max) {
            if (min.is_none() && max.is_none())
              throw py::value_error("clamp_(): at least one of 'min' or 'max' must not be None");
            std::optional<Scalar> lo, hi;
            if (!min.is_none()) lo = to_scalar(min, "clamp_");
            if (!max.is_none()) hi = to_scalar(max, "clamp_");
            py::cast<Tensor&>(self).clamp_(lo, hi);
            return self;
          }, py::arg("min") = py::none(), py::arg("max") = py::none())
      .def("clamp_min", [](const Tensor& t, py::handle v) { return t.clamp_min(to_scalar(v, "clamp_min")); })
      .def("clamp_max", [](const Tensor& t, py::handle v) { return t.clamp_max(to_scalar(v, "clamp_max")); })
      .def("nan_to_num", &Tensor::nan_to_num, py::arg("nan") = 0.0, py::arg("posinf") = py::none(),
           py::arg("neginf") = py::none());

  // ---- binary ops (Tensor or number on the right) ----
#define EMBER_BIND_BINARY(pyname, method)                                                          \
  cls.def(pyname, [](const Tensor& a, py::handle b) {                                              \
    return binary(a, b, pyname, [](const Tensor& x, const Tensor& y) { return x.method(y); },      \
                  [](const Tensor& x, const Scalar& y) { return x.method(y); });                  \
  }, py::arg("other"));
  EMBER_BIND_BINARY("mul", mul)
  EMBER_BIND_BINARY("multiply", mul)
  EMBER_BIND_BINARY("remainder", remainder)
  EMBER_BIND_BINARY("fmod", fmod)
  EMBER_BIND_BINARY("eq", eq)
  EMBER_BIND_BINARY("ne", ne)
  EMBER_BIND_BINARY("lt", lt)
  EMBER_BIND_BINARY("le", le)
  EMBER_BIND_BINARY("gt", gt)
  EMBER_BIND_BINARY("ge", ge)
  EMBER_BIND_BINARY("greater", gt)
  EMBER_BIND_BINARY("less", lt)
  EMBER_BIND_BINARY("__mul__", mul)
  EMBER_BIND_BINARY("__rmul__", mul)
  EMBER_BIND_BINARY("__mod__", remainder)
  EMBER_BIND_BINARY("__lt__", lt)
  EMBER_BIND_BINARY("__le__", le)
  EMBER_BIND_BINARY("__gt__", gt)
  EMBER_BIND_BINARY("__ge__", ge)
#undef EMBER_BIND_BINARY
  cls.def("__eq__", [](const Tensor& a, py::handle b) -> py::object {
        if (const Tensor* t = as_tensor(b)) return wrap(a.eq(*t));
        if (is_number(b)) return wrap(a.eq(to_scalar(b, "eq")));
        return py::bool_(false);
      })
      .def("__ne__", [](const Tensor& a, py::handle b) -> py::object {
        if (const Tensor* t = as_tensor(b)) return wrap(a.ne(*t));
        if (is_number(b)) return wrap(a.ne(to_scalar(b, "ne")));
        return py::bool_(true);
      });
  auto add_like = [](const Tensor& a, py::handle b, py::handle alpha, bool sub) {
    const Scalar al = to_scalar(alpha, sub ? "sub" : "add");
    if (const Tensor* t = as_tensor(b)) return sub ? a.sub(*t, al) : a.add(*t, al);
    return sub ? a.sub(to_scalar(b, "sub"), al) : a.add(to_scalar(b, "add"), al);
  };
  cls.def("add", [add_like](const Tensor& a, py::handle b, py::handle alpha) { return add_like(a, b, alpha, false); },
          py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def("sub", [add_like](const Tensor& a, py::handle b, py::handle alpha) { return add_like(a, b, alpha, true); },
           py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def("subtract", [add_like](const Tensor& a, py::handle b, py::handle alpha) { return add_like(a, b, alpha, true); },
           py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def("add_", [](py::object self, py::handle b, py::handle alpha) {
            Tensor& a = py::cast<Tensor&>(self);
            const Scalar al = to_scalar(alpha, "add_");
            if (const Tensor* t = as_tensor(b)) a.add_(*t, al);
            else a.add_(to_scalar(b, "add_"), al);
            return self;
          }, py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def("sub_", [](py::object self, py::handle b, py::handle alpha) {
            Tensor& a = py::cast<Tensor&>(self);
            const Scalar al = to_scalar(alpha, "sub_");
            if (const Tensor* t = as_tensor(b)) a.sub_(*t, al);
            else a.sub_(to_scalar(b, "sub_"), al);
            return self;
          }, py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def("__add__", [](const Tensor& a, py::handle b) {
            if (const Tensor* t = as_tensor(b)) return a.add(*t);
            return a.add(to_scalar(b, "add"));
          })
      .def("__radd__", [](const Tensor& a, py::handle b) { return a.add(to_scalar(b, "add")); })
      .def("__sub__", [](const Tensor& a, py::handle b) {
            if (const Tensor* t = as_tensor(b)) return a.sub(*t);
            return a.sub(to_scalar(b, "sub"));
          })
      .def("__rsub__", [](const Tensor& a, py::handle b) { return ember::operator-(to_scalar(b, "sub"), a); })
      .def("__rtruediv__", [](const Tensor& a, py::handle b) { return ember::operator/(to_scalar(b, "div"), a); })
      .def("__rfloordiv__", [](const Tensor& a, py::handle b) {
            return scalar_tensor_like(b, a, "floor_divide").div(a, std::string_view("floor"));
          })
      .def("__rmod__", [](const Tensor& a, py::handle b) { return scalar_tensor_like(b, a, "remainder").remainder(a); })
      .def("__rpow__", [](const Tensor& a, py::handle b) { return ember::pow(to_scalar(b, "pow"), a); })
      .def("__neg__", [](const Tensor& a) { return a.neg(); })
      .def("__pos__", [](py::object self) { return self; })
      .def("__abs__", [](const Tensor& a) { return a.abs(); })
      .def("__invert__", [](const Tensor& a) {
            if (a.dtype() != kBool) throw py::type_error("~ (bitwise_not) is supported on bool tensors only; got " +
                                                         std::string(dtype_name(a.dtype())));
            return a.logical_not();
          })
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return without_gil([&] { return a.matmul(b); }); })
      .def("__rmatmul__", [](const Tensor& a, const Tensor& b) { return without_gil([&] { return b.matmul(a); }); });
  auto div_fn = [](const Tensor& a, py::handle b, std::optional<std::string> mode) {
    std::optional<std::string_view> m;
    if (mode) m = *mode;
    if (const Tensor* t = as_tensor(b)) return a.div(*t, m);
    return a.div(to_scalar(b, "div"), m);
  };
  cls.def("div", div_fn, py::arg("other"), py::kw_only(), py::arg("rounding_mode") = py::none())
      .def("divide", div_fn, py::arg("other"), py::kw_only(), py::arg("rounding_mode") = py::none())
      .def("true_divide", [div_fn](const Tensor& a, py::handle b) { return div_fn(a, b, std::nullopt); })
      .def("__truediv__", [div_fn](const Tensor& a, py::handle b) { return div_fn(a, b, std::nullopt); })
      .def("floor_divide", [div_fn](const Tensor& a, py::handle b) { return div_fn(a, b, "floor"); })
      .def("__floordiv__", [div_fn](const Tensor& a, py::handle b) { return div_fn(a, b, "floor"); })
      .def("div_", [](py::object self, py::handle b, std::optional<std::string> mode) {
            std::optional<std::string_view> m;
            if (mode) m = *mode;
            Tensor& a = py::cast<Tensor&>(self);
            if (const Tensor* t = as_tensor(b)) a.div_(*t, m);
            else a.div_(to_scalar(b, "div_"), m);
            return self;
          }, py::arg("other"), py::kw_only(), py::arg("rounding_mode") = py::none());
  auto pow_fn = [](const Tensor& a, py::handle b) {
    if (const Tensor* t = as_tensor(b)) return a.pow(*t);
    return a.pow(to_scalar(b, "pow"));
  };
  cls.def("pow", pow_fn, py::arg("exponent")).def("__pow__", pow_fn)
      .def("float_power", [pow_fn](const Tensor& a, py::handle b) { return pow_fn(a.to(kFloat64), b); });
  // In-place binary forms and their operators (+=, -=, *=, /=, %=, **=) return self.
#define EMBER_BIND_INPLACE(pyname, method, opname)                                   \
  cls.def(pyname, [](py::object self, py::handle b) {                                \
    Tensor& a = py::cast<Tensor&>(self);                                             \
    if (const Tensor* t = as_tensor(b)) a.method(*t);                                \
    else a.method(to_scalar(b, opname));                                             \
    return self;                                                                     \
  });
  EMBER_BIND_INPLACE("mul_", mul_, "mul_")
  EMBER_BIND_INPLACE("remainder_", remainder_, "remainder_")
  EMBER_BIND_INPLACE("fmod_", fmod_, "fmod_")
  EMBER_BIND_INPLACE("pow_", pow_, "pow_")
  EMBER_BIND_INPLACE("__iadd__", add_, "add_")
  EMBER_BIND_INPLACE("__isub__", sub_, "sub_")
  EMBER_BIND_INPLACE("__imul__", mul_, "mul_")
  EMBER_BIND_INPLACE("__itruediv__", div_, "div_")
  EMBER_BIND_INPLACE("__imod__", remainder_, "remainder_")
  EMBER_BIND_INPLACE("__ipow__", pow_, "pow_")
#undef EMBER_BIND_INPLACE
  auto logical = [](const char* name, Tensor (Tensor::*f)(const Tensor&) const) {
    return [name, f](const Tensor& a, py::handle b) {
      if (a.dtype() != kBool) throw py::type_error(std::string(name) + " is supported on bool tensors only; got " +
                                                   std::string(dtype_name(a.dtype())));
      const Tensor* t = as_tensor(b);
      Tensor other = t ? *t : scalar_tensor(to_scalar(b, name), TensorOptions(kBool));
      return (a.*f)(other);
    };
  };
  cls.def("__and__", logical("& (bitwise_and)", &Tensor::logical_and))
      .def("__or__", logical("| (bitwise_or)", &Tensor::logical_or))
      .def("__xor__", logical("^ (bitwise_xor)", &Tensor::logical_xor))
      .def("__rand__", logical("& (bitwise_and)", &Tensor::logical_and))
      .def("__ror__", logical("| (bitwise_or)", &Tensor::logical_or))
      .def("logical_and", &Tensor::logical_and)
      .def("logical_or", &Tensor::logical_or)
      .def("logical_xor", &Tensor::logical_xor)
      .def("maximum", &Tensor::maximum)
      .def("minimum", &Tensor::minimum)
      .def("atan2", &Tensor::atan2)
      .def("lerp", [](const Tensor& a, const Tensor& end, py::handle w) {
            if (const Tensor* t = as_tensor(w)) return a.lerp(end, *t);
            return a.lerp(end, to_scalar(w, "lerp"));
          }, py::arg("end"), py::arg("weight"))
      .def("where", [](const Tensor& a, const Tensor& cond, py::handle other) {
            if (const Tensor* t = as_tensor(other)) return a.where(cond, *t);
            return ember::where(cond, a, to_scalar(other, "where"));
          }, py::arg("condition"), py::arg("other"))
      .def("isclose", &Tensor::isclose, py::arg("other"), py::arg("rtol") = 1e-05, py::arg("atol") = 1e-08,
           py::arg("equal_nan") = false)
      .def("allclose", &Tensor::allclose, py::arg("other"), py::arg("rtol") = 1e-05, py::arg("atol") = 1e-08,
           py::arg("equal_nan") = false)
      .def("equal", &Tensor::equal);

  // ---- reductions ----
  cls.def("sum", [](const Tensor& t, py::handle dim, bool keepdim, py::handle dtype) {
        if (dim.is_none()) return t.sum(opt_dtype(dtype));
        return t.sum(dims_arg(dim, "sum"), keepdim, opt_dtype(dtype));
      }, py::arg("dim") = py::none(), py::arg("keepdim") = false, py::kw_only(), py::arg("dtype") = py::none())
      .def("mean", [](const Tensor& t, py::handle dim, bool keepdim, py::handle dtype) {
            if (dim.is_none()) return t.mean(opt_dtype(dtype));
            return t.mean(dims_arg(dim, "mean"), keepdim, opt_dtype(dtype));
          }, py::arg("dim") = py::none(), py::arg("keepdim") = false, py::kw_only(), py::arg("dtype") = py::none())
      .def("prod", [](const Tensor& t, py::handle dim, bool keepdim, py::handle dtype) {
            if (dim.is_none()) return t.prod(opt_dtype(dtype));
            return t.prod(dim.cast<int64_t>(), keepdim, opt_dtype(dtype));
          }, py::arg("dim") = py::none(), py::arg("keepdim") = false, py::kw_only(), py::arg("dtype") = py::none())
      .def("max", [](const Tensor& t, py::handle dim, bool keepdim) { return reduce_max_min(t, dim, keepdim, true); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("min", [](const Tensor& t, py::handle dim, bool keepdim) { return reduce_max_min(t, dim, keepdim, false); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("amax", [](const Tensor& t, py::handle dim, bool keepdim) { return t.amax(dims_arg(dim, "amax"), keepdim); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("amin", [](const Tensor& t, py::handle dim, bool keepdim) { return t.amin(dims_arg(dim, "amin"), keepdim); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("argmax", &Tensor::argmax, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("argmin", &Tensor::argmin, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("var", [](const Tensor& t, py::handle dim, py::handle unbiased, bool keepdim, py::handle correction) {
            int64_t c = 1;
            if (!correction.is_none()) c = correction.cast<int64_t>();
            else if (!unbiased.is_none()) c = unbiased.cast<bool>() ? 1 : 0;
            return t.var(dims_arg(dim, "var"), c, keepdim);
          }, py::arg("dim") = py::none(), py::arg("unbiased") = py::none(), py::arg("keepdim") = false, py::kw_only(),
          py::arg("correction") = py::none())
      .def("std", [](const Tensor& t, py::handle dim, py::handle unbiased, bool keepdim, py::handle correction) {
            int64_t c = 1;
            if (!correction.is_none()) c = correction.cast<int64_t>();
            else if (!unbiased.is_none()) c = unbiased.cast<bool>() ? 1 : 0;
            return t.std(dims_arg(dim, "std"), c, keepdim);
          }, py::arg("dim") = py::none(), py::arg("unbiased") = py::none(), py::arg("keepdim") = false, py::kw_only(),
          py::arg("correction") = py::none())
      .def("norm", [](const Tensor& t, py::handle p, py::handle dim, bool keepdim) {
            Scalar ps = 2;
            if (PyUnicode_Check(p.ptr())) {
              const std::string s = py::str(p);
              if (s != "fro") throw py::value_error("norm(): p='" + s + "' is not supported; use a number or 'fro'");
            } else if (!p.is_none()) {
              ps = to_scalar(p, "norm");
            }
            return t.norm(ps, dims_arg(dim, "norm"), keepdim);
          }, py::arg("p") = "fro", py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("logsumexp", [](const Tensor& t, py::handle dim, bool keepdim) {
            return t.logsumexp(dims_arg(dim, "logsumexp"), keepdim);
          }, py::arg("dim"), py::arg("keepdim") = false)
      .def("all", [](const Tensor& t, py::handle dim, bool keepdim) {
            if (dim.is_none()) return t.all();
            return t.all(dim.cast<int64_t>(), keepdim);
          }, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("any", [](const Tensor& t, py::handle dim, bool keepdim) {
            if (dim.is_none()) return t.any();
            return t.any(dim.cast<int64_t>(), keepdim);
          }, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("count_nonzero", [](const Tensor& t, py::handle dim) { return t.count_nonzero(dims_arg(dim, "count_nonzero")); },
           py::arg("dim") = py::none())
      .def("cumsum", [](const Tensor& t, int64_t dim, py::handle dtype) { return t.cumsum(dim, opt_dtype(dtype)); },
           py::arg("dim"), py::kw_only(), py::arg("dtype") = py::none())
      .def("cumprod", [](const Tensor& t, int64_t dim, py::handle dtype) { return t.cumprod(dim, opt_dtype(dtype)); },
           py::arg("dim"), py::kw_only(), py::arg("dtype") = py::none())
      .def("softmax", [](const Tensor& t, int64_t dim, py::handle dtype) { return t.softmax(dim, opt_dtype(dtype)); },
           py::arg("dim"), py::arg("dtype") = py::none())
      .def("log_softmax", [](const Tensor& t, int64_t dim, py::handle dtype) { return t.log_softmax(dim, opt_dtype(dtype)); },
           py::arg("dim"), py::arg("dtype") = py::none());

  // ---- linear algebra, joining, indexing, sorting ----
  cls.def("matmul", [](const Tensor& a, const Tensor& b) { return without_gil([&] { return a.matmul(b); }); })
      .def("mm", [](const Tensor& a, const Tensor& b) { return without_gil([&] { return a.mm(b); }); })
      .def("bmm", [](const Tensor& a, const Tensor& b) { return without_gil([&] { return a.bmm(b); }); })
      .def("dot", &Tensor::dot)
      .def("outer", &Tensor::outer)
      .def("addmm", [](const Tensor& t, const Tensor& a, const Tensor& b, py::handle beta, py::handle alpha) {
            return t.addmm(a, b, to_scalar(beta, "addmm"), to_scalar(alpha, "addmm"));
          }, py::arg("mat1"), py::arg("mat2"), py::kw_only(), py::arg("beta") = 1, py::arg("alpha") = 1)
      .def("baddbmm", [](const Tensor& t, const Tensor& a, const Tensor& b, py::handle beta, py::handle alpha) {
            return t.baddbmm(a, b, to_scalar(beta, "baddbmm"), to_scalar(alpha, "baddbmm"));
          }, py::arg("batch1"), py::arg("batch2"), py::kw_only(), py::arg("beta") = 1, py::arg("alpha") = 1)
      .def("roll", [](const Tensor& t, py::handle shifts, py::handle dims) {
            return t.roll(to_int_list(shifts, "roll", "shifts"), dims.is_none() ? std::vector<int64_t>{} : to_int_list(dims, "roll", "dims"));
          }, py::arg("shifts"), py::arg("dims") = py::none())
      .def("repeat_interleave", [](const Tensor& t, py::handle repeats, std::optional<int64_t> dim) {
            if (const Tensor* r = as_tensor(repeats)) return t.repeat_interleave(*r, dim);
            return t.repeat_interleave(repeats.cast<int64_t>(), dim);
          }, py::arg("repeats"), py::arg("dim") = py::none())
      .def("tril", &Tensor::tril, py::arg("diagonal") = 0)
      .def("triu", &Tensor::triu, py::arg("diagonal") = 0)
      .def("index_select", &Tensor::index_select, py::arg("dim"), py::arg("index"))
      .def("gather", &Tensor::gather, py::arg("dim"), py::arg("index"))
      .def("scatter", [](const Tensor& t, int64_t dim, const Tensor& index, py::handle src, std::optional<std::string> reduce) {
            if (reduce) throw py::value_error("scatter(reduce=...) is deprecated in torch; use scatter_reduce");
            if (const Tensor* s = as_tensor(src)) return t.scatter(dim, index, *s);
            return t.scatter(dim, index, to_scalar(src, "scatter"));
          }, py::arg("dim"), py::arg("index"), py::arg("src"), py::kw_only(), py::arg("reduce") = py::none())
      .def("scatter_", [](py::object self, int64_t dim, const Tensor& index, py::handle src) {
            Tensor& t = py::cast<Tensor&>(self);
            if (const Tensor* s = as_tensor(src)) t.scatter_(dim, index, *s);
            else t.scatter_(dim, index, to_scalar(src, "scatter_"));
            return self;
          }, py::arg("dim"), py::arg("index"), py::arg("src"))
      .def("scatter_add", &Tensor::scatter_add, py::arg("dim"), py::arg("index"), py::arg("src"))
      .def("scatter_add_", [](py::object self, int64_t dim, const Tensor& index, const Tensor& src) {
            py::cast<Tensor&>(self).scatter_add_(dim, index, src);
            return self;
          }, py::arg("dim"), py::arg("index"), py::arg("src"))
      .def("scatter_reduce", [](const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                                bool include_self) { return t.scatter_reduce(dim, index, src, reduce, include_self); },
           py::arg("dim"), py::arg("index"), py::arg("src"), py::arg("reduce"), py::kw_only(), py::arg("include_self") = true)
      .def("index_add", [](const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, py::handle alpha) {
            return t.index_add(dim, index, src, to_scalar(alpha, "index_add"));
          }, py::arg("dim"), py::arg("index"), py::arg("source"), py::kw_only(), py::arg("alpha") = 1)
      .def("index_add_", [](py::object self, int64_t dim, const Tensor& index, const Tensor& src, py::handle alpha) {
            py::cast<Tensor&>(self).index_add_(dim, index, src, to_scalar(alpha, "index_add_"));
            return self;
          }, py::arg("dim"), py::arg("index"), py::arg("source"), py::kw_only(), py::arg("alpha") = 1)
      .def("index_copy", &Tensor::index_copy, py::arg("dim"), py::arg("index"), py::arg("source"))
      .def("index_fill", [](const Tensor& t, int64_t dim, const Tensor& index, py::handle v) {
            if (const Tensor* vt = as_tensor(v)) return t.index_fill(dim, index, *vt);
            return t.index_fill(dim, index, to_scalar(v, "index_fill"));
          }, py::arg("dim"), py::arg("index"), py::arg("value"))
      .def("masked_fill", [](const Tensor& t, const Tensor& mask, py::handle v) {
            if (const Tensor* vt = as_tensor(v)) return t.masked_fill(mask, *vt);
            return t.masked_fill(mask, to_scalar(v, "masked_fill"));
          }, py::arg("mask"), py::arg("value"))
      .def("masked_fill_", [](py::object self, const Tensor& mask, py::handle v) {
            Tensor& t = py::cast<Tensor&>(self);
            if (const Tensor* vt = as_tensor(v)) t.masked_fill_(mask, *vt);
            else t.masked_fill_(mask, to_scalar(v, "masked_fill_"));
            return self;
          }, py::arg("mask"), py::arg("value"))
      .def("masked_select", &Tensor::masked_select, py::arg("mask"))
      .def("masked_scatter", &Tensor::masked_scatter, py::arg("mask"), py::arg("source"))
      .def("index_put_", [](py::object self, py::handle indices, const Tensor& values, bool accumulate) {
            std::vector<Tensor> idx;
            for (py::handle h : indices) idx.push_back(h.is_none() ? Tensor() : h.cast<Tensor>());
            py::cast<Tensor&>(self).index_put_(idx, values, accumulate);
            return self;
          }, py::arg("indices"), py::arg("values"), py::arg("accumulate") = false)
      .def("nonzero", [](const Tensor& t, bool as_tuple) -> py::object {
            Tensor nz = t.nonzero();
            if (!as_tuple) return wrap(nz);
            return tensor_tuple(nz.unbind(1));
          }, py::kw_only(), py::arg("as_tuple") = false)
      .def("bincount", [](const Tensor& t, py::object w, int64_t minlength) {
            return t.bincount(w.is_none() ? Tensor() : w.cast<Tensor>(), minlength);
          }, py::arg("weights") = py::none(), py::arg("minlength") = 0)
      .def("sort", [](const Tensor& t, int64_t dim, bool descending, bool stable) {
            return values_indices("sort", t.sort(dim, descending, stable));
          }, py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(), py::arg("stable") = false)
      .def("argsort", &Tensor::argsort, py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(),
           py::arg("stable") = false)
      .def("topk", [](const Tensor& t, int64_t k, int64_t dim, bool largest, bool sorted) {
            return values_indices("topk", t.topk(k, dim, largest, sorted));
          }, py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true, py::arg("sorted") = true)
      .def("kthvalue", [](const Tensor& t, int64_t k, int64_t dim, bool keepdim) {
            return values_indices("kthvalue", t.kthvalue(k, dim, keepdim));
          }, py::arg("k"), py::arg("dim") = -1, py::arg("keepdim") = false);

  // new_* factories: same dtype unless given.
  auto new_opts = [](const Tensor& t, py::handle dtype) {
    return TensorOptions(dtype.is_none() ? t.dtype() : dtype.cast<DType>());
  };
  using Factory = Tensor (*)(IntArrayRef, const TensorOptions&);
  for (const auto& [name, make] : {std::pair<const char*, Factory>{"new_zeros", &zeros},
                                   std::pair<const char*, Factory>{"new_ones", &ones},
                                   std::pair<const char*, Factory>{"new_empty", &empty}}) {
    cls.def(name, [new_opts, name = name, make = make](const Tensor& t, py::object size, py::handle dtype,
                                                       py::handle device, bool rg) {
          check_device(device, name);
          Tensor r = make(to_int_list(size, name, "size"), new_opts(t, dtype));
          if (rg) r.requires_grad_(true);
          return r;
        }, py::arg("size"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
        py::arg("requires_grad") = false);
  }
  cls.def("new_full", [new_opts](const Tensor& t, py::object size, py::handle v, py::handle dtype, py::handle device,
                                 bool rg) {
        check_device(device, "new_full");
        Tensor r = full(to_int_list(size, "new_full", "size"), to_scalar(v, "new_full"), new_opts(t, dtype));
        if (rg) r.requires_grad_(true);
        return r;
      }, py::arg("size"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);

}

}  // namespace ember::python
