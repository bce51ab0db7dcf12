#include "ember/nn/module.h"

#include "ember/autograd/zero_grad_default.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <ostream>
#include <sstream>
#include <typeinfo>
#include <unordered_set>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/warning.h"
#include "ember/nn/live_modules.h"

namespace ember::nn {

namespace {

void check_name(const std::string& name, const char* what) {
  EMBER_CHECK(!name.empty(), "[nn.Module] ", what, " name must not be empty");
  EMBER_CHECK(name.find('.') == std::string::npos, "[nn.Module] ", what, " name must not contain a dot (got '", name,
              "'); dots separate the levels of qualified names");
}

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

}  // namespace

namespace {
// The live modules, for detail::live_module_parameters. Never destroyed: a module freed
// late at exit must still find it.
std::mutex g_live_mu;
std::unordered_set<const Module*>& live_modules() {
  static auto* live = new std::unordered_set<const Module*>;
  return *live;
}
void add_live(const Module* m) {
  std::lock_guard<std::mutex> lock(g_live_mu);
  live_modules().insert(m);
}
}  // namespace

std::vector<Tensor> detail::live_module_parameters() {
  std::vector<Tensor> out;
  std::lock_guard<std::mutex> lock(g_live_mu);
  for (const Module* m : live_modules()) {
    for (Tensor& p : m->parameters(/*recurse=*/false)) out.push_back(std::move(p));
  }
  return out;
}

Module::Module() { add_live(this); }
Module::Module(std::string name) : name_(std::move(name)) { add_live(this); }

Module::Module(const Module& other)
    : std::enable_shared_from_this<Module>(),
      training_(other.training_),
      name_(other.name_),
      params_(other.params_),
      buffers_(other.buffers_),
      non_persistent_(other.non_persistent_),
      children_(other.children_),
      pre_hooks_(other.pre_hooks_),
      post_hooks_(other.post_hooks_),
      next_hook_id_(other.next_hook_id_) {
  add_live(this);
}

Module& Module::operator=(const Module& other) {
  if (this == &other) return *this;
  training_ = other.training_;
  name_ = other.name_;
  params_ = other.params_;
  buffers_ = other.buffers_;
  non_persistent_ = other.non_persistent_;
  children_ = other.children_;
  pre_hooks_ = other.pre_hooks_;
  post_hooks_ = other.post_hooks_;
  next_hook_id_ = other.next_hook_id_;
  return *this;
}

void Module::clear_registrations() {
  params_.clear();
  buffers_.clear();
  non_persistent_.clear();
  children_ = {};
}

const std::string& Module::name() const {
  if (name_.empty()) {
    const char* mangled = typeid(*this).name();
    int status = 0;
    char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    name_ = (status == 0 && demangled) ? demangled : mangled;
    std::free(demangled);
  }
  return name_;
}

std::shared_ptr<Module> Module::shared_from_this_checked() const {
  try {
    return std::const_pointer_cast<Module>(shared_from_this());
  } catch (const std::bad_weak_ptr&) {
    EMBER_ERROR("[nn.Module] It looks like you attempted to retrieve your top-level module as a shared_ptr, but it "
                "is not stored in a shared_ptr. Use std::make_shared<", this->name(), ">() instead of creating your module "
                "on the stack, or alternatively do not try to access your top-level module at all by passing "
                "/*include_self=*/false to modules() or named_modules()");
  }
}
Module::~Module() {
  std::lock_guard<std::mutex> lock(g_live_mu);
  live_modules().erase(this);
}

Tensor Module::forward(const Tensor&) {
  EMBER_ERROR("[nn.Module] ", this->name(), " has no forward(Tensor); call the module with the arguments its forward takes");
}

Tensor Module::operator()(const Tensor& input) {
  if (!has_hooks()) return forward(input);
  return run_with_hooks({input}, [this](const TensorList& in) { return TensorList{forward(in.at(0))}; }).at(0);
}

Tensor& Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_name(name, "Parameter");
  EMBER_CHECK(!params_.contains(name), "[nn.Module] Parameter '", name, "' already defined in ", this->name(),
              "; assign to the registered tensor instead of registering it again");
  EMBER_CHECK(!buffers_.contains(name) && !children_.contains(name), "[nn.Module] attribute '", name,
              "' is already registered as a buffer or submodule of ", this->name());
  if (tensor.defined()) {
    EMBER_CHECK(!tensor.requires_grad() || tensor.is_leaf(), "[nn.Module] parameter '", name,
                "' must be a leaf tensor (it has a grad_fn); register a detach() of it, or compute it in forward");
    tensor.requires_grad_(requires_grad);
  } else if (requires_grad) {
    warn("[nn.Module] register_parameter('" + name + "') got an undefined tensor: Ignoring the "
         "`requires_grad=true` function parameter (pass requires_grad=false to register a placeholder)");
  }
  return params_.insert_or_assign(name, std::move(tensor));
}

