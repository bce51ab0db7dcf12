// Reading checkpoints: every number in the file is checked before it is used, so a
// damaged or hostile file is refused with an error and never read out of bounds, and
// no allocation exceeds the file's own size.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <system_error>
#include <unordered_map>

#include "ember/core/check.h"
#include "ember/ops/creation.h"
#include "ember/serialize/checkpoint.h"
#include "ember/serialize/checkpoint_format.h"
#include "ember/serialize/json.h"

namespace ember::serialize_format {

namespace {

using json::Json;

struct DTypeCode {
  DType dtype;
  const char* code;
};
constexpr DTypeCode kDTypeCodes[] = {
    {kFloat64, "F64"}, {kFloat32, "F32"}, {kFloat16, "F16"}, {kBFloat16, "BF16"}, {kInt64, "I64"},
    {kInt32, "I32"},   {kInt16, "I16"},   {kInt8, "I8"},     {kUInt8, "U8"},      {kBool, "BOOL"},
};
static_assert(std::size(kDTypeCodes) == kNumDTypes, "every ember dtype needs a safetensors code");

// The error prefix for this file.
std::string where(const std::string& path) { return "[load] checkpoint '" + path + "'"; }

template <typename... Args>
[[noreturn]] void invalid_header(const std::string& path, const Args&... args) {
  detail::throw_error(where(path), " has an invalid header: ", args...);
}

template <typename... Args>
[[noreturn]] void corrupted(const std::string& path, const Args&... args) {
  detail::throw_error(where(path), " is corrupted: ", args...);
}

class InputFile {
 public:
  explicit InputFile(const std::string& path) : path_(path) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever;
    // it is refused below as not a regular file. Reads of regular files never block.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) {
      const int err = errno;
      EMBER_ERROR("[load] cannot open checkpoint '", path, "': ", std::system_category().message(err));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      ::close(fd_);
      EMBER_ERROR("[load] cannot read checkpoint '", path, "': ", std::system_category().message(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      EMBER_ERROR("[load] checkpoint '", path, "' is not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }

  void read_at(uint64_t offset, void* dst, uint64_t n) {
    char* p = static_cast<char*>(dst);
    while (n > 0) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(n, 1u << 30));
      const ssize_t k = ::pread(fd_, p, want, static_cast<off_t>(offset));
      if (k < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        EMBER_ERROR("[load] reading checkpoint '", path_, "' failed: ", std::system_category().message(err));
      }
      if (k == 0) EMBER_ERROR(where(path_), " is truncated: it became shorter while being read");
      p += k;
      n -= static_cast<uint64_t>(k);
      offset += static_cast<uint64_t>(k);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

struct Entry {
  std::string name;
  DType dtype = kFloat32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Entry parse_entry(const std::string& path, const std::string& name, const Json& info) {
  if (info.type != Json::Type::Object) {
    invalid_header(path, "tensor '", name, "' must map to an object with dtype, shape and data_offsets, found ",
                   info.type_name());
  }
  Entry e;
  e.name = name;
  const Json* dtype = info.find("dtype");
  const Json* shape = info.find("shape");
  const Json* offsets = info.find("data_offsets");
  if (!dtype || !shape || !offsets) invalid_header(path, "tensor '", name, "' lacks dtype, shape or data_offsets");
  if (dtype->type != Json::Type::String) invalid_header(path, "tensor '", name, "' has a dtype that is not a string");
  const std::optional<DType> dt = dtype_from_code(dtype->s);
  if (!dt) {
    invalid_header(path, "tensor '", name, "' has dtype '", dtype->s,
                   "', which ember does not support (supported: ", supported_codes(), ")");
  }
  e.dtype = *dt;
  if (shape->type != Json::Type::Array || static_cast<int64_t>(shape->array.size()) > kMaxDims) {
    invalid_header(path, "tensor '", name, "' has a shape that is not a list of at most ", kMaxDims, " sizes");
  }
  // numel * element size must fit in int64 (and so in the file); check before multiplying.
  const int64_t limit = std::numeric_limits<int64_t>::max() / static_cast<int64_t>(element_size(e.dtype));
  int64_t numel = 1;
  for (const Json& d : shape->array) {
    if (d.type != Json::Type::Int || d.i < 0) {
      invalid_header(path, "tensor '", name, "' has a shape entry that is not a non-negative integer");
    }
    e.shape.push_back(d.i);
  }
  for (int64_t d : e.shape) {
    if (d == 0) {
      numel = 0;
      break;
    }
    if (numel > limit / d) invalid_header(path, "tensor '", name, "' has shape ", shape_str(e.shape), ", too large");
    numel *= d;
  }
  if (offsets->type != Json::Type::Array || offsets->array.size() != 2 || offsets->array[0].type != Json::Type::Int ||
      offsets->array[1].type != Json::Type::Int || offsets->array[0].i < 0 ||
      offsets->array[1].i < offsets->array[0].i) {
    invalid_header(path, "tensor '", name, "' needs data_offsets [begin, end] with 0 <= begin <= end");
  }
  e.begin = static_cast<uint64_t>(offsets->array[0].i);
  e.end = static_cast<uint64_t>(offsets->array[1].i);
  const uint64_t nbytes = static_cast<uint64_t>(numel) * element_size(e.dtype);
  if (e.end - e.begin != nbytes) {
    invalid_header(path, "tensor '", name, "' has shape ", shape_str(e.shape), " and dtype ", dtype->s, " (", nbytes,
                   " bytes) but data_offsets [", e.begin, ", ", e.end, "] span ", e.end - e.begin, " bytes");
  }
  return e;
}

// Orders entries by offset and checks that they tile [0, payload) with no gap or overlap
// (safetensors forbids holes, which would let a file hide other content). Returns the payload size.
uint64_t check_layout(const std::string& path, std::vector<Entry>& entries) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < expected) {
      invalid_header(path, "the data of tensors '", prev->name, "' [", prev->begin, ", ", prev->end, ") and '", e.name,
                     "' [", e.begin, ", ", e.end, ") overlap");
    }
    if (e.begin > expected) {
      invalid_header(path, "bytes [", expected, ", ", e.begin, ") of the data belong to no tensor (data_offsets of '",
                     e.name, "' leave a gap)");
    }
    expected = e.end;
    prev = &e;
  }
  return expected;
}

int parse_format_version(const std::string& path, const Json* v) {
  if (!v) invalid_header(path, "ember metadata without ember.format_version");
  const std::string& s = v->s;
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) {
    invalid_header(path, "ember.format_version '", s, "' is not a version number");
  }
  return std::stoi(s);
}

// Decodes the JSON tree of Note [Checkpoint layout] back into a Value.
class Decoder {
 public:
  Decoder(const std::string& path, std::vector<Entry>& entries, std::vector<Tensor>& tensors)
      : path_(path), tensors_(tensors), used_(entries.size(), false) {
    for (size_t i = 0; i < entries.size(); ++i) index_.emplace(entries[i].name, i);
  }

