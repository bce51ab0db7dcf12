#pragma once
// ember::Error: the one exception type the public API throws for bad input.
// Messages start with the op in brackets and name the offending values, e.g.
// "[view] size [12] is not compatible with input sizes [3, 4] and strides [1, 4]; use reshape()".
//
// Note [Errors name the op the user called]: the bracketed op is the public op the user
// called -- the outermost OpScope on the throwing thread (Note [One way in]) -- not the
// helper that noticed the problem. The helper still writes its own "[helper] detail"
// text; the constructor swaps the prefix, so `add` reports "[add] The size of tensor a
// ..." although the check lives in broadcast_shapes. Outside any op the text is kept.
// op() and message() give the two parts separately (for Python's RuntimeError mapping
// and the server's 400 bodies); what() is always "[op] message" (or just the message
// when there is no op).

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ember {

class Error : public std::runtime_error {
 public:
  // what: "[op] message" or a bare message; the prefix becomes the outermost op's name.
  explicit Error(const std::string& what);
  Error(std::string_view op, std::string_view message);
  // An error about the process's configuration (an environment variable, the CPU) rather
  // than the arguments of the op being called: it keeps its own op name even inside an op.
  struct OwnOp {};
  Error(OwnOp, std::string_view op, std::string_view message);

  // The op named in the prefix ("" when there is none).
  std::string_view op() const noexcept {
    return op_len_ == 0 ? std::string_view() : std::string_view(what() + 1, op_len_);
  }
  // The text after the "[op] " prefix.
  std::string_view message() const noexcept {
    return op_len_ == 0 ? std::string_view(what()) : std::string_view(what() + op_len_ + 3);
  }

 private:
  struct Parts {
    std::string what;
    size_t op_len;
  };
  explicit Error(Parts parts) : std::runtime_error(parts.what), op_len_(parts.op_len) {}
  static Parts compose(std::string_view op, std::string_view message, bool own_op = false);
  static Parts parse(const std::string& what);

  size_t op_len_ = 0;  // the op is what()[1, 1 + op_len_); copying stays nothrow
};

}  // namespace ember
