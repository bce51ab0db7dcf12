#include "ember/core/error.h"

#include "ember/core/op_scope.h"

namespace ember {

namespace {

// The op of a "[op] message" text: a non-empty bracketed word at the very start, followed
// by one space. Anything else has no prefix.
size_t prefix_len(std::string_view what) {
  if (what.size() < 3 || what[0] != '[') return 0;
  for (size_t i = 1; i < what.size(); ++i) {
    const char c = what[i];
    if (c == ']') return i > 1 && i + 1 < what.size() && what[i + 1] == ' ' ? i - 1 : 0;
    if (c == '[' || c == ' ' || c == '\n') return 0;
  }
  return 0;
}

}  // namespace

Error::Parts Error::compose(std::string_view op, std::string_view message, bool own_op) {
  // Note [Errors name the op the user called].
  if (const char* outer = OpScope::outermost(); outer != nullptr && !own_op) op = outer;
  Parts parts;
  if (op.empty()) {
    parts.what.assign(message);
    parts.op_len = 0;
    return parts;
  }
  parts.what.reserve(op.size() + message.size() + 3);
  parts.what.append("[").append(op).append("] ").append(message);
  parts.op_len = op.size();
  return parts;
}

Error::Parts Error::parse(const std::string& what) {
  const std::string_view w(what);
  const size_t n = prefix_len(w);
  if (n == 0) return compose({}, w);
  return compose(w.substr(1, n), w.substr(n + 3));
}

Error::Error(const std::string& what) : Error(parse(what)) {}

Error::Error(std::string_view op, std::string_view message) : Error(compose(op, message)) {}

Error::Error(OwnOp, std::string_view op, std::string_view message) : Error(compose(op, message, true)) {}

}  // namespace ember