  Value decode(const Json& j) {
    switch (j.type) {
      case Json::Type::Null: return Value();
      case Json::Type::Bool: return Value(j.b);
      case Json::Type::Int: return Value(j.i);
      case Json::Type::Double: return Value(j.d);
      case Json::Type::String: return Value(j.s);
      case Json::Type::Array: {
        Value::List list;
        list.reserve(j.array.size());
        for (const Json& item : j.array) list.push_back(decode(item));
        return Value(std::move(list));
      }
      case Json::Type::Object: break;
    }
    if (j.object.size() != 1) bad("an object with ", j.object.size(), " members (expected one tag)");
    const auto& [tag, body] = j.object[0];
    if (tag == "dict" && body.type == Json::Type::Object) {
      Value::Dict dict;
      for (const auto& [key, item] : body.object) dict.insert(key, decode(item));
      return Value(std::move(dict));
    }
    if (tag == "tensor" && body.type == Json::Type::String) {
      auto it = index_.find(body.s);
      if (it == index_.end()) bad("a reference to tensor '", body.s, "', which the file does not hold");
      if (used_[it->second]) bad("a second reference to tensor '", body.s, "'");
      used_[it->second] = true;
      return Value(tensors_[it->second]);
    }
    if (tag == "float" && body.type == Json::Type::String) {
      if (body.s == "nan") return Value(std::numeric_limits<double>::quiet_NaN());
      if (body.s == "inf") return Value(std::numeric_limits<double>::infinity());
      if (body.s == "-inf") return Value(-std::numeric_limits<double>::infinity());
    }
    bad("an unknown tagged value '", tag, "'");
  }

