// Static post-training quantization: ObservedLinear (prepare), StaticQuantizedLinear
// (convert), and the two module-tree passes (Note [Static quantization scheme], quant.h).

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <vector>

#include "ember/core/check.h"
#include "ember/core/parallel.h"
#include "ember/core/warning.h"
#include "ember/jit/trace_hook.h"
#include "ember/kernels/cpu/qgemm.h"
#include "ember/nn/modules/activation.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/linear.h"
#include "ember/ops/creation.h"
#include "ember/quant/static_quant.h"

namespace ember::quant {

namespace {

constexpr const char* kOp = "[StaticQuantizedLinear]";

// Rows per chunk of the element-wise passes: fixed by the shape, so that the result does not
// depend on the thread count (Note [Thread-count-independent chunks]).
int64_t rows_per_chunk(int64_t cols) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)); }

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

Tensor scalar_float(float v) { return full({1}, static_cast<double>(v), TensorOptions(kFloat32)); }
Tensor scalar_int(int32_t v) { return full({1}, static_cast<double>(v), TensorOptions(kInt32)); }

}  // namespace

// ---- ObservedLinear ----

ObservedLinearImpl::ObservedLinearImpl(std::shared_ptr<nn::LinearImpl> lin, bool with_relu, const QConfig& config)
    : Module(with_relu ? "ObservedLinearReLU" : "ObservedLinear"),
      linear(std::move(lin)),
      relu(with_relu),
      input_observer(config.make_activation_observer()),
      output_observer(config.make_activation_observer()) {
  register_module("linear", linear);
  train(linear->is_training());
}

Tensor ObservedLinearImpl::forward(const Tensor& input) {
  input_observer->observe(input);
  Tensor y = linear->forward(input);
  if (relu) y = y.relu();
  output_observer->observe(y);
  return y;
}

std::string ObservedLinearImpl::extra_repr() const {
  std::ostringstream os;
  os << "relu=" << (relu ? "True" : "False") << ", observer=" << input_observer->name()
     << ", batches_seen=" << input_observer->batches_seen();
  return os.str();
}

std::shared_ptr<nn::Module> ObservedLinearImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy =
      std::make_shared<ObservedLinearImpl>(std::dynamic_pointer_cast<nn::LinearImpl>(linear->clone()), relu, QConfig{});
  copy->input_observer = input_observer->clone();
  copy->output_observer = output_observer->clone();
  return copy;
}

// ---- StaticQuantizedLinear ----

StaticQuantizedLinearImpl::StaticQuantizedLinearImpl(const nn::LinearImpl& linear, QParams in, QParams out,
                                                     bool with_relu)
    : Module(with_relu ? "StaticQuantizedLinearReLU" : "StaticQuantizedLinear"),
      in_features_(linear.options.in_features()),
      out_features_(linear.options.out_features()),
      relu_(with_relu) {
  PerChannelWeight w = quantize_weight_per_channel(linear.weight);
  qweight = register_buffer("qweight", w.qweight);
  scales = register_buffer("scales", w.scales);
  bias = register_buffer("bias", linear.bias.defined() ? linear.bias.detach().to(kFloat32).clone() : Tensor());
  input_scale = register_buffer("input_scale", scalar_float(in.scale));
  input_zero_point = register_buffer("input_zero_point", scalar_int(in.zero_point));
  output_scale = register_buffer("output_scale", scalar_float(out.scale));
  output_zero_point = register_buffer("output_zero_point", scalar_int(out.zero_point));
  train(linear.is_training());
}

StaticQuantizedLinearImpl::StaticQuantizedLinearImpl(int64_t in_features, int64_t out_features, bool with_bias,
                                                     bool with_relu)
    : Module(with_relu ? "StaticQuantizedLinearReLU" : "StaticQuantizedLinear"),
      in_features_(in_features),
      out_features_(out_features),
      relu_(with_relu) {
  EMBER_CHECK(in_features >= 0 && out_features >= 0, kOp, " in_features and out_features must be non-negative, got ",
              in_features, " and ", out_features);
  qweight = register_buffer("qweight", zeros({out_features, in_features}, TensorOptions(kInt8)));
  scales = register_buffer("scales", full({out_features}, 1.0, TensorOptions(kFloat32)));
  bias = register_buffer("bias", with_bias ? zeros({out_features}, TensorOptions(kFloat32)) : Tensor());
  input_scale = register_buffer("input_scale", scalar_float(1.0f));
  input_zero_point = register_buffer("input_zero_point", scalar_int(0));
  output_scale = register_buffer("output_scale", scalar_float(1.0f));
  output_zero_point = register_buffer("output_zero_point", scalar_int(0));
}

