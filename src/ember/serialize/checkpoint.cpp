#include "ember/serialize/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/ops/creation.h"
#include "ember/serialize/atomic_file.h"
#include "ember/serialize/checkpoint_format.h"
#include "ember/serialize/json.h"

// Note [Checkpoint layout]: a checkpoint is a plain safetensors file. Every tensor of the
// Value is one safetensors tensor named by its path in the tree (dict keys and list
// indices joined by '/', JSON-Pointer escaping '~' -> "~0", '/' -> "~1"); the tree itself,
// with {"tensor": name} where tensors were, is JSON in __metadata__["ember.value"]. The
// checksum covers the header (with its own 8 hex digits read as '0') and the payload.

static_assert(std::endian::native == std::endian::little,
              "checkpoints store little-endian bytes; a big-endian build needs byte swapping here");

namespace ember {

using json::Json;
using namespace serialize_format;

namespace {

std::mutex g_hook_mutex;
detail::SaveProgressHook g_hook;

void report_progress(const char* stage, uint64_t bytes) {
  detail::SaveProgressHook hook;
  {
    std::lock_guard<std::mutex> lock(g_hook_mutex);
    hook = g_hook;
  }
  if (hook) hook(stage, bytes);
}

// One tensor of the payload, in file order.
struct SavedTensor {
  std::string name;
  Tensor tensor;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Escapes one path component so that joining with '/' stays reversible.
std::string escape_component(std::string_view c) {
  std::string out;
  out.reserve(c.size());
  for (char ch : c) {
    if (ch == '~') {
      out += "~0";
    } else if (ch == '/') {
      out += "~1";
    } else {
      out += ch;
    }
  }
  return out;
}

// Encodes a Value as the JSON tree of Note [Checkpoint layout], collecting its tensors.
class Encoder {
 public:
  explicit Encoder(const std::string& path) : path_(path) {}

  void encode(const Value& v, const std::string& where, bool root, int depth, std::string& out) {
    EMBER_CHECK(depth <= kMaxValueDepth, "[save] cannot save '", path_, "': the value nests deeper than ",
                kMaxValueDepth, " levels (at '", where.substr(0, 60), where.size() > 60 ? "...')" : "')");
    // The JSON values load() will parse: tagged kinds ({"dict":...}, {"tensor":...},
    // {"float":"nan"}) cost two, the rest one; counted so that load() accepts whatever save()
    // writes (Note [Load memory bound]).
    const bool tagged = v.is_dict() || v.is_tensor() || (v.is_double() && !std::isfinite(v.to_double()));
    json_values_ += tagged ? 2 : 1;
    EMBER_CHECK(json_values_ <= kMaxJsonValues, "[save] cannot save '", path_, "': the value has more than ",
                kMaxJsonValues, " elements outside tensors; keep large data in tensors");
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool: out += v.to_bool() ? "true" : "false"; return;
      case Value::Kind::Int: json::append_int(out, v.to_int()); return;
      case Value::Kind::Double: {
        const double d = v.to_double();
        if (d != d) {
          out += R"({"float":"nan"})";
        } else if (std::isinf(d)) {
          out += d > 0 ? R"({"float":"inf"})" : R"({"float":"-inf"})";
        } else {
          json::append_double(out, d);
        }
        return;
      }
      case Value::Kind::String:
        check_text(v.to_string(), where);
        json::append_string(out, v.to_string());
        return;
      case Value::Kind::Tensor: {
        std::string name = root ? std::string("tensor") : where;
        if (name == "__metadata__") name = "~__metadata__";
        add_tensor(v.to_tensor(), name);
        out += R"({"tensor":)";
        json::append_string(out, name);
        out += '}';
        return;
      }
      case Value::Kind::List: {
        out += '[';
        const auto& list = v.to_list();
        for (size_t i = 0; i < list.size(); ++i) {
          if (i) out += ',';
          encode(list[i], child(where, root, std::to_string(i)), false, depth + 1, out);
        }
        out += ']';
        return;
      }
      case Value::Kind::Dict: {
        out += R"({"dict":{)";
        bool first = true;
        for (const auto& item : v.to_dict()) {
          check_text(item.key(), where);
          if (!first) out += ',';
          first = false;
          json::append_string(out, item.key());
          out += ':';
          encode(item.value(), child(where, root, escape_component(item.key())), false, depth + 1, out);
        }
        out += "}}";
        return;
      }
    }
  }

  std::vector<SavedTensor>& tensors() { return tensors_; }
  // JSON values the header's tensor entries take (an entry is 6 values plus one per dim).
  uint64_t header_json_values() const { return header_values_; }
  // JSON values the ember.value tree takes (at most; tagged kinds count two).
  uint64_t tree_json_values() const { return json_values_; }

 private:
  static std::string child(const std::string& where, bool root, const std::string& component) {
    return root ? component : where + "/" + component;
  }

  void check_text(const std::string& s, const std::string& where) const {
    EMBER_CHECK(json::is_valid_utf8(s), "[save] cannot save '", path_, "': a string or key at '",
                where.empty() ? "<root>" : where,
                "' is not valid UTF-8; checkpoints store text as UTF-8 (keep raw bytes in a uint8 tensor)");
  }

