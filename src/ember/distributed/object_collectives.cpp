// Object collectives and the Value byte encoding (object_collectives.h).
//
// Encoding: one kind byte, then the payload: bool as one byte, int64/double as 8 bytes,
// strings as a u64 length and the bytes, tensors as dtype byte, ndim byte, i64 sizes and
// the contiguous data, lists as a u64 count and the items, dicts as a u64 count and
// (key string, value) pairs. Every rank runs the same build on the same kind of machine
// (little-endian), as for the collectives' fingerprints.

#include "ember/distributed/object_collectives.h"

#include <cstring>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/distributed/distributed.h"
#include "ember/ops/creation.h"

namespace ember::distributed {

namespace detail {
namespace {

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.append(s);
}

void encode(std::string& out, const Value& v) {
  put<uint8_t>(out, static_cast<uint8_t>(v.kind()));
  switch (v.kind()) {
    case Value::Kind::None:
      break;
    case Value::Kind::Bool:
      put<uint8_t>(out, v.to_bool() ? 1 : 0);
      break;
    case Value::Kind::Int:
      put<int64_t>(out, v.to_int());
      break;
    case Value::Kind::Double:
      put<double>(out, v.to_double());
      break;
    case Value::Kind::String:
      put_string(out, v.to_string());
      break;
    case Value::Kind::Tensor: {
      NoGradGuard ng;
      const Tensor t = v.to_tensor().detach().contiguous();
      put<int8_t>(out, static_cast<int8_t>(t.dtype()));
      put<uint8_t>(out, static_cast<uint8_t>(t.dim()));
      for (int64_t d = 0; d < t.dim(); ++d) put<int64_t>(out, t.size(d));
      if (t.nbytes() > 0) out.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
      break;
    }
    case Value::Kind::List:
      put<uint64_t>(out, v.size());
      for (const Value& item : v.to_list()) encode(out, item);
      break;
    case Value::Kind::Dict:
      put<uint64_t>(out, v.size());
      for (const auto& item : v.to_dict()) {
        put_string(out, item.key());
        encode(out, item.value());
      }
      break;
  }
}

class Reader {
 public:
  Reader(const std::string& s, const char* op) : s_(s), op_(op) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, s_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string get_string() {
    const uint64_t n = get<uint64_t>();
    need(n);
    std::string r = s_.substr(pos_, n);
    pos_ += n;
    return r;
  }
  void read(void* dst, size_t n) {
    need(n);
    if (n) std::memcpy(dst, s_.data() + pos_, n);
    pos_ += n;
  }
  bool done() const { return pos_ == s_.size(); }
  [[noreturn]] void bad(const std::string& why) const {
    EMBER_ERROR("[", op_, "] received a malformed object (", why, " at byte ", pos_, " of ", s_.size(),
                "); every rank must run the same ember build");
  }

 private:
  void need(uint64_t n) const {
    if (n > s_.size() - pos_) bad("truncated");
  }
  const std::string& s_;
  const char* op_;
  size_t pos_ = 0;
};

Value decode(Reader& r, int depth) {
  if (depth > 200) r.bad("nested too deeply");
  const auto kind = static_cast<Value::Kind>(r.get<uint8_t>());
  switch (kind) {
    case Value::Kind::None:
      return Value();
    case Value::Kind::Bool:
      return Value(r.get<uint8_t>() != 0);
    case Value::Kind::Int:
      return Value(r.get<int64_t>());
    case Value::Kind::Double:
      return Value(r.get<double>());
    case Value::Kind::String:
      return Value(r.get_string());
    case Value::Kind::Tensor: {
      const auto dtype = static_cast<DType>(r.get<int8_t>());
      const int ndim = r.get<uint8_t>();
      std::vector<int64_t> sizes;
      int64_t numel = 1;
      for (int d = 0; d < ndim; ++d) {
        sizes.push_back(r.get<int64_t>());
        if (sizes.back() < 0 || (sizes.back() > 0 && numel > (int64_t{1} << 40) / sizes.back())) r.bad("bad sizes");
        numel *= sizes.back();
      }
      Tensor t = empty(sizes, TensorOptions(dtype));
      r.read(t.data_ptr(), t.nbytes());
      return Value(std::move(t));
    }
    case Value::Kind::List: {
      const uint64_t n = r.get<uint64_t>();
      Value out = Value::list();
      for (uint64_t i = 0; i < n; ++i) out.push_back(decode(r, depth + 1));
      return out;
    }
    case Value::Kind::Dict: {
      const uint64_t n = r.get<uint64_t>();
      Value out = Value::dict();
      for (uint64_t i = 0; i < n; ++i) {
        std::string key = r.get_string();
        out[key] = decode(r, depth + 1);
      }
      return out;
    }
  }
  r.bad("unknown kind " + std::to_string(static_cast<int>(kind)));
}

}  // namespace

std::string encode_value(const Value& v) {
  std::string out;
  encode(out, v);
  return out;
}

Value decode_value(const std::string& bytes, const char* op) {
  Reader r(bytes, op);
  Value v = decode(r, 0);
  if (!r.done()) r.bad("trailing bytes");
  return v;
}

}  // namespace detail