namespace {

QParams read_qparams(const Tensor& scale, const Tensor& zero_point, const char* which) {
  EMBER_CHECK(scale.defined() && scale.dtype() == kFloat32 && scale.numel() == 1, kOp, " ", which,
              "_scale must be a float32 tensor of one element");
  EMBER_CHECK(zero_point.defined() && zero_point.dtype() == kInt32 && zero_point.numel() == 1, kOp, " ", which,
              "_zero_point must be an int32 tensor of one element");
  QParams q;
  q.scale = scale.contiguous().data_ptr<float>()[0];
  q.zero_point = zero_point.contiguous().data_ptr<int32_t>()[0];
  EMBER_CHECK(q.scale > 0.0f && std::isfinite(q.scale), kOp, " ", which, "_scale must be positive and finite, got ",
              q.scale);
  EMBER_CHECK(
      q.zero_point >= StaticQuantizedLinearImpl::kActQMin && q.zero_point <= StaticQuantizedLinearImpl::kActQMax, kOp,
      " ", which, "_zero_point ", q.zero_point, " is outside the activation codes [0, 127]");
  return q;
}

}  // namespace

QParams StaticQuantizedLinearImpl::input_qparams() const {
  return read_qparams(input_scale, input_zero_point, "input");
}
QParams StaticQuantizedLinearImpl::output_qparams() const {
  return read_qparams(output_scale, output_zero_point, "output");
}

std::shared_ptr<const std::vector<int32_t>> StaticQuantizedLinearImpl::row_sums() {
  const int64_t N = out_features_, K = in_features_;
  EMBER_CHECK(qweight.defined() && qweight.dtype() == kInt8 && qweight.dim() == 2 && qweight.size(0) == N &&
                  qweight.size(1) == K && qweight.is_contiguous(),
              kOp, " qweight must be a contiguous int8 tensor of sizes [", N, ", ", K, "]");
  EMBER_CHECK(scales.defined() && scales.dtype() == kFloat32 && scales.dim() == 1 && scales.size(0) == N &&
                  scales.is_contiguous(),
              kOp, " scales must be a contiguous float32 tensor of sizes [", N, "]");
  EMBER_CHECK(
      !bias.defined() || (bias.dtype() == kFloat32 && bias.dim() == 1 && bias.size(0) == N && bias.is_contiguous()),
      kOp, " bias must be a contiguous float32 tensor of sizes [", N, "]");
  std::lock_guard<std::mutex> lock(mu_);
  const void* data = qweight.data_ptr();
  if (row_sums_ && data == seen_data_ && qweight._version() == seen_version_) return row_sums_;
  auto sums = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(N), 0);
  const int8_t* q = qweight.data_ptr<int8_t>();
  for (int64_t n = 0; n < N; ++n) {
    int32_t s = 0;
    for (int64_t k = 0; k < K; ++k) s += q[n * K + k];
    (*sums)[static_cast<size_t>(n)] = s;
  }
  row_sums_ = std::move(sums);
  seen_data_ = data;
  seen_version_ = qweight._version();
  return row_sums_;
}

