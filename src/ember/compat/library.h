#pragma once
// Custom operators registered by name and schema (libtorch's TORCH_LIBRARY and its
// dispatcher), reached through ember/torch.h:
//
//   Tensor my_add(const Tensor& a, const Tensor& b) { return a + b; }
//   TORCH_LIBRARY(myops, m) { m.def("my_add(Tensor a, Tensor b) -> Tensor"); }
//   TORCH_LIBRARY_IMPL(myops, CPU, m) { m.impl("my_add", TORCH_FN(my_add)); }
//   ...
//   auto op = c10::Dispatcher::singleton().findSchemaOrThrow("myops::my_add", "")
//                 .typed<Tensor(const Tensor&, const Tensor&)>();
//   Tensor c = op.call(a, b);
//
// Kernels are registered per dispatch key. A call runs, in order:
//   - an Autograd kernel the user wrote (it calls the op again under
//     AutoDispatchBelowADInplaceOrView to reach the backend kernel);
//   - else a kernel given with the schema (def(schema, fn)) or at
//     CompositeImplicitAutograd, with autograd recording through the ember ops it calls;
//   - else the CPU (or CompositeExplicitAutograd) kernel with grad mode off, wrapped the way
//     libtorch's autogradNotImplementedFallback wraps it: outputs of inputs that require
//     grad get a node whose backward names the op as not differentiable, arguments the
//     schema marks written (Tensor(a!)) are checked and rebased like in-place ops, and the
//     output the schema marks as an alias of the first argument (Tensor(a)) is a view of it.
//     Unlike libtorch 1.13, which silently drops the gradient when no Autograd kernel is
//     registered, ember applies this wrapper whether or not the fallback was registered, so
//     a backward through the op fails naming it instead of returning wrong gradients.
//
// Calls are typed: typed<Sig>() must name the kernel's own C++ signature. A mismatch,
// an unknown op, a malformed schema, a kernel whose argument types disagree with the
// schema, and a second TORCH_LIBRARY for one namespace are ember::Errors saying which.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ranges>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"

namespace ember {

// Where a kernel is registered (libtorch's c10::DispatchKey, the keys a CPU library uses).
enum class DispatchKey : uint8_t {
  Undefined,
  CPU,
  CUDA,
  Meta,
  BackendSelect,
  ADInplaceOrView,
  Autograd,
  AutogradCPU,
  AutogradCUDA,
  CompositeImplicitAutograd,
  CompositeExplicitAutograd,
  NumKeys
};
const char* dispatch_key_name(DispatchKey key);

// ---- schemas: "ns::name.overload(Tensor(a!) self, Tensor? other=None, int n=1) -> Tensor(a!)"
struct AliasInfo {
  std::string set;        // "a"
  bool is_write = false;  // "a!"
};

class Argument {
 public:
  Argument(std::string name, std::string type, std::optional<std::string> default_value,
           std::optional<AliasInfo> alias_info, bool kwarg_only);
  const std::string& name() const { return name_; }
  // The type as written without the alias annotation: Tensor, Tensor?, Tensor[], int, int[2], float, str ...
  const std::string& type() const { return type_; }
  const std::optional<std::string>& default_value() const { return default_value_; }
  const std::optional<AliasInfo>& alias_info() const { return alias_info_; }
  bool kwarg_only() const { return kwarg_only_; }
  bool is_write() const { return alias_info_ && alias_info_->is_write; }
  // Tensor, Tensor? or a list of them.
  bool is_tensor_like() const;

 private:
  std::string name_, type_;
  std::optional<std::string> default_value_;
  std::optional<AliasInfo> alias_info_;
  bool kwarg_only_ = false;
};

class FunctionSchema {
 public:
  FunctionSchema() = default;
  FunctionSchema(std::string name, std::string overload_name, std::vector<Argument> arguments,
                 std::vector<Argument> returns);
  // "ns::op"
  const std::string& name() const { return name_; }
  const std::string& overload_name() const { return overload_name_; }
  const std::vector<Argument>& arguments() const { return arguments_; }
  const std::vector<Argument>& returns() const { return returns_; }
  // The schema written back in the syntax it was parsed from.
  std::string str() const;

