#include "ember/serialize/value_json.h"

#include <cmath>

#include "ember/core/dtype.h"
#include "ember/serialize/json.h"
#include "ember/serialize/value.h"

namespace ember {
namespace {
void append_text(std::string& out, const std::string& s) {
  json::append_string(out, json::is_valid_utf8(s) ? s : std::string("(invalid utf-8)"));
}
}  // namespace

void append_value_json(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.to_bool() ? "true" : "false"; return;
    case Value::Kind::Int: json::append_int(out, v.to_int()); return;
    case Value::Kind::Double: {
      const double d = v.to_double();
      if (std::isfinite(d)) {
        json::append_double(out, d);
      } else {
        out += std::isnan(d) ? "\"nan\"" : (d > 0 ? "\"inf\"" : "\"-inf\"");
      }
      return;
    }
    case Value::Kind::String: append_text(out, v.to_string()); return;
    case Value::Kind::Tensor: {
      const Tensor& t = v.to_tensor();
      std::string d = "tensor " + std::string(dtype_name(t.dtype())) + "[";
      for (int64_t k = 0; k < t.dim(); ++k) {
        if (k) d += ',';
        d += std::to_string(t.size(k));
      }
      append_text(out, d + "]");
      return;
    }
    case Value::Kind::List: {
      out += "[";
      bool first = true;
      for (const Value& e : v.to_list()) {
        if (!first) out += ", ";
        first = false;
        append_value_json(out, e);
      }
      out += "]";
      return;
    }
    case Value::Kind::Dict: {
      out += "{";
      bool first = true;
      for (const auto& it : v.to_dict()) {
        if (!first) out += ", ";
        first = false;
        append_text(out, it.key());
        out += ": ";
        append_value_json(out, it.value());
      }
      out += "}";
      return;
    }
  }
}

std::string value_to_json(const Value& v) {
  std::string out;
  append_value_json(out, v);
  return out;
}

}  // namespace ember
