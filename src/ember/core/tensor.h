#pragma once
// Tensor: a cheap, refcounted handle to a TensorImpl. Copying a Tensor copies the handle,
// never the data (as in libtorch). Methods that return views share storage with *this.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/core/generator.h"
#include "ember/core/scalar.h"
#include "ember/core/tensor_impl.h"
#include "ember/core/tensor_options.h"

namespace ember {

namespace autograd {
class Node;
}
namespace indexing {
class TensorIndex;
}

// A hook registration that can be undone: handle.remove().
class RemovableHandle {
 public:
  RemovableHandle() = default;
  explicit RemovableHandle(std::function<void()> remover) : remover_(std::move(remover)) {}
  void remove() {
    if (remover_) std::exchange(remover_, nullptr)();
  }

 private:
  std::function<void()> remover_;
};

class Tensor {
 public:
  // An undefined tensor (no impl); most methods throw on it.
  Tensor() = default;
  explicit Tensor(IntrusivePtr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return static_cast<bool>(impl_); }
  // Makes this handle undefined (libtorch's TensorBase::reset); other handles keep the tensor.
  void reset() noexcept { impl_.reset(); }
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
  // Whether the dtype holds negative values (every dtype but uint8 and bool).
  bool is_signed() const { return dtype() != kUInt8 && dtype() != kBool; }
  bool is_cpu() const { return device().is_cpu(); }
  Layout layout() const { return kStrided; }
  const Storage& storage() const { return get().storage(); }
  // True when both tensors view the same storage (libtorch's is_alias_of).
  bool is_alias_of(const Tensor& other) const { return storage() == other.storage(); }
  bool is_same_storage(const Tensor& other) const { return is_alias_of(other); }
  // True when both handles point to the same TensorImpl.
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  // The in-place write counter shared by all views of the storage.
  uint32_t _version() const { return get().storage()->version(); }
  // Records an in-place write (every in-place op calls this).
  void bump_version() const {
    if (!get().is_inference()) get().storage()->bump_version();
  }

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

