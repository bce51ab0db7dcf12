#pragma once
// ember::Error: the one exception type the public API throws for bad input.
// Messages start with the op in brackets and name the offending values, e.g.
// "[view] size [12] is not compatible with input sizes [3, 4] and strides [1, 4]; use reshape()".

#include <stdexcept>
#include <string>

namespace ember {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace ember
