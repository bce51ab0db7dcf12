#include "ember/serialize/value.h"

#include "ember/core/check.h"

namespace ember {

Value::Value(List v) : kind_(Kind::List), list_(std::make_unique<List>(std::move(v))) {}
Value::Value(Dict v) : kind_(Kind::Dict), dict_(std::make_unique<Dict>(std::move(v))) {}
Value::Value(const std::vector<int64_t>& v) : kind_(Kind::List), list_(std::make_unique<List>()) {
  for (int64_t x : v) list_->emplace_back(x);
}
Value::Value(const std::vector<double>& v) : kind_(Kind::List), list_(std::make_unique<List>()) {
  for (double x : v) list_->emplace_back(x);
}
Value::Value(const OrderedDict<std::string, ember::Tensor>& tensors)
    : kind_(Kind::Dict), dict_(std::make_unique<Dict>()) {
  for (const auto& item : tensors) dict_->insert(item.key(), Value(item.value()));
}

Value::Value(const Value& o)
    : kind_(o.kind_), b_(o.b_), i_(o.i_), d_(o.d_), s_(o.s_), t_(o.t_),
      list_(o.list_ ? std::make_unique<List>(*o.list_) : nullptr),
      dict_(o.dict_ ? std::make_unique<Dict>(*o.dict_) : nullptr) {}

Value& Value::operator=(const Value& o) {
  if (this != &o) {
    Value tmp(o);
    *this = std::move(tmp);
  }
  return *this;
}

Value::~Value() = default;

const char* Value::kind_name() const {
  switch (kind_) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Double: return "float";
    case Kind::String: return "string";
    case Kind::Tensor: return "Tensor";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
  }
  return "?";
}

#define EMBER_VALUE_EXPECT(k, what) \
  EMBER_CHECK(kind_ == (k), "[Value] expected a ", what, " but the value is a ", kind_name())

bool Value::to_bool() const {
  EMBER_VALUE_EXPECT(Kind::Bool, "bool");
  return b_;
}
int64_t Value::to_int() const {
  EMBER_VALUE_EXPECT(Kind::Int, "int");
  return i_;
}
double Value::to_double() const {
  if (kind_ == Kind::Int) return static_cast<double>(i_);
  EMBER_VALUE_EXPECT(Kind::Double, "float");
  return d_;
}
const std::string& Value::to_string() const {
  EMBER_VALUE_EXPECT(Kind::String, "string");
  return s_;
}
const ember::Tensor& Value::to_tensor() const {
  EMBER_VALUE_EXPECT(Kind::Tensor, "Tensor");
  return t_;
}
const Value::List& Value::to_list() const {
  EMBER_VALUE_EXPECT(Kind::List, "list");
  return *list_;
}
Value::List& Value::to_list() {
  EMBER_VALUE_EXPECT(Kind::List, "list");
  return *list_;
}
const Value::Dict& Value::to_dict() const {
  EMBER_VALUE_EXPECT(Kind::Dict, "dict");
  return *dict_;
}
Value::Dict& Value::to_dict() {
  EMBER_VALUE_EXPECT(Kind::Dict, "dict");
  return *dict_;
}
std::vector<int64_t> Value::to_int_list() const {
  std::vector<int64_t> out;
  for (const Value& v : to_list()) out.push_back(v.to_int());
  return out;
}
std::vector<double> Value::to_double_list() const {
  std::vector<double> out;
  for (const Value& v : to_list()) out.push_back(v.to_double());
  return out;
}
OrderedDict<std::string, ember::Tensor> Value::to_tensor_dict() const {
  OrderedDict<std::string, ember::Tensor> out;
  for (const auto& item : to_dict()) {
    EMBER_CHECK(item.value().is_tensor(), "[Value] expected a dict of tensors, but key '", item.key(), "' holds a ",
                item.value().kind_name());
    out.insert(item.key(), item.value().to_tensor());
  }
  return out;
}

Value& Value::operator[](const std::string& key) {
  if (kind_ == Kind::None) *this = dict();
  EMBER_VALUE_EXPECT(Kind::Dict, "dict");
  if (Value* v = dict_->find(key)) return *v;
  return dict_->insert(key, Value());
}
const Value& Value::at(const std::string& key) const {
  EMBER_VALUE_EXPECT(Kind::Dict, "dict");
  const Value* v = dict_->find(key);
  EMBER_CHECK(v != nullptr, "[Value] key '", key, "' not found");
  return *v;
}
bool Value::contains(const std::string& key) const { return kind_ == Kind::Dict && dict_->contains(key); }
void Value::push_back(Value v) {
  if (kind_ == Kind::None) *this = list();
  EMBER_VALUE_EXPECT(Kind::List, "list");
  list_->push_back(std::move(v));
}
size_t Value::size() const {
  if (kind_ == Kind::List) return list_->size();
  if (kind_ == Kind::Dict) return dict_->size();
  EMBER_ERROR("[Value] size() needs a list or dict, but the value is a ", kind_name());
}

bool Value::operator==(const Value& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::None: return true;
    case Kind::Bool: return b_ == o.b_;
    case Kind::Int: return i_ == o.i_;
    case Kind::Double: return d_ == o.d_ || (d_ != d_ && o.d_ != o.d_);
    case Kind::String: return s_ == o.s_;
    case Kind::Tensor:
      return t_.dtype() == o.t_.dtype() && t_.sizes() == o.t_.sizes() && t_.equal(o.t_);
    case Kind::List: return *list_ == *o.list_;
    case Kind::Dict: {
      if (dict_->size() != o.dict_->size()) return false;
      for (size_t i = 0; i < dict_->size(); ++i) {
        const auto& a = (*dict_)[i];
        const auto& b = (*o.dict_)[i];
        if (a.key() != b.key() || !(a.value() == b.value())) return false;
      }
      return true;
    }
  }
  return false;
}

}  // namespace ember
