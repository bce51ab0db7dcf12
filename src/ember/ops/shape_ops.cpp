// Shaping ops that build new tensors by moving elements: flip, roll, repeat, tile,
// repeat_interleave, tril, triu, pad and one_hot.
//
// Note [Separable gathers]: flip, roll, repeat, tile, repeat_interleave and the reflect /
// replicate pads all have the form out[k0, ..., kn] = in[map0[k0], ..., mapn[kn]], with one
// index map per dim. Each map is a short list of stretches that step through the input by
// +1, -1 or 0 (a flip is one stretch, a roll two, a pad three), so building it costs
// nothing even for very long dims. gather_separable runs them all: it works on bytes (any
// dtype), reads strided inputs directly, and copies stretches that are contiguous in the
// input with one memcpy each.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "ember/autograd/functions.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/parallel.h"
#include "ember/kernels/cpu/kernels.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"
#include "ember/jit/trace_hook.h"

namespace ember {

namespace {

// Output indices [out, out + len) of one dim read input indices first, first + step, ...
struct Stretch {
  int64_t out;
  int64_t first;
  int64_t len;
  int64_t step;  // -1, 0 or 1
};

// One dim's index map: consecutive stretches covering the output dim in order.
class DimMap {
 public:
  // Appends len output indices; joins the previous stretch when the progression continues.
  void push(int64_t first, int64_t len, int64_t step) {
    if (len <= 0) return;
    if (len == 1) step = 1;
    if (!s_.empty()) {
      Stretch& b = s_.back();
      const int64_t bstep = b.len == 1 ? first - b.first : b.step;
      if (bstep >= -1 && bstep <= 1 && (len == 1 || step == bstep) &&
          b.first + bstep * b.len == first) {
        b.step = bstep;
        b.len += len;
        size_ += len;
        return;
      }
    }
    s_.push_back({size_, first, len, step});
    size_ += len;
  }
  int64_t size() const { return size_; }
  const std::vector<Stretch>& stretches() const { return s_; }

 private:
  std::vector<Stretch> s_;
  int64_t size_ = 0;
};

using IndexMaps = std::vector<DimMap>;

DimMap identity_map(int64_t n) {
  DimMap m;
  m.push(0, n, 1);
  return m;
}

IndexMaps identity_maps(IntArrayRef sizes) {
  IndexMaps maps;
  maps.reserve(sizes.size());
  for (int64_t s : sizes) maps.push_back(identity_map(s));
  return maps;
}

// Elements per parallel chunk, and the longest piece of a row one work unit covers.
constexpr int64_t kGrainElems = 32768;
constexpr int64_t kBlockCols = 16384;

void check_defined(const Tensor& t, const char* op) {
  EMBER_CHECK(t.defined(), "[", op, "] called on an undefined tensor");
}

template <size_t N>
void copy_strided_fixed(char* out, const char* in, int64_t n, int64_t in_step) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * N, in + i * in_step, N);
}

// n elements of es bytes: out is dense, in advances in_step bytes per element.
void copy_strided(char* out, const char* in, int64_t n, int64_t in_step, int64_t es) {
  if (in_step == es) {
    std::memcpy(out, in, static_cast<size_t>(n * es));
    return;
  }
  switch (es) {
    case 1: return copy_strided_fixed<1>(out, in, n, in_step);
    case 2: return copy_strided_fixed<2>(out, in, n, in_step);
    case 4: return copy_strided_fixed<4>(out, in, n, in_step);
    case 8: return copy_strided_fixed<8>(out, in, n, in_step);
    default:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(out + i * es, in + i * in_step, static_cast<size_t>(es));
      }
  }
}

template <size_t N>
void gather_fixed(char* out, const char* in, const int64_t* off, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * N, in + off[i], N);
}

// n elements of es bytes: out is dense, element i comes from in + off[i].
void gather_elements(char* out, const char* in, const int64_t* off, int64_t n, int64_t es) {
  switch (es) {
    case 1: return gather_fixed<1>(out, in, off, n);
    case 2: return gather_fixed<2>(out, in, off, n);
    case 4: return gather_fixed<4>(out, in, off, n);
    case 8: return gather_fixed<8>(out, in, off, n);
    default:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(out + i * es, in + off[i], static_cast<size_t>(es));
      }
  }
}

