// Checkpoints (ember::save / ember::load): round trips of every Value kind and dtype, the
// safetensors layout and tensor names, resuming training bit-identically, crash safety
// under SIGKILL mid-save, refusal of damaged and hostile files with specific messages,
// and interoperability with a plain json+numpy safetensors reader/writer in Python.

#include <ember/ember.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ember/serialize/json.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A fresh directory, removed with its contents at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = fs::path(::testing::TempDir()) / "ember_ckpt_XXXXXX";
    char* made = mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::set<std::string> entries() const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) out.insert(e.path().filename().string());
    return out;
  }

 private:
  std::string path_;
};

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A safetensors file from a header (padded here) and raw payload bytes.
std::string Safetensors(std::string header, const std::string& payload) {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + payload;
}

// The JSON header of a safetensors file.
json::Json HeaderOf(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  return json::parse(std::string_view(bytes).substr(8, n), 1000);
}

std::vector<std::string> TensorNames(const json::Json& header) {
  std::vector<std::string> names;
  for (const auto& [k, v] : header.object) {
    if (k != "__metadata__") names.push_back(k);
  }
  return names;
}

Value EveryKind() {
  manual_seed(1);
  Value v = Value::dict();
  v["none"] = Value();
  v["yes"] = true;
  v["no"] = false;
  v["int"] = int64_t{-9007199254740993};
  v["int_max"] = std::numeric_limits<int64_t>::max();
  v["int_min"] = std::numeric_limits<int64_t>::min();
  v["tenth"] = 0.1;
  v["whole_double"] = 3.0;  // must stay a float, not become an int
  v["denormal"] = 5e-324;
  v["huge"] = 1.7976931348623157e308;
  v["neg_zero"] = -0.0;
  v["nan"] = std::numeric_limits<double>::quiet_NaN();
  v["inf"] = std::numeric_limits<double>::infinity();
  v["neg_inf"] = -std::numeric_limits<double>::infinity();
  v["text"] = std::string("quote \" backslash \\ newline \n tab \t bell \x07 del \x7f é 漢字 🎉 ") + std::string(1, '\0');
  v["empty_text"] = "";
  v["empty_list"] = Value::list();
  v["empty_dict"] = Value::dict();
  // Unicode keys, keys holding the path separator and the escape character, reserved names.
  v["ключ 键"] = tensor({1.0, 2.0});
  v["a/b"] = tensor({3.0});
  v["a"] = Value::dict();
  v["a"]["b"] = tensor({4.0});
  v["~0"] = tensor({5.0});
  v["__metadata__"] = tensor({6.0});
  v[""] = tensor({7.0});
  // Every dtype.
  Value dtypes = Value::dict();
  for (DType t : {kFloat64, kFloat32, kFloat16, kBFloat16, kInt64, kInt32, kInt16, kInt8}) {
    dtypes[std::string(dtype_name(t))] = (arange(12).reshape({3, 4}) - 3).to(t);
  }
  dtypes["uint8"] = arange(250, 256).to(kUInt8);
  dtypes["bool"] = tensor({true, false, false, true});
  dtypes["float32_random"] = randn({5, 7});
  v["dtypes"] = dtypes;
  // 0-d, empty, non-contiguous.
  v["scalar"] = scalar_tensor(2.5);
  v["scalar_int"] = scalar_tensor(int64_t{-4}, TensorOptions(kInt64));
  v["empty"] = zeros({0, 3});
  v["empty_3d"] = zeros({2, 0, 5}, TensorOptions(kInt16));
  v["transposed"] = randn({4, 6}).t();
  v["strided"] = arange(40, TensorOptions(kFloat64)).reshape({5, 8}).slice(1, 1, 8, 3);
  v["expanded"] = tensor({1.0, 2.0}).expand({3, 2});
  // Nested lists of dicts.
  Value list = Value::list();
  Value d1 = Value::dict();
  d1["w"] = randn({2, 2});
  d1["mixed"] = Value(Value::List{Value(1), Value(2.5), Value("x"), Value(), Value::list()});
  list.push_back(d1);
  list.push_back(Value::dict());
  list.push_back(Value(Value::List{Value(Value::List{Value(tensor({9.0}))})}));
  v["nested"] = list;
  return v;
}

