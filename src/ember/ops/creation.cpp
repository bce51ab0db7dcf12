#include "ember/ops/creation.h"

#include <cmath>
#include <cstring>
#include <ostream>
#include <sstream>

#include "ember/autograd/autograd_meta.h"
#include "ember/core/check.h"
#include "ember/core/op_name_scope.h"
#include "ember/kernels/cpu/dispatch.h"
#include "ember/kernels/cpu/kernels.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/pointwise_nodes.h"

namespace ember {

namespace {

// Checks sizes and returns the element count; overflow or negative sizes are errors.
int64_t checked_numel(IntArrayRef sizes, const char* op) {
  bool has_zero = false;
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, "[", op, "] trying to create tensor with negative dimension ", s, ": ", sizes);
    has_zero = has_zero || s == 0;
  }
  if (has_zero) return 0;
  int64_t n = 1;
  for (int64_t s : sizes) {
    EMBER_CHECK(n <= INT64_MAX / s, "[", op, "] sizes ", sizes, " have more elements than fit in int64");
    n *= s;
  }
  return n;
}

Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

DType value_dtype(const Scalar& v, const TensorOptions& options) {
  if (options.has_dtype()) return options.dtype();
  if (v.is_boolean()) return kBool;
  if (v.is_integral()) return kInt64;
  return get_default_dtype();
}

}  // namespace

Tensor empty(IntArrayRef sizes, const TensorOptions& options) {
  detail::OpNameScope scope("empty");
  const int64_t n = checked_numel(sizes, "empty");
  EMBER_CHECK(options.layout() == kStrided, "[", OpScope::outermost(),
              "] only strided tensors exist in ember; drop the non-strided layout from the options");
  const DType dt = options.dtype();
  const size_t es = element_size(dt);
  EMBER_CHECK(static_cast<uint64_t>(n) <= SIZE_MAX / es, "[empty] sizes ", sizes,
              " need more bytes than this machine can address");
  Storage storage = make_storage(static_cast<size_t>(n) * es, options.device());
  Tensor t(IntrusivePtr<TensorImpl>::make(std::move(storage), dt, sizes, contiguous_strides(sizes), 0));
  return finish(std::move(t), options);
}

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options) {
  detail::OpNameScope scope("empty_strided");
  EMBER_CHECK(sizes.size() == strides.size(), "[empty_strided] sizes ", sizes, " and strides ",
              strides, " must have the same length");
  const int64_t n = checked_numel(sizes, "empty_strided");
  int64_t span = n == 0 ? 0 : 1;
  for (size_t i = 0; i < sizes.size() && n > 0; ++i) {
    EMBER_CHECK(strides[i] >= 0, "[empty_strided] negative strides are not supported: ", strides);
    int64_t reach = 0;
    EMBER_CHECK(!__builtin_mul_overflow(sizes[i] - 1, strides[i], &reach) && !__builtin_add_overflow(span, reach, &span),
                "[empty_strided] sizes ", sizes, " with strides ", strides, " address more elements than fit in int64");
  }
  const DType dt = options.dtype();
  EMBER_CHECK(static_cast<uint64_t>(span) <= SIZE_MAX / element_size(dt), "[empty_strided] sizes ", sizes,
              " with strides ", strides, " need more bytes than this machine can address");
  Storage storage = make_storage(static_cast<size_t>(span) * element_size(dt), options.device());
  Tensor t(IntrusivePtr<TensorImpl>::make(std::move(storage), dt, sizes, strides, 0));
  return finish(std::move(t), options);
}

Tensor zeros(IntArrayRef sizes, const TensorOptions& options) {
  jit::detail::TraceOp trace("zeros");
  Tensor out = [&]() -> Tensor {
  detail::OpNameScope scope("zeros");
  Tensor t = empty(sizes, options.requires_grad(false));
  const size_t bytes = t.nbytes();
  if (bytes) std::memset(t.data_ptr(), 0, bytes);  // all-zero bits are 0 in every dtype
  return finish(std::move(t), options);
}();
  if (trace.recording()) trace.record({}, {{"size", jit::detail::ints(sizes)}, {"dtype", jit::detail::dtype_value(out.dtype())}}, out);
  return out;
}

