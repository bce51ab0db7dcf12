// The functional forms of nn/functional_extra.h, composed of ember's differentiable ops.

#include "ember/nn/functional_extra.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/nn/enum_name.h"
#include "ember/nn/functional.h"
#include "ember/nn/loss.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/linalg.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/pool.h"

namespace ember::nn::functional {

namespace {

DimVector expand_dims(IntArrayRef v, size_t d, const char* op, const char* what) {
  if (v.size() == d) return DimVector(v);
  EMBER_CHECK(v.size() == 1, "[", op, "] ", what, " must have 1 or ", d, " values, got ", v.size());
  return DimVector(d, v[0]);
}

Tensor reduce(const Tensor& loss, Reduction r, const char* op) {
  switch (r) {
    case Reduction::None: return loss;
    case Reduction::Sum: return loss.sum();
    case Reduction::Mean: return loss.mean();
    case Reduction::BatchMean: break;
  }
  EMBER_ERROR("[", op, "] reduction 'batchmean' is only for kl_div; use mean, sum or none");
}

Tensor finish(const Tensor& input, const Tensor& out, bool inplace) {
  if (!inplace) return out;
  Tensor t = input;
  t.copy_(out);
  return t;
}

// input with a batch dim: [N, C, *spatial] (an unbatched [C, *spatial] gets N = 1).
Tensor batched(const Tensor& input, size_t spatial, const char* op, bool& unbatched) {
  const int64_t d = input.dim();
  EMBER_CHECK(d == static_cast<int64_t>(spatial) + 1 || d == static_cast<int64_t>(spatial) + 2, "[", op,
              "] expected a ", spatial + 1, "-D (unbatched) or ", spatial + 2, "-D (batched) input, got ",
              input.sizes());
  unbatched = d == static_cast<int64_t>(spatial) + 1;
  return unbatched ? input.unsqueeze(0) : input;
}
Tensor unbatch(const Tensor& t, bool unbatched) { return unbatched ? t.squeeze(0) : t; }

// Sliding windows over the last D dims of x: [..., o_1..o_D, k_1..k_D] (dilation applied).
Tensor windows(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef dil) {
  const size_t D = k.size();
  const int64_t first = x.dim() - static_cast<int64_t>(D);
  Tensor w = x;
  for (size_t i = 0; i < D; ++i) {
    const int64_t span = dil[i] * (k[i] - 1) + 1;
    w = w.unfold(first + static_cast<int64_t>(i), span, s[i]);
    if (dil[i] > 1) w = w.slice(-1, 0, span, dil[i]);
  }
  return w;
}

struct PoolGeometry {
  DimVector k, s, p, d, out, extra;  // extra: right padding that ceil_mode needs
};

PoolGeometry pool_geometry(const Tensor& x, size_t D, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                           IntArrayRef dilation, bool ceil_mode, const char* op) {
  PoolGeometry g;
  g.k = expand_dims(kernel, D, op, "kernel_size");
  g.s = stride.empty() ? g.k : expand_dims(stride, D, op, "stride");
  g.p = expand_dims(padding, D, op, "padding");
  g.d = expand_dims(dilation, D, op, "dilation");
  g.out = DimVector(D, 0);
  g.extra = DimVector(D, 0);
  for (size_t i = 0; i < D; ++i) {
    const int64_t L = x.size(x.dim() - static_cast<int64_t>(D) + static_cast<int64_t>(i));
    EMBER_CHECK(g.k[i] > 0 && g.s[i] > 0 && g.d[i] > 0, "[", op, "] kernel_size, stride and dilation must be positive");
    EMBER_CHECK(g.p[i] >= 0 && g.p[i] * 2 <= g.k[i], "[", op, "] padding ", g.p[i],
                " must be at most half the kernel size ", g.k[i]);
    const int64_t span = g.d[i] * (g.k[i] - 1) + 1;
    const int64_t avail = L + 2 * g.p[i] - span;
    EMBER_CHECK(avail >= 0, "[", op, "] the window (", span, ") is larger than the padded input (", L + 2 * g.p[i],
                ") in spatial dim ", i, "; input ", x.sizes());
    int64_t o = (ceil_mode ? (avail + g.s[i] - 1) / g.s[i] : avail / g.s[i]) + 1;
    if (ceil_mode && (o - 1) * g.s[i] >= L + g.p[i]) --o;
    g.out[i] = o;
    g.extra[i] = std::max<int64_t>(0, (o - 1) * g.s[i] + span - (L + 2 * g.p[i]));
  }
  return g;
}

// Pads the last D dims: p on both sides plus extra on the right.
Tensor pad_spatial(const Tensor& x, const PoolGeometry& g, double value) {
  const size_t D = g.k.size();
  std::vector<int64_t> pads;
  bool any = false;
  for (size_t j = 0; j < D; ++j) {
    const size_t i = D - 1 - j;
    pads.push_back(g.p[i]);
    pads.push_back(g.p[i] + g.extra[i]);
    any = any || g.p[i] || g.extra[i];
  }
  return any ? ember::pad(x, pads, "constant", value) : x;
}

DimVector sub(IntArrayRef v, int64_t from, int64_t to) {
  DimVector out;
  for (int64_t i = from; i < to; ++i) out.push_back(v[static_cast<size_t>(i)]);
  return out;
}

int64_t prod(IntArrayRef v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

std::tuple<Tensor, Tensor> max_pool_nd(const Tensor& input, size_t D, const MaxPoolOptions& o, bool want_indices,
                                       const char* op) {
  OpScope scope(op, {&input});
  bool unb = false;
  Tensor x = batched(input, D, op, unb);
  PoolGeometry g = pool_geometry(x, D, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode(), op);
  Tensor xp = pad_spatial(x, g, -std::numeric_limits<double>::infinity());
  Tensor w = windows(xp, g.k, g.s, g.d);  // [N, C, o..., k...]
  DimVector flat = sub(w.sizes(), 0, 2 + static_cast<int64_t>(D));
  flat.push_back(prod(g.k));
  w = w.reshape(flat);
  Tensor am = w.argmax(-1, true);
  Tensor out = w.gather(-1, am).squeeze(-1);
  Tensor idx;
  if (want_indices) {
    DimVector sp = sub(x.sizes(), x.dim() - static_cast<int64_t>(D), x.dim());
    Tensor plane = arange(prod(sp), TensorOptions(kInt64)).view(sp);
    Tensor pw = windows(pad_spatial(plane, g, -1), g.k, g.s, g.d);
    DimVector pflat = sub(pw.sizes(), 0, static_cast<int64_t>(D));
    pflat.push_back(prod(g.k));
    pw = pw.reshape(pflat).expand(w.sizes());
    idx = unbatch(pw.gather(-1, am).squeeze(-1), unb);
  }
  return {unbatch(out, unb), idx};
}

Tensor avg_pool_nd(const Tensor& input, size_t D, const AvgPoolOptions& o, const char* op) {
  OpScope scope(op, {&input});
  bool unb = false;
  Tensor x = batched(input, D, op, unb);
  PoolGeometry g = pool_geometry(x, D, o.kernel_size(), o.stride(), o.padding(), DimVector{1}, o.ceil_mode(), op);
  Tensor w = windows(pad_spatial(x, g, 0.0), g.k, g.s, g.d);
  std::vector<int64_t> wd;
  for (size_t i = 0; i < D; ++i) wd.push_back(-1 - static_cast<int64_t>(i));
  Tensor sum = w.sum(wd);
  Tensor out;
  if (o.divisor_override()) {
    out = sum / static_cast<double>(*o.divisor_override());
  } else {
    // The divisor of each window: its cells inside the input (or, with count_include_pad,
    // inside the padded input but not the extra ceil_mode cells).
    DimVector sp = sub(x.sizes(), x.dim() - static_cast<int64_t>(D), x.dim());
    Tensor mask = ones(sp, x.options());
    if (o.count_include_pad()) {
      PoolGeometry g0 = g;
      g0.extra = DimVector(D, 0);
      mask = pad_spatial(mask, g0, 1.0);
      PoolGeometry g1 = g;
      g1.p = DimVector(D, 0);
      mask = pad_spatial(mask, g1, 0.0);
    } else {
      mask = pad_spatial(mask, g, 0.0);
    }
    Tensor cnt = windows(mask, g.k, g.s, g.d).sum(wd);
    out = sum / cnt;
  }
  return unbatch(out, unb);
}

// Adaptive pooling one spatial dim at a time (bins: [floor(i L / O), ceil((i + 1) L / O))).
std::tuple<Tensor, Tensor> adaptive_pool_nd(const Tensor& input, size_t D, IntArrayRef output_size, bool is_max,
                                            const char* op) {
  OpScope scope(op, {&input});
  bool unb = false;
  Tensor x = batched(input, D, op, unb);
  DimVector os = expand_dims(output_size, D, op, "output_size");
  Tensor idx;
  if (is_max) {
    DimVector sp = sub(x.sizes(), x.dim() - static_cast<int64_t>(D), x.dim());
    idx = arange(prod(sp), TensorOptions(kInt64)).view(sp).expand(x.sizes());
  }
  for (size_t i = 0; i < D; ++i) {
    const int64_t dim = x.dim() - static_cast<int64_t>(D) + static_cast<int64_t>(i);
    const int64_t L = x.size(dim);
    const int64_t O = os[i] < 0 ? L : os[i];
    EMBER_CHECK(O > 0, "[", op, "] output_size must be positive, got ", output_size);
    std::vector<Tensor> vals, ids;
    for (int64_t j = 0; j < O; ++j) {
      const int64_t start = (j * L) / O;
      const int64_t end = ((j + 1) * L + O - 1) / O;
      Tensor seg = x.narrow(dim, start, end - start);
      if (is_max) {
        Tensor am = seg.argmax(dim, true);
        vals.push_back(seg.gather(dim, am));
        ids.push_back(idx.narrow(dim, start, end - start).gather(dim, am));
      } else {
        vals.push_back(seg.mean(IntArrayRef(dim), true));
      }
    }
    x = cat(vals, dim);
    if (is_max) idx = cat(ids, dim);
  }
  return {unbatch(x, unb), is_max ? unbatch(idx, unb) : Tensor()};
}

std::tuple<Tensor, Tensor> fractional_max_pool_nd(const Tensor& input, size_t D, IntArrayRef kernel,
                                                  const std::optional<std::vector<int64_t>>& output_size,
                                                  const std::optional<std::vector<double>>& output_ratio,
                                                  const Tensor& samples, const char* op) {
  OpScope scope(op, {&input, &samples});
  bool unb = false;
  Tensor x = batched(input, D, op, unb);
  EMBER_CHECK(output_size.has_value() != output_ratio.has_value(), "[", op,
              "] give exactly one of output_size and output_ratio");
  DimVector k = expand_dims(kernel, D, op, "kernel_size");
  std::vector<double> u(D);
  if (samples.defined()) {
    EMBER_CHECK(samples.dim() == 3 && samples.size(2) == static_cast<int64_t>(D), "[", op,
                "] _random_samples must be [N, C, ", D, "], got ", samples.sizes());
    Tensor first = samples.select(0, 0).select(0, 0).to(kFloat64).contiguous();
    for (size_t i = 0; i < D; ++i) u[i] = first[static_cast<int64_t>(i)].item<double>();
  } else {
    Tensor r = empty({static_cast<int64_t>(D)}, TensorOptions(kFloat64));
    r.uniform_(0.0, 1.0);
    for (size_t i = 0; i < D; ++i) u[i] = r[static_cast<int64_t>(i)].item<double>();
  }
  const int64_t first = x.dim() - static_cast<int64_t>(D);
  Tensor w = x;
  Tensor plane;
  {
    DimVector sp = sub(x.sizes(), first, x.dim());
    plane = arange(prod(sp), TensorOptions(kInt64)).view(sp);
  }
  for (size_t i = 0; i < D; ++i) {
    const int64_t L = x.size(first + static_cast<int64_t>(i));
    int64_t O;
    if (output_size) {
      const auto& v = *output_size;
      O = v.size() == 1 ? v[0] : v.at(i);
    } else {
      const auto& v = *output_ratio;
      O = static_cast<int64_t>(static_cast<double>(L) * (v.size() == 1 ? v[0] : v.at(i)));
    }
    EMBER_CHECK(O > 0 && O + k[i] - 1 <= L, "[", op, "] output size ", O, " with kernel ", k[i],
                " does not fit the input size ", L, " in spatial dim ", i);
    std::vector<int64_t> starts(static_cast<size_t>(O));
    const double alpha = O > 1 ? static_cast<double>(L - k[i]) / static_cast<double>(O - 1) : 0.0;
    for (int64_t j = 0; j < O; ++j) {
      starts[static_cast<size_t>(j)] =
          j == O - 1 ? L - k[i]
                     : static_cast<int64_t>(std::floor((static_cast<double>(j) + u[i]) * alpha)) -
                           static_cast<int64_t>(std::floor(u[i] * alpha));
    }
    Tensor st = tensor(starts);
    w = w.unfold(first + static_cast<int64_t>(i), k[i], 1).index_select(first + static_cast<int64_t>(i), st);
    plane = plane.unfold(static_cast<int64_t>(i), k[i], 1).index_select(static_cast<int64_t>(i), st);
  }
  DimVector flat = sub(w.sizes(), 0, w.dim() - static_cast<int64_t>(D));
  flat.push_back(prod(k));
  w = w.reshape(flat);
  DimVector pflat = sub(plane.sizes(), 0, plane.dim() - static_cast<int64_t>(D));
  pflat.push_back(prod(k));
  Tensor pw = plane.reshape(pflat).expand(w.sizes());
  Tensor am = w.argmax(-1, true);
  return {unbatch(w.gather(-1, am).squeeze(-1), unb), unbatch(pw.gather(-1, am).squeeze(-1), unb)};
}

Tensor lp_pool_nd(const Tensor& input, size_t D, double norm_type, IntArrayRef k, IntArrayRef s, bool ceil_mode,
                  const char* op) {
  OpScope scope(op, {&input});
  AvgPoolOptions ao(k);
  ao.stride(s).ceil_mode(ceil_mode);
  Tensor out = avg_pool_nd(input.pow(norm_type), D, ao, op);
  return (out.sign() * out.abs().relu()).mul(static_cast<double>(prod(k))).pow(1.0 / norm_type);
}

Tensor max_unpool_nd(const Tensor& input, const Tensor& indices, size_t D, IntArrayRef kernel, IntArrayRef stride,
                     IntArrayRef padding, const std::optional<std::vector<int64_t>>& output_size, const char* op) {
  OpScope scope(op, {&input, &indices});
  bool unb = false;
  Tensor x = batched(input, D, op, unb);
  Tensor ix = unb ? indices.unsqueeze(0) : indices;
  EMBER_CHECK(ix.sizes() == x.sizes(), "[", op, "] indices ", indices.sizes(), " must have the shape of the input ",
              input.sizes());
  DimVector k = expand_dims(kernel, D, op, "kernel_size"), s = expand_dims(stride, D, op, "stride"),
            p = expand_dims(padding, D, op, "padding");
  DimVector out;
  if (output_size) {
    std::vector<int64_t> v = *output_size;
    if (v.size() > D) v.erase(v.begin(), v.end() - static_cast<int64_t>(D));
    EMBER_CHECK(v.size() == D, "[", op, "] output_size must have ", D, " (or ", D + 2, ") values");
    out = DimVector(IntArrayRef(v));
  } else {
    out = DimVector(D, 0);
    for (size_t i = 0; i < D; ++i) {
      out[i] = (x.size(x.dim() - static_cast<int64_t>(D) + static_cast<int64_t>(i)) - 1) * s[i] - 2 * p[i] + k[i];
    }
  }
  const int64_t N = x.size(0), C = x.size(1);
  Tensor z = zeros({N, C, prod(out)}, x.options());
  Tensor r = z.scatter(2, ix.reshape({N, C, -1}), x.reshape({N, C, -1}));
  DimVector shape{N, C};
  for (int64_t v : out) shape.push_back(v);
  return unbatch(r.view(shape), unb);
}

Tensor conv_padding_same(const Tensor& x, IntArrayRef k, IntArrayRef d, size_t D) {
  std::vector<int64_t> pads;
  for (size_t j = 0; j < D; ++j) {
    const size_t i = D - 1 - j;
    const int64_t total = d[i] * (k[i] - 1);
    pads.push_back(total / 2);
    pads.push_back(total - total / 2);
  }
  return ember::pad(x, pads);
}

}  // namespace

// ---- convolution ----
Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& o) {
  if (!o.padding_str().empty()) {
    return ember::conv1d(input, weight, o.bias(), o.stride(), o.padding_str().c_str(), o.dilation(), o.groups());
  }
  return ember::conv1d(input, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& o) {
  if (!o.padding_str().empty()) {
    return ember::conv2d(input, weight, o.bias(), o.stride(), o.padding_str().c_str(), o.dilation(), o.groups());
  }
  return ember::conv2d(input, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}

Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  OpScope scope("conv3d", {&input, &weight, &bias});
  bool unb = false;
  Tensor x = batched(input, 3, "conv3d", unb);
  EMBER_CHECK(weight.dim() == 5, "[conv3d] weight must be 5-D [out, in / groups, kD, kH, kW], got ", weight.sizes());
  EMBER_CHECK(x.size(1) == weight.size(1) * groups, "[conv3d] input has ", x.size(1), " channels but weight ",
              weight.sizes(), " with groups=", groups, " expects ", weight.size(1) * groups);
  DimVector s = expand_dims(stride, 3, "conv3d", "stride"), p = expand_dims(padding, 3, "conv3d", "padding"),
            d = expand_dims(dilation, 3, "conv3d", "dilation");
  if (p[0] > 0) x = ember::pad(x, {0, 0, 0, 0, p[0], p[0]});
  const int64_t N = x.size(0), C = x.size(1), Dp = x.size(2), kD = weight.size(2);
  const int64_t oD = (Dp - d[0] * (kD - 1) - 1) / s[0] + 1;
  EMBER_CHECK(oD > 0, "[conv3d] the kernel (depth ", kD, ", dilation ", d[0], ") is larger than the padded input depth ",
              Dp, "; input ", input.sizes());
  Tensor acc;
  for (int64_t kd = 0; kd < kD; ++kd) {
    Tensor xs = x.slice(2, kd * d[0], kd * d[0] + (oD - 1) * s[0] + 1, s[0]);  // [N, C, oD, H, W]
    Tensor r = xs.movedim(2, 1).reshape({N * oD, C, x.size(3), x.size(4)});
    Tensor y = ember::conv2d(r, weight.select(2, kd), {}, {s[1], s[2]}, {p[1], p[2]}, {d[1], d[2]}, groups);
    acc = acc.defined() ? acc + y : y;
  }
  Tensor out = acc.reshape({N, oD, acc.size(1), acc.size(2), acc.size(3)}).movedim(1, 2);
  if (bias.defined()) out = out + bias.view({1, -1, 1, 1, 1});
  return unbatch(out, unb);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& o) {
  if (o.padding_str() == "same") {
    return conv3d(conv_padding_same(input, sub(weight.sizes(), 2, 5), o.dilation(), 3), weight, o.bias(), o.stride(), 0,
                  o.dilation(), o.groups());
  }
  return conv3d(input, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const ConvTranspose1dFuncOptions& o) {
  return ember::conv_transpose1d(input, weight, o.bias(), o.stride(), o.padding(), o.output_padding(), o.groups(),
                                 o.dilation());
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const ConvTranspose2dFuncOptions& o) {
  return ember::conv_transpose2d(input, weight, o.bias(), o.stride(), o.padding(), o.output_padding(), o.groups(),
                                 o.dilation());
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  OpScope scope("conv_transpose3d", {&input, &weight, &bias});
  bool unb = false;
  Tensor x = batched(input, 3, "conv_transpose3d", unb);
  EMBER_CHECK(weight.dim() == 5, "[conv_transpose3d] weight must be 5-D [in, out / groups, kD, kH, kW], got ",
              weight.sizes());
  EMBER_CHECK(x.size(1) == weight.size(0), "[conv_transpose3d] input has ", x.size(1), " channels but weight ",
              weight.sizes(), " expects ", weight.size(0));
  DimVector s = expand_dims(stride, 3, "conv_transpose3d", "stride"),
            p = expand_dims(padding, 3, "conv_transpose3d", "padding"),
            op = expand_dims(output_padding, 3, "conv_transpose3d", "output_padding"),
            d = expand_dims(dilation, 3, "conv_transpose3d", "dilation");
  const int64_t N = x.size(0), C = x.size(1), iD = x.size(2), kD = weight.size(2);
  const int64_t full = (iD - 1) * s[0] + d[0] * (kD - 1) + 1 + op[0];
  Tensor r = x.movedim(2, 1).reshape({N * iD, C, x.size(3), x.size(4)});
  Tensor acc;
  for (int64_t kd = 0; kd < kD; ++kd) {
    Tensor y = ember::conv_transpose2d(r, weight.select(2, kd), {}, {s[1], s[2]}, {p[1], p[2]}, {op[1], op[2]},
                                       groups, {d[1], d[2]});
    y = y.reshape({N, iD, y.size(1), y.size(2), y.size(3)}).movedim(1, 2);  // [N, O, iD, h, w]
    if (s[0] > 1) {
      std::vector<Tensor> parts{y};
      for (int64_t t = 1; t < s[0]; ++t) parts.push_back(zeros_like(y));
      y = stack(parts, 3).reshape({N, y.size(1), iD * s[0], y.size(3), y.size(4)}).narrow(2, 0, (iD - 1) * s[0] + 1);
    }
    const int64_t left = kd * d[0];
    y = ember::pad(y, {0, 0, 0, 0, left, full - left - y.size(2)});
    acc = acc.defined() ? acc + y : y;
  }
  const int64_t oD = full - 2 * p[0];
  EMBER_CHECK(oD > 0, "[conv_transpose3d] the output depth would be ", oD, "; reduce padding");
  Tensor out = acc.narrow(2, p[0], oD);
  if (bias.defined()) out = out + bias.view({1, -1, 1, 1, 1});
  return unbatch(out, unb);
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const ConvTranspose3dFuncOptions& o) {
  return conv_transpose3d(input, weight, o.bias(), o.stride(), o.padding(), o.output_padding(), o.groups(),
                          o.dilation());
}

// ---- pooling ----
Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& o) {
  return ember::max_pool1d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& o) {
  return ember::max_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
Tensor max_pool3d(const Tensor& input, const MaxPool3dFuncOptions& o) {
  return std::get<0>(max_pool_nd(input, 3, o, false, "max_pool3d"));
}
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const MaxPool1dFuncOptions& o) {
  return max_pool_nd(input, 1, o, true, "max_pool1d");
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const MaxPool2dFuncOptions& o) {
  return max_pool_nd(input, 2, o, true, "max_pool2d");
}
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, const MaxPool3dFuncOptions& o) {
  return max_pool_nd(input, 3, o, true, "max_pool3d");
}
Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& o) {
  return ember::avg_pool1d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad());
}
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& o) {
  return ember::avg_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                           o.divisor_override());
}
Tensor avg_pool3d(const Tensor& input, const AvgPool3dFuncOptions& o) { return avg_pool_nd(input, 3, o, "avg_pool3d"); }
Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& o) {
  return std::get<0>(adaptive_pool_nd(input, 1, o.output_size(), false, "adaptive_avg_pool1d"));
}
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& o) {
  return std::get<0>(adaptive_pool_nd(input, 2, o.output_size(), false, "adaptive_avg_pool2d"));
}
Tensor adaptive_avg_pool3d(const Tensor& input, const AdaptiveAvgPool3dFuncOptions& o) {
  return std::get<0>(adaptive_pool_nd(input, 3, o.output_size(), false, "adaptive_avg_pool3d"));
}
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& o) {
  return adaptive_pool_nd(input, 1, o.output_size(), true, "adaptive_max_pool1d");
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& o) {
  return adaptive_pool_nd(input, 2, o.output_size(), true, "adaptive_max_pool2d");
}
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& o) {
  return adaptive_pool_nd(input, 3, o.output_size(), true, "adaptive_max_pool3d");
}
Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& o) {
  return std::get<0>(adaptive_max_pool1d_with_indices(input, o));
}
Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& o) {
  return std::get<0>(adaptive_max_pool2d_with_indices(input, o));
}
Tensor adaptive_max_pool3d(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& o) {
  return std::get<0>(adaptive_max_pool3d_with_indices(input, o));
}
std::tuple<Tensor, Tensor> fractional_max_pool2d_with_indices(const Tensor& input,
                                                               const FractionalMaxPool2dFuncOptions& o) {
  std::optional<std::vector<int64_t>> os;
  if (o.output_size()) os = o.output_size()->vec();
  return fractional_max_pool_nd(input, 2, o.kernel_size(), os, o.output_ratio(), o._random_samples(),
                                "fractional_max_pool2d");
}
std::tuple<Tensor, Tensor> fractional_max_pool3d_with_indices(const Tensor& input,
                                                               const FractionalMaxPool3dFuncOptions& o) {
  std::optional<std::vector<int64_t>> os;
  if (o.output_size()) os = o.output_size()->vec();
  return fractional_max_pool_nd(input, 3, o.kernel_size(), os, o.output_ratio(), o._random_samples(),
                                "fractional_max_pool3d");
}
Tensor fractional_max_pool2d(const Tensor& input, const FractionalMaxPool2dFuncOptions& o) {
  return std::get<0>(fractional_max_pool2d_with_indices(input, o));
}
Tensor fractional_max_pool3d(const Tensor& input, const FractionalMaxPool3dFuncOptions& o) {
  return std::get<0>(fractional_max_pool3d_with_indices(input, o));
}
Tensor lp_pool1d(const Tensor& input, const LPPool1dFuncOptions& o) {
  return lp_pool_nd(input, 1, o.norm_type(), o.kernel_size(), o.stride(), o.ceil_mode(), "lp_pool1d");
}
Tensor lp_pool2d(const Tensor& input, const LPPool2dFuncOptions& o) {
  return lp_pool_nd(input, 2, o.norm_type(), o.kernel_size(), o.stride(), o.ceil_mode(), "lp_pool2d");
}
Tensor max_unpool1d(const Tensor& input, const Tensor& indices, const MaxUnpool1dFuncOptions& o) {
  return max_unpool_nd(input, indices, 1, o.kernel_size(), o.stride(), o.padding(), o.output_size(), "max_unpool1d");
}
Tensor max_unpool2d(const Tensor& input, const Tensor& indices, const MaxUnpool2dFuncOptions& o) {
  return max_unpool_nd(input, indices, 2, o.kernel_size(), o.stride(), o.padding(), o.output_size(), "max_unpool2d");
}
Tensor max_unpool3d(const Tensor& input, const Tensor& indices, const MaxUnpool3dFuncOptions& o) {
  return max_unpool_nd(input, indices, 3, o.kernel_size(), o.stride(), o.padding(), o.output_size(), "max_unpool3d");
}