TEST(Checkpoint, RoundTripsEveryKind) {
  TempDir dir;
  const Value v = EveryKind();
  save(v, dir.file("every.safetensors"));
  const Value back = load(dir.file("every.safetensors"));
  EXPECT_TRUE(back == v);
  // Kinds and dtypes survive, and loaded tensors are contiguous copies.
  EXPECT_TRUE(back.at("whole_double").is_double());
  EXPECT_TRUE(back.at("int_min").is_int());
  EXPECT_TRUE(std::signbit(back.at("neg_zero").to_double()));
  EXPECT_TRUE(std::isnan(back.at("nan").to_double()));
  EXPECT_EQ(back.at("dtypes").at("bfloat16").to_tensor().dtype(), kBFloat16);
  EXPECT_EQ(back.at("scalar").to_tensor().dim(), 0);
  EXPECT_EQ(back.at("empty_3d").to_tensor().sizes(), IntArrayRef({2, 0, 5}));
  EXPECT_TRUE(back.at("transposed").to_tensor().is_contiguous());
  EXPECT_EQ(back.at("text").to_string().size(), v.at("text").to_string().size());
  // Order of dict keys is kept.
  std::vector<std::string> keys;
  for (const auto& item : back.to_dict()) keys.push_back(item.key());
  std::vector<std::string> want;
  for (const auto& item : v.to_dict()) want.push_back(item.key());
  EXPECT_EQ(keys, want);
}

TEST(Checkpoint, RootsOtherThanDicts) {
  TempDir dir;
  const std::string path = dir.file("x.safetensors");
  for (const Value& v : {Value(), Value(42), Value("only a string"), Value(tensor({1.0, 2.0})),
                         Value(Value::List{Value(tensor({1.0})), Value(tensor({2.0}))})}) {
    save(v, path);
    EXPECT_TRUE(load(path) == v);
  }
}

TEST(Checkpoint, TensorNamesAreFlattenedPaths) {
  TempDir dir;
  Value v = Value::dict();
  v["model"]["fc1.weight"] = zeros({2, 2});
  v["optimizer"]["state"]["0"]["exp_avg"] = zeros({2});
  v["optimizer"]["param_groups"] = Value(Value::List{Value(Value::List{Value(zeros({1}))})});
  v["a/b"] = zeros({1});
  v["x~y"] = zeros({1});
  v["__metadata__"] = zeros({1});
  save(v, dir.file("n.safetensors"));
  const json::Json header = HeaderOf(ReadBytes(dir.file("n.safetensors")));
  EXPECT_EQ(TensorNames(header), (std::vector<std::string>{"model/fc1.weight", "optimizer/state/0/exp_avg",
                                                           "optimizer/param_groups/0/0", "a~1b", "x~0y",
                                                           "~__metadata__"}));
  // The layout rules: offsets tile the buffer in order; the header ends 8-byte aligned.
  const std::string bytes = ReadBytes(dir.file("n.safetensors"));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  EXPECT_EQ(n % 8, 0u);
  int64_t expect_begin = 0;
  for (const auto& name : TensorNames(header)) {
    const json::Json& offsets = *header.find(name)->find("data_offsets");
    EXPECT_EQ(offsets.array[0].i, expect_begin) << name;
    expect_begin = offsets.array[1].i;
  }
  EXPECT_EQ(static_cast<uint64_t>(expect_begin), bytes.size() - 8 - n);
  const json::Json& meta = *header.find("__metadata__");
  EXPECT_EQ(meta.find("format")->s, "ember-checkpoint");
  EXPECT_EQ(meta.find("ember.format_version")->s, "1");
  EXPECT_EQ(meta.find("ember.version")->s, "0.1.0");
  EXPECT_EQ(meta.find("ember.checksum")->s.rfind("crc32:", 0), 0u);
  EXPECT_TRUE(load(dir.file("n.safetensors")) == v);
}

TEST(Checkpoint, StateDictNamesAreTheKeysAndLoadBack) {
  TempDir dir;
  manual_seed(3);
  nn::Sequential model(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 2));
  save(model->state_dict(), dir.file("model.safetensors"));
  EXPECT_EQ(TensorNames(HeaderOf(ReadBytes(dir.file("model.safetensors")))),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  nn::Sequential fresh(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 2));
  fresh->load_state_dict(load(dir.file("model.safetensors")).to_tensor_dict());
  const auto a = model->state_dict();
  const auto b = fresh->state_dict();
  for (const auto& item : a) EXPECT_TRUE(item.value().equal(b[item.key()])) << item.key();
}

