#include "ember/serialize/json.h"

#include <charconv>
#include <cmath>
#include <string>
#include <unordered_set>

namespace ember::json {

const Json* Json::find(std::string_view key) const {
  for (const auto& [k, v] : object) {
    if (k == key) return &v;
  }
  return nullptr;
}

const char* Json::type_name() const {
  switch (type) {
    case Type::Null: return "null";
    case Type::Bool: return "boolean";
    case Type::Int: return "integer";
    case Type::Double: return "number";
    case Type::String: return "string";
    case Type::Array: return "array";
    case Type::Object: return "object";
  }
  return "?";
}

namespace {

// Length of the UTF-8 sequence starting at s[i], or 0 if it is malformed.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  Parser(std::string_view text, int max_depth, uint64_t max_values, bool compact)
      : text_(text), max_depth_(max_depth), max_values_(max_values), compact_(compact) {}

  uint64_t values() const { return values_; }

  Json parse_document() {
    skip_ws();
    Json v = parse_value(0);
    skip_ws();
    if (pos_ != text_.size()) fail("unexpected data after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw ParseError(what + " at byte " + std::to_string(pos_)); }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  void skip_ws() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  void expect(char c) {
    if (peek() != c || at_end()) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  void expect_word(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) fail("invalid literal");
    pos_ += w.size();
  }

  Json parse_value(int depth) {
    if (at_end()) fail("unexpected end of input");
    if (++values_ > max_values_) fail("more than " + std::to_string(max_values_) + " values");
    Json v;
    switch (peek()) {
      case '{': parse_object(v, depth + 1); break;
      case '[': parse_array(v, depth + 1); break;
      case '"':
        v.type = Json::Type::String;
        v.s = parse_string();
        break;
      case 't':
        expect_word("true");
        v.type = Json::Type::Bool;
        v.b = true;
        break;
      case 'f':
        expect_word("false");
        v.type = Json::Type::Bool;
        break;
      case 'n': expect_word("null"); break;
      default: parse_number(v); break;
    }
    return v;
  }

  void check_depth(int depth) {
    if (depth > max_depth_) fail("nesting deeper than " + std::to_string(max_depth_) + " levels");
  }

  void parse_object(Json& v, int depth) {
    check_depth(depth);
    v.type = Json::Type::Object;
    ++pos_;
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      return;
    }
    std::unordered_set<std::string> seen;
    while (true) {
      skip_ws();
      if (peek() != '"') fail("expected a string key");
      std::string key = parse_string();
      if (!seen.insert(key).second) fail("duplicate key \"" + key + "\"");
      skip_ws();
      expect(':');
      skip_ws();
      Json member = parse_value(depth);
      v.object.emplace_back(std::move(key), std::move(member));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return;
    }
  }

  void parse_array(Json& v, int depth) {
    check_depth(depth);
    v.type = Json::Type::Array;
    ++pos_;
    skip_ws();
    if (peek() == ']') {
      ++pos_;
      return;
    }
    if (compact_ && (peek() == '-' || (peek() >= '0' && peek() <= '9')) && parse_numbers(v)) return;
    while (true) {
      skip_ws();
      v.array.push_back(parse_value(depth));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return;
    }
  }

  // The compact form of an array of numbers (Json::compact). Returns true when the array
  // ended as numbers only; otherwise rewinds to its first element and returns false for
  // the general loop to read it again.
  bool parse_numbers(Json& v) {
    const size_t start = pos_;
    const uint64_t values_at_start = values_;
    Json n;
    while (true) {
      skip_ws();
      if (++values_ > max_values_) fail("more than " + std::to_string(max_values_) + " values");
      parse_number(n);
      v.numbers.push_back(n.type == Json::Type::Int ? static_cast<double>(n.i) : n.d);
      if (n.type == Json::Type::Int && v.all_integers) {
        v.integers.push_back(n.i);
      } else if (v.all_integers) {
        v.all_integers = false;
        v.integers.clear();
      }
      skip_ws();
      if (peek() == ']') {
        ++pos_;
        v.compact = true;
        return true;
      }
      expect(',');
      skip_ws();
      if (!(peek() == '-' || (peek() >= '0' && peek() <= '9'))) break;
    }
    // A non-number follows: read the array again the general way.
    v.numbers.clear();
    v.integers.clear();
    v.all_integers = true;
    pos_ = start;
    values_ = values_at_start;
    return false;
  }

