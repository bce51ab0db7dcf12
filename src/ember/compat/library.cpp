#include "ember/compat/library.h"

#include <array>
#include <cctype>
#include <map>
#include <mutex>
#include <ostream>
#include <sstream>

#include "ember/autograd/autograd_meta.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/node.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/nn/modules/any.h"

namespace ember {

namespace {
constexpr size_t kNumKeys = static_cast<size_t>(DispatchKey::NumKeys);
// Set by AutoDispatchBelowADInplaceOrView and while a backend kernel runs.
[[gnu::tls_model("initial-exec")]] thread_local bool tl_below_autograd = false;
}  // namespace

const char* dispatch_key_name(DispatchKey key) {
  switch (key) {
    case DispatchKey::Undefined: return "Undefined";
    case DispatchKey::CPU: return "CPU";
    case DispatchKey::CUDA: return "CUDA";
    case DispatchKey::Meta: return "Meta";
    case DispatchKey::BackendSelect: return "BackendSelect";
    case DispatchKey::ADInplaceOrView: return "ADInplaceOrView";
    case DispatchKey::Autograd: return "Autograd";
    case DispatchKey::AutogradCPU: return "AutogradCPU";
    case DispatchKey::AutogradCUDA: return "AutogradCUDA";
    case DispatchKey::CompositeImplicitAutograd: return "CompositeImplicitAutograd";
    case DispatchKey::CompositeExplicitAutograd: return "CompositeExplicitAutograd";
    case DispatchKey::NumKeys: break;
  }
  return "?";
}

// ---------------------------------------------------------------- schemas

Argument::Argument(std::string name, std::string type, std::optional<std::string> default_value,
                   std::optional<AliasInfo> alias_info, bool kwarg_only)
    : name_(std::move(name)),
      type_(std::move(type)),
      default_value_(std::move(default_value)),
      alias_info_(std::move(alias_info)),
      kwarg_only_(kwarg_only) {}

bool Argument::is_tensor_like() const { return type_.rfind("Tensor", 0) == 0; }

FunctionSchema::FunctionSchema(std::string name, std::string overload_name, std::vector<Argument> arguments,
                               std::vector<Argument> returns)
    : name_(std::move(name)),
      overload_name_(std::move(overload_name)),
      arguments_(std::move(arguments)),
      returns_(std::move(returns)) {}

namespace {

// The type with its alias annotation put back after the base name: Tensor(a!), Tensor(a)[].
std::string annotated_type(const Argument& a) {
  if (!a.alias_info()) return a.type();
  const std::string& t = a.type();
  size_t base = 0;
  while (base < t.size() && (std::isalnum(static_cast<unsigned char>(t[base])) || t[base] == '_')) ++base;
  return t.substr(0, base) + "(" + a.alias_info()->set + (a.alias_info()->is_write ? "!" : "") + ")" +
         t.substr(base);
}

}  // namespace

std::string FunctionSchema::str() const {
  std::ostringstream os;
  os << name_;
  if (!overload_name_.empty()) os << "." << overload_name_;
  os << "(";
  bool kwarg_marker = false;
  for (size_t i = 0; i < arguments_.size(); ++i) {
    const Argument& a = arguments_[i];
    if (i > 0) os << ", ";
    if (a.kwarg_only() && !kwarg_marker) {
      os << "*, ";
      kwarg_marker = true;
    }
    os << annotated_type(a) << " " << a.name();
    if (a.default_value()) os << "=" << *a.default_value();
  }
  os << ") -> ";
  if (returns_.size() == 1 && returns_[0].name().empty()) {
    os << annotated_type(returns_[0]);
  } else {
    os << "(";
    for (size_t i = 0; i < returns_.size(); ++i) {
      if (i > 0) os << ", ";
      os << annotated_type(returns_[i]);
      if (!returns_[i].name().empty()) os << " " << returns_[i].name();
    }
    os << ")";
  }
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const FunctionSchema& schema) { return os << schema.str(); }

namespace {

const char* const kSchemaTypes[] = {"Tensor", "int",    "SymInt",       "float",     "bool",      "str",
                                    "Scalar", "ScalarType", "Device",   "Layout",    "MemoryFormat",
                                    "Generator", "Dimname", "Storage",  "Stream",    "QScheme",
                                    "complex",   "Any",     "t",        "number"};

class SchemaParser {
 public:
  SchemaParser(std::string_view text, std::string_view default_ns) : s_(text), default_ns_(default_ns) {}

