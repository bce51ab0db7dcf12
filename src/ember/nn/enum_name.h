// libtorch's printed name of a string-valued option: "nearest-exact" -> "kNearestExact"
// (module printing and functional error messages). Internal to src/ember/nn.
#pragma once

#include <string>

namespace ember::nn::detail {
std::string enum_name(const std::string& s);
}  // namespace ember::nn::detail
