#pragma once
// Minimal named-tensor archives (torch::serialize::OutputArchive / InputArchive) and the
// ember::save(obj, stream|file) / ember::load(obj, stream|file) overloads for any object
// with save(OutputArchive&) const / load(InputArchive&) (samplers, stateful data sets).
//
// The format is ember's own: "EMBERARC" then, per entry, the key, an element kind (int64
// or float64), the shape and the values (8 bytes each, little-endian host order). Nested
// archives are flattened with '.'-joined keys. It holds small state (sampler positions,
// permutations); use ember::save(Value) checkpoints for model weights.

#include <cstdint>
#include <cstring>
#include <fstream>
#include <istream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "ember/core/check.h"
#include "ember/core/tensor.h"
#include "ember/ops/creation.h"

namespace ember::serialize {

class InputArchive;

class OutputArchive {
 public:
  OutputArchive() = default;

  // Stores a copy of tensor's values under key (is_buffer is accepted for libtorch
  // compatibility; parameters and buffers are stored alike).
  void write(const std::string& key, const Tensor& tensor, bool is_buffer = false) {
    (void)is_buffer;
    EMBER_CHECK(tensor.defined(), "[OutputArchive] write('", key, "'): the tensor is undefined");
    Entry e;
    e.floating = tensor.is_floating_point();
    for (int64_t d : tensor.sizes()) e.shape.push_back(d);
    const int64_t n = tensor.numel();
    e.values.resize(static_cast<size_t>(n));
    if (n > 0) {
      if (e.floating) {
        Tensor c = tensor.to(kFloat64).contiguous();
        std::memcpy(e.values.data(), c.data_ptr<double>(), static_cast<size_t>(n) * 8);
      } else {
        Tensor c = tensor.to(kInt64).contiguous();
        std::memcpy(e.values.data(), c.data_ptr<int64_t>(), static_cast<size_t>(n) * 8);
      }
    }
    entries_[key] = std::move(e);
  }
  // Stores every entry of nested under "key.".
  void write(const std::string& key, const OutputArchive& nested) {
    for (const auto& [k, e] : nested.entries_) entries_[key + "." + k] = e;
  }

  void save_to(std::ostream& stream) const {
    stream.write("EMBERARC", 8);
    put(stream, static_cast<uint64_t>(entries_.size()));
    for (const auto& [key, e] : entries_) {
      put(stream, static_cast<uint64_t>(key.size()));
      stream.write(key.data(), static_cast<std::streamsize>(key.size()));
      put(stream, static_cast<uint64_t>(e.floating ? 1 : 0));
      put(stream, static_cast<uint64_t>(e.shape.size()));
      for (int64_t d : e.shape) put(stream, static_cast<uint64_t>(d));
      stream.write(reinterpret_cast<const char*>(e.values.data()), static_cast<std::streamsize>(e.values.size() * 8));
    }
    EMBER_CHECK(stream.good(), "[OutputArchive] writing the archive to the stream failed");
  }
  void save_to(const std::string& filename) const {
    std::ofstream f(filename, std::ios::binary | std::ios::trunc);
    EMBER_CHECK(f.is_open(), "[OutputArchive] cannot open '", filename, "' for writing");
    save_to(f);
  }

 private:
  friend class InputArchive;
  struct Entry {
    bool floating = false;
    std::vector<int64_t> shape;
    std::vector<uint64_t> values;  // raw 8-byte int64 or double
  };
  static void put(std::ostream& s, uint64_t v) { s.write(reinterpret_cast<const char*>(&v), 8); }
  std::map<std::string, Entry> entries_;
};

class InputArchive {
 public:
  InputArchive() = default;