 private:
  std::string name_, overload_name_;
  std::vector<Argument> arguments_, returns_;
};
std::ostream& operator<<(std::ostream& os, const FunctionSchema& schema);

// Parses a schema; a name without "ns::" gets default_namespace (when given). Errors name
// the schema, the position and what was expected.
FunctionSchema parse_schema(std::string_view text, std::string_view default_namespace = {});

namespace library_detail {

// The C++ name of a type, for messages.
std::string demangled_name(const std::type_info& type);

// Schema type names of C++ kernel argument and return types, to check a kernel against the
// schema it is registered for ("" where the type has no schema spelling: not checked).
template <class T>
struct SchemaType {
  static std::string name() {
    using U = std::remove_cvref_t<T>;
    if constexpr (std::is_same_v<U, Tensor>) {
      return "Tensor";
    } else if constexpr (std::is_same_v<U, bool>) {
      return "bool";
    } else if constexpr (std::is_integral_v<U>) {
      return "int";
    } else if constexpr (std::is_floating_point_v<U>) {
      return "float";
    } else if constexpr (std::is_same_v<U, std::string> || std::is_same_v<U, std::string_view> ||
                         std::is_same_v<U, const char*>) {
      return "str";
    } else if constexpr (std::is_same_v<U, Scalar>) {
      return "Scalar";
    } else if constexpr (std::is_same_v<U, DType>) {
      return "ScalarType";
    } else if constexpr (std::ranges::range<const U>) {
      const std::string element = SchemaType<std::remove_cvref_t<std::ranges::range_value_t<const U>>>::name();
      return element.empty() ? std::string() : element + "[]";
    } else {
      return "";
    }
  }
};
template <class T>
struct SchemaType<std::optional<T>> {
  static std::string name() {
    const std::string inner = SchemaType<T>::name();
    return inner.empty() ? std::string() : inner + "?";
  }
};
template <class... Ts>
struct SchemaType<std::tuple<Ts...>> {
  static std::string name() { return ""; }  // returns: expanded by ReturnTypes
};

template <class R>
struct ReturnTypes {
  static std::vector<std::string> get() {
    if constexpr (std::is_void_v<R>) {
      return {};
    } else {
      return {SchemaType<std::remove_cvref_t<R>>::name()};
    }
  }
};
template <class... Ts>
struct ReturnTypes<std::tuple<Ts...>> {
  static std::vector<std::string> get() { return {SchemaType<std::remove_cvref_t<Ts>>::name()...}; }
};

// A kernel's C++ signature as schema types.
struct KernelSignature {
  std::vector<std::string> arguments, returns;
};

// A registered kernel, type-erased: fn holds a std::function<Sig>.
struct Kernel {
  enum class Kind : uint8_t { Function, AutogradNotImplemented, InplaceOrViewNotImplemented };
  Kind kind = Kind::Function;
  std::shared_ptr<void> fn;
  std::type_index signature = typeid(void);
  std::string signature_name;  // for messages
  KernelSignature schema_types;
};

template <class R, class... Args>
Kernel make_kernel(std::function<R(Args...)> f) {
  Kernel k;
  k.fn = std::make_shared<std::function<R(Args...)>>(std::move(f));
  k.signature = typeid(R(Args...));
  k.signature_name = demangled_name(typeid(R(Args...)));
  k.schema_types.arguments = {SchemaType<std::remove_cvref_t<Args>>::name()...};
  k.schema_types.returns = ReturnTypes<std::remove_cvref_t<R>>::get();
  return k;
}

template <class F>
struct CallableTraits : CallableTraits<decltype(&F::operator())> {};
template <class R, class... Args>
struct CallableTraits<R (*)(Args...)> {
  using function = std::function<R(Args...)>;
};
template <class R, class... Args>
struct CallableTraits<R(Args...)> {
  using function = std::function<R(Args...)>;
};
template <class C, class R, class... Args>
struct CallableTraits<R (C::*)(Args...) const> {
  using function = std::function<R(Args...)>;
};
template <class C, class R, class... Args>
struct CallableTraits<R (C::*)(Args...)> {
  using function = std::function<R(Args...)>;
};

struct OperatorEntry;

// Tensors of a call's arguments or results, flattened, each with the index of the schema
// argument (or return) it came from.
struct FlatTensors {
  std::vector<Tensor> tensors;
  std::vector<uint32_t> position;
};
inline void flatten(FlatTensors& out, uint32_t pos, const Tensor& t) {
  out.tensors.push_back(t);
  out.position.push_back(pos);
}
inline void flatten(FlatTensors& out, uint32_t pos, const std::optional<Tensor>& t) {
  if (t) flatten(out, pos, *t);
}
template <class T>
void flatten(FlatTensors& out, uint32_t pos, const T& value) {
  if constexpr (std::ranges::range<const T>) {
    if constexpr (std::is_same_v<std::remove_cvref_t<std::ranges::range_value_t<const T>>, Tensor>) {
      for (const Tensor& t : value) flatten(out, pos, t);
    }
  }
}
template <class... Ts>
void flatten(FlatTensors& out, uint32_t, const std::tuple<Ts...>& values) {
  uint32_t pos = 0;
  std::apply([&](const auto&... v) { (flatten(out, pos++, v), ...); }, values);
}

// How a call is run, decided from the registered kernels.
enum class CallMode : uint8_t {
  Direct,   // a user Autograd kernel or a composite kernel: called as is
  Backend,  // a backend kernel under the not-implemented autograd wrapper
};
// The kernel for a call with signature sig (throws on an unknown op or a wrong signature).
const Kernel& resolve(const OperatorEntry& op, std::type_index sig, const char* sig_name, CallMode& mode);

// The wrapper around a backend kernel (see the top of this file): checks before the call,
// history and views after it.
class BackendCall {
 public:
  BackendCall(const OperatorEntry& op, FlatTensors inputs);
  ~BackendCall();
  BackendCall(const BackendCall&) = delete;
  BackendCall& operator=(const BackendCall&) = delete;
  // Grad mode off and autograd kernels skipped while the kernel runs.
  void enter();
  void leave();
  void finish(const FlatTensors& outputs);

