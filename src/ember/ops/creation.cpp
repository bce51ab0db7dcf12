#include "ember/ops/creation.h"

#include <cmath>
#include <cstring>

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

namespace {

template <typename T>
Tensor from_values(const T* data, IntArrayRef sizes, DType natural, const TensorOptions& options) {
  constexpr DType src_dtype = kernels::dtype_of<T>();
  Tensor src = empty(sizes, TensorOptions(src_dtype));
  if (src.numel()) std::memcpy(src.data_ptr(), data, src.nbytes());
  const DType dt = options.dtype_or(natural);
  Tensor out = dt == src_dtype ? src : src.to(dt);
  return finish(std::move(out), options);
}

template <typename T>
Tensor from_rows(std::initializer_list<std::initializer_list<T>> rows, DType natural,
                 const TensorOptions& options) {
  const int64_t r = static_cast<int64_t>(rows.size());
  const int64_t c = r ? static_cast<int64_t>(rows.begin()->size()) : 0;
  std::vector<T> flat;
  flat.reserve(static_cast<size_t>(r * c));
  int64_t i = 0;
  for (const auto& row : rows) {
    EMBER_CHECK(static_cast<int64_t>(row.size()) == c, "[tensor] expected sequence of length ", c,
                " at row ", i, " (got ", row.size(), "); nested lists must be rectangular");
    flat.insert(flat.end(), row.begin(), row.end());
    ++i;
  }
  return from_values(flat.data(), {r, c}, natural, options);
}

}  // namespace

Tensor tensor(std::initializer_list<double> v, const TensorOptions& o) {
  return from_values(v.begin(), {static_cast<int64_t>(v.size())}, get_default_dtype(), o);
}
Tensor tensor(std::initializer_list<float> v, const TensorOptions& o) {
  return from_values(v.begin(), {static_cast<int64_t>(v.size())}, get_default_dtype(), o);
}
Tensor tensor(std::initializer_list<int> v, const TensorOptions& o) {
  return from_values(v.begin(), {static_cast<int64_t>(v.size())}, kInt64, o);
}
Tensor tensor(std::initializer_list<int64_t> v, const TensorOptions& o) {
  return from_values(v.begin(), {static_cast<int64_t>(v.size())}, kInt64, o);
}
Tensor tensor(std::initializer_list<bool> v, const TensorOptions& o) {
  return from_values(v.begin(), {static_cast<int64_t>(v.size())}, kBool, o);
}
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, const TensorOptions& o) {
  return from_rows(rows, get_default_dtype(), o);
}
Tensor tensor(std::initializer_list<std::initializer_list<int>> rows, const TensorOptions& o) {
  return from_rows(rows, kInt64, o);
}
Tensor tensor(const std::vector<double>& v, const TensorOptions& o) {
  return from_values(v.data(), {static_cast<int64_t>(v.size())}, get_default_dtype(), o);
}
Tensor tensor(const std::vector<float>& v, const TensorOptions& o) {
  return from_values(v.data(), {static_cast<int64_t>(v.size())}, get_default_dtype(), o);
}
Tensor tensor(const std::vector<int64_t>& v, const TensorOptions& o) {
  return from_values(v.data(), {static_cast<int64_t>(v.size())}, kInt64, o);
}
Tensor tensor(const std::vector<int32_t>& v, const TensorOptions& o) {
  return from_values(v.data(), {static_cast<int64_t>(v.size())}, kInt32, o);
}
Tensor tensor(const std::vector<uint8_t>& v, const TensorOptions& o) {
  return from_values(v.data(), {static_cast<int64_t>(v.size())}, kUInt8, o);
}
Tensor tensor(const std::vector<bool>& v, const TensorOptions& o) {
  std::vector<uint8_t> bytes(v.begin(), v.end());
  Tensor t = from_values(bytes.data(), {static_cast<int64_t>(v.size())}, kUInt8,
                         TensorOptions(kUInt8));
  return finish(t.to(o.dtype_or(kBool)), o);
}
// 0-dim tensors take their dtype from the value's kind, as torch.tensor(3) is int64.
Tensor tensor(double value, const TensorOptions& o) { return full({}, value, o); }
Tensor tensor(int64_t value, const TensorOptions& o) { return full({}, value, o); }
Tensor tensor(int value, const TensorOptions& o) { return full({}, int64_t(value), o); }
Tensor tensor(bool value, const TensorOptions& o) { return full({}, value, o); }

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
