#pragma once
// nn::Module: the base of every layer and model, as libtorch's torch::nn::Module. A
// module owns named parameters, buffers and submodules; names compose with dots
// ("features.0.weight") in named_parameters() and state_dict().
//
//   struct NetImpl : ember::nn::Module {
//     NetImpl() : Module("Net") {
//       fc1 = register_module("fc1", ember::nn::Linear(784, 128));
//       fc2 = register_module("fc2", ember::nn::Linear(128, 10));
//     }
//     ember::Tensor forward(const ember::Tensor& x) { return fc2(fc1(x).relu()); }
//     ember::nn::Linear fc1{nullptr}, fc2{nullptr};
//   };
//
// Layers are used through holders (ember::nn::Linear wraps a shared LinearImpl):
// `lin->weight`, `lin(x)`; copying a holder shares the module, clone() copies it.

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/core/ordered_dict.h"
#include "ember/core/tensor.h"

namespace ember::nn {

class Module;
class AnyValue;

// What load_state_dict found (strict=false returns it; strict=true throws if any list
// is non-empty, naming every key).
struct LoadStateDictResult {
  std::vector<std::string> missing_keys;     // in the module, not in the dict
  std::vector<std::string> unexpected_keys;  // in the dict, not in the module
  std::vector<std::string> mismatched_keys;  // in both, different shapes ("key: [2, 3] vs [3]")
  bool ok() const { return missing_keys.empty() && unexpected_keys.empty() && mismatched_keys.empty(); }
};

// Forward hooks see the call's tensor arguments and results. A pre-hook may return new
// inputs, a post-hook new outputs (std::nullopt keeps them).
using TensorList = std::vector<Tensor>;
using ForwardPreHook = std::function<std::optional<TensorList>(Module&, const TensorList& inputs)>;
using ForwardHook =
    std::function<std::optional<TensorList>(Module&, const TensorList& inputs, const TensorList& outputs)>;

class Module : public std::enable_shared_from_this<Module> {
 public:
  // A module named after its dynamic type (the demangled class name, as libtorch).
  Module();
  explicit Module(std::string name);
  virtual ~Module();
  // Copies share the parameters, buffers and submodules (libtorch's shallow copy); clone()
  // is the deep copy. Hooks are copied; handles keep removing them from the original.
  Module(const Module& other);
  Module& operator=(const Module& other);

  // The type name shown when printing ("Linear", "Sequential", ...); for a module built
  // with the default constructor, its demangled class name.
  const std::string& name() const;

  // ---- calling ----
  // The single-tensor forward most layers have; modules with other signatures define
  // their own forward and operator(). The default refuses with the module's name.
  virtual Tensor forward(const Tensor& input);
  // Runs the forward hooks around forward(input).
  Tensor operator()(const Tensor& input);