// ---- padding, folding, shuffling, resampling ----
Tensor pad(const Tensor& input, const PadFuncOptions& o) {
  const auto& p = o.pad();
  EMBER_CHECK(p.size() % 2 == 0 && p.size() / 2 <= static_cast<size_t>(input.dim()),
              "[pad] pad must have an even number of values, at most 2 per dim of the input ", input.sizes(),
              "; got ", p.size());
  if (o.mode() != "circular") return ember::pad(input, p, o.mode(), o.value());
  OpScope scope("pad", {&input});
  Tensor x = input;
  for (size_t i = 0; i < p.size() / 2; ++i) {
    const int64_t dim = input.dim() - 1 - static_cast<int64_t>(i);
    const int64_t L = x.size(dim), left = p[2 * i], right = p[2 * i + 1];
    EMBER_CHECK(left <= L && right <= L, "[pad] circular padding (", left, ", ", right,
                ") must not exceed the size ", L, " of dim ", dim);
    std::vector<Tensor> parts;
    if (left > 0) parts.push_back(x.narrow(dim, L - left, left));
    parts.push_back(x);
    if (right > 0) parts.push_back(x.narrow(dim, 0, right));
    x = cat(parts, dim);
  }
  return x;
}

Tensor unfold(const Tensor& input, const UnfoldFuncOptions& o) {
  OpScope scope("unfold", {&input});
  bool unb = false;
  Tensor x = batched(input, 2, "unfold", unb);
  const int64_t p0 = o.padding()[0], p1 = o.padding()[1];
  if (p0 || p1) x = ember::pad(x, {p1, p1, p0, p0});
  Tensor w = windows(x, o.kernel_size(), o.stride(), o.dilation());  // [N, C, oh, ow, kh, kw]
  const int64_t N = w.size(0), C = w.size(1), L = w.size(2) * w.size(3);
  Tensor out = w.permute({0, 1, 4, 5, 2, 3}).reshape({N, C * o.kernel_size()[0] * o.kernel_size()[1], L});
  return unbatch(out, unb);
}

