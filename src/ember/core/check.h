#pragma once
// Internal: EMBER_CHECK builds an ember::Error message only when the check fails,
// so checks on the hot path cost one branch. Not part of the installed API surface.

#include <sstream>
#include <string>

#include "ember/core/error.h"

namespace ember::detail {

template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename... Args>
[[noreturn]] void throw_error(const Args&... args) {
  throw Error(str_cat(args...));
}

}  // namespace ember::detail

#define EMBER_LIKELY(x) __builtin_expect(!!(x), 1)
#define EMBER_UNLIKELY(x) __builtin_expect(!!(x), 0)

// EMBER_CHECK(cond, "[op] message parts", value, ...): throws ember::Error when cond is false.
#define EMBER_CHECK(cond, ...)                                \
  do {                                                         \
    if (EMBER_UNLIKELY(!(cond))) {                             \
      ::ember::detail::throw_error(__VA_ARGS__);               \
    }                                                          \
  } while (0)

#define EMBER_ERROR(...) ::ember::detail::throw_error(__VA_ARGS__)