  FunctionSchema parse() {
    std::string name = ident("the operator name");
    if (accept("::")) {
      name += "::" + ident("the operator name after '::'");
    } else if (!default_ns_.empty()) {
      name = std::string(default_ns_) + "::" + name;
    }
    std::string overload;
    if (accept(".")) overload = ident("the overload name after '.'");
    expect("(");
    std::vector<Argument> args;
    bool kwarg_only = false;
    if (!accept(")")) {
      while (true) {
        if (accept("*")) {
          kwarg_only = true;
        } else {
          args.push_back(argument(true, kwarg_only));
        }
        if (accept(")")) break;
        expect(",");
      }
    }
    expect("->");
    std::vector<Argument> returns;
    if (accept("(")) {
      if (!accept(")")) {
        while (true) {
          returns.push_back(argument(false, false));
          if (accept(")")) break;
          expect(",");
        }
      }
    } else {
      returns.push_back(argument(false, false));
    }
    skip_space();
    if (pos_ != s_.size()) fail("the end of the schema");
    return FunctionSchema(std::move(name), std::move(overload), std::move(args), std::move(returns));
  }

 private:
  [[noreturn]] void fail(const char* expected) const {
    EMBER_ERROR("[torch::Library::def] cannot parse the schema \"", s_, "\": expected ", expected, " at position ",
                pos_, " (\"", s_.substr(pos_, 12), "\"); schemas look like "
                "\"ns::name.overload(Tensor(a!) self, Tensor? other=None, int n=1) -> Tensor(a!)\"");
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool accept(std::string_view token) {
    skip_space();
    if (s_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  void expect(std::string_view token) {
    if (!accept(token)) {
      const std::string what = "'" + std::string(token) + "'";
      fail(what.c_str());
    }
  }
  std::string ident(const char* what) {
    skip_space();
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    if (pos_ == start) fail(what);
    return std::string(s_.substr(start, pos_ - start));
  }

  std::optional<AliasInfo> alias() {
    AliasInfo info;
    info.set = ident("an alias set name such as 'a'");
    info.is_write = accept("!");
    if (accept("->")) expect("*");
    expect(")");
    return info;
  }

  Argument argument(bool with_name_required, bool kwarg_only) {
    const std::string base = ident("a type");
    bool known = false;
    for (const char* t : kSchemaTypes) known = known || base == t;
    if (!known) {
      EMBER_ERROR("[torch::Library::def] unknown type '", base, "' in the schema \"", s_,
                  "\"; known types: Tensor, int, SymInt, float, bool, str, Scalar, ScalarType, Device, Layout, "
                  "MemoryFormat, Generator, Dimname, with ? (optional) and [] (list) suffixes");
    }
    std::string type = base;
    std::optional<AliasInfo> alias_info;
    while (true) {
      skip_space();
      if (accept("(")) {
        if (alias_info) fail("one alias annotation per type");
        alias_info = alias();
      } else if (accept("[")) {
        skip_space();
        std::string n;
        while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) n += s_[pos_++];
        expect("]");
        type += "[" + n + "]";
      } else if (accept("?")) {
        type += "?";
      } else {
        break;
      }
    }
    std::string name;
    skip_space();
    if (pos_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
      name = ident("an argument name");
    } else if (with_name_required) {
      fail("an argument name");
    }
    std::optional<std::string> default_value;
    if (with_name_required && accept("=")) {
      skip_space();
      const size_t start = pos_;
      int depth = 0;
      while (pos_ < s_.size()) {
        const char c = s_[pos_];
        if (c == '[' || c == '(') ++depth;
        if ((c == ']' || c == ')') && depth-- == 0) break;
        if (c == ',' && depth == 0) break;
        if (c == '"' || c == '\'') {
          const size_t close = s_.find(c, pos_ + 1);
          if (close == std::string_view::npos) fail("a closing quote");
          pos_ = close;
        }
        ++pos_;
      }
      std::string value(s_.substr(start, pos_ - start));
      while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
      if (value.empty()) fail("a default value after '='");
      default_value = std::move(value);
    }
    return Argument(std::move(name), std::move(type), std::move(default_value), std::move(alias_info), kwarg_only);
  }

  std::string_view s_;
  std::string_view default_ns_;
  size_t pos_ = 0;
};

}  // namespace

FunctionSchema parse_schema(std::string_view text, std::string_view default_namespace) {
  return SchemaParser(text, default_namespace).parse();
}

// ---------------------------------------------------------------- registry

namespace library_detail {

std::string demangled_name(const std::type_info& type) { return nn::detail::type_name(type); }

struct OperatorEntry {
  OperatorName name;
  std::string full_name;  // "ns::op" or "ns::op.overload"
  std::optional<FunctionSchema> schema;
  std::string schema_where;
  std::array<std::optional<Kernel>, kNumKeys> kernels;
  std::array<std::string, kNumKeys> kernel_where;
};

}  // namespace library_detail

namespace {

using library_detail::Kernel;
using library_detail::OperatorEntry;

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<OperatorEntry>> ops;
  std::map<std::string, std::string> defined_namespaces;  // ns -> where its TORCH_LIBRARY is
};

// Never destroyed: static TORCH_LIBRARY blocks deregister during static destruction.
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

std::string full_name(const std::string& name, const std::string& overload) {
  return overload.empty() ? name : name + "." + overload;
}

OperatorEntry& entry_locked(Registry& r, const std::string& name, const std::string& overload) {
  std::unique_ptr<OperatorEntry>& e = r.ops[full_name(name, overload)];
  if (!e) {
    e = std::make_unique<OperatorEntry>();
    e->name = {name, overload};
    e->full_name = full_name(name, overload);
  }
  return *e;
}

const OperatorEntry* find_locked(Registry& r, const std::string& name, const std::string& overload) {
  auto it = r.ops.find(full_name(name, overload));
  return it == r.ops.end() ? nullptr : it->second.get();
}

// "SymInt" is int to a kernel, and fixed-size lists are lists.
std::string normalized_type(const std::string& type) {
  std::string out;
  for (size_t i = 0; i < type.size(); ++i) {
    if (type[i] == '[') {
      out += "[]";
      i = type.find(']', i);
    } else {
      out += type[i];
    }
  }
  if (out.rfind("SymInt", 0) == 0) out = "int" + out.substr(6);
  return out;
}

void check_kernel_against_schema(const FunctionSchema& schema, const Kernel& kernel, const std::string& where) {
  if (kernel.kind != Kernel::Kind::Function) return;
  const auto& ka = kernel.schema_types.arguments;
  const auto& kr = kernel.schema_types.returns;
  auto types_of = [](const std::vector<Argument>& args) {
    std::string s;
    for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i].type();
    return s;
  };
  auto kernel_types = [](const std::vector<std::string>& types) {
    std::string s;
    for (size_t i = 0; i < types.size(); ++i) s += (i ? ", " : "") + (types[i].empty() ? "?" : types[i]);
    return s;
  };
  bool ok = ka.size() == schema.arguments().size() && kr.size() == schema.returns().size();
  for (size_t i = 0; ok && i < ka.size(); ++i) {
    ok = ka[i].empty() || ka[i] == normalized_type(schema.arguments()[i].type());
  }
  for (size_t i = 0; ok && i < kr.size(); ++i) {
    ok = kr[i].empty() || kr[i] == normalized_type(schema.returns()[i].type());
  }
  EMBER_CHECK(ok, "[torch::Library::impl] the kernel for ", schema.name(), " (", where, ") takes (",
              kernel_types(ka), ") and returns (", kernel_types(kr), "), but the schema says (",
              types_of(schema.arguments()), ") -> (", types_of(schema.returns()), "): ", kernel.signature_name,
              "; make the kernel's C++ types match the schema (Tensor: const Tensor&, int: int64_t, float: double, "
              "Tensor?: const std::optional<Tensor>&, Tensor[]: TensorList)");
}

}  // namespace

// ---------------------------------------------------------------- kernels

CppFunction dispatch_impl(DispatchKey key, CppFunction f) {
  f.dispatch_key_ = key;
  return f;
}

namespace autograd {
CppFunction autogradNotImplementedFallback() {
  Kernel k;
  k.kind = Kernel::Kind::AutogradNotImplemented;
  k.signature_name = "autogradNotImplementedFallback";
  return CppFunction(std::move(k));
}
CppFunction autogradNotImplementedInplaceOrViewFallback() {
  Kernel k;
  k.kind = Kernel::Kind::InplaceOrViewNotImplemented;
  k.signature_name = "autogradNotImplementedInplaceOrViewFallback";
  return CppFunction(std::move(k));
}
}  // namespace autograd

// ---------------------------------------------------------------- libraries

Library::Library(Kind kind, std::string ns, std::optional<DispatchKey> key, const char* file, uint32_t line)
    : kind_(kind), ns_(std::move(ns)), key_(key), file_(file ? file : ""), line_(line) {
  EMBER_CHECK(!ns_.empty() && ns_.find("::") == std::string::npos,
              "[torch::Library] a library's namespace is one identifier, got '", ns_, "'");
  EMBER_CHECK(kind_ == IMPL || !key_, "[torch::Library] only TORCH_LIBRARY_IMPL takes a dispatch key (",
              where(), ")");
  if (kind_ == DEF) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto [it, inserted] = r.defined_namespaces.emplace(ns_, where());
    EMBER_CHECK(inserted, "[torch::Library] Only a single TORCH_LIBRARY can be used to register the namespace ",
                ns_, "; it is already registered at ", it->second, " and again at ", where(),
                ". Use TORCH_LIBRARY_FRAGMENT for further definitions in the same namespace.");
    const std::string ns_copy = ns_;
    undo_.push_back([ns_copy] {
      Registry& reg = registry();
      std::lock_guard<std::mutex> l(reg.mutex);
      reg.defined_namespaces.erase(ns_copy);
    });
  }
}