Tensor fold(const Tensor& input, const FoldFuncOptions& o) {
  OpScope scope("fold", {&input});
  const bool unb = input.dim() == 2;
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3,
              "[fold] Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got ", input.dim(),
              "D): pass [N, C * kH * kW, L] or [C * kH * kW, L], got ", input.sizes());
  Tensor x = unb ? input.unsqueeze(0) : input;
  const int64_t kh = o.kernel_size()[0], kw = o.kernel_size()[1], K = kh * kw;
  EMBER_CHECK(x.size(1) % K == 0, "[fold] input dim 1 (", x.size(1), ") must be divisible by the kernel size ", kh,
              "x", kw);
  const int64_t N = x.size(0), C = x.size(1) / K, L = x.size(2);
  const int64_t Hp = o.output_size()[0] + 2 * o.padding()[0], Wp = o.output_size()[1] + 2 * o.padding()[1];
  const int64_t oh = (Hp - o.dilation()[0] * (kh - 1) - 1) / o.stride()[0] + 1;
  const int64_t ow = (Wp - o.dilation()[1] * (kw - 1) - 1) / o.stride()[1] + 1;
  EMBER_CHECK(oh > 0 && ow > 0 && oh * ow == L, "[fold] expected L = ", oh * ow, " blocks for output_size ",
              o.output_size().vec(), ", got ", L);
  std::vector<int64_t> idx;
  idx.reserve(static_cast<size_t>(K * L));
  for (int64_t i = 0; i < kh; ++i) {
    for (int64_t j = 0; j < kw; ++j) {
      for (int64_t a = 0; a < oh; ++a) {
        for (int64_t b = 0; b < ow; ++b) {
          idx.push_back((a * o.stride()[0] + i * o.dilation()[0]) * Wp + b * o.stride()[1] + j * o.dilation()[1]);
        }
      }
    }
  }
  Tensor index = tensor(idx).view({1, 1, K * L}).expand({N, C, K * L});
  Tensor out = zeros({N, C, Hp * Wp}, x.options()).scatter_add(2, index, x.reshape({N, C, K * L}));
  out = out.view({N, C, Hp, Wp}).narrow(2, o.padding()[0], o.output_size()[0]).narrow(3, o.padding()[1],
                                                                                      o.output_size()[1]);
  return unbatch(out, unb);
}