// out (contiguous, same dim() as in) gets out[k...] = in[maps[0](k0), ...]; see
// Note [Separable gathers]. maps[d] covers out.size(d) indices within [0, in.size(d)).
void gather_separable(const Tensor& out, const Tensor& in, const IndexMaps& maps) {
  if (out.numel() == 0) return;
  const int64_t es = static_cast<int64_t>(out.element_size());
  char* dst = static_cast<char*>(out.data_ptr());
  const char* src = static_cast<const char*>(in.data_ptr());
  // Size-1 output dims only move the input's start; the rest are kept.
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < out.dim(); ++d) {
    if (out.sizes()[d] == 1) {
      src += maps[d].stretches()[0].first * in.strides()[d] * es;
    } else {
      dims.push_back(d);
    }
  }
  if (dims.empty()) {
    std::memcpy(dst, src, static_cast<size_t>(es));
    return;
  }
  const int64_t nd = static_cast<int64_t>(dims.size());
  // Byte offsets into the input for every index of the outer dims.
  std::vector<std::vector<int64_t>> off(nd - 1);
  DimVector outer_sizes(static_cast<size_t>(nd - 1));
  for (int64_t i = 0; i < nd - 1; ++i) {
    const int64_t d = dims[i];
    const int64_t stride = in.strides()[d] * es;
    outer_sizes[i] = out.sizes()[d];
    off[i].reserve(outer_sizes[i]);
    for (const Stretch& s : maps[d].stretches()) {
      for (int64_t j = 0; j < s.len; ++j) off[i].push_back((s.first + j * s.step) * stride);
    }
  }
  const int64_t last = dims.back();
  const int64_t cols = out.sizes()[last];
  const int64_t col_stride = in.strides()[last] * es;
  const std::vector<Stretch>& runs = maps[last].stretches();
  // Short stretches (repeat_interleave by 2, say) cost more to walk than a table of
  // per-column offsets.
  std::vector<int64_t> col_off;
  if (static_cast<int64_t>(runs.size()) * 8 > cols) {
    col_off.reserve(cols);
    for (const Stretch& s : runs) {
      for (int64_t j = 0; j < s.len; ++j) col_off.push_back((s.first + j * s.step) * col_stride);
    }
  }
  const int64_t block = std::min(cols, kBlockCols);
  const int64_t nblocks = (cols + block - 1) / block;
  const int64_t units = out.numel() / cols * nblocks;
  const int64_t grain = std::max<int64_t>(1, kGrainElems / block);
  parallel_for(0, units, grain, [&](int64_t ub, int64_t ue) {
    // Odometer over the outer dims, with the input byte offset of the current row.
    DimVector idx(static_cast<size_t>(nd - 1));
    int64_t row = ub / nblocks;
    int64_t base = 0;
    for (int64_t i = nd - 2, r = row; i >= 0; --i) {
      idx[i] = r % outer_sizes[i];
      r /= outer_sizes[i];
      base += off[i][idx[i]];
    }
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t r = u / nblocks;
      if (r != row) {
        for (int64_t i = nd - 2; i >= 0; --i) {
          base -= off[i][idx[i]];
          if (++idx[i] < outer_sizes[i]) {
            base += off[i][idx[i]];
            break;
          }
          idx[i] = 0;
          base += off[i][0];
        }
        row = r;
      }
      const int64_t c0 = (u % nblocks) * block;
      const int64_t c1 = std::min(cols, c0 + block);
      char* o = dst + r * cols * es;
      const char* in_row = src + base;
      if (!col_off.empty()) {
        gather_elements(o + c0 * es, in_row, col_off.data() + c0, c1 - c0, es);
        continue;
      }
      // The last stretch starting at or before c0, then every one up to c1.
      auto it = std::upper_bound(runs.begin(), runs.end(), c0,
                                 [](int64_t c, const Stretch& s) { return c < s.out; });
      for (--it; it != runs.end() && it->out < c1; ++it) {
        const int64_t b = std::max(it->out, c0);
        const int64_t e = std::min(it->out + it->len, c1);
        const int64_t step = it->step * col_stride;
        copy_strided(o + b * es, in_row + it->first * col_stride + (b - it->out) * step, e - b,
                     step, es);
      }
    }
  });
}

