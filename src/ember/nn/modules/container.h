#pragma once
// Sequential, ModuleList, ModuleDict.

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules/any.h"

namespace ember::nn {

// A module (holder, shared_ptr or module object) with its name, as Sequential takes them:
// Sequential({{"fc", Linear(2, 3)}, {"act", ReLU()}}).
struct NamedAnyModule {
  template <typename M>
  NamedAnyModule(std::string name_, std::shared_ptr<M> m) : name(std::move(name_)), module(m) {
    if constexpr (!std::is_same_v<M, Module> && !detail::forward_is_tensor_to_tensor<M>()) any = AnyModule(m);
  }
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<Module, std::decay_t<M>>>>
  NamedAnyModule(std::string name_, M&& m)
      : NamedAnyModule(std::move(name_), std::make_shared<std::decay_t<M>>(std::forward<M>(m))) {}
  template <typename Holder, typename = decltype(std::declval<const Holder&>().ptr()),
            typename = std::enable_if_t<!std::is_base_of_v<Module, std::decay_t<Holder>>>>
  NamedAnyModule(std::string name_, const Holder& holder) : NamedAnyModule(std::move(name_), holder.ptr()) {}
  std::string name;
  std::shared_ptr<Module> module;
  AnyModule any;  // empty when module's Tensor forward is called directly
};

// Runs its children in order, each on the previous one's output. Children are named
// "0", "1", ... (or by the names given).
class SequentialImpl : public Module {
 public:
  SequentialImpl() : Module("Sequential") {}
  template <typename... Modules>
  explicit SequentialImpl(Modules&&... modules) : Module("Sequential") {
    (push_back(std::forward<Modules>(modules)), ...);
  }
  // Named children, in order.
  explicit SequentialImpl(std::vector<NamedAnyModule> named);

  // A holder, a shared_ptr or a module object (copied into a shared_ptr). Modules whose
  // forward() is not Module's `Tensor forward(const Tensor&)` are held as AnyModule too,
  // so forward<R>(args...) can call them with other types.
  template <typename Holder, typename = decltype(std::declval<const Holder&>().ptr())>
  void push_back(const Holder& holder) {
    push_back(std::to_string(modules_.size()), holder.ptr());
  }
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<Module, std::decay_t<M>>>>
  void push_back(M&& module) {
    push_back(std::to_string(modules_.size()), std::make_shared<std::decay_t<M>>(std::forward<M>(module)));
  }
  template <typename M>
  void push_back(std::shared_ptr<M> module) {
    push_back(std::to_string(modules_.size()), std::move(module));
  }
  template <typename M>
  void push_back(const std::string& name, std::shared_ptr<M> module) {
    AnyModule any;
    if constexpr (!std::is_same_v<M, Module> && !detail::forward_is_tensor_to_tensor<M>()) any = AnyModule(module);
    push_back_impl(name, std::static_pointer_cast<Module>(std::move(module)), std::move(any));
  }
  template <typename Holder, typename = decltype(std::declval<const Holder&>().ptr())>
  void push_back(const std::string& name, const Holder& holder) {
    push_back(name, holder.ptr());
  }
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<Module, std::decay_t<M>>>>
  void push_back(const std::string& name, M&& module) {
    push_back(name, std::make_shared<std::decay_t<M>>(std::forward<M>(module)));
  }
  // Appends the children of other (sharing them).
  void extend(const SequentialImpl& other);
  // Appends each module of a container (holders, shared_ptrs or module objects).
  template <typename Container, typename = decltype(std::declval<const Container&>().begin())>
  void extend(const Container& modules) {
    for (const auto& m : modules) push_back(m);
  }

  Tensor forward(const Tensor& input) override;
  // Chains the children on any argument types: forward<int>(1), forward(x, mask).
  template <typename R = Tensor, typename... In>
  R forward(In&&... inputs) {
    if constexpr (std::is_same_v<R, Tensor> && sizeof...(In) == 1 &&
                  (std::is_convertible_v<In, const Tensor&> && ...)) {
      return forward(static_cast<const Tensor&>(inputs)...);
    } else {
      AnyValue out = any_forward(std::forward<In>(inputs)...);
      if (R* r = out.template try_get<R>()) return std::move(*r);
      throw_return_type(out.type_info(), typeid(R));
    }
  }
  template <typename... In>
  AnyValue any_forward(In&&... inputs) {
    check_not_empty();
    AnyValue value = [&] {
      if (!any_[0].is_empty()) return any_[0].any_forward(std::forward<In>(inputs)...);
      if constexpr (sizeof...(In) == 1 && (std::is_convertible_v<In, const Tensor&> && ...)) {
        return AnyValue(modules_[0]->forward(static_cast<const Tensor&>(inputs)...));
      } else {
        return forward_child(0, AnyValue(std::forward<In>(inputs))...);
      }
    }();
    for (size_t i = 1; i < modules_.size(); ++i) value = forward_child(i, std::move(value));
    return value;
  }

