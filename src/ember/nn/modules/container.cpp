#include "ember/nn/modules/container.h"

#include <algorithm>
#include <typeinfo>

#include "ember/core/check.h"
#include "ember/jit/jit.h"
#include "ember/nn/modules/activation.h"
#include "ember/nn/modules/conv.h"
#include "ember/nn/modules/pooling.h"
#include "ember/ops/conv_prim.h"

namespace ember::nn {

SequentialImpl::SequentialImpl(std::vector<NamedAnyModule> named) : Module("Sequential") {
  for (auto& m : named) push_back_impl(m.name, std::move(m.module), std::move(m.any));
}

void SequentialImpl::push_back_impl(const std::string& name, std::shared_ptr<Module> module, AnyModule any) {
  register_module(name, module);
  modules_.push_back(std::move(module));
  any_.push_back(std::move(any));
}

void SequentialImpl::extend(const SequentialImpl& other) {
  for (size_t i = 0; i < other.modules_.size(); ++i) {
    push_back_impl(std::to_string(modules_.size()), other.modules_[i], other.any_[i]);
  }
}

void SequentialImpl::throw_return_type(const std::type_info& actual, const std::type_info& asked) {
  EMBER_ERROR("[nn.Sequential] The type of the return value is ", detail::type_name(actual), ", but you asked for type ",
              detail::type_name(asked));
}

void SequentialImpl::check_not_empty() const {
  EMBER_CHECK(!modules_.empty(), "[nn.Sequential] Cannot call forward() on an empty Sequential; push_back modules first");
}

// Note [Pool before ReLU]
// ReLU followed by a max-pool is the same function as the max-pool followed by ReLU: ReLU
// does not decrease, so it keeps each window's maximum where it was; in the second order
// ReLU runs on the pooled tensor (4x smaller for 2x2 windows with stride 2). Where a Sequential holds a
// plain ReLU (not in place) right before a plain MaxPool2d, neither with hooks, and no
// trace is being recorded (a traced graph keeps the modules' order), forward runs the pool
// first. The output has the same bits (relu maps -0 and every x <= 0 to +0, NaN to itself;
// a window's maximum is found among the same values, ties and NaN at the same places), and
// so has the input's gradient: where the window's maximum is > 0 or NaN both orders send
// dy to the same element, and where it is <= 0 ReLU's gradient is +0 in both, written over
// a zero-filled gradient. What changes is the cost: ReLU and its backward read and write
// the pooled tensor instead of the full one, and autograd keeps the pooled activation
// instead of the full one (LeNet/VGG-style stacks: a 2x2 pool saves 3/4 of both passes).
bool SequentialImpl::pool_before_relu(size_t i) const {
  if (i + 1 >= modules_.size() || !any_[i].is_empty() || !any_[i + 1].is_empty()) return false;
  const Module& relu = *modules_[i];
  const Module& pool = *modules_[i + 1];
  if (typeid(relu) != typeid(ReLUImpl) || typeid(pool) != typeid(MaxPool2dImpl)) return false;
  if (static_cast<const ReLUImpl&>(relu).options.inplace() || relu.has_hooks() || pool.has_hooks()) return false;
  return !jit::is_tracing();
}

size_t SequentialImpl::conv_then_pool(size_t i) const {
  if (i + 1 >= modules_.size() || !any_[i].is_empty() || typeid(*modules_[i]) != typeid(Conv2dImpl)) return 0;
  const size_t p = pool_before_relu(i + 1) ? i + 2 : i + 1;
  if (p >= modules_.size() || !any_[p].is_empty() || typeid(*modules_[p]) != typeid(MaxPool2dImpl)) return 0;
  const auto& conv = static_cast<const Conv2dImpl&>(*modules_[i]);
  const auto& pool = static_cast<const MaxPool2dImpl&>(*modules_[p]);
  if (conv.has_hooks() || pool.has_hooks() || jit::is_tracing()) return 0;
  if (conv.options.padding_mode() != "zeros" || !conv.options.padding_str().empty()) return 0;
  const auto all_are = [](const DimVector& v, int64_t value) {
    return !v.empty() && std::all_of(v.begin(), v.end(), [&](int64_t e) { return e == value; });
  };
  const MaxPool2dOptions& o = pool.options;
  const bool two_by_two = all_are(o.kernel_size(), 2) && (o.stride().empty() || all_are(o.stride(), 2)) &&
                          all_are(o.padding(), 0) && all_are(o.dilation(), 1) && !o.ceil_mode();
  return two_by_two ? p : 0;
}

Tensor SequentialImpl::forward(const Tensor& input) {
  check_not_empty();
  Tensor x = input;
  for (size_t i = 0; i < modules_.size(); ++i) {
    if (const size_t pool = conv_then_pool(i)) {  // Note [Convolution, then a max-pool] (kernels/cpu/conv.cpp)
      const auto& conv = static_cast<const Conv2dImpl&>(*modules_[i]);
      const auto& o = conv.options;
      x = conv2d_max_pool2d(x, conv.weight, conv.bias, o.stride(), o.padding(), o.dilation(), o.groups());
      if (pool == i + 2) x = (*modules_[i + 1])(x);  // the ReLU, after the pool (Note [Pool before ReLU])
      i = pool;
      continue;
    }
    if (pool_before_relu(i)) {  // Note [Pool before ReLU]
      x = (*modules_[i])((*modules_[i + 1])(x));
      ++i;
      continue;
    }
    x = any_[i].is_empty() ? (*modules_[i])(x) : any_[i].forward<Tensor>(x);
  }
  return x;
}

AnyValue SequentialImpl::forward_child(size_t i, AnyValue&& value) {
  if (!any_[i].is_empty()) return any_[i].any_forward(std::move(value));
  const Tensor* x = value.try_get<Tensor>();
  EMBER_CHECK(x != nullptr, "[nn.Sequential] child ", i, " (", modules_[i]->name(),
              ") takes a Tensor, but the previous child returned a ", detail::type_name(value.type_info()));
  return AnyValue((*modules_[i])(*x));
}

AnyValue SequentialImpl::forward_child_n(size_t i, std::vector<AnyValue>&& values) {
  if (values.size() == 1) return forward_child(i, std::move(values[0]));
  EMBER_ERROR("[nn.Sequential] child ", i, " (", modules_[i]->name(), ") takes one Tensor, but forward() was given ",
              values.size(), " arguments");
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
  const auto named = named_children();
  if (const std::shared_ptr<Module>* old = named.find(name)) {
    for (size_t i = 0; i < modules_.size(); ++i) {
      if (modules_[i] == *old) any_[i] = AnyModule();  // the new module is called through its Tensor forward
    }
  }
  replace_in_list(*this, modules_, name, module);
  Module::replace_module(name, std::move(module));
}

std::shared_ptr<Module> SequentialImpl::operator[](size_t i) const {
  EMBER_CHECK(i < modules_.size(), "[nn.Sequential] Index out of range: index ", i, " in a Sequential of ",
              modules_.size(), " modules");
  return modules_[i];
}

std::shared_ptr<Module> SequentialImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<SequentialImpl>();
  const auto named = named_children();
  size_t i = 0;
  for (const auto& item : named) {
    if (any_[i].is_empty()) {
      copy->push_back_impl(item.key(), item.value()->clone(), AnyModule());
    } else {
      AnyModule any = any_[i].clone();
      std::shared_ptr<Module> m = any.ptr();
      copy->push_back_impl(item.key(), std::move(m), std::move(any));
    }
    ++i;
  }
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

std::shared_ptr<Module> ModuleListImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<ModuleListImpl>();
  for (const auto& m : modules_) copy->push_back(m->clone());
  copy->train(is_training());
  return copy;
}