  // ---- registration ----
  // Adds a parameter (requires_grad set as asked; an undefined tensor registers an
  // absent parameter, e.g. bias=false, kept out of parameters()).
  Tensor& register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  // Adds a buffer (running statistics, ...); non-persistent buffers stay out of state_dict.
  Tensor& register_buffer(const std::string& name, Tensor tensor, bool persistent = true);
  // Adds a submodule; returns it so that `fc = register_module("fc", Linear(...))` works.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    register_module_impl(name, module);
    return module;
  }
  template <typename Holder, typename = decltype(std::declval<Holder>().ptr())>
  Holder register_module(const std::string& name, Holder holder) {
    register_module_impl(name, holder.ptr());
    return holder;
  }
  // Replaces a registered submodule (same name). Containers override it to keep their
  // own ordered lists in step (Sequential runs the new module in the old one's place).
  virtual void replace_module(const std::string& name, std::shared_ptr<Module> module);
  // libtorch's forms, returning what they were given: `l1 = replace_module("l1", Linear(5, 6))`.
  template <typename Holder, typename = decltype(std::declval<Holder>().ptr())>
  Holder replace_module(const std::string& name, Holder holder) {
    replace_module(name, std::static_pointer_cast<Module>(holder.ptr()));
    return holder;
  }
  template <typename M>
    requires(!std::is_same_v<M, Module>)
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> module) {
    replace_module(name, std::static_pointer_cast<Module>(module));
    return module;
  }

  // ---- traversal ----
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_children() const;
  // This module first, then every descendant (depth first, each once).
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true);
  OrderedDict<std::string, std::shared_ptr<Module>> named_modules(const std::string& prefix = "",
                                                                  bool include_self = true);

  // ---- mode and state ----
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Converts floating-point parameters and buffers to dtype, in place of the old ones
  // (the tensors keep their identity, so optimizers built before still see them).
  virtual void to(DType dtype);
  // libtorch's to(device) and to(device, dtype): the CPU is ember's only device (another is
  // an error naming it); with a dtype, converts as to(dtype).
  void to(Device device, bool non_blocking = false);
  void to(Device device, DType dtype, bool non_blocking = false);
  // set_to_none unset: ember::zero_grad_sets_to_none() (true unless ember/torch.h is included).
  void zero_grad(std::optional<bool> set_to_none = std::nullopt);
  // Calls fn on this module and every descendant (depth first, each once). The named forms
  // pass the qualified name (prefix first); libtorch's (name, module) argument order and
  // ember's (module, name) are both accepted, as are shared_ptr callbacks.
  void apply(const std::function<void(Module&)>& fn);
  void apply(const std::function<void(const Module&)>& fn) const;
  void apply(const std::function<void(Module&, const std::string& qualified_name)>& fn,
             const std::string& prefix = "");
  void apply(const std::function<void(const std::string& qualified_name, Module&)>& fn,
             const std::string& prefix = "");
  void apply(const std::function<void(const std::string& qualified_name, const Module&)>& fn,
             const std::string& prefix = "") const;
  void apply(const std::function<void(const std::shared_ptr<Module>&)>& fn) const;
  void apply(const std::function<void(const std::string& qualified_name, const std::shared_ptr<Module>&)>& fn,
             const std::string& prefix = "") const;

  // Parameters and persistent buffers under qualified names (detached views of them).
  OrderedDict<std::string, Tensor> state_dict() const;
  // Copies values in (shapes must match; dtype converts). strict: any missing,
  // unexpected or mismatched key is an error listing them all.
  LoadStateDictResult load_state_dict(const OrderedDict<std::string, Tensor>& state, bool strict = true);

  // ---- hooks ----
  RemovableHandle register_forward_pre_hook(ForwardPreHook hook);
  RemovableHandle register_forward_hook(ForwardHook hook);

  // ---- copies and printing ----
  // A deep copy (new parameters and buffers with the same values). Modules built from
  // Cloneable<T> support it; others throw.
  // A deep copy (parameters and buffers copied). device: ember runs on the CPU only, so it
  // is accepted for libtorch compatibility and must be the CPU when given.
  virtual std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const;
  // One line describing this module's options, e.g. "in_features=784, out_features=10".
  virtual std::string extra_repr() const { return ""; }
  // The tree as PyTorch (Python) prints it: "Linear(in_features=3, out_features=4, bias=True)".
  std::string repr() const;
  // libtorch's printing: this module alone ("torch::nn::Linear(in_features=3, ...)"; by
  // default its name()). operator<< prints the tree with it, as libtorch does.
  virtual void pretty_print(std::ostream& stream) const;
  // Removes a submodule (error if absent).
  void unregister_module(const std::string& name);
  // Removes a parameter's registration (error if absent) and returns the tensor; a member
  // handle the module keeps still refers to it (FSDP hands parameters to its shards so).
  Tensor unregister_parameter(const std::string& name);
  bool is_serializable() const { return true; }

  // This module as a T (an Impl type or a holder type such as nn::Linear), or nullptr.
  template <typename T>
  auto* as() noexcept {
    if constexpr (requires { typename T::ContainedType; }) {
      return dynamic_cast<typename T::ContainedType*>(this);
    } else {
      return dynamic_cast<T*>(this);
    }
  }
  template <typename T>
  const auto* as() const noexcept {
    if constexpr (requires { typename T::ContainedType; }) {
      return dynamic_cast<const typename T::ContainedType*>(this);
    } else {
      return dynamic_cast<const T*>(this);
    }
  }

  // Direct access (as libtorch: module.named_parameters(false) for own ones).
  // AnyModule's view of forward()'s default arguments (FORWARD_HAS_DEFAULT_ARGS overrides).
  virtual bool _forward_has_default_args();
  virtual unsigned int _forward_num_required_args();
  virtual std::vector<AnyValue> _forward_populate_default_args(std::vector<AnyValue>&& arguments);

  bool has_parameter(const std::string& name) const { return params_.contains(name); }
  bool has_buffer(const std::string& name) const { return buffers_.contains(name); }

 protected:
  // Runs the pre-hooks, then fn (the forward), then the post-hooks. Modules call this
  // from operator() so that hooks apply to every call.
  TensorList run_with_hooks(const TensorList& inputs, const std::function<TensorList(const TensorList&)>& fn);

 public:
  // Whether forward hooks are registered on this module.
  bool has_hooks() const { return !pre_hooks_.empty() || !post_hooks_.empty(); }

 protected:
  // Used by clone(): copies this module's tensors and children into `copy`.
  void clone_into(Module& copy) const;
  // The registered submodules and parameters themselves (stable: containers iterate them).
  const OrderedDict<std::string, std::shared_ptr<Module>>& children_dict() const { return children_; }
  OrderedDict<std::string, Tensor>& parameters_dict() { return params_; }
  const OrderedDict<std::string, Tensor>& parameters_dict() const { return params_; }
  // Makes *this a deep copy of other (same type): Cloneable assigns a full clone, so that
  // members that are not tensors are copied too; otherwise only the tensor values.
  virtual void assign_clone_of(const Module& other) { other.clone_into(*this); }
  // Forgets every registered parameter, buffer and submodule (before reset() re-creates them).
  void clear_registrations();

  bool training_ = true;

 private:
  void register_module_impl(const std::string& name, std::shared_ptr<Module> module);
  void print_python(std::ostream& os, int indent) const;
  friend void print_module_tree(std::ostream& os, const Module& m, int indent);
  // shared_from_this() with libtorch's explanation when the module is not owned by a shared_ptr.
  std::shared_ptr<Module> shared_from_this_checked() const;
  void collect(const std::string& prefix, bool recurse, bool want_params, bool persistent_only,
               OrderedDict<std::string, Tensor>& out) const;

  mutable std::string name_;
  OrderedDict<std::string, Tensor> params_{std::string("Parameter")};
  OrderedDict<std::string, Tensor> buffers_{std::string("Buffer")};
  std::vector<std::string> non_persistent_;
  OrderedDict<std::string, std::shared_ptr<Module>> children_;
  struct PreHook {
    int id;
    ForwardPreHook fn;
  };
  struct PostHook {
    int id;
    ForwardHook fn;
  };
  std::vector<PreHook> pre_hooks_;
  std::vector<PostHook> post_hooks_;
  int next_hook_id_ = 0;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // hook handles check it
};