 private:
  const OperatorEntry& op_;
  FlatTensors inputs_;
  bool any_requires_grad_ = false;
  bool entered_ = false;
  bool prev_grad_mode_ = true;
  bool prev_below_ = false;
};

}  // namespace library_detail

// ---- kernels as registered: a function pointer, a lambda, or a fallback
class CppFunction {
 public:
  template <class R, class... Args>
  explicit CppFunction(R (*f)(Args...)) : kernel_(library_detail::make_kernel(std::function<R(Args...)>(f))) {}
  template <class Lambda, class = std::enable_if_t<!std::is_pointer_v<std::decay_t<Lambda>> &&
                                                    !std::is_same_v<std::decay_t<Lambda>, CppFunction>>>
  explicit CppFunction(Lambda&& f)
      : kernel_(library_detail::make_kernel(
            typename library_detail::CallableTraits<std::decay_t<Lambda>>::function(std::forward<Lambda>(f)))) {}

  // Internal: a fallback kernel (autogradNotImplementedFallback and the like).
  explicit CppFunction(library_detail::Kernel kernel) : kernel_(std::move(kernel)) {}

  const library_detail::Kernel& kernel() const { return kernel_; }
  const std::optional<DispatchKey>& dispatch_key() const { return dispatch_key_; }

 private:
  friend CppFunction dispatch_impl(DispatchKey key, CppFunction f);
  library_detail::Kernel kernel_;
  std::optional<DispatchKey> dispatch_key_;
};

CppFunction dispatch_impl(DispatchKey key, CppFunction f);
// torch::dispatch(DispatchKey::CPU, fn): a kernel for one key, for def() / impl().
template <class F>
CppFunction dispatch(DispatchKey key, F&& f) {
  return dispatch_impl(key, CppFunction(std::forward<F>(f)));
}

namespace autograd {
// The Autograd and ADInplaceOrView kernels libtorch provides for ops without a derivative
// (see the top of this file: ember applies this behaviour to every backend kernel).
CppFunction autogradNotImplementedFallback();
CppFunction autogradNotImplementedInplaceOrViewFallback();
}  // namespace autograd

// ---- libraries: what TORCH_LIBRARY / TORCH_LIBRARY_IMPL hand to their block
class Library {
 public:
  enum Kind { DEF, IMPL, FRAGMENT };
  Library(Kind kind, std::string ns, std::optional<DispatchKey> key, const char* file, uint32_t line);
  // Undoes every registration made through this library (as libtorch's).
  ~Library();
  Library(Library&&) noexcept;
  Library& operator=(Library&&) = delete;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  // A schema ("name(Tensor a) -> Tensor"; the namespace is this library's).
  Library& def(std::string_view schema);
  // A schema or a bare name (the schema then comes from the C++ signature) with its kernel,
  // which runs for every dispatch key (CompositeImplicitAutograd), unless given through
  // dispatch(key, f).
  template <class F>
  Library& def(std::string_view schema_or_name, F&& f) {
    return def_with_kernel(schema_or_name, as_function(std::forward<F>(f)));
  }
  // A kernel for a defined op, at this library's dispatch key (IMPL) or the given one.
  template <class F>
  Library& impl(std::string_view name, F&& f) {
    return impl_kernel(name, std::nullopt, as_function(std::forward<F>(f)));
  }
  template <class F>
  Library& impl(std::string_view name, DispatchKey key, F&& f) {
    return impl_kernel(name, key, as_function(std::forward<F>(f)));
  }