// Autograd: the full per-dim index lists of maps (empty for identity dims).
std::vector<DimVector> expand_maps(const IndexMaps& maps, IntArrayRef in_sizes) {
  std::vector<DimVector> out(maps.size());
  for (size_t d = 0; d < maps.size(); ++d) {
    DimVector idx;
    for (const Stretch& st : maps[d].stretches()) {
      for (int64_t j = 0; j < st.len; ++j) idx.push_back(st.first + j * st.step);
    }
    bool identity = static_cast<int64_t>(idx.size()) == in_sizes[d];
    for (size_t i = 0; identity && i < idx.size(); ++i) identity = idx[i] == static_cast<int64_t>(i);
    if (!identity) out[d] = std::move(idx);
  }
  return out;
}

// The node name of the op currently gathering (set by the op before gather_new).
thread_local const char* g_gather_name = "GatherBackward";

Tensor gather_new(const Tensor& in, const IndexMaps& maps) {
  DimVector sizes;
  for (const DimMap& m : maps) sizes.push_back(m.size());
  Tensor out = empty(sizes, TensorOptions(in.dtype()));
  gather_separable(out, in, maps);
  if (autograd::needs_grad(in)) autograd::fn::gather_maps(g_gather_name, in, out, expand_maps(maps, in.sizes()));
  return out;
}

// Sets the node name gather_new records for the current op.
struct GatherName {
  explicit GatherName(const char* name) : prev(g_gather_name) { g_gather_name = name; }
  ~GatherName() { g_gather_name = prev; }
  const char* prev;
};

Tensor repeat_impl(const Tensor& t, IntArrayRef repeats, const char* op) {
  check_defined(t, op);
  EMBER_CHECK(static_cast<int64_t>(repeats.size()) >= t.dim(), "[", op,
              "] number of dimensions of repeat dims (", repeats.size(),
              ") can not be smaller than number of dimensions of tensor (", t.dim(),
              "); tensor sizes ", t.sizes(), ", repeats ", repeats);
  for (int64_t r : repeats) {
    EMBER_CHECK(r >= 0, "[", op, "] repeats must be non-negative, got ", repeats);
  }
  Tensor x = t;
  while (x.dim() < static_cast<int64_t>(repeats.size())) x = x.unsqueeze(0);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  DimVector out_sizes(repeats.size());
  bool empty_out = false;
  for (size_t d = 0; d < repeats.size(); ++d) {
    const int64_t s = x.sizes()[d];
    EMBER_CHECK(s == 0 || repeats[d] <= kMax / s, "[", op, "] the result of repeating sizes ",
                t.sizes(), " by ", repeats, " is too large");
    out_sizes[d] = s * repeats[d];
    empty_out |= out_sizes[d] == 0;
  }
  if (!empty_out) {
    int64_t numel = 1;
    for (int64_t s : out_sizes) {
      EMBER_CHECK(numel <= kMax / s, "[", op, "] the result of repeating sizes ", t.sizes(),
                  " by ", repeats, " is too large");
      numel *= s;
    }
  }
  // The maps below grow with the output, so the output is allocated (or refused) first.
  Tensor out = empty(out_sizes, TensorOptions(t.dtype()));
  if (empty_out) return out;
  IndexMaps maps(repeats.size());
  for (size_t d = 0; d < repeats.size(); ++d) {
    const int64_t s = x.sizes()[d];
    if (s == 1) {
      maps[d].push(0, repeats[d], 0);
    } else {
      for (int64_t k = 0; k < repeats[d]; ++k) maps[d].push(0, s, 1);
    }
  }
  gather_separable(out, x, maps);
  if (autograd::needs_grad(x)) autograd::fn::gather_maps("RepeatBackward0", x, out, expand_maps(maps, x.sizes()));
  return out;
}

// Repeats slice j of `in` along dim counts[j] times (counts.size() == in.size(dim)).
Tensor repeat_counts(const Tensor& in, int64_t dim, const std::vector<int64_t>& counts) {
  int64_t total = 0;
  for (int64_t c : counts) {
    EMBER_CHECK(c <= std::numeric_limits<int64_t>::max() - total,
                "[repeat_interleave] the total number of repeats overflows int64");
    total += c;
  }
  // The output is allocated (or refused) before the index maps, which grow with it.
  DimVector sizes(in.sizes());
  sizes[dim] = total;
  Tensor out = empty(sizes, TensorOptions(in.dtype()));
  IndexMaps maps = identity_maps(in.sizes());
  DimMap m;
  for (size_t j = 0; j < counts.size(); ++j) m.push(static_cast<int64_t>(j), counts[j], 0);
  maps[dim] = m;
  gather_separable(out, in, maps);
  if (autograd::needs_grad(in)) {
    EMBER_CHECK(total <= (int64_t{1} << 31) || out.numel() > 0, "[repeat_interleave] an empty result with ",
                total, " repeats along dim ", dim, " is too large to differentiate");
    autograd::fn::gather_maps(g_gather_name, in, out, expand_maps(maps, in.sizes()));
  }
  return out;
}