  // ---- autograd (src/ember/autograd/) ----
  // True for leaves marked with requires_grad_() and for results of ops on them.
  bool requires_grad() const;
  // Sets requires_grad on a leaf; only floating-point tensors can require gradients.
  Tensor& requires_grad_(bool requires_grad = true) const;
  Tensor& set_requires_grad(bool requires_grad) { return requires_grad_(requires_grad); }
  // A leaf has no grad_fn: made by the user, or by ops that did not record a graph.
  bool is_leaf() const;
  // The backward node that produced this tensor (null for leaves); name() gives
  // PyTorch's name, e.g. "MulBackward0".
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  // Which output of grad_fn this tensor is.
  uint32_t output_nr() const;
  // The gradient accumulated by backward (undefined until then).
  const Tensor& grad() const;
  Tensor& mutable_grad() const;
  void set_grad(const Tensor& grad);
  // Keep the gradient of a non-leaf in grad() during backward.
  void retain_grad() const;
  bool retains_grad() const;
  // Computes the gradient of this tensor w.r.t. the leaves of its graph and adds it to
  // their grad(). gradient may be omitted for a one-element tensor. The graph's saved
  // tensors are freed unless retain_graph (default: create_graph). With inputs given,
  // only those leaves accumulate (an empty list given explicitly is refused).
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false, const std::optional<std::vector<Tensor>>& inputs = std::nullopt) const;
  // backward(g, retain, create, {x, y}): the inputs as a braced list, as libtorch accepts.
  void backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                std::initializer_list<Tensor> inputs) const {
    backward(gradient, retain_graph, create_graph, std::optional<std::vector<Tensor>>(std::vector<Tensor>(inputs)));
  }
  // A hook on the gradient of this tensor, called during backward; returning a defined
  // tensor replaces the gradient.
  template <typename F>
  RemovableHandle register_hook(F&& hook) const {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, const Tensor&>>) {
      return register_hook_impl([h = std::forward<F>(hook)](const Tensor& g) mutable {
        h(g);
        return Tensor();
      });
    } else {
      return register_hook_impl(std::function<Tensor(const Tensor&)>(std::forward<F>(hook)));
    }
  }
  RemovableHandle register_hook_impl(std::function<Tensor(const Tensor&)> hook) const;
  // libtorch's spelling of handle.remove().
  void remove_hook(RemovableHandle& handle) const { handle.remove(); }
  // Removes the hook register_hook added as the position-th on this tensor (from 0), as
  // libtorch's remove_hook(unsigned); an unknown or already removed position is an error.
  void remove_hook(unsigned position) const;
  // Leaves only: called with the tensor after its grad() was updated (DDP uses these).
  RemovableHandle register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  // Detaches in place: drops grad_fn and requires_grad.
  Tensor& detach_() const;
  // Created inside InferenceMode.
  bool is_inference() const { return get().is_inference(); }
  // True for a tensor made by a view op (shares a base's storage and version counter).
  bool is_view() const { return get().view_base() != nullptr; }
  // The tensor a view was made from (libtorch's _base()); an error for a non-view.
  Tensor _base() const;
  // libtorch's spelling of impl(), for identity checks.
  TensorImpl* unsafeGetTensorImpl() const { return impl_.get(); }
  // libtorch's Tensor::data() / variable_data(): a tensor sharing the storage, without
  // autograd history and not requiring grad (like detach()).
  Tensor data() const { return detach(); }
  Tensor variable_data() const { return detach(); }
  Tensor tensor_data() const { return detach(); }
  // Replaces this tensor's data (storage, sizes, strides, dtype) with new_data's, keeping
  // its autograd identity (requires_grad, grad, hooks): libtorch's set_data.
  void set_data(const Tensor& new_data) const;

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
  Tensor to(Device device, DType dtype, bool non_blocking = false, bool copy = false) const;
  // Converted to other's dtype (and device).
  Tensor to(const Tensor& other, bool non_blocking = false, bool copy = false) const;
  Tensor toType(DType dtype) const { return to(dtype); }
  // Converted to other's dtype (libtorch's type_as).
  Tensor type_as(const Tensor& other) const { return to(other, false, false); }
  // This machine has only the CPU: *this.
  Tensor cpu() const { return *this; }

  // ---- in-place writes (bump the version counter) ----
  // Copies src into *this, broadcasting src and converting its dtype.
  Tensor& copy_(const Tensor& src) const;
  Tensor& fill_(const Scalar& value) const;
  Tensor& zero_() const;
  // Random in-place fills; gen defaults to the default generator.
  Tensor& uniform_(double from = 0.0, double to = 1.0, Generator gen = {}) const;
  Tensor& normal_(double mean = 0.0, double std = 1.0, Generator gen = {}) const;
  Tensor& bernoulli_(double p = 0.5, Generator gen = {}) const;
  // Integers uniform in [from, to).
  Tensor& random_(int64_t from, int64_t to, Generator gen = {}) const;
  // Integers uniform in [0, to).
  Tensor& random_(int64_t to, Generator gen = {}) const;
  // Integers uniform over [0, 2^mantissa] for floating dtypes, [0, max] for integer ones.
  Tensor& random_(Generator gen = {}) const;
  // Reshapes in place to contiguous `sizes`, growing the storage when it is too small
  // (libtorch's resize_; the values of new elements are unspecified). Refused for tensors
  // that require grad.
  Tensor& resize_(IntArrayRef sizes) const;
  Tensor& resize_as_(const Tensor& other) const { return resize_(other.sizes()); }

  // ======== operations (declared here, implemented per family under src/ember/ops/) ========
  // ---- pointwise, unary (ops/pointwise.cpp); each has an in-place twin op_() ----
  Tensor neg() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor exp() const;
  Tensor exp2() const;
  Tensor expm1() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor log10() const;
  Tensor log1p() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor reciprocal() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const;
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  // approximate: "none" (erf form) or "tanh".
  Tensor gelu(std::string_view approximate = "none") const;
  Tensor silu() const;
  Tensor softplus(const Scalar& beta = 1, const Scalar& threshold = 20) const;
  Tensor erf() const;
  Tensor erfinv() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;
  Tensor trunc() const;
  Tensor frac() const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp(const Tensor& min, const Tensor& max) const;
  Tensor clamp_min(const Scalar& min) const;
  Tensor clamp_max(const Scalar& max) const;
  Tensor nan_to_num(std::optional<double> nan = 0.0, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt) const;
  Tensor logical_not() const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor& neg_() const;
  Tensor& abs_() const;
  Tensor& sign_() const;
  Tensor& exp_() const;
  Tensor& exp2_() const;
  Tensor& expm1_() const;
  Tensor& log_() const;
  Tensor& log2_() const;
  Tensor& log10_() const;
  Tensor& log1p_() const;
  Tensor& sqrt_() const;
  Tensor& rsqrt_() const;
  Tensor& reciprocal_() const;
  Tensor& sin_() const;
  Tensor& cos_() const;
  Tensor& tan_() const;
  Tensor& asin_() const;
  Tensor& acos_() const;
  Tensor& atan_() const;
  Tensor& sinh_() const;
  Tensor& cosh_() const;
  Tensor& tanh_() const;
  Tensor& sigmoid_() const;
  Tensor& relu_() const;
  Tensor& erf_() const;
  Tensor& erfinv_() const;
  Tensor& floor_() const;
  Tensor& ceil_() const;
  Tensor& round_() const;
  Tensor& trunc_() const;
  Tensor& frac_() const;
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor& clamp_min_(const Scalar& min) const;
  Tensor& clamp_max_(const Scalar& max) const;
  Tensor& nan_to_num_(std::optional<double> nan = 0.0, std::optional<double> posinf = std::nullopt,
                      std::optional<double> neginf = std::nullopt) const;

  // ---- pointwise, binary (ops/pointwise.cpp): broadcasting + type promotion ----
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(const Scalar& other) const;
  // rounding_mode: none (true division), "trunc" or "floor".
  Tensor div(const Tensor& other, std::optional<std::string_view> rounding_mode = std::nullopt) const;
  Tensor div(const Scalar& other, std::optional<std::string_view> rounding_mode = std::nullopt) const;
  Tensor remainder(const Tensor& other) const;
  Tensor remainder(const Scalar& other) const;
  Tensor fmod(const Tensor& other) const;
  Tensor fmod(const Scalar& other) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(const Scalar& exponent) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor atan2(const Tensor& other) const;
  Tensor lerp(const Tensor& end, const Scalar& weight) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor& add_(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& mul_(const Tensor& other) const;
  Tensor& mul_(const Scalar& other) const;
  Tensor& div_(const Tensor& other, std::optional<std::string_view> rounding_mode = std::nullopt) const;
  Tensor& div_(const Scalar& other, std::optional<std::string_view> rounding_mode = std::nullopt) const;
  Tensor& remainder_(const Tensor& other) const;
  Tensor& remainder_(const Scalar& other) const;
  Tensor& fmod_(const Tensor& other) const;
  Tensor& fmod_(const Scalar& other) const;
  Tensor& pow_(const Tensor& exponent) const;
  Tensor& pow_(const Scalar& exponent) const;
  Tensor& atan2_(const Tensor& other) const;
  Tensor& lerp_(const Tensor& end, const Scalar& weight) const;
  Tensor& lerp_(const Tensor& end, const Tensor& weight) const;

  // ---- comparison and logic (ops/pointwise.cpp): bool results ----
  Tensor eq(const Tensor& other) const;
  Tensor eq(const Scalar& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(const Scalar& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(const Scalar& other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(const Scalar& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(const Scalar& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(const Scalar& other) const;
  Tensor logical_and(const Tensor& other) const;
  Tensor logical_or(const Tensor& other) const;
  Tensor logical_xor(const Tensor& other) const;
  // *this where condition, else other.
  Tensor where(const Tensor& condition, const Tensor& other) const;
  Tensor isclose(const Tensor& other, double rtol = 1e-05, double atol = 1e-08,
                 bool equal_nan = false) const;
  bool allclose(const Tensor& other, double rtol = 1e-05, double atol = 1e-08,
                bool equal_nan = false) const;
  // Same sizes and same values (PyTorch's torch.equal).
  bool equal(const Tensor& other) const;

  // ---- reductions (ops/reduce.cpp); dims empty means all dims ----
  Tensor sum(std::optional<DType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor var(IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor std(IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> var_mean(IntArrayRef dims = {}, int64_t correction = 1,
                                      bool keepdim = false) const;
  std::tuple<Tensor, Tensor> std_mean(IntArrayRef dims = {}, int64_t correction = 1,
                                      bool keepdim = false) const;
  // p: 1, 2, inf (as std::numeric_limits<double>::infinity()), or any positive value; "fro" is 2.
  Tensor norm(const Scalar& p = 2, IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dims, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor count_nonzero(IntArrayRef dims = {}) const;
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor softmax(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<DType> dtype = std::nullopt) const;

  // ---- linear algebra (ops/linalg.cpp) ----
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& mat2) const;
  Tensor bmm(const Tensor& mat2) const;
  Tensor dot(const Tensor& other) const;
  Tensor outer(const Tensor& vec2) const;
  // beta * self + alpha * (mat1 @ mat2)
  Tensor addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
               const Scalar& alpha = 1) const;
  Tensor baddbmm(const Tensor& batch1, const Tensor& batch2, const Scalar& beta = 1,
                 const Scalar& alpha = 1) const;

  // ---- joining and shaping (ops/join.cpp) ----
  Tensor flip(IntArrayRef dims) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor repeat(IntArrayRef repeats) const;
  Tensor tile(IntArrayRef dims) const;
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const;
  Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim = std::nullopt) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;

  // ---- indexing (ops/index.cpp) ----
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  // reduce: "sum", "prod", "mean", "amax", "amin".
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src,
                        std::string_view reduce, bool include_self = true) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source,
                   const Scalar& alpha = 1) const;
  Tensor index_copy(int64_t dim, const Tensor& index, const Tensor& source) const;
  Tensor index_fill(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;  // value: a 0-d tensor
  Tensor index_fill(int64_t dim, const Tensor& index, const Tensor& value) const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor masked_scatter(const Tensor& mask, const Tensor& source) const;
  // Advanced indexing: one entry per leading dim; an undefined Tensor means ":" (whole
  // dim). Integer (int64/int32) or bool tensors, as x[idx0, :, idx2] in Python.
  Tensor index(const std::vector<Tensor>& indices) const;
  // libtorch's index lists (ember/ops/tensor_indexing.h): x.index({Slice(1, None), 0, mask}).
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value) const;
  Tensor& index_put_(const std::vector<Tensor>& indices, const Tensor& values,
                     bool accumulate = false) const;
  Tensor nonzero() const;
  Tensor bincount(const Tensor& weights = {}, int64_t minlength = 0) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src,
                          std::string_view reduce, bool include_self = true) const;
  Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& source,
                     const Scalar& alpha = 1) const;
  Tensor& index_copy_(int64_t dim, const Tensor& index, const Tensor& source) const;
  Tensor& index_fill_(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;
  Tensor& masked_fill_(const Tensor& mask, const Tensor& value) const;
  Tensor& index_fill_(int64_t dim, const Tensor& index, const Tensor& value) const;
  Tensor& masked_scatter_(const Tensor& mask, const Tensor& source) const;

  // ---- sorting and selection (ops/sort.cpp) ----
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true,
                                  bool sorted = true) const;
  std::tuple<Tensor, Tensor> kthvalue(int64_t k, int64_t dim = -1, bool keepdim = false) const;

  // ---- compound assignment and unary minus ----
  Tensor& operator+=(const Tensor& o) { return add_(o); }
  Tensor& operator+=(const Scalar& o) { return add_(o); }
  Tensor& operator-=(const Tensor& o) { return sub_(o); }
  Tensor& operator-=(const Scalar& o) { return sub_(o); }
  Tensor& operator*=(const Tensor& o) { return mul_(o); }
  Tensor& operator*=(const Scalar& o) { return mul_(o); }
  Tensor& operator/=(const Tensor& o) { return div_(o); }
  Tensor& operator/=(const Scalar& o) { return div_(o); }
  Tensor operator-() const { return neg(); }
  // Assigning a number to a temporary view fills it, as in libtorch: x[0][1] = 2.5.
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(const Tensor&) & = default;
  Tensor& operator=(Tensor&&) & noexcept = default;
  // Assigning to a temporary writes through it, as libtorch: x[0] = y and
  // x.index({...}) = y copy y's values into the view (x[0] = 1.5 fills it).
  Tensor& operator=(const Tensor& src) && { return copy_(src); }
  Tensor& operator=(Tensor&& src) && { return copy_(src); }
  Tensor& operator=(const Scalar& value) && { return fill_(value); }

  std::string toString() const;

 private:
  // The impl, or an ember::Error when the tensor is undefined (never a null dereference).
  const TensorImpl& get() const {
    if (!impl_) throw_undefined();
    return *impl_;
  }
  [[noreturn]] static void throw_undefined();
  // In-place methods are const, as libtorch's are: a Tensor is a handle, and writing
  // through a const handle writes the shared data, not the handle.
  Tensor& self_mut() const { return const_cast<Tensor&>(*this); }

  IntrusivePtr<TensorImpl> impl_;
};

// Arithmetic and comparison operators (Tensor or Scalar on either side), as in libtorch.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
// a % b is remainder(a, b) (Python's modulo: the result takes the divisor's sign).
Tensor operator%(const Tensor& a, const Tensor& b);
Tensor operator%(const Tensor& a, const Scalar& b);

// Prints like PyTorch's repr: tensor([[0., 1.], ...]), summarised past 1000 elements.
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Wraps a negative dim and checks it against [0, ndim); `op` names the caller in the error.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace ember
