#include "ember/nn/modules/any.h"

#include <cxxabi.h>

#include <cstdlib>

namespace ember::nn {
namespace detail {

std::string type_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = (status == 0 && demangled) ? demangled : type.name();
  std::free(demangled);
  return name;
}

void throw_forward_arity(const std::string& module, size_t expected, size_t received) {
  std::string msg = module + "'s forward() method expects " + std::to_string(expected) +
                    " argument(s), but received " + std::to_string(received) + ".";
  if (received < expected) {
    msg += " If " + module +
           "'s forward() method has default arguments, please make sure the forward() method is declared with a "
           "corresponding `FORWARD_HAS_DEFAULT_ARGS` macro.";
  }
  throw Error(msg);
}

void throw_forward_arity_range(const std::string& module, size_t required, size_t max, size_t received) {
  throw Error(module + "'s forward() method expects at least " + std::to_string(required) +
              " argument(s) and at most " + std::to_string(max) + " argument(s), but received " +
              std::to_string(received) + ".");
}

void throw_argument_type(size_t index, const std::type_info& expected, const std::type_info& received) {
  throw Error("Expected argument #" + std::to_string(index) + " to be of type " + type_name(expected) +
              ", but received value of type " + type_name(received));
}

void throw_empty_any_module(const char* what) {
  throw Error(std::string("Cannot call ") + what + " on an empty AnyModule");
}

void throw_any_module_cast(const std::type_info& held, const std::type_info& asked) {
  throw Error("Attempted to cast module of type " + type_name(held) + " to type " + type_name(asked));
}

}  // namespace detail

bool Module::_forward_has_default_args() { return false; }
unsigned int Module::_forward_num_required_args() { return 0; }
std::vector<AnyValue> Module::_forward_populate_default_args(std::vector<AnyValue>&& arguments) {
  return std::move(arguments);
}

}  // namespace ember::nn
