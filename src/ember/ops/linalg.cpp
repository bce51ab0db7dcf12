// Matrix products. Every op reduces to product(): beta * input + alpha * (a @ b) over
// broadcast batch dims, computed by kernels::cpu::gemm. Float16/BFloat16 go to oneDNN's
// low-precision matmul where the CPU has native instructions for them, and are otherwise
// computed in float32 and rounded once at the end (Note [Low-precision GEMM]).

#include "ember/ops/linalg.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "ember/amp/autocast.h"
#include "ember/autograd/functions.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/profiler/record.h"
#include "ember/core/parallel.h"
#include "ember/kernels/cpu/dispatch.h"
#include "ember/kernels/cpu/gemm.h"
#include "ember/kernels/cpu/gemm_lowp.h"
#include "ember/kernels/cpu/kernels.h"
#include "ember/ops/creation.h"
#include "ember/ops/type_promotion.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/pointwise_nodes.h"

namespace ember {

namespace {

// "2x3x4", the way PyTorch names matrix shapes in its messages.
std::string dims_str(IntArrayRef sizes) {
  std::string s;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(sizes[i]);
  }
  return sizes.empty() ? std::string("()") : s;
}

void check_defined(const Tensor& t, const char* op, const char* name) {
  EMBER_CHECK(t.defined(), "[", op, "] ", name, " is an undefined tensor");
}

void check_dim(const Tensor& t, int64_t dim, const char* op, const char* name) {
  EMBER_CHECK(t.dim() == dim, "[", op, "] ", name, " must be a ", dim, "-D tensor",
              dim == 2 ? " (a matrix)" : "", ", got a ", t.dim(), "-D tensor of shape ", t.sizes());
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op, const char* names) {
  EMBER_CHECK(a.dtype() == b.dtype(), "[", op, "] expected ", names,
              " to have the same dtype, got ", a.dtype(), " and ", b.dtype(),
              "; convert one with .to()");
}

void check_not_bool(DType dtype, const char* op) {
  EMBER_CHECK(dtype != kBool, "[", op,
              "] not implemented for 'Bool' tensors; convert them to an integer or floating "
              "dtype first");
}

void check_broadcastable(const Tensor& t, IntArrayRef target, const char* op, const char* name) {
  bool ok = t.dim() <= static_cast<int64_t>(target.size());
  for (int64_t i = 0; ok && i < t.dim(); ++i) {
    const int64_t s = t.sizes()[i], d = target[target.size() - t.dim() + i];
    ok = s == d || s == 1;
  }
  EMBER_CHECK(ok, "[", op, "] ", name, " of shape ", t.sizes(),
              " cannot be broadcast to the result shape ", target);
}

DimVector with_matrix(IntArrayRef batch, int64_t rows, int64_t cols) {
  DimVector shape(batch);
  shape.push_back(rows);
  shape.push_back(cols);
  return shape;
}

// The operand in the compute dtype, with its last two dims in a layout BLAS reads as it is
// (checked before any batch broadcasting so a copy never materialises expanded dims).
Tensor prepare_operand(const Tensor& t, DType compute) {
  Tensor x = t.to(compute);
  if (is_floating_point(compute) && x.numel() > 0 &&
      !kernels::cpu::blas_compatible(x.size(-2), x.size(-1), x.stride(-2), x.stride(-1))) {
    x = x.contiguous();
  }
  return x;
}

// beta * input + alpha * (a @ b), where a is (batch_a..., m, k), b is (batch_b..., k, n),
// both batch shapes broadcast to `batch`, and input (optional) broadcasts to the result
// (batch..., m, n). The caller has checked shapes and dtypes. Returns a new contiguous
// tensor of a's dtype.
Tensor product_raw(const char* op, const Tensor& a, const Tensor& b, IntArrayRef batch,
                   const Tensor& input, const Scalar& beta, const Scalar& alpha) {
  const DType dtype = a.dtype();
  const DType compute = dtype == kFloat16 || dtype == kBFloat16 ? kFloat32 : dtype;
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  const DimVector out_shape = with_matrix(batch, m, n);
  Tensor out = empty(out_shape, compute);
  if (out.numel() == 0) return compute == dtype ? out : empty(out_shape, dtype);
  // With beta == 0 the input is never read, so NaN in it does not reach the result.
  const bool use_input = input.defined() && !kernels::cpu::scalar_is_zero(compute, beta);
  if (use_input) kernels::cpu::copy(out, input);
  if (compute != dtype && kernels::cpu::lowp_gemm_impl(dtype) == kernels::cpu::LowpGemmImpl::OneDnn) {
    // bf16 operands straight to oneDNN, float32 accumulation (Note [Low-precision GEMM]).
    const Tensor a2 = prepare_operand(a, dtype).expand(with_matrix(batch, m, k));
    const Tensor b2 = prepare_operand(b, dtype).expand(with_matrix(batch, k, n));
    if (kernels::cpu::gemm_lowp(out, a2, b2, static_cast<float>(alpha.to_double()),
                                use_input ? static_cast<float>(beta.to_double()) : 0.0f)) {
      return out.to(dtype);
    }
  }
  const Tensor a2 = prepare_operand(a, compute).expand(with_matrix(batch, m, k));
  const Tensor b2 = prepare_operand(b, compute).expand(with_matrix(batch, k, n));
  kernels::cpu::gemm(out, a2, b2, alpha, use_input ? beta : Scalar(0), op);
  return compute == dtype ? out : out.to(dtype);
}

// product() with autograd: the backward is written with matmul, so it is differentiable
// again; batch dims that were broadcast are summed back by the node.
Tensor product(const char* op, const Tensor& a, const Tensor& b, IntArrayRef batch = {},
               const Tensor& input = Tensor(), const Scalar& beta = 0, const Scalar& alpha = 1) {
  if (profiler::is_enabled()) {
    int64_t batches = 1;
    for (int64_t d : batch) batches *= d;
    profiler::annotate({&a, &b}, 2 * batches * a.size(-2) * a.size(-1) * b.size(-1));
  }
  if (autograd::needs_grad(a, b, input)) {
    return autograd::fn::matrix_product(op, a, b, input, beta, alpha,
                                        [&] { return product_raw(op, a, b, batch, input, beta, alpha); });
  }
  return product_raw(op, a, b, batch, input, beta, alpha);
}

// (1 x k) @ (k x 1) viewed as a 0-dim tensor. Going through gemm instead of BLAS's dot
// keeps the sum's order independent of the thread count.
Tensor dot_impl(const char* op, const Tensor& a, const Tensor& b) {
  return product(op, a.unsqueeze(0), b.unsqueeze(1)).view(IntArrayRef());
}

// A batch dim broadcast with stride 0: folding it into rows would copy every repeat.
bool has_expanded_batch(const Tensor& t) {
  for (int64_t d = 0; d + 2 < t.dim(); ++d) {
    if (t.sizes()[d] > 1 && t.strides()[d] == 0) return true;
  }
  return false;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("matmul"), a, b)) return matmul((*c)[0], (*c)[1]);
  }
  jit::detail::TraceOp trace("matmul");
  Tensor out = [&]() -> Tensor {
  OpScope scope("matmul", {&a, &b});
  check_defined(a, "matmul", "the first operand");
  check_defined(b, "matmul", "the second operand");
  const int64_t da = a.dim(), db = b.dim();
  EMBER_CHECK(da >= 1 && db >= 1, "[matmul] both arguments need at least 1 dimension, got ", da,
              "-D and ", db, "-D tensors");
  check_same_dtype(a, b, "matmul", "both operands");
  check_not_bool(a.dtype(), "matmul");
  const int64_t ka = a.size(-1), kb = db == 1 ? b.size(0) : b.size(-2);
  EMBER_CHECK(ka == kb, "[matmul] mat1 and mat2 shapes cannot be multiplied (", dims_str(a.sizes()),
              " and ", dims_str(b.sizes()), "): the last dim of the first (", ka,
              ") must equal the ", db == 1 ? "size" : "second-to-last dim", " of the second (", kb,
              ")");
  if (da == 1 && db == 1) return dot_impl("matmul", a, b);
  if (da == 2 && db == 1) return product("matmul", a, b.unsqueeze(1)).squeeze(1);
  if (da == 1 && db == 2) return product("matmul", a.unsqueeze(0), b).squeeze(0);
  if (da == 2 && db == 2) return product("matmul", a, b);
  if (da >= 3 && db <= 2 && !has_expanded_batch(a)) {
    // One big mm: the batch dims of a become rows.
    const IntArrayRef lead(a.sizes().data(), static_cast<size_t>(da - 1));
    int64_t rows = 1;
    for (int64_t s : lead) rows *= s;
    const Tensor out = product("matmul", a.reshape({rows, ka}), db == 1 ? b.unsqueeze(1) : b);
    DimVector shape(lead);
    if (db == 2) shape.push_back(b.size(1));
    return out.view(shape);
  }
  const Tensor a3 = da == 1 ? a.unsqueeze(0) : a;
  const Tensor b3 = db == 1 ? b.unsqueeze(1) : b;
  const IntArrayRef batch_a(a3.sizes().data(), static_cast<size_t>(a3.dim() - 2));
  const IntArrayRef batch_b(b3.sizes().data(), static_cast<size_t>(b3.dim() - 2));
  const size_t nb = std::max(batch_a.size(), batch_b.size());
  DimVector batch(nb, 1);
  for (size_t i = 0; i < nb; ++i) {
    const int64_t sa = i < nb - batch_a.size() ? 1 : batch_a[i - (nb - batch_a.size())];
    const int64_t sb = i < nb - batch_b.size() ? 1 : batch_b[i - (nb - batch_b.size())];
    EMBER_CHECK(sa == sb || sa == 1 || sb == 1, "[matmul] the batch dimensions of shapes ",
                a.sizes(), " and ", b.sizes(), " cannot be broadcast (", batch_a, " and ", batch_b,
                ": sizes ", sa, " and ", sb, " at batch dim ", i, ")");
    batch[i] = sa == 1 ? sb : sa;
  }
  Tensor out = product("matmul", a3, b3, batch);
  if (da == 1) out = out.squeeze(-2);
  if (db == 1) out = out.squeeze(-1);
  return out;
}();
  if (trace.recording()) trace.record({a, b}, {}, out);
  return out;
}

