#pragma once
// The libtorch compatibility header: a program written against libtorch's C++ API ports
// by replacing `#include <torch/torch.h>` with `#include <ember/torch.h>`.
//
// It maps the torch::, at:: and c10:: namespaces onto ember:: (every ember name is
// reachable under them), adds libtorch's spellings that ember does not use itself
// (TORCH_MODULE, TORCH_ARG, TORCH_CHECK, TORCH_WARN, c10::optional, c10::irange,
// c10::ArrayRef, c10::Warning and its handlers ...), maps torch::data onto the
// libtorch-shaped data API (ember/data/torch_data.h), and makes the default generator
// reproduce PyTorch's CPU random numbers (GeneratorKind::MT19937) so that a program
// seeded with torch::manual_seed(s) initialises the same weights as under libtorch;
// set EMBER_GENERATOR=philox to keep ember's thread-count-independent generator.
// What differs, deliberately, is listed in docs/porting_from_libtorch.md.
//
// ember.h users are unaffected: nothing here is included by ember.h.

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <ranges>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/autograd/undefined_grad.h"
#include "ember/autograd/zero_grad_default.h"
#include "ember/compat/aten.h"
#include "ember/compat/library.h"
#include "ember/core/check.h"
#include "ember/data/torch_data.h"
#include "ember/ember.h"

namespace ember::autograd {
// libtorch's `Variable` is a Tensor.
using Variable = ::ember::Tensor;
using ::ember::InferenceMode;
}  // namespace ember::autograd

namespace c10 {
using namespace ::ember;

template <class T>
using optional = std::optional<T>;
using std::make_unique;
using std::make_optional;
using std::nullopt;
using std::nullopt_t;
using string_view = std::string_view;

// [begin, end) as a range of the common integer type (empty when end < begin).
template <class I1, class I2>
inline auto irange(I1 begin, I2 end) {
  using I = std::common_type_t<I1, I2>;
  return std::views::iota(static_cast<I>(begin), std::max(static_cast<I>(begin), static_cast<I>(end)));
}
template <class I>
inline auto irange(I end) {
  return irange(I(0), end);
}

// Streams every argument into one string.
template <class... Args>
inline std::string str(const Args&... args) {
  std::ostringstream ss;
  (ss << ... << args);
  return ss.str();
}

template <class Container>
inline std::string Join(const std::string& delimiter, const Container& items) {
  std::ostringstream ss;
  bool first = true;
  for (const auto& item : items) {
    if (!first) ss << delimiter;
    ss << item;
    first = false;
  }
  return ss.str();
}

// A non-owning view of contiguous elements (libtorch's c10::ArrayRef), shared with the
// libtorch-style data API.
using ::ember::data::api::ArrayRef;
using TensorList = ArrayRef<::ember::Tensor>;

// Warnings: libtorch routes TORCH_WARN through a WarningHandler that tests replace to
// capture messages. Here the handler sits on top of ember::set_warning_handler.
struct SourceLocation {
  const char* function = "";
  const char* file = "";
  uint32_t line = 0;
};

class WarningHandler {
 public:
  virtual ~WarningHandler() = default;
  virtual void process(const SourceLocation& /*location*/, const std::string& msg, const bool /*verbatim*/) {
    std::cerr << "Warning: " << msg << "\n";
  }
};

class Warning {
 public:
  static WarningHandler* get_warning_handler() {
    WarningHandler* h = current();
    return h ? h : default_handler();
  }
  // Installs handler for every thread (nullptr or the default handler: print to stderr).
  static void set_warning_handler(WarningHandler* handler) {
    current() = handler == default_handler() ? nullptr : handler;
    if (current() == nullptr) {
      ::ember::set_warning_handler(nullptr);
    } else {
      ::ember::set_warning_handler([handler](const std::string& msg) { handler->process({}, msg, false); });
    }
  }
  static void set_warnAlways(bool setting) { ::ember::set_warn_always(setting); }
  static bool get_warnAlways() { return ::ember::warn_always(); }
  // While alive, TORCH_WARN_ONCE warns every time.
  class WarnAlways {
   public:
    explicit WarnAlways(bool setting = true) : prev_(get_warnAlways()) { set_warnAlways(setting); }
    ~WarnAlways() { set_warnAlways(prev_); }