  const std::string& ns() const { return ns_; }

 private:
  template <class F>
  static CppFunction as_function(F&& f) {
    if constexpr (std::is_same_v<std::decay_t<F>, CppFunction>) {
      return std::forward<F>(f);
    } else {
      return CppFunction(std::forward<F>(f));
    }
  }
  Library& def_with_kernel(std::string_view schema_or_name, CppFunction f);
  Library& impl_kernel(std::string_view name, std::optional<DispatchKey> key, CppFunction f);
  std::string where() const;

  Kind kind_;
  std::string ns_;
  std::optional<DispatchKey> key_;
  std::string file_;
  uint32_t line_ = 0;
  std::vector<std::function<void()>> undo_;
};

// ---- looking ops up and calling them
struct OperatorName {
  std::string name;
  std::string overload_name;
};

template <class Sig>
class TypedOperatorHandle;

class OperatorHandle {
 public:
  const FunctionSchema& schema() const;
  const OperatorName& operator_name() const;
  bool hasSchema() const;
  bool hasKernelForDispatchKey(DispatchKey key) const;
  template <class Sig>
  TypedOperatorHandle<Sig> typed() const {
    return TypedOperatorHandle<Sig>(entry_);
  }

 protected:
  friend class Dispatcher;
  explicit OperatorHandle(library_detail::OperatorEntry* entry) : entry_(entry) {}
  library_detail::OperatorEntry* entry_;
};

template <class R, class... Args>
class TypedOperatorHandle<R(Args...)> : public OperatorHandle {
 public:
  explicit TypedOperatorHandle(library_detail::OperatorEntry* entry) : OperatorHandle(entry) {}

  R call(Args... args) const {
    library_detail::CallMode mode = library_detail::CallMode::Direct;
    const library_detail::Kernel& kernel =
        library_detail::resolve(*entry_, typeid(R(Args...)), signature_name(), mode);
    const auto& fn = *static_cast<const std::function<R(Args...)>*>(kernel.fn.get());
    if (mode == library_detail::CallMode::Direct) return fn(std::forward<Args>(args)...);
    library_detail::FlatTensors inputs;
    uint32_t pos = 0;
    (library_detail::flatten(inputs, pos++, args), ...);
    library_detail::BackendCall wrapper(*entry_, std::move(inputs));
    library_detail::FlatTensors outputs;
    if constexpr (std::is_void_v<R>) {
      wrapper.enter();
      fn(std::forward<Args>(args)...);
      wrapper.leave();
      wrapper.finish(outputs);
    } else {
      wrapper.enter();
      R out = fn(std::forward<Args>(args)...);
      wrapper.leave();
      library_detail::flatten(outputs, 0, out);
      wrapper.finish(outputs);
      return out;
    }
  }
  R operator()(Args... args) const { return call(std::forward<Args>(args)...); }

 private:
  static const char* signature_name() {
    static const std::string name = library_detail::demangled_name(typeid(R(Args...)));
    return name.c_str();
  }
};

class Dispatcher {
 public:
  static Dispatcher& singleton();
  // "ns::name" and the overload name ("" for none).
  OperatorHandle findSchemaOrThrow(const char* name, const char* overload_name) const;
  std::optional<OperatorHandle> findSchema(const OperatorName& name) const;
  std::optional<OperatorHandle> findOp(const OperatorName& name) const;
  // Every op with a schema, "ns::name" or "ns::name.overload".
  std::vector<OperatorName> getAllOpNames() const;

 private:
  Dispatcher() = default;
};

// While alive, calls skip Autograd and ADInplaceOrView kernels and grad mode is off: what a
// user's Autograd kernel uses to reach the backend kernel (libtorch's guard of this name).
class AutoDispatchBelowADInplaceOrView {
 public:
  AutoDispatchBelowADInplaceOrView();
  ~AutoDispatchBelowADInplaceOrView();
  AutoDispatchBelowADInplaceOrView(const AutoDispatchBelowADInplaceOrView&) = delete;
  AutoDispatchBelowADInplaceOrView& operator=(const AutoDispatchBelowADInplaceOrView&) = delete;