Tensor mm(const Tensor& a, const Tensor& b) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("mm"), a, b)) return mm((*c)[0], (*c)[1]);
  }
  jit::detail::TraceOp trace("mm");
  Tensor out = [&]() -> Tensor {
  OpScope scope("mm", {&a, &b});
  check_defined(a, "mm", "mat1");
  check_defined(b, "mm", "mat2");
  check_dim(a, 2, "mm", "mat1");
  check_dim(b, 2, "mm", "mat2");
  check_same_dtype(a, b, "mm", "mat1 and mat2");
  check_not_bool(a.dtype(), "mm");
  EMBER_CHECK(a.size(1) == b.size(0), "[mm] mat1 and mat2 shapes cannot be multiplied (",
              dims_str(a.sizes()), " and ", dims_str(b.sizes()), ")");
  return product("mm", a, b);
}();
  if (trace.recording()) trace.record({a, b}, {}, out);
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("bmm"), a, b)) return bmm((*c)[0], (*c)[1]);
  }
  jit::detail::TraceOp trace("bmm");
  Tensor out = [&]() -> Tensor {
  OpScope scope("bmm", {&a, &b});
  check_defined(a, "bmm", "batch1");
  check_defined(b, "bmm", "batch2");
  check_dim(a, 3, "bmm", "batch1");
  check_dim(b, 3, "bmm", "batch2");
  check_same_dtype(a, b, "bmm", "batch1 and batch2");
  check_not_bool(a.dtype(), "bmm");
  EMBER_CHECK(a.size(0) == b.size(0), "[bmm] batch1 and batch2 must have the same batch size, got ",
              a.size(0), " and ", b.size(0), " (shapes ", a.sizes(), " and ", b.sizes(), ")");
  EMBER_CHECK(a.size(2) == b.size(1), "[bmm] batch1 and batch2 shapes cannot be multiplied (",
              dims_str(a.sizes()), " and ", dims_str(b.sizes()), ")");
  return product("bmm", a, b, a.sizes().front());
}();
  if (trace.recording()) trace.record({a, b}, {}, out);
  return out;
}

Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("addmm"), input, mat1, mat2)) return addmm((*c)[0], (*c)[1], (*c)[2], beta, alpha);
  }
  jit::detail::TraceOp trace("addmm");
  Tensor out = [&]() -> Tensor {
  OpScope scope("addmm", {&input, &mat1, &mat2});
  check_defined(input, "addmm", "input");
  check_defined(mat1, "addmm", "mat1");
  check_defined(mat2, "addmm", "mat2");
  check_dim(mat1, 2, "addmm", "mat1");
  check_dim(mat2, 2, "addmm", "mat2");
  check_same_dtype(mat1, mat2, "addmm", "mat1 and mat2");
  check_same_dtype(input, mat1, "addmm", "input and mat1");
  check_not_bool(mat1.dtype(), "addmm");
  EMBER_CHECK(mat1.size(1) == mat2.size(0), "[addmm] mat1 and mat2 shapes cannot be multiplied (",
              dims_str(mat1.sizes()), " and ", dims_str(mat2.sizes()), ")");
  check_broadcastable(input, {mat1.size(0), mat2.size(1)}, "addmm", "input");
  return product("addmm", mat1, mat2, {}, input, beta, alpha);
}();
  if (trace.recording()) trace.record({input, mat1, mat2}, {{"beta", detail::value_from_scalar(beta)}, {"alpha", detail::value_from_scalar(alpha)}}, out);
  return out;
}

Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("baddbmm"), input, batch1, batch2)) return baddbmm((*c)[0], (*c)[1], (*c)[2], beta, alpha);
  }
  jit::detail::TraceOp trace("baddbmm");
  Tensor out = [&]() -> Tensor {
  OpScope scope("baddbmm", {&input, &batch1, &batch2});
  check_defined(input, "baddbmm", "input");
  check_defined(batch1, "baddbmm", "batch1");
  check_defined(batch2, "baddbmm", "batch2");
  check_dim(batch1, 3, "baddbmm", "batch1");
  check_dim(batch2, 3, "baddbmm", "batch2");
  check_same_dtype(batch1, batch2, "baddbmm", "batch1 and batch2");
  check_not_bool(batch1.dtype(), "baddbmm");
  EMBER_CHECK(batch1.size(0) == batch2.size(0),
              "[baddbmm] batch1 and batch2 must have the same batch size, got ", batch1.size(0),
              " and ", batch2.size(0), " (shapes ", batch1.sizes(), " and ", batch2.sizes(), ")");
  EMBER_CHECK(batch1.size(2) == batch2.size(1),
              "[baddbmm] batch1 and batch2 shapes cannot be multiplied (", dims_str(batch1.sizes()),
              " and ", dims_str(batch2.sizes()), ")");
  check_broadcastable(input, {batch1.size(0), batch1.size(1), batch2.size(2)}, "baddbmm", "input");
  // As in PyTorch, input may have another dtype: it is converted to the result's.
  return product("baddbmm", batch1, batch2, batch1.sizes().front(), input, beta, alpha);
}();
  if (trace.recording()) trace.record({input, batch1, batch2}, {{"beta", detail::value_from_scalar(beta)}, {"alpha", detail::value_from_scalar(alpha)}}, out);
  return out;
}

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("linear"), input, weight, bias)) return linear((*c)[0], (*c)[1], (*c)[2]);
  }
  jit::detail::TraceOp trace("linear");
  Tensor out = [&]() -> Tensor {
  OpScope scope("linear", {&input, &weight, &bias});
  check_defined(input, "linear", "input");
  check_defined(weight, "linear", "weight");
  EMBER_CHECK(input.dim() >= 1, "[linear] input must have at least 1 dimension, got a 0-D tensor");
  EMBER_CHECK(weight.dim() == 1 || weight.dim() == 2,
              "[linear] weight must be 2-D (out_features x in_features) or 1-D, got a ",
              weight.dim(), "-D tensor of shape ", weight.sizes());
  check_same_dtype(input, weight, "linear", "input and weight");
  if (bias.defined()) check_same_dtype(input, bias, "linear", "input and bias");
  check_not_bool(input.dtype(), "linear");
  const int64_t in_features = input.size(-1);
  const int64_t out_features = weight.dim() == 2 ? weight.size(0) : 1;
  EMBER_CHECK(weight.size(-1) == in_features,
              "[linear] mat1 and mat2 shapes cannot be multiplied (", dims_str(input.sizes()),
              " and ", dims_str(weight.t().sizes()), "): input has ", in_features,
              " features, weight of shape ", weight.sizes(), " expects ", weight.size(-1));
  DimVector out_shape(IntArrayRef(input.sizes().data(), static_cast<size_t>(input.dim() - 1)));
  if (weight.dim() == 2) out_shape.push_back(out_features);
  // Not numel / in_features, which fails for in_features == 0.
  int64_t lead = 1;
  for (int64_t d = 0; d + 1 < input.dim(); ++d) lead *= input.sizes()[d];
  Tensor bias2;
  if (bias.defined()) {
    check_broadcastable(bias, out_shape, "linear", "bias");
    // A bias over the last dim broadcasts to the (lead, out) rows as it is (no copy).
    bias2 = bias.dim() <= 1 && weight.dim() == 2 ? bias : bias.expand(out_shape).reshape({lead, out_features});
  }
  const Tensor w2 = weight.dim() == 2 ? weight.t() : weight.unsqueeze(1);
  return product("linear", input.reshape({lead, in_features}), w2, {}, bias2, 1, 1).view(out_shape);
}();
  if (trace.recording()) trace.record({input, weight, bias}, {}, out);
  return out;
}

