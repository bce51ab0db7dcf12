#include "ember/data/idx.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/data/transforms.h"
#include "ember/ops/creation.h"

namespace ember::data {

namespace {

// The whole file, decompressed when it is gzip (gzread passes plain files through).
std::vector<uint8_t> read_all(const std::string& path) {
  EMBER_CHECK(std::filesystem::exists(path), "[read_idx] cannot open ", path, ": no such file");
  gzFile f = gzopen(path.c_str(), "rb");
  EMBER_CHECK(f != nullptr, "[read_idx] cannot open ", path, ": ", std::strerror(errno));
  gzbuffer(f, 1 << 20);
  std::vector<uint8_t> out;
  constexpr size_t kChunk = 1 << 22;
  while (true) {
    const size_t old = out.size();
    out.resize(old + kChunk);
    const int got = gzread(f, out.data() + old, static_cast<unsigned>(kChunk));
    if (got < 0) {
      int code = 0;
      std::string msg = gzerror(f, &code);
      gzclose(f);
      EMBER_ERROR("[read_idx] cannot read ", path, ": ", msg, " (corrupt gzip data?)");
    }
    out.resize(old + static_cast<size_t>(got));
    if (got == 0) break;
  }
  gzclose(f);
  return out;
}

struct IdxType {
  DType dtype;
  size_t size;
};

bool idx_type(uint8_t code, IdxType* t) {
  switch (code) {
    case 0x08: *t = {kUInt8, 1}; return true;
    case 0x09: *t = {kInt8, 1}; return true;
    case 0x0B: *t = {kInt16, 2}; return true;
    case 0x0C: *t = {kInt32, 4}; return true;
    case 0x0D: *t = {kFloat32, 4}; return true;
    case 0x0E: *t = {kFloat64, 8}; return true;
    default: return false;
  }
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// A 256-entry table: byte v -> v / 255 (ToTensor), then (x - mean) / std when normalize.
void byte_table(float* lut, const transforms::Normalize* normalize) {
  for (int v = 0; v < 256; ++v) {
    float x = static_cast<float>(v) / 255.0f;
    if (normalize) x = (x - static_cast<float>(normalize->mean()[0])) / static_cast<float>(normalize->std()[0]);
    lut[v] = x;
  }
}

std::string first_existing(const std::string& root, const std::string& stem) {
  const std::string gz = root + "/" + stem + ".gz";
  if (std::filesystem::exists(gz)) return gz;
  if (std::filesystem::exists(root + "/" + stem)) return root + "/" + stem;
  return gz;
}

}  // namespace

Tensor read_idx(const std::string& path) {
  OpScope scope("read_idx");
  const std::vector<uint8_t> bytes = read_all(path);
  EMBER_CHECK(bytes.size() >= 4, "[read_idx] ", path, " is truncated: ", bytes.size(), " bytes, not even an IDX header");
  IdxType type{};
  EMBER_CHECK(bytes[0] == 0 && bytes[1] == 0 && idx_type(bytes[2], &type), "[read_idx] ", path,
              " is not an IDX file: bad magic number 0x", std::hex, be32(bytes.data()),
              " (expected 0x000008dd .. 0x00000edd: two zero bytes, a type code 08/09/0B/0C/0D/0E, the dim count)");
  const size_t ndim = bytes[3];
  const size_t header = 4 + 4 * ndim;
  EMBER_CHECK(bytes.size() >= header, "[read_idx] ", path, " is truncated: the header declares ", ndim,
              " dims but the file has only ", bytes.size(), " bytes");
  std::vector<int64_t> dims;
  size_t count = 1;
  for (size_t d = 0; d < ndim; ++d) {
    dims.push_back(be32(bytes.data() + 4 + 4 * d));
    count *= static_cast<size_t>(dims.back());
  }
  const size_t need = count * type.size;
  const size_t have = bytes.size() - header;
  EMBER_CHECK(have >= need, "[read_idx] ", path, " is truncated: the header declares dims ", IntArrayRef(dims), " (",
              need, " bytes of ", dtype_name(type.dtype), ") but only ", have, " bytes follow");
  EMBER_CHECK(have == need, "[read_idx] ", path, " does not match its header: dims ", IntArrayRef(dims), " need ", need,
              " bytes but ", have, " follow");
  Tensor out = empty(dims, TensorOptions(type.dtype));
  auto* dst = static_cast<uint8_t*>(out.data_ptr());
  const uint8_t* src = bytes.data() + header;
  if (type.size == 1) {
    if (need) std::memcpy(dst, src, need);
  } else {
    for (size_t i = 0; i < count; ++i) {
      for (size_t b = 0; b < type.size; ++b) dst[i * type.size + b] = src[i * type.size + (type.size - 1 - b)];
    }
  }
  return out;
}

void write_idx(const Tensor& t, const std::string& path) {
  OpScope scope("write_idx", {&t});
  uint8_t code = 0;
  switch (t.dtype()) {
    case kUInt8: code = 0x08; break;
    case kInt8: code = 0x09; break;
    case kInt16: code = 0x0B; break;
    case kInt32: code = 0x0C; break;
    case kFloat32: code = 0x0D; break;
    case kFloat64: code = 0x0E; break;
    default: EMBER_ERROR("[write_idx] IDX cannot hold dtype ", t.dtype(), "; convert to uint8/int8/int16/int32/float32/float64");
  }
  EMBER_CHECK(t.dim() <= 255, "[write_idx] too many dims: ", t.dim());
  const Tensor c = t.contiguous();
  std::vector<uint8_t> bytes{0, 0, code, static_cast<uint8_t>(t.dim())};
  for (int64_t d = 0; d < t.dim(); ++d) {
    const auto v = static_cast<uint32_t>(t.size(d));
    for (int s = 24; s >= 0; s -= 8) bytes.push_back(static_cast<uint8_t>(v >> s));
  }
  const size_t esize = t.element_size();
  const auto* src = static_cast<const uint8_t*>(c.data_ptr());
  for (int64_t i = 0; i < c.numel(); ++i) {
    for (size_t b = 0; b < esize; ++b) bytes.push_back(src[static_cast<size_t>(i) * esize + (esize - 1 - b)]);
  }
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    EMBER_CHECK(f != nullptr, "[write_idx] cannot create ", path, ": ", std::strerror(errno));
    const int wrote = gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
    EMBER_CHECK(wrote == static_cast<int>(bytes.size()), "[write_idx] failed writing ", path);
  } else {
    std::ofstream f(path, std::ios::binary);
    EMBER_CHECK(static_cast<bool>(f), "[write_idx] cannot create ", path, ": ", std::strerror(errno));
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    EMBER_CHECK(static_cast<bool>(f), "[write_idx] failed writing ", path);
  }
}

MNIST::MNIST(const std::string& root, bool train) {
  load(root, train, "MNIST", "download the four MNIST IDX .gz files into " + root);
}

MNIST::MNIST(const std::string& root, bool train, const char* name, const std::string& missing_hint) {
  load(root, train, name, missing_hint);
}

void MNIST::load(const std::string& root, bool train, const char* name, const std::string& missing_hint) {
  name_ = name;
  const std::string split = train ? "train" : "t10k";
  const std::string images_path = first_existing(root, split + "-images-idx3-ubyte");
  const std::string labels_path = first_existing(root, split + "-labels-idx1-ubyte");
  for (const std::string& p : {images_path, labels_path}) {
    EMBER_CHECK(std::filesystem::exists(p), "[", name, "] ", p, " not found; ", missing_hint);
  }
  images_ = read_idx(images_path);
  Tensor labels = read_idx(labels_path);
  EMBER_CHECK(images_.dtype() == kUInt8 && images_.dim() == 3, "[", name, "] ", images_path,
              " should hold uint8 images [N, H, W], got ", images_.dtype(), " ", images_.sizes());
  EMBER_CHECK(labels.dtype() == kUInt8 && labels.dim() == 1, "[", name, "] ", labels_path,
              " should hold uint8 labels [N], got ", labels.dtype(), " ", labels.sizes());
  EMBER_CHECK(labels.size(0) == images_.size(0), "[", name, "] ", images_path, " has ", images_.size(0), " images but ",
              labels_path, " has ", labels.size(0), " labels");
  targets_ = labels.to(kInt64);
}

Example MNIST::get(int64_t index) {
  EMBER_CHECK(index >= 0 && index < size(), "[", name_, "] index ", index, " is out of range for a data set of size ", size());
  const int64_t h = images_.size(1), w = images_.size(2);
  Tensor data = empty({1, h, w}, TensorOptions(kFloat32));
  const uint8_t* src = images_.data_ptr<uint8_t>() + index * h * w;
  float* dst = data.data_ptr<float>();
  for (int64_t i = 0; i < h * w; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
  Example ex{data, scalar_tensor(targets_.data_ptr<int64_t>()[index], TensorOptions(kInt64))};
  return apply_transform(std::move(ex));
}

bool MNIST::get_batch(const std::vector<int64_t>& indices, Example& out) {
  const transforms::Normalize* normalize = nullptr;
  if (transform()) {
    normalize = transform().target<transforms::Normalize>();
    if (!normalize || normalize->mean().size() != 1) return false;
  }
  float lut[256];
  byte_table(lut, normalize);
  const int64_t h = images_.size(1), w = images_.size(2), plane = h * w;
  const auto b = static_cast<int64_t>(indices.size());
  out.data = empty({b, 1, h, w}, TensorOptions(kFloat32));
  out.target = empty({b}, TensorOptions(kInt64));
  float* dst = out.data.data_ptr<float>();
  int64_t* tgt = out.target.data_ptr<int64_t>();
  const uint8_t* images = images_.data_ptr<uint8_t>();
  const int64_t* labels = targets_.data_ptr<int64_t>();
  for (int64_t k = 0; k < b; ++k) {
    const int64_t i = indices[static_cast<size_t>(k)];
    EMBER_CHECK(i >= 0 && i < size(), "[", name_, "] index ", i, " is out of range for a data set of size ", size());
    const uint8_t* src = images + i * plane;
    float* row = dst + k * plane;
    for (int64_t j = 0; j < plane; ++j) row[j] = lut[src[j]];
    tgt[k] = labels[i];
  }
  return true;
}

FashionMNIST::FashionMNIST(const std::string& root, bool train)
    : MNIST(root, train, "FashionMNIST",
            "install it with `apt-get install dataset-fashion-mnist` (files go to /usr/share/datasets/fashion-mnist) "
            "or pass the folder holding the IDX .gz files") {}

const std::vector<std::string>& FashionMNIST::classes() {
  static const std::vector<std::string> names{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                              "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

}  // namespace ember::data