// libtorch's format: the module's pretty_print, then its children indented, one a line.
std::ostream& operator<<(std::ostream& os, const Module& m);

// A module with a deep clone(): derive `struct LinearImpl : Cloneable<LinearImpl>` and
// implement reset() (which (re)creates parameters); clone() builds a copy with the same
// options via the copy of the options and copies the tensor values.
template <typename Derived>
class Cloneable : public Module {
 public:
  using Module::Module;
  // (Re)creates parameters and submodules from the options.
  virtual void reset() = 0;
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override {
    const auto& self = static_cast<const Derived&>(*this);
    std::shared_ptr<Derived> copy;
    if constexpr (requires { Derived(self.options); }) {
      copy = std::make_shared<Derived>(self.options);
    } else {
      // libtorch's way for modules without options: copy, then let reset() register fresh
      // parameters and submodules, whose values clone_into then copies.
      copy = std::make_shared<Derived>(self);
      copy->clear_registrations();
      copy->reset();
    }
    clone_into(*copy);
    return copy;
  }

 protected:
  void assign_clone_of(const Module& other) override {
    if constexpr (std::is_copy_assignable_v<Derived>) {
      if (auto c = std::dynamic_pointer_cast<Derived>(other.clone())) {
        static_cast<Derived&>(*this) = *c;
        return;
      }
    }
    Module::assign_clone_of(other);
  }
};

// The handle users hold: shares one Impl; `holder->member`, `holder(args...)`.
template <typename Impl>
class ModuleHolder {
 public:
  using ContainedType = Impl;
  // An empty holder (assign a module later): `nn::Linear fc{nullptr};`.
  ModuleHolder(std::nullptr_t) {}
  template <typename... Args,
            typename = std::enable_if_t<!(sizeof...(Args) == 1 &&
                                          (std::is_same_v<std::decay_t<Args>, std::nullptr_t> && ...))>>
  explicit ModuleHolder(Args&&... args) : impl_(std::make_shared<Impl>(std::forward<Args>(args)...)) {}
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  Impl* get() const {
    EMBER_CHECK(impl_ != nullptr, "[nn] Accessing empty ModuleHolder (it was constructed with nullptr); assign a "
                                  "module to it first");
    return impl_.get();
  }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const { return impl_ == nullptr; }
  explicit operator bool() const { return impl_ != nullptr; }

  // Calls the module's operator() (which runs hooks); a module whose forward returns
  // something other than a Tensor and that declares no operator() of its own is called
  // through forward directly, as libtorch's holders do (`int64_t forward(Tensor)`).
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) const {
    if constexpr (forward_bypasses_call<Args...>(0)) {
      return get()->forward(std::forward<Args>(args)...);
    } else {
      return (*get())(std::forward<Args>(args)...);
    }
  }
  // Indexing forwards to the module (Sequential, ModuleList, ModuleDict).
  template <typename Arg>
  decltype(auto) operator[](Arg&& arg) const {
    return (*get())[std::forward<Arg>(arg)];
  }

 private:
  template <typename... Args>
  static constexpr auto forward_bypasses_call(int)
      -> decltype(std::declval<Impl&>().forward(std::declval<Args>()...), bool()) {
    using R = decltype(std::declval<Impl&>().forward(std::declval<Args>()...));
    if constexpr (std::is_same_v<std::decay_t<R>, Tensor>) {
      return false;
    } else if constexpr (std::is_invocable_v<Impl&, Args...>) {
      return std::is_same_v<std::decay_t<std::invoke_result_t<Impl&, Args...>>, Tensor>;
    } else {
      return true;
    }
  }
  template <typename... Args>
  static constexpr bool forward_bypasses_call(...) {
    return false;
  }

  std::shared_ptr<Impl> impl_;
};

template <typename Impl>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<Impl>& holder) {
  return os << static_cast<const Module&>(*holder);
}

}  // namespace ember::nn

// Declares the holder class Name for NameImpl (as libtorch's TORCH_MODULE).
#define EMBER_MODULE(Name)                                  \
  class Name : public ::ember::nn::ModuleHolder<Name##Impl> { \
   public:                                                  \
    using ::ember::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
  }