// Scalar repeats: the counts list has one entry per input row, so the output size is
// checked first (an expanded input may have 2^40 rows in no memory at all).
Tensor repeat_scalar(const Tensor& in, int64_t dim, int64_t repeats) {
  EMBER_CHECK(repeats >= 0, "[repeat_interleave] repeats can not be negative, got ", repeats);
  const int64_t rows = in.sizes()[dim];
  int64_t total = 0;
  EMBER_CHECK(!__builtin_mul_overflow(rows, repeats, &total), "[repeat_interleave] repeating ", rows, " rows ",
              repeats, " times overflows int64");
  DimVector sizes(in.sizes());
  sizes[dim] = total;
  { Tensor probe = empty(sizes, TensorOptions(in.dtype())); }  // refuses outputs that cannot exist
  EMBER_CHECK(rows <= (int64_t{1} << 31), "[repeat_interleave] input dim ", dim, " has ", rows,
              " rows; at most 2^31 are supported");
  return repeat_counts(in, dim, std::vector<int64_t>(static_cast<size_t>(rows), repeats));
}

// The input of repeat_interleave and the dim it works on: flattened when dim is not given.
std::pair<Tensor, int64_t> interleave_input(const Tensor& t, std::optional<int64_t> dim) {
  if (!dim) return {t.reshape({-1}), 0};
  EMBER_CHECK(t.dim() > 0, "[repeat_interleave] dimension specified as ", *dim,
              " but tensor has no dimensions");
  return {t, wrap_dim(*dim, t.dim(), "repeat_interleave")};
}

Tensor tri_impl(const Tensor& t, int64_t diagonal, bool lower, const char* op) {
  check_defined(t, op);
  EMBER_CHECK(t.dim() >= 2, "[", op, "] input tensor must have at least 2 dimensions, got sizes ",
              t.sizes());
  const Tensor x = t.contiguous();
  Tensor out = empty(t.sizes(), TensorOptions(t.dtype()));
  if (out.numel() == 0) return out;
  const int64_t rows_per = t.sizes()[t.dim() - 2];
  const int64_t cols = t.sizes()[t.dim() - 1];
  const int64_t es = static_cast<int64_t>(t.element_size());
  // Clamped so the bounds below cannot overflow; past these values nothing changes.
  const int64_t dg = std::clamp<int64_t>(diagonal, -rows_per - 1, cols + 1);
  const char* src = static_cast<const char*>(x.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  const int64_t rows = out.numel() / cols;
  parallel_for(0, rows, std::max<int64_t>(1, kGrainElems / cols), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t i = r % rows_per;
      // Kept columns [keep0, keep1); the rest become zero (all-zero bytes in every dtype).
      const int64_t keep0 = lower ? 0 : std::clamp<int64_t>(i + dg, 0, cols);
      const int64_t keep1 = lower ? std::clamp<int64_t>(i + dg + 1, 0, cols) : cols;
      char* o = dst + r * cols * es;
      const char* s = src + r * cols * es;
      std::memset(o, 0, static_cast<size_t>(keep0 * es));
      std::memcpy(o + keep0 * es, s + keep0 * es, static_cast<size_t>((keep1 - keep0) * es));
      std::memset(o + keep1 * es, 0, static_cast<size_t>((cols - keep1) * es));
    }
  });
  return out;
}

// ---- pad ----

enum class PadMode { Constant, Reflect, Replicate };

PadMode parse_pad_mode(std::string_view mode) {
  if (mode == "constant") return PadMode::Constant;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "replicate") return PadMode::Replicate;
  EMBER_CHECK(mode != "circular",
              "[pad] padding mode \"circular\" is not supported; supported modes are "
              "\"constant\", \"reflect\" and \"replicate\"");
  EMBER_ERROR("[pad] unrecognised padding mode \"", std::string(mode),
              "\"; supported modes are \"constant\", \"reflect\" and \"replicate\"");
}

