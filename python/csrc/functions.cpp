// Module-level functions: ember.zeros/ones/arange/... (creation), cat/stack/where, random
// seeds and threads, and ember._C._nn (torch.nn.functional's C++ part) and _C._init
// (torch.nn.init). Functions that are just a Tensor method with the tensor first
// (ember.exp(x), ember.sum(x, 1)) are made from the methods in ember/__init__.py.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <random>

#include "bind.h"

namespace ember::python {

namespace {

std::vector<Tensor> tensors_arg(py::handle h, const char* op) {
  std::vector<Tensor> out;
  if (!PySequence_Check(h.ptr()) || as_tensor(h))
    throw py::type_error(std::string(op) + "(): argument 'tensors' must be a tuple or list of Tensors, not " +
                         Py_TYPE(h.ptr())->tp_name);
  for (py::handle item : h) {
    const Tensor* t = as_tensor(item);
    if (!t) throw py::type_error(std::string(op) + "(): expected a sequence of Tensors, but found element of type " +
                                 Py_TYPE(item.ptr())->tp_name);
    out.push_back(*t);
  }
  return out;
}

TensorOptions make_opts(py::handle dtype, DType fallback) {
  return TensorOptions(dtype.is_none() ? fallback : dtype.cast<DType>());
}

Tensor finish(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

// zeros(2, 3) / zeros((2, 3)) / zeros([2, 3]) with dtype=, requires_grad=, device=.
template <typename F>
auto factory(const char* name, F&& make) {
  return [name, make](py::args size, py::handle dtype, py::handle device, bool requires_grad) {
    check_device(device, name);
    return finish(make(shape_from_args(size, name), make_opts(dtype, get_default_dtype())), requires_grad);
  };
}

nn::Reduction reduction_arg(const std::string& r, const char* op) {
  if (r == "mean") return nn::Reduction::Mean;
  if (r == "sum") return nn::Reduction::Sum;
  if (r == "none") return nn::Reduction::None;
  if (r == "batchmean") return nn::Reduction::BatchMean;
  throw py::value_error(std::string(op) + "(): reduction='" + r + "' is not a valid value; use 'none', 'mean' or 'sum'");
}

Tensor opt_tensor(py::handle h) { return h.is_none() ? Tensor() : h.cast<Tensor>(); }

std::vector<int64_t> ints(py::handle h, const char* op, const char* arg) {
  if (h.is_none()) return {};
  return to_int_list(h, op, arg);
}

}  // namespace

void init_functions(py::module_& m) {
  m.def("zeros", factory("zeros", [](std::vector<int64_t> s, TensorOptions o) { return zeros(s, o); }), py::kw_only(),
        py::arg("dtype") = py::none(), py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def("ones", factory("ones", [](std::vector<int64_t> s, TensorOptions o) { return ones(s, o); }), py::kw_only(),
        py::arg("dtype") = py::none(), py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def("empty", factory("empty", [](std::vector<int64_t> s, TensorOptions o) { return empty(s, o); }), py::kw_only(),
        py::arg("dtype") = py::none(), py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def("rand", factory("rand", [](std::vector<int64_t> s, TensorOptions o) { return rand(s, o); }), py::kw_only(),
        py::arg("dtype") = py::none(), py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def("randn", factory("randn", [](std::vector<int64_t> s, TensorOptions o) { return randn(s, o); }), py::kw_only(),
        py::arg("dtype") = py::none(), py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def("full", [](py::handle size, py::handle value, py::handle dtype, py::handle device, bool rg) {
        check_device(device, "full");
        const Scalar v = to_scalar(value, "full");
        DType fallback = v.is_floating_point() ? get_default_dtype() : v.is_boolean() ? kBool : kInt64;
        return finish(full(to_int_list(size, "full", "size"), v, make_opts(dtype, fallback)), rg);
      }, py::arg("size"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  auto like = [](Tensor (*fn)(const Tensor&, const TensorOptions&)) {
    return [fn](const Tensor& t, py::handle dtype, py::handle device, bool rg) {
      check_device(device, "*_like");
      return finish(fn(t, make_opts(dtype, t.dtype())), rg);
    };
  };
  m.def("zeros_like", like(&zeros_like), py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(),
        py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def("ones_like", like(&ones_like), py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(),
        py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def("empty_like", like(&empty_like), py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(),
        py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def("rand_like", [](const Tensor& t, py::handle dtype, py::handle device, bool rg) {
        check_device(device, "rand_like");
        return finish(rand(t.sizes(), make_opts(dtype, t.dtype())), rg);
      }, py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false);
  m.def("randn_like", [](const Tensor& t, py::handle dtype, py::handle device, bool rg) {
        check_device(device, "randn_like");
        return finish(randn(t.sizes(), make_opts(dtype, t.dtype())), rg);
      }, py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false);
  m.def("full_like", [](const Tensor& t, py::handle value, py::handle dtype, py::handle device, bool rg) {
        check_device(device, "full_like");
        return finish(full_like(t, to_scalar(value, "full_like"), make_opts(dtype, t.dtype())), rg);
      }, py::arg("input"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def("arange", [](py::handle a, py::handle b, py::handle step, py::handle dtype, py::handle device, bool rg) {
        check_device(device, "arange");
        auto is_float = [](py::handle h) { return !h.is_none() && PyFloat_Check(h.ptr()); };
        const DType fallback = is_float(a) || is_float(b) || is_float(step) ? get_default_dtype() : kInt64;
        const TensorOptions o = make_opts(dtype, fallback);
        if (b.is_none()) return finish(arange(to_scalar(a, "arange"), o), rg);
        return finish(arange(to_scalar(a, "arange"), to_scalar(b, "arange"), step.is_none() ? Scalar(1) : to_scalar(step, "arange"), o), rg);
      }, py::arg("start"), py::arg("end") = py::none(), py::arg("step") = py::none(), py::kw_only(),
      py::arg("dtype") = py::none(), py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def("linspace", [](py::handle a, py::handle b, int64_t steps, py::handle dtype, py::handle device, bool rg) {
        check_device(device, "linspace");
        return finish(linspace(to_scalar(a, "linspace"), to_scalar(b, "linspace"), steps, make_opts(dtype, get_default_dtype())), rg);
      }, py::arg("start"), py::arg("end"), py::arg("steps"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def("eye", [](int64_t n, std::optional<int64_t> cols, py::handle dtype, py::handle device, bool rg) {
        check_device(device, "eye");
        const TensorOptions o = make_opts(dtype, get_default_dtype());
        return finish(cols ? eye(n, *cols, o) : eye(n, o), rg);
      }, py::arg("n"), py::arg("m") = py::none(), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def("randint", [](py::args args, py::handle dtype, py::handle device, bool rg) {
        check_device(device, "randint");
        // randint(high, size) / randint(low, high, size)
        if (args.size() == 2)
          return finish(randint(args[0].cast<int64_t>(), to_int_list(args[1], "randint", "size"), make_opts(dtype, kInt64)), rg);
        if (args.size() == 3)
          return finish(randint(args[0].cast<int64_t>(), args[1].cast<int64_t>(), to_int_list(args[2], "randint", "size"),
                                make_opts(dtype, kInt64)), rg);
        throw py::type_error("randint(): expected (high, size) or (low, high, size)");
      }, py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def("randperm", [](int64_t n, py::handle dtype, py::handle device, bool rg) {
        check_device(device, "randperm");
        return finish(randperm(n, make_opts(dtype, kInt64)), rg);
      }, py::arg("n"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false);
  m.def("scalar_tensor", [](py::handle v, py::handle dtype) {
        return scalar_tensor(to_scalar(v, "scalar_tensor"), make_opts(dtype, get_default_dtype()));
      }, py::arg("s"), py::kw_only(), py::arg("dtype") = py::none());

  // ---- joining ----
  m.def("cat", [](py::handle ts, int64_t dim) {
        const auto v = tensors_arg(ts, "cat");
        return without_gil([&] { return cat(v, dim); });
      }, py::arg("tensors"), py::arg("dim") = 0);
  m.def("concat", [](py::handle ts, int64_t dim) { return cat(tensors_arg(ts, "concat"), dim); }, py::arg("tensors"), py::arg("dim") = 0);
  m.def("stack", [](py::handle ts, int64_t dim) {
        const auto v = tensors_arg(ts, "stack");
        return without_gil([&] { return stack(v, dim); });
      }, py::arg("tensors"), py::arg("dim") = 0);
  m.def("hstack", [](py::handle ts) { return hstack(tensors_arg(ts, "hstack")); }, py::arg("tensors"));
  m.def("vstack", [](py::handle ts) { return vstack(tensors_arg(ts, "vstack")); }, py::arg("tensors"));
  m.def("broadcast_tensors", [](py::args ts) {
        std::vector<Tensor> r = broadcast_tensors(tensors_arg(ts, "broadcast_tensors"));
        py::tuple out(r.size());
        for (size_t i = 0; i < r.size(); ++i) out[i] = wrap(r[i]);
        return out;
      });
  m.def("where", [](const Tensor& cond, py::handle a, py::handle b) -> py::object {
        if (a.is_none() && b.is_none()) {
          Tensor nz = cond.nonzero();
          std::vector<Tensor> cols = nz.unbind(1);
          py::tuple out(cols.size());
          for (size_t i = 0; i < cols.size(); ++i) out[i] = wrap(cols[i]);
          return out;
        }
        const Tensor* ta = as_tensor(a);
        const Tensor* tb = as_tensor(b);
        if (ta && tb) return wrap(where(cond, *ta, *tb));
        if (ta) return wrap(where(cond, *ta, to_scalar(b, "where")));
        if (tb) return wrap(where(cond, to_scalar(a, "where"), *tb));
        const Scalar sa = to_scalar(a, "where"), sb = to_scalar(b, "where");
        const DType dt = sa.is_floating_point() || sb.is_floating_point() ? get_default_dtype() : kInt64;
        return wrap(where(cond, scalar_tensor(sa, TensorOptions(dt)), scalar_tensor(sb, TensorOptions(dt))));
      }, py::arg("condition"), py::arg("input") = py::none(), py::arg("other") = py::none());
  m.def("pow", [](py::handle a, py::handle b) {
        if (const Tensor* ta = as_tensor(a)) {
          if (const Tensor* tb = as_tensor(b)) return pow(*ta, *tb);
          return pow(*ta, to_scalar(b, "pow"));
        }
        return pow(to_scalar(a, "pow"), b.cast<Tensor>());
      }, py::arg("input"), py::arg("exponent"));
  m.def("searchsorted", [](const Tensor& seq, const Tensor& values, bool out_int32, bool right) {
        return searchsorted(seq, values, out_int32, right);
      }, py::arg("sorted_sequence"), py::arg("input"), py::kw_only(), py::arg("out_int32") = false, py::arg("right") = false);
  m.def("unique", [](const Tensor& t, bool sorted, bool return_inverse, bool return_counts) -> py::object {
        auto [u, inv, counts] = unique(t, sorted, return_inverse, return_counts);
        if (!return_inverse && !return_counts) return wrap(u);
        py::list out;
        out.append(wrap(u));
        if (return_inverse) out.append(wrap(inv));
        if (return_counts) out.append(wrap(counts));
        return py::tuple(out);
      }, py::arg("input"), py::arg("sorted") = true, py::arg("return_inverse") = false, py::arg("return_counts") = false);

  // ---- random state, threads ----
  m.def("manual_seed", [](uint64_t seed) { manual_seed(seed); }, py::arg("seed"));
  m.def("seed", []() {
        const uint64_t s = static_cast<uint64_t>(std::random_device{}()) << 32 | std::random_device{}();
        manual_seed(s);
        return s;
      });
  m.def("get_rng_state", &get_rng_state);
  m.def("set_rng_state", &set_rng_state, py::arg("new_state"));
  m.def("set_num_threads", &set_num_threads, py::arg("num"));
  m.def("get_num_threads", &get_num_threads);

  // ---- torch.nn.functional (the C++ part; nn/functional.py adds the rest) ----
  py::module_ nn = m.def_submodule("_nn", "torch.nn.functional's C++ kernels");
  namespace F = ember::nn::functional;
  nn.def("linear", [](const Tensor& x, const Tensor& w, py::handle b) {
         const Tensor bias = opt_tensor(b);
         return without_gil([&] { return F::linear(x, w, bias); });
       },
         py::arg("input"), py::arg("weight"), py::arg("bias") = py::none());
  nn.def("bilinear", [](const Tensor& x1, const Tensor& x2, const Tensor& w, py::handle b) {
         return F::bilinear(x1, x2, w, opt_tensor(b));
       }, py::arg("input1"), py::arg("input2"), py::arg("weight"), py::arg("bias") = py::none());
  // conv1d/conv2d: padding is ints or "same"/"valid"; conv_transpose1d/2d.
  using ConvInts = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, int64_t);
  using ConvStr = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, IntArrayRef, const char*, IntArrayRef, int64_t);
  auto conv = [](const char* name, ConvInts by_ints, ConvStr by_str) {
    return [name, by_ints, by_str](const Tensor& x, const Tensor& w, py::handle b, py::handle stride, py::handle padding,
                                   py::handle dilation, int64_t groups) {
      const auto s = to_int_list(stride, name, "stride"), d = to_int_list(dilation, name, "dilation");
      const Tensor bias = opt_tensor(b);
      if (PyUnicode_Check(padding.ptr())) {
        const std::string p = py::str(padding);
        return without_gil([&] { return by_str(x, w, bias, s, p.c_str(), d, groups); });
      }
      const auto pad = to_int_list(padding, name, "padding");
      return without_gil([&] { return by_ints(x, w, bias, s, pad, d, groups); });
    };
  };
  using TransposedConv = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                                    int64_t, IntArrayRef);
  auto conv_transpose = [](const char* name, TransposedConv fn) {
    return [name, fn](const Tensor& x, const Tensor& w, py::handle b, py::handle stride, py::handle padding,
                      py::handle output_padding, int64_t groups, py::handle dilation) {
      const Tensor bias = opt_tensor(b);
      const auto s = to_int_list(stride, name, "stride"), p = to_int_list(padding, name, "padding");
      const auto op = to_int_list(output_padding, name, "output_padding"), d = to_int_list(dilation, name, "dilation");
      return without_gil([&] { return fn(x, w, bias, s, p, op, groups, d); });
    };
  };
  for (const auto& [name, by_ints, by_str] :
       {std::tuple<const char*, ConvInts, ConvStr>{"conv1d", &ember::conv1d, &ember::conv1d},
        std::tuple<const char*, ConvInts, ConvStr>{"conv2d", &ember::conv2d, &ember::conv2d}}) {
    nn.def(name, conv(name, by_ints, by_str), py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(),
           py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1);
  }
  for (const auto& [name, fn] : {std::pair<const char*, TransposedConv>{"conv_transpose1d", &ember::conv_transpose1d},
                                 std::pair<const char*, TransposedConv>{"conv_transpose2d", &ember::conv_transpose2d}}) {
    nn.def(name, conv_transpose(name, fn), py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(),
           py::arg("stride") = 1, py::arg("padding") = 0, py::arg("output_padding") = 0, py::arg("groups") = 1,
           py::arg("dilation") = 1);
  }
  nn.def("max_pool2d", [](const Tensor& x, py::handle k, py::handle stride, py::handle padding, py::handle dilation,
                          bool ceil_mode, bool return_indices) -> py::object {
         const auto kk = to_int_list(k, "max_pool2d", "kernel_size");
         const auto s = ints(stride, "max_pool2d", "stride");
         const auto p = to_int_list(padding, "max_pool2d", "padding"), d = to_int_list(dilation, "max_pool2d", "dilation");
         if (return_indices) {
           auto [v, i] = max_pool2d_with_indices(x, kk, s, p, d, ceil_mode);
           return py::make_tuple(v, i);
         }
         return wrap(max_pool2d(x, kk, s, p, d, ceil_mode));
       }, py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
       py::arg("dilation") = 1, py::arg("ceil_mode") = false, py::arg("return_indices") = false);
  nn.def("max_pool1d", [](const Tensor& x, py::handle k, py::handle stride, py::handle padding, py::handle dilation,
                          bool ceil_mode) {
         return max_pool1d(x, to_int_list(k, "max_pool1d", "kernel_size"), ints(stride, "max_pool1d", "stride"),
                           to_int_list(padding, "max_pool1d", "padding"), to_int_list(dilation, "max_pool1d", "dilation"),
                           ceil_mode);
       }, py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
       py::arg("dilation") = 1, py::arg("ceil_mode") = false);
  nn.def("avg_pool2d", [](const Tensor& x, py::handle k, py::handle stride, py::handle padding, bool ceil_mode,
                          bool count_include_pad, std::optional<int64_t> divisor_override) {
         return avg_pool2d(x, to_int_list(k, "avg_pool2d", "kernel_size"), ints(stride, "avg_pool2d", "stride"),
                           to_int_list(padding, "avg_pool2d", "padding"), ceil_mode, count_include_pad, divisor_override);
       }, py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
       py::arg("ceil_mode") = false, py::arg("count_include_pad") = true, py::arg("divisor_override") = py::none());
  nn.def("avg_pool1d", [](const Tensor& x, py::handle k, py::handle stride, py::handle padding, bool ceil_mode,
                          bool count_include_pad) {
         return avg_pool1d(x, to_int_list(k, "avg_pool1d", "kernel_size"), ints(stride, "avg_pool1d", "stride"),
                           to_int_list(padding, "avg_pool1d", "padding"), ceil_mode, count_include_pad);
       }, py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
       py::arg("ceil_mode") = false, py::arg("count_include_pad") = true);
  nn.def("adaptive_avg_pool2d", [](const Tensor& x, py::handle size) {
         std::vector<int64_t> s = to_int_list(size, "adaptive_avg_pool2d", "output_size");
         if (s.size() == 1) s.push_back(s[0]);
         return adaptive_avg_pool2d(x, s);
       }, py::arg("input"), py::arg("output_size"));
  nn.def("batch_norm", [](const Tensor& x, py::handle rm, py::handle rv, py::handle w, py::handle b, bool training,
                          double momentum, double eps) {
         const Tensor mean = opt_tensor(rm), var = opt_tensor(rv), weight = opt_tensor(w), bias = opt_tensor(b);
         return without_gil([&] { return F::batch_norm(x, mean, var, weight, bias, training, momentum, eps); });
       }, py::arg("input"), py::arg("running_mean"), py::arg("running_var"), py::arg("weight") = py::none(),
       py::arg("bias") = py::none(), py::arg("training") = false, py::arg("momentum") = 0.1, py::arg("eps") = 1e-5);
  nn.def("layer_norm", [](const Tensor& x, py::handle shape, py::handle w, py::handle b, double eps) {
         const auto ns = to_int_list(shape, "layer_norm", "normalized_shape");
         const Tensor weight = opt_tensor(w), bias = opt_tensor(b);
         return without_gil([&] { return F::layer_norm(x, ns, weight, bias, eps); });
       }, py::arg("input"), py::arg("normalized_shape"), py::arg("weight") = py::none(), py::arg("bias") = py::none(),
       py::arg("eps") = 1e-5);
  nn.def("group_norm", [](const Tensor& x, int64_t groups, py::handle w, py::handle b, double eps) {
         return F::group_norm(x, groups, opt_tensor(w), opt_tensor(b), eps);
       }, py::arg("input"), py::arg("num_groups"), py::arg("weight") = py::none(), py::arg("bias") = py::none(),
       py::arg("eps") = 1e-5);
  nn.def("embedding", [](const Tensor& x, const Tensor& w, std::optional<int64_t> padding_idx,
                         std::optional<double> max_norm, double norm_type) {
         return F::embedding(x, w, padding_idx, max_norm, norm_type);
       }, py::arg("input"), py::arg("weight"), py::arg("padding_idx") = py::none(), py::arg("max_norm") = py::none(),
       py::arg("norm_type") = 2.0);
  nn.def("dropout", static_cast<Tensor (*)(const Tensor&, double, bool)>(&F::dropout), py::arg("input"), py::arg("p") = 0.5, py::arg("training") = true);
  nn.def("leaky_relu", static_cast<Tensor (*)(const Tensor&, double)>(&F::leaky_relu), py::arg("input"), py::arg("negative_slope") = 0.01);
  nn.def("logit", [](const Tensor& x, std::optional<double> eps) { return logit(x, eps); }, py::arg("input"),
         py::arg("eps") = py::none());
  nn.def("scaled_dot_product_attention", [](const Tensor& q, const Tensor& k, const Tensor& v, py::handle mask,
                                            double dropout_p, bool is_causal) {
         return F::scaled_dot_product_attention(q, k, v, opt_tensor(mask), dropout_p, is_causal);
       }, py::arg("query"), py::arg("key"), py::arg("value"), py::arg("attn_mask") = py::none(),
       py::arg("dropout_p") = 0.0, py::arg("is_causal") = false);
  nn.def("pad", [](const Tensor& x, py::handle pad, const std::string& mode, py::handle value) {
         return ember::pad(x, to_int_list(pad, "pad", "pad"), mode, value.is_none() ? 0.0 : value.cast<double>());
       }, py::arg("input"), py::arg("pad"), py::arg("mode") = "constant", py::arg("value") = py::none());
  nn.def("one_hot", &one_hot, py::arg("tensor"), py::arg("num_classes") = -1);
  // Losses: reduction as a string, as torch.
  nn.def("mse_loss", [](const Tensor& x, const Tensor& y, const std::string& r) {
         return F::mse_loss(x, y, reduction_arg(r, "mse_loss"));
       }, py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  nn.def("l1_loss", [](const Tensor& x, const Tensor& y, const std::string& r) {
         return F::l1_loss(x, y, reduction_arg(r, "l1_loss"));
       }, py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  nn.def("smooth_l1_loss", [](const Tensor& x, const Tensor& y, const std::string& r, double beta) {
         return F::smooth_l1_loss(x, y, reduction_arg(r, "smooth_l1_loss"), beta);
       }, py::arg("input"), py::arg("target"), py::arg("reduction") = "mean", py::arg("beta") = 1.0);
  nn.def("huber_loss", [](const Tensor& x, const Tensor& y, const std::string& r, double delta) {
         return F::huber_loss(x, y, reduction_arg(r, "huber_loss"), delta);
       }, py::arg("input"), py::arg("target"), py::arg("reduction") = "mean", py::arg("delta") = 1.0);
  nn.def("nll_loss", [](const Tensor& x, const Tensor& y, py::handle w, int64_t ignore_index, const std::string& r) {
         return F::nll_loss(x, y, opt_tensor(w), ignore_index, reduction_arg(r, "nll_loss"));
       }, py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("ignore_index") = -100,
       py::arg("reduction") = "mean");
  nn.def("cross_entropy", [](const Tensor& x, const Tensor& y, py::handle w, int64_t ignore_index, const std::string& r,
                             double label_smoothing) {
         return F::cross_entropy(x, y, opt_tensor(w), ignore_index, reduction_arg(r, "cross_entropy"), label_smoothing);
       }, py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("ignore_index") = -100,
       py::arg("reduction") = "mean", py::arg("label_smoothing") = 0.0);
  nn.def("binary_cross_entropy", [](const Tensor& x, const Tensor& y, py::handle w, const std::string& r) {
         return F::binary_cross_entropy(x, y, opt_tensor(w), reduction_arg(r, "binary_cross_entropy"));
       }, py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("reduction") = "mean");
  nn.def("binary_cross_entropy_with_logits", [](const Tensor& x, const Tensor& y, py::handle w, const std::string& r,
                                                py::handle pos_weight) {
         return F::binary_cross_entropy_with_logits(x, y, opt_tensor(w), opt_tensor(pos_weight),
                                                    reduction_arg(r, "binary_cross_entropy_with_logits"));
       }, py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("reduction") = "mean",
       py::arg("pos_weight") = py::none());
  nn.def("kl_div", [](const Tensor& x, const Tensor& y, const std::string& r, bool log_target) {
         return F::kl_div(x, y, reduction_arg(r, "kl_div"), log_target);
       }, py::arg("input"), py::arg("target"), py::arg("reduction") = "mean", py::arg("log_target") = false);

  // ---- torch.nn.init ----
  py::module_ init = m.def_submodule("_init", "torch.nn.init's C++ part");
  namespace I = ember::nn::init;
  init.def("calculate_gain", [](const std::string& nl, std::optional<double> param) {
             return I::calculate_gain(nl, param.value_or(0.01));
           }, py::arg("nonlinearity"), py::arg("param") = py::none());
  init.def("_calculate_fan_in_and_fan_out", &I::calculate_fan_in_and_fan_out, py::arg("tensor"));
  // Each initialiser fills the tensor in place under no-grad and returns the same object.
  init.def("uniform_", [](py::object o, double a, double b) {
        I::uniform_(o.cast<Tensor>(), a, b);
        return o;
      }, py::arg("tensor"), py::arg("a") = 0.0, py::arg("b") = 1.0);
  init.def("normal_", [](py::object o, double mean, double std) {
        I::normal_(o.cast<Tensor>(), mean, std);
        return o;
      }, py::arg("tensor"), py::arg("mean") = 0.0, py::arg("std") = 1.0);
  init.def("trunc_normal_", [](py::object o, double mean, double std, double a, double b) {
        I::trunc_normal_(o.cast<Tensor>(), mean, std, a, b);
        return o;
      }, py::arg("tensor"), py::arg("mean") = 0.0, py::arg("std") = 1.0, py::arg("a") = -2.0, py::arg("b") = 2.0);
  init.def("constant_", [](py::object o, double v) {
        I::constant_(o.cast<Tensor>(), v);
        return o;
      }, py::arg("tensor"), py::arg("val"));
  using Fill = Tensor (*)(Tensor);
  for (const auto& [name, fill] : {std::pair<const char*, Fill>{"zeros_", &I::zeros_},
                                   std::pair<const char*, Fill>{"ones_", &I::ones_},
                                   std::pair<const char*, Fill>{"eye_", &I::eye_}}) {
    init.def(name, [fill = fill](py::object o) {
          fill(o.cast<Tensor>());
          return o;
        }, py::arg("tensor"));
  }
  init.def("xavier_uniform_", [](py::object o, double gain) {
        I::xavier_uniform_(o.cast<Tensor>(), gain);
        return o;
      }, py::arg("tensor"), py::arg("gain") = 1.0);
  init.def("xavier_normal_", [](py::object o, double gain) {
        I::xavier_normal_(o.cast<Tensor>(), gain);
        return o;
      }, py::arg("tensor"), py::arg("gain") = 1.0);
  init.def("kaiming_uniform_", [](py::object o, double a, const std::string& mode, const std::string& nl) {
        I::kaiming_uniform_(o.cast<Tensor>(), a, mode, nl);
        return o;
      }, py::arg("tensor"), py::arg("a") = 0.0, py::arg("mode") = "fan_in", py::arg("nonlinearity") = "leaky_relu");
  init.def("kaiming_normal_", [](py::object o, double a, const std::string& mode, const std::string& nl) {
        I::kaiming_normal_(o.cast<Tensor>(), a, mode, nl);
        return o;
      }, py::arg("tensor"), py::arg("a") = 0.0, py::arg("mode") = "fan_in", py::arg("nonlinearity") = "leaky_relu");
  init.def("orthogonal_", [](py::object o, double gain) {
        I::orthogonal_(o.cast<Tensor>(), gain);
        return o;
      }, py::arg("tensor"), py::arg("gain") = 1.0);
}

}  // namespace ember::python