Tensor ones(IntArrayRef sizes, const TensorOptions& options) {
  jit::detail::TraceOp trace("ones");
  Tensor out = [&]() -> Tensor {
  detail::OpNameScope scope("ones");
  // options.dtype() resolves to the default dtype, so the integer 1 does not make it int64.
  return full(sizes, 1, options.dtype(options.dtype()));
}();
  if (trace.recording()) trace.record({}, {{"size", jit::detail::ints(sizes)}, {"dtype", jit::detail::dtype_value(out.dtype())}}, out);
  return out;
}

Tensor full(IntArrayRef sizes, const Scalar& value, const TensorOptions& options) {
  jit::detail::TraceOp trace("full");
  Tensor out = [&]() -> Tensor {
  detail::OpNameScope scope("full");
  Tensor t = empty(sizes, options.dtype(value_dtype(value, options)).requires_grad(false));
  kernels::cpu::fill(t, value);
  return finish(std::move(t), options);
}();
  if (trace.recording()) trace.record({}, {{"size", jit::detail::ints(sizes)}, {"fill_value", detail::value_from_scalar(value)}, {"dtype", jit::detail::dtype_value(out.dtype())}}, out);
  return out;
}

Tensor scalar_tensor(const Scalar& value, const TensorOptions& options) {
  // As torch.scalar_tensor: the default dtype unless options name one, whatever the value.
  return full({}, value, options.dtype(options.dtype()));
}

Tensor empty_like(const Tensor& t, const TensorOptions& options) {
  return empty(t.sizes(), options.dtype(options.dtype_or(t.dtype())));
}
Tensor zeros_like(const Tensor& t, const TensorOptions& options) {
  return zeros(t.sizes(), options.dtype(options.dtype_or(t.dtype())));
}
Tensor ones_like(const Tensor& t, const TensorOptions& options) {
  return ones(t.sizes(), options.dtype(options.dtype_or(t.dtype())));
}
Tensor full_like(const Tensor& t, const Scalar& value, const TensorOptions& options) {
  return full(t.sizes(), value, options.dtype(options.dtype_or(t.dtype())));
}

Tensor arange(const Scalar& end, const TensorOptions& options) { return arange(0, end, 1, options); }

Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& options) {
  detail::OpNameScope scope("arange");
  return arange(start, end, 1, options);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options) {
  jit::detail::TraceOp trace("arange");
  Tensor out = [&]() -> Tensor {
  detail::OpNameScope scope("arange");
  const bool all_int = !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  const DType dt = options.has_dtype() ? options.dtype() : (all_int ? kInt64 : get_default_dtype());
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  EMBER_CHECK(std::isfinite(s) && std::isfinite(e), "[arange] unsupported range: ", s, " -> ", e);
  EMBER_CHECK(st != 0.0, "[arange] step must be nonzero");
  EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s),
              "[arange] upper bound and larger bound inconsistent with step sign (start ", start,
              ", end ", end, ", step ", step, ")");
  int64_t n;
  if (all_int) {
    const int64_t si = start.to_long(), ei = end.to_long(), sti = step.to_long();
    // In 128 bits: ei - si spans up to 2^64 - 1 (arange(INT64_MIN, INT64_MAX)).
    const __int128 span = sti > 0 ? static_cast<__int128>(ei) - si : static_cast<__int128>(si) - ei;
    const __int128 st = sti > 0 ? static_cast<__int128>(sti) : -static_cast<__int128>(sti);
    const __int128 len = span == 0 ? 0 : (span - 1) / st + 1;
    EMBER_CHECK(len <= INT64_MAX, "[arange] the range ", start, " -> ", end, " in steps of ", step,
                " has ", static_cast<double>(len), " elements, more than int64 can count");
    n = static_cast<int64_t>(len);
  } else {
    const double len = std::ceil((e - s) / st);
    EMBER_CHECK(len < 9.0e18, "[arange] the range ", s, " -> ", e, " in steps of ", st,
                " has too many elements");
    n = static_cast<int64_t>(len);
  }
  Tensor t = empty({n}, options.dtype(dt).requires_grad(false));
  kernels::dispatch_all(dt, "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data_ptr<T>();
    if (all_int) {
      const int64_t si = start.to_long(), sti = step.to_long();
      for (int64_t i = 0; i < n; ++i) p[i] = kernels::convert<T>(si + i * sti);
    } else {
      // Computed in double (PyTorch's accumulate type on CPU), then rounded once.
      for (int64_t i = 0; i < n; ++i) p[i] = kernels::convert<T>(s + static_cast<double>(i) * st);
    }
  });
  return finish(std::move(t), options);
}();
  if (trace.recording()) trace.record({}, {{"start", detail::value_from_scalar(start)}, {"end", detail::value_from_scalar(end)}, {"step", detail::value_from_scalar(step)}, {"dtype", jit::detail::dtype_value(out.dtype())}}, out);
  return out;
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& options) {
  detail::OpNameScope scope("linspace");
  EMBER_CHECK(steps >= 0, "[linspace] number of steps must be non-negative, got ", steps);
  const DType dt = options.dtype();
  Tensor t = empty({steps}, options.dtype(dt).requires_grad(false));
  kernels::dispatch_all(dt, "linspace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data_ptr<T>();
    if (steps == 1) {
      p[0] = kernels::convert<T>(start.to_double());
      return;
    }
    // Same arithmetic as PyTorch's CPU kernel: the first half counts up from start, the
    // second half down from end, so both endpoints are exact. Float types step in
    // their own precision (float16/bfloat16 in float), integers in double.
    using Step = std::conditional_t<std::is_same_v<T, double>, double,
                                    std::conditional_t<std::is_integral_v<T>, double, float>>;
    const Step a = static_cast<Step>(start.to_double()), b = static_cast<Step>(end.to_double());
    const Step step = (b - a) / static_cast<Step>(steps - 1);
    const int64_t halfway = steps / 2;
    for (int64_t i = 0; i < steps; ++i) {
      Step v = i < halfway ? a + step * static_cast<Step>(i) : b - step * static_cast<Step>(steps - i - 1);
      p[i] = kernels::convert<T>(v);
    }
  });
  return finish(std::move(t), options);
}