  void add_tensor(const Tensor& t, const std::string& name) {
    EMBER_CHECK(t.defined(), "[save] cannot save '", path_, "': the tensor at '", name,
                "' is undefined; store None instead");
    EMBER_CHECK(t.is_cpu(), "[save] cannot save '", path_, "': the tensor at '", name, "' is on ", t.device(),
                "; move it to the CPU first");
    EMBER_CHECK(names_.insert(name).second, "[save] internal error: two tensors named '", name, "'");
    EMBER_CHECK(t.dim() <= kMaxDims, "[save] cannot save '", path_, "': the tensor at '", name, "' has ", t.dim(),
                " dimensions, more than the ", kMaxDims, " a checkpoint holds");
    header_values_ += 6 + static_cast<uint64_t>(t.dim());
    SavedTensor s;
    s.name = name;
    s.tensor = t;
    s.begin = offset_;
    s.end = offset_ + t.nbytes();
    offset_ = s.end;
    tensors_.push_back(std::move(s));
  }

  const std::string& path_;
  std::vector<SavedTensor> tensors_;
  std::unordered_set<std::string> names_;
  uint64_t offset_ = 0;
  uint64_t json_values_ = 0;
  uint64_t header_values_ = 16;  // the root object and __metadata__
};

std::string hex32(uint32_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(8, '0');
  for (int i = 7; i >= 0; --i, v >>= 4) s[static_cast<size_t>(i)] = kHex[v & 0xF];
  return s;
}

uint32_t crc_update(uint32_t crc, const void* data, uint64_t n) {
  const Bytef* p = static_cast<const Bytef*>(data);
  uLong c = crc;
  while (n > 0) {
    const uInt chunk = static_cast<uInt>(std::min<uint64_t>(n, 1u << 30));
    c = crc32(c, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(c);
}

void save_impl(const Value& value, const std::string& path) {
  OpScope scope("save");
  NoGradGuard no_grad;
  Encoder enc(path);
  std::string tree;
  enc.encode(value, "", true, 0, tree);
  const std::vector<SavedTensor>& tensors = enc.tensors();
  EMBER_CHECK(enc.header_json_values() <= kMaxJsonValues, "[save] cannot save '", path, "': ", tensors.size(),
              " tensors are more than a checkpoint header holds; group small tensors into larger ones");

  std::string header = "{";
  header += R"("__metadata__":{"format":)";
  json::append_string(header, kFormatName);
  header += R"(,"ember.format_version":)";
  json::append_string(header, std::to_string(kCheckpointFormatVersion));
  header += R"(,"ember.version":)";
  json::append_string(header, kEmberVersion);
  header += R"(,"ember.value":)";
  json::append_string(header, tree);
  header += ',';
  header += kChecksumField;
  const size_t checksum_pos = header.size();
  header += "00000000\"}";
  for (const SavedTensor& s : tensors) {
    header += ',';
    json::append_string(header, s.name);
    header += R"(:{"dtype":")";
    header += dtype_code(s.tensor.dtype());
    header += R"(","shape":[)";
    for (int64_t d = 0; d < s.tensor.dim(); ++d) {
      if (d) header += ',';
      json::append_int(header, s.tensor.size(d));
    }
    header += R"(],"data_offsets":[)";
    json::append_int(header, static_cast<int64_t>(s.begin));
    header += ',';
    json::append_int(header, static_cast<int64_t>(s.end));
    header += "]}";
  }
  header += '}';
  // Pad with spaces so the byte buffer starts 8-byte aligned (the safetensors convention).
  header.append((8 - header.size() % 8) % 8, ' ');
  EMBER_CHECK(header.size() <= kMaxHeaderBytes, "[save] cannot save '", path, "': the header would be ", header.size(),
              " bytes, over the ", kMaxHeaderBytes, "-byte safetensors limit; store large non-tensor data in tensors");

  // Note [Load memory bound]: a file may hold only so many JSON values for its size.
  const uint64_t file_bytes = 8 + header.size() + (tensors.empty() ? 0 : tensors.back().end);
  const uint64_t values = enc.header_json_values() + enc.tree_json_values();
  EMBER_CHECK(values <= max_json_values(file_bytes), "[save] cannot save '", path, "': its header would hold ",
              values, " JSON values, more than a ", file_bytes, "-byte checkpoint may hold (",
              max_json_values(file_bytes), ", so that load() stays within ~4x the file's size); "
              "keep large lists of numbers in tensors");

  uint8_t len_bytes[8];
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<uint8_t>(n >> (8 * i));

  detail::AtomicFile file(path);
  uint32_t crc = crc_update(0, header.data(), header.size());
  file.write(len_bytes, sizeof(len_bytes));
  file.write(header.data(), header.size());
  report_progress("data", file.bytes_written());
  for (const SavedTensor& s : tensors) {
    if (s.end == s.begin) continue;
    const Tensor c = s.tensor.detach().contiguous();
    const char* p = static_cast<const char*>(c.data_ptr());
    for (uint64_t done = 0, total = s.end - s.begin; done < total;) {
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(total - done, kWriteChunkBytes));
      crc = crc_update(crc, p + done, chunk);
      file.write(p + done, chunk);
      done += chunk;
      report_progress("data", file.bytes_written());
    }
  }
  const std::string digits = hex32(crc);
  file.write_at(8 + checksum_pos, digits.data(), digits.size());
  file.sync();
  report_progress("synced", file.bytes_written());
  file.commit();
}

}  // namespace

void save(const Value& value, const std::string& path) { save_impl(value, path); }

void save(const OrderedDict<std::string, Tensor>& tensors, const std::string& path) { save_impl(Value(tensors), path); }

Value load(const std::string& path) {
  OpScope scope("load");
  return serialize_format::read_checkpoint(path);
}

namespace detail {
void set_save_progress_hook(SaveProgressHook hook) {
  std::lock_guard<std::mutex> lock(g_hook_mutex);
  g_hook = std::move(hook);
}
}  // namespace detail

}  // namespace ember
