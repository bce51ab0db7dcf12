#pragma once
// AnyValue and AnyModule (libtorch's names): a module whose forward() has any signature,
// called through one type-erased interface. nn::Sequential holds modules this way when
// their forward is not the plain `Tensor forward(const Tensor&)` that Module declares, so
// a Sequential can chain modules taking and returning other types:
//
//   struct AddOne : nn::Module { int forward(int x) { return x + 1; } };
//   nn::AnyModule any(AddOne{});
//   int three = any.forward<int>(2);
//
// Arguments are checked at run time: a wrong type or count is an ember::Error naming the
// module, the argument and both types. Modules with default arguments in forward() declare
// them with FORWARD_HAS_DEFAULT_ARGS({index, AnyValue(default)}, ...).

#include <any>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "ember/core/check.h"
#include "ember/nn/module.h"

namespace ember::nn {

namespace detail {
// The readable name of a type (int, std::string, MyModule).
std::string type_name(const std::type_info& type);
}  // namespace detail

// A value of any copyable type, stored decayed (a string literal as const char*).
class AnyValue {
 public:
  template <typename T, typename = std::enable_if_t<!std::is_same_v<std::decay_t<T>, AnyValue>>>
  explicit AnyValue(T&& value) : value_(std::decay_t<T>(std::forward<T>(value))) {}
  AnyValue(const AnyValue&) = default;
  AnyValue(AnyValue&&) noexcept = default;
  // A value-initialised T built in place: FORWARD_HAS_DEFAULT_ARGS's empty optionals (moving
  // a disengaged std::optional temporary trips GCC 12's -Wmaybe-uninitialized at -O2).
  template <typename T>
  static AnyValue make_default() {
    return AnyValue(std::in_place_type<T>);
  }
  AnyValue& operator=(const AnyValue&) = default;
  AnyValue& operator=(AnyValue&&) noexcept = default;

  // A pointer to the value when it has type T, otherwise nullptr.
  template <typename T>
  T* try_get() {
    return std::any_cast<T>(&value_);
  }
  // The value as T; an ember::Error naming both types when it has another type.
  template <typename T>
  T get() {
    if (T* p = try_get<T>()) return *p;
    EMBER_ERROR("Attempted to cast AnyValue to ", detail::type_name(typeid(T)), ", but its actual type is ",
                detail::type_name(value_.type()));
  }
  const std::type_info& type_info() const noexcept { return value_.type(); }

 private:
  template <typename T>
  explicit AnyValue(std::in_place_type_t<T> tag) : value_(tag) {}
  std::any value_;
};

namespace detail {
template <typename T>
struct ForwardTraits;
template <typename R, typename C, typename... A>
struct ForwardTraits<R (C::*)(A...)> {
  using Return = R;
  using Args = std::tuple<A...>;
  static constexpr size_t arity = sizeof...(A);
};
template <typename R, typename C, typename... A>
struct ForwardTraits<R (C::*)(A...) const> : ForwardTraits<R (C::*)(A...)> {};

// The module class behind T: T itself, or a ModuleHolder's ContainedType.
template <typename T, bool = std::is_base_of_v<Module, T>>
struct ModuleOf {
  using type = T;
};
template <typename T>
struct ModuleOf<T, false> {
  using type = typename T::ContainedType;
};

// True when M has exactly one forward() whose address can be taken.
template <typename M>
concept HasUniqueForward = requires { &M::forward; };

// True when M's forward is Module's own `Tensor forward(const Tensor&)` signature, which
// the virtual call already reaches without type erasure.
template <typename M>
constexpr bool forward_is_tensor_to_tensor() {
  if constexpr (HasUniqueForward<M>) {
    using FT = ForwardTraits<decltype(&M::forward)>;
    return std::is_same_v<typename FT::Return, Tensor> && std::is_same_v<typename FT::Args, std::tuple<const Tensor&>>;
  } else {
    return true;
  }
}

[[noreturn]] void throw_forward_arity(const std::string& module, size_t expected, size_t received);
[[noreturn]] void throw_forward_arity_range(const std::string& module, size_t required, size_t max,
                                            size_t received);
[[noreturn]] void throw_argument_type(size_t index, const std::type_info& expected, const std::type_info& received);
[[noreturn]] void throw_empty_any_module(const char* what);
[[noreturn]] void throw_any_module_cast(const std::type_info& held, const std::type_info& asked);
}  // namespace detail

class AnyModule {
 public:
  AnyModule() = default;
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<Module, M>>>
  explicit AnyModule(std::shared_ptr<M> module) : content_(std::make_shared<Holder<M>>(std::move(module))) {}
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<Module, std::decay_t<M>>>>
  explicit AnyModule(M&& module)
      : AnyModule(std::make_shared<std::decay_t<M>>(std::forward<M>(module))) {}
  template <typename Holder, typename = decltype(std::declval<const Holder&>().ptr()),
            typename = std::enable_if_t<!std::is_base_of_v<Module, std::decay_t<Holder>>>>
  explicit AnyModule(const Holder& holder) : AnyModule(holder.ptr()) {}

  template <typename M, typename = std::enable_if_t<std::is_base_of_v<Module, M>>>
  AnyModule& operator=(std::shared_ptr<M> module) {
    return *this = AnyModule(std::move(module));
  }

  // forward(args...) -> AnyValue; forward<R>(args...) -> R (Tensor by default).
  template <typename... A>
  AnyValue any_forward(A&&... args) {
    if (!content_) detail::throw_empty_any_module("forward()");
    std::vector<AnyValue> values;
    values.reserve(sizeof...(A));
    (values.emplace_back(std::forward<A>(args)), ...);
    return content_->forward(std::move(values));
  }
  template <typename R = Tensor, typename... A>
  R forward(A&&... args) {
    return any_forward(std::forward<A>(args)...).template get<R>();
  }