Tensor pixel_shuffle(const Tensor& input, int64_t r) {
  OpScope scope("pixel_shuffle", {&input});
  EMBER_CHECK(input.dim() >= 3 && r > 0 && input.size(-3) % (r * r) == 0, "[pixel_shuffle] expected [*, C * r^2, H, W] ",
              "with r = ", r, ", got ", input.sizes());
  const int64_t c = input.size(-3) / (r * r), h = input.size(-2), w = input.size(-1);
  DimVector lead = sub(input.sizes(), 0, input.dim() - 3);
  const int64_t B = prod(lead);
  Tensor x = input.reshape({B, c, r, r, h, w}).permute({0, 1, 4, 2, 5, 3});
  DimVector out = lead;
  out.push_back(c);
  out.push_back(h * r);
  out.push_back(w * r);
  return x.reshape(out);
}

Tensor pixel_unshuffle(const Tensor& input, int64_t r) {
  OpScope scope("pixel_unshuffle", {&input});
  EMBER_CHECK(input.dim() >= 3 && r > 0 && input.size(-2) % r == 0 && input.size(-1) % r == 0,
              "[pixel_unshuffle] expected [*, C, H, W] with H and W divisible by ", r, ", got ", input.sizes());
  const int64_t c = input.size(-3), h = input.size(-2) / r, w = input.size(-1) / r;
  DimVector lead = sub(input.sizes(), 0, input.dim() - 3);
  const int64_t B = prod(lead);
  Tensor x = input.reshape({B, c, h, r, w, r}).permute({0, 1, 3, 5, 2, 4});
  DimVector out = lead;
  out.push_back(c * r * r);
  out.push_back(h);
  out.push_back(w);
  return x.reshape(out);
}

Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& o) {
  OpScope scope("interpolate", {&input});
  const int64_t D = input.dim() - 2;
  const std::string& mode = o.mode();
  EMBER_CHECK(D >= 1 && D <= 3, "[interpolate] Input Error: Only 3D, 4D and 5D input Tensors supported (got ",
              input.dim(), "D) for the modes: nearest | linear | bilinear | bicubic | trilinear (got ", ::ember::nn::detail::enum_name(mode),
              "); the input is [N, C, *spatial], got ", input.sizes());
  const bool linear = mode == "linear" || mode == "bilinear" || mode == "trilinear";
  const bool cubic = mode == "bicubic";
  const bool exact = mode == "nearest-exact";
  EMBER_CHECK(linear || cubic || exact || mode == "nearest", "[interpolate] mode '", mode,
              "' is not supported; use nearest, nearest-exact, linear, bilinear, bicubic or trilinear");
  // As libtorch 1.13's C++ API: nearest takes no align_corners at all; nearest-exact accepts false.
  EMBER_CHECK(!o.align_corners() || linear || cubic || (exact && !*o.align_corners()),
              "[interpolate] align_corners option can only be set with the interpolating modes: linear | bilinear | "
              "bicubic | trilinear");
  EMBER_CHECK(o.size().has_value() || o.scale_factor().has_value(),
              "[interpolate] either size or scale_factor should be defined");
  EMBER_CHECK(!(o.size().has_value() && o.scale_factor().has_value()),
              "[interpolate] only one of size or scale_factor should be defined");
  const auto list = [](const auto& v) {
    std::ostringstream ss;
    ss << "[";
    for (size_t i = 0; i < v.size(); ++i) ss << (i ? ", " : "") << v[i];
    ss << "]";
    return ss.str();
  };
  if (o.size()) {
    EMBER_CHECK(o.size()->size() == static_cast<size_t>(D) || o.size()->size() == 1,
                "[interpolate] size shape must match input shape. Input is ", D, "D, size is ", list(*o.size()));
  } else {
    EMBER_CHECK(o.scale_factor()->size() == static_cast<size_t>(D) || o.scale_factor()->size() == 1,
                "[interpolate] scale_factor shape must match input shape. Input is ", D, "D, scale_factor size is ",
                list(*o.scale_factor()));
  }
  EMBER_CHECK(!o.antialias() || ((mode == "bilinear" || cubic) && D == 2),
              "[interpolate] Anti-alias option is only supported for bilinear and bicubic modes on 4-D input, got mode '",
              mode, "' and input ", input.sizes());
  if (linear || cubic) {
    const int64_t want = mode == "linear" ? 1 : (mode == "bilinear" || cubic) ? 2 : 3;
    EMBER_CHECK(want == D, "[interpolate] mode '", mode, "' expects a ", want + 2, "-D input, got ", input.sizes());
  }
  const bool align = o.align_corners().value_or(false);
  Tensor x = input;
  for (int64_t i = 0; i < D; ++i) {
    const int64_t dim = 2 + i;
    const int64_t in = input.size(dim);
    int64_t out;
    double scale;  // input / output
    if (o.size()) {
      const auto& v = *o.size();
      out = v.size() == 1 ? v[0] : v[static_cast<size_t>(i)];
      scale = static_cast<double>(in) / static_cast<double>(out);
    } else {
      const auto& v = *o.scale_factor();
      const double f = v.size() == 1 ? v[0] : v[static_cast<size_t>(i)];
      out = static_cast<int64_t>(std::floor(static_cast<double>(in) * f));
      scale = o.recompute_scale_factor().value_or(false) ? static_cast<double>(in) / static_cast<double>(out) : 1.0 / f;
    }
    EMBER_CHECK(out > 0, "[interpolate] the output size must be positive");
    if (o.antialias()) {
      // Note [Antialiased resampling]: each output averages the inputs under a filter
      // (triangle for bilinear, Keys cubic with a = -0.5 for bicubic) stretched by the
      // downsampling factor, weights normalised to sum to one -- PyTorch's (and PIL's)
      // antialias. Per dimension that is a fixed [out, in] matrix, applied as a product so
      // the gradient is the transposed product.
      const double s = align ? (out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0) : scale;
      const double half = cubic ? 2.0 : 1.0;
      const double support = s >= 1.0 ? half * s : half;
      const double invscale = s >= 1.0 ? 1.0 / s : 1.0;
      const auto filter = [cubic](double v) {
        v = std::abs(v);
        if (cubic) {
          constexpr double A = -0.5;
          if (v < 1.0) return ((A + 2.0) * v - (A + 3.0)) * v * v + 1.0;
          if (v < 2.0) return (((v - 5.0) * v + 8.0) * v - 4.0) * A;
          return 0.0;
        }
        return v < 1.0 ? 1.0 - v : 0.0;
      };
      std::vector<double> m(static_cast<size_t>(out * in), 0.0);
      for (int64_t j = 0; j < out; ++j) {
        const double center = s * (static_cast<double>(j) + 0.5);
        const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
        const int64_t hi = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in);
        double total = 0.0;
        for (int64_t t = lo; t < hi; ++t) {
          const double wv = filter((static_cast<double>(t) - center + 0.5) * invscale);
          m[static_cast<size_t>(j * in + t)] = wv;
          total += wv;
        }
        if (total != 0.0) {
          for (int64_t t = lo; t < hi; ++t) m[static_cast<size_t>(j * in + t)] /= total;
        }
      }
      const Tensor wt = tensor(m, TensorOptions(kFloat64)).view({out, in}).to(x.dtype());
      x = matmul(x.transpose(dim, -1), wt.t()).transpose(dim, -1);
      continue;
    }
    if (cubic) {
      // Cubic convolution (A = -0.75) over the four source rows around each output, the
      // source position unclamped and the taps clamped to the edge (as PyTorch's bicubic).
      constexpr double A = -0.75;
      std::array<std::vector<int64_t>, 4> taps;
      std::array<std::vector<double>, 4> w4;
      for (int k = 0; k < 4; ++k) {
        taps[static_cast<size_t>(k)].resize(static_cast<size_t>(out));
        w4[static_cast<size_t>(k)].resize(static_cast<size_t>(out));
      }
      for (int64_t j = 0; j < out; ++j) {
        const double src = align ? (out > 1 ? static_cast<double>(j) * static_cast<double>(in - 1) /
                                                  static_cast<double>(out - 1)
                                            : 0.0)
                                 : (static_cast<double>(j) + 0.5) * scale - 0.5;
        const double f = std::floor(src), t = src - f;
        const auto near = [](double v) { return ((A + 2.0) * v - (A + 3.0)) * v * v + 1.0; };
        const auto far = [](double v) { return ((A * v - 5.0 * A) * v + 8.0 * A) * v - 4.0 * A; };
        const double wk[4] = {far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)};
        for (int k = 0; k < 4; ++k) {
          const auto uj = static_cast<size_t>(j);
          taps[static_cast<size_t>(k)][uj] =
              std::clamp<int64_t>(static_cast<int64_t>(f) - 1 + k, 0, in - 1);
          w4[static_cast<size_t>(k)][uj] = wk[k];
        }
      }
      DimVector wshape(static_cast<size_t>(x.dim()), 1);
      wshape[static_cast<size_t>(dim)] = out;
      Tensor acc;
      for (size_t k = 0; k < 4; ++k) {
        Tensor term = x.index_select(dim, tensor(taps[k])) *
                      tensor(w4[k], TensorOptions(kFloat64)).to(x.dtype()).view(wshape);
        acc = acc.defined() ? acc + term : term;
      }
      x = acc;
      continue;
    }
    if (!linear) {
      std::vector<int64_t> idx(static_cast<size_t>(out));
      for (int64_t j = 0; j < out; ++j) {
        // nearest takes floor(j * scale); nearest-exact the source pixel whose centre is
        // nearest to the output pixel's, floor((j + 0.5) * scale).
        const double src = (static_cast<double>(j) + (exact ? 0.5 : 0.0)) * scale;
        idx[static_cast<size_t>(j)] = std::min<int64_t>(static_cast<int64_t>(std::floor(src)), in - 1);
      }
      x = x.index_select(dim, tensor(idx));
      continue;
    }
    std::vector<int64_t> i0(static_cast<size_t>(out)), i1(static_cast<size_t>(out));
    std::vector<double> w(static_cast<size_t>(out));
    for (int64_t j = 0; j < out; ++j) {
      double src;
      if (align) {
        src = out > 1 ? static_cast<double>(j) * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
      } else {
        src = std::max(0.0, (static_cast<double>(j) + 0.5) * scale - 0.5);
      }
      int64_t a = std::min<int64_t>(static_cast<int64_t>(std::floor(src)), in - 1);
      i0[static_cast<size_t>(j)] = a;
      i1[static_cast<size_t>(j)] = std::min<int64_t>(a + 1, in - 1);
      w[static_cast<size_t>(j)] = src - static_cast<double>(a);
    }
    DimVector wshape(static_cast<size_t>(x.dim()), 1);
    wshape[static_cast<size_t>(dim)] = out;
    Tensor wt = tensor(w, TensorOptions(kFloat64)).to(x.dtype()).view(wshape);
    Tensor a = x.index_select(dim, tensor(i0)), b = x.index_select(dim, tensor(i1));
    x = a + (b - a) * wt;
  }
  return x;
}

