// NumPy and DLPack exchange (zero-copy both ways), ember.tensor(data) and pickling support.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>

#include "bind.h"

namespace ember::python {

namespace {

// ---- NumPy ----
py::dtype numpy_dtype(DType t, const char* op) {
  switch (t) {
    case kFloat32: return py::dtype("float32");
    case kFloat64: return py::dtype("float64");
    case kFloat16: return py::dtype("float16");
    case kInt8: return py::dtype("int8");
    case kUInt8: return py::dtype("uint8");
    case kInt16: return py::dtype("int16");
    case kInt32: return py::dtype("int32");
    case kInt64: return py::dtype("int64");
    case kBool: return py::dtype("bool");
    default:
      throw py::type_error(std::string(op) + "(): NumPy has no " + std::string(dtype_name(t)) +
                           " type; convert first, e.g. t.float()." + op + "()");
  }
}

std::optional<DType> dtype_of_numpy(const py::dtype& d) {
  const char kind = d.kind();
  const auto size = d.itemsize();
  if (kind == 'f') {
    if (size == 4) return kFloat32;
    if (size == 8) return kFloat64;
    if (size == 2) return kFloat16;
  } else if (kind == 'i') {
    if (size == 8) return kInt64;
    if (size == 4) return kInt32;
    if (size == 2) return kInt16;
    if (size == 1) return kInt8;
  } else if (kind == 'u') {
    if (size == 1) return kUInt8;
  } else if (kind == 'b') {
    return kBool;
  }
  return std::nullopt;
}

// The Python object kept alive by a tensor that views its memory. The deleter may run
// without the GIL (a tensor freed inside C++), so it takes it.
std::function<void(void*)> keep_alive(py::object owner) {
  auto* held = new py::object(std::move(owner));
  return [held](void*) {
    if (!Py_IsInitialized()) return;  // interpreter gone: leak rather than crash
    py::gil_scoped_acquire gil;
    delete held;
  };
}

py::array to_numpy(const Tensor& t, bool force) {
  if (t.requires_grad() && !force)
    throw std::runtime_error("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
  const Tensor src = force && t.dtype() == kBFloat16 ? t.detach().to(kFloat32) : t.detach();
  py::dtype dt = numpy_dtype(src.dtype(), "numpy");
  std::vector<py::ssize_t> shape(src.sizes().begin(), src.sizes().end());
  std::vector<py::ssize_t> strides;
  for (int64_t s : src.strides()) strides.push_back(static_cast<py::ssize_t>(s * static_cast<int64_t>(src.element_size())));
  // The capsule owns a tensor handle, so the storage outlives the array.
  py::capsule owner(new Tensor(src), [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(dt, shape, strides, src.data_ptr(), owner);
}

Tensor from_numpy(py::handle obj) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(std::string("from_numpy(): expected np.ndarray (got ") + Py_TYPE(obj.ptr())->tp_name + ")");
  py::array arr = py::reinterpret_borrow<py::array>(obj);
  const std::optional<DType> dt = dtype_of_numpy(arr.dtype());
  if (!dt)
    throw py::type_error("from_numpy(): can't convert np.ndarray of type " + std::string(py::str(arr.dtype())) +
                         ". The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool.");
  std::vector<int64_t> sizes, strides;
  const auto item = static_cast<int64_t>(arr.itemsize());
  for (py::ssize_t d = 0; d < arr.ndim(); ++d) {
    sizes.push_back(arr.shape(d));
    const int64_t s = arr.strides(d);
    if (s < 0)
      throw py::value_error("from_numpy(): at least one stride in the given numpy array is negative; "
                            "make a copy first (np.ascontiguousarray(a) or a.copy())");
    if (s % item != 0)
      throw py::value_error("from_numpy(): the array's strides are not a multiple of its element size; copy it first");
    strides.push_back(s / item);
  }
  return from_blob(const_cast<void*>(arr.data()), sizes, strides, keep_alive(arr), TensorOptions(*dt));
}

// ember.tensor(data): a new tensor (always a copy) from a number, a nested sequence, an
// ndarray or a tensor. Python floats give the default dtype, ints int64, bools bool.
Tensor tensor_from_data(py::handle data, std::optional<DType> dtype) {
  if (const Tensor* t = as_tensor(data)) {
    Tensor c = t->detach().clone();
    return dtype ? c.to(*dtype) : c;
  }
  py::module_ np = py::module_::import("numpy");
  const bool was_array = py::isinstance<py::array>(data);
  // Sequences of tensors (e.g. a list of 0-d tensors) are stacked through numpy.
  py::array arr = np.attr("asarray")(data);
  std::optional<DType> inferred = dtype_of_numpy(arr.dtype());
  if (!inferred) {
    if (arr.dtype().kind() == 'O')
      throw py::type_error("tensor(): could not infer a dtype from the data (mixed or non-numeric elements)");
    throw py::type_error("tensor(): unsupported data type " + std::string(py::str(arr.dtype())));
  }
  if (!was_array) {
    if (*inferred == kFloat64) inferred = get_default_dtype();
    else if (is_integral(*inferred, false)) inferred = kInt64;
  }
  const DType target = dtype.value_or(*inferred);
  const DType via = target == kBFloat16 ? kFloat32 : target;
  // np.array(order="C"), not ascontiguousarray (which makes 0-d arrays 1-d).
  py::array c = np.attr("array")(arr, py::arg("dtype") = numpy_dtype(via, "tensor"), py::arg("order") = "C");
  std::vector<int64_t> sizes(c.shape(), c.shape() + c.ndim());
  Tensor out = empty(sizes, TensorOptions(via));
  if (out.nbytes() > 0) std::memcpy(out.data_ptr(), c.data(), out.nbytes());
  return via == target ? out : out.to(target);
}

// ---- DLPack (the exchange format of torch.utils.dlpack, CuPy, JAX, ...) ----
// The structs of dlpack.h, version 0.6/0.7 layout (what torch 1.13 reads and writes).
struct DLDevice {
  int32_t device_type;  // 1 = CPU
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // 0 int, 1 uint, 2 float, 4 bfloat
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

struct ExportCtx {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed;
};

DLDataType dl_dtype(DType t) {
  switch (t) {
    case kFloat32: return {2, 32, 1};
    case kFloat64: return {2, 64, 1};
    case kFloat16: return {2, 16, 1};
    case kBFloat16: return {4, 16, 1};
    case kInt8: return {0, 8, 1};
    case kInt16: return {0, 16, 1};
    case kInt32: return {0, 32, 1};
    case kInt64: return {0, 64, 1};
    case kUInt8: return {1, 8, 1};
    case kBool: return {1, 8, 1};  // torch 1.13 exports bool as uint8
    default: throw py::type_error("__dlpack__(): dtype " + std::string(dtype_name(t)) + " has no DLPack type");
  }
}

DType from_dl_dtype(DLDataType d) {
  if (d.lanes != 1) throw py::type_error("from_dlpack(): vector (lanes > 1) types are not supported");
  if (d.code == 2 && d.bits == 32) return kFloat32;
  if (d.code == 2 && d.bits == 64) return kFloat64;
  if (d.code == 2 && d.bits == 16) return kFloat16;
  if (d.code == 4 && d.bits == 16) return kBFloat16;
  if (d.code == 0 && d.bits == 8) return kInt8;
  if (d.code == 0 && d.bits == 16) return kInt16;
  if (d.code == 0 && d.bits == 32) return kInt32;
  if (d.code == 0 && d.bits == 64) return kInt64;
  if (d.code == 1 && d.bits == 8) return kUInt8;
  if (d.code == 6 && d.bits == 8) return kBool;
  throw py::type_error("from_dlpack(): unsupported DLPack type (code " + std::to_string(d.code) + ", bits " +
                       std::to_string(d.bits) + ")");
}

py::capsule to_dlpack(const Tensor& t) {
  auto* ctx = new ExportCtx;
  ctx->tensor = t.detach();
  ctx->shape.assign(t.sizes().begin(), t.sizes().end());
  ctx->strides.assign(t.strides().begin(), t.strides().end());
  DLTensor& d = ctx->managed.dl_tensor;
  d.data = ctx->tensor.data_ptr();
  d.device = {1, 0};
  d.ndim = static_cast<int32_t>(t.dim());
  d.dtype = dl_dtype(t.dtype());
  d.shape = ctx->shape.data();
  d.strides = ctx->strides.data();
  d.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = [](DLManagedTensor* self) { delete static_cast<ExportCtx*>(self->manager_ctx); };
  // An unconsumed capsule frees the tensor itself; a consumer renames it "used_dltensor"
  // and calls the deleter when done.
  return py::capsule(&ctx->managed, "dltensor", [](PyObject* cap) {
    if (PyCapsule_IsValid(cap, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
      if (m && m->deleter) m->deleter(m);
    } else {
      PyErr_Clear();
    }
  });
}

Tensor from_dlpack(py::object obj) {
  py::object cap = obj;
  if (!PyCapsule_CheckExact(obj.ptr())) {
    if (!py::hasattr(obj, "__dlpack__"))
      throw py::type_error(std::string("from_dlpack(): expected an object with __dlpack__ or a DLPack capsule, got ") +
                           Py_TYPE(obj.ptr())->tp_name);
    if (py::hasattr(obj, "__dlpack_device__")) {
      py::tuple dev = obj.attr("__dlpack_device__")();
      if (dev[0].cast<int>() != 1)
        throw py::value_error("from_dlpack(): ember runs on the CPU; the tensor is on device type " +
                              std::to_string(dev[0].cast<int>()));
    }
    cap = obj.attr("__dlpack__")();
  }
  if (!PyCapsule_IsValid(cap.ptr(), "dltensor"))
    throw py::value_error("from_dlpack(): the DLPack capsule was already consumed (each capsule can be used once)");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  const DLTensor& d = m->dl_tensor;
  if (d.device.device_type != 1) throw py::value_error("from_dlpack(): ember runs on the CPU only");
  const DType dt = from_dl_dtype(d.dtype);
  std::vector<int64_t> sizes(d.shape, d.shape + d.ndim);
  std::vector<int64_t> strides;
  if (d.strides) {
    strides.assign(d.strides, d.strides + d.ndim);
  } else {
    strides.assign(static_cast<size_t>(d.ndim), 1);
    for (int i = d.ndim - 2; i >= 0; --i) strides[static_cast<size_t>(i)] = strides[static_cast<size_t>(i + 1)] * sizes[static_cast<size_t>(i + 1)];
  }
  void* data = static_cast<char*>(d.data) + d.byte_offset;
  PyCapsule_SetName(cap.ptr(), "used_dltensor");
  return from_blob(data, sizes, strides, [m](void*) { if (m->deleter) m->deleter(m); }, TensorOptions(dt));
}

}  // namespace

void init_interop(py::module_& m) {
  py::module_::import("numpy");  // fails at import with a clear ImportError when numpy is missing
  m.def("from_numpy", &from_numpy, py::arg("ndarray"));
  m.def("_tensor", &tensor_from_data, py::arg("data"), py::arg("dtype") = py::none());
  m.def("from_dlpack", &from_dlpack, py::arg("ext_tensor"));
  m.def("_to_dlpack", &to_dlpack);
  auto tcls = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  tcls.def("numpy", [](const Tensor& t, bool force) { return to_numpy(t, force); }, py::kw_only(), py::arg("force") = false)
      .def("__array__", [](const Tensor& t, py::object dtype) -> py::object {
            py::array a = to_numpy(t.detach(), true);
            if (dtype.is_none()) return a;
            return a.attr("astype")(dtype, py::arg("copy") = false);
          }, py::arg("dtype") = py::none())
      .def("__dlpack__", [](const Tensor& t, py::object) { return to_dlpack(t); }, py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const Tensor&) { return py::make_tuple(1, 0); });
}

}  // namespace ember::python