// PyTorch's fill_ refuses values the dtype cannot hold (checked_convert); so does pad.
void check_pad_value(double v, DType dtype) {
  double lo = 0, hi = 0;
  switch (dtype) {
    case kBool:
    case kFloat64: return;
    case kFloat32:
      lo = -std::numeric_limits<float>::max();
      hi = std::numeric_limits<float>::max();
      break;
    case kFloat16:
      lo = -65504.0;
      hi = 65504.0;
      break;
    case kBFloat16:
      lo = -3.3895313892515355e38;
      hi = 3.3895313892515355e38;
      break;
    case kUInt8: lo = 0, hi = 255; break;
    case kInt8: lo = -128, hi = 127; break;
    case kInt16: lo = -32768, hi = 32767; break;
    case kInt32: lo = -2147483648.0, hi = 2147483647.0; break;
    case kInt64: lo = -9223372036854775808.0, hi = 9223372036854775807.0; break;
    default: return;
  }
  // Floating dtypes take inf and nan as they are; integer dtypes take neither.
  if (is_floating_point(dtype) && (std::isinf(v) || std::isnan(v))) return;
  EMBER_CHECK(!std::isnan(v) && v >= lo && v <= hi, "[pad] value ", v,
              " cannot be converted to dtype ", dtype, " without overflow");
}

// Bounds every amount so that size + left + right cannot overflow.
void check_pad_amount(int64_t pl, int64_t pr, int64_t dim) {
  constexpr int64_t kLimit = int64_t{1} << 60;
  EMBER_CHECK(pl > -kLimit && pl < kLimit && pr > -kLimit && pr < kLimit, "[pad] padding (", pl,
              ", ", pr, ") at dimension ", dim, " is out of range");
}

Tensor constant_pad(const Tensor& t, IntArrayRef pad, double value) {
  const int64_t nd = t.dim();
  const int64_t np = static_cast<int64_t>(pad.size()) / 2;
  Tensor src = t;
  bool any_positive = false;
  // Negative padding crops: narrow the input first.
  for (int64_t i = nd - np; i < nd; ++i) {
    const int64_t pl = pad[2 * (nd - 1 - i)], pr = pad[2 * (nd - 1 - i) + 1];
    const int64_t size = t.sizes()[i];
    check_pad_amount(pl, pr, i);
    EMBER_CHECK(pl >= -size && pr >= -size &&
                    size + std::min<int64_t>(pl, 0) + std::min<int64_t>(pr, 0) >= 0,
                "[pad] negative padding (", pl, ", ", pr, ") removes more than the size ", size,
                " of dimension ", i, " (input sizes ", t.sizes(), ")");
    const int64_t crop_l = pl < 0 ? -pl : 0, crop_r = pr < 0 ? -pr : 0;
    src = src.narrow(i, crop_l, size - crop_l - crop_r);
    if (pl > 0 || pr > 0) any_positive = true;
  }
  if (!any_positive) return src.clone();
  DimVector out_sizes(t.sizes());
  for (int64_t i = nd - np; i < nd; ++i) {
    const int64_t pl = pad[2 * (nd - 1 - i)], pr = pad[2 * (nd - 1 - i) + 1];
    const int64_t size = t.sizes()[i];
    out_sizes[i] = size + pl + pr;
    EMBER_CHECK(out_sizes[i] > 0, "[pad] the input size ", size, ", plus padding ", pl, " and ", pr,
                " resulted in an output size of ", out_sizes[i],
                ", which is invalid (it must be positive); check dimension ", i,
                " of your input (sizes ", t.sizes(), ")");
  }
  check_pad_value(value, t.dtype());
  Tensor out = empty(out_sizes, TensorOptions(t.dtype()));
  kernels::cpu::fill(out, Scalar(value));
  Tensor inner = out;
  for (int64_t i = nd - np; i < nd; ++i) {
    const int64_t pl = pad[2 * (nd - 1 - i)];
    inner = inner.narrow(i, pl > 0 ? pl : 0, src.sizes()[i]);
  }
  kernels::cpu::copy(inner, src);
  if (autograd::needs_grad(t)) autograd::fn::constant_pad(t, out, pad);
  return out;
}