Tensor& Module::register_buffer(const std::string& name, Tensor tensor, bool persistent) {
  check_name(name, "Buffer");
  EMBER_CHECK(!buffers_.contains(name), "[nn.Module] Buffer '", name, "' already defined in ", this->name(),
              "; assign to the registered tensor instead of registering it again");
  EMBER_CHECK(!params_.contains(name) && !children_.contains(name), "[nn.Module] attribute '", name,
              "' is already registered as a parameter or submodule of ", this->name());
  auto it = std::find(non_persistent_.begin(), non_persistent_.end(), name);
  if (!persistent && it == non_persistent_.end()) non_persistent_.push_back(name);
  if (persistent && it != non_persistent_.end()) non_persistent_.erase(it);
  return buffers_.insert_or_assign(name, std::move(tensor));
}

void Module::register_module_impl(const std::string& name, std::shared_ptr<Module> module) {
  check_name(name, "Submodule");
  EMBER_CHECK(module != nullptr, "[nn.Module] register_module('", name, "') got an empty module");
  EMBER_CHECK(!params_.contains(name) && !buffers_.contains(name), "[nn.Module] attribute '", name,
              "' is already registered as a parameter or buffer of ", this->name());
  EMBER_CHECK(!children_.contains(name), "[nn.Module] Submodule '", name, "' already defined in ", this->name(),
              "; use replace_module() to swap it");
  children_.insert(name, std::move(module));
}

void Module::replace_module(const std::string& name, std::shared_ptr<Module> module) {
  EMBER_CHECK(children_.contains(name), "[nn.Module] replace_module: Submodule '", name, "' is not defined in ",
              this->name());
  EMBER_CHECK(module != nullptr, "[nn.Module] replace_module('", name, "') got an empty module");
  children_[name] = std::move(module);
}

void Module::collect(const std::string& prefix, bool recurse, bool want_params, bool persistent_only,
                     OrderedDict<std::string, Tensor>& out) const {
  const auto& own = want_params ? params_ : buffers_;
  for (const auto& item : own) {
    if (!item.value().defined()) continue;
    if (!want_params && persistent_only &&
        std::find(non_persistent_.begin(), non_persistent_.end(), item.key()) != non_persistent_.end()) {
      continue;
    }
    const std::string key = join(prefix, item.key());
    if (!out.contains(key)) out.insert(key, item.value());
  }
  if (!recurse) return;
  for (const auto& child : children_) child.value()->collect(join(prefix, child.key()), true, want_params, persistent_only, out);
}

OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<std::string, Tensor> out;
  collect("", recurse, true, false, out);
  // A tensor shared by two modules (weight tying) is listed once, as PyTorch does.
  OrderedDict<std::string, Tensor> unique;
  std::unordered_set<const TensorImpl*> seen;
  for (const auto& item : out) {
    if (seen.insert(item.value().impl()).second) unique.insert(item.key(), item.value());
  }
  return unique;
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<std::string, Tensor> out;
  collect("", recurse, false, false, out);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_children() const { return children_; }

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_modules(const std::string& prefix,
                                                                        bool include_self) {
  OrderedDict<std::string, std::shared_ptr<Module>> out;
  std::unordered_set<const Module*> seen;
  std::function<void(const std::shared_ptr<Module>&, const std::string&)> visit =
      [&](const std::shared_ptr<Module>& m, const std::string& p) {
        if (!seen.insert(m.get()).second) return;
        out.insert(p, m);
        for (const auto& child : m->children_) visit(child.value(), join(p, child.key()));
      };
  if (include_self) {
    visit(shared_from_this_checked(), prefix);
  } else {
    seen.insert(this);
    for (const auto& child : children_) visit(child.value(), join(prefix, child.key()));
  }
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) {
  return named_modules("", include_self).values();
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& child : children_) child.value()->train(on);
}

