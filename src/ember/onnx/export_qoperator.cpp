// ONNX export of static int8 graphs in QOperator form (Note [QOperator export]).
//
// Note [QOperator export]: the int8 operators themselves instead of QDQ pairs around float ones,
// for runtimes that import quantized models only in that form (OpenCV 4.6's dnn module: it
// builds its int8 layers from QLinearConv, QLinearMatMul and ONNX Runtime's com.microsoft
// QLinearAdd / QLinearConcat / QLinearAveragePool / QLinearGlobalAveragePool, and takes the
// output grid of each int8 value from initializers named after it the way ONNX Runtime's
// quantizer names them: codes "X_quantized", grid "X_scale" and "X_zero_point"). So every
// uint8 value is named "<x>_quantized" and its grid written under those names.
//   quantize_per_tensor      -> QuantizeLinear (no Clip to a narrower code range: OpenCV 4.6
//                               imports only opset 6's one-input Clip)
//   dequantize_per_tensor    -> DequantizeLinear
//   quantized_conv2d         -> QLinearConv, bias as int32 round(bias / (input_scale * weight_scale))
//   quantized_linear         -> QLinearMatMul of the [K, N] weight; with a bias, then QLinearAdd of the
//                               bias as uint8 codes (Note [QOperator linear])
//   quantized_max_pool2d     -> MaxPool of the codes
//   quantized_avg_pool2d     -> QLinearAveragePool; adaptive to 1x1: QLinearGlobalAveragePool
//   quantized_add / _cat     -> QLinearAdd / QLinearConcat
// Differences from ember's own arithmetic, all within one output code: the int32 bias rounds
// the bias to the accumulator's grid, and the runtime requantizes with one multiplier per
// channel where ember adds the float bias; the int8 operators and the QuantizeLinear of float
// input saturate at code 255 where ember clamps at 127 (values beyond the calibrated range); a
// fused ReLU is the output grid's lower end, so it needs output zero point 0 (what calibration
// gives a ReLU output).
//
// Note [QOperator linear]: QLinearMatMul (default domain) has no bias input and ONNX has no
// standard int8 add, so a biased linear is what ONNX Runtime's quantizer writes for MatMul + Add:
// QLinearMatMul onto an intermediate grid, then com.microsoft QLinearAdd of the bias, stored as
// uint8 codes on a grid of its own (256 steps over [min(bias, 0), max(bias, 0)]). The
// intermediate grid has the output's step when the output's range (codes 0..127) less the bias
// range fits in 256 codes (the usual case), else the step that makes it fit. Where ember adds
// the float bias to the product and rounds once, the file rounds the product to that grid,
// adds the bias codes' values and rounds again: the result is at most one output code off
// with the output's step, plus the bias codes' rounding (half a bias step). The int8 pattern
// of ONNX's own domain (MatMulInteger, an int32 Add, Cast, Mul, QuantizeLinear) would be exact,
// but OpenCV 4.6 imports none of MatMulInteger, and onnxruntime's quantizer writes this form.

#include "ember/core/check.h"
#include "ember/jit/module.h"

#if EMBER_HAVE_ONNX

#include <algorithm>
#include <cmath>

#include "ember/jit/ops.h"
#include "ember/onnx/exporter.h"
#include "ember/ops/creation.h"
#include "ember/quant/quantized_ops.h"