  uint32_t parse_hex4() {
    if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
    uint32_t cp = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text_[pos_++];
      cp <<= 4;
      if (c >= '0' && c <= '9') {
        cp |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        cp |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        cp |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        fail("invalid hex digit in \\u escape");
      }
    }
    return cp;
  }

  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("unescaped control character in string");
      if (c == '\\') {
        ++pos_;
        if (at_end()) fail("unterminated string");
        const char e = text_[pos_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            uint32_t cp = parse_hex4();
            if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate in \\u escape");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              if (text_.substr(pos_, 2) != "\\u") fail("high surrogate without a low surrogate");
              pos_ += 2;
              const uint32_t lo = parse_hex4();
              if (lo < 0xDC00 || lo > 0xDFFF) fail("high surrogate without a low surrogate");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            append_utf8(out, cp);
            break;
          }
          default: --pos_; fail("invalid escape in string");
        }
        continue;
      }
      const size_t n = utf8_sequence_length(text_, pos_);
      if (n == 0) fail("invalid UTF-8 in string");
      out.append(text_.substr(pos_, n));
      pos_ += n;
    }
  }

  void parse_number(Json& v) {
    const size_t start = pos_;
    bool integral = true;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      fail("invalid value");
    }
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("invalid number");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("invalid number");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integral) {
      int64_t i = 0;
      auto [p, ec] = std::from_chars(first, last, i);
      if (ec == std::errc() && p == last) {
        v.type = Json::Type::Int;
        v.i = i;
        return;
      }
      // The format keeps integers exact: one beyond int64 is an error, not a rounded double.
      fail("integer " + std::string(first, static_cast<size_t>(last - first)) + " does not fit in int64");
    }
    double d = 0;
    auto [p, ec] = std::from_chars(first, last, d);
    if (ec == std::errc::result_out_of_range) {
      // from_chars leaves d untouched on overflow/underflow; decide which it was.
      const std::string_view num(first, static_cast<size_t>(last - first));
      const size_t epos = num.find_first_of("eE");
      const bool tiny = epos != std::string_view::npos && num.size() > epos + 1 && num[epos + 1] == '-';
      // JSON has no infinities; a number that overflows a double is refused, not read as inf.
      if (!tiny) fail("number " + std::string(num) + " is outside the range of a double");
      d = num[0] == '-' ? -0.0 : 0.0;
    } else if (ec != std::errc() || p != last) {
      fail("invalid number");
    }
    v.type = Json::Type::Double;
    v.d = d;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int max_depth_;
  uint64_t max_values_;
  uint64_t values_ = 0;
  bool compact_ = false;
};

}  // namespace

Json parse(std::string_view text, int max_depth, uint64_t max_values, uint64_t* values_used, bool compact_numbers) {
  Parser parser(text, max_depth, max_values, compact_numbers);
  Json doc = parser.parse_document();
  if (values_used != nullptr) *values_used = parser.values();
  return doc;
}

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void append_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

void append_double(std::string& out, double v) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  (void)ec;  // 64 bytes always suffice for the shortest form of a double
  std::string_view text(buf, static_cast<size_t>(p - buf));
  out += text;
  if (text.find_first_of(".eE") == std::string_view::npos) out += ".0";
}

void append_int(std::string& out, int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  (void)ec;
  out.append(buf, p);
}

}  // namespace ember::json
