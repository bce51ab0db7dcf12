#pragma once
// Sequential, ModuleList, ModuleDict.

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

// Runs its children in order, each on the previous one's output. Children are named
// "0", "1", ... (or by the names given).
class SequentialImpl : public Module {
 public:
  SequentialImpl() : Module("Sequential") {}
  template <typename... Holders>
  explicit SequentialImpl(Holders&&... modules) : Module("Sequential") {
    (push_back(std::forward<Holders>(modules)), ...);
  }
  // Named children, in order.
  explicit SequentialImpl(std::vector<std::pair<std::string, std::shared_ptr<Module>>> named);

  template <typename Holder, typename = decltype(std::declval<Holder>().ptr())>
  void push_back(const Holder& holder) {
    push_back(std::static_pointer_cast<Module>(holder.ptr()));
  }
  void push_back(std::shared_ptr<Module> module);
  void push_back(const std::string& name, std::shared_ptr<Module> module);

  Tensor forward(const Tensor& input) override;
  void replace_module(const std::string& name, std::shared_ptr<Module> module) override;
  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  std::shared_ptr<Module> operator[](size_t i) const;
  // libtorch's names for the same: ptr(i), and ptr<Impl>(i) as at<Impl>(i).
  std::shared_ptr<Module> ptr(size_t i) const { return (*this)[i]; }
  template <typename Impl>
  std::shared_ptr<Impl> ptr(size_t i) const {
    return at<Impl>(i);
  }
  // The i-th child as its Impl type (error if it is another type).
  template <typename Impl>
  std::shared_ptr<Impl> at(size_t i) const {
    auto p = std::dynamic_pointer_cast<Impl>((*this)[i]);
    EMBER_CHECK(p != nullptr, "[nn.Sequential] child ", i, " is a ", (*this)[i]->name(), ", not the type asked for");
    return p;
  }
  std::shared_ptr<Module> clone() const override;
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
EMBER_MODULE(Sequential);

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
  void replace_module(const std::string& name, std::shared_ptr<Module> module) override;
  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  std::shared_ptr<Module> operator[](size_t i) const;
  template <typename Impl>
  std::shared_ptr<Impl> at(size_t i) const {
    auto p = std::dynamic_pointer_cast<Impl>((*this)[i]);
    EMBER_CHECK(p != nullptr, "[nn.ModuleList] element ", i, " is a ", (*this)[i]->name(), ", not the type asked for");
    return p;
  }
  std::shared_ptr<Module> clone() const override;
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
  void insert(const std::string& key, std::shared_ptr<Module> module);
  template <typename Holder, typename = decltype(std::declval<Holder>().ptr())>
  void insert(const std::string& key, const Holder& holder) {
    insert(key, std::static_pointer_cast<Module>(holder.ptr()));
  }
  std::shared_ptr<Module> operator[](const std::string& key) const;
  bool contains(const std::string& key) const { return named_children().contains(key); }
  size_t size() const { return named_children().size(); }
  std::vector<std::string> keys() const { return named_children().keys(); }
  std::shared_ptr<Module> clone() const override;
};
EMBER_MODULE(ModuleDict);

}  // namespace ember::nn