void Module::to(Device device, bool /*non_blocking*/) {
  EMBER_CHECK(device.is_cpu(), "[Module::to] ember runs on the CPU only; ", name(), " cannot move to ", device.str(),
              " (use to(torch::kCPU), or leave the device out)");
}

void Module::to(Device device, DType dtype, bool non_blocking) {
  to(device, non_blocking);
  to(dtype);
}

void Module::to(DType dtype) {
  NoGradGuard no_grad;
  auto convert = [&](Tensor& t) {
    if (!t.defined() || !is_floating_point(t.dtype()) || t.dtype() == dtype) return;
    const bool rg = t.requires_grad();
    Tensor converted = t.to(dtype);
    // Swap the new storage into the same tensor object, so that handles held elsewhere
    // (an optimizer's parameter list) see the conversion.
    t.impl()->set_data(*converted.impl());
    if (t.grad().defined()) t.mutable_grad() = Tensor();  // a gradient of the old dtype is stale
    t.requires_grad_(rg);
  };
  for (auto& item : params_) convert(item.value());
  for (auto& item : buffers_) convert(item.value());
  for (const auto& child : children_) child.value()->to(dtype);
}

void Module::zero_grad(std::optional<bool> set_to_none_arg) {
  const bool set_to_none = set_to_none_arg.value_or(zero_grad_sets_to_none());
  for (Tensor& p : parameters()) {
    Tensor& g = p.mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      g = Tensor();
    } else {
      NoGradGuard no_grad;
      g = g.detach();
      g.zero_();
    }
  }
}

namespace {
// Visits m and its descendants depth first, each module once, with qualified names. Works
// on a module that no shared_ptr owns (the reference forms of apply need no shared_from_this).
void visit_modules(const Module& m, const std::string& name, std::unordered_set<const Module*>& seen,
                   const std::function<void(const std::string&, const Module&)>& fn) {
  if (!seen.insert(&m).second) return;
  fn(name, m);
  for (const auto& child : m.named_children()) {
    visit_modules(*child.value(), join(name, child.key()), seen, fn);
  }
}
}  // namespace

void Module::apply(const std::function<void(Module&)>& fn) {
  std::unordered_set<const Module*> seen;
  visit_modules(*this, "", seen, [&](const std::string&, const Module& m) { fn(const_cast<Module&>(m)); });
}

void Module::apply(const std::function<void(const Module&)>& fn) const {
  std::unordered_set<const Module*> seen;
  visit_modules(*this, "", seen, [&](const std::string&, const Module& m) { fn(m); });
}

void Module::apply(const std::function<void(Module&, const std::string&)>& fn, const std::string& prefix) {
  std::unordered_set<const Module*> seen;
  visit_modules(*this, prefix, seen, [&](const std::string& n, const Module& m) { fn(const_cast<Module&>(m), n); });
}

void Module::apply(const std::function<void(const std::string&, Module&)>& fn, const std::string& prefix) {
  std::unordered_set<const Module*> seen;
  visit_modules(*this, prefix, seen, [&](const std::string& n, const Module& m) { fn(n, const_cast<Module&>(m)); });
}

void Module::apply(const std::function<void(const std::string&, const Module&)>& fn, const std::string& prefix) const {
  std::unordered_set<const Module*> seen;
  visit_modules(*this, prefix, seen, fn);
}

void Module::apply(const std::function<void(const std::shared_ptr<Module>&)>& fn) const {
  for (const auto& m : const_cast<Module*>(this)->modules()) fn(m);
}

void Module::apply(const std::function<void(const std::string&, const std::shared_ptr<Module>&)>& fn,
                   const std::string& prefix) const {
  for (const auto& item : const_cast<Module*>(this)->named_modules(prefix)) fn(item.key(), item.value());
}

OrderedDict<std::string, Tensor> Module::state_dict() const {
  OrderedDict<std::string, Tensor> raw;
  std::function<void(const Module&, const std::string&)> visit = [&](const Module& m, const std::string& p) {
    for (const auto& item : m.params_) {
      if (item.value().defined()) raw.insert_or_assign(join(p, item.key()), item.value().detach());
    }
    for (const auto& item : m.buffers_) {
      if (!item.value().defined()) continue;
      if (std::find(m.non_persistent_.begin(), m.non_persistent_.end(), item.key()) != m.non_persistent_.end()) {
        continue;
      }
      raw.insert_or_assign(join(p, item.key()), item.value().detach());
    }
    for (const auto& child : m.children_) visit(*child.value(), join(p, child.key()));
  };
  visit(*this, "");
  return raw;
}