namespace ember::onnx::detail {

namespace {

constexpr const char* kSuffix = "quantized";

std::string prefix_of(const std::string& codes) {
  const size_t n = std::char_traits<char>::length(kSuffix);
  return codes.size() > n && codes.compare(codes.size() - n, n, kSuffix) == 0 ? codes.substr(0, codes.size() - n)
                                                                           : std::string();
}

}  // namespace

std::string Exporter::qop_scale(const std::string& codes) const { return prefix_of(codes) + "scale"; }
std::string Exporter::qop_zero_point(const std::string& codes) const { return prefix_of(codes) + "zero_point"; }

void Exporter::qop_grid(const std::string& codes, double scale, int64_t zero_point) {
  if (prefix_of(codes).empty()) {
    unsupported("its uint8 value '" + codes + "' is a graph input or output; in QOperator form codes stay inside "
                "the graph (give the model float input and output)");
  }
  if (!grid_named_.insert(codes).second) return;
  const std::string s = qop_scale(codes), z = qop_zero_point(codes);
  if (used_.count(s) != 0 || used_.count(z) != 0) unsupported("the names '" + s + "' / '" + z + "' are taken");
  used_.insert(s);
  used_.insert(z);
  pb::TensorProto* ps = gp_->add_initializer();
  ps->set_name(s);
  ps->set_data_type(onnx_dtype(kFloat32));
  ps->add_float_data(static_cast<float>(scale));
  pb::TensorProto* pz = gp_->add_initializer();
  pz->set_name(z);
  pz->set_data_type(onnx_dtype(kUInt8));
  pz->add_int32_data(static_cast<int32_t>(zero_point));
}

std::string Exporter::qop_codes(const Operand& x, double scale, int64_t zero_point, const std::string& base) {
  if (x.dtype == kUInt8) {
    const auto it = grid_.find(x.var);
    if (it != grid_.end() && (static_cast<float>(it->second.first) != static_cast<float>(scale) ||
                              it->second.second != zero_point)) {
      unsupported("its uint8 input is on another grid than the one it reads it with (QOperator form names one "
                  "grid per value)");
    }
    qop_grid(x.name, scale, zero_point);
    return x.name;
  }
  if (x.dtype != kFloat32) {
    unsupported("its input is " + jit::dtype_short_name(x.dtype) + ", neither float32 values nor uint8 codes");
  }
  // No Clip at code 127 (OpenCV 4.6 imports only the one-input Clip of opset 6): QuantizeLinear
  // saturates at 255 (Note [QOperator export]).
  const std::string codes = fresh(base + "_" + kSuffix);
  qop_grid(codes, scale, zero_point);
  add("QuantizeLinear", {x.name, qop_scale(codes), qop_zero_point(codes)}, {codes});
  return codes;
}

void Exporter::qop_follow_grid(const std::vector<Operand>& in, const Result& out) {
  const int out_var = node_ptr_ != nullptr && node_ptr_->outputs.size() == 1 ? node_ptr_->outputs[0] : -1;
  if (out.dtype != kUInt8 || out_var < 0 || grid_.count(out_var) != 0 || in.empty() || in[0].var < 0) return;
  const auto it = grid_.find(in[0].var);
  if (it == grid_.end()) return;
  grid_[out_var] = it->second;
  qop_grid(out.name, it->second.first, it->second.second);
}

bool Exporter::emit_qoperator(const std::string& op, const std::vector<Operand>& in, const Dict& attrs,
                              const Result& out) {
  auto need = [&](size_t n) {
    for (size_t k = 0; k < n; ++k) {
      if (k >= in.size() || !in[k].present()) unsupported("it lacks tensor input " + std::to_string(k));
    }
  };
  const int out_var = node_ptr_ != nullptr && !node_ptr_->outputs.empty() ? node_ptr_->outputs[0] : -1;
  // The node's result: codes straight into out.name, or codes into a fresh name and their values
  // (DequantizeLinear) into out.name. Returns the name the int8 operator writes.
  auto result_codes = [&](double scale, int64_t zp) {
    if (out.dtype == kUInt8) {
      qop_grid(out.name, scale, zp);
      if (out_var >= 0) grid_[out_var] = {scale, zp};
      return out.name;
    }
    const std::string codes = fresh(out.name + "_" + kSuffix);
    qop_grid(codes, scale, zp);
    return codes;
  };
  auto finish = [&](const std::string& codes) {
    if (codes != out.name) add("DequantizeLinear", {codes, qop_scale(codes), qop_zero_point(codes)}, {out.name});
  };
  auto relu_needs_zero = [&](bool relu, int64_t zp) {
    if (relu && zp != 0) {
      unsupported("a fused ReLU with output zero point " + std::to_string(zp) +
                  " (the int8 operators clamp only at code 0); export with QuantFormat::QDQ");
    }
  };
  auto grid_of = [&](const Operand& x) -> std::pair<double, int64_t> {
    const auto it = grid_.find(x.var);
    if (it == grid_.end()) unsupported("the grid of its uint8 input is unknown (codes not made by a traced op)");
    return it->second;
  };

  if (op == "quantize_per_tensor") {
    need(1);
    const double scale = jit::attr_double(attrs, "scale", 0.0);
    const int64_t zp = jit::attr_int(attrs, "zero_point");
    // A code range narrower than 0..255 is not clipped here (OpenCV 4.6 imports only the
    // one-input Clip of opset 6): values beyond the calibrated range saturate at 0 and 255.
    const std::string x = cast(in[0], kFloat32);
    const std::string codes = result_codes(scale, zp);
    add("QuantizeLinear", {x, qop_scale(codes), qop_zero_point(codes)}, {codes});
    finish(codes);
  } else if (op == "dequantize_per_tensor") {
    need(1);
    const double scale = jit::attr_double(attrs, "scale", 0.0);
    const int64_t zp = jit::attr_int(attrs, "zero_point");
    add("DequantizeLinear",
        {in[0].name, init_scalar(out.name + "_scale", kFloat32, scale),
         init_scalar(out.name + "_zero_point", kUInt8, static_cast<double>(zp))},
        {out.name});
  } else if (op == "quantized_conv2d" || op == "quantized_linear") {
    need(3);
    const bool is_conv = op == "quantized_conv2d";
    const double in_scale = jit::attr_double(attrs, "input_scale", 0.0);
    const double out_scale = jit::attr_double(attrs, "output_scale", 0.0);
    const int64_t in_zp = jit::attr_int(attrs, "input_zero_point"), out_zp = jit::attr_int(attrs, "output_zero_point");
    relu_needs_zero(jit::attr_bool(attrs, "relu", false), out_zp);
    if (in[1].value == nullptr || in[2].value == nullptr || (in.size() > 3 && in[3].present() && in[3].value == nullptr)) {
      unsupported("its weights, scales or bias are not constants (trace a converted model; freeze it)");
    }
    const Tensor& qw = *in[1].value;
    const Tensor scales = in[2].value->to(kFloat32).contiguous();
    if (qw.dtype() != kInt8 || qw.dim() != (is_conv ? 4 : 2) || scales.dim() != 1 || scales.size(0) != qw.size(0)) {
      unsupported("its weights are not int8 with one scale per output channel");
    }
    const int64_t oc = qw.size(0);
    const std::string x = qop_codes(in[0], in_scale, in_zp, out.name + "_input");
    const bool has_bias = in.size() > 3 && in[3].present();
    const Tensor b = has_bias ? in[3].value->to(kFloat32).contiguous() : Tensor();
    const std::string ws = fresh(out.name + "_W_scale");
    init_tensor(ws, scales);
    const std::string wz = fresh(out.name + "_W_zero_point");
    init_tensor(wz, zeros({oc}, TensorOptions(kInt8)));
    if (is_conv) {
      const std::string w = fresh(out.name + "_W");
      init_tensor(w, qw);
      const std::string y = result_codes(out_scale, out_zp);
      std::vector<std::string> ins{x, qop_scale(x), qop_zero_point(x), w, ws, wz, qop_scale(y), qop_zero_point(y)};
      if (has_bias) {
        Tensor bq = empty({oc}, TensorOptions(kInt32));
        for (int64_t n = 0; n < oc; ++n) {
          const double acc_scale = static_cast<double>(static_cast<float>(in_scale)) * scales.data_ptr<float>()[n];
          bq.data_ptr<int32_t>()[n] = static_cast<int32_t>(std::nearbyint(b.data_ptr<float>()[n] / acc_scale));
        }
        const std::string bn = fresh(out.name + "_B");
        init_tensor(bn, bq);
        ins.push_back(bn);
      }
      pb::NodeProto* p = add("QLinearConv", ins, {y});
      const std::string where = node_desc();
      const std::vector<int64_t> stride = repeat_to(jit::attr_ints(attrs, "stride"), 2, "stride", where);
      const std::vector<int64_t> pad = repeat_to(jit::attr_ints(attrs, "padding"), 2, "padding", where);
      set_ints(p, "kernel_shape", {qw.size(2), qw.size(3)});
      set_ints(p, "strides", stride);
      set_ints(p, "pads", {pad[0], pad[1], pad[0], pad[1]});
      set_ints(p, "dilations", repeat_to(jit::attr_ints(attrs, "dilation"), 2, "dilation", where));
      set_int(p, "group", jit::attr_int(attrs, "groups"));
      finish(y);
      return true;
    }
    // Linear (Note [QOperator linear]): QLinearMatMul of the [K, N] weight, and with a bias a
    // QLinearAdd of the bias codes.
    const std::string w = fresh(out.name + "_W");
    init_tensor(w, qw.t().contiguous());
    if (!has_bias) {
      const std::string y = result_codes(out_scale, out_zp);
      add("QLinearMatMul", {x, qop_scale(x), qop_zero_point(x), w, ws, wz, qop_scale(y), qop_zero_point(y)}, {y});
      finish(y);
      return true;
    }
    const float* bp = b.data_ptr<float>();
    double bmin = 0.0, bmax = 0.0;
    for (int64_t n = 0; n < oc; ++n) {
      bmin = std::min(bmin, static_cast<double>(bp[n]));
      bmax = std::max(bmax, static_cast<double>(bp[n]));
    }
    // The bias codes: 256 steps over [min(bias, 0), max(bias, 0)].
    const double b_scale = bmax > bmin ? (bmax - bmin) / 255.0 : 1.0;
    const int64_t b_zp = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(-bmin / b_scale)), 0, 255);
    Tensor bq = empty({oc}, TensorOptions(kUInt8));
    for (int64_t n = 0; n < oc; ++n) {
      const double q = std::nearbyint(static_cast<double>(bp[n]) / static_cast<double>(static_cast<float>(b_scale))) +
                       static_cast<double>(b_zp);
      bq.data_ptr<uint8_t>()[n] = static_cast<uint8_t>(std::clamp(q, 0.0, 255.0));
    }
    const std::string bn = fresh(out.name + "_B_" + kSuffix);
    qop_grid(bn, b_scale, b_zp);
    init_tensor(bn, bq);
    // The product's grid: the output's step when the output range less the bias fits in 256
    // codes (then the file differs from ember's single rounding by at most one output code),
    // else a coarser one.
    const double lo = static_cast<double>(-out_zp) * out_scale - bmax;
    const double hi = static_cast<double>(quant::kActCodeMax - out_zp) * out_scale - bmin;
    const double mm_scale = std::max(out_scale, (hi - lo) / 255.0);
    const int64_t mm_zp = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(-lo / mm_scale)), 0, 255);
    const std::string mm = fresh(out.name + "_matmul_" + kSuffix);
    qop_grid(mm, mm_scale, mm_zp);
    add("QLinearMatMul", {x, qop_scale(x), qop_zero_point(x), w, ws, wz, qop_scale(mm), qop_zero_point(mm)}, {mm});
    const std::string y = result_codes(out_scale, out_zp);
    add("QLinearAdd", {mm, qop_scale(mm), qop_zero_point(mm), bn, qop_scale(bn), qop_zero_point(bn), qop_scale(y),
                       qop_zero_point(y)},
        {y})
        ->set_domain("com.microsoft");
    contrib_ = true;
    finish(y);
  } else if (op == "quantized_max_pool2d") {
    need(1);
    const auto [scale, zp] = grid_of(in[0]);
    const std::string codes = result_codes(scale, zp);
    pool("max_pool2d", in, attrs, Result{codes, kUInt8, out.shape});
    finish(codes);
  } else if (op == "quantized_avg_pool2d" || op == "quantized_adaptive_avg_pool2d") {
    need(1);
    const auto [scale, zp] = grid_of(in[0]);
    qop_grid(in[0].name, scale, zp);
    const std::string codes = result_codes(scale, zp);
    const std::vector<std::string> ins{in[0].name, qop_scale(in[0].name), qop_zero_point(in[0].name), qop_scale(codes),
                                       qop_zero_point(codes)};
    pb::NodeProto* p = nullptr;
    if (op == "quantized_adaptive_avg_pool2d") {
      const std::vector<int64_t> size = repeat_to(jit::attr_ints(attrs, "output_size"), 2, "output_size", node_desc());
      if (size[0] != 1 || size[1] != 1) unsupported("adaptive average pooling to other than 1x1 in QOperator form");
      p = add("QLinearGlobalAveragePool", ins, {codes});
      set_int(p, "channels_last", 0);
    } else {
      if (const Value* d = attrs.find("divisor_override"); d != nullptr && !d->is_none()) {
        unsupported("avg_pool2d with divisor_override");
      }
      // The float exporter's attributes (and its checks), moved onto the contrib operator.
      pool("avg_pool2d", in, attrs, Result{codes, kUInt8, out.shape});
      p = gp_->mutable_node(gp_->node_size() - 1);
      p->set_op_type("QLinearAveragePool");
      p->clear_input();
      for (const std::string& i : ins) p->add_input(i);
    }
    p->set_domain("com.microsoft");
    contrib_ = true;
    finish(codes);
  } else if (op == "quantized_add") {
    need(2);
    const double so = jit::attr_double(attrs, "output_scale", 0.0);
    const int64_t zo = jit::attr_int(attrs, "output_zero_point");
    relu_needs_zero(jit::attr_bool(attrs, "relu", false), zo);
    const std::string a = qop_codes(in[0], jit::attr_double(attrs, "a_scale", 0.0), jit::attr_int(attrs, "a_zero_point"),
                                    out.name + "_a");
    const std::string b = qop_codes(in[1], jit::attr_double(attrs, "b_scale", 0.0), jit::attr_int(attrs, "b_zero_point"),
                                    out.name + "_b");
    const std::string codes = result_codes(so, zo);
    add("QLinearAdd", {a, qop_scale(a), qop_zero_point(a), b, qop_scale(b), qop_zero_point(b), qop_scale(codes),
                       qop_zero_point(codes)},
        {codes})
        ->set_domain("com.microsoft");
    contrib_ = true;
    finish(codes);
  } else if (op == "quantized_cat") {
    need(1);
    const Value* sv = attrs.find("scales");
    if (sv == nullptr) unsupported("it lacks the attribute 'scales'");
    const std::vector<double> scales = sv->to_double_list();
    const std::vector<int64_t> zps = jit::attr_ints(attrs, "zero_points");
    if (scales.size() != in.size() || zps.size() != in.size()) unsupported("it has one grid per input missing");
    const std::string codes = result_codes(jit::attr_double(attrs, "output_scale", 0.0),
                                           jit::attr_int(attrs, "output_zero_point"));
    std::vector<std::string> ins{qop_scale(codes), qop_zero_point(codes)};
    for (size_t i = 0; i < in.size(); ++i) {
      const std::string c = qop_codes(in[i], scales[i], zps[i], out.name + "_in" + std::to_string(i));
      ins.push_back(c);
      ins.push_back(qop_scale(c));
      ins.push_back(qop_zero_point(c));
    }
    pb::NodeProto* p = add("QLinearConcat", ins, {codes});
    p->set_domain("com.microsoft");
    set_int(p, "axis", norm_dim(jit::attr_int(attrs, "dim"), in[0].shape.size()));
    contrib_ = true;
    finish(codes);
  } else {
    return false;
  }
  return true;
}

}  // namespace ember::onnx::detail

#endif  // EMBER_HAVE_ONNX
