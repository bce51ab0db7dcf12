// ONNX export of static int8 graphs in QDQ form (Note [QDQ export]).
//
// Note [QDQ export]: a traced quantized model holds quantize_per_tensor, quantized_conv2d,
// quantized_linear, the quantized poolings, quantized_add, quantized_cat and
// dequantize_per_tensor nodes whose uint8 values
// are activation codes (Note [Activation codes], quant/quantized_ops.h). They become the
// QDQ pattern other runtimes recognise as int8 operators: every float operator (Conv, Gemm,
// MatMul, MaxPool) reads DequantizeLinear outputs and its result goes through QuantizeLinear;
// the int8 weights are initializers under DequantizeLinear with one scale per output channel
// (axis 0, opset >= 13); biases stay float32. ember's codes stop at 127 (7-bit activations)
// where QuantizeLinear saturates at 255, so a Clip at the real value of code 127 (with the
// fused ReLU's 0) precedes each QuantizeLinear. QuantizeLinear divides by the scale where
// ember multiplies by its inverse, so a value within float rounding of a .5 boundary can land
// one code apart.

#include "ember/core/check.h"
#include "ember/jit/module.h"

#if EMBER_HAVE_ONNX

#include "ember/jit/ops.h"
#include "ember/onnx/exporter.h"
#include "ember/ops/creation.h"