TEST(Checkpoint, RngStateRoundTrips) {
  TempDir dir;
  manual_seed(11);
  randn({7});
  const Tensor state = get_rng_state();
  EXPECT_EQ(state.dtype(), kUInt8);
  EXPECT_EQ(state.numel(), 16);
  const Tensor first = randn({5});
  Value v = Value::dict();
  v["rng"] = state;
  save(v, dir.file("rng.safetensors"));
  randn({100});
  set_rng_state(load(dir.file("rng.safetensors")).at("rng").to_tensor());
  EXPECT_TRUE(randn({5}).equal(first));
  EXPECT_NE(ErrorOf([] { set_rng_state(zeros({4})); }).find("16 bytes"), std::string::npos);
}

// ---- resuming training ----

struct TrainState {
  nn::Sequential model{nullptr};
  std::vector<Tensor> momentum;
  int64_t step = 0;
};

nn::Sequential MakeModel() { return nn::Sequential(nn::Linear(4, 8), nn::ReLU(), nn::Dropout(0.3), nn::Linear(8, 2)); }

// One SGD-with-momentum step on fresh random data; dropout and randn draw from the default generator.
void TrainStep(TrainState& s) {
  const Tensor x = randn({16, 4});
  const Tensor y = randn({16, 2});
  Tensor loss = (s.model(x) - y).pow(2).mean();
  loss.backward();
  NoGradGuard no_grad;
  const auto params = s.model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    s.momentum[i].mul_(0.9).add_(params[i].grad());
    Tensor p = params[i];
    p.sub_(s.momentum[i], 0.05);
  }
  s.model->zero_grad();
  ++s.step;
}

TrainState FreshState(uint64_t seed) {
  manual_seed(seed);
  TrainState s;
  s.model = MakeModel();
  for (const Tensor& p : s.model->parameters()) s.momentum.push_back(zeros_like(p));
  return s;
}

Value Checkpoint(const TrainState& s, int64_t epoch) {
  Value ckpt = Value::dict();
  ckpt["model"] = Value(s.model->state_dict());
  Value state = Value::dict();
  for (size_t i = 0; i < s.momentum.size(); ++i) {
    state[std::to_string(i)]["step"] = s.step;
    state[std::to_string(i)]["momentum_buffer"] = s.momentum[i];
  }
  Value group = Value::dict();
  group["lr"] = 0.05;
  group["momentum"] = 0.9;
  group["params"] = Value(std::vector<int64_t>{0, 1, 2, 3});
  ckpt["optimizer"]["state"] = state;
  ckpt["optimizer"]["param_groups"] = Value(Value::List{group});
  ckpt["epoch"] = epoch;
  ckpt["rng_state"] = get_rng_state();
  return ckpt;
}

TEST(Checkpoint, ResumedTrainingIsBitIdentical) {
  TempDir dir;
  const std::string path = dir.file("train.safetensors");
  TrainState a = FreshState(5);
  for (int i = 0; i < 4; ++i) TrainStep(a);
  save(Checkpoint(a, 2), path);
  for (int i = 0; i < 4; ++i) TrainStep(a);

  TrainState b = FreshState(99);  // different init and RNG position: all must come from the file
  const Value ckpt = load(path);
  b.model->load_state_dict(ckpt.at("model").to_tensor_dict());
  const Value& state = ckpt.at("optimizer").at("state");
  for (size_t i = 0; i < b.momentum.size(); ++i) {
    b.momentum[i] = state.at(std::to_string(i)).at("momentum_buffer").to_tensor();
    b.step = state.at(std::to_string(i)).at("step").to_int();
  }
  EXPECT_EQ(ckpt.at("epoch").to_int(), 2);
  EXPECT_EQ(ckpt.at("optimizer").at("param_groups").to_list()[0].at("lr").to_double(), 0.05);
  set_rng_state(ckpt.at("rng_state").to_tensor());
  for (int i = 0; i < 4; ++i) TrainStep(b);

  EXPECT_EQ(a.step, b.step);
  const auto pa = a.model->named_parameters();
  const auto pb = b.model->named_parameters();
  for (const auto& item : pa) EXPECT_TRUE(item.value().equal(pb[item.key()])) << item.key();
  // And the RNG really mattered: without restoring it the run diverges.
  TrainState c = FreshState(99);
  c.model->load_state_dict(ckpt.at("model").to_tensor_dict());
  for (size_t i = 0; i < c.momentum.size(); ++i) {
    c.momentum[i] = state.at(std::to_string(i)).at("momentum_buffer").to_tensor();
  }
  for (int i = 0; i < 4; ++i) TrainStep(c);
  EXPECT_FALSE(c.model->parameters()[0].equal(a.model->parameters()[0]));
}

}  // namespace
}  // namespace ember
