#pragma once
// Internal: the small JSON reader/writer behind checkpoint headers. Not part of the
// installed API surface (checkpoint.h does not include it).
//
// Why our own instead of nlohmann-json: the loader must treat files as hostile and
// report exactly what is wrong, so it needs a bounded nesting depth, rejection of
// duplicate keys (the safetensors rule), strict UTF-8, integers kept apart from
// doubles, and object order preserved (a state_dict's order is part of its meaning).

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::json {

// A parsed JSON value. Objects keep their keys in file order.
struct Json {
  enum class Type : uint8_t { Null, Bool, Int, Double, String, Array, Object };
  Type type = Type::Null;
  bool b = false;
  int64_t i = 0;  // JSON integers (no fraction or exponent) that fit in int64
  double d = 0;   // every other number
  std::string s;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;
  // Set by parse(..., compact_numbers = true) on an array whose elements are all numbers:
  // they are kept here instead of as one Json each in `array` (which stays empty).
  // `numbers` holds every element as a double; when all_integers, `integers` holds them
  // exactly too. A tensor's data arrives this way ~10x cheaper (ember-serve).
  bool compact = false;
  bool all_integers = true;
  std::vector<double> numbers;
  std::vector<int64_t> integers;

  // The member named key of an object, or nullptr.
  const Json* find(std::string_view key) const;
  // "null", "boolean", "integer", "number", "string", "array", "object".
  const char* type_name() const;
};

// Thrown by parse(); what() says what was wrong and at which byte.
class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses one JSON value that fills `text` (surrounding whitespace allowed). Nesting
// deeper than max_depth, more than max_values values (each costs ~100 bytes of memory),
// duplicate object keys, invalid UTF-8 and lone surrogates are errors.
// values_used, when given, receives how many values the document held.
Json parse(std::string_view text, int max_depth, uint64_t max_values, uint64_t* values_used = nullptr,
           bool compact_numbers = false);

// True when s is well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
bool is_valid_utf8(std::string_view s);

// Appends s as a quoted JSON string: '"', '\\' and control characters escaped, other
// bytes (UTF-8) verbatim. s must be valid UTF-8 (callers check with is_valid_utf8).
void append_string(std::string& out, std::string_view s);
// Appends a finite double in the shortest form that reads back to the same bits,
// always with a '.' or an exponent so it reads back as a double, not an integer.
void append_double(std::string& out, double v);
void append_int(std::string& out, int64_t v);

}  // namespace ember::json