Tensor StaticQuantizedLinearImpl::forward(const Tensor& input) {
  const int64_t N = out_features_, K = in_features_;
  EMBER_CHECK(input.defined(), kOp, " called with an undefined tensor");
  EMBER_CHECK(input.dtype() == kFloat32, kOp, " expects a float32 input, got ", input.dtype(), " of sizes ",
              input.sizes(), "; convert it with .to(ember::kFloat32)");
  EMBER_CHECK(input.dim() >= 1 && input.size(-1) == K, kOp, " input of sizes ", input.sizes(),
              " does not end in in_features=", K, " (expected [..., ", K, "])");
  EMBER_CHECK(jit::detail::tl_recorder == nullptr, kOp,
              " cannot be traced yet: jit::trace the float model, or run the quantized one eagerly");
  const std::shared_ptr<const std::vector<int32_t>> sums = row_sums();
  const QParams qin = input_qparams(), qout = output_qparams();

  std::vector<int64_t> out_sizes = input.sizes().vec();
  out_sizes.back() = N;
  Tensor out = empty(out_sizes, TensorOptions(kFloat32));
  const int64_t M = K > 0 ? input.numel() / K : (N > 0 ? out.numel() / N : 0);
  if (M == 0 || N == 0) return out;

  const Tensor x = input.detach().contiguous();
  const float* xp = x.data_ptr<float>();
  // Fixed input parameters: no range pass. NaN would quantize to an arbitrary code.
  thread_local std::vector<uint8_t> qx_buffer;
  qx_buffer.resize(static_cast<size_t>(M * K));
  uint8_t* qx = qx_buffer.data();
  const float inv_in = 1.0f / qin.scale, zp_in = static_cast<float>(qin.zero_point);
  parallel_for(0, M, rows_per_chunk(K), [&](int64_t r0, int64_t r1) {
    kernels::cpu::qquantize_u8(xp + r0 * K, (r1 - r0) * K, inv_in, zp_in, kActQMin, kActQMax, qx + r0 * K);
  });
  float* y = out.data_ptr<float>();
  if (K > 0) {
    static_assert(sizeof(int32_t) == sizeof(float));
    kernels::cpu::gemm_u8s8s32(M, N, K, qx, qweight.data_ptr<int8_t>(), reinterpret_cast<int32_t*>(y));
  } else {
    std::fill(y, y + M * N, 0.0f);
  }

  const float* ws = scales.data_ptr<float>();
  const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
  std::vector<float> col_scale(static_cast<size_t>(N));
  std::vector<int32_t> corr(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    col_scale[static_cast<size_t>(n)] = qin.scale * ws[n];
    corr[static_cast<size_t>(n)] = qin.zero_point * (*sums)[static_cast<size_t>(n)];
  }
  const float* cs = col_scale.data();
  const int32_t* cr = corr.data();
  // Output: dequantized, ReLU, then rounded onto the calibrated output grid.
  const float inv_out = 1.0f / qout.scale, s_out = qout.scale;
  const float zp_out = static_cast<float>(qout.zero_point);
  const float lo = static_cast<float>(kActQMin), hi = static_cast<float>(kActQMax);
  const bool relu = relu_;
  parallel_for(0, M, rows_per_chunk(N), [&](int64_t r0, int64_t r1) {
    kernels::cpu::qdequantize_rows(y, r0, r1, N, cr, cs, b);
    // Separate multiplies and subtractions (no a * b + c to contract into an FMA), so the
    // rounding is the same at every ISA level; the loop vectorizes (roundps).
    float* row = y + r0 * N;
    const int64_t n = (r1 - r0) * N;
    if (relu) {
      for (int64_t i = 0; i < n; ++i) row[i] = std::max(row[i], 0.0f);
    }
    for (int64_t i = 0; i < n; ++i) {
      const float code = std::min(std::max(std::nearbyint(row[i] * inv_out) + zp_out, lo), hi);
      row[i] = (code - zp_out) * s_out;
    }
  });
  return out;
}

std::string StaticQuantizedLinearImpl::extra_repr() const {
  std::ostringstream os;
  const QParams in = input_qparams(), out = output_qparams();
  os << "in_features=" << in_features_ << ", out_features=" << out_features_ << ", relu=" << (relu_ ? "True" : "False")
     << ", input_scale=" << in.scale << ", input_zero_point=" << in.zero_point << ", output_scale=" << out.scale
     << ", output_zero_point=" << out.zero_point << ", dtype=qint8, qscheme=per_channel_symmetric";
  return os.str();
}

std::shared_ptr<nn::Module> StaticQuantizedLinearImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<StaticQuantizedLinearImpl>(in_features_, out_features_, bias.defined(), relu_);
  clone_into(*copy);
  return copy;
}

// ---- prepare / convert ----

namespace {

struct PrepareWalk {
  const QConfig& config;
  std::vector<std::string> observed;
  std::map<const nn::Module*, std::shared_ptr<nn::Module>> done;

