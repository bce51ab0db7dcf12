#pragma once
// Shared pieces of ember's Python binding (the extension module ember._C). Each feature
// binds itself in one file (tensor.cpp, functions.cpp, autograd.cpp, optim.cpp, interop.cpp)
// through an init_* function called from module.cpp; this header holds the argument
// conversions they share, so that every binding reads Python arguments the way torch does:
// a dim is an int or a sequence of ints (None: every dim), a shape is `*sizes` or one
// sequence, a number is a Python bool/int/float.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>
#include <vector>

#include "ember/ember.h"

namespace py = pybind11;

namespace ember::python {

// A Python bool/int/float (or a one-element tensor) as an ember::Scalar; TypeError naming
// `op` otherwise.
Scalar to_scalar(py::handle h, const char* op);
// True for Python numbers (bool, int, float), numpy scalars included.
bool is_number(py::handle h);
// The Tensor inside h, or nullptr when h is not an ember Tensor (no exception).
const Tensor* as_tensor(py::handle h);
// An int or a sequence of ints. TypeError naming `op` and `arg` otherwise.
std::vector<int64_t> to_int_list(py::handle h, const char* op, const char* arg);
// view(2, 3) / view((2, 3)) / view([2, 3]) / view(ember.Size([2, 3])).
std::vector<int64_t> shape_from_args(const py::args& args, const char* op);
// device= arguments: None or "cpu" (ember runs on the CPU); anything else is a ValueError
// naming `op`, never silently ignored.
void check_device(py::handle device, const char* op);
// ember.Size (a tuple subclass set by the package, see ember/__init__.py).
py::object make_size(IntArrayRef sizes);
// namedtuple results (values, indices), as torch.return_types.
py::object values_indices(const char* name, std::tuple<Tensor, Tensor> r);
// Wraps an exception-free conversion of a C++ Tensor result.
inline py::object wrap(Tensor t) { return py::cast(std::move(t)); }

// Runs f() with the GIL released, so other Python threads (DataLoader workers, a
// server's request threads) run while ember computes. For calls whose C++ work is large
// enough to be worth it (matrix products, convolutions, norms, backward, optimizer
// steps, cat/stack) and that touch no Python object: convert the arguments first.
template <typename F>
auto without_gil(F&& f) {
  py::gil_scoped_release release;
  return f();
}

// without_gil for torch.distributed's functions: an ember::Error becomes a RuntimeError with
// the same text (the package-wide translator would turn messages that say "out of range"
// into IndexError, which torch.distributed never raises).
template <typename F>
auto distributed_call(F&& f) {
  try {
    py::gil_scoped_release release;
    return f();
  } catch (const ember::Error& e) {
    throw std::runtime_error(e.what());
  }
}

// A Python object owned from C++ code that may drop it without the GIL (autograd nodes,
// hooks and checkpoint functions die inside backward, which runs with the GIL released):
// the destructor takes the GIL. Hold one through a std::shared_ptr.
struct PyRef {
  py::object obj;
  explicit PyRef(py::object o) : obj(std::move(o)) {}
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  ~PyRef() {
    if (!Py_IsInitialized()) {
      obj.release();  // interpreter gone: leak rather than crash
      return;
    }
    py::gil_scoped_acquire gil;
    obj = py::object();
  }
};

void init_dtype(py::module_& m);
void init_tensor(py::module_& m);
void init_functions(py::module_& m);
void init_autograd(py::module_& m);
void init_optim(py::module_& m);
void init_interop(py::module_& m);
void init_nn_modules(py::module_& m);
void init_guards(py::module_& m);
void init_amp(py::module_& m);
void init_distributed(py::module_& m);
// FSDP over Python modules and sharded checkpoints, into ember._C._distributed (distributed_shard.cpp).
void init_distributed_shard(py::module_& d);

}  // namespace ember::python