namespace {

Tensor bytes_tensor(const std::string& s, int64_t padded) {
  Tensor t = zeros({padded}, TensorOptions(kUInt8));
  if (!s.empty()) std::memcpy(t.data_ptr(), s.data(), s.size());
  return t;
}

std::string tensor_bytes(const Tensor& t, int64_t n) {
  return std::string(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(n));
}

// Every rank's byte count, in group rank order.
std::vector<int64_t> all_sizes(int64_t mine, const ProcessGroupPtr& group) {
  const int world = get_world_size(group);
  Tensor in = tensor(std::vector<int64_t>{mine});
  Tensor out = empty({world}, TensorOptions(kInt64));
  all_gather_into_tensor(out, in, group);
  return out.to_vector<int64_t>();
}

}  // namespace

void all_gather_object(std::vector<Value>& object_list, const Value& obj, const ProcessGroupPtr& group) {
  const std::string bytes = detail::encode_value(obj);
  const std::vector<int64_t> sizes = all_sizes(static_cast<int64_t>(bytes.size()), group);
  int64_t longest = 1;
  for (int64_t s : sizes) longest = std::max(longest, s);
  Tensor out = empty({static_cast<int64_t>(sizes.size()) * longest}, TensorOptions(kUInt8));
  all_gather_into_tensor(out, bytes_tensor(bytes, longest), group);
  object_list.clear();
  for (size_t r = 0; r < sizes.size(); ++r) {
    const Tensor part = out.narrow(0, static_cast<int64_t>(r) * longest, longest);
    object_list.push_back(detail::decode_value(tensor_bytes(part, sizes[r]), "all_gather_object"));
  }
}

void gather_object(const Value& obj, std::vector<Value>* object_gather_list, int dst, const ProcessGroupPtr& group) {
  const ProcessGroupPtr& g = group ? group : default_group();
  const bool is_dst = g->global_rank(g->rank()) == dst;
  EMBER_CHECK(!is_dst || object_gather_list != nullptr,
              "[gather_object] object_gather_list must be given on dst (rank ", dst, ")");
  const std::string bytes = detail::encode_value(obj);
  const std::vector<int64_t> sizes = all_sizes(static_cast<int64_t>(bytes.size()), g);
  int64_t longest = 1;
  for (int64_t s : sizes) longest = std::max(longest, s);
  std::vector<Tensor> parts;
  if (is_dst) {
    for (size_t r = 0; r < sizes.size(); ++r) parts.push_back(empty({longest}, TensorOptions(kUInt8)));
  }
  gather(bytes_tensor(bytes, longest), parts, dst, g);
  if (!is_dst) return;
  object_gather_list->clear();
  for (size_t r = 0; r < sizes.size(); ++r)
    object_gather_list->push_back(detail::decode_value(tensor_bytes(parts[r], sizes[r]), "gather_object"));
}

void broadcast_object_list(std::vector<Value>& object_list, int src, const ProcessGroupPtr& group) {
  const ProcessGroupPtr& g = group ? group : default_group();
  const bool is_src = g->global_rank(g->rank()) == src;
  std::string bytes;
  if (is_src) bytes = detail::encode_value(Value(Value::List(object_list.begin(), object_list.end())));
  Tensor n = tensor(std::vector<int64_t>{static_cast<int64_t>(bytes.size()), static_cast<int64_t>(object_list.size())});
  broadcast(n, src, g);
  const auto header = n.to_vector<int64_t>();
  Tensor data = is_src ? bytes_tensor(bytes, std::max<int64_t>(header[0], 1))
                       : empty({std::max<int64_t>(header[0], 1)}, TensorOptions(kUInt8));
  broadcast(data, src, g);  // before any check below, so that no rank is left waiting
  if (is_src) return;
  EMBER_CHECK(static_cast<int64_t>(object_list.size()) == header[1], "[broadcast_object_list] object_list has ",
              object_list.size(), " entries on rank ", g->global_rank(g->rank()), " but ", header[1], " on src rank ",
              src, "; pass a list of the same length on every rank");
  Value all = detail::decode_value(tensor_bytes(data, header[0]), "broadcast_object_list");
  object_list = all.to_list();
}

}  // namespace ember::distributed