namespace {
// grid_sample's coordinate steps, as tensor ops so that the gradient to the grid follows
// (the padding's clamp and reflection included).
Tensor grid_unnormalize(const Tensor& g, int64_t size, bool align) {
  const double s = static_cast<double>(size);
  return align ? (g + 1.0) * ((s - 1.0) / 2.0) : ((g + 1.0) * s - 1.0) / 2.0;
}
// Reflects coordinates into [twice_low / 2, twice_high / 2].
Tensor grid_reflect(const Tensor& x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return x * 0.0;
  const double lo = static_cast<double>(twice_low) / 2.0;
  const double span = static_cast<double>(twice_high - twice_low) / 2.0;
  Tensor in = (x - lo).abs();
  Tensor flips;
  {
    NoGradGuard no_grad;
    flips = (in / span).floor();
  }
  Tensor extra = in - flips * span;
  Tensor even;
  {
    NoGradGuard no_grad;
    even = (flips - (flips / 2.0).floor() * 2.0).eq(0.0);
  }
  return where(even, extra + lo, (extra * -1.0) + (span + lo));
}
Tensor grid_pad(const Tensor& x, int64_t size, const std::string& padding, bool align) {
  if (padding == "border") return x.clamp(0.0, static_cast<double>(size - 1));
  if (padding == "reflection") {
    Tensor r = align ? grid_reflect(x, 0, 2 * (size - 1)) : grid_reflect(x, -1, 2 * size - 1);
    return r.clamp(0.0, static_cast<double>(size - 1));
  }
  return x;
}
// Values of input [N, C, H, W] at integer positions (iy, ix) [N, Ho, Wo] -> [N, C, Ho, Wo];
// positions outside the image read 0.
Tensor grid_gather(const Tensor& input, const Tensor& iy, const Tensor& ix) {
  const int64_t N = input.size(0), C = input.size(1), H = input.size(2), W = input.size(3);
  const int64_t Ho = iy.size(1), Wo = iy.size(2);
  Tensor inside, flat;
  {
    NoGradGuard no_grad;
    inside = iy.ge(0).logical_and(iy.lt(H)).logical_and(ix.ge(0)).logical_and(ix.lt(W));
    flat = where(inside, iy.clamp(0, H - 1) * W + ix.clamp(0, W - 1), zeros_like(iy)).to(kInt64);
    flat = flat.reshape({N, 1, Ho * Wo}).expand({N, C, Ho * Wo});
  }
  Tensor v = input.reshape({N, C, H * W}).gather(2, flat).view({N, C, Ho, Wo});
  return v * inside.unsqueeze(1).to(input.dtype());
}
// Cubic convolution weights (A = -0.75) of the four taps around a fraction t in [0, 1).
std::array<Tensor, 4> cubic_weights(const Tensor& t) {
  constexpr double A = -0.75;
  auto near = [&](const Tensor& x) { return ((x * (A + 2.0) - (A + 3.0)) * x * x) + 1.0; };
  auto far = [&](const Tensor& x) { return ((x * A - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A; };
  return {far(t + 1.0), near(t), near((t * -1.0) + 1.0), far((t * -1.0) + 2.0)};
}
}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& o) {
  OpScope scope("grid_sample", {&input, &grid});
  EMBER_CHECK(input.defined() && grid.defined(), "[grid_sample] input and grid must be defined tensors");
  EMBER_CHECK(input.dim() == 4, "[grid_sample] expected a 4-D input [N, C, H, W], got ", input.sizes(),
              " (5-D volumetric sampling is not supported yet)");
  EMBER_CHECK(grid.dim() == 4 && grid.size(3) == 2 && grid.size(0) == input.size(0),
              "[grid_sample] grid must be [N, H_out, W_out, 2] with N = ", input.size(0), ", got ", grid.sizes());
  EMBER_CHECK(is_floating_point(input.dtype()) && input.dtype() == grid.dtype(),
              "[grid_sample] input and grid must have the same floating dtype, got ", input.dtype(), " and ",
              grid.dtype());
  EMBER_CHECK(input.size(2) > 0 && input.size(3) > 0, "[grid_sample] empty spatial dimensions ", input.sizes());
  const std::string& mode = o.mode();
  const std::string& padding = o.padding_mode();
  EMBER_CHECK(mode == "bilinear" || mode == "nearest" || mode == "bicubic", "[grid_sample] mode '", mode,
              "' is not one of bilinear, nearest, bicubic");
  EMBER_CHECK(padding == "zeros" || padding == "border" || padding == "reflection", "[grid_sample] padding_mode '",
              padding, "' is not one of zeros, border, reflection");
  const bool align = o.align_corners().value_or(false);
  const int64_t H = input.size(2), W = input.size(3);
  Tensor gx = grid.select(3, 0), gy = grid.select(3, 1);
  if (mode == "bicubic") {
    // Taps around the unpadded position; the padding applies to each tap's integer position.
    Tensor x = grid_unnormalize(gx, W, align), y = grid_unnormalize(gy, H, align);
    Tensor x0, y0;
    {
      NoGradGuard no_grad;
      x0 = x.floor();
      y0 = y.floor();
    }
    auto wx = cubic_weights(x - x0), wy = cubic_weights(y - y0);
    Tensor out;
    for (int i = 0; i < 4; ++i) {
      Tensor row;
      for (int j = 0; j < 4; ++j) {
        Tensor tx, ty;
        {
          NoGradGuard no_grad;
          tx = grid_pad(x0 + static_cast<double>(j - 1), W, padding, align);
          ty = grid_pad(y0 + static_cast<double>(i - 1), H, padding, align);
        }
        Tensor v = grid_gather(input, ty.to(kInt64), tx.to(kInt64)) * wx[static_cast<size_t>(j)].unsqueeze(1);
        row = row.defined() ? row + v : v;
      }
      row = row * wy[static_cast<size_t>(i)].unsqueeze(1);
      out = out.defined() ? out + row : row;
    }
    return out;
  }
  Tensor x = grid_pad(grid_unnormalize(gx, W, align), W, padding, align);
  Tensor y = grid_pad(grid_unnormalize(gy, H, align), H, padding, align);
  if (mode == "nearest") {
    Tensor ix, iy;
    {
      NoGradGuard no_grad;
      ix = x.round().to(kInt64);
      iy = y.round().to(kInt64);
    }
    return grid_gather(input, iy, ix);
  }
  Tensor x0, y0;
  {
    NoGradGuard no_grad;
    x0 = x.floor();
    y0 = y.floor();
  }
  Tensor fx = x - x0, fy = y - y0;  // weights of the far corners
  Tensor ix0 = x0.to(kInt64), iy0 = y0.to(kInt64);
  Tensor ix1 = ix0 + 1, iy1 = iy0 + 1;
  Tensor top = grid_gather(input, iy0, ix0) * ((fx * -1.0) + 1.0).unsqueeze(1) +
               grid_gather(input, iy0, ix1) * fx.unsqueeze(1);
  Tensor bottom = grid_gather(input, iy1, ix0) * ((fx * -1.0) + 1.0).unsqueeze(1) +
                  grid_gather(input, iy1, ix1) * fx.unsqueeze(1);
  return top * ((fy * -1.0) + 1.0).unsqueeze(1) + bottom * fy.unsqueeze(1);
}

Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners) {
  OpScope scope("affine_grid", {&theta});
  const bool two = size.size() == 4;
  EMBER_CHECK(two || size.size() == 5, "[affine_grid] affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
              "transforms, respectively. Got size ", size, " (give [N, C, H, W] or [N, C, D, H, W])");
  EMBER_CHECK(std::all_of(size.begin(), size.end(), [](int64_t s) { return s > 0; }),
              "[affine_grid] Expected non-zero, positive output size. Got ", size);
  const int64_t N = size[0];
  EMBER_CHECK(theta.defined() && is_floating_point(theta.dtype()),
              "[affine_grid] Expected theta to have floating point type, but got ",
              theta.defined() ? dtype_name(theta.dtype()) : "an undefined tensor");
  EMBER_CHECK(theta.dim() == 3 && theta.size(0) == N && theta.size(1) == (two ? 2 : 3) &&
                  theta.size(2) == (two ? 3 : 4),
              "[affine_grid] Expected a batch of ", two ? "2D affine matrices of shape Nx2x3" : "3D affine matrices of shape Nx3x4",
              " for size ", size, ". Got ", theta.sizes(), ". (theta is [N, ", two ? "2, 3" : "3, 4",
              "] with N = size[0])");
  auto base = [&](int64_t n) {
    Tensor t = linspace(-1, 1, n, TensorOptions(theta.dtype()));
    if (!align_corners) t = t * (static_cast<double>(n - 1) / static_cast<double>(n));
    if (n == 1) t = zeros({1}, TensorOptions(theta.dtype()));
    return t;
  };
  Tensor grid;
  if (two) {
    const int64_t H = size[2], W = size[3];
    Tensor xs = base(W).view({1, W, 1}).expand({H, W, 1});
    Tensor ys = base(H).view({H, 1, 1}).expand({H, W, 1});
    grid = cat({xs, ys, ones({H, W, 1}, TensorOptions(theta.dtype()))}, 2).reshape({1, H * W, 3});
    return grid.matmul(theta.transpose(1, 2)).view({N, H, W, 2});
  }
  const int64_t Dd = size[2], H = size[3], W = size[4];
  Tensor xs = base(W).view({1, 1, W, 1}).expand({Dd, H, W, 1});
  Tensor ys = base(H).view({1, H, 1, 1}).expand({Dd, H, W, 1});
  Tensor zs = base(Dd).view({Dd, 1, 1, 1}).expand({Dd, H, W, 1});
  grid = cat({xs, ys, zs, ones({Dd, H, W, 1}, TensorOptions(theta.dtype()))}, 3).reshape({1, Dd * H * W, 4});
  return grid.matmul(theta.transpose(1, 2)).view({N, Dd, H, W, 3});
}