  void load_from(std::istream& stream) {
    char magic[8] = {};
    stream.read(magic, 8);
    EMBER_CHECK(stream.good() && std::memcmp(magic, "EMBERARC", 8) == 0,
                "[InputArchive] the stream does not hold an ember archive (written by OutputArchive::save_to)");
    entries_.clear();
    const uint64_t count = get(stream);
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t key_size = get(stream);
      EMBER_CHECK(key_size < (1u << 20), "[InputArchive] corrupt archive (key length ", key_size, ")");
      std::string key(key_size, '\0');
      stream.read(key.data(), static_cast<std::streamsize>(key_size));
      OutputArchive::Entry e;
      e.floating = get(stream) != 0;
      const uint64_t ndim = get(stream);
      EMBER_CHECK(ndim < 64, "[InputArchive] corrupt archive (", ndim, " dimensions)");
      uint64_t n = 1;
      for (uint64_t d = 0; d < ndim; ++d) {
        e.shape.push_back(static_cast<int64_t>(get(stream)));
        n *= static_cast<uint64_t>(e.shape.back());
      }
      EMBER_CHECK(n < (uint64_t(1) << 34), "[InputArchive] corrupt archive (", n, " values)");
      e.values.resize(n);
      stream.read(reinterpret_cast<char*>(e.values.data()), static_cast<std::streamsize>(n * 8));
      EMBER_CHECK(!stream.fail(), "[InputArchive] the archive is truncated (entry '", key, "')");
      entries_[key] = std::move(e);
    }
  }
  void load_from(const std::string& filename) {
    std::ifstream f(filename, std::ios::binary);
    EMBER_CHECK(f.is_open(), "[InputArchive] cannot open '", filename, "' for reading");
    load_from(f);
  }

  // Reads the tensor stored under key into tensor (int64 or float64, the stored shape).
  void read(const std::string& key, Tensor& tensor, bool is_buffer = false) {
    (void)is_buffer;
    auto it = entries_.find(key);
    EMBER_CHECK(it != entries_.end(), "[InputArchive] no entry '", key, "' in the archive");
    const auto& e = it->second;
    const int64_t n = static_cast<int64_t>(e.values.size());
    Tensor out = ember::empty(IntArrayRef(e.shape), TensorOptions().dtype(e.floating ? kFloat64 : kInt64));
    if (n > 0) std::memcpy(out.data_ptr(), e.values.data(), static_cast<size_t>(n) * 8);
    tensor = out;
  }
  // Whether key is in the archive (try_read in libtorch terms).
  bool try_read(const std::string& key, Tensor& tensor, bool is_buffer = false) {
    if (entries_.find(key) == entries_.end()) return false;
    read(key, tensor, is_buffer);
    return true;
  }
  // The entries stored under "key." as an archive of their own.
  void read(const std::string& key, InputArchive& nested) {
    nested.entries_.clear();
    const std::string prefix = key + ".";
    for (const auto& [k, e] : entries_)
      if (k.compare(0, prefix.size(), prefix) == 0) nested.entries_[k.substr(prefix.size())] = e;
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& kv : entries_) out.push_back(kv.first);
    return out;
  }

 private:
  static uint64_t get(std::istream& s) {
    uint64_t v = 0;
    s.read(reinterpret_cast<char*>(&v), 8);
    EMBER_CHECK(!s.fail(), "[InputArchive] the archive is truncated");
    return v;
  }
  std::map<std::string, OutputArchive::Entry> entries_;
};

template <typename T>
concept ArchiveSavable = requires(const T& value, OutputArchive& archive) {
  value.save(archive);
};
template <typename T>
concept ArchiveLoadable = requires(T& value, InputArchive& archive) {
  value.load(archive);
};

}  // namespace ember::serialize

namespace ember {

// save(obj, stream / filename): obj.save(archive), then the archive to the stream or file
// (torch::save for samplers and stateful data sets).
template <serialize::ArchiveSavable T>
void save(const T& value, std::ostream& stream) {
  serialize::OutputArchive archive;
  value.save(archive);
  archive.save_to(stream);
}
template <serialize::ArchiveSavable T>
void save(const T& value, const std::string& filename) {
  serialize::OutputArchive archive;
  value.save(archive);
  archive.save_to(filename);
}
template <serialize::ArchiveLoadable T>
void load(T& value, std::istream& stream) {
  serialize::InputArchive archive;
  archive.load_from(stream);
  value.load(archive);
}
template <serialize::ArchiveLoadable T>
void load(T& value, const std::string& filename) {
  serialize::InputArchive archive;
  archive.load_from(filename);
  value.load(archive);
}

}  // namespace ember