Library::~Library() {
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
}

Library::Library(Library&& other) noexcept
    : kind_(other.kind_),
      ns_(std::move(other.ns_)),
      key_(other.key_),
      file_(std::move(other.file_)),
      line_(other.line_),
      undo_(std::move(other.undo_)) {
  other.undo_.clear();
}

std::string Library::where() const { return file_ + ":" + std::to_string(line_); }

Library& Library::def(std::string_view schema_text) {
  EMBER_CHECK(kind_ != IMPL, "[torch::Library::def] def() is for TORCH_LIBRARY / TORCH_LIBRARY_FRAGMENT blocks; this ",
              "is a TORCH_LIBRARY_IMPL block (", where(), ")");
  FunctionSchema schema = parse_schema(schema_text, ns_);
  const std::string prefix = ns_ + "::";
  EMBER_CHECK(schema.name().rfind(prefix, 0) == 0, "[torch::Library::def] ", schema.name(),
              " is not in this library's namespace '", ns_, "' (", where(), "); write it as ",
              prefix + schema.name().substr(schema.name().find("::") + 2), " or leave the namespace out");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  OperatorEntry& e = entry_locked(r, schema.name(), schema.overload_name());
  EMBER_CHECK(!e.schema, "[torch::Library::def] ", e.full_name, " is already defined at ", e.schema_where,
              " as \"", e.schema->str(), "\"; each op (name and overload) is defined once");
  for (size_t k = 0; k < kNumKeys; ++k) {
    if (e.kernels[k]) check_kernel_against_schema(schema, *e.kernels[k], e.kernel_where[k]);
  }
  e.schema = std::move(schema);
  e.schema_where = where();
  OperatorEntry* entry = &e;
  undo_.push_back([entry] {
    Registry& reg = registry();
    std::lock_guard<std::mutex> l(reg.mutex);
    entry->schema.reset();
    entry->schema_where.clear();
  });
  return *this;
}

