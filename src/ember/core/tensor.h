#pragma once
// Tensor: a cheap, refcounted handle to a TensorImpl. Copying a Tensor copies the handle,
// never the data (as in libtorch). Methods that return views share storage with *this.

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/generator.h"
#include "ember/core/scalar.h"
#include "ember/core/tensor_impl.h"
#include "ember/core/tensor_options.h"

namespace ember {

class Tensor {
 public:
  // An undefined tensor (no impl); most methods throw on it.
  Tensor() = default;
  explicit Tensor(IntrusivePtr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const IntrusivePtr<TensorImpl>& impl_ptr() const { return impl_; }
  // Number of handles to the same TensorImpl.
  uint32_t use_count() const { return impl_.use_count(); }

  // ---- metadata ----
  IntArrayRef sizes() const { return get().sizes(); }
  IntArrayRef strides() const { return get().strides(); }
  // Size/stride of one dim; negative dims count from the end.
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return get().dim(); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return get().numel(); }
  int64_t storage_offset() const { return get().storage_offset(); }
  DType dtype() const { return get().dtype(); }
  DType scalar_type() const { return get().dtype(); }
  Device device() const { return get().device(); }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  size_t element_size() const { return ember::element_size(dtype()); }
  size_t itemsize() const { return element_size(); }
  // Bytes the elements occupy: numel() * element_size().
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  bool is_contiguous() const { return get().is_contiguous(); }
  bool is_floating_point() const { return ember::is_floating_point(dtype()); }
  bool is_cpu() const { return device().is_cpu(); }
  const Storage& storage() const { return get().storage(); }
  // True when both tensors view the same storage (libtorch's is_alias_of).
  bool is_alias_of(const Tensor& other) const { return storage() == other.storage(); }
  bool is_same_storage(const Tensor& other) const { return is_alias_of(other); }
  // True when both handles point to the same TensorImpl.
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  // The in-place write counter shared by all views of the storage.
  uint32_t _version() const { return get().storage()->version(); }
  // Records an in-place write (every in-place op calls this).
  void bump_version() const { get().storage()->bump_version(); }

  // ---- data access ----
  void* data_ptr() const { return get().data(); }
  // Typed pointer to element [0, ...]; throws when T does not match dtype().
  template <typename T>
  T* data_ptr() const;
  // The value of a one-element tensor converted to T; throws otherwise.
  template <typename T>
  T item() const;
  Scalar item() const;
  // The elements in row-major order, converted to T (copies).
  template <typename T>
  std::vector<T> to_vector() const;

  // ---- autograd flags (the engine arrives with the autograd issue) ----
  bool requires_grad() const;
  // Sets requires_grad; only floating-point tensors can require gradients.
  Tensor& requires_grad_(bool requires_grad = true);
  Tensor& set_requires_grad(bool requires_grad) { return requires_grad_(requires_grad); }

  // ---- views: share storage, never copy ----
  // Fails with ember::Error (suggesting reshape()) when the strides cannot express the view.
  Tensor view(IntArrayRef sizes) const;
  Tensor view_as(const Tensor& other) const { return view(other.sizes()); }
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides,
                    std::optional<int64_t> storage_offset = std::nullopt) const;
  // 2-D transpose; 0-D and 1-D tensors are returned as they are.
  Tensor t() const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor movedim(int64_t source, int64_t destination) const;
  // Repeats size-1 dims with stride 0; -1 keeps a size.
  Tensor expand(IntArrayRef sizes) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor broadcast_to(IntArrayRef sizes) const { return expand(sizes); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, IntArrayRef sizes) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  // Windows of `size` elements every `step` along dim, as a new last dim.
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  // A tensor with the same data and no autograd history (shares storage).
  Tensor detach() const;
  Tensor alias() const;

  // ---- may copy ----
  // A view when the layout allows one, otherwise a contiguous copy.
  Tensor reshape(IntArrayRef sizes) const;
  Tensor reshape_as(const Tensor& other) const { return reshape(other.sizes()); }
  // *this when already contiguous, otherwise a contiguous copy.
  Tensor contiguous() const;
  // A copy with its own storage (contiguous).
  Tensor clone() const;
  // *this when dtype matches (unless copy), otherwise a converted copy.
  Tensor to(DType dtype, bool copy = false) const;
  Tensor to(Device device, bool copy = false) const;
  Tensor to(const TensorOptions& options, bool copy = false) const;

  // ---- in-place writes (bump the version counter) ----
  // Copies src into *this, broadcasting src and converting its dtype.
  Tensor& copy_(const Tensor& src);
  Tensor& fill_(const Scalar& value);
  Tensor& zero_();
  // Random in-place fills; gen defaults to the default generator.
  Tensor& uniform_(double from = 0.0, double to = 1.0, Generator gen = {});
  Tensor& normal_(double mean = 0.0, double std = 1.0, Generator gen = {});
  Tensor& bernoulli_(double p = 0.5, Generator gen = {});
  // Integers uniform in [from, to).
  Tensor& random_(int64_t from, int64_t to, Generator gen = {});

  std::string toString() const;

 private:
  // The impl, or an ember::Error when the tensor is undefined (never a null dereference).
  const TensorImpl& get() const {
    if (!impl_) throw_undefined();
    return *impl_;
  }
  [[noreturn]] static void throw_undefined();

  IntrusivePtr<TensorImpl> impl_;
};

// Prints like PyTorch's repr: tensor([[0., 1.], ...]), summarised past 1000 elements.
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Wraps a negative dim and checks it against [0, ndim); `op` names the caller in the error.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace ember
