// Tensor printing that reproduces PyTorch 1.13's repr (torch/_tensor_str.py): the same
// choice between integer, fixed and scientific float formats, the same column widths,
// summarisation with "..." and line wrapping, and the same suffixes.

#include "ember/core/print.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "ember/autograd/autograd_meta.h"
#include "ember/autograd/node.h"
#include "ember/core/tensor.h"
#include "ember/kernels/cpu/dispatch.h"

namespace ember {

namespace {

std::mutex g_mutex;
PrintOptions g_options;

// One element, read as double (floating, via float for 16-bit types), int64 or bool.
struct Value {
  double d = 0;
  int64_t i = 0;
};

Value read(const Tensor& t, int64_t elem_offset) {
  Value v;
  const char* p = static_cast<const char*>(t.data_ptr()) + elem_offset * static_cast<int64_t>(t.element_size());
  kernels::dispatch_all(t.dtype(), "print", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T x;
    std::memcpy(&x, p, sizeof(T));
    if constexpr (std::is_integral_v<T>) {
      v.i = static_cast<int64_t>(x);
    } else if constexpr (sizeof(T) == 2) {
      v.d = static_cast<double>(static_cast<float>(x));
    } else {
      v.d = static_cast<double>(x);
    }
  });
  return v;
}

std::string fmt(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), spec, v);
  return buf;
}

class Formatter {
 public:
  Formatter(DType dtype, const std::vector<Value>& vals, const PrintOptions& opt)
      : floating_(is_floating_point(dtype)), bool_(dtype == kBool), opt_(opt) {
    if (!floating_) {
      for (const auto& v : vals) max_width_ = std::max(max_width_, raw(v).size());
      return;
    }
    std::vector<double> nz;
    for (const auto& v : vals) {
      if (std::isfinite(v.d) && v.d != 0) nz.push_back(v.d);
    }
    if (nz.empty()) return;
    double mn = std::abs(nz[0]), mx = mn;
    for (double x : nz) {
      mn = std::min(mn, std::abs(x));
      mx = std::max(mx, std::abs(x));
      if (x != std::ceil(x)) int_mode_ = false;
    }
    if (int_mode_) {
      if (mx / mn > 1000. || mx > 1.e8) {
        sci_mode_ = true;
        for (double x : nz) max_width_ = std::max(max_width_, sci(x).size());
      } else {
        for (double x : nz) max_width_ = std::max(max_width_, fmt("%.0f", x).size() + 1);
      }
    } else if (mx / mn > 1000. || mx > 1.e8 || mn < 1.e-4) {
      sci_mode_ = true;
      for (double x : nz) max_width_ = std::max(max_width_, sci(x).size());
    } else {
      for (double x : nz) max_width_ = std::max(max_width_, fixed(x).size());
    }
  }

  size_t width() const { return max_width_; }

  std::string format(const Value& v) const {
    std::string s;
    if (!floating_) {
      s = raw(v);
    } else if (std::isnan(v.d)) {
      s = "nan";
    } else if (sci_mode_) {
      s = sci(v.d);
    } else if (int_mode_) {
      s = fmt("%.0f", v.d);
      if (std::isfinite(v.d)) s += '.';
    } else {
      s = fixed(v.d);
    }
    if (s.size() < max_width_) s.insert(0, max_width_ - s.size(), ' ');
    return s;
  }

 private:
  std::string raw(const Value& v) const {
    if (bool_) return v.i ? "True" : "False";
    return std::to_string(v.i);
  }
  std::string sci(double x) const {
    if (std::isnan(x)) return "nan";
    return fmt(("%." + std::to_string(opt_.precision) + "e").c_str(), x);
  }
  std::string fixed(double x) const {
    return fmt(("%." + std::to_string(opt_.precision) + "f").c_str(), x);
  }

  bool floating_;
  bool bool_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  size_t max_width_ = 1;
  const PrintOptions& opt_;
};

// A strided walker over the tensor without copying it.
struct View {
  const Tensor* t;
  std::vector<int64_t> sizes, strides;
  int64_t offset;  // in elements, relative to t's first element
  View sub(int64_t i) const {
    View v{t, {sizes.begin() + 1, sizes.end()}, {strides.begin() + 1, strides.end()}, offset + i * strides[0]};
    return v;
  }
};

// The values the formatter sees: all of them, or the edge items when summarising.
void collect(const View& v, bool summarize, const PrintOptions& opt, std::vector<Value>& out) {
  if (v.sizes.empty()) {
    out.push_back(read(*v.t, v.offset));
    return;
  }
  const int64_t n = v.sizes[0];
  const int64_t e = opt.edgeitems;
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * e && i >= e && i < n - e) continue;
    collect(v.sub(i), summarize, opt, out);
  }
}

