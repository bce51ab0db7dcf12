// quant::DynamicQuantizedLinear: nn.Linear with int8 weights and per-call int8 activations.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "ember/core/check.h"
#include "ember/core/parallel.h"
#include "ember/jit/trace_hook.h"
#include "ember/kernels/cpu/qgemm.h"
#include "ember/nn/modules/linear.h"
#include "ember/ops/creation.h"
#include "ember/quant/qkernels.h"
#include "ember/quant/quant.h"

namespace ember::quant {

namespace {

constexpr const char* kOp = "[DynamicQuantizedLinear]";

// Rows per chunk of the element-wise passes (quantize, dequantize): the chunks depend only
// on the shape (Note [Thread-count-independent chunks]); small inputs stay on one thread.
int64_t rows_per_chunk(int64_t cols) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)); }

}  // namespace

namespace detail {

void dynamic_linear(const char* op, const float* xp, int64_t M, int64_t K, const int8_t* qweight, int64_t N,
                    const int32_t* sums, const float* scales, const float* bias, float* y, IntArrayRef input_sizes) {
  if (M == 0 || N == 0) return;
  // The input's range, in fixed chunks (min and max are exact: any split gives the same).
  constexpr int64_t kRangeChunk = 16384;
  const int64_t total = M * K, chunks = (total + kRangeChunk - 1) / kRangeChunk;
  std::vector<float> los(static_cast<size_t>(chunks)), his(static_cast<size_t>(chunks));
  std::vector<char> nans(static_cast<size_t>(chunks));
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t b = c * kRangeChunk;
      bool nan = false;
      kernels::cpu::qminmax(xp + b, std::min(kRangeChunk, total - b), &los[static_cast<size_t>(c)],
                            &his[static_cast<size_t>(c)], &nan);
      nans[static_cast<size_t>(c)] = nan;
    }
  });
  float lo = chunks > 0 ? los[0] : 0.0f, hi = lo;
  bool has_nan = false;
  for (int64_t c = 0; c < chunks; ++c) {
    lo = std::min(lo, los[static_cast<size_t>(c)]);
    hi = std::max(hi, his[static_cast<size_t>(c)]);
    has_nan |= nans[static_cast<size_t>(c)] != 0;
  }
  EMBER_CHECK(!has_nan && std::isfinite(lo) && std::isfinite(hi), op, " input of sizes ", input_sizes,
              " holds inf or NaN", has_nan ? std::string() : ::ember::detail::str_cat(" (range [", lo, ", ", hi, "])"),
              "; int8 activations cannot represent them");
  constexpr int32_t kQMin = DynamicQuantizedLinearImpl::kActQMin, kQMax = DynamicQuantizedLinearImpl::kActQMax;
  const QParams qp = choose_qparams(lo, hi, kQMin, kQMax);

  // Quantized activations in a per-thread scratch buffer; the int32 products go straight
  // into the output's memory (same size as float) and are converted there in place.
  thread_local std::vector<uint8_t> qx_buffer;
  qx_buffer.resize(static_cast<size_t>(M * K));
  uint8_t* qx = qx_buffer.data();  // the calling thread's buffer, also for the workers
  const float inv_scale = 1.0f / qp.scale, zp_f = static_cast<float>(qp.zero_point);
  parallel_for(0, M, rows_per_chunk(K), [&](int64_t r0, int64_t r1) {
    kernels::cpu::qquantize_u8(xp + r0 * K, (r1 - r0) * K, inv_scale, zp_f, kQMin, kQMax, qx + r0 * K);
  });
  if (K > 0) {
    static_assert(sizeof(int32_t) == sizeof(float));
    kernels::cpu::gemm_u8s8s32(M, N, K, qx, qweight, reinterpret_cast<int32_t*>(y));
  } else {
    std::fill(y, y + M * N, 0.0f);  // an empty sum: acc 0, and 0.0f has the bits of int32 0
  }

  const float sx = qp.scale;
  const int32_t zp = qp.zero_point;
  std::vector<float> col_scale(static_cast<size_t>(N));
  std::vector<int32_t> corr(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    col_scale[static_cast<size_t>(n)] = sx * scales[n];
    corr[static_cast<size_t>(n)] = zp * sums[n];
  }
  const float* cs = col_scale.data();
  const int32_t* cr = corr.data();
  parallel_for(0, M, rows_per_chunk(N),
               [&](int64_t r0, int64_t r1) { kernels::cpu::qdequantize_rows(y, r0, r1, N, cr, cs, bias); });
}

}  // namespace detail

DynamicQuantizedLinearImpl::DynamicQuantizedLinearImpl(const nn::LinearImpl& linear)
    : Module("DynamicQuantizedLinear"),
      in_features_(linear.options.in_features()),
      out_features_(linear.options.out_features()) {
  PerChannelWeight w = quantize_weight_per_channel(linear.weight);
  qweight = register_buffer("qweight", w.qweight);
  scales = register_buffer("scales", w.scales);
  bias = register_buffer("bias", linear.bias.defined() ? linear.bias.detach().to(kFloat32).clone() : Tensor());
  train(linear.is_training());
}