Tensor index_pad(const Tensor& t, IntArrayRef pad, PadMode mode, double value) {
  const char* name = mode == PadMode::Reflect ? "reflect" : "replicate";
  EMBER_CHECK(value == 0.0, "[pad] padding mode \"", name,
              "\" doesn't take in value argument (got ", value,
              "); use mode \"constant\" to pad with a value");
  const int64_t nd = t.dim();
  const int64_t np = static_cast<int64_t>(pad.size()) / 2;
  EMBER_CHECK(np >= 1 && np <= 3 && (nd == np + 1 || nd == np + 2), "[pad] mode \"", name,
              "\" pads the last 1, 2 or 3 dims of a (batched) input with 1 or 2 more dims "
              "(2D, 3D, 4D, 5D padding only), but got ",
              pad.size(), " padding values for an input of sizes ", t.sizes());
  // Only the batch dim of a batched input may be empty; reflect with 1 or 2 padded dims
  // also accepts an empty channel dim in the unbatched form, as PyTorch does.
  const bool batched = nd == np + 2;
  const int64_t may_be_empty = batched || (mode == PadMode::Reflect && np < 3) ? 0 : -1;
  for (int64_t i = 0; i < nd; ++i) {
    EMBER_CHECK(i == may_be_empty || t.sizes()[i] != 0, "[pad] mode \"", name, "\" expects a ",
                np + 1, "D or ", np + 2,
                "D (batch mode) input with non-zero sizes except in the batch dim, but got sizes ",
                t.sizes());
  }
  DimVector out_sizes(t.sizes());
  bool any_positive_size = false;
  for (int64_t i = nd - np; i < nd; ++i) {
    const int64_t pl = pad[2 * (nd - 1 - i)], pr = pad[2 * (nd - 1 - i) + 1];
    const int64_t size = t.sizes()[i];
    if (mode == PadMode::Reflect) {
      EMBER_CHECK(pl < size && pr < size,
                  "[pad] padding size should be less than the corresponding input dimension in "
                  "reflect mode, but got: padding (",
                  pl, ", ", pr, ") at dimension ", i, " of input ", t.sizes());
    }
    check_pad_amount(pl, pr, i);
    EMBER_CHECK(size + pl + pr >= 0, "[pad] input size ", size,
                " plus padding (", pl, ", ", pr, ") at dimension ", i,
                " gives a negative output size (input sizes ", t.sizes(), ")");
    out_sizes[i] = size + pl + pr;
    if (out_sizes[i] >= 1) any_positive_size = true;
  }
  // PyTorch rejects the result only when every padded dim comes out empty.
  EMBER_CHECK(any_positive_size, "[pad] input sizes ", t.sizes(), " are too small for padding ",
              pad, ": the calculated output sizes ", out_sizes, " are empty");
  IndexMaps maps = identity_maps(t.sizes());
  for (int64_t i = nd - np; i < nd; ++i) {
    const int64_t pl = pad[2 * (nd - 1 - i)], pr = pad[2 * (nd - 1 - i) + 1];
    const int64_t size = t.sizes()[i];
    // Output k reads input position x = k - pl, which runs over [lo, hi): the part before
    // the input, the input itself, the part after it. Reflect mirrors around the edge
    // elements without repeating them; replicate repeats them.
    const int64_t lo = -pl, hi = size + pr;
    const int64_t a_end = std::min<int64_t>(hi, 0);
    const int64_t b_lo = std::max<int64_t>(lo, 0), b_hi = std::min(hi, size);
    const int64_t c_lo = std::max(lo, size);
    DimMap m;
    if (mode == PadMode::Reflect) {
      m.push(-lo, a_end - lo, -1);
      m.push(b_lo, b_hi - b_lo, 1);
      m.push(2 * (size - 1) - c_lo, hi - c_lo, -1);
    } else {
      m.push(0, a_end - lo, 0);
      m.push(b_lo, b_hi - b_lo, 1);
      m.push(size - 1, hi - c_lo, 0);
    }
    maps[i] = m;
  }
  return gather_new(t, maps);
}

// roll with one shift per dim in dims (at least one of each).
Tensor roll_along_dims(const Tensor& t, IntArrayRef shifts, IntArrayRef dims) {
  EMBER_CHECK(shifts.size() == dims.size(),
              "[roll] shifts and dimensions must align. shifts: ", shifts.size(),
              ", dims: ", dims.size());
  EMBER_CHECK(t.dim() > 0, "[roll] dimension specified as ", dims[0],
              " but tensor has no dimensions");
  // Rolls along the same dim add up, so every dim needs one total shift.
  std::vector<int64_t> total(t.dim(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], t.dim(), "roll");
    const int64_t size = t.sizes()[d];
    if (size > 0) total[d] = ((total[d] + shifts[i] % size) % size + size) % size;
  }
  if (t.numel() == 0) return t.clone();
  IndexMaps maps(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) {
    // Output k reads input (k - shift) mod size: the tail first, then the head.
    const int64_t size = t.sizes()[d];
    maps[d].push(size - total[d], total[d], 1);
    maps[d].push(0, size - total[d], 1);
  }
  return gather_new(t, maps);
}

}  // namespace

