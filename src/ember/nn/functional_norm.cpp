// nn::functional: batch_norm, layer_norm, group_norm, embedding, bilinear. The norms run
// the fused kernels of kernels/cpu/norm.h (float32/float64; float16/bfloat16 compute in
// float32) and record their backward in autograd/functions_norm.cpp.

#include <string>

#include "ember/amp/autocast.h"
#include "ember/autograd/functions_norm.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/kernels/cpu/norm.h"
#include "ember/nn/functional.h"
#include "ember/ops/creation.h"
#include "ember/ops/linalg.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/sort.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/pointwise_nodes.h"

namespace ember::nn::functional {

namespace {

// All dims but the last.
IntArrayRef leading(const Tensor& t) { return IntArrayRef(t.sizes().data(), t.sizes().size() - 1); }

bool is_low_precision(DType dt) { return dt == kFloat16 || dt == kBFloat16; }
Tensor to_float(const Tensor& t) { return t.defined() ? t.to(kFloat32) : t; }

void check_float_input(const Tensor& input, const char* op) {
  EMBER_CHECK(input.defined(), "[", op, "] called with an undefined input");
  EMBER_CHECK(is_floating_point(input.dtype()), "[", op, "] expected a floating-point input, got dtype ",
              input.dtype(), "; convert it with .to(ember::kFloat32)");
}

// A per-channel tensor (weight, bias, running statistics) must hold c elements and, for
// weight/bias, share the input's dtype.
void check_channel_param(const Tensor& p, const char* what, int64_t c, const Tensor& input, const char* op,
                         bool same_dtype) {
  if (!p.defined()) return;
  EMBER_CHECK(p.dim() == 1 && p.size(0) == c, "[", op, "] ", what, " should be a 1-d tensor of ", c,
              " elements (the channel dim of input sizes ", input.sizes(), "), got sizes ", p.sizes());
  EMBER_CHECK(!same_dtype || p.dtype() == input.dtype(), "[", op, "] ", what, " has dtype ", p.dtype(),
              " but input has dtype ", input.dtype(), "; convert one of them with .to()");
  EMBER_CHECK(same_dtype || is_floating_point(p.dtype()), "[", op, "] ", what,
              " must be a floating-point tensor, got dtype ", p.dtype());
}

// Normalises `input` over its last `k` dims with the layer-norm kernel and records the
// node `name`. Inputs are float32/float64; weight/bias already checked.
Tensor row_norm(const char* name, const Tensor& input, int64_t k, const Tensor& weight, const Tensor& bias,
                double eps) {
  int64_t rows = 1;
  for (int64_t d = 0; d < input.dim() - k; ++d) rows *= input.size(d);
  int64_t cols = 1;
  for (int64_t d = input.dim() - k; d < input.dim(); ++d) cols *= input.size(d);
  const TensorOptions opts(input.dtype());
  Tensor out = empty(input.sizes(), opts);
  Tensor mean = empty({rows}, opts), rstd = empty({rows}, opts);
  {
    AutoGradMode off(false);
    const Tensor x = input.contiguous();
    const Tensor w = weight.defined() ? weight.contiguous() : weight;
    const Tensor b = bias.defined() ? bias.contiguous() : bias;
    kernels::cpu::layer_norm_forward(out, mean, rstd, x, w, b, eps, rows, cols);
  }
  if (autograd::needs_grad(input, weight, bias)) {
    autograd::fn::layer_norm(name, out, input, k, weight, bias, mean, rstd, eps);
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// batch_norm

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("batch_norm"), input, weight, bias)) return batch_norm((*c)[0], running_mean, running_var, (*c)[1], (*c)[2], training, momentum, eps);
  }
  jit::detail::TraceOp trace("batch_norm");
  Tensor out = [&]() -> Tensor {
  OpScope scope("batch_norm", {&input, &running_mean, &running_var, &weight, &bias});
  constexpr const char* op = "batch_norm";
  check_float_input(input, op);
  EMBER_CHECK(input.dim() >= 2, "[batch_norm] expected an input of sizes [N, C, *] (at least 2 dims), got sizes ",
              input.sizes());
  const int64_t c = input.size(1);
  check_channel_param(weight, "weight", c, input, op, true);
  check_channel_param(bias, "bias", c, input, op, true);
  check_channel_param(running_mean, "running_mean", c, input, op, false);
  check_channel_param(running_var, "running_var", c, input, op, false);
  EMBER_CHECK(training || (running_mean.defined() && running_var.defined()),
              "[batch_norm] running_mean and running_var must be given when training=false; pass "
              "training=true to normalise with the batch's statistics");
  EMBER_CHECK(eps >= 0, "[batch_norm] eps must be non-negative, got ", eps);
  if (is_low_precision(input.dtype())) {
    return batch_norm(input.to(kFloat32), running_mean, running_var, to_float(weight), to_float(bias), training,
                      momentum, eps)
        .to(input.dtype());
  }
  const int64_t n = input.size(0);
  const int64_t s = n * c != 0 ? input.numel() / (n * c) : 0;
  const kernels::cpu::BatchNormShape shape{n, c, s};
  const TensorOptions opts(input.dtype());
  Tensor out = empty(input.sizes(), opts);
  Tensor mean, invstd;
  {
    AutoGradMode off(false);
    const Tensor x = input.contiguous();
    const Tensor w = weight.defined() ? weight.contiguous() : weight;
    const Tensor b = bias.defined() ? bias.contiguous() : bias;
    if (training) {
      const int64_t count = n * s;
      EMBER_CHECK(count > 1, "[batch_norm] expected more than 1 value per channel when training, got input of sizes ",
                  input.sizes());
      mean = empty({c}, opts);
      invstd = empty({c}, opts);
      Tensor var = empty({c}, opts);
      kernels::cpu::batch_norm_train_forward(out, mean, var, invstd, x, w, b, eps, shape);
      // running = (1 - momentum) * running + momentum * batch, with the unbiased variance.
      if (running_mean.defined()) {
        Tensor rm = running_mean;
        rm.mul_(1 - momentum).add_(mean, momentum);
      }
      if (running_var.defined()) {
        Tensor rv = running_var;
        rv.mul_(1 - momentum).add_(var, momentum * static_cast<double>(count) / static_cast<double>(count - 1));
      }
    } else {
      mean = running_mean.to(input.dtype()).contiguous();
      invstd = running_var.to(kFloat64).add(eps).rsqrt().to(input.dtype());
      kernels::cpu::batch_norm_apply(out, x, mean, invstd, w, b, shape);
    }
  }
  if (autograd::needs_grad(input, weight, bias)) {
    autograd::fn::batch_norm(out, input, weight, bias, mean, invstd, training, eps);
  }
  return out;
}();
  if (trace.recording()) trace.record({input, running_mean, running_var, weight, bias}, {{"training", Value(training)}, {"momentum", Value(momentum)}, {"eps", Value(eps)}}, out);
  return out;
}

