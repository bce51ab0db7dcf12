#pragma once
// An insertion-ordered map with string-like keys, as libtorch's torch::OrderedDict:
// named_parameters(), state_dict() and checkpoint dictionaries keep the order in which
// entries were added. Lookup is by a hash index; iteration yields Item{key(), value()}.

#include <cstddef>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/core/check.h"

namespace ember {

template <typename Key, typename Value>
class OrderedDict {
 public:
  class Item {
   public:
    Item(Key key, Value value) : kv_(std::move(key), std::move(value)) {}
    const Key& key() const { return kv_.first; }
    Value& value() { return kv_.second; }
    const Value& value() const { return kv_.second; }
    Value& operator*() { return kv_.second; }
    const Value& operator*() const { return kv_.second; }
    Value* operator->() { return &kv_.second; }
    const Value* operator->() const { return &kv_.second; }
    const std::pair<Key, Value>& pair() const { return kv_; }

   private:
    std::pair<Key, Value> kv_;
  };

  OrderedDict() = default;
  // key_description names the keys in error messages ("Parameter 'w' is not defined").
  explicit OrderedDict(std::string key_description) : key_description_(std::move(key_description)) {}
  const std::string& key_description() const { return key_description_; }
  OrderedDict(std::initializer_list<Item> items) {
    for (const Item& it : items) insert(it.key(), it.value());
  }

  // Adds a new entry; a key that exists already is an error (use operator[] or
  // insert_or_assign to overwrite).
  Value& insert(const Key& key, Value value) {
    EMBER_CHECK(index_.count(key) == 0, "[OrderedDict] ", key_description_, " '", key, "' already defined");
    index_.emplace(key, items_.size());
    items_.emplace_back(key, std::move(value));
    return items_.back().value();
  }
  Value& insert_or_assign(const Key& key, Value value) {
    if (auto it = index_.find(key); it != index_.end()) return items_[it->second].value() = std::move(value);
    return insert(key, std::move(value));
  }
  // The value for key; throws ember::Error naming the key when absent.
  Value& operator[](const Key& key) {
    auto it = index_.find(key);
    EMBER_CHECK(it != index_.end(), "[OrderedDict] ", key_description_, " '", key, "' is not defined");
    return items_[it->second].value();
  }
  const Value& operator[](const Key& key) const {
    auto it = index_.find(key);
    EMBER_CHECK(it != index_.end(), "[OrderedDict] ", key_description_, " '", key, "' is not defined");
    return items_[it->second].value();
  }
  Value* find(const Key& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  const Value* find(const Key& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  bool contains(const Key& key) const { return index_.count(key) > 0; }
  // Removes key (order of the rest is kept); returns whether it was there.
  bool erase(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    const size_t pos = it->second;
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(pos));
    index_.erase(it);
    for (auto& [k, i] : index_) {
      if (i > pos) --i;
    }
    return true;
  }
  void clear() {
    items_.clear();
    index_.clear();
  }

  size_t size() const { return items_.size(); }
  bool is_empty() const { return items_.empty(); }
  bool empty() const { return items_.empty(); }
  Item& operator[](size_t i) { return items_.at(i); }
  const Item& operator[](size_t i) const { return items_.at(i); }
  std::vector<Key> keys() const {
    std::vector<Key> out;
    for (const Item& it : items_) out.push_back(it.key());
    return out;
  }
  std::vector<Value> values() const {
    std::vector<Value> out;
    for (const Item& it : items_) out.push_back(it.value());
    return out;
  }
  const std::vector<Item>& items() const { return items_; }
  Item& front() {
    EMBER_CHECK(!items_.empty(), "[OrderedDict] Called front() on an empty OrderedDict");
    return items_.front();
  }
  const Item& front() const {
    EMBER_CHECK(!items_.empty(), "[OrderedDict] Called front() on an empty OrderedDict");
    return items_.front();
  }
  Item& back() {
    EMBER_CHECK(!items_.empty(), "[OrderedDict] Called back() on an empty OrderedDict");
    return items_.back();
  }
  const Item& back() const {
    EMBER_CHECK(!items_.empty(), "[OrderedDict] Called back() on an empty OrderedDict");
    return items_.back();
  }
  // Inserts every item of other (an error on a key already present).
  void update(const OrderedDict& other) {
    for (const Item& it : other.items_) insert(it.key(), it.value());
  }

  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
  std::unordered_map<Key, size_t> index_;
  std::string key_description_ = "Key";
};

}  // namespace ember
