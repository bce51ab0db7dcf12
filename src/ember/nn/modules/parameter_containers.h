#pragma once
// ParameterDict and ParameterList (libtorch's names): modules that only hold parameters,
// by key or by position, registered under those keys ("0", "1", ... for the list), so
// that parameters(), named_parameters(), state_dict() and optimizers see them.
//
//   nn::ParameterDict dict;
//   dict->insert("scale", ember::ones({4}, ember::requires_grad()));
//   nn::ParameterList list(ember::randn({2, 3}), ember::zeros({3}));

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

class ParameterDictImpl : public Cloneable<ParameterDictImpl> {
 public:
  ParameterDictImpl() : Cloneable("ParameterDict") {}
  explicit ParameterDictImpl(const OrderedDict<std::string, Tensor>& params);
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;

  // Registers param under key (keeping its requires_grad) and returns the registered tensor.
  Tensor& insert(const std::string& key, const Tensor& param);
  // Removes key and returns its tensor ("Parameter 'key' is not defined" when absent).
  Tensor pop(const std::string& key);
  std::vector<std::string> keys() const { return parameters_dict().keys(); }
  std::vector<Tensor> values() const { return parameters_dict().values(); }
  size_t size() const noexcept { return parameters_dict().size(); }
  bool empty() const noexcept { return parameters_dict().is_empty(); }
  void clear() { parameters_dict().clear(); }
  bool contains(const std::string& key) const { return parameters_dict().contains(key); }
  // Inserts every entry of other, replacing those with the same key.
  void update(const ParameterDictImpl& other);
  Tensor& get(const std::string& key) { return parameters_dict()[key]; }
  const Tensor& get(const std::string& key) const { return parameters_dict()[key]; }
  Tensor& operator[](const std::string& key) { return get(key); }
  const Tensor& operator[](const std::string& key) const { return get(key); }
  auto begin() { return parameters_dict().begin(); }
  auto end() { return parameters_dict().end(); }
  auto begin() const { return parameters_dict().begin(); }
  auto end() const { return parameters_dict().end(); }
};
EMBER_MODULE(ParameterDict);

class ParameterListImpl : public Cloneable<ParameterListImpl> {
 public:
  ParameterListImpl() : Cloneable("ParameterList") {}
  template <typename... Tensors>
  explicit ParameterListImpl(const Tensors&... params) : Cloneable("ParameterList") {
    (append(params), ...);
  }
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;

  // Registers param as the next entry (keeping its requires_grad).
  void append(const Tensor& param);
  void append(const OrderedDict<std::string, Tensor>::Item& item) { append(item.value()); }
  template <typename Container>
  void extend(const Container& container) {
    for (const auto& param : container) append(param);
  }
  template <typename Container>
  ParameterListImpl& operator+=(const Container& other) {
    extend(other);
    return *this;
  }
  // The idx-th parameter ("Index out of range" past the end).
  Tensor& at(size_t idx);
  const Tensor& at(size_t idx) const;
  Tensor& operator[](size_t idx) { return at(idx); }
  const Tensor& operator[](size_t idx) const { return at(idx); }
  size_t size() const noexcept { return parameters_dict().size(); }
  bool is_empty() const noexcept { return parameters_dict().is_empty(); }
  auto begin() { return parameters_dict().begin(); }
  auto end() { return parameters_dict().end(); }
  auto begin() const { return parameters_dict().begin(); }
  auto end() const { return parameters_dict().end(); }
};
EMBER_MODULE(ParameterList);

}  // namespace ember::nn