Tensor eye(int64_t n, const TensorOptions& options) { return eye(n, n, options); }

Tensor eye(int64_t n, int64_t m, const TensorOptions& options) {
  detail::OpNameScope scope("eye");
  EMBER_CHECK(n >= 0 && m >= 0, "[eye] n and m must be non-negative, got n = ", n, ", m = ", m);
  Tensor t = zeros({n, m}, options.requires_grad(false));
  if (n > 0 && m > 0) t.diagonal().fill_(1);
  return finish(std::move(t), options);
}


namespace detail {

namespace {
// libtorch's names of scalar types, used in TensorDataContainer's messages.
const char* scalar_type_name(DType t) {
  switch (t) {
    case kBool: return "Bool";
    case kUInt8: return "Byte";
    case kInt8: return "Char";
    case kInt16: return "Short";
    case kInt32: return "Int";
    case kInt64: return "Long";
    case kFloat16: return "Half";
    case kBFloat16: return "BFloat16";
    case kFloat32: return "Float";
    case kFloat64: return "Double";
    default: return "Unknown";
  }
}

void print_sizes(std::ostream& os, const std::vector<int64_t>& sizes) {
  for (size_t i = 0; i < sizes.size(); ++i) os << (i ? ", " : "") << sizes[i];
}

template <typename T>
Tensor tensor_of(const T* data, int64_t n) {
  constexpr DType dt = kernels::dtype_of<T>();
  Tensor t = empty({n}, TensorOptions(dt));
  if (n) std::memcpy(t.data_ptr(), data, static_cast<size_t>(n) * sizeof(T));
  return t;
}
}  // namespace

#define EMBER_TDC_SCALAR(T, DT)                                     \
  TensorDataContainer::TensorDataContainer(T v)                     \
      : scalar_type_(DT), kind_(Kind::Scalar), scalar_(v) {}
EMBER_TDC_SCALAR(bool, kBool)
EMBER_TDC_SCALAR(uint8_t, kUInt8)
EMBER_TDC_SCALAR(int8_t, kInt8)
EMBER_TDC_SCALAR(int16_t, kInt16)
EMBER_TDC_SCALAR(int, kInt32)
EMBER_TDC_SCALAR(long, kInt64)
EMBER_TDC_SCALAR(long long, kInt64)
EMBER_TDC_SCALAR(float, kFloat32)
EMBER_TDC_SCALAR(double, kFloat64)
EMBER_TDC_SCALAR(Half, kFloat16)
EMBER_TDC_SCALAR(BFloat16, kBFloat16)
#undef EMBER_TDC_SCALAR

const Scalar& TensorDataContainer::scalar() const {
  EMBER_CHECK(is_scalar(), "[tensor] Can only call `scalar()` on a TensorDataContainer that has `is_scalar() == true`");
  return scalar_;
}
const std::vector<TensorDataContainer>& TensorDataContainer::init_list() const {
  EMBER_CHECK(is_init_list(),
              "[tensor] Can only call `init_list()` on a TensorDataContainer that has `is_init_list() == true`");
  return list_;
}
const Tensor& TensorDataContainer::tensor() const {
  EMBER_CHECK(is_tensor(), "[tensor] Can only call `tensor()` on a TensorDataContainer that has `is_tensor() == true`");
  return tensor_;
}

TensorDataContainer::TensorDataContainer() : sizes_{0}, scalar_type_(get_default_dtype()), kind_(Kind::List) {}

namespace {
// Elements of one list must share a kind: floating values may mix widths (1.0 and NAN,
// a float), as may integers of different widths; bools mix with neither, nor do integers
// with floating values (as in libtorch).
int kind_of(DType t) { return t == kBool ? 0 : ember::is_floating_point(t) ? 1 : 2; }
DType wider(DType a, DType b) { return element_size(b) > element_size(a) ? b : a; }
}  // namespace

TensorDataContainer::TensorDataContainer(std::initializer_list<TensorDataContainer> list)
    : scalar_type_(list.begin()->scalar_type()), kind_(Kind::List), list_(list) {
  const TensorDataContainer& first = *list.begin();
  for (const TensorDataContainer& e : list) {
    if (e.sizes() != first.sizes()) {
      std::ostringstream os;
      os << "[tensor] Expected all sub-lists to have sizes: ";
      print_sizes(os, first.sizes());
      os << " (e.g. " << first << "), but got sub-list " << e << " with sizes: ";
      print_sizes(os, e.sizes());
      throw Error(os.str());
    }
    EMBER_CHECK(kind_of(e.scalar_type()) == kind_of(first.scalar_type()),
                "[tensor] Expected all elements of the tensor to have the same scalar type: ",
                scalar_type_name(first.scalar_type()), ", but got element of scalar type: ",
                scalar_type_name(e.scalar_type()), " (write every element with the same C++ type, e.g. 1.0 not 1)");
  }
  for (const TensorDataContainer& e : list) scalar_type_ = wider(scalar_type_, e.scalar_type());
  sizes_.push_back(static_cast<int64_t>(list.size()));
  sizes_.insert(sizes_.end(), first.sizes().begin(), first.sizes().end());
}

TensorDataContainer::TensorDataContainer(Tensor values)
    : sizes_(values.sizes().begin(), values.sizes().end()), scalar_type_(values.dtype()), kind_(Kind::Tensor),
      tensor_(std::move(values)) {}

TensorDataContainer::TensorDataContainer(const std::vector<bool>& v) : TensorDataContainer([&] {
  std::vector<uint8_t> bytes(v.begin(), v.end());
  return tensor_of(bytes.data(), static_cast<int64_t>(bytes.size())).to(kBool);
}()) {}

#define EMBER_TDC_VECTOR(T)                                                                  \
  TensorDataContainer::TensorDataContainer(const std::vector<T>& v)                          \
      : TensorDataContainer(tensor_of(v.data(), static_cast<int64_t>(v.size()))) {}
EMBER_TDC_VECTOR(uint8_t)
EMBER_TDC_VECTOR(int8_t)
EMBER_TDC_VECTOR(int16_t)
EMBER_TDC_VECTOR(int32_t)
EMBER_TDC_VECTOR(int64_t)
EMBER_TDC_VECTOR(float)
EMBER_TDC_VECTOR(double)
#undef EMBER_TDC_VECTOR

namespace {
// Writes the scalars of a (nested) list into dst in row-major order, as type T.
template <typename T>
void fill_from(const TensorDataContainer& c, T*& dst) {
  if (c.is_scalar()) {
    const Scalar& v = c.scalar();
    *dst++ = v.is_floating_point() ? kernels::convert<T>(v.to_double())
             : v.is_boolean()      ? kernels::convert<T>(v.to_bool())
                                   : kernels::convert<T>(v.to_long());
    return;
  }
  if (c.is_tensor()) {
    const Tensor t = c.tensor().to(kernels::dtype_of<T>()).contiguous();
    std::memcpy(dst, t.data_ptr(), t.nbytes());
    dst += t.numel();
    return;
  }
  for (const TensorDataContainer& e : c.init_list()) fill_from(e, dst);
}
}  // namespace

Tensor TensorDataContainer::convert(const TensorOptions& options) const {
  DType natural = scalar_type_;
  if (is_integral(natural, /*include_bool=*/false)) natural = kInt64;
  else if (ember::is_floating_point(natural)) natural = get_default_dtype();
  const DType dt = options.dtype_or(natural);
  Tensor out;
  if (is_tensor()) {
    out = tensor_.to(dt, /*copy=*/true);
  } else {
    // Gather in the widest type of the elements' kind, then convert once.
    const DType gather = scalar_type_ == kBool ? kBool : ember::is_floating_point(scalar_type_) ? kFloat64 : kInt64;
    Tensor tmp = empty(sizes_, TensorOptions(gather));
    kernels::dispatch_all(gather, "tensor", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double> || std::is_same_v<T, int64_t>) {
        T* p = tmp.numel() ? tmp.data_ptr<T>() : nullptr;
        if (p) fill_from(*this, p);
      }
    });
    out = tmp.to(dt);
  }
  return finish(std::move(out), options);
}