  void visit(nn::Module& parent, const std::string& prefix) {
    const bool sequential = dynamic_cast<nn::SequentialImpl*>(&parent) != nullptr;
    const std::vector<std::string> names = parent.named_children().keys();
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string& name = names[i];
      std::shared_ptr<nn::Module> child = *parent.named_children().find(name);
      if (auto it = done.find(child.get()); it != done.end()) {
        parent.replace_module(name, it->second);
        continue;
      }
      if (dynamic_cast<ObservedLinearImpl*>(child.get()) || dynamic_cast<StaticQuantizedLinearImpl*>(child.get())) {
        EMBER_ERROR("[quant::prepare] '", join(prefix, name), "' is already ",
                    dynamic_cast<ObservedLinearImpl*>(child.get()) ? "prepared" : "converted",
                    "; call quant::prepare once, on the float model");
      }
      auto lin = std::dynamic_pointer_cast<nn::LinearImpl>(child);
      if (!lin) {
        visit(*child, join(prefix, name));
        continue;
      }
      bool fuse = false;
      if (sequential && i + 1 < names.size()) {
        std::shared_ptr<nn::Module> next = *parent.named_children().find(names[i + 1]);
        fuse = dynamic_cast<nn::ReLUImpl*>(next.get()) != nullptr;
      }
      auto observed_linear = std::make_shared<ObservedLinearImpl>(lin, fuse, config);
      parent.replace_module(name, observed_linear);
      done.emplace(child.get(), observed_linear);
      observed.push_back(join(prefix, name));
      if (fuse) {
        parent.replace_module(names[i + 1], std::make_shared<nn::IdentityImpl>());
        ++i;
      }
    }
  }
};

struct ConvertWalk {
  std::vector<std::string> converted;
  std::map<const nn::Module*, std::shared_ptr<nn::Module>> done;

  // Refuses an uncalibrated layer before anything is replaced.
  void check(nn::Module& parent, const std::string& prefix) {
    for (const auto& item : parent.named_children()) {
      const std::string qualified = join(prefix, item.key());
      if (auto* obs = dynamic_cast<ObservedLinearImpl*>(item.value().get())) {
        EMBER_CHECK(obs->input_observer->calibrated() && obs->output_observer->calibrated(), "[quant::convert] '",
                    qualified,
                    "' (ObservedLinear) has not been calibrated: its observers have seen no data. Run the prepared "
                    "model on calibration data (model->forward(batch) for a few batches) between quant::prepare and "
                    "quant::convert");
        continue;
      }
      check(*item.value(), qualified);
    }
  }

  void visit(nn::Module& parent, const std::string& prefix) {
    for (const std::string& name : parent.named_children().keys()) {
      std::shared_ptr<nn::Module> child = *parent.named_children().find(name);
      if (auto it = done.find(child.get()); it != done.end()) {
        parent.replace_module(name, it->second);
        continue;
      }
      if (auto* obs = dynamic_cast<ObservedLinearImpl*>(child.get())) {
        auto q = std::make_shared<StaticQuantizedLinearImpl>(*obs->linear, obs->input_observer->calculate_qparams(),
                                                             obs->output_observer->calculate_qparams(), obs->relu);
        parent.replace_module(name, q);
        done.emplace(child.get(), q);
        converted.push_back(join(prefix, name));
      } else {
        visit(*child, join(prefix, name));
      }
    }
  }
};

}  // namespace

std::vector<std::string> prepare(nn::Module& model, const QConfig& config) {
  EMBER_CHECK(dynamic_cast<nn::LinearImpl*>(&model) == nullptr, "[quant::prepare] the model itself is a Linear and ",
              "cannot be replaced in place; wrap it in an nn::Sequential");
  EMBER_CHECK(!model.is_training(), "[quant::prepare] the model is in training mode; call model->eval() first, so ",
              "that calibration sees inference behaviour (Dropout off, BatchNorm running statistics)");
  (void)config.make_activation_observer();  // an invalid config fails here, before anything changes
  PrepareWalk walk{config, {}, {}};
  walk.visit(model, "");
  if (walk.observed.empty()) warn("[quant::prepare] the model holds no nn::Linear; nothing will be quantized");
  return walk.observed;
}

std::vector<std::string> convert(nn::Module& model) {
  ConvertWalk walk;
  walk.check(model, "");
  walk.visit(model, "");
  EMBER_CHECK(!walk.converted.empty(),
              "[quant::convert] the model holds no ObservedLinear; call quant::prepare(model) ",
              "and run calibration data through it before quant::convert");
  return walk.converted;
}

}  // namespace ember::quant
