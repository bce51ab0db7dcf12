// ONNX export (Note [ONNX export], export.cpp): joins, slices and selections, reductions,
// selections by mask, creation ops, group norm, embedding, the activations ONNX has no op
// for before opset 20 (gelu, silu), comparisons and the remaining element-wise ops.
//
// Choices made for the runtimes that read these files: chunk, split and unbind become one
// Slice (or Gather) per piece rather than Split, whose sizes moved from an attribute to an
// input in opset 13 (OpenCV 4.6 does not read that input); addmm and
// baddbmm are MatMul, Mul and Add (Gemm takes only 2-D operands); group norm is
// InstanceNormalization over [N, groups, -1] with the affine applied after it, as ONNX's
// own GroupNormalization arrives only in opset 18.

#include "ember/core/check.h"
#include "ember/jit/module.h"

#if EMBER_HAVE_ONNX

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "ember/jit/ops.h"
#include "ember/onnx/exporter.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise_nodes.h"

namespace ember::onnx::detail {

namespace {
constexpr int64_t kSliceToEnd = std::numeric_limits<int64_t>::max();

bool is_scalar_number(const Value* v) { return v != nullptr && (v->is_int() || v->is_double() || v->is_bool()); }
}  // namespace

int64_t Exporter::norm_dim(int64_t d, size_t rank) const {
  const int64_t r = static_cast<int64_t>(rank);
  if (d < 0) d += r;
  if (d < 0 || d >= std::max<int64_t>(r, 1)) {
    unsupported("dim " + std::to_string(d) + " is out of range for rank " + std::to_string(rank));
  }
  return d;
}

std::string Exporter::scalar_attr(const Value& v, DType dt, const std::string& base) {
  return init_scalar(base, dt, v.is_bool() ? (v.to_bool() ? 1.0 : 0.0) : v.to_double());
}

bool Exporter::emit_more(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  auto need_inputs = [&](size_t n) {
    for (size_t k = 0; k < n; ++k) {
      if (k >= in.size() || !in[k].present()) {
        unsupported("it has " + std::to_string(in.size()) + " tensor inputs, fewer than the op needs");
      }
    }
  };
  if (unary_more(op, in, attrs, out) || binary_more(op, in, attrs, out)) return true;
  if (op == "group_norm") {
    group_norm(in, attrs, out);
  } else if (op == "embedding") {
    embedding(in, attrs, out);
  } else if (op == "sum" || op == "mean" || op == "amax" || op == "amin") {
    reduce(op, in, attrs, out);
  } else if (op == "cat" || op == "stack") {
    if (in.empty()) unsupported("it has no inputs");
    const bool stack = op == "stack";
    const int64_t d = norm_dim(jit::attr_int(attrs, "dim"), in[0].shape.size() + (stack ? 1 : 0));
    std::vector<std::string> parts;
    for (const Operand& o : in) {
      if (!o.present()) unsupported("an input is absent");
      std::string p = cast(o, out.dtype);
      if (stack) {
        const std::string u = fresh(out.name + "_part");
        add("Unsqueeze", {p, init_i64(out.name + "_axes", {d})}, {u});
        p = u;
      }
      parts.push_back(p);
    }
    set_int(add("Concat", parts, {out.name}), "axis", d);
  } else if (op == "slice") {
    need_inputs(1);
    const int64_t d = norm_dim(jit::attr_int(attrs, "dim"), in[0].shape.size());
    const int64_t step = jit::attr_int(attrs, "step", 1);
    if (step <= 0) unsupported("slice step " + std::to_string(step) + " (ONNX and eager agree for steps >= 1 only)");
    if (attr_is_dynamic("start")) unsupported("a slice whose start follows the batch");
    int64_t end = jit::attr_int(attrs, "end", kSliceToEnd);
    if (attr_is_dynamic("end")) {
      // An end that follows the batch is exact only where it is the whole dim.
      for (const jit::SymAttr& s : node_ptr_->sym) {
        if (s.attr == "end" && s.value != in[0].shape[static_cast<size_t>(d)]) {
          unsupported("a slice whose end follows the batch but is not the end of the dim");
        }
      }
      end = kSliceToEnd;
    }
    slice(in[0], d, jit::attr_int(attrs, "start", 0), end, step, out.name);
  } else if (op == "narrow") {
    need_inputs(1);
    if (attr_is_dynamic("start") || attr_is_dynamic("length")) unsupported("a narrow whose bounds follow the batch");
    const int64_t d = norm_dim(jit::attr_int(attrs, "dim"), in[0].shape.size());
    int64_t start = jit::attr_int(attrs, "start");
    const SymInt& size = in[0].shape[static_cast<size_t>(d)];
    if (start < 0) {
      if (!size.is_static()) unsupported("a negative narrow start on a dim that follows the batch");
      start += size.b;
    }
    slice(in[0], d, start, start + jit::attr_int(attrs, "length"), 1, out.name);
  } else if (op == "select") {
    need_inputs(1);
    if (attr_is_dynamic("index")) unsupported("a select whose index follows the batch");
    const int64_t d = norm_dim(jit::attr_int(attrs, "dim"), in[0].shape.size());
    select(in[0], d, jit::attr_int(attrs, "index"), out.name);
  } else if (op == "expand") {
    need_inputs(1);
    expand(in[0], out);
  } else if (op == "where") {
    need_inputs(3);
    add("Where", {cast(in[0], kBool), cast(in[1], out.dtype), cast(in[2], out.dtype)}, {out.name});
  } else if (op == "masked_fill") {
    need_inputs(2);
    std::string value;
    if (in.size() > 2 && in[2].present())
      value = cast(in[2], out.dtype);
    else if (const Value* v = attrs.find("value"); is_scalar_number(v))
      value = scalar_attr(*v, out.dtype, out.name + "_value");
    else
      unsupported("it has neither a value tensor nor a number 'value'");
    add("Where", {cast(in[1], kBool), value, cast(in[0], out.dtype)}, {out.name});
  } else if (op == "clamp") {
    need_inputs(1);
    const Value* lo = attrs.find("min");
    const Value* hi = attrs.find("max");
    const std::string l = is_scalar_number(lo) ? scalar_attr(*lo, out.dtype, out.name + "_min") : "";
    const std::string h = is_scalar_number(hi) ? scalar_attr(*hi, out.dtype, out.name + "_max") : "";
    if (l.empty() && h.empty()) unsupported("clamp with neither min nor max");
    std::vector<std::string> ins{cast(in[0], out.dtype), l};
    if (!h.empty()) ins.push_back(h);
    add("Clip", ins, {out.name});
  } else if (op == "zeros" || op == "ones" || op == "full" || op == "arange") {
    creation(op, attrs, out);
  } else if (op == "addmm" || op == "baddbmm") {
    matmul_add(in, attrs, out);
  } else if (op == "conv_transpose2d") {
    conv_transpose(in, attrs, out);
  } else if (op == "tril" || op == "triu") {
    need_inputs(1);
    if (opset_ < 14) unsupported("Trilu arrives in opset 14 (export with opset 14 or later)");
    pb::NodeProto* n =
        add("Trilu", {in[0].name, init_i64(out.name + "_k", {jit::attr_int(attrs, "diagonal", 0)})}, {out.name});
    set_int(n, "upper", op == "triu" ? 1 : 0);
  } else {
    return false;
  }
  return true;
}

// ---- element-wise ----

bool Exporter::unary_more(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  if (!ember::detail::is_unary_node(op)) return false;
  if (in.empty() || !in[0].present()) unsupported("it has no input");
  const DType dt = out.dtype;
  const std::string base = out.name;
  auto tmp = [&](const char* what) { return fresh(base + "_" + what); };
  auto scalar = [&](double v) { return init_scalar(base + "_c", dt, v); };
  if (op == "gelu") {
    gelu(in[0], attrs, out);
  } else if (op == "silu") {
    const std::string x = cast(in[0], dt), s = tmp("sigmoid");
    add("Sigmoid", {x}, {s});
    add("Mul", {x, s}, {out.name});
  } else if (op == "leaky_relu") {
    set_float(add("LeakyRelu", {cast(in[0], dt)}, {out.name}), "alpha",
              jit::attr_double(attrs, "negative_slope", 0.01));
  } else if (op == "softplus") {
    // log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as eager does).
    const double beta = jit::attr_double(attrs, "beta", 1.0), threshold = jit::attr_double(attrs, "threshold", 20.0);
    const std::string x = cast(in[0], dt);
    std::string bx = x;
    if (beta != 1.0) {
      bx = tmp("scaled");
      add("Mul", {x, scalar(beta)}, {bx});
    }
    std::string sp = tmp("softplus");
    add("Softplus", {bx}, {sp});
    if (beta != 1.0) {
      const std::string d = tmp("unscaled");
      add("Div", {sp, scalar(beta)}, {d});
      sp = d;
    }
    const std::string big = tmp("linear");
    add("Greater", {bx, scalar(threshold)}, {big});
    add("Where", {big, x, sp}, {out.name});
  } else if (op == "tan" || op == "asin" || op == "acos" || op == "atan" || op == "sinh" || op == "cosh" ||
             op == "round") {
    static const std::map<std::string, const char*, std::less<>> kNames = {
        {"tan", "Tan"},   {"asin", "Asin"}, {"acos", "Acos"},  {"atan", "Atan"},
        {"sinh", "Sinh"}, {"cosh", "Cosh"}, {"round", "Round"}};
    add(kNames.at(op), {cast(in[0], dt)}, {out.name});
  } else if (op == "rsqrt") {
    const std::string s = tmp("sqrt");
    add("Sqrt", {cast(in[0], dt)}, {s});
    add("Reciprocal", {s}, {out.name});
  } else if (op == "exp2") {
    add("Pow", {scalar(2.0), cast(in[0], dt)}, {out.name});
  } else if (op == "expm1") {
    const std::string e = tmp("exp");
    add("Exp", {cast(in[0], dt)}, {e});
    add("Sub", {e, scalar(1.0)}, {out.name});
  } else if (op == "log1p") {
    const std::string p = tmp("plus1");
    add("Add", {cast(in[0], dt), scalar(1.0)}, {p});
    add("Log", {p}, {out.name});
  } else if (op == "log2" || op == "log10") {
    const std::string l = tmp("ln");
    add("Log", {cast(in[0], dt)}, {l});
    add("Div", {l, scalar(std::log(op == "log2" ? 2.0 : 10.0))}, {out.name});
  } else if (op == "trunc" || op == "frac") {
    if (!is_floating_point(in[0].dtype)) {
      if (op == "frac") unsupported("frac of an integer tensor");
      add("Identity", {in[0].name}, {out.name});
      return true;
    }
    // trunc(x) = sign(x) * floor(|x|); frac(x) = x - trunc(x).
    const std::string a = tmp("abs"), f = tmp("floor"), s = tmp("sign");
    add("Abs", {in[0].name}, {a});
    add("Floor", {a}, {f});
    add("Sign", {in[0].name}, {s});
    if (op == "trunc") {
      add("Mul", {s, f}, {out.name});
    } else {
      const std::string t = tmp("trunc");
      add("Mul", {s, f}, {t});
      add("Sub", {in[0].name, t}, {out.name});
    }
  } else if (op == "isnan" || op == "isinf" || op == "isfinite") {
    if (!is_floating_point(in[0].dtype)) {
      // An integer is never NaN or infinite.
      Tensor c = full(static_dims(out.shape, "output"), Scalar(op == "isfinite"), TensorOptions(kBool));
      init_tensor(out.name, c);
      return true;
    }
    if (op == "isfinite") {
      const std::string n = tmp("nan"), i = tmp("inf"), either = tmp("nonfinite");
      add("IsNaN", {in[0].name}, {n});
      add("IsInf", {in[0].name}, {i});
      add("Or", {n, i}, {either});
      add("Not", {either}, {out.name});
    } else {
      add(op == "isnan" ? "IsNaN" : "IsInf", {in[0].name}, {out.name});
    }
  } else if (op == "logical_not") {
    const std::string b = cast(in[0], kBool);
    if (out.dtype == kBool) {
      add("Not", {b}, {out.name});
    } else {
      const std::string n = tmp("not");
      add("Not", {b}, {n});
      set_int(add("Cast", {n}, {out.name}), "to", onnx_dtype(out.dtype));
    }
  } else if (op == "logit") {
    std::string x = cast(in[0], dt);
    if (const Value* e = attrs.find("eps"); e != nullptr && !e->is_none()) {
      const double eps = e->to_double();
      const std::string c = tmp("clamped");
      add("Clip", {x, scalar(eps), scalar(1.0 - eps)}, {c});
      x = c;
    }
    const std::string one_minus = tmp("complement"), ratio = tmp("odds");
    add("Sub", {scalar(1.0), x}, {one_minus});
    add("Div", {x, one_minus}, {ratio});
    add("Log", {ratio}, {out.name});
  } else {
    return false;
  }
  return true;
}

void Exporter::gelu(const Operand& in, const Dict& attrs, const Result& out) {
  // ONNX's Gelu arrives in opset 20: 0.5 x (1 + erf(x / sqrt 2)), or with
  // approximate="tanh", 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
  const DType dt = out.dtype;
  const std::string x = cast(in, dt);
  auto tmp = [&](const char* what) { return fresh(out.name + "_" + what); };
  auto scalar = [&](double v) { return init_scalar(out.name + "_c", dt, v); };
  const std::string mode = jit::attr_string(attrs, "approximate", "none");
  std::string inner = tmp("inner");
  if (mode == "none") {
    const std::string scaled = tmp("scaled");
    add("Div", {x, scalar(std::numbers::sqrt2)}, {scaled});
    add("Erf", {scaled}, {inner});
  } else if (mode == "tanh") {
    const std::string sq = tmp("square"), cube = tmp("cube"), c3 = tmp("cubic"), sum = tmp("poly"), arg = tmp("arg");
    add("Mul", {x, x}, {sq});
    add("Mul", {sq, x}, {cube});
    add("Mul", {cube, scalar(0.044715)}, {c3});
    add("Add", {x, c3}, {sum});
    add("Mul", {sum, scalar(std::sqrt(2.0 / std::numbers::pi))}, {arg});
    add("Tanh", {arg}, {inner});
  } else {
    unsupported("gelu with approximate='" + mode + "' (neither 'none' nor 'tanh')");
  }
  const std::string plus = tmp("plus1"), times = tmp("times_x");
  add("Add", {inner, scalar(1.0)}, {plus});
  add("Mul", {x, plus}, {times});
  add("Mul", {times, scalar(0.5)}, {out.name});
}

bool Exporter::binary_more(const std::string& op, const std::vector<Operand>& in, const Dict& attrs,
                           const Result& out) {
  static const std::map<std::string, const char*, std::less<>> kCompare = {
      {"eq", "Equal"},          {"ne", "Equal"},        {"lt", "Less"},       {"le", "LessOrEqual"}, {"gt", "Greater"},
      {"ge", "GreaterOrEqual"}, {"logical_and", "And"}, {"logical_or", "Or"}, {"logical_xor", "Xor"}};
  const bool compare = kCompare.count(op) != 0;
  if (!compare && op != "fmod" && op != "remainder") return false;
  if (in.empty() || !in[0].present()) unsupported("it has no tensor input");
  const bool logical = op.rfind("logical_", 0) == 0;
  // The operands' common dtype (a comparison's output is bool; its operands are compared
  // in the dtype eager promotes them to).
  DType dt = compare ? in[0].dtype : out.dtype;
  const Value* other = attrs.find("other");
  const Value* self = attrs.find("self");
  const Value* scalar_v = in.size() == 2 ? nullptr : other != nullptr ? other : self;
  if (in.size() == 2) {
    if (!in[1].present()) unsupported("its second input is absent");
    if (compare) dt = promote_types(in[0].dtype, in[1].dtype);
  } else if (!is_scalar_number(scalar_v)) {
    unsupported("it has one tensor input and neither an 'other' nor a 'self' number");
  } else if (compare && scalar_v->is_double() && !is_floating_point(dt)) {
    dt = get_default_dtype();
  } else if (compare && scalar_v->is_int() && dt == kBool) {
    dt = kInt64;
  }
  if (logical) dt = kBool;
  std::string a, b;
  if (in.size() == 2) {
    a = cast(in[0], dt);
    b = cast(in[1], dt);
  } else if (other != nullptr) {
    a = cast(in[0], dt);
    b = scalar_attr(*other, dt, out.name + "_other");
  } else {
    a = scalar_attr(*self, dt, out.name + "_self");
    b = cast(in[0], dt);
  }
  if (op == "fmod") {
    set_int(add("Mod", {a, b}, {out.name}), "fmod", 1);
    return true;
  }
  if (op == "remainder") {
    if (!is_floating_point(dt)) {
      set_int(add("Mod", {a, b}, {out.name}), "fmod", 0);  // the divisor's sign, as eager
      return true;
    }
    // ONNX's Mod on floats must be fmod; eager's remainder is a - floor(a / b) * b.
    const std::string q = fresh(out.name + "_quotient"), f = fresh(out.name + "_floor"),
                      m = fresh(out.name + "_multiple");
    add("Div", {a, b}, {q});
    add("Floor", {q}, {f});
    add("Mul", {f, b}, {m});
    add("Sub", {a, m}, {out.name});
    return true;
  }
  const std::string y = out.dtype == kBool && op != "ne" ? out.name : fresh(out.name + "_bool");
  add(kCompare.at(op), {a, b}, {y});
  if (op == "ne") {
    if (out.dtype == kBool) {
      add("Not", {y}, {out.name});
      return true;
    }
    const std::string n = fresh(out.name + "_ne");
    add("Not", {y}, {n});
    set_int(add("Cast", {n}, {out.name}), "to", onnx_dtype(out.dtype));
  } else if (out.dtype != kBool) {
    set_int(add("Cast", {y}, {out.name}), "to", onnx_dtype(out.dtype));
  }
  return true;
}

// ---- norms, embedding ----

void Exporter::group_norm(const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  if (in.empty() || !in[0].present()) unsupported("it has no input");
  const Operand& x = in[0];
  if (x.shape.size() < 2 || !x.shape[1].is_static()) unsupported("the input is not [N, C, *] with a static C");
  const int64_t groups = jit::attr_int(attrs, "num_groups");
  const int64_t c = x.shape[1].b;
  if (groups <= 0 || c % groups != 0) unsupported("num_groups does not divide the channels");
  // [N, C, *] -> [N, G, C/G * prod(*)]: instance norm over the last dim is group norm.
  const std::string grouped = fresh(out.name + "_grouped");
  add("Reshape", {x.name, init_i64(out.name + "_group_shape", {0, groups, -1})}, {grouped});
  const std::string normed = fresh(out.name + "_normed");
  Tensor ones_g = ones({groups}, TensorOptions(x.dtype)), zeros_g = zeros({groups}, TensorOptions(x.dtype));
  const std::string scale = fresh(out.name + "_unit_scale"), shift = fresh(out.name + "_zero_bias");
  init_tensor(scale, ones_g);
  init_tensor(shift, zeros_g);
  set_float(add("InstanceNormalization", {grouped, scale, shift}, {normed}), "epsilon",
            jit::attr_double(attrs, "eps", 1e-5));
  const bool has_w = in.size() > 1 && in[1].present();
  const bool has_b = in.size() > 2 && in[2].present();
  std::vector<SymInt> grouped_shape{x.shape[0], SymInt{0, groups}, SymInt{0, -1}};
  const std::string back = has_w || has_b ? fresh(out.name + "_ungrouped") : out.name;
  reshape(Operand{normed, x.dtype, grouped_shape, nullptr, -1}, Result{back, x.dtype, x.shape});
  // The affine per channel: [C] as [C, 1, ..., 1].
  std::vector<int64_t> per_channel(x.shape.size() - 1, 1);
  per_channel[0] = c;
  auto channel_view = [&](const Operand& p) {
    const std::string name = fresh(p.name + "_per_channel");
    if (p.value != nullptr) {
      init_tensor(name, p.value->reshape(per_channel));
    } else {
      add("Reshape", {p.name, init_i64(name + "_shape", per_channel)}, {name});
    }
    return name;
  };
  std::string y = back;
  if (has_w) {
    const std::string scaled = has_b ? fresh(out.name + "_scaled") : out.name;
    add("Mul", {y, channel_view(in[1])}, {scaled});
    y = scaled;
  }
  if (has_b) add("Add", {y, channel_view(in[2])}, {out.name});
}

void Exporter::embedding(const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  if (in.size() < 2 || !in[0].present() || !in[1].present()) unsupported("it lacks its indices or weight");
  if (const Value* mn = attrs.find("max_norm"); mn != nullptr && !mn->is_none()) {
    unsupported("embedding with max_norm renormalizes the weight rows it reads (no ONNX form)");
  }
  if (is_floating_point(in[0].dtype) || in[0].dtype == kBool) unsupported("embedding indices are not integers");
  // padding_idx only stops the gradient: the forward is a plain row lookup.
  set_int(add("Gather", {in[1].name, cast(in[0], kInt64)}, {out.name}), "axis", 0);
}

// ---- reductions ----

void Exporter::reduce(const std::string& op, const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  if (in.empty() || !in[0].present()) unsupported("it has no input");
  const size_t rank = in[0].shape.size();
  std::vector<int64_t> axes;
  for (int64_t d : jit::attr_ints(attrs, "dim")) axes.push_back(norm_dim(d, rank));
  const bool keep = jit::attr_bool(attrs, "keepdim", false);
  const std::string x = cast(in[0], out.dtype);  // sum's and mean's dtype, sum of ints as int64
  if (rank == 0) {
    add("Identity", {x}, {out.name});
    return;
  }
  pb::NodeProto* n;
  if (op == "sum") {
    // ReduceSum takes its axes as an input from opset 13; an empty list reduces every dim.
    std::vector<std::string> ins{x};
    if (!axes.empty()) ins.push_back(init_i64(out.name + "_axes", axes));
    n = add("ReduceSum", ins, {out.name});
  } else {
    n = add(op == "mean" ? "ReduceMean" : op == "amax" ? "ReduceMax" : "ReduceMin", {x}, {out.name});
    if (!axes.empty()) set_ints(n, "axes", axes);
  }
  set_int(n, "keepdims", keep ? 1 : 0);
}

// ---- slices, selections, joins ----

void Exporter::slice(const Operand& x, int64_t dim, int64_t start, int64_t end, int64_t step, const std::string& out) {
  const std::string base = out + "_slice";
  std::vector<std::string> ins{x.name, init_i64(base + "_starts", {start}), init_i64(base + "_ends", {end}),
                               init_i64(base + "_axes", {dim})};
  if (step != 1) ins.push_back(init_i64(base + "_steps", {step}));
  add("Slice", ins, {out});
}

void Exporter::select(const Operand& x, int64_t dim, int64_t index, const std::string& out) {
  const SymInt& size = x.shape.at(static_cast<size_t>(dim));
  if (index < 0 && size.is_static()) index += size.b;  // Gather reads negative indices too
  const std::string name = fresh(out + "_index");
  pb::TensorProto* p = gp_->add_initializer();  // rank 0: the dim is dropped, as select does
  p->set_name(name);
  p->set_data_type(pb::TensorProto_DataType_INT64);
  p->add_int64_data(index);
  set_int(add("Gather", {x.name, name}, {out}), "axis", dim);
}

void Exporter::multi(const std::string& op, const std::vector<Operand>& in, const Dict& attrs,
                     const std::vector<Result>& outs) {
  if (op != "chunk" && op != "split" && op != "unbind") {
    unsupported("it has " + std::to_string(outs.size()) +
                " outputs; the exporter converts chunk, split and unbind among the ops with several");
  }
  if (in.empty() || !in[0].present()) unsupported("it has no input");
  const Operand& x = in[0];
  const int64_t d = norm_dim(jit::attr_int(attrs, "dim", 0), x.shape.size());
  if (op == "unbind") {
    for (size_t k = 0; k < outs.size(); ++k) select(x, d, static_cast<int64_t>(k), outs[k].name);
    return;
  }
  int64_t offset = 0;
  for (const Result& r : outs) {
    const SymInt& size = r.shape.at(static_cast<size_t>(d));
    if (!size.is_static()) unsupported(op + " along a dim that follows the batch");
    slice(x, d, offset, offset + size.b, 1, r.name);
    offset += size.b;
  }
}

void Exporter::expand(const Operand& x, const Result& out) {
  // Expand broadcasts: a 1 in the target keeps the input's dim, so a dim that follows the
  // batch and is already the input's needs no size at run time.
  const size_t r = out.shape.size(), xr = x.shape.size();
  std::vector<int64_t> target;
  bool known = true;
  for (size_t k = 0; k < r; ++k) {
    const SymInt& s = out.shape[k];
    if (s.is_static()) {
      target.push_back(s.b);
    } else if (k + xr >= r && x.shape[k + xr - r] == s) {
      target.push_back(1);
    } else {
      known = false;
    }
  }
  const std::string shape = known ? init_i64(out.name + "_shape", target) : shape_of(out.shape, out.name + "_shape");
  add("Expand", {x.name, shape}, {out.name});
}

// ---- creation ----

void Exporter::creation(const std::string& op, const Dict& attrs, const Result& out) {
  bool dynamic = false;
  for (const SymInt& s : out.shape) dynamic = dynamic || !s.is_static();
  if (!dynamic) {
    // The values are the op's own, computed now: the graph holds them as a constant.
    const jit::OpDef* def = jit::find_op(op);
    if (def == nullptr) unsupported("the op is not in the graph op set");
    init_tensor(out.name, jit::call_op(*def, {}, attrs).at(0));
    return;
  }
  if (op == "arange") unsupported("arange with a length that follows the batch");
  double fill = op == "ones" ? 1.0 : 0.0;
  if (op == "full") {
    const Value* v = attrs.find("fill_value");
    if (!is_scalar_number(v)) unsupported("full without a number 'fill_value'");
    fill = v->is_bool() ? (v->to_bool() ? 1.0 : 0.0) : v->to_double();
  }
  pb::NodeProto* n = add("ConstantOfShape", {shape_of(out.shape, out.name + "_shape")}, {out.name});
  pb::AttributeProto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(pb::AttributeProto_AttributeType_TENSOR);
  const Tensor v = full({1}, Scalar(fill), TensorOptions(out.dtype)).contiguous();
  pb::TensorProto* t = a->mutable_t();
  t->set_data_type(onnx_dtype(out.dtype));
  t->add_dims(1);
  t->set_raw_data(static_cast<const char*>(v.data_ptr()), v.nbytes());
}

// ---- linear algebra, transposed convolution ----

void Exporter::matmul_add(const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  if (in.size() < 3 || !in[0].present() || !in[1].present() || !in[2].present()) {
    unsupported("it lacks one of its three inputs");
  }
  const double beta = jit::attr_double(attrs, "beta", 1.0), alpha = jit::attr_double(attrs, "alpha", 1.0);
  const DType dt = out.dtype;
  // beta * input + alpha * (m1 @ m2); beta = 0 ignores input, NaNs included, as eager does.
  std::string prod = beta == 0.0 && alpha == 1.0 ? out.name : fresh(out.name + "_product");
  add("MatMul", {cast(in[1], dt), cast(in[2], dt)}, {prod});
  if (alpha != 1.0) {
    const std::string scaled = beta == 0.0 ? out.name : fresh(out.name + "_scaled");
    add("Mul", {prod, init_scalar(out.name + "_alpha", dt, alpha)}, {scaled});
    prod = scaled;
  }
  if (beta == 0.0) return;
  std::string base = cast(in[0], dt);
  if (beta != 1.0 && in[0].value != nullptr) {
    // A constant input (a bias) is scaled now (OpenCV 4.6 refuses Mul of two constants).
    base = fresh(in[0].name + "_scaled");
    init_tensor(base, (in[0].value->to(dt) * beta).contiguous());
  } else if (beta != 1.0) {
    const std::string b = fresh(out.name + "_input_scaled");
    add("Mul", {base, init_scalar(out.name + "_beta", dt, beta)}, {b});
    base = b;
  }
  add("Add", {base, prod}, {out.name});
}

void Exporter::conv_transpose(const std::vector<Operand>& in, const Dict& attrs, const Result& out) {
  if (in.size() < 2 || !in[0].present() || !in[1].present()) unsupported("it lacks its input or weight");
  const std::vector<int64_t> w = static_dims(in[1].shape, "weight");
  if (w.size() != 4) unsupported("the weight is not 4-D");
  const std::string where = node_desc();
  const std::vector<int64_t> stride = repeat_to(jit::attr_ints(attrs, "stride"), 2, "stride", where);
  const std::vector<int64_t> padding = repeat_to(jit::attr_ints(attrs, "padding"), 2, "padding", where);
  const std::vector<int64_t> out_pad = repeat_to(jit::attr_ints(attrs, "output_padding"), 2, "output_padding", where);
  const std::vector<int64_t> dilation = repeat_to(jit::attr_ints(attrs, "dilation"), 2, "dilation", where);
  std::vector<std::string> ins{in[0].name, in[1].name};
  if (in.size() > 2 && in[2].present()) ins.push_back(in[2].name);
  pb::NodeProto* n = add("ConvTranspose", ins, {out.name});
  set_ints(n, "kernel_shape", {w[2], w[3]});
  set_ints(n, "strides", stride);
  set_ints(n, "pads", {padding[0], padding[1], padding[0], padding[1]});
  set_ints(n, "dilations", dilation);
  if (out_pad[0] != 0 || out_pad[1] != 0) set_ints(n, "output_padding", out_pad);
  set_int(n, "group", jit::attr_int(attrs, "groups", 1));
}

}  // namespace ember::onnx::detail

#endif