Library& Library::def_with_kernel(std::string_view schema_or_name, CppFunction f) {
  std::string text(schema_or_name);
  if (text.find('(') == std::string::npos) {
    // A bare name: the schema comes from the kernel's C++ signature.
    const auto& types = f.kernel().schema_types;
    std::string schema = text + "(";
    for (size_t i = 0; i < types.arguments.size(); ++i) {
      EMBER_CHECK(!types.arguments[i].empty(), "[torch::Library::def] cannot infer the schema of ", text,
                  ": argument ", i, " of ", f.kernel().signature_name,
                  " has no schema type; pass the schema text instead of the bare name");
      schema += (i ? ", " : "") + types.arguments[i] + " _" + std::to_string(i);
    }
    schema += ") -> (";
    for (size_t i = 0; i < types.returns.size(); ++i) {
      EMBER_CHECK(!types.returns[i].empty(), "[torch::Library::def] cannot infer the schema of ", text,
                  ": a result type of ", f.kernel().signature_name, " has no schema type; pass the schema text");
      schema += (i ? ", " : "") + types.returns[i];
    }
    text = schema + ")";
  }
  def(text);
  const FunctionSchema parsed = parse_schema(text, ns_);
  const std::string name = parsed.name().substr(parsed.name().find("::") + 2) +
                           (parsed.overload_name().empty() ? "" : "." + parsed.overload_name());
  return impl_kernel(name, f.dispatch_key() ? f.dispatch_key() : std::make_optional(DispatchKey::CompositeImplicitAutograd),
                     std::move(f));
}