// ---- activations ----
Tensor elu(const Tensor& input, const ELUFuncOptions& o) {
  Tensor out = input.clamp_min(0) + o.alpha() * input.clamp_max(0).expm1();
  return finish(input, out, o.inplace());
}
Tensor selu(const Tensor& input, const SELUFuncOptions& o) {
  constexpr double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  Tensor out = scale * (input.clamp_min(0) + alpha * input.clamp_max(0).expm1());
  return finish(input, out, o.inplace());
}
Tensor celu(const Tensor& input, const CELUFuncOptions& o) {
  Tensor out = input.clamp_min(0) + o.alpha() * (input.clamp_max(0) / o.alpha()).expm1();
  return finish(input, out, o.inplace());
}
Tensor glu(const Tensor& input, const GLUFuncOptions& o) {
  EMBER_CHECK(input.dim() > 0, "[glu] does not support a 0-D input");
  const int64_t dim = o.dim() < 0 ? o.dim() + input.dim() : o.dim();
  EMBER_CHECK(dim >= 0 && dim < input.dim() && input.size(dim) % 2 == 0, "[glu] halving dimension ", o.dim(),
              " of ", input.sizes(), " must be even");
  const int64_t h = input.size(dim) / 2;
  return input.narrow(dim, 0, h) * input.narrow(dim, h, h).sigmoid();
}
Tensor gelu(const Tensor& input, const GELUFuncOptions& o) { return input.gelu(o.approximate()); }
Tensor hardshrink(const Tensor& input, const HardshrinkFuncOptions& o) {
  return input * input.abs().gt(o.lambda()).to(input.dtype());
}
Tensor softshrink(const Tensor& input, const SoftshrinkFuncOptions& o) {
  EMBER_CHECK(o.lambda() >= 0, "[softshrink] lambda must be non-negative, got ", o.lambda());
  return input - input.clamp(-o.lambda(), o.lambda());
}
Tensor hardtanh(const Tensor& input, const HardtanhFuncOptions& o) {
  EMBER_CHECK(o.max_val() >= o.min_val(), "[hardtanh] max_val (", o.max_val(), ") must be >= min_val (", o.min_val(),
              ")");
  return finish(input, input.clamp(o.min_val(), o.max_val()), o.inplace());
}
Tensor leaky_relu(const Tensor& input, const LeakyReLUFuncOptions& o) {
  return finish(input, leaky_relu(input, o.negative_slope()), o.inplace());
}
Tensor relu(const Tensor& input, const ReLUFuncOptions& o) { return finish(input, input.relu(), o.inplace()); }
Tensor relu6(const Tensor& input, const ReLU6FuncOptions& o) { return finish(input, input.clamp(0, 6), o.inplace()); }
Tensor rrelu(const Tensor& input, const RReLUFuncOptions& o) {
  Tensor slope;
  if (o.training()) {
    slope = empty(input.sizes(), input.options());
    slope.uniform_(o.lower(), o.upper());
  } else {
    slope = full({}, (o.lower() + o.upper()) / 2, input.options());
  }
  return finish(input, input.clamp_min(0) + slope * input.clamp_max(0), o.inplace());
}
Tensor softplus(const Tensor& input, const SoftplusFuncOptions& o) { return input.softplus(o.beta(), o.threshold()); }
Tensor threshold(const Tensor& input, const ThresholdFuncOptions& o) {
  return finish(input, where(input.gt(o.threshold()), input, Scalar(o.value())), o.inplace());
}
Tensor softsign(const Tensor& input) { return input / (input.abs() + 1); }
Tensor tanhshrink(const Tensor& input) { return input - input.tanh(); }
Tensor logsigmoid(const Tensor& input) { return -(-input).softplus(); }
Tensor mish(const Tensor& input) { return input * input.softplus().tanh(); }
Tensor hardsigmoid(const Tensor& input) { return (input / 6 + 0.5).clamp(0, 1); }
Tensor hardswish(const Tensor& input) { return input * hardsigmoid(input); }
Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& o) { return input.softmax(o.dim(), o.dtype()); }
Tensor softmin(const Tensor& input, const SoftminFuncOptions& o) { return (-input).softmax(o.dim(), o.dtype()); }
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& o) {
  return input.log_softmax(o.dim(), o.dtype());
}
Tensor prelu(const Tensor& input, const Tensor& weight) {
  EMBER_CHECK(weight.defined() && weight.dim() <= 1, "[prelu] weight must be 1-D, got ",
              weight.defined() ? weight.sizes() : IntArrayRef());
  Tensor w = weight;
  if (weight.numel() > 1) {
    EMBER_CHECK(input.dim() >= 2 && input.size(1) == weight.numel(), "[prelu] weight has ", weight.numel(),
                " values but the input ", input.sizes(), " has ", input.dim() >= 2 ? input.size(1) : 0,
                " channels (dim 1); use 1 or that many parameters");
    DimVector shape(static_cast<size_t>(input.dim()), 1);
    shape[1] = weight.numel();
    w = weight.view(shape);
  } else {
    w = weight.reshape({});
  }
  return input.clamp_min(0) + w * input.clamp_max(0);
}
Tensor gumbel_softmax(const Tensor& logits, const GumbelSoftmaxFuncOptions& o) {
  OpScope scope("gumbel_softmax", {&logits});
  Tensor u = empty(logits.sizes(), logits.options());
  u.uniform_(0.0, 1.0);
  // -log(Exp(1)) draws: -log(-log(U)), U kept away from 0 and 1.
  Tensor g = -(-(u.clamp(1e-20, 1.0 - 1e-7)).log()).log();
  Tensor y = ((logits + g) / o.tau()).softmax(o.dim());
  if (!o.hard()) return y;
  Tensor idx = y.argmax(static_cast<int64_t>(o.dim()), true);
  Tensor hard = zeros_like(y).scatter(o.dim(), idx, Scalar(1.0));
  return hard - y.detach() + y;
}
Tensor one_hot(const Tensor& tensor, int64_t num_classes) { return ember::one_hot(tensor, num_classes); }

