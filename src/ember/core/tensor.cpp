#include "ember/core/tensor.h"

#include <sstream>

#include "ember/autograd/autograd_meta.h"
#include "ember/core/check.h"
#include "ember/kernels/cpu/dispatch.h"
#include "ember/core/op_scope.h"
#include "ember/jit/trace_hook.h"

namespace ember {

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  // A 0-dim tensor accepts dims -1 and 0, as in PyTorch.
  const int64_t n = ndim > 0 ? ndim : 1;
  EMBER_CHECK(dim >= -n && dim < n, "[", op, "] dimension out of range (expected to be in range of [",
              -n, ", ", n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

void Tensor::throw_undefined() {
  EMBER_ERROR("[Tensor] the tensor is undefined (default-constructed or moved from); "
              "create it with a factory such as ember::zeros() before using it");
}

int64_t Tensor::size(int64_t dim) const {
  EMBER_CHECK(defined(), "[size] called on an undefined tensor");
  EMBER_CHECK(this->dim() > 0, "[size] dimension specified as ", dim, " but tensor has no dimensions");
  return sizes()[wrap_dim(dim, this->dim(), "size")];
}

int64_t Tensor::stride(int64_t dim) const {
  EMBER_CHECK(defined(), "[stride] called on an undefined tensor");
  EMBER_CHECK(this->dim() > 0, "[stride] dimension specified as ", dim, " but tensor has no dimensions");
  return strides()[wrap_dim(dim, this->dim(), "stride")];
}

template <typename T>
T* Tensor::data_ptr() const {
  EMBER_CHECK(defined(), "[data_ptr] called on an undefined tensor");
  constexpr DType want = kernels::dtype_of<T>();
  EMBER_CHECK(dtype() == want, "[data_ptr] expected a tensor of dtype ", want, " for data_ptr<",
              want, ">(), but the tensor has dtype ", dtype());
  return static_cast<T*>(impl_->data());
}

template <typename T>
T Tensor::item() const {
  EMBER_CHECK(defined(), "[item] called on an undefined tensor");
  // Called by the user (not inside an op) while tracing: the value must not be traced.
  if (detail::tl_outermost_op == nullptr) jit::detail::value_read("item", *this);
  EMBER_CHECK(numel() == 1, "[item] a Tensor with ", numel(),
              " elements cannot be converted to a scalar; item() needs exactly one element");
  return kernels::dispatch_all(dtype(), "item", [&](auto tag) -> T {
    using S = typename decltype(tag)::type;
    return kernels::convert<T>(*static_cast<const S*>(impl_->data()));
  });
}

Scalar Tensor::item() const {
  if (is_floating_point()) return Scalar(item<double>());
  if (dtype() == kBool) return Scalar(item<bool>());
  return Scalar(item<int64_t>());
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  EMBER_CHECK(defined(), "[to_vector] called on an undefined tensor");
  if (detail::tl_outermost_op == nullptr) jit::detail::value_read("to_vector", *this);
  Tensor c = to(kernels::dtype_of<T>()).contiguous();
  const T* p = static_cast<const T*>(c.data_ptr());
  return std::vector<T>(p, p + c.numel());
}

#define EMBER_INSTANTIATE(T)                          \
  template T* Tensor::data_ptr<T>() const;           \
  template T Tensor::item<T>() const;                \
  template std::vector<T> Tensor::to_vector<T>() const;
EMBER_INSTANTIATE(uint8_t)
EMBER_INSTANTIATE(int8_t)
EMBER_INSTANTIATE(int16_t)
EMBER_INSTANTIATE(int32_t)
EMBER_INSTANTIATE(int64_t)
EMBER_INSTANTIATE(Half)
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
EMBER_INSTANTIATE(BFloat16)
#undef EMBER_INSTANTIATE
template bool* Tensor::data_ptr<bool>() const;
template bool Tensor::item<bool>() const;

template <>
std::vector<bool> Tensor::to_vector<bool>() const {
  if (detail::tl_outermost_op == nullptr) jit::detail::value_read("to_vector", *this);
  Tensor c = to(kBool).contiguous();
  const bool* p = static_cast<const bool*>(c.data_ptr());
  return std::vector<bool>(p, p + c.numel());
}

std::string Tensor::toString() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

}  // namespace ember