Library& Library::impl_kernel(std::string_view name_text, std::optional<DispatchKey> key, CppFunction f) {
  if (!key) key = f.dispatch_key();
  if (!key) key = key_;
  if (!key) key = DispatchKey::CompositeImplicitAutograd;
  EMBER_CHECK(!key_ || *key == *key_, "[torch::Library::impl] this TORCH_LIBRARY_IMPL block registers ",
              dispatch_key_name(*key_), " kernels, but ", name_text, " was given one for ",
              dispatch_key_name(*key), " (", where(), ")");
  EMBER_CHECK(*key != DispatchKey::Undefined && *key != DispatchKey::NumKeys,
              "[torch::Library::impl] no dispatch key given for ", name_text);
  std::string name(name_text);
  if (name.find("::") == std::string::npos) {
    name = ns_ + "::" + name;
  } else {
    EMBER_CHECK(name.rfind(ns_ + "::", 0) == 0, "[torch::Library::impl] ", name, " is not in this library's namespace '",
                ns_, "' (", where(), ")");
  }
  std::string overload;
  const size_t dot = name.find('.', name.find("::") + 2);
  if (dot != std::string::npos) {
    overload = name.substr(dot + 1);
    name.resize(dot);
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  OperatorEntry& e = entry_locked(r, name, overload);
  const size_t k = static_cast<size_t>(*key);
  EMBER_CHECK(!e.kernels[k], "[torch::Library::impl] ", e.full_name, " already has a ", dispatch_key_name(*key),
              " kernel (registered at ", e.kernel_where[k], "); registered again at ", where());
  if (e.schema) check_kernel_against_schema(*e.schema, f.kernel(), where());
  e.kernels[k] = f.kernel();
  e.kernel_where[k] = where();
  OperatorEntry* entry = &e;
  undo_.push_back([entry, k] {
    Registry& reg = registry();
    std::lock_guard<std::mutex> l(reg.mutex);
    entry->kernels[k].reset();
    entry->kernel_where[k].clear();
  });
  return *this;
}

// ---------------------------------------------------------------- lookup

Dispatcher& Dispatcher::singleton() {
  static Dispatcher d;
  return d;
}

OperatorHandle Dispatcher::findSchemaOrThrow(const char* name, const char* overload_name) const {
  std::optional<OperatorHandle> op = findSchema({name ? name : "", overload_name ? overload_name : ""});
  if (op) return *op;
  std::string known;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const auto& [n, e] : r.ops) {
      if (e->schema) known += (known.empty() ? "" : ", ") + n;
    }
  }
  EMBER_ERROR("[Dispatcher::findSchemaOrThrow] Could not find schema for ",
              full_name(name ? name : "", overload_name ? overload_name : ""),
              "; ops with a schema: ", known.empty() ? "none" : known,
              ". Define it with TORCH_LIBRARY(ns, m) { m.def(\"name(...) -> ...\"); }");
}

std::optional<OperatorHandle> Dispatcher::findSchema(const OperatorName& name) const {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const OperatorEntry* e = find_locked(r, name.name, name.overload_name);
  if (!e || !e->schema) return std::nullopt;
  return OperatorHandle(const_cast<OperatorEntry*>(e));
}

std::optional<OperatorHandle> Dispatcher::findOp(const OperatorName& name) const {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const OperatorEntry* e = find_locked(r, name.name, name.overload_name);
  if (!e) return std::nullopt;
  return OperatorHandle(const_cast<OperatorEntry*>(e));
}

std::vector<OperatorName> Dispatcher::getAllOpNames() const {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<OperatorName> names;
  for (const auto& [n, e] : r.ops) {
    if (e->schema) names.push_back(e->name);
  }
  return names;
}

const FunctionSchema& OperatorHandle::schema() const {
  EMBER_CHECK(entry_->schema, "[OperatorHandle::schema] ", entry_->full_name,
              " has kernels but no schema; define it with m.def(...)");
  return *entry_->schema;
}

const OperatorName& OperatorHandle::operator_name() const { return entry_->name; }

bool OperatorHandle::hasSchema() const { return entry_->schema.has_value(); }