LoadStateDictResult Module::load_state_dict(const OrderedDict<std::string, Tensor>& state, bool strict) {
  // Every destination tensor, under its qualified name (shared tensors appear under
  // each name, as in state_dict()).
  OrderedDict<std::string, Tensor*> dest;
  std::function<void(Module&, const std::string&)> visit = [&](Module& m, const std::string& p) {
    for (auto& item : m.params_) {
      if (item.value().defined()) dest.insert_or_assign(join(p, item.key()), &item.value());
    }
    for (auto& item : m.buffers_) {
      if (!item.value().defined()) continue;
      if (std::find(m.non_persistent_.begin(), m.non_persistent_.end(), item.key()) != m.non_persistent_.end()) {
        continue;
      }
      dest.insert_or_assign(join(p, item.key()), &item.value());
    }
    for (auto& child : m.children_) visit(*child.value(), join(p, child.key()));
  };
  visit(*this, "");
  LoadStateDictResult r;
  for (const auto& item : dest) {
    const Tensor* src = state.find(item.key());
    if (!src) {
      r.missing_keys.push_back(item.key());
    } else if (!src->defined() || src->sizes() != item.value()->sizes()) {
      r.mismatched_keys.push_back(item.key() + ": checkpoint has " +
                                  (src->defined() ? shape_str(src->sizes()) : std::string("an undefined tensor")) +
                                  ", module has " + shape_str(item.value()->sizes()));
    }
  }
  for (const auto& item : state) {
    if (!dest.contains(item.key())) r.unexpected_keys.push_back(item.key());
  }
  if (strict && !r.ok()) {
    std::ostringstream os;
    os << "[load_state_dict] error(s) in loading the state_dict for " << this->name() << ":";
    auto list = [&](const char* what, const std::vector<std::string>& keys) {
      if (keys.empty()) return;
      os << "\n  " << what << ": ";
      for (size_t i = 0; i < keys.size(); ++i) os << (i ? ", " : "") << '"' << keys[i] << '"';
    };
    list("Missing key(s)", r.missing_keys);
    list("Unexpected key(s)", r.unexpected_keys);
    list("Size mismatch", r.mismatched_keys);
    os << "\n  (pass strict=false to load the matching keys and get this report back instead)";
    throw Error(os.str());
  }
  NoGradGuard no_grad;
  for (const auto& item : dest) {
    const Tensor* src = state.find(item.key());
    if (!src || !src->defined() || src->sizes() != item.value()->sizes()) continue;
    item.value()->copy_(*src);
  }
  return r;
}

RemovableHandle Module::register_forward_pre_hook(ForwardPreHook hook) {
  const int id = ++next_hook_id_;
  pre_hooks_.push_back({id, std::move(hook)});
  std::weak_ptr<int> alive = alive_;
  Module* raw = this;
  return RemovableHandle([alive, raw, id] {
    if (alive.expired()) return;  // the module is gone, and its hooks with it
    auto& v = raw->pre_hooks_;
    v.erase(std::remove_if(v.begin(), v.end(), [id](const PreHook& h) { return h.id == id; }), v.end());
  });
}

RemovableHandle Module::register_forward_hook(ForwardHook hook) {
  const int id = ++next_hook_id_;
  post_hooks_.push_back({id, std::move(hook)});
  std::weak_ptr<int> alive = alive_;
  Module* raw = this;
  return RemovableHandle([alive, raw, id] {
    if (alive.expired()) return;
    auto& v = raw->post_hooks_;
    v.erase(std::remove_if(v.begin(), v.end(), [id](const PostHook& h) { return h.id == id; }), v.end());
  });
}

TensorList Module::run_with_hooks(const TensorList& inputs, const std::function<TensorList(const TensorList&)>& fn) {
  TensorList in = inputs;
  for (size_t i = 0; i < pre_hooks_.size(); ++i) {
    if (auto r = pre_hooks_[i].fn(*this, in)) in = std::move(*r);
  }
  TensorList out = fn(in);
  for (size_t i = 0; i < post_hooks_.size(); ++i) {
    if (auto r = post_hooks_[i].fn(*this, in, out)) out = std::move(*r);
  }
  return out;
}