   private:
    bool prev_;
  };

 private:
  static WarningHandler*& current() {
    static WarningHandler* handler = nullptr;
    return handler;
  }
  static WarningHandler* default_handler() {
    static WarningHandler handler;
    return &handler;
  }
};
}  // namespace c10

namespace at {
using namespace ::ember;
using namespace ::ember::aten;
using ::c10::ArrayRef;
using ::c10::TensorList;
}  // namespace at

namespace torch {
using namespace ::ember;
using namespace ::ember::aten;
using ::c10::ArrayRef;
using ::c10::TensorList;
// torch::data is the libtorch-shaped data API (ember/data/torch_data.h); ember's own
// data API stays ember::data.
namespace data = ::ember::data::api;
template <class T>
using optional = std::optional<T>;
using Dtype = ::ember::ScalarType;
using std::make_optional;
using std::make_unique;
using std::nullopt;
// Real namespaces (not only names seen through `using namespace ember`), so that code
// which reopens `namespace torch { namespace nn { ... } }` extends them instead of
// hiding ember's names behind a new, empty namespace.
namespace nn {
using namespace ::ember::nn;
}  // namespace nn
namespace optim {
using namespace ::ember::optim;
}  // namespace optim
namespace autograd {
using namespace ::ember::autograd;
}  // namespace autograd
}  // namespace torch

namespace ember {
// torch::tensor(at::ArrayRef<T>{...}): the elements as a 1-D tensor.
template <class T>
Tensor tensor(data::api::ArrayRef<T> values, const TensorOptions& options = {}) {
  return tensor(std::vector<T>(values.begin(), values.end()), options);
}

namespace detail {
// TORCH_CHECK's message: the caller's parts, or the condition when there are none.
inline std::string torch_check_message(const char* condition) {
  return std::string("Expected ") + condition + " to be true, but got false.";
}
template <class... Args>
inline std::string torch_check_message(const char* /*condition*/, const Args&... parts) {
  return str_cat(parts...);
}

// Seeded programs draw PyTorch's CPU random numbers unless EMBER_GENERATOR says otherwise.
inline const bool torch_generator_selected = [] {
  if (std::getenv("EMBER_GENERATOR") == nullptr) set_default_generator_kind(GeneratorKind::MT19937);
  return true;
}();
// zero_grad() zeroes the gradients, as libtorch 1.13's C++ API does (ember's own default
// sets them to none; zero_grad(true) still does).
inline const bool torch_zero_grad_selected = [] {
  set_zero_grad_sets_to_none(false);
  return true;
}();
}  // namespace detail
}  // namespace ember

// ---- libtorch's macros ----
#define TORCH_MODULE(Name) EMBER_MODULE(Name)
#define TORCH_ARG(T, name) EMBER_OPTIM_ARG(T, name)
// Throws ember::Error (c10::Error) with the message parts when cond is false.
#define TORCH_CHECK(cond, ...) \
  EMBER_CHECK(cond, ::ember::detail::torch_check_message(#cond __VA_OPT__(, ) __VA_ARGS__))
#define TORCH_CHECK_INDEX(cond, ...) TORCH_CHECK(cond __VA_OPT__(, ) __VA_ARGS__)
#define TORCH_CHECK_VALUE(cond, ...) TORCH_CHECK(cond __VA_OPT__(, ) __VA_ARGS__)
#define TORCH_CHECK_TYPE(cond, ...) TORCH_CHECK(cond __VA_OPT__(, ) __VA_ARGS__)
#define TORCH_INTERNAL_ASSERT(cond, ...) TORCH_CHECK(cond __VA_OPT__(, ) __VA_ARGS__)
#define AT_ERROR(...) EMBER_ERROR(__VA_ARGS__)
#define TORCH_WARN(...) ::ember::warn(::ember::detail::str_cat(__VA_ARGS__))
#define TORCH_WARN_ONCE(...)                                                         \
  do {                                                                               \
    static bool ember_warned_once_ = false;                                          \
    if (!ember_warned_once_ || ::c10::Warning::get_warnAlways()) {                   \
      ember_warned_once_ = true;                                                     \
      ::ember::warn(::ember::detail::str_cat(__VA_ARGS__));                          \
    }                                                                                \
  } while (0)
#define C10_UNUSED __attribute__((__unused__))
