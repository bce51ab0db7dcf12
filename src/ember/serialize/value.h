#pragma once
// ember::Value: what a checkpoint holds — None, bool, int, float, string, Tensor, or
// lists and (insertion-ordered) dictionaries of Values, nested freely. Model state,
// optimizer state, scheduler state, the epoch and the RNG state all fit in one Value.
//
//   Value ckpt = Value::dict();
//   ckpt["epoch"] = 3;
//   ckpt["model"] = Value(model->state_dict());
//   ember::save(ckpt, "run/ckpt.safetensors");

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/ordered_dict.h"
#include "ember/core/tensor.h"

namespace ember {

class Value {
 public:
  enum class Kind : uint8_t { None, Bool, Int, Double, String, Tensor, List, Dict };
  using List = std::vector<Value>;
  using Dict = OrderedDict<std::string, Value>;

  Value() = default;
  Value(bool v) : kind_(Kind::Bool), b_(v) {}
  Value(int v) : kind_(Kind::Int), i_(v) {}
  Value(int64_t v) : kind_(Kind::Int), i_(v) {}
  Value(double v) : kind_(Kind::Double), d_(v) {}
  Value(const char* v) : kind_(Kind::String), s_(v) {}
  Value(std::string v) : kind_(Kind::String), s_(std::move(v)) {}
  Value(ember::Tensor v) : kind_(Kind::Tensor), t_(std::move(v)) {}
  Value(List v);
  Value(Dict v);
  Value(const std::vector<int64_t>& v);
  Value(const std::vector<double>& v);
  // A dictionary of tensors (e.g. a state_dict()).
  Value(const OrderedDict<std::string, ember::Tensor>& tensors);

  // Lists and dicts copy deeply (tensors inside stay shared handles, as in Python).
  Value(const Value& other);
  Value& operator=(const Value& other);
  Value(Value&&) noexcept = default;
  Value& operator=(Value&&) noexcept = default;
  ~Value();

  static Value dict() { return Value(Dict()); }
  static Value list() { return Value(List()); }

  Kind kind() const { return kind_; }
  const char* kind_name() const;
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_double() const { return kind_ == Kind::Double; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_dict() const { return kind_ == Kind::Dict; }

  // Typed access; a wrong kind throws ember::Error naming both kinds.
  bool to_bool() const;
  int64_t to_int() const;
  double to_double() const;  // ints convert
  const std::string& to_string() const;
  const ember::Tensor& to_tensor() const;
  const List& to_list() const;
  List& to_list();
  const Dict& to_dict() const;
  Dict& to_dict();
  std::vector<int64_t> to_int_list() const;
  std::vector<double> to_double_list() const;
  // A dictionary whose values are all tensors, as a state_dict.
  OrderedDict<std::string, ember::Tensor> to_tensor_dict() const;

  // Dictionary access: operator[] inserts None for a new key (the Value must be a Dict).
  Value& operator[](const std::string& key);
  const Value& at(const std::string& key) const;
  bool contains(const std::string& key) const;
  // List access.
  void push_back(Value v);
  size_t size() const;  // elements of a list or dict

  // Structural equality; tensors compare by dtype, sizes and values (bitwise).
  bool operator==(const Value& other) const;
  bool operator!=(const Value& other) const { return !(*this == other); }

 private:
  Kind kind_ = Kind::None;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
  ember::Tensor t_;
  std::unique_ptr<List> list_;
  std::unique_ptr<Dict> dict_;
};

}  // namespace ember
