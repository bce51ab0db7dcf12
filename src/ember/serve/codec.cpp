#include "ember/serve/codec.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "ember/core/half.h"
#include "ember/ops/creation.h"
#include "ember/serve/model.h"

namespace ember::serve {
namespace {

int64_t numel_of(const std::vector<int64_t>& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw BadRequest(what + ": shape dims must be >= 0, got " + std::to_string(d));
    if (d != 0 && n > (int64_t{1} << 40) / d) throw BadRequest(what + ": shape is too large");
    n *= d;
  }
  return n;
}

// The leaves of a nested JSON array in order: single values, or whole compact runs of
// numbers (Json::compact).
struct Leaves {
  std::vector<const json::Json*> items;  // a leaf value, or a compact array
  int64_t count = 0;
};

void flatten(const json::Json& v, Leaves& out, int depth, const std::string& what) {
  if (v.type == json::Json::Type::Array) {
    if (depth > 32) throw BadRequest(what + ": data is nested too deeply");
    if (v.compact) {
      out.items.push_back(&v);
      out.count += static_cast<int64_t>(v.numbers.size());
      return;
    }
    for (const json::Json& e : v.array) flatten(e, out, depth + 1, what);
  } else {
    out.items.push_back(&v);
    ++out.count;
  }
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

size_t element_size_of(DType t) {
  switch (t) {
    case kBool:
    case kUInt8:
    case kInt8: return 1;
    case kInt16:
    case kFloat16:
    case DType::BFloat16: return 2;
    case kInt32:
    case kFloat32: return 4;
    default: return 8;
  }
}

std::vector<int64_t> nested_shape(const json::Json& data, const std::string& what) {
  std::vector<int64_t> shape;
  const json::Json* v = &data;
  while (v->type == json::Json::Type::Array) {
    if (v->compact) {
      shape.push_back(static_cast<int64_t>(v->numbers.size()));
      break;
    }
    shape.push_back(static_cast<int64_t>(v->array.size()));
    if (v->array.empty()) break;
    v = &v->array[0];
    if (shape.size() > 32) throw BadRequest(what + ": data is nested too deeply");
  }
  // Every row must agree (not ragged).
  Leaves leaves;
  flatten(data, leaves, 0, what);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (leaves.count != n) throw BadRequest(what + ": data is a ragged nested list (rows of different lengths)");
  return shape;
}

Tensor decode_json_data(const json::Json& data, DType dtype, const std::vector<int64_t>& shape,
                        const std::string& what) {
  const int64_t n = numel_of(shape, what);
  Leaves leaves;
  flatten(data, leaves, 0, what);
  if (leaves.count != n) {
    throw BadRequest(what + ": shape " + shape_text(shape) + " holds " + std::to_string(n) + " elements, data has " +
                     std::to_string(leaves.count));
  }
  using T = json::Json::Type;
  // Calls f(index, leaf) for single values and g(index, compact array) for runs.
  auto each = [&](auto&& single, auto&& run) {
    int64_t i = 0;
    for (const json::Json* e : leaves.items) {
      if (e->type == T::Array) {
        run(i, *e);
        i += static_cast<int64_t>(e->numbers.size());
      } else {
        single(i, *e);
        ++i;
      }
    }
  };
  auto number = [&](int64_t i, const json::Json& e) -> double {
    if (e.type == T::Int) return static_cast<double>(e.i);
    if (e.type == T::Double) return e.d;
    throw BadRequest(what + ": element " + std::to_string(i) + " is " + e.type_name() + ", expected a number");
  };
  if (dtype == kBool) {
    Tensor t = empty(shape, TensorOptions().dtype(kBool));
    bool* p = t.data_ptr<bool>();
    each(
        [&](int64_t i, const json::Json& e) {
          if (e.type == T::Bool) {
            p[i] = e.b;
          } else if (e.type == T::Int && (e.i == 0 || e.i == 1)) {
            p[i] = e.i == 1;
          } else {
            throw BadRequest(what + ": element " + std::to_string(i) + " is " + e.type_name() +
                             ", expected a boolean");
          }
        },
        [&](int64_t i, const json::Json& run) {
          for (size_t k = 0; k < run.numbers.size(); ++k) {
            const double x = run.numbers[k];
            if (x != 0 && x != 1)
              throw BadRequest(what + ": element " + std::to_string(i + static_cast<int64_t>(k)) +
                               " is a number, expected a boolean");
            p[i + static_cast<int64_t>(k)] = x == 1;
          }
        });
    return t;
  }
  if (is_floating_point(dtype)) {
    if (dtype == kFloat64) {
      Tensor t = empty(shape, TensorOptions().dtype(kFloat64));
      double* p = t.data_ptr<double>();
      each([&](int64_t i, const json::Json& e) { p[i] = number(i, e); },
           [&](int64_t i, const json::Json& run) { std::copy(run.numbers.begin(), run.numbers.end(), p + i); });
      return t;
    }
    Tensor t = empty(shape, TensorOptions().dtype(kFloat32));
    float* p = t.data_ptr<float>();
    each([&](int64_t i, const json::Json& e) { p[i] = static_cast<float>(number(i, e)); },
         [&](int64_t i, const json::Json& run) {
           for (size_t k = 0; k < run.numbers.size(); ++k) p[i + static_cast<int64_t>(k)] = static_cast<float>(run.numbers[k]);
         });
    return dtype == kFloat32 ? t : t.to(dtype);
  }
  // Integers: exact, in range.
  int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  if (dtype == kUInt8) lo = 0, hi = 255;
  if (dtype == kInt8) lo = -128, hi = 127;
  if (dtype == kInt16) lo = -32768, hi = 32767;
  if (dtype == kInt32) lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  Tensor t = empty(shape, TensorOptions().dtype(kInt64));
  int64_t* p = t.data_ptr<int64_t>();
  auto put = [&](int64_t i, int64_t x) {
    if (x < lo || x > hi) {
      throw BadRequest(what + ": element " + std::to_string(i) + " = " + std::to_string(x) + " is out of range for " +
                       kserve_dtype(dtype));
    }
    p[i] = x;
  };
  auto not_integer = [&](int64_t i, const char* type) {
    throw BadRequest(what + ": element " + std::to_string(i) + " is " + type + ", expected an integer for " +
                     kserve_dtype(dtype));
  };
  each(
      [&](int64_t i, const json::Json& e) {
        if (e.type != T::Int) not_integer(i, e.type_name());
        put(i, e.i);
      },
      [&](int64_t i, const json::Json& run) {
        if (!run.all_integers) {
          throw BadRequest(what + ": the run of " + std::to_string(run.numbers.size()) + " numbers from element " +
                           std::to_string(i) + " holds one with a fraction or an exponent, expected an integer for " +
                           kserve_dtype(dtype));
        }
        for (size_t k = 0; k < run.integers.size(); ++k) put(i + static_cast<int64_t>(k), run.integers[k]);
      });
  return dtype == kInt64 ? t : t.to(dtype);
}

Tensor decode_binary(std::string_view bytes, DType dtype, const std::vector<int64_t>& shape, const std::string& what) {
  const int64_t n = numel_of(shape, what);
  const size_t need = static_cast<size_t>(n) * element_size_of(dtype);
  if (bytes.size() != need) {
    throw BadRequest(what + ": binary data has " + std::to_string(bytes.size()) + " bytes, shape " + shape_text(shape) +
                     " of " + kserve_dtype(dtype) + " needs " + std::to_string(need));
  }
  Tensor t = empty(shape, TensorOptions().dtype(dtype));
  if (need) std::memcpy(t.data_ptr(), bytes.data(), need);
  if (dtype == kBool) {
    const uint8_t* p = static_cast<const uint8_t*>(t.data_ptr());
    for (size_t i = 0; i < need; ++i)
      if (p[i] > 1) throw BadRequest(what + ": BOOL byte " + std::to_string(i) + " is neither 0 nor 1");
  }
  return t;
}

namespace {
// The shortest text that reads back to the same float or double; null for NaN and
// infinities, which JSON cannot spell.
template <typename T>
void append_real(std::string& out, T v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[40];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_element(std::string& out, const Tensor& t, int64_t i) {
  char buf[40];
  switch (t.dtype()) {
    case kFloat32: append_real(out, t.data_ptr<float>()[i]); return;
    case kFloat64: append_real(out, t.data_ptr<double>()[i]); return;
    case kBool: out += t.data_ptr<bool>()[i] ? "true" : "false"; return;
    case kInt64: {
      auto r = std::to_chars(buf, buf + sizeof buf, t.data_ptr<int64_t>()[i]);
      out.append(buf, r.ptr);
      return;
    }
    default: break;
  }
  // Other dtypes went through a conversion before getting here.
  out += "null";
}

Tensor printable(const Tensor& t) {
  switch (t.dtype()) {
    case kFloat32:
    case kFloat64:
    case kBool:
    case kInt64: return t.contiguous();
    case kFloat16:
    case DType::BFloat16: return t.to(kFloat32).contiguous();
    default: return t.to(kInt64).contiguous();
  }
}

void nested(std::string& out, const Tensor& t, int64_t dim, int64_t& index) {
  if (dim == t.dim()) {
    append_element(out, t, index++);
    return;
  }
  out += '[';
  for (int64_t i = 0; i < t.size(dim); ++i) {
    if (i) out += ',';
    nested(out, t, dim + 1, index);
  }
  out += ']';
}
}  // namespace

void append_flat(std::string& out, const Tensor& t) {
  const Tensor c = printable(t);
  out += '[';
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (i) out += ',';
    append_element(out, c, i);
  }
  out += ']';
}

void append_nested(std::string& out, const Tensor& t) {
  const Tensor c = printable(t);
  int64_t index = 0;
  nested(out, c, 0, index);
}

std::string raw_bytes(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()) * element_size_of(c.dtype()));
}

}  // namespace ember::serve

#include <fstream>
#include <sstream>

#include "ember/core/check.h"
#include "ember/serialize/value.h"

namespace ember::serve {

Value to_value(const json::Json& j) {
  using T = json::Json::Type;
  switch (j.type) {
    case T::Null: return Value();
    case T::Bool: return Value(j.b);
    case T::Int: return Value(j.i);
    case T::Double: return Value(j.d);
    case T::String: return Value(j.s);
    case T::Array: {
      Value::List l;
      for (const json::Json& e : j.array) l.push_back(to_value(e));
      return Value(std::move(l));
    }
    case T::Object: {
      Value::Dict d;
      for (const auto& [k, v] : j.object) d.insert(k, to_value(v));
      return Value(std::move(d));
    }
  }
  return Value();
}

Value read_json_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK(f.good(), "[ember-serve] cannot read ", path);
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    return to_value(json::parse(ss.str(), 64, 1 << 20));
  } catch (const json::ParseError& e) {
    EMBER_ERROR("[ember-serve] ", path, " is not valid JSON: ", e.what());
  }
}

}  // namespace ember::serve