Tensor flip(const Tensor& t, IntArrayRef dims) {
  OpScope scope("flip", {&t});
  GatherName gather_name("FlipBackward0");
  check_defined(t, "flip");
  IndexMaps maps = identity_maps(t.sizes());
  std::vector<bool> seen(std::max<int64_t>(t.dim(), 1), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, t.dim(), "flip");
    EMBER_CHECK(!seen[w], "[flip] dim ", w, " appears multiple times in the list of dims ", dims);
    seen[w] = true;
    if (t.dim() == 0) continue;
    maps[w] = DimMap();
    maps[w].push(t.sizes()[w] - 1, t.sizes()[w], -1);
  }
  return gather_new(t, maps);
}

Tensor roll(const Tensor& t, IntArrayRef shifts, IntArrayRef dims) {
  OpScope scope("roll", {&t});
  GatherName gather_name("RollBackward0");
  check_defined(t, "roll");
  EMBER_CHECK(!shifts.empty(), "[roll] `shifts` required");
  if (dims.empty() && shifts.size() == 1) {
    // Rolls the flattened elements, then restores the shape.
    const int64_t dim0 = 0;
    return roll_along_dims(t.reshape({-1}), shifts, IntArrayRef(dim0)).view(t.sizes());
  }
  return roll_along_dims(t, shifts, dims);
}

Tensor tile(const Tensor& t, IntArrayRef dims) {
  OpScope scope("tile", {&t});
  check_defined(t, "tile");
  // Fewer repeats than dims: the missing leading ones are 1.
  std::vector<int64_t> reps(dims.begin(), dims.end());
  if (static_cast<int64_t>(reps.size()) < t.dim()) {
    reps.insert(reps.begin(), t.dim() - reps.size(), 1);
  }
  return repeat_impl(t, reps, "tile");
}

Tensor repeat_interleave(const Tensor& t, int64_t repeats, std::optional<int64_t> dim) {
  OpScope scope("repeat_interleave", {&t});
  check_defined(t, "repeat_interleave");
  EMBER_CHECK(repeats >= 0, "[repeat_interleave] repeats can not be negative, got ", repeats);
  auto [in, d] = interleave_input(t, dim);
  GatherName gather_name("IndexSelectBackward0");
  return repeat_scalar(in, d, repeats);
}

Tensor tril(const Tensor& t, int64_t diagonal) {
  jit::detail::TraceOp trace("tril");
  Tensor out = [&]() -> Tensor {
  OpScope scope("tril", {&t});
  Tensor out = tri_impl(t, diagonal, true, "tril");
  if (autograd::needs_grad(t)) autograd::fn::tri(true, diagonal, t, out);
  return out;
}();
  if (trace.recording()) trace.record({t}, {{"diagonal", Value(diagonal)}}, out);
  return out;
}

Tensor triu(const Tensor& t, int64_t diagonal) {
  jit::detail::TraceOp trace("triu");
  Tensor out = [&]() -> Tensor {
  OpScope scope("triu", {&t});
  Tensor out = tri_impl(t, diagonal, false, "triu");
  if (autograd::needs_grad(t)) autograd::fn::tri(false, diagonal, t, out);
  return out;
}();
  if (trace.recording()) trace.record({t}, {{"diagonal", Value(diagonal)}}, out);
  return out;
}

Tensor pad(const Tensor& t, IntArrayRef pad, std::string_view mode, double value) {
  OpScope scope("pad", {&t});
  check_defined(t, "pad");
  const PadMode m = parse_pad_mode(mode);
  EMBER_CHECK(pad.size() % 2 == 0, "[pad] padding length must be divisible by 2, got ", pad.size(),
              " values ", pad);
  EMBER_CHECK(static_cast<int64_t>(pad.size()) <= 2 * t.dim(),
              "[pad] padding length too large: ", pad.size(), " values pad ", pad.size() / 2,
              " dims, but the input has only ", t.dim(), " (sizes ", t.sizes(), ")");
  if (m == PadMode::Constant) return constant_pad(t, pad, value);
  static const char* const kNames[2][3] = {
      {"ReflectionPad1DBackward0", "ReflectionPad2DBackward0", "ReflectionPad3DBackward0"},
      {"ReplicationPad1DBackward0", "ReplicationPad2DBackward0", "ReplicationPad3DBackward0"}};
  const size_t np = std::clamp<size_t>(pad.size() / 2, 1, 3);
  GatherName gather_name(kNames[m == PadMode::Reflect ? 0 : 1][np - 1]);
  return index_pad(t, pad, m, value);
}