  void check_all_used(const std::vector<Entry>& entries) const {
    for (size_t i = 0; i < entries.size(); ++i) {
      if (!used_[i]) bad("no reference to tensor '", entries[i].name, "'");
    }
  }

 private:
  template <typename... Args>
  [[noreturn]] void bad(const Args&... args) const {
    invalid_header(path_, "ember.value holds ", args...);
  }

  const std::string& path_;
  std::vector<Tensor>& tensors_;
  std::vector<bool> used_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace

const char* dtype_code(DType t) {
  for (const DTypeCode& c : kDTypeCodes) {
    if (c.dtype == t) return c.code;
  }
  EMBER_ERROR("[save] dtype ", t, " has no safetensors code");
}

std::optional<DType> dtype_from_code(std::string_view code) {
  for (const DTypeCode& c : kDTypeCodes) {
    if (code == c.code) return c.dtype;
  }
  return std::nullopt;
}

std::string supported_codes() {
  std::string s;
  for (const DTypeCode& c : kDTypeCodes) {
    if (!s.empty()) s += ' ';
    s += c.code;
  }
  return s;
}

Value read_checkpoint(const std::string& path) {
  InputFile file(path);
  const uint64_t size = file.size();
  if (size < 8) {
    EMBER_ERROR(where(path), " is not a safetensors file: it has ", size,
                " bytes, fewer than the 8-byte header length field (truncated or empty)");
  }
  uint8_t len_bytes[8];
  file.read_at(0, len_bytes, 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  if (n > size - 8) {
    corrupted(path, "its header length field says ", n, " bytes but only ", size - 8,
              " bytes follow it (truncated, or not a safetensors file)");
  }
  if (n > kMaxHeaderBytes) {
    corrupted(path, "its header length ", n, " exceeds the safetensors limit of ", kMaxHeaderBytes, " bytes");
  }
  std::string header(static_cast<size_t>(n), '\0');
  file.read_at(8, header.data(), n);
  if (header.empty() || header[0] != '{') invalid_header(path, "it does not start with '{' (not a safetensors file)");

  // Note [Load memory bound]: the header and the ember.value tree share one budget of values.
  const uint64_t value_budget = max_json_values(size);
  const auto too_many = [&](const json::ParseError& e) {
    return std::string(e.what()).rfind("more than ", 0) == 0
               ? std::string(" (a file of ") + std::to_string(size) + " bytes holds at most " +
                     std::to_string(value_budget) + " JSON values, so that loading it stays within ~4x its size)"
               : std::string();
  };
  Json root;
  uint64_t header_values = 0;
  try {
    root = json::parse(header, kMaxJsonDepth, std::min(kMaxJsonValues, value_budget), &header_values);
  } catch (const json::ParseError& e) {
    invalid_header(path, "invalid JSON: ", e.what(), too_many(e));
  }

  // __metadata__: a string -> string map, optional.
  const Json* meta = root.find("__metadata__");
  bool is_ember = false;
  if (meta) {
    if (meta->type != Json::Type::Object) invalid_header(path, "__metadata__ must be an object of strings");
    for (const auto& [k, v] : meta->object) {
      if (v.type != Json::Type::String) invalid_header(path, "__metadata__ entry '", k, "' is not a string");
      if (k.rfind("ember.", 0) == 0 || (k == "format" && v.s == kFormatName)) is_ember = true;
    }
  }
  if (is_ember) {
    const int version = parse_format_version(path, meta->find("ember.format_version"));
    if (version > kCheckpointFormatVersion) {
      EMBER_ERROR(where(path), " was written by a newer ember (format ", version, "); this build reads format ",
                  kCheckpointFormatVersion, ": upgrade ember");
    }
    if (version < 1) invalid_header(path, "ember.format_version ", version, " does not exist");
  }

  std::vector<Entry> entries;
  entries.reserve(root.object.size());
  for (const auto& [name, info] : root.object) {
    if (name != "__metadata__") entries.push_back(parse_entry(path, name, info));
  }
  // Keep header order for the result; read in file order.
  std::vector<Entry> by_offset = entries;
  const uint64_t payload = check_layout(path, by_offset);
  const uint64_t expected_size = 8 + n + payload;
  if (size < expected_size) {
    EMBER_ERROR(where(path), " is truncated: expected ", expected_size, " bytes, found ", size);
  }
  if (size > expected_size) {
    corrupted(path, size - expected_size, " bytes follow the last tensor's data (expected ", expected_size,
              " bytes, found ", size, "); a safetensors byte buffer must be fully indexed");
  }

  // The checksum: stored digits, and the header with the digits read as '0'.
  uint32_t crc = 0;
  std::string stored;
  if (is_ember) {
    const size_t pos = header.find(kChecksumField);
    const size_t digits = pos + kChecksumField.size();
    const Json* field = meta->find("ember.checksum");
    if (pos == std::string::npos || header.find(kChecksumField, pos + 1) != std::string::npos || !field ||
        digits + 9 > header.size() || header[digits + 8] != '"' || field->s != "crc32:" + header.substr(digits, 8)) {
      corrupted(path, "its ember.checksum entry is missing or malformed");
    }
    stored = header.substr(digits, 8);
    // The checksum covers the header with its digits read as '0' (no copy of the header).
    const auto* h = reinterpret_cast<const Bytef*>(header.data());
    crc = static_cast<uint32_t>(crc32(0, h, static_cast<uInt>(digits)));
    crc = static_cast<uint32_t>(crc32(crc, reinterpret_cast<const Bytef*>("00000000"), 8));
    crc = static_cast<uint32_t>(crc32(crc, h + digits + 8, static_cast<uInt>(n - digits - 8)));
  }

  // Read each tensor straight into its own storage; the sizes were checked against the file above.
  std::unordered_map<std::string, Tensor> loaded;
  for (const Entry& e : by_offset) {
    Tensor t = empty(e.shape, TensorOptions(e.dtype));
    if (e.end > e.begin) {
      char* dst = static_cast<char*>(t.data_ptr());
      for (uint64_t done = 0, total = e.end - e.begin; done < total;) {
        const uint64_t chunk = std::min<uint64_t>(total - done, kWriteChunkBytes);
        file.read_at(8 + n + e.begin + done, dst + done, chunk);
        if (is_ember) {
          crc = static_cast<uint32_t>(crc32(crc, reinterpret_cast<const Bytef*>(dst + done), static_cast<uInt>(chunk)));
        }
        done += chunk;
      }
    }
    loaded.emplace(e.name, std::move(t));
  }
  if (is_ember) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string computed(8, '0');
    for (int i = 7, v = 0; i >= 0; --i, ++v) computed[static_cast<size_t>(i)] = kHex[(crc >> (4 * v)) & 0xF];
    if (computed != stored) {
      corrupted(path, "checksum mismatch (stored crc32:", stored, ", computed crc32:", computed,
                "); the file was damaged after it was written");
    }
  }
  // A bool byte other than 0 or 1 would be undefined behaviour for every kernel that reads it.
  for (const Entry& e : entries) {
    if (e.dtype != kBool) continue;
    const Tensor& t = loaded.at(e.name);
    const auto* p = static_cast<const uint8_t*>(t.data_ptr());
    for (uint64_t i = 0; i < e.end - e.begin; ++i) {
      if (p[i] > 1) corrupted(path, "BOOL tensor '", e.name, "' holds byte ", int(p[i]), " at element ", i);
    }
  }

  std::vector<Tensor> tensors;
  tensors.reserve(entries.size());
  for (const Entry& e : entries) tensors.push_back(loaded.at(e.name));
  if (!is_ember) {
    Value::Dict dict;
    for (size_t i = 0; i < entries.size(); ++i) dict.insert(entries[i].name, tensors[i]);
    return Value(std::move(dict));
  }
  const Json* tree_text = meta->find("ember.value");
  if (!tree_text) invalid_header(path, "ember metadata without ember.value");
  Json tree;
  try {
    tree = json::parse(tree_text->s, kMaxJsonDepth, std::min(kMaxJsonValues, value_budget - header_values));
  } catch (const json::ParseError& e) {
    invalid_header(path, "ember.value is not valid JSON: ", e.what(), too_many(e));
  }
  Decoder decoder(path, entries, tensors);
  Value value = decoder.decode(tree);
  decoder.check_all_used(entries);
  return value;
}

}  // namespace ember::serialize_format