bool OperatorHandle::hasKernelForDispatchKey(DispatchKey key) const {
  return key < DispatchKey::NumKeys && entry_->kernels[static_cast<size_t>(key)].has_value();
}

AutoDispatchBelowADInplaceOrView::AutoDispatchBelowADInplaceOrView()
    : prev_grad_mode_(GradMode::is_enabled()), prev_below_(tl_below_autograd) {
  GradMode::set_enabled(false);
  tl_below_autograd = true;
}

AutoDispatchBelowADInplaceOrView::~AutoDispatchBelowADInplaceOrView() {
  GradMode::set_enabled(prev_grad_mode_);
  tl_below_autograd = prev_below_;
}

// ---------------------------------------------------------------- calls

namespace library_detail {

namespace {

const Kernel* kernel_at(const OperatorEntry& op, DispatchKey key) {
  const auto& k = op.kernels[static_cast<size_t>(key)];
  return k ? &*k : nullptr;
}

const Kernel& checked(const OperatorEntry& op, const Kernel& k, DispatchKey key, std::type_index sig,
                      const char* sig_name) {
  EMBER_CHECK(k.signature == sig, "[", op.full_name, "] called as ", sig_name, ", but its ", dispatch_key_name(key),
              " kernel is ", k.signature_name, "; typed<Sig>() must name the kernel's own C++ signature");
  return k;
}

}  // namespace

const Kernel& resolve(const OperatorEntry& op, std::type_index sig, const char* sig_name, CallMode& mode) {
  EMBER_CHECK(op.schema, "[", op.full_name, "] has kernels but no schema; define it with TORCH_LIBRARY(ns, m) { ",
              "m.def(\"...\"); }");
  if (!tl_below_autograd) {
    for (DispatchKey key : {DispatchKey::AutogradCPU, DispatchKey::Autograd}) {
      const Kernel* k = kernel_at(op, key);
      if (k && k->kind == Kernel::Kind::Function) {
        mode = CallMode::Direct;
        return checked(op, *k, key, sig, sig_name);
      }
    }
  }
  for (DispatchKey key : {DispatchKey::CPU, DispatchKey::CompositeExplicitAutograd}) {
    if (const Kernel* k = kernel_at(op, key); k && k->kind == Kernel::Kind::Function) {
      mode = tl_below_autograd ? CallMode::Direct : CallMode::Backend;
      return checked(op, *k, key, sig, sig_name);
    }
  }
  if (const Kernel* k = kernel_at(op, DispatchKey::CompositeImplicitAutograd); k && k->kind == Kernel::Kind::Function) {
    // A composite kernel: autograd records through the ops it calls.
    mode = CallMode::Direct;
    return checked(op, *k, DispatchKey::CompositeImplicitAutograd, sig, sig_name);
  }
  std::string registered;
  for (size_t k = 0; k < kNumKeys; ++k) {
    if (op.kernels[k]) registered += (registered.empty() ? "" : ", ") + std::string(dispatch_key_name(DispatchKey(k)));
  }
  const std::string& name = op.schema->name();
  EMBER_ERROR("[", op.full_name, "] has no kernel to run on CPU tensors (kernels registered for: ",
              registered.empty() ? "none" : registered, "); register one with TORCH_LIBRARY_IMPL(",
              name.substr(0, name.find("::")), ", CPU, m) { m.impl(\"", name.substr(name.find("::") + 2), "\", fn); }");
}

namespace {

// The schema's view relation: whether returns[0] is a (non-written) alias of arguments[0].
bool is_view_op(const OperatorEntry& op) {
  const FunctionSchema& s = *op.schema;
  size_t aliasing_returns = 0;
  for (const Argument& r : s.returns()) aliasing_returns += r.alias_info() && !r.alias_info()->is_write;
  if (aliasing_returns == 0) return false;
  EMBER_CHECK(aliasing_returns == 1, "[", op.full_name, "] Expected only a single output in the operator schema ",
              "to have a non-write alias annotation (i.e., 'Tensor(a)'); \"", s.str(),
              "\" has ", aliasing_returns, ". Ops whose outputs are several views need their own Autograd kernel.");
  const bool first = !s.returns().empty() && s.returns()[0].alias_info() && !s.returns()[0].alias_info()->is_write &&
                     !s.arguments().empty() && s.arguments()[0].alias_info() &&
                     s.arguments()[0].alias_info()->set == s.returns()[0].alias_info()->set;
  EMBER_CHECK(first, "[", op.full_name, "] the not-implemented autograd wrapper can only create view relationships ",
              "between the first argument and the first output; \"", s.str(),
              "\" makes another one. Register an Autograd kernel for this op.");
  return true;
}

bool is_float_like(const Tensor& t) { return t.defined() && t.is_floating_point(); }

}  // namespace

BackendCall::BackendCall(const OperatorEntry& op, FlatTensors inputs) : op_(op), inputs_(std::move(inputs)) {
  const FunctionSchema& s = *op_.schema;
  any_requires_grad_ = ::ember::autograd::needs_grad_list(inputs_.tensors);
  (void)is_view_op(op_);  // refuses schemas the wrapper cannot handle, before running anything
  if (GradMode::is_enabled()) {
    for (size_t i = 0; i < inputs_.tensors.size(); ++i) {
      const uint32_t a = inputs_.position[i];
      if (a < s.arguments().size() && s.arguments()[a].is_write()) {
        ::ember::autograd::check_inplace(inputs_.tensors[i], op_.full_name.c_str());
      }
    }
  }
}

BackendCall::~BackendCall() {
  if (entered_) leave();
}

void BackendCall::enter() {
  prev_grad_mode_ = GradMode::is_enabled();
  prev_below_ = tl_below_autograd;
  GradMode::set_enabled(false);
  tl_below_autograd = true;
  entered_ = true;
}

void BackendCall::leave() {
  GradMode::set_enabled(prev_grad_mode_);
  tl_below_autograd = prev_below_;
  entered_ = false;
}

void BackendCall::finish(const FlatTensors& outputs) {
  namespace ag = ::ember::autograd;
  const FunctionSchema& s = *op_.schema;
  // Arguments the op writes: their version moves on, and they take the op's history.
  std::vector<const Tensor*> written;
  for (size_t i = 0; i < inputs_.tensors.size(); ++i) {
    const uint32_t a = inputs_.position[i];
    if (a < s.arguments().size() && s.arguments()[a].is_write() && inputs_.tensors[i].defined()) {
      inputs_.tensors[i].bump_version();
      written.push_back(&inputs_.tensors[i]);
    }
  }
  const bool view_op = is_view_op(op_);
  const Tensor* view_source = nullptr;
  if (view_op) {
    for (size_t i = 0; i < inputs_.tensors.size() && !view_source; ++i) {
      if (inputs_.position[i] == 0) view_source = &inputs_.tensors[i];
    }
  }
  auto make_node = [&](const Tensor* first) {
    auto node = std::make_shared<ag::NotDifferentiable>(op_.full_name);
    std::vector<Tensor> edges_of;
    edges_of.reserve(inputs_.tensors.size());
    if (first) edges_of.push_back(*first);
    for (const Tensor& t : inputs_.tensors) {
      if (&t != first) edges_of.push_back(t);
    }
    ag::collect_next_edges(*node, edges_of);
    ag::maybe_record_anomaly(*node);
    return node;
  };
  if (any_requires_grad_) {
    for (const Tensor* w : written) {
      if (is_float_like(*w)) ag::rebase_history(*w, make_node(w));
    }
  }
  std::shared_ptr<ag::Node> out_node;
  for (size_t i = 0; i < outputs.tensors.size(); ++i) {
    const Tensor& out = outputs.tensors[i];
    if (!out.defined()) continue;
    const uint32_t r = outputs.position[i];
    const bool aliases_written = r < s.returns().size() && s.returns()[r].is_write();
    if (aliases_written) continue;  // the written argument itself, handled above
    bool is_input = false;
    for (const Tensor& in : inputs_.tensors) is_input = is_input || in.impl() == out.impl();
    if (is_input) continue;  // an input returned as is keeps its own history
    const bool is_view = view_op && r == 0 && view_source != nullptr;
    if (is_view && !out.impl()->view_base()) {
      TensorImpl* base = view_source->impl()->view_base();
      out.impl()->set_view_base(base ? view_source->impl()->view_base_ptr() : view_source->impl_ptr());
    }
    if (!any_requires_grad_ || !is_float_like(out)) continue;
    if (!out_node) out_node = make_node(nullptr);
    ag::set_history(out, out_node);
    if (is_view) out.impl()->autograd_meta()->view_forbids_inplace = op_.full_name;
  }
}

}  // namespace library_detail

}  // namespace ember