 private:
  bool prev_grad_mode_;
  bool prev_below_;
};
using AutoDispatchBelowAutograd = AutoDispatchBelowADInplaceOrView;

namespace library_detail {
// Keeps a TORCH_LIBRARY block's Library alive for the program's life.
class TorchLibraryInit {
 public:
  TorchLibraryInit(Library::Kind kind, void (*init)(Library&), const char* ns, std::optional<DispatchKey> key,
                   const char* file, uint32_t line)
      : lib_(kind, ns, key, file, line) {
    init(lib_);
  }

 private:
  Library lib_;
};
}  // namespace library_detail

}  // namespace ember

#define EMBER_LIBRARY_CONCAT_(a, b) a##b
#define EMBER_LIBRARY_CONCAT(a, b) EMBER_LIBRARY_CONCAT_(a, b)

// TORCH_LIBRARY(ns, m) { m.def(...); }: the one block defining namespace ns's ops.
#define TORCH_LIBRARY(ns, m)                                                                       \
  static void TORCH_LIBRARY_init_##ns(::ember::Library&);                                          \
  static const ::ember::library_detail::TorchLibraryInit TORCH_LIBRARY_static_init_##ns(           \
      ::ember::Library::DEF, &TORCH_LIBRARY_init_##ns, #ns, std::nullopt, __FILE__, __LINE__);      \
  void TORCH_LIBRARY_init_##ns(::ember::Library& m)

// More definitions for a namespace, in any number of blocks.
#define TORCH_LIBRARY_FRAGMENT(ns, m) EMBER_LIBRARY_FRAGMENT_(ns, m, EMBER_LIBRARY_CONCAT(ember_uid_, __COUNTER__))
#define EMBER_LIBRARY_FRAGMENT_(ns, m, uid)                                                       \
  static void EMBER_LIBRARY_CONCAT(TORCH_LIBRARY_FRAGMENT_init_##ns##_, uid)(::ember::Library&);   \
  static const ::ember::library_detail::TorchLibraryInit EMBER_LIBRARY_CONCAT(                     \
      TORCH_LIBRARY_FRAGMENT_static_init_##ns##_, uid)(                                             \
      ::ember::Library::FRAGMENT, &EMBER_LIBRARY_CONCAT(TORCH_LIBRARY_FRAGMENT_init_##ns##_, uid), #ns, \
      std::nullopt, __FILE__, __LINE__);                                                           \
  void EMBER_LIBRARY_CONCAT(TORCH_LIBRARY_FRAGMENT_init_##ns##_, uid)(::ember::Library & m)

// TORCH_LIBRARY_IMPL(ns, CPU, m) { m.impl("op", fn); }: kernels of ns's ops for one key.
#define TORCH_LIBRARY_IMPL(ns, k, m) EMBER_LIBRARY_IMPL_(ns, k, m, EMBER_LIBRARY_CONCAT(ember_uid_, __COUNTER__))
#define EMBER_LIBRARY_IMPL_(ns, k, m, uid)                                                          \
  static void EMBER_LIBRARY_CONCAT(TORCH_LIBRARY_IMPL_init_##ns##_##k##_, uid)(::ember::Library&);   \
  static const ::ember::library_detail::TorchLibraryInit EMBER_LIBRARY_CONCAT(                        \
      TORCH_LIBRARY_IMPL_static_init_##ns##_##k##_, uid)(                                            \
      ::ember::Library::IMPL, &EMBER_LIBRARY_CONCAT(TORCH_LIBRARY_IMPL_init_##ns##_##k##_, uid), #ns,  \
      std::make_optional(::ember::DispatchKey::k), __FILE__, __LINE__);                                \
  void EMBER_LIBRARY_CONCAT(TORCH_LIBRARY_IMPL_init_##ns##_##k##_, uid)(::ember::Library & m)

// A Library object for a block's scope (libtorch's test spelling).
#define MAKE_TORCH_LIBRARY(ns) ::ember::Library(::ember::Library::DEF, #ns, std::nullopt, __FILE__, __LINE__)
#define MAKE_TORCH_LIBRARY_IMPL(ns, k) \
  ::ember::Library(::ember::Library::IMPL, #ns, std::make_optional(::ember::DispatchKey::k), __FILE__, __LINE__)

// TORCH_FN(f): the function itself as a kernel.
#define TORCH_FN(func) (&(func))