Tensor dot(const Tensor& a, const Tensor& b) {
  OpScope scope("dot", {&a, &b});
  check_defined(a, "dot", "self");
  check_defined(b, "dot", "other");
  EMBER_CHECK(a.dim() == 1 && b.dim() == 1, "[dot] expected 1-D tensors, got ", a.dim(), "-D and ",
              b.dim(), "-D tensors");
  check_same_dtype(a, b, "dot", "both vectors");
  check_not_bool(a.dtype(), "dot");
  EMBER_CHECK(a.size(0) == b.size(0), "[dot] inconsistent tensor sizes: the vectors have ",
              a.size(0), " and ", b.size(0), " elements");
  return dot_impl("dot", a, b);
}

Tensor outer(const Tensor& a, const Tensor& b) {
  OpScope scope("outer", {&a, &b});
  check_defined(a, "outer", "self");
  check_defined(b, "outer", "vec2");
  EMBER_CHECK(a.dim() == 1, "[outer] expected a 1-D tensor for self, got a ", a.dim(), "-D tensor");
  EMBER_CHECK(b.dim() == 1, "[outer] expected a 1-D tensor for vec2, got a ", b.dim(), "-D tensor");
  // outer is a broadcasting multiply in PyTorch, so it promotes and accepts bool.
  if (autograd::needs_grad(a, b)) return a.unsqueeze(1) * b.unsqueeze(0);
  const DType dtype = result_type(a, b);
  const Tensor x = a.to(dtype), y = b.to(dtype);
  const int64_t rows = x.size(0), cols = y.size(0);
  Tensor out = empty({rows, cols}, dtype);
  if (out.numel() == 0) return out;
  kernels::dispatch_all(dtype, "outer", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = x.data_ptr<T>();
    const T* yp = y.data_ptr<T>();
    T* op = out.data_ptr<T>();
    const int64_t xs = x.stride(0), ys = y.stride(0);
    const int64_t grain = std::max<int64_t>(1, 32768 / cols);
    parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const T xi = xp[i * xs];
        T* row = op + i * cols;
        for (int64_t j = 0; j < cols; ++j) {
          const T yj = yp[j * ys];
          if constexpr (std::is_same_v<T, bool>) {
            row[j] = xi && yj;
          } else if constexpr (std::is_integral_v<T>) {
            // Wraps like PyTorch instead of overflowing (signed overflow is UB in C++).
            row[j] = static_cast<T>(
                static_cast<int64_t>(static_cast<uint64_t>(xi) * static_cast<uint64_t>(yj)));
          } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
            row[j] = T(static_cast<float>(xi) * static_cast<float>(yj));
          } else {
            row[j] = xi * yj;
          }
        }
      }
    });
  });
  return out;
}

// ---- methods ----

Tensor Tensor::matmul(const Tensor& other) const { return ember::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& mat2) const { return ember::mm(*this, mat2); }
Tensor Tensor::bmm(const Tensor& mat2) const { return ember::bmm(*this, mat2); }
Tensor Tensor::dot(const Tensor& other) const { return ember::dot(*this, other); }
Tensor Tensor::outer(const Tensor& vec2) const { return ember::outer(*this, vec2); }
Tensor Tensor::addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                     const Scalar& alpha) const {
  return ember::addmm(*this, mat1, mat2, beta, alpha);
}
Tensor Tensor::baddbmm(const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
                       const Scalar& alpha) const {
  return ember::baddbmm(*this, batch1, batch2, beta, alpha);
}

}  // namespace ember