std::shared_ptr<Module> Module::clone(const std::optional<Device>& /*device*/) const {
  EMBER_ERROR("[nn.Module] clone() has not been implemented for ", this->name(),
              "; derive the module from nn::Cloneable<", this->name(), "Impl> and implement reset()");
}

void Module::clone_into(Module& copy) const {
  NoGradGuard no_grad;
  copy.training_ = training_;
  // Tensors the copy already made (in its constructor) keep their identity, so members
  // such as LinearImpl::weight stay valid; only their values are copied.
  auto copy_tensors = [](const OrderedDict<std::string, Tensor>& from, OrderedDict<std::string, Tensor>& to,
                         bool params) {
    for (const auto& item : from) {
      const Tensor& t = item.value();
      Tensor* existing = to.find(item.key());
      if (existing && existing->defined() && t.defined() && existing->sizes() == t.sizes() &&
          existing->dtype() == t.dtype()) {
        existing->copy_(t);
      } else if (existing && existing->defined() && t.defined()) {
        // Another dtype or shape: the copy's tensor takes a clone's data but keeps its
        // identity, so members such as `weight` still name the registered tensor.
        existing->set_data(t.clone());
      } else {
        Tensor c = t.defined() ? t.clone() : Tensor();
        if (params && c.defined()) c.requires_grad_(t.requires_grad());
        to.insert_or_assign(item.key(), c);
      }
    }
  };
  copy_tensors(params_, copy.params_, true);
  copy_tensors(buffers_, copy.buffers_, false);
  copy.non_persistent_ = non_persistent_;
  for (const auto& item : children_) {
    if (auto* existing = copy.children_.find(item.key())) {
      if (typeid(**existing) == typeid(*item.value())) {
        (*existing)->assign_clone_of(*item.value());
      } else {
        // A child swapped after construction (quant::prepare / convert / quantize_dynamic
        // replace layers where they are registered): the copy gets a clone of the new one.
        copy.replace_module(item.key(), item.value()->clone());
      }
    } else {
      copy.children_.insert(item.key(), item.value()->clone());
    }
  }
}

void Module::unregister_module(const std::string& name) {
  EMBER_CHECK(children_.contains(name), "[nn.Module] No Module with name `", name, "` is registered in ", this->name());
  OrderedDict<std::string, std::shared_ptr<Module>> kept;
  for (const auto& item : children_) {
    if (item.key() != name) kept.insert(item.key(), item.value());
  }
  children_ = std::move(kept);
}

Tensor Module::unregister_parameter(const std::string& name) {
  EMBER_CHECK(params_.contains(name), "[nn.Module] No parameter with name `", name, "` is registered in ", this->name());
  Tensor removed = params_[name];
  OrderedDict<std::string, Tensor> kept(params_.key_description());
  for (const auto& item : params_) {
    if (item.key() != name) kept.insert(item.key(), item.value());
  }
  params_ = std::move(kept);
  return removed;
}

namespace detail {
bool print_builtin(std::ostream& os, const Module& m);  // nn/libtorch_print.cpp
}  // namespace detail

void Module::pretty_print(std::ostream& stream) const {
  if (!detail::print_builtin(stream, *this)) stream << this->name();
}

void print_module_tree(std::ostream& os, const Module& m, int indent) {
  m.pretty_print(os);
  if (m.children_.empty()) return;
  os << "(\n";
  const std::string pad(static_cast<size_t>(indent + 2), ' ');
  for (const auto& child : m.children_) {
    os << pad << "(" << child.key() << "): ";
    print_module_tree(os, *child.value(), indent + 2);
    os << "\n";
  }
  os << std::string(static_cast<size_t>(indent), ' ') << ")";
}

void Module::print_python(std::ostream& os, int indent) const {
  os << this->name() << "(";
  const std::string extra = extra_repr();
  if (children_.empty()) {
    os << extra << ")";
    return;
  }
  const std::string pad(static_cast<size_t>(indent + 2), ' ');
  if (!extra.empty()) os << "\n" << pad << extra;
  for (const auto& child : children_) {
    os << "\n" << pad << "(" << child.key() << "): ";
    child.value()->print_python(os, indent + 2);
  }
  os << "\n" << std::string(static_cast<size_t>(indent), ' ') << ")";
}

std::string Module::repr() const {
  std::ostringstream os;
  print_python(os, 0);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Module& m) {
  print_module_tree(os, m, 0);
  return os;
}

}  // namespace ember::nn