namespace ember::onnx::detail {

std::string Exporter::dequantized_input(const Operand& x, double scale, int64_t zero_point, const std::string& base) {
  const std::string s = init_scalar(base + "_scale", kFloat32, scale);
  const std::string z = init_scalar(base + "_zero_point", kUInt8, static_cast<double>(zero_point));
  std::string codes = x.name;
  if (x.dtype == kFloat32) {
    // The op quantizes its float input itself: clamp to code 127, then QuantizeLinear.
    const std::string hi = init_scalar(base + "_max", kFloat32, (127.0 - static_cast<double>(zero_point)) * scale);
    const std::string clipped = fresh(base + "_clipped");
    add("Clip", {x.name, "", hi}, {clipped});
    codes = fresh(base + "_quantized");
    add("QuantizeLinear", {clipped, s, z}, {codes});
  } else if (x.dtype != kUInt8) {
    unsupported("its input is " + jit::dtype_short_name(x.dtype) + ", neither float32 values nor uint8 codes");
  }
  const std::string values = fresh(base + "_dequantized");
  add("DequantizeLinear", {codes, s, z}, {values});
  return values;
}

void Exporter::requantize_output(const std::string& y, double scale, int64_t zero_point, bool relu, DType dtype,
                                 const std::string& out) {
  const std::string s = init_scalar(out + "_scale", kFloat32, scale);
  const std::string z = init_scalar(out + "_zero_point", kUInt8, static_cast<double>(zero_point));
  const std::string hi = init_scalar(out + "_max", kFloat32, (127.0 - static_cast<double>(zero_point)) * scale);
  const std::string lo = relu ? init_scalar(out + "_min", kFloat32, 0.0) : std::string();
  const std::string clipped = fresh(out + "_clipped");
  add("Clip", {y, lo, hi}, {clipped});
  if (dtype == kUInt8) {
    add("QuantizeLinear", {clipped, s, z}, {out});
    return;
  }
  const std::string codes = fresh(out + "_quantized");
  add("QuantizeLinear", {clipped, s, z}, {codes});
  add("DequantizeLinear", {codes, s, z}, {out});
}

std::string Exporter::dequantized_weight(const Operand& qweight, const Operand& scales) {
  if (!qweight.present() || qweight.dtype != kInt8) unsupported("its weight is not an int8 tensor");
  if (!scales.present() || scales.dtype != kFloat32 || scales.shape.size() != 1) {
    unsupported("its weight scales are not a float32 vector");
  }
  if (opset_ < 13) unsupported("per-channel DequantizeLinear needs opset 13 or later");
  const std::vector<int64_t> n = static_dims(scales.shape, "weight scales");
  const std::string zp = fresh(qweight.name + "_zero_point");
  init_tensor(zp, zeros({n[0]}, TensorOptions(kInt8)));
  const std::string w = fresh(qweight.name + "_dequantized");
  set_int(add("DequantizeLinear", {qweight.name, scales.name, zp}, {w}), "axis", 0);
  return w;
}

bool Exporter::emit_quantized(const std::string& op, const std::vector<Operand>& in, const Dict& attrs,
                              const Result& out) {
  auto need = [&](size_t n) {
    for (size_t k = 0; k < n; ++k) {
      if (k >= in.size() || !in[k].present()) unsupported("it lacks tensor input " + std::to_string(k));
    }
  };
  if (qop_) return emit_qoperator(op, in, attrs, out);
  const int out_var = node_ptr_ != nullptr && !node_ptr_->outputs.empty() ? node_ptr_->outputs[0] : -1;
  if (op == "quantize_per_tensor") {
    need(1);
    const double scale = jit::attr_double(attrs, "scale", 0.0);
    const int64_t zp = jit::attr_int(attrs, "zero_point");
    const int64_t qmin = jit::attr_int(attrs, "quant_min"), qmax = jit::attr_int(attrs, "quant_max");
    const std::string s = init_scalar(out.name + "_scale", kFloat32, scale);
    const std::string z = init_scalar(out.name + "_zero_point", kUInt8, static_cast<double>(zp));
    std::string x = cast(in[0], kFloat32);
    if (qmin > 0 || qmax < 255) {
      const std::string lo = qmin > 0 ? init_scalar(out.name + "_min", kFloat32, (qmin - zp) * scale) : std::string();
      const std::string hi = qmax < 255 ? init_scalar(out.name + "_max", kFloat32, (qmax - zp) * scale) : std::string();
      const std::string clipped = fresh(out.name + "_clipped");
      add("Clip", {x, lo, hi}, {clipped});
      x = clipped;
    }
    add("QuantizeLinear", {x, s, z}, {out.name});
    if (out_var >= 0) grid_[out_var] = {scale, zp};
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
    const double in_scale = jit::attr_double(attrs, "input_scale", 0.0);
    const double out_scale = jit::attr_double(attrs, "output_scale", 0.0);
    const int64_t in_zp = jit::attr_int(attrs, "input_zero_point"), out_zp = jit::attr_int(attrs, "output_zero_point");
    const bool relu = jit::attr_bool(attrs, "relu", false);
    const DType dtype = out.dtype;
    const std::string x = dequantized_input(in[0], in_scale, in_zp, out.name + "_input");
    const std::string w = dequantized_weight(in[1], in[2]);
    const std::string y = fresh(out.name + (op == "quantized_conv2d" ? "_conv" : "_linear"));
    std::vector<Operand> float_in{Operand{x, kFloat32, in[0].shape, nullptr, -1},
                                  Operand{w, kFloat32, in[1].shape, nullptr, -1}};
    if (in.size() > 3 && in[3].present()) float_in.push_back(in[3]);
    const Result float_out{y, kFloat32, out.shape};
    if (op == "quantized_conv2d") {
      Dict conv_attrs;
      for (const char* k : {"stride", "padding", "dilation", "groups"}) {
        if (const Value* v = attrs.find(k)) conv_attrs.insert(k, *v);
      }
      conv(float_in, conv_attrs, float_out);
    } else {
      linear(float_in, Dict(), float_out);
    }
    requantize_output(y, out_scale, out_zp, relu, dtype, out.name);
    if (dtype == kUInt8 && out_var >= 0) grid_[out_var] = {out_scale, out_zp};
  } else if (op == "quantized_max_pool2d") {
    need(1);
    const auto it = grid_.find(in[0].var);
    if (it == grid_.end()) {
      // Codes of unknown grid: the max of codes is the code of the max, so pool them directly
      // (MaxPool takes uint8 since opset 12).
      pool("max_pool2d", in, attrs, out);
      return true;
    }
    const auto [scale, zp] = it->second;
    const std::string s = init_scalar(out.name + "_scale", kFloat32, scale);
    const std::string z = init_scalar(out.name + "_zero_point", kUInt8, static_cast<double>(zp));
    const std::string values = fresh(out.name + "_dequantized");
    add("DequantizeLinear", {in[0].name, s, z}, {values});
    const std::string pooled = fresh(out.name + "_pooled");
    pool("max_pool2d", {Operand{values, kFloat32, in[0].shape, nullptr, -1}}, attrs,
         Result{pooled, kFloat32, out.shape});
    add("QuantizeLinear", {pooled, s, z}, {out.name});
    if (out_var >= 0) grid_[out_var] = it->second;
  } else if (op == "quantized_add") {
    need(2);
    const std::string a = dequantized_input(in[0], jit::attr_double(attrs, "a_scale", 0.0),
                                            jit::attr_int(attrs, "a_zero_point"), out.name + "_a");
    const std::string b = dequantized_input(in[1], jit::attr_double(attrs, "b_scale", 0.0),
                                            jit::attr_int(attrs, "b_zero_point"), out.name + "_b");
    const std::string sum = fresh(out.name + "_sum");
    add("Add", {a, b}, {sum});
    const double scale = jit::attr_double(attrs, "output_scale", 0.0);
    const int64_t zp = jit::attr_int(attrs, "output_zero_point");
    requantize_output(sum, scale, zp, jit::attr_bool(attrs, "relu", false), out.dtype, out.name);
    if (out.dtype == kUInt8 && out_var >= 0) grid_[out_var] = {scale, zp};
  } else if (op == "quantized_cat") {
    need(1);
    const Value* sv = attrs.find("scales");
    if (sv == nullptr) unsupported("it lacks the attribute 'scales'");
    const std::vector<double> scales = sv->to_double_list();
    const std::vector<int64_t> zps = jit::attr_ints(attrs, "zero_points");
    if (scales.size() != in.size() || zps.size() != in.size()) unsupported("it has one grid per input missing");
    std::vector<std::string> values;
    for (size_t i = 0; i < in.size(); ++i) {
      values.push_back(dequantized_input(in[i], scales[i], zps[i], out.name + "_in" + std::to_string(i)));
    }
    const std::string joined = fresh(out.name + "_cat");
    set_int(add("Concat", values, {joined}), "axis", norm_dim(jit::attr_int(attrs, "dim"), in[0].shape.size()));
    const double scale = jit::attr_double(attrs, "output_scale", 0.0);
    const int64_t zp = jit::attr_int(attrs, "output_zero_point");
    requantize_output(joined, scale, zp, false, out.dtype, out.name);
    if (out.dtype == kUInt8 && out_var >= 0) grid_[out_var] = {scale, zp};
  } else if (op == "quantized_avg_pool2d" || op == "quantized_adaptive_avg_pool2d") {
    need(1);
    // The output is on the input's grid; a mean of codes needs no clamp. Without a known scale
    // the codes are averaged as they are (scale 1), which rounds the same.
    const int64_t zp = jit::attr_int(attrs, "zero_point");
    const auto it = grid_.find(in[0].var);
    const double scale = it != grid_.end() ? it->second.first : 1.0;
    const std::string s = init_scalar(out.name + "_scale", kFloat32, scale);
    const std::string z = init_scalar(out.name + "_zero_point", kUInt8, static_cast<double>(zp));
    const std::string values = fresh(out.name + "_dequantized");
    add("DequantizeLinear", {in[0].name, s, z}, {values});
    const std::string pooled = fresh(out.name + "_pooled");
    const std::vector<Operand> float_in{Operand{values, kFloat32, in[0].shape, nullptr, -1}};
    const Result float_out{pooled, kFloat32, out.shape};
    if (op == "quantized_avg_pool2d") {
      pool("avg_pool2d", float_in, attrs, float_out);
    } else {
      adaptive_avg_pool(float_in, attrs, float_out);
    }
    add("QuantizeLinear", {pooled, s, z}, {out.name});
    if (it != grid_.end() && out_var >= 0) grid_[out_var] = {scale, zp};
  } else {
    return false;
  }
  return true;
}

}  // namespace ember::onnx::detail

#endif  // EMBER_HAVE_ONNX
