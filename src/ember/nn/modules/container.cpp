#include "ember/nn/modules/container.h"

#include "ember/core/check.h"

namespace ember::nn {

SequentialImpl::SequentialImpl(std::vector<std::pair<std::string, std::shared_ptr<Module>>> named)
    : Module("Sequential") {
  for (auto& [name, m] : named) push_back(name, std::move(m));
}

void SequentialImpl::push_back(std::shared_ptr<Module> module) {
  push_back(std::to_string(modules_.size()), std::move(module));
}

void SequentialImpl::push_back(const std::string& name, std::shared_ptr<Module> module) {
  register_module(name, module);
  modules_.push_back(std::move(module));
}

Tensor SequentialImpl::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& m : modules_) x = (*m)(x);
  return x;
}

namespace {

// Swaps the child `name` in a container's ordered list as well as in its registry.
void replace_in_list(Module& self, std::vector<std::shared_ptr<Module>>& list, const std::string& name,
                     const std::shared_ptr<Module>& module) {
  const auto named = self.named_children();
  const std::shared_ptr<Module>* old = named.find(name);
  EMBER_CHECK(old != nullptr, "[nn.Module] replace_module: no submodule '", name, "' in ", self.name());
  EMBER_CHECK(module != nullptr, "[nn.Module] replace_module('", name, "') got an empty module");
  for (auto& m : list) {
    if (m == *old) m = module;
  }
}

}  // namespace

void SequentialImpl::replace_module(const std::string& name, std::shared_ptr<Module> module) {
  replace_in_list(*this, modules_, name, module);
  Module::replace_module(name, std::move(module));
}

std::shared_ptr<Module> SequentialImpl::operator[](size_t i) const {
  EMBER_CHECK(i < modules_.size(), "[nn.Sequential] Index out of range: index ", i, " in a Sequential of ",
              modules_.size(), " modules");
  return modules_[i];
}

std::shared_ptr<Module> SequentialImpl::clone() const {
  auto copy = std::make_shared<SequentialImpl>();
  const auto named = named_children();
  for (const auto& item : named) copy->push_back(item.key(), item.value()->clone());
  copy->train(is_training());
  return copy;
}

void ModuleListImpl::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

void ModuleListImpl::replace_module(const std::string& name, std::shared_ptr<Module> module) {
  replace_in_list(*this, modules_, name, module);
  Module::replace_module(name, std::move(module));
}

std::shared_ptr<Module> ModuleListImpl::operator[](size_t i) const {
  EMBER_CHECK(i < modules_.size(), "[nn.ModuleList] Index out of range: index ", i, " in a ModuleList of ",
              modules_.size(), " modules");
  return modules_[i];
}

std::shared_ptr<Module> ModuleListImpl::clone() const {
  auto copy = std::make_shared<ModuleListImpl>();
  for (const auto& m : modules_) copy->push_back(m->clone());
  copy->train(is_training());
  return copy;
}

ModuleDictImpl::ModuleDictImpl(std::vector<std::pair<std::string, std::shared_ptr<Module>>> named)
    : Module("ModuleDict") {
  for (auto& [k, m] : named) insert(k, std::move(m));
}

void ModuleDictImpl::insert(const std::string& key, std::shared_ptr<Module> module) {
  if (contains(key)) {
    replace_module(key, std::move(module));
  } else {
    register_module(key, std::move(module));
  }
}

std::shared_ptr<Module> ModuleDictImpl::operator[](const std::string& key) const {
  const auto named = named_children();
  const auto* m = named.find(key);
  EMBER_CHECK(m != nullptr, "[nn.ModuleDict] no module under key '", key, "'");
  return *m;
}

std::shared_ptr<Module> ModuleDictImpl::clone() const {
  auto copy = std::make_shared<ModuleDictImpl>();
  for (const auto& item : named_children()) copy->insert(item.key(), item.value()->clone());
  copy->train(is_training());
  return copy;
}

}  // namespace ember::nn