// ---- dropout ----
namespace {
Tensor feature_mask(const Tensor& input, double keep, const char* op) {
  EMBER_CHECK(input.dim() >= 2, "[", op, "] expected an input with a channel dim, got ", input.sizes());
  DimVector shape(static_cast<size_t>(input.dim()), 1);
  shape[0] = input.size(0);
  shape[1] = input.size(1);
  Tensor m = empty(shape, input.options());
  m.bernoulli_(keep);
  return m;
}
void check_p(double p, const char* op) {
  EMBER_CHECK(p >= 0 && p <= 1, "[", op, "] dropout probability has to be between 0 and 1, but got ", p);
}
}  // namespace

Tensor dropout(const Tensor& input, const DropoutFuncOptions& o) {
  return finish(input, dropout(input, o.p(), o.training()), o.inplace());
}
Tensor dropout2d(const Tensor& input, const Dropout2dFuncOptions& o) {
  check_p(o.p(), "dropout2d");
  if (!o.training() || o.p() == 0) return input;
  if (o.p() == 1) return finish(input, input * 0.0, o.inplace());
  Tensor out = input * feature_mask(input, 1 - o.p(), "dropout2d") / (1 - o.p());
  return finish(input, out, o.inplace());
}
Tensor dropout3d(const Tensor& input, const Dropout3dFuncOptions& o) {
  check_p(o.p(), "dropout3d");
  if (!o.training() || o.p() == 0) return input;
  if (o.p() == 1) return finish(input, input * 0.0, o.inplace());
  Tensor out = input * feature_mask(input, 1 - o.p(), "dropout3d") / (1 - o.p());
  return finish(input, out, o.inplace());
}
namespace {
Tensor alpha_dropout_impl(const Tensor& input, double p, bool training, bool inplace, bool feature, const char* op) {
  check_p(p, op);
  if (!training || p == 0) return input;
  if (p == 1) return finish(input, input * 0.0, inplace);
  constexpr double alpha = 1.7580993408473766;
  const double a = 1.0 / std::sqrt((alpha * alpha * p + 1) * (1 - p));
  Tensor keep;
  if (feature) {
    keep = feature_mask(input, 1 - p, op);
  } else {
    keep = empty(input.sizes(), input.options());
    keep.bernoulli_(1 - p);
  }
  Tensor b = (keep - 1) * (alpha * a) + alpha * a * p;
  return finish(input, input * (keep * a) + b, inplace);
}
}  // namespace
Tensor alpha_dropout(const Tensor& input, const AlphaDropoutFuncOptions& o) {
  return alpha_dropout_impl(input, o.p(), o.training(), o.inplace(), false, "alpha_dropout");
}
Tensor feature_alpha_dropout(const Tensor& input, const FeatureAlphaDropoutFuncOptions& o) {
  return alpha_dropout_impl(input, o.p(), o.training(), o.inplace(), true, "feature_alpha_dropout");
}
namespace detail {
Tensor alpha_dropout(const Tensor& input, double p, bool training, bool inplace) {
  return alpha_dropout_impl(input, p, training, inplace, false, "alpha_dropout");
}
Tensor feature_alpha_dropout(const Tensor& input, double p, bool training, bool inplace) {
  return alpha_dropout_impl(input, p, training, inplace, true, "feature_alpha_dropout");
}
}  // namespace detail

// ---- normalisation, embedding ----
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& o) {
  return batch_norm(input, running_mean, running_var, o.weight(), o.bias(), o.training(), o.momentum().value_or(0.1),
                    o.eps());
}
Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& o) {
  OpScope scope("instance_norm", {&input});
  EMBER_CHECK(input.dim() >= 3, "[instance_norm] expected an [N, C, *] input, got ", input.sizes());
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  DimVector cshape(static_cast<size_t>(input.dim()), 1);
  cshape[1] = input.size(1);
  Tensor out;
  if (o.use_input_stats()) {
    Tensor mean = input.mean(dims, true);
    Tensor var = input.var(dims, 0, true);
    out = (input - mean) / (var + o.eps()).sqrt();
    if (o.running_mean().defined() || o.running_var().defined()) {
      NoGradGuard no_grad;
      const double m = o.momentum();
      if (o.running_mean().defined()) {
        Tensor rm = o.running_mean();
        rm.copy_(rm * (1 - m) + mean.detach().mean({0}).reshape({-1}) * m);
      }
      if (o.running_var().defined()) {
        Tensor rv = o.running_var();
        rv.copy_(rv * (1 - m) + input.detach().var(dims, 1, true).mean({0}).reshape({-1}) * m);
      }
    }
  } else {
    EMBER_CHECK(o.running_mean().defined() && o.running_var().defined(),
                "[instance_norm] use_input_stats=false needs running_mean and running_var");
    out = (input - o.running_mean().view(cshape)) / (o.running_var().view(cshape) + o.eps()).sqrt();
  }
  if (o.weight().defined()) out = out * o.weight().view(cshape);
  if (o.bias().defined()) out = out + o.bias().view(cshape);
  return out;
}
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& o) {
  return layer_norm(input, o.normalized_shape(), o.weight(), o.bias(), o.eps());
}
Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& o) {
  return group_norm(input, o.num_groups(), o.weight(), o.bias(), o.eps());
}
Tensor local_response_norm(const Tensor& input_, const LocalResponseNormFuncOptions& o) {
  OpScope scope("local_response_norm", {&input_});
  // Integer inputs are normalised in the default float dtype (the result of the division).
  const Tensor input = input_.is_floating_point() ? input_ : input_.to(get_default_dtype());
  EMBER_CHECK(input.dim() >= 3, "[local_response_norm] expected an input of 3 or more dims [N, C, *], got ",
              input.sizes());
  const int64_t size = o.size();
  std::vector<int64_t> pads(static_cast<size_t>(2 * (input.dim() - 1)), 0);
  // (left, right) pairs from the last dim: the channel dim is the last pair.
  pads[pads.size() - 2] = size / 2;
  pads[pads.size() - 1] = (size - 1) / 2;
  Tensor sq = ember::pad(input * input, pads);
  Tensor div = sq.unfold(1, size, 1).mean({-1});
  div = (div * o.alpha() + o.k()).pow(o.beta());
  return input / div;
}
Tensor normalize(const Tensor& input, NormalizeFuncOptions o) {
  Tensor denom = input.norm(o.p(), IntArrayRef(o.dim()), true).clamp_min(o.eps()).expand_as(input);
  Tensor out = input / denom;
  if (o.out()) {
    o.out()->copy_(out);
    return *o.out();
  }
  return out;
}
Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& o) {
  Tensor out = embedding(input, weight, o.padding_idx(), o.max_norm(), o.norm_type());
  if (o.scale_grad_by_freq() && out.requires_grad()) {
    // Divides each looked-up row's gradient by how often its index occurs in input: the
    // value is out's (the added term is exactly zero), the gradient flows through out / count.
    const Tensor flat = input.reshape({-1});
    Tensor count;
    {
      NoGradGuard no_grad;
      count = bincount(flat, {}, weight.size(0)).index_select(0, flat).reshape(input.sizes()).unsqueeze(-1);
      count = count.to(out.dtype());
    }
    const Tensor fixed = out.detach();
    out = fixed + (out - fixed) / count;
  }
  return out;
}
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& o) {
  OpScope scope("embedding_bag", {&input, &weight});
  const std::string& mode = o.mode();
  EMBER_CHECK(mode == "sum" || mode == "mean" || mode == "max", "[embedding_bag] mode must be sum, mean or max, got '",
              mode, "'");
  EMBER_CHECK(!o.per_sample_weights().defined() || mode == "sum",
              "[embedding_bag] per_sample_weights is only supported with mode='sum'");
  Tensor idx = input, offsets = o.offsets();
  if (input.dim() == 2) {
    EMBER_CHECK(!offsets.defined(), "[embedding_bag] offsets must be undefined for a 2-D input (each row is a bag)");
    const int64_t B = input.size(0), L = input.size(1);
    offsets = arange(0, B * L, L, TensorOptions(kInt64));
    idx = input.reshape({-1});
  } else {
    EMBER_CHECK(input.dim() == 1 && offsets.defined() && offsets.dim() == 1,
                "[embedding_bag] a 1-D input needs 1-D offsets (the start of each bag); got input ", input.sizes());
  }
  Tensor rows = embedding(idx, weight, std::nullopt, o.max_norm(), o.norm_type());  // [M, D]
  Tensor keep;
  if (o.padding_idx()) {
    keep = idx.ne(*o.padding_idx()).to(rows.dtype()).unsqueeze(1);
    rows = rows * keep;
  }
  if (o.per_sample_weights().defined()) rows = rows * o.per_sample_weights().reshape({-1}).unsqueeze(1);
  Tensor off = offsets.to(kInt64).contiguous();
  const int64_t M = idx.numel();
  int64_t nb = off.numel();
  if (o.include_last_offset()) --nb;
  std::vector<Tensor> bags;
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t start = off[b].item<int64_t>();
    const int64_t end = b + 1 < off.numel() ? off[b + 1].item<int64_t>() : M;
    EMBER_CHECK(start >= 0 && end <= M && start <= end, "[embedding_bag] offsets must be increasing within [0, ",
                M, "]; bag ", b, " is [", start, ", ", end, ")");
    if (end == start) {
      bags.push_back(zeros({weight.size(1)}, weight.options()));
      continue;
    }
    Tensor seg = rows.narrow(0, start, end - start);
    if (mode == "sum") {
      bags.push_back(seg.sum({0}));
    } else if (mode == "mean") {
      Tensor cnt = keep.defined() ? keep.narrow(0, start, end - start).sum().clamp_min(1) : full({}, double(end - start), seg.options());
      bags.push_back(seg.sum({0}) / cnt);
    } else {
      bags.push_back(seg.amax({0}));
    }
  }
  return stack(bags, 0);
}