// ---------------------------------------------------------------------------------------
// layer_norm / group_norm

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("layer_norm"), input, weight, bias)) return layer_norm((*c)[0], normalized_shape, (*c)[1], (*c)[2], eps);
  }
  jit::detail::TraceOp trace("layer_norm");
  Tensor out = [&]() -> Tensor {
  OpScope scope("layer_norm", {&input, &weight, &bias});
  constexpr const char* op = "layer_norm";
  check_float_input(input, op);
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  EMBER_CHECK(k >= 1, "[layer_norm] normalized_shape must have at least one dim, got ", normalized_shape);
  bool match = input.dim() >= k;
  for (int64_t i = 0; match && i < k; ++i) match = input.size(input.dim() - k + i) == normalized_shape[i];
  EMBER_CHECK(match, "[layer_norm] given normalized_shape=", normalized_shape, ", expected an input of sizes [*, ",
              normalized_shape, "], got input of sizes ", input.sizes());
  for (const Tensor* p : {&weight, &bias}) {
    if (!p->defined()) continue;
    const char* what = p == &weight ? "weight" : "bias";
    EMBER_CHECK(p->sizes() == normalized_shape, "[layer_norm] ", what, " of sizes ", p->sizes(),
                " does not match normalized_shape=", normalized_shape);
    EMBER_CHECK(p->dtype() == input.dtype(), "[layer_norm] ", what, " has dtype ", p->dtype(),
                " but input has dtype ", input.dtype(), "; convert one of them with .to()");
  }
  EMBER_CHECK(eps >= 0, "[layer_norm] eps must be non-negative, got ", eps);
  if (is_low_precision(input.dtype())) {
    return layer_norm(input.to(kFloat32), normalized_shape, to_float(weight), to_float(bias), eps).to(input.dtype());
  }
  return row_norm("NativeLayerNormBackward0", input, k, weight, bias, eps);
}();
  if (trace.recording()) trace.record({input, weight, bias}, {{"normalized_shape", jit::detail::ints(normalized_shape)}, {"eps", Value(eps)}}, out);
  return out;
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  if (amp::is_autocast_enabled()) {
    if (auto c = amp::cast_inputs(amp::policy_of("group_norm"), input, weight, bias)) return group_norm((*c)[0], num_groups, (*c)[1], (*c)[2], eps);
  }
  jit::detail::TraceOp trace("group_norm");
  Tensor out = [&]() -> Tensor {
  OpScope scope("group_norm", {&input, &weight, &bias});
  constexpr const char* op = "group_norm";
  check_float_input(input, op);
  EMBER_CHECK(input.dim() >= 2, "[group_norm] expected an input of sizes [N, C, *] (at least 2 dims), got sizes ",
              input.sizes());
  const int64_t n = input.size(0), c = input.size(1);
  EMBER_CHECK(num_groups > 0 && c % num_groups == 0, "[group_norm] expected the number of channels ", c,
              " (input sizes ", input.sizes(), ") to be divisible by num_groups=", num_groups);
  check_channel_param(weight, "weight", c, input, op, true);
  check_channel_param(bias, "bias", c, input, op, true);
  EMBER_CHECK(eps >= 0, "[group_norm] eps must be non-negative, got ", eps);
  if (is_low_precision(input.dtype())) {
    return group_norm(input.to(kFloat32), num_groups, to_float(weight), to_float(bias), eps).to(input.dtype());
  }
  // Each (sample, group) is one row of the layer-norm kernel; the per-channel affine
  // follows as ordinary (differentiable) ops.
  Tensor out;
  if (input.numel() == 0) {
    // Nothing to normalise; the row count below could overflow (C = 0 admits any num_groups).
    out = input.clone();
  } else {
    int64_t spatial = 1;  // n * num_groups and the row length are at most numel: no overflow
    for (int64_t d = 2; d < input.dim(); ++d) spatial *= input.size(d);
    const Tensor rows = input.reshape({n * num_groups, (c / num_groups) * spatial});
    out = row_norm("NativeGroupNormBackward0", rows, 1, Tensor(), Tensor(), eps).view(input.sizes());
  }
  DimVector shape(static_cast<size_t>(input.dim()), 1);
  shape[1] = c;
  if (weight.defined()) out = out * weight.view(shape);
  if (bias.defined()) out = out + bias.view(shape);
  return out;
}();
  if (trace.recording()) trace.record({input, weight, bias}, {{"num_groups", Value(num_groups)}, {"eps", Value(eps)}}, out);
  return out;
}