std::string vector_str(const View& v, size_t indent, bool summarize, const Formatter& f,
                       const PrintOptions& opt) {
  const size_t element_length = f.width() + 2;
  const int64_t per_line =
      std::max<int64_t>(1, static_cast<int64_t>(std::floor(
                               static_cast<double>(opt.linewidth - static_cast<int64_t>(indent)) /
                               static_cast<double>(element_length))));
  const int64_t n = v.sizes[0], e = opt.edgeitems;
  std::vector<std::string> data;
  if (summarize && e == 0) {
    data.push_back("...");
  } else {
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * e && i >= e && i < n - e) {
        if (i == e) data.push_back(" ...");
        continue;
      }
      data.push_back(f.format(read(*v.t, v.offset + i * v.strides[0])));
    }
  }
  std::string out = "[";
  for (size_t i = 0; i < data.size(); ++i) {
    if (i > 0) {
      if (static_cast<int64_t>(i) % per_line == 0) {
        out.append(",\n").append(indent + 1, ' ');
      } else {
        out += ", ";
      }
    }
    out += data[i];
  }
  return out + "]";
}

std::string tensor_str(const View& v, size_t indent, bool summarize, const Formatter& f,
                       const PrintOptions& opt) {
  const size_t dim = v.sizes.size();
  if (dim == 0) return f.format(read(*v.t, v.offset));
  if (dim == 1) return vector_str(v, indent, summarize, f, opt);
  const int64_t n = v.sizes[0], e = opt.edgeitems;
  std::vector<std::string> slices;
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * e && i >= e && i < n - e) {
      if (i == e) slices.push_back("...");
      continue;
    }
    slices.push_back(tensor_str(v.sub(i), indent + 1, summarize, f, opt));
  }
  std::string sep(1, ',');
  sep.append(dim - 1, '\n').append(indent + 1, ' ');
  std::string out = "[";
  for (size_t i = 0; i < slices.size(); ++i) out += (i ? sep : "") + slices[i];
  return out + "]";
}

std::string shape_tuple(IntArrayRef s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  if (s.size() == 1) out += ",";
  return out + ")";
}

}  // namespace

void set_printoptions(const PrintOptions& options) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_options = options;
}

PrintOptions get_printoptions() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_options;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "[ Tensor (undefined) ]";
  const PrintOptions opt = get_printoptions();
  const std::string prefix = "tensor(";
  const size_t indent = prefix.size();
  std::vector<std::string> suffixes;
  const DType dt = t.dtype();
  const bool default_dtype = dt == get_default_dtype() || dt == kInt64 || dt == kBool;
  std::string body;
  if (t.numel() == 0) {
    if (t.dim() != 1) suffixes.push_back(std::string("size=").append(shape_tuple(t.sizes())));
    if (dt != get_default_dtype()) suffixes.push_back(std::string("dtype=ember.").append(dtype_name(dt)));
    body = "[]";
  } else {
    if (!default_dtype) suffixes.push_back(std::string("dtype=ember.").append(dtype_name(dt)));
    const bool summarize = t.numel() > opt.threshold;
    View v{&t, t.sizes().vec(), t.strides().vec(), 0};
    std::vector<Value> vals;
    collect(v, summarize, opt, vals);
    Formatter f(dt, vals, opt);
    body = tensor_str(v, indent, summarize, f, opt);
  }
  // As PyTorch: a graph output shows its backward node, a leaf that requires grad says so.
  if (auto fn = t.grad_fn()) {
    suffixes.push_back("grad_fn=<" + fn->name() + ">");
  } else if (t.requires_grad()) {
    suffixes.push_back("requires_grad=True");
  }
  std::string out = prefix + body;
  // Python's len(s) - s.rfind('\n') + 1, where rfind gives -1 when there is no newline.
  const size_t nl = out.rfind('\n');
  size_t last_line_len = nl == std::string::npos ? out.size() + 2 : out.size() - nl + 1;
  for (const auto& s : suffixes) {
    if (last_line_len + s.size() + 2 > static_cast<size_t>(opt.linewidth)) {
      out.append(",\n").append(indent, ' ').append(s);
      last_line_len = indent + s.size();
    } else {
      out += ", " + s;
      last_line_len += s.size() + 2;
    }
  }
  return os << out << ')';
}

}  // namespace ember