ModuleDictImpl::ModuleDictImpl(std::vector<std::pair<std::string, std::shared_ptr<Module>>> named)
    : Module("ModuleDict") {
  for (auto& [k, m] : named) insert(k, std::move(m));
}

ModuleDictImpl::ModuleDictImpl(const OrderedDict<std::string, std::shared_ptr<Module>>& named)
    : Module("ModuleDict") {
  for (const auto& item : named) insert(item.key(), item.value());
}

void ModuleDictImpl::update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named) {
  for (const auto& [k, m] : named) insert(k, m);
}

std::shared_ptr<Module> ModuleDictImpl::pop(const std::string& key) {
  EMBER_CHECK(contains(key), "[nn.ModuleDict] pop: Module '", key, "' is not defined in this ModuleDict");
  std::shared_ptr<Module> m = (*this)[key];
  unregister_module(key);
  return m;
}

void ModuleDictImpl::clear() {
  for (const std::string& k : keys()) unregister_module(k);
}

std::vector<OrderedDict<std::string, std::shared_ptr<Module>>::Item>::const_iterator ModuleDictImpl::begin() const {
  return children_dict().begin();
}
std::vector<OrderedDict<std::string, std::shared_ptr<Module>>::Item>::const_iterator ModuleDictImpl::end() const {
  return children_dict().end();
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
  EMBER_CHECK(m != nullptr, "[nn.ModuleDict] Module '", key, "' is not defined in this ModuleDict");
  return *m;
}

std::shared_ptr<Module> ModuleDictImpl::clone(const std::optional<Device>& /*device*/) const {
  auto copy = std::make_shared<ModuleDictImpl>();
  for (const auto& item : named_children()) copy->insert(item.key(), item.value()->clone());
  copy->train(is_training());
  return copy;
}

}  // namespace ember::nn