// ---------------------------------------------------------------------------------------
// embedding / bilinear

Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx,
                 std::optional<double> max_norm, double norm_type) {
  jit::detail::TraceOp trace("embedding");
  Tensor out = [&]() -> Tensor {
  OpScope scope("embedding", {&input, &weight});
  EMBER_CHECK(input.defined() && weight.defined(), "[embedding] called with an undefined tensor");
  EMBER_CHECK(weight.dim() == 2, "[embedding] weight must be 2-d [num_embeddings, embedding_dim], got sizes ",
              weight.sizes());
  EMBER_CHECK(input.dtype() == kInt64 || input.dtype() == kInt32,
              "[embedding] indices must be int64 or int32, got dtype ", input.dtype(),
              "; convert them with .to(ember::kInt64)");
  const int64_t num = weight.size(0), dim = weight.size(1);
  int64_t pad = -1;
  if (padding_idx) {
    pad = *padding_idx;
    EMBER_CHECK(pad >= -num && pad < num, "[embedding] padding_idx=", pad, " must be within [", -num, ", ", num,
                ") for a weight of sizes ", weight.sizes());
    if (pad < 0) pad += num;
  }
  const Tensor idx = input.to(kInt64).reshape({-1});
  if (idx.numel() > 0) {
    const int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
    const int64_t bad = lo < 0 ? lo : hi;
    EMBER_CHECK(lo >= 0 && hi < num, "[embedding] index ", bad, " is out of range for a weight of sizes ",
                weight.sizes(), "; indices must lie in [0, ", num, ")");
  }
  if (max_norm) {
    // PyTorch renormalises, in place, the rows the lookup reads whose norm exceeds max_norm.
    NoGradGuard no_grad;
    const Tensor rows = std::get<0>(unique(idx));
    const Tensor vals = weight.index_select(0, rows);
    const Tensor norms = vals.norm(norm_type, {1}, true);
    const Tensor scale = where(norms > *max_norm, *max_norm / (norms + 1e-7), ones_like(norms));
    Tensor w = weight;
    w.index_copy_(0, rows, vals * scale);
  }
  DimVector out_shape(input.sizes());
  out_shape.push_back(dim);
  Tensor out;
  {
    AutoGradMode off(false);
    out = weight.index_select(0, idx).view(out_shape);
  }
  if (autograd::needs_grad(weight)) autograd::fn::embedding(out, weight, idx, pad);
  return out;
}();
  if (trace.recording()) trace.record({input, weight}, {{"padding_idx", jit::detail::opt_int(padding_idx)}, {"max_norm", max_norm ? Value(*max_norm) : Value()}, {"norm_type", Value(norm_type)}}, out);
  return out;
}

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias) {
  OpScope scope("bilinear", {&input1, &input2, &weight, &bias});
  EMBER_CHECK(input1.defined() && input2.defined() && weight.defined(), "[bilinear] called with an undefined tensor");
  EMBER_CHECK(weight.dim() == 3, "[bilinear] weight must be 3-d [out, in1, in2], got sizes ", weight.sizes());
  const int64_t out_f = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  EMBER_CHECK(input1.dim() >= 1 && input1.size(-1) == in1 && input2.dim() == input1.dim() &&
                  input2.size(-1) == in2 && leading(input1) == leading(input2),
              "[bilinear] inputs of sizes ", input1.sizes(), " and ", input2.sizes(),
              " do not fit weight of sizes ", weight.sizes(), " (expected [*, ", in1, "] and [*, ", in2,
              "] with the same leading dims)");
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out_f), "[bilinear] bias should have ",
              out_f, " elements (weight sizes ", weight.sizes(), "), got sizes ", bias.sizes());
  // y[b, o] = sum_ij x1[b, i] W[o, i, j] x2[b, j]: one matrix product against W laid out
  // as [in1, out * in2], then a product with x2 summed over j.
  const Tensor a = input1.reshape({-1, in1});
  const Tensor b = input2.reshape({-1, in2});
  const int64_t batch = a.size(0);
  const Tensor t = a.matmul(weight.permute({1, 0, 2}).reshape({in1, out_f * in2})).view({batch, out_f, in2});
  Tensor y = (t * b.unsqueeze(1)).sum({2});
  if (bias.defined()) y = y + bias;
  DimVector shape(input1.sizes());
  shape.back() = out_f;
  return y.reshape(shape);
}

}  // namespace ember::nn::functional