std::ostream& operator<<(std::ostream& os, const TensorDataContainer& c) {
  if (c.is_scalar()) {
    const Scalar& v = c.scalar();
    if (v.is_boolean()) return os << (v.to_bool() ? "true" : "false");
    if (v.is_floating_point()) return os << v.to_double();
    return os << v.to_long();
  }
  if (c.is_tensor()) {
    // The elements as a braced list, like an initializer list.
    const Tensor flat = c.tensor().to(kFloat64).contiguous().view({-1});
    const bool integral = !ember::is_floating_point(c.tensor().dtype());
    os << "{";
    for (int64_t i = 0; i < flat.numel(); ++i) {
      const double v = flat.data_ptr<double>()[i];
      os << (i ? ", " : "");
      if (integral) os << static_cast<int64_t>(v); else os << v;
    }
    return os << "}";
  }
  os << "{";
  bool first = true;
  for (const TensorDataContainer& e : c.init_list()) {
    os << (first ? "" : ", ") << e;
    first = false;
  }
  return os << "}";
}

}  // namespace detail

Tensor tensor(detail::TensorDataContainer data, const TensorOptions& options) {
  detail::OpNameScope scope("tensor");
  return data.convert(options);
}

namespace {

struct BlobDeleter {
  std::function<void(void*)> fn;
  static void call(void* ctx, void* data) {
    auto* self = static_cast<BlobDeleter*>(ctx);
    if (self->fn) self->fn(data);
    delete self;
  }
};

}  // namespace

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, std::function<void(void*)> deleter,
                 const TensorOptions& options) {
  EMBER_CHECK(sizes.size() == strides.size(), "[from_blob] sizes ", sizes, " and strides ", strides,
              " must have the same length");
  const int64_t n = checked_numel(sizes, "from_blob");
  EMBER_CHECK(data != nullptr || n == 0, "[from_blob] data is a null pointer but sizes ", sizes,
              " describe ", n, " elements");
  int64_t span = n == 0 ? 0 : 1;
  for (size_t i = 0; i < sizes.size() && n > 0; ++i) {
    EMBER_CHECK(strides[i] >= 0, "[from_blob] negative strides are not supported: ", strides);
    span += (sizes[i] - 1) * strides[i];
  }
  const DType dt = options.dtype();
  EMBER_CHECK(options.device().is_cpu(), "[from_blob] device ", options.device(),
              " is not available: this build of ember has only the cpu backend");
  // Memory the caller owns does not count towards ember's allocator statistics.
  DataPtr ptr(data, new BlobDeleter{std::move(deleter)}, &BlobDeleter::call, options.device());
  Storage storage = Storage::make(std::move(ptr), static_cast<size_t>(span) * element_size(dt));
  Tensor t(IntrusivePtr<TensorImpl>::make(std::move(storage), dt, sizes, strides, 0));
  return finish(std::move(t), options);
}

Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options) {
  return from_blob(data, sizes, contiguous_strides(sizes), nullptr, options);
}
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options) {
  return from_blob(data, sizes, strides, nullptr, options);
}
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter,
                 const TensorOptions& options) {
  return from_blob(data, sizes, contiguous_strides(sizes), std::move(deleter), options);
}

}  // namespace ember