Tensor one_hot(const Tensor& t, int64_t num_classes) {
  OpScope scope("one_hot", {&t});
  check_defined(t, "one_hot");
  EMBER_CHECK(t.dtype() == kInt64,
              "[one_hot] one_hot is only applicable to index tensor: expected dtype int64, got ",
              t.dtype());
  DimVector shape(t.sizes());
  if (t.numel() == 0) {
    EMBER_CHECK(num_classes > 0,
                "[one_hot] can not infer total number of classes from empty tensor; pass "
                "num_classes (got ", num_classes, ")");
    shape.push_back(num_classes);
    return zeros(shape, TensorOptions(kInt64));
  }
  const Tensor x = t.contiguous();
  const int64_t* p = x.data_ptr<int64_t>();
  const int64_t n = x.numel();
  const auto [lo, hi] = std::minmax_element(p, p + n);
  EMBER_CHECK(*lo >= 0, "[one_hot] class values must be non-negative, got ", *lo);
  if (num_classes == -1) {
    num_classes = *hi + 1;
  } else {
    EMBER_CHECK(num_classes > *hi, "[one_hot] class values must be smaller than num_classes (",
                num_classes, "), got ", *hi);
  }
  shape.push_back(num_classes);
  Tensor out = zeros(shape, TensorOptions(kInt64));
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) o[i * num_classes + p[i]] = 1;
  return out;
}

// ---- Tensor methods ----

Tensor Tensor::flip(IntArrayRef dims) const { return ember::flip(*this, dims); }

Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const {
  return ember::roll(*this, shifts, dims);
}

Tensor Tensor::repeat(IntArrayRef repeats) const {
  OpScope scope("repeat", {this});
  return repeat_impl(*this, repeats, "repeat");
}

Tensor Tensor::tile(IntArrayRef dims) const { return ember::tile(*this, dims); }

Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim) const {
  return ember::repeat_interleave(*this, repeats, dim);
}

Tensor Tensor::repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim) const {
  OpScope scope("repeat_interleave", {this, &repeats});
  check_defined(*this, "repeat_interleave");
  EMBER_CHECK(repeats.defined(), "[repeat_interleave] repeats is an undefined tensor");
  EMBER_CHECK(repeats.dtype() == kInt64 || repeats.dtype() == kInt32,
              "[repeat_interleave] repeats has to be an int64 or int32 tensor, got dtype ",
              repeats.dtype());
  auto [in, d] = interleave_input(*this, dim);
  const int64_t size = in.sizes()[d];
  std::vector<int64_t> counts;
  if (repeats.dim() == 0 || (repeats.dim() == 1 && repeats.sizes()[0] == 1)) {
    GatherName gather_name("IndexSelectBackward0");
    return repeat_scalar(in, d, repeats.to_vector<int64_t>()[0]);
  } else {
    EMBER_CHECK(repeats.dim() == 1,
                "[repeat_interleave] repeats must be 0-dim or 1-dim tensor, got sizes ",
                repeats.sizes());
    EMBER_CHECK(repeats.sizes()[0] == size,
                "[repeat_interleave] repeats must have the same size as input along dim: "
                "repeats has ", repeats.sizes()[0], " elements, input has size ", size,
                " at dim ", d);
    EMBER_CHECK(size <= (int64_t{1} << 31), "[repeat_interleave] input dim ", d, " has ", size,
                " rows; at most 2^31 are supported");
    counts = repeats.to_vector<int64_t>();
  }
  for (int64_t c : counts) {
    EMBER_CHECK(c >= 0, "[repeat_interleave] repeats can not be negative, got ", c);
  }
  GatherName gather_name("IndexSelectBackward0");
  return repeat_counts(in, d, counts);
}

Tensor Tensor::tril(int64_t diagonal) const { return ember::tril(*this, diagonal); }

Tensor Tensor::triu(int64_t diagonal) const { return ember::triu(*this, diagonal); }

}  // namespace ember