DynamicQuantizedLinearImpl::DynamicQuantizedLinearImpl(int64_t in_features, int64_t out_features, bool with_bias)
    : Module("DynamicQuantizedLinear"), in_features_(in_features), out_features_(out_features) {
  EMBER_CHECK(in_features >= 0 && out_features >= 0, kOp, " in_features and out_features must be non-negative, got ",
              in_features, " and ", out_features);
  qweight = register_buffer("qweight", zeros({out_features, in_features}, TensorOptions(kInt8)));
  scales = register_buffer("scales", full({out_features}, 1.0, TensorOptions(kFloat32)));
  bias = register_buffer("bias", with_bias ? zeros({out_features}, TensorOptions(kFloat32)) : Tensor());
}

// The zero-point correction needs each row's sum of codes; it is recomputed when the
// weights change (load_state_dict copies into them and bumps their version). Callers on
// other threads keep the sums they took until they are done with them.
std::shared_ptr<const std::vector<int32_t>> DynamicQuantizedLinearImpl::row_sums() {
  const int64_t N = out_features_, K = in_features_;
  EMBER_CHECK(
      qweight.defined() && qweight.dtype() == kInt8 && qweight.dim() == 2 && qweight.size(0) == N &&
          qweight.size(1) == K && qweight.is_contiguous(),
      kOp, " qweight must be a contiguous int8 tensor of sizes [", N, ", ", K, "], got ",
      qweight.defined() ? ::ember::detail::str_cat(qweight.dtype(), " ", qweight.sizes()) : std::string("undefined"),
      "; load weights with load_state_dict, or quantize a Linear with quant::quantize_dynamic");
  EMBER_CHECK(
      scales.defined() && scales.dtype() == kFloat32 && scales.dim() == 1 && scales.size(0) == N &&
          scales.is_contiguous(),
      kOp, " scales must be a contiguous float32 tensor of sizes [", N, "], got ",
      scales.defined() ? ::ember::detail::str_cat(scales.dtype(), " ", scales.sizes()) : std::string("undefined"),
      " (Module::to(dtype) converts it; quantized modules stay float32)");
  EMBER_CHECK(
      !bias.defined() || (bias.dtype() == kFloat32 && bias.dim() == 1 && bias.size(0) == N && bias.is_contiguous()),
      kOp, " bias must be a contiguous float32 tensor of sizes [", N, "], got ",
      bias.defined() ? ::ember::detail::str_cat(bias.dtype(), " ", bias.sizes()) : std::string());
  std::lock_guard<std::mutex> lock(mu_);
  const void* data = qweight.data_ptr();
  if (row_sums_ && data == seen_data_ && qweight._version() == seen_version_) return row_sums_;
  row_sums_ = std::make_shared<const std::vector<int32_t>>(detail::row_sums(qweight));
  seen_data_ = data;
  seen_version_ = qweight._version();
  return row_sums_;
}

Tensor DynamicQuantizedLinearImpl::forward(const Tensor& input) {
  const int64_t N = out_features_, K = in_features_;
  EMBER_CHECK(input.defined(), kOp, " called with an undefined tensor");
  EMBER_CHECK(input.dtype() == kFloat32, kOp, " expects a float32 input, got ", input.dtype(), " of sizes ",
              input.sizes(), "; convert it with .to(ember::kFloat32)");
  EMBER_CHECK(input.dim() >= 1 && input.size(-1) == K, kOp, " input of sizes ", input.sizes(),
              " does not end in in_features=", K, " (expected [..., ", K, "])");
  EMBER_CHECK(jit::detail::tl_recorder == nullptr, kOp,
              " cannot be traced yet: jit::trace the float model, or run the quantized one eagerly");
  const std::shared_ptr<const std::vector<int32_t>> sums = row_sums();

  std::vector<int64_t> out_sizes = input.sizes().vec();
  out_sizes.back() = N;
  Tensor out = empty(out_sizes, TensorOptions(kFloat32));
  const int64_t M = K > 0 ? input.numel() / K : (N > 0 ? out.numel() / N : 0);
  const Tensor x = input.detach().contiguous();
  detail::dynamic_linear(kOp, x.data_ptr<float>(), M, K, qweight.data_ptr<int8_t>(), N, sums->data(),
                         scales.data_ptr<float>(), bias.defined() ? bias.data_ptr<float>() : nullptr,
                         out.data_ptr<float>(), input.sizes());
  return out;
}

std::string DynamicQuantizedLinearImpl::extra_repr() const {
  std::ostringstream os;
  os << "in_features=" << in_features_ << ", out_features=" << out_features_
     << ", dtype=qint8, qscheme=per_channel_symmetric, bias=" << (bias.defined() ? "True" : "False");
  return os.str();
}

std::shared_ptr<nn::Module> DynamicQuantizedLinearImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<DynamicQuantizedLinearImpl>(in_features_, out_features_, bias.defined());
  clone_into(*copy);  // copies values into the copy's own tensors (members stay valid)
  return copy;
}

}  // namespace ember::quant