// ---- distances ----
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& o) {
  OpScope scope("cosine_similarity", {&x1, &x2});
  const int64_t dim = o.dim();
  Tensor w12 = (x1 * x2).sum(IntArrayRef(dim));
  Tensor n1 = (x1 * x1).sum(IntArrayRef(dim)), n2 = (x2 * x2).sum(IntArrayRef(dim));
  return w12 / (n1 * n2).clamp_min(o.eps() * o.eps()).sqrt();
}
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& o) {
  OpScope scope("pairwise_distance", {&x1, &x2});
  const int64_t dim = std::max<int64_t>(x1.dim(), x2.dim()) - 1;
  return (x1 - x2 + o.eps()).norm(o.p(), IntArrayRef(dim < 0 ? 0 : dim), o.keepdim());
}
Tensor pdist(const Tensor& input, double p) {
  OpScope scope("pdist", {&input});
  EMBER_CHECK(input.dim() == 2, "[pdist] expected a 2-D input [N, M], got ", input.sizes());
  const int64_t n = input.size(0);
  std::vector<int64_t> a, b;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) {
      a.push_back(i);
      b.push_back(j);
    }
  }
  if (a.empty()) return empty({0}, input.options());
  return (input.index_select(0, tensor(a)) - input.index_select(0, tensor(b))).norm(p, IntArrayRef(int64_t{1}));
}

// ---- losses ----
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o) {
  return l1_loss(input, target, o.reduction());
}
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o) {
  return mse_loss(input, target, o.reduction());
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& o) {
  return binary_cross_entropy(input, target, o.weight(), o.reduction());
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& o) {
  return binary_cross_entropy_with_logits(input, target, o.weight(), o.pos_weight(), o.reduction());
}
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o) {
  return kl_div(input, target, o.reduction(), o.log_target());
}
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o) {
  return smooth_l1_loss(input, target, o.reduction(), o.beta());
}
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o, double beta) {
  return smooth_l1_loss(input, target, o.reduction(), beta);
}
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& o) {
  return huber_loss(input, target, o.reduction(), o.delta());
}
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& o) {
  return nll_loss(input, target, o.weight(), o.ignore_index(), o.reduction());
}
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& o) {
  return cross_entropy(input, target, o.weight(), o.ignore_index(), o.reduction(), o.label_smoothing());
}
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, const HingeEmbeddingLossFuncOptions& o) {
  OpScope scope("hinge_embedding_loss", {&input, &target});
  Tensor margin_part = where(target.ne(1), (o.margin() - input).clamp_min(0), Scalar(0.0));
  Tensor self_part = where(target.ne(-1), input, Scalar(0.0));
  return reduce(margin_part + self_part, o.reduction(), "hinge_embedding_loss");
}
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& o) {
  OpScope scope("multi_margin_loss", {&input, &target});
  EMBER_CHECK(o.p() == 1 || o.p() == 2, "[multi_margin_loss] only p = 1 and p = 2 are supported, got ", o.p());
  Tensor x = input.dim() == 1 ? input.unsqueeze(0) : input;
  Tensor t = target.reshape({-1, 1}).to(kInt64);
  EMBER_CHECK(x.dim() == 2 && t.size(0) == x.size(0), "[multi_margin_loss] expected input [N, C] and target [N], got ",
              input.sizes(), " and ", target.sizes());
  const int64_t C = x.size(1);
  Tensor xy = x.gather(1, t);
  Tensor m = (o.margin() - xy + x).clamp_min(0);
  if (o.p() == 2) m = m * m;
  if (o.weight().defined()) m = m * o.weight().index_select(0, t.reshape({-1})).unsqueeze(1);
  Tensor not_target = ones_like(x).scatter(1, t, Scalar(0.0));
  Tensor loss = (m * not_target).sum({1}) / static_cast<double>(C);
  if (input.dim() == 1) loss = loss.squeeze(0);
  return reduce(loss, o.reduction(), "multi_margin_loss");
}
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& o) {
  OpScope scope("cosine_embedding_loss", {&input1, &input2, &target});
  constexpr double eps = 1e-12;
  const int64_t dim = input1.dim() - 1;
  Tensor prod_sum = (input1 * input2).sum(IntArrayRef(dim));
  Tensor m1 = (input1 * input1).sum(IntArrayRef(dim)) + eps, m2 = (input2 * input2).sum(IntArrayRef(dim)) + eps;
  Tensor cos = prod_sum / (m1 * m2).sqrt();
  Tensor pos = where(target.eq(1), 1 - cos, Scalar(0.0));
  Tensor neg = where(target.eq(-1), (cos - o.margin()).clamp_min(0), Scalar(0.0));
  return reduce(pos + neg, o.reduction(), "cosine_embedding_loss");
}
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, const MultilabelMarginLossFuncOptions& o) {
  OpScope scope("multilabel_margin_loss", {&input, &target});
  const bool one = input.dim() <= 1;
  Tensor x = one ? input.reshape({1, -1}) : input;
  Tensor t = (one ? target.reshape({1, -1}) : target).to(kInt64);
  EMBER_CHECK(x.dim() == 2 && t.sizes() == x.sizes(), "[multilabel_margin_loss] expected input [N, C] and target ",
              "[N, C] of class indices (ended by -1), got ", input.sizes(), " and ", target.sizes());
  const int64_t C = x.size(1);
  Tensor valid = t.ne(-1).to(kInt64).cumprod(1).to(x.dtype());  // the indices before the first -1
  Tensor ti = t.clamp_min(0);
  Tensor is_target = zeros_like(x).scatter_add(1, ti, valid).gt(0).to(x.dtype());
  Tensor xt = x.gather(1, ti);  // [N, C] target scores per slot
  Tensor margins = (1 - (xt.unsqueeze(2) - x.unsqueeze(1))).clamp_min(0);  // [N, slot, C]
  Tensor loss = (margins * valid.unsqueeze(2) * (1 - is_target).unsqueeze(1)).sum({1, 2}) / static_cast<double>(C);
  if (one) loss = loss.squeeze(0);
  return reduce(loss, o.reduction(), "multilabel_margin_loss");
}
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& o) {
  return reduce((-target * input).softplus(), o.reduction(), "soft_margin_loss");
}
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& o) {
  OpScope scope("multilabel_soft_margin_loss", {&input, &target});
  Tensor loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input));
  if (o.weight().defined()) loss = loss * o.weight();
  const int64_t cdim = input.dim() - 1;
  loss = loss.sum(IntArrayRef(cdim)) / static_cast<double>(input.size(cdim));
  return reduce(loss, o.reduction(), "multilabel_soft_margin_loss");
}
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& o) {
  OpScope scope("triplet_margin_loss", {&anchor, &positive, &negative});
  auto pd = PairwiseDistanceFuncOptions().p(o.p()).eps(o.eps());
  Tensor d_ap = pairwise_distance(anchor, positive, pd), d_an = pairwise_distance(anchor, negative, pd);
  if (o.swap()) d_an = d_an.minimum(pairwise_distance(positive, negative, pd));
  return reduce((o.margin() + d_ap - d_an).clamp_min(0), o.reduction(), "triplet_margin_loss");
}
Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const TripletMarginWithDistanceLossFuncOptions& o) {
  OpScope scope("triplet_margin_with_distance_loss", {&anchor, &positive, &negative});
  auto dist = [&](const Tensor& a, const Tensor& b) {
    return o.distance_function() ? (*o.distance_function())(a, b) : pairwise_distance(a, b);
  };
  Tensor d_ap = dist(anchor, positive), d_an = dist(anchor, negative);
  if (o.swap()) d_an = d_an.minimum(dist(positive, negative));
  return reduce((o.margin() + d_ap - d_an).clamp_min(0), o.reduction(), "triplet_margin_with_distance_loss");
}
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& o) {
  OpScope scope("poisson_nll_loss", {&input, &target});
  Tensor loss = o.log_input() ? input.exp() - target * input : input - target * (input + o.eps()).log();
  if (o.full()) {
    Tensor t = target.clamp_min(1);  // the Stirling term, only where target > 1
    Tensor st = target * t.log() - target + 0.5 * (2 * M_PI * t).log();
    loss = loss + where(target.gt(1), st, Scalar(0.0));
  }
  return reduce(loss, o.reduction(), "poisson_nll_loss");
}
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& o) {
  return reduce((-target * (input1 - input2) + o.margin()).clamp_min(0), o.reduction(), "margin_ranking_loss");
}

}  // namespace ember::nn::functional