  void replace_module(const std::string& name, std::shared_ptr<Module> module) override;
  using Module::replace_module;
  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  std::shared_ptr<Module> operator[](size_t i) const;
  // libtorch's names: ptr(i), ptr<Impl>(i) (shared), at<Impl>(i) (a reference).
  std::shared_ptr<Module> ptr(size_t i) const { return (*this)[i]; }
  template <typename Impl>
  std::shared_ptr<Impl> ptr(size_t i) const {
    auto p = std::dynamic_pointer_cast<Impl>((*this)[i]);
    EMBER_CHECK(p != nullptr, "[nn.Sequential] child ", i, " is a ", (*this)[i]->name(), ", not the type asked for");
    return p;
  }
  template <typename Impl>
  Impl& at(size_t i) const {
    return *ptr<Impl>(i);
  }
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  [[noreturn]] static void throw_return_type(const std::type_info& actual, const std::type_info& asked);
  void push_back_impl(const std::string& name, std::shared_ptr<Module> module, AnyModule any);
  void check_not_empty() const;
  // Whether children i, i + 1 are a ReLU and a MaxPool2d that forward may swap (Note [Pool
  // before ReLU] in container.cpp).
  bool pool_before_relu(size_t i) const;
  // Where child i is a Conv2d whose output only a 2x2 / stride-2 MaxPool2d reads (child
  // i + 1, or i + 2 after a ReLU that pool_before_relu(i + 1) allows), so forward may run
  // the two as one op (Note [Convolution, then a max-pool] in kernels/cpu/conv.cpp): the
  // pool's index; 0 otherwise.
  size_t conv_then_pool(size_t i) const;
  // Child i on one value (the previous child's output), or several for the first.
  AnyValue forward_child(size_t i, AnyValue&& value);
  template <typename... V>
  AnyValue forward_child(size_t i, V&&... values) {
    return forward_child_n(i, std::vector<AnyValue>{std::forward<V>(values)...});
  }
  AnyValue forward_child_n(size_t i, std::vector<AnyValue>&& values);

  std::vector<std::shared_ptr<Module>> modules_;
  std::vector<AnyModule> any_;  // empty where modules_[i]'s Tensor forward is called directly
};
class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  Sequential() : ModuleHolder<SequentialImpl>() {}
  // Sequential({{"fc", Linear(2, 3)}, {"act", ReLU()}}).
  Sequential(std::initializer_list<NamedAnyModule> named)  // NOLINT: implicit, as libtorch's
      : ModuleHolder<SequentialImpl>(std::make_shared<SequentialImpl>(std::vector<NamedAnyModule>(named))) {}
};

// Holds submodules in a list (registered as "0", "1", ...); has no forward.
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() : Module("ModuleList") {}
  template <typename... Holders>
  explicit ModuleListImpl(Holders&&... modules) : Module("ModuleList") {
    (push_back(std::forward<Holders>(modules)), ...);
  }
  template <typename Holder, typename = decltype(std::declval<Holder>().ptr())>
  void push_back(const Holder& holder) {
    push_back(std::static_pointer_cast<Module>(holder.ptr()));
  }
  void push_back(std::shared_ptr<Module> module);
  // A module object by value (libtorch's push_back(M&&)): held as a shared copy.
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<Module, std::decay_t<M>>>>
  void push_back(M&& module) {
    push_back(std::static_pointer_cast<Module>(std::make_shared<std::decay_t<M>>(std::forward<M>(module))));
  }
  void replace_module(const std::string& name, std::shared_ptr<Module> module) override;
  using Module::replace_module;
  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  std::shared_ptr<Module> operator[](size_t i) const;
  // The i-th module as its Impl type: ptr<Impl>(i) shared, at<Impl>(i) a reference.
  template <typename Impl>
  std::shared_ptr<Impl> ptr(size_t i) const {
    auto p = std::dynamic_pointer_cast<Impl>((*this)[i]);
    EMBER_CHECK(p != nullptr, "[nn.ModuleList] element ", i, " is a ", (*this)[i]->name(), ", not the type asked for");
    return p;
  }
  template <typename Impl>
  Impl& at(size_t i) const {
    return *ptr<Impl>(i);
  }
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
EMBER_MODULE(ModuleList);

// Holds submodules by name, in insertion order; has no forward.
class ModuleDictImpl : public Module {
 public:
  ModuleDictImpl() : Module("ModuleDict") {}
  explicit ModuleDictImpl(std::vector<std::pair<std::string, std::shared_ptr<Module>>> named);
  explicit ModuleDictImpl(const OrderedDict<std::string, std::shared_ptr<Module>>& named);
  void insert(const std::string& key, std::shared_ptr<Module> module);
  // Inserts or replaces each entry of named.
  void update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named);
  template <typename Container, typename = decltype(std::declval<const Container&>().begin()->key())>
  void update(const Container& named) {
    for (const auto& item : named) insert(item.key(), std::static_pointer_cast<Module>(item.value()));
  }
  // Removes key and returns its module (an error when absent).
  std::shared_ptr<Module> pop(const std::string& key);
  void clear();
  bool empty() const { return size() == 0; }
  std::vector<std::shared_ptr<Module>> values() const { return named_children().values(); }
  OrderedDict<std::string, std::shared_ptr<Module>> items() const { return named_children(); }
  // The module under key as Impl: a reference (at) or shared (get<Impl>... via operator[]).
  template <typename Impl>
  Impl& at(const std::string& key) const {
    auto p = std::dynamic_pointer_cast<Impl>((*this)[key]);
    EMBER_CHECK(p != nullptr, "[nn.ModuleDict] '", key, "' is a ", (*this)[key]->name(), ", not the type asked for");
    return *p;
  }
  // Iterates (key, module) items in insertion order.
  std::vector<OrderedDict<std::string, std::shared_ptr<Module>>::Item>::const_iterator begin() const;
  std::vector<OrderedDict<std::string, std::shared_ptr<Module>>::Item>::const_iterator end() const;
  template <typename Holder, typename = decltype(std::declval<Holder>().ptr())>
  void insert(const std::string& key, const Holder& holder) {
    insert(key, std::static_pointer_cast<Module>(holder.ptr()));
  }
  std::shared_ptr<Module> operator[](const std::string& key) const;
  bool contains(const std::string& key) const { return named_children().contains(key); }
  size_t size() const { return named_children().size(); }
  std::vector<std::string> keys() const { return named_children().keys(); }
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override;
};
EMBER_MODULE(ModuleDict);

}  // namespace ember::nn