  // The module as M (M& for a module type, the holder for a ModuleHolder type).
  template <typename T>
  decltype(auto) get() const {
    if (!content_) detail::throw_empty_any_module("get()");
    if constexpr (std::is_base_of_v<Module, T>) {
      return static_cast<T&>(*ptr<T>());
    } else {
      return T(ptr<typename T::ContainedType>());
    }
  }
  std::shared_ptr<Module> ptr() const {
    if (!content_) detail::throw_empty_any_module("ptr()");
    return content_->module();
  }
  template <typename T>
  auto ptr() const {
    if (!content_) detail::throw_empty_any_module("ptr()");
    using M = typename detail::ModuleOf<T>::type;
    auto p = std::dynamic_pointer_cast<M>(content_->module());
    if (!p) detail::throw_any_module_cast(content_->type_info(), typeid(M));
    return p;
  }
  const std::type_info& type_info() const {
    if (!content_) detail::throw_empty_any_module("type_info()");
    return content_->type_info();
  }
  bool is_empty() const noexcept { return content_ == nullptr; }
  // A deep copy of the held module (its clone()), behind a new AnyModule.
  AnyModule clone(const std::optional<Device>& device = std::nullopt) const {
    if (!content_) detail::throw_empty_any_module("clone()");
    AnyModule copy;
    copy.content_ = content_->clone(device);
    return copy;
  }

 private:
  struct HolderBase {
    virtual ~HolderBase() = default;
    virtual AnyValue forward(std::vector<AnyValue>&& args) = 0;
    virtual std::shared_ptr<Module> module() const = 0;
    virtual const std::type_info& type_info() const = 0;
    virtual std::shared_ptr<HolderBase> clone(const std::optional<Device>& device) const = 0;
  };
  template <typename M>
  struct Holder final : HolderBase {
    explicit Holder(std::shared_ptr<M> m) : m_(std::move(m)) {}
    AnyValue forward(std::vector<AnyValue>&& args) override {
      using FT = detail::ForwardTraits<decltype(&M::forward)>;
      const std::string name = detail::type_name(typeid(M));
      if (m_->_forward_has_default_args()) {
        const size_t required = m_->_forward_num_required_args();
        if (args.size() < required || args.size() > FT::arity) {
          detail::throw_forward_arity_range(name, required, FT::arity, args.size());
        }
        args = m_->_forward_populate_default_args(std::move(args));
      } else if (args.size() != FT::arity) {
        detail::throw_forward_arity(name, FT::arity, args.size());
      }
      return call(args, std::make_index_sequence<FT::arity>{}, static_cast<typename FT::Args*>(nullptr));
    }
    template <size_t... I, typename... A>
    AnyValue call(std::vector<AnyValue>& args, std::index_sequence<I...>, std::tuple<A...>*) {
      if constexpr (std::is_void_v<typename detail::ForwardTraits<decltype(&M::forward)>::Return>) {
        m_->forward(arg<A>(args[I], I)...);
        return AnyValue(0);
      } else {
        return AnyValue(m_->forward(arg<A>(args[I], I)...));
      }
    }
    template <typename A>
    static A&& arg(AnyValue& value, size_t index) {
      using T = std::decay_t<A>;
      T* p = value.try_get<T>();
      if (!p) detail::throw_argument_type(index, typeid(T), value.type_info());
      return static_cast<A&&>(*p);
    }
    std::shared_ptr<Module> module() const override { return m_; }
    const std::type_info& type_info() const override { return typeid(M); }
    std::shared_ptr<HolderBase> clone(const std::optional<Device>& device) const override {
      return std::make_shared<Holder<M>>(std::dynamic_pointer_cast<M>(m_->clone(device)));
    }
    std::shared_ptr<M> m_;
  };
  std::shared_ptr<HolderBase> content_;
};

}  // namespace ember::nn

// Declares which trailing arguments of a module's forward() have defaults, so AnyModule
// and Sequential can be called without them: FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(2)}).
#define EMBER_FORWARD_HAS_DEFAULT_ARGS(...)                                                              \
 public:                                                                                           \
  bool _forward_has_default_args() override { return true; }                                      \
  unsigned int _forward_num_required_args() override {                                            \
    std::pair<unsigned int, ::ember::nn::AnyValue> args_info[] = {__VA_ARGS__};                   \
    return args_info[0].first;                                                                     \
  }                                                                                                \
  std::vector<::ember::nn::AnyValue> _forward_populate_default_args(                               \
      std::vector<::ember::nn::AnyValue>&& arguments) override {                                   \
    std::pair<unsigned int, ::ember::nn::AnyValue> args_info[] = {__VA_ARGS__};                   \
    const unsigned int num_all_args = std::rbegin(args_info)->first + 1;                           \
    std::vector<::ember::nn::AnyValue> result;                                                     \
    result.reserve(num_all_args);                                                                  \
    for (auto& a : arguments) result.emplace_back(std::move(a));                                   \
    for (auto& info : args_info) {                                                                 \
      if (info.first >= result.size()) result.emplace_back(std::move(info.second));               \
    }                                                                                              \
    return result;                                                                                 \
  }                                                                                                \
                                                                                                   \
 private:

// libtorch's name for it (libtorch's own is kept when both headers are included).
#ifndef FORWARD_HAS_DEFAULT_ARGS
#define FORWARD_HAS_DEFAULT_ARGS(...) EMBER_FORWARD_HAS_DEFAULT_ARGS(__VA_ARGS__)
#endif
