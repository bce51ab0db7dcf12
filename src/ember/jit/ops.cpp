// The graph op set (Note [Graph op set], jit/ops.h): every op a traced graph may hold and
// how the interpreter runs it by calling the public op.

#include "ember/jit/ops.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "ember/core/check.h"
#include "ember/jit/graph.h"
#include "ember/nn/functional.h"
#include "ember/ops/conv.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/linalg.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/pointwise_nodes.h"
#include "ember/ops/pool.h"
#include "ember/ops/reduce.h"
#include "ember/jit/fused.h"
#include "ember/quant/qlinear.h"
#include "ember/quant/quantized_ops.h"

namespace ember::jit {

namespace {
const Value& need(const Value::Dict& attrs, const char* name) {
  const Value* v = attrs.find(name);
  EMBER_CHECK(v != nullptr, "[jit] a node lacks its attribute '", name, "'");
  return *v;
}
}  // namespace

int64_t attr_int(const Value::Dict& attrs, const char* name) { return need(attrs, name).to_int(); }
int64_t attr_int(const Value::Dict& attrs, const char* name, int64_t fallback) {
  const Value* v = attrs.find(name);
  return v == nullptr || v->is_none() ? fallback : v->to_int();
}
double attr_double(const Value::Dict& attrs, const char* name, double fallback) {
  const Value* v = attrs.find(name);
  return v == nullptr || v->is_none() ? fallback : v->to_double();
}
bool attr_bool(const Value::Dict& attrs, const char* name, bool fallback) {
  const Value* v = attrs.find(name);
  return v == nullptr || v->is_none() ? fallback : v->to_bool();
}
std::string attr_string(const Value::Dict& attrs, const char* name, const std::string& fallback) {
  const Value* v = attrs.find(name);
  return v == nullptr || v->is_none() ? fallback : v->to_string();
}
std::vector<int64_t> attr_ints(const Value::Dict& attrs, const char* name) { return need(attrs, name).to_int_list(); }

namespace {

using In = std::vector<Tensor>;
using Out = std::vector<Tensor>;
using A = Value::Dict;

std::optional<int64_t> opt_int(const A& a, const char* name) {
  const Value* v = a.find(name);
  if (v == nullptr || v->is_none()) return std::nullopt;
  return v->to_int();
}
DType dtype_attr(const A& a, const char* name = "dtype") { return dtype_from_short_name(need(a, name).to_string()); }
std::optional<DType> opt_dtype(const A& a) {
  const Value* v = a.find("dtype");
  if (v == nullptr || v->is_none()) return std::nullopt;
  return dtype_from_short_name(v->to_string());
}

Out one(Tensor t) { return {std::move(t)}; }

struct Registry {
  std::map<std::string, OpDef, std::less<>> ops;
  void add(const char* name, OpFn fn, bool elementwise = false, bool random = false) {
    ops[name] = OpDef{name, fn, elementwise, random};
  }
};

// Unary and binary table ops share one function each; the node's op name picks the row.
// call_op passes the node's op name to them through this thread-local.
thread_local std::string_view tl_node_op;

Out run_unary(const In& in, const A& a) { return one(detail::run_unary_node(tl_node_op, in.at(0), a)); }
Out run_binary(const In& in, const A& a) { return one(detail::run_binary_node(tl_node_op, in, a)); }

const Registry& registry() {
  static const Registry r = [] {
    Registry g;
    for (const std::string& name : detail::pointwise_node_names()) {
      // Names live in the registry's keys; OpDef::name points at them.
      g.ops[name] = OpDef{nullptr, detail::is_binary_node(name) ? run_binary : run_unary, true, false};
    }
    for (auto& [name, def] : g.ops) def.name = name.c_str();

    // ---- linear algebra ----
    g.add("linear", [](const In& in, const A& a) {
      Tensor y = linear(in.at(0), in.at(1), in.at(2));
      if (attr_string(a, "activation", "") == "relu") y.relu_();
      return one(y);
    });
    g.add("matmul", [](const In& in, const A&) { return one(matmul(in.at(0), in.at(1))); });
    g.add("mm", [](const In& in, const A&) { return one(mm(in.at(0), in.at(1))); });
    g.add("bmm", [](const In& in, const A&) { return one(bmm(in.at(0), in.at(1))); });
    g.add("addmm", [](const In& in, const A& a) {
      return one(addmm(in.at(0), in.at(1), in.at(2), detail::scalar_from_value(need(a, "beta")),
                       detail::scalar_from_value(need(a, "alpha"))));
    });
    g.add("baddbmm", [](const In& in, const A& a) {
      return one(baddbmm(in.at(0), in.at(1), in.at(2), detail::scalar_from_value(need(a, "beta")),
                         detail::scalar_from_value(need(a, "alpha"))));
    });
    // ---- convolution, pooling ----
    // padding is a list, or "same" / "valid".
    g.add("conv1d", [](const In& in, const A& a) {
      const Value& pad = need(a, "padding");
      if (pad.is_string())
        return one(conv1d(in.at(0), in.at(1), in.at(2), attr_ints(a, "stride"), pad.to_string().c_str(),
                          attr_ints(a, "dilation"), attr_int(a, "groups")));
      return one(conv1d(in.at(0), in.at(1), in.at(2), attr_ints(a, "stride"), pad.to_int_list(),
                        attr_ints(a, "dilation"), attr_int(a, "groups")));
    });
    g.add("conv2d", [](const In& in, const A& a) {
      const Value& pad = need(a, "padding");
      Tensor y = pad.is_string() ? conv2d(in.at(0), in.at(1), in.at(2), attr_ints(a, "stride"),
                                          pad.to_string().c_str(), attr_ints(a, "dilation"), attr_int(a, "groups"))
                                 : conv2d(in.at(0), in.at(1), in.at(2), attr_ints(a, "stride"), pad.to_int_list(),
                                          attr_ints(a, "dilation"), attr_int(a, "groups"));
      if (attr_string(a, "activation", "") == "relu") y.relu_();
      return one(y);
    });
    g.add("conv_transpose2d", [](const In& in, const A& a) {
      return one(conv_transpose2d(in.at(0), in.at(1), in.at(2), attr_ints(a, "stride"), attr_ints(a, "padding"),
                                  attr_ints(a, "output_padding"), attr_int(a, "groups"), attr_ints(a, "dilation")));
    });
    g.add("max_pool2d", [](const In& in, const A& a) {
      return one(max_pool2d(in.at(0), attr_ints(a, "kernel_size"), attr_ints(a, "stride"), attr_ints(a, "padding"),
                            attr_ints(a, "dilation"), attr_bool(a, "ceil_mode", false)));
    });
    g.add("avg_pool2d", [](const In& in, const A& a) {
      return one(avg_pool2d(in.at(0), attr_ints(a, "kernel_size"), attr_ints(a, "stride"), attr_ints(a, "padding"),
                            attr_bool(a, "ceil_mode", false), attr_bool(a, "count_include_pad", true),
                            opt_int(a, "divisor_override")));
    });
    g.add("adaptive_avg_pool2d",
          [](const In& in, const A& a) { return one(adaptive_avg_pool2d(in.at(0), attr_ints(a, "output_size"))); });
    // ---- normalisation, embedding, dropout ----
    g.add("batch_norm", [](const In& in, const A& a) {
      return one(nn::functional::batch_norm(in.at(0), in.at(1), in.at(2), in.at(3), in.at(4),
                                            attr_bool(a, "training", false), attr_double(a, "momentum", 0.1),
                                            attr_double(a, "eps", 1e-5)));
    });
    g.add("layer_norm", [](const In& in, const A& a) {
      return one(nn::functional::layer_norm(in.at(0), attr_ints(a, "normalized_shape"), in.at(1), in.at(2),
                                            attr_double(a, "eps", 1e-5)));
    });
    g.add("group_norm", [](const In& in, const A& a) {
      return one(nn::functional::group_norm(in.at(0), attr_int(a, "num_groups"), in.at(1), in.at(2),
                                            attr_double(a, "eps", 1e-5)));
    });
    g.add("embedding", [](const In& in, const A& a) {
      const Value* mn = a.find("max_norm");
      return one(nn::functional::embedding(in.at(0), in.at(1), opt_int(a, "padding_idx"),
                                           mn == nullptr || mn->is_none() ? std::nullopt
                                                                          : std::optional<double>(mn->to_double()),
                                           attr_double(a, "norm_type", 2.0)));
    });
    g.add(
        "dropout",
        [](const In& in, const A& a) {
          return one(nn::functional::dropout(in.at(0), attr_double(a, "p", 0.5), attr_bool(a, "training", true)));
        },
        false, true);
    // ---- softmax, reductions ----
    g.add("softmax", [](const In& in, const A& a) { return one(softmax(in.at(0), attr_int(a, "dim"), opt_dtype(a))); });
    g.add("log_softmax",
          [](const In& in, const A& a) { return one(log_softmax(in.at(0), attr_int(a, "dim"), opt_dtype(a))); });
    g.add("sum", [](const In& in, const A& a) {
      return one(sum(in.at(0), attr_ints(a, "dim"), attr_bool(a, "keepdim", false), opt_dtype(a)));
    });
    g.add("mean", [](const In& in, const A& a) {
      return one(mean(in.at(0), attr_ints(a, "dim"), attr_bool(a, "keepdim", false), opt_dtype(a)));
    });
    g.add("amax", [](const In& in, const A& a) {
      return one(amax(in.at(0), attr_ints(a, "dim"), attr_bool(a, "keepdim", false)));
    });
    g.add("amin", [](const In& in, const A& a) {
      return one(amin(in.at(0), attr_ints(a, "dim"), attr_bool(a, "keepdim", false)));
    });
    // ---- views and copies ----
    g.add("view", [](const In& in, const A& a) { return one(in.at(0).view(attr_ints(a, "size"))); });
    g.add("reshape", [](const In& in, const A& a) { return one(in.at(0).reshape(attr_ints(a, "shape"))); });
    g.add("flatten", [](const In& in, const A& a) {
      return one(in.at(0).flatten(attr_int(a, "start_dim"), attr_int(a, "end_dim")));
    });
    g.add("unflatten", [](const In& in, const A& a) {
      return one(in.at(0).unflatten(attr_int(a, "dim"), attr_ints(a, "sizes")));
    });
    g.add("transpose", [](const In& in, const A& a) {
      return one(in.at(0).transpose(attr_int(a, "dim0"), attr_int(a, "dim1")));
    });
    g.add("permute", [](const In& in, const A& a) { return one(in.at(0).permute(attr_ints(a, "dims"))); });
    g.add("t", [](const In& in, const A&) { return one(in.at(0).t()); });
    g.add("unsqueeze", [](const In& in, const A& a) { return one(in.at(0).unsqueeze(attr_int(a, "dim"))); });
    g.add("squeeze", [](const In& in, const A& a) {
      const std::optional<int64_t> d = opt_int(a, "dim");
      return one(d ? in.at(0).squeeze(*d) : in.at(0).squeeze());
    });
    g.add("expand", [](const In& in, const A& a) { return one(in.at(0).expand(attr_ints(a, "size"))); });
    g.add("contiguous", [](const In& in, const A&) { return one(in.at(0).contiguous()); });
    g.add("clone", [](const In& in, const A&) { return one(in.at(0).clone()); });
    g.add("to", [](const In& in, const A& a) { return one(in.at(0).to(dtype_attr(a), attr_bool(a, "copy", false))); });
    g.add("narrow", [](const In& in, const A& a) {
      return one(in.at(0).narrow(attr_int(a, "dim"), attr_int(a, "start"), attr_int(a, "length")));
    });
    g.add("slice", [](const In& in, const A& a) {
      return one(in.at(0).slice(attr_int(a, "dim"), opt_int(a, "start"), opt_int(a, "end"), attr_int(a, "step", 1)));
    });
    g.add("select", [](const In& in, const A& a) {
      return one(in.at(0).select(attr_int(a, "dim"), attr_int(a, "index")));
    });
    g.add("chunk", [](const In& in, const A& a) { return in.at(0).chunk(attr_int(a, "chunks"), attr_int(a, "dim")); });
    g.add("split", [](const In& in, const A& a) {
      return in.at(0).split_with_sizes(attr_ints(a, "split_sizes"), attr_int(a, "dim"));
    });
    g.add("unbind", [](const In& in, const A& a) { return in.at(0).unbind(attr_int(a, "dim")); });
    g.add("cat", [](const In& in, const A& a) { return one(cat(in, attr_int(a, "dim"))); });
    g.add("stack", [](const In& in, const A& a) { return one(stack(in, attr_int(a, "dim"))); });
    g.add("tril", [](const In& in, const A& a) { return one(tril(in.at(0), attr_int(a, "diagonal", 0))); });
    g.add("triu", [](const In& in, const A& a) { return one(triu(in.at(0), attr_int(a, "diagonal", 0))); });
    // ---- element-wise outside the table ----
    g.add(
        "clamp",
        [](const In& in, const A& a) {
          const Value* lo = a.find("min");
          const Value* hi = a.find("max");
          std::optional<Scalar> l, h;
          if (lo != nullptr && !lo->is_none()) l = detail::scalar_from_value(*lo);
          if (hi != nullptr && !hi->is_none()) h = detail::scalar_from_value(*hi);
          return one(clamp(in.at(0), l, h));
        },
        true);
    g.add(
        "where", [](const In& in, const A&) { return one(where(in.at(0), in.at(1), in.at(2))); }, true);
    g.add("masked_fill", [](const In& in, const A& a) {
      if (in.size() == 3) return one(masked_fill(in.at(0), in.at(1), in.at(2)));
      return one(masked_fill(in.at(0), in.at(1), detail::scalar_from_value(need(a, "value"))));
    });
    // ---- creation ----
    g.add("zeros", [](const In&, const A& a) { return one(zeros(attr_ints(a, "size"), TensorOptions(dtype_attr(a)))); });
    g.add("ones", [](const In&, const A& a) { return one(ones(attr_ints(a, "size"), TensorOptions(dtype_attr(a)))); });
    g.add("full", [](const In&, const A& a) {
      return one(full(attr_ints(a, "size"), detail::scalar_from_value(need(a, "fill_value")),
                      TensorOptions(dtype_attr(a))));
    });
    g.add("arange", [](const In&, const A& a) {
      return one(arange(detail::scalar_from_value(need(a, "start")), detail::scalar_from_value(need(a, "end")),
                        detail::scalar_from_value(need(a, "step")), TensorOptions(dtype_attr(a))));
    });
    // ---- static int8 quantization (quant/quantized_ops.h) ----
    g.add("quantize_per_tensor", [](const In& in, const A& a) {
      return one(quant::quantize_per_tensor(in.at(0), attr_double(a, "scale", 0.0), attr_int(a, "zero_point"),
                                            attr_int(a, "quant_min"), attr_int(a, "quant_max")));
    });
    g.add("dequantize_per_tensor", [](const In& in, const A& a) {
      return one(quant::dequantize_per_tensor(in.at(0), attr_double(a, "scale", 0.0), attr_int(a, "zero_point")));
    });
    g.add("quantized_conv2d", [](const In& in, const A& a) {
      return one(quant::quantized_conv2d(in.at(0), in.at(1), in.at(2), in.at(3), attr_ints(a, "stride"),
                                         attr_ints(a, "padding"), attr_ints(a, "dilation"), attr_int(a, "groups"),
                                         attr_double(a, "input_scale", 0.0), attr_int(a, "input_zero_point"),
                                         attr_double(a, "output_scale", 0.0), attr_int(a, "output_zero_point"),
                                         attr_bool(a, "relu", false), dtype_attr(a, "output_dtype")));
    });
    g.add("quantized_linear", [](const In& in, const A& a) {
      return one(quant::quantized_linear(in.at(0), in.at(1), in.at(2), in.at(3), attr_double(a, "input_scale", 0.0),
                                         attr_int(a, "input_zero_point"), attr_double(a, "output_scale", 0.0),
                                         attr_int(a, "output_zero_point"), attr_bool(a, "relu", false),
                                         dtype_attr(a, "output_dtype")));
    });
    g.add("quantized_max_pool2d", [](const In& in, const A& a) {
      return one(quant::quantized_max_pool2d(in.at(0), attr_ints(a, "kernel_size"), attr_ints(a, "stride"),
                                             attr_ints(a, "padding"), attr_ints(a, "dilation"),
                                             attr_bool(a, "ceil_mode", false)));
    });
    g.add("quantized_avg_pool2d", [](const In& in, const A& a) {
      return one(quant::quantized_avg_pool2d(in.at(0), attr_int(a, "zero_point"), attr_ints(a, "kernel_size"),
                                             attr_ints(a, "stride"), attr_ints(a, "padding"),
                                             attr_bool(a, "ceil_mode", false), attr_bool(a, "count_include_pad", true),
                                             opt_int(a, "divisor_override")));
    });
    g.add("quantized_adaptive_avg_pool2d", [](const In& in, const A& a) {
      return one(quant::quantized_adaptive_avg_pool2d(in.at(0), attr_int(a, "zero_point"),
                                                      attr_ints(a, "output_size")));
    });
    g.add("quantized_add", [](const In& in, const A& a) {
      return one(quant::quantized_add(in.at(0), attr_double(a, "a_scale", 0.0), attr_int(a, "a_zero_point"), in.at(1),
                                      attr_double(a, "b_scale", 0.0), attr_int(a, "b_zero_point"),
                                      attr_double(a, "output_scale", 0.0), attr_int(a, "output_zero_point"),
                                      attr_bool(a, "relu", false), dtype_attr(a, "output_dtype")));
    });
    g.add("quantized_cat", [](const In& in, const A& a) {
      return one(quant::quantized_cat(in, need(a, "scales").to_double_list(), attr_ints(a, "zero_points"),
                                      attr_int(a, "dim"), attr_double(a, "output_scale", 0.0),
                                      attr_int(a, "output_zero_point"), dtype_attr(a, "output_dtype")));
    });
    // ---- ONNX's int8 operators (quant/qlinear.h; what onnx::load reads QOperator files into) ----
    g.add("quantize_linear", [](const In& in, const A& a) {
      return one(quant::quantize_linear(in.at(0), in.at(1), in.at(2), attr_int(a, "axis", 1)));
    });
    g.add("dequantize_linear", [](const In& in, const A& a) {
      return one(quant::dequantize_linear(in.at(0), in.at(1), in.at(2), attr_int(a, "axis", 1)));
    });
    g.add("qlinear_conv2d", [](const In& in, const A& a) {
      return one(quant::qlinear_conv2d(in.at(0), in.at(1), in.at(2), in.at(3), in.at(4), in.at(5), in.at(6), in.at(7),
                                       in.at(8), attr_ints(a, "stride"), attr_ints(a, "padding"),
                                       attr_ints(a, "dilation"), attr_int(a, "groups")));
    });
    g.add("qlinear_matmul", [](const In& in, const A&) {
      return one(quant::qlinear_matmul(in.at(0), in.at(1), in.at(2), in.at(3), in.at(4), in.at(5), in.at(6), in.at(7)));
    });
    g.add("qlinear_add", [](const In& in, const A&) {
      return one(quant::qlinear_add(in.at(0), in.at(1), in.at(2), in.at(3), in.at(4), in.at(5), in.at(6), in.at(7)));
    });
    g.add("qlinear_concat", [](const In& in, const A& a) {
      // inputs: y_scale, y_zero_point, then (codes, scale, zero point) per joined tensor
      EMBER_CHECK(in.size() >= 5 && (in.size() - 2) % 3 == 0, "[jit] qlinear_concat takes y_scale, y_zero_point and "
                  "three inputs per joined tensor, got ", in.size(), " inputs");
      std::vector<Tensor> xs, scales, zps;
      for (size_t k = 2; k < in.size(); k += 3) {
        xs.push_back(in[k]);
        scales.push_back(in[k + 1]);
        zps.push_back(in[k + 2]);
      }
      return one(quant::qlinear_concat(xs, scales, zps, in.at(0), in.at(1), attr_int(a, "dim")));
    });
    g.add("qlinear_avg_pool2d", [](const In& in, const A& a) {
      return one(quant::qlinear_avg_pool2d(in.at(0), in.at(1), in.at(2), in.at(3), in.at(4),
                                           attr_ints(a, "kernel_size"), attr_ints(a, "stride"),
                                           attr_ints(a, "padding"), attr_bool(a, "ceil_mode", false),
                                           attr_bool(a, "count_include_pad", false)));
    });
    g.add("qlinear_global_avg_pool2d", [](const In& in, const A&) {
      return one(quant::qlinear_global_avg_pool2d(in.at(0), in.at(1), in.at(2), in.at(3), in.at(4)));
    });
    // ---- made by passes ----
    g.add("fused_elementwise", [](const In& in, const A& a) { return one(run_fused_elementwise(in, a)); }, true);
    return g;
  }();
  return r;
}

}  // namespace

std::vector<Tensor> call_op(const OpDef& def, const std::vector<Tensor>& inputs, const Value::Dict& attrs) {
  tl_node_op = def.name;
  try {
    return def.fn(inputs, attrs);
  } catch (const std::out_of_range&) {
    // A node with fewer tensor inputs than its op reads (a hand-built or damaged graph).
    EMBER_ERROR("[jit] node '", def.name, "' has ", inputs.size(), " tensor inputs, fewer than the op needs");
  }
}

const OpDef* find_op(std::string_view name) {
  const Registry& r = registry();
  auto it = r.ops.find(name);
  return it == r.ops.end() ? nullptr : &it->second;
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const auto& [name, def] : registry().ops) names.push_back(name);
  return names;
}

int opset_version() { return 1; }

}  // namespace ember::jit
