// Checkpoints (ember::save / ember::load): round trips of every Value kind and dtype, the
// safetensors layout and tensor names, resuming training bit-identically, crash safety
// under SIGKILL mid-save, refusal of damaged and hostile files with specific messages,
// and interoperability with a plain json+numpy safetensors reader/writer in Python.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <sys/stat.h>
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
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace serialize_checkpoint_test {

namespace fs = std::filesystem;

using ember::testing::ErrorOf;

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
  return json::parse(std::string_view(bytes).substr(8, n), 1000, 1u << 20);
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
  v["text"] =
      std::string("quote \" backslash \\ newline \n tab \t bell \x07 del \x7f é 漢字 🎉 ") + std::string(1, '\0');
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

TEST(SaveLoad, RoundTripsEveryKind) {
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

TEST(SaveLoad, RootsOtherThanDicts) {
  TempDir dir;
  const std::string path = dir.file("x.safetensors");
  for (const Value& v : {Value(), Value(42), Value("only a string"), Value(tensor({1.0, 2.0})),
                         Value(Value::List{Value(tensor({1.0})), Value(tensor({2.0}))})}) {
    save(v, path);
    EXPECT_TRUE(load(path) == v);
  }
  // The deepest nesting save accepts loads back.
  Value deep = tensor({1.0});
  for (int i = 0; i < 200; ++i) deep = i % 2 ? Value(Value::List{deep}) : Value(Value::Dict{{"k", deep}});
  save(deep, path);
  EXPECT_TRUE(load(path) == deep);
}

TEST(SaveLoad, TensorNamesAreFlattenedPaths) {
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
  EXPECT_EQ(TensorNames(header),
            (std::vector<std::string>{"model/fc1.weight", "optimizer/state/0/exp_avg", "optimizer/param_groups/0/0",
                                      "a~1b", "x~0y", "~__metadata__"}));
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

TEST(SaveLoad, StateDictNamesAreTheKeysAndLoadBack) {
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

TEST(SaveLoad, RngStateRoundTrips) {
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

TEST(SaveLoad, ResumedTrainingIsBitIdentical) {
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

// ---- crash safety ----

// A child process saves a 200 MB checkpoint over a good one and is SIGKILLed part way
// (from the save's progress hook at chosen points, or by the parent after a delay). The
// good file must survive intact; only temporaries with the documented prefix may be left,
// and the next successful save removes them.
TEST(SaveLoad, SigkillMidSaveKeepsThePreviousFile) {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  const std::string temp_prefix = ".ckpt.safetensors.ember-tmp.";
  manual_seed(2);
  Value good = Value::dict();
  good["w"] = randn({64, 64});
  good["epoch"] = 1;
  save(good, path);
  Value big = Value::dict();
  big["w"] = full({50'000'000}, 1.5);  // 200 MB of float32
  big["epoch"] = 2;

  struct KillPoint {
    const char* stage;     // hook stage to die at (nullptr: the parent kills after delay_ms)
    uint64_t after_bytes;  // ... once this many bytes are written
    int delay_ms;
  };
  const KillPoint points[] = {{"data", 0, 0},  {"data", 60u << 20, 0}, {"data", 150u << 20, 0}, {"synced", 0, 0},
                              {nullptr, 0, 1}, {nullptr, 0, 10},       {nullptr, 0, 40}};
  int kept_old = 0;
  for (const KillPoint& point : points) {
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // The child: tell the parent when writing starts, die where asked; _exit skips atexit handlers.
      close(pipefd[0]);
      const int fd = pipefd[1];
      bool told = false;
      detail::set_save_progress_hook([point, fd, &told](const char* stage, uint64_t bytes) {
        if (!told) {
          const char c = 1;
          (void)!write(fd, &c, 1);
          told = true;
        }
        if (point.stage != nullptr && std::strcmp(stage, point.stage) == 0 && bytes >= point.after_bytes) {
          raise(SIGKILL);
        }
      });
      try {
        save(big, path);
      } catch (...) {
        _exit(3);
      }
      _exit(0);
    }
    close(pipefd[1]);
    char c = 0;
    (void)!read(pipefd[0], &c, 1);
    close(pipefd[0]);
    if (point.stage == nullptr) {
      std::this_thread::sleep_for(std::chrono::milliseconds(point.delay_ms));
      kill(pid, SIGKILL);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (point.stage != nullptr) {
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
          << point.stage << " " << point.after_bytes << " status " << status;
    } else {
      EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << "the child's save failed";
    }
    // The file is the old checkpoint or (a timed kill that came too late) the complete new one.
    const Value now = load(path);
    if (now == good) {
      ++kept_old;
    } else {
      EXPECT_TRUE(now == big);
      save(good, path);
    }
    for (const std::string& e : dir.entries()) {
      EXPECT_TRUE(e == "ckpt.safetensors" || e.rfind(temp_prefix, 0) == 0) << "stray file " << e;
    }
  }
  EXPECT_GE(kept_old, 4);
  // Killed writers left temporaries; the next successful save of the same target removes them.
  size_t temps = dir.entries().size() - 1;
  EXPECT_GE(temps, 1u);
  save(good, path);
  EXPECT_EQ(dir.entries(), std::set<std::string>{"ckpt.safetensors"});
  EXPECT_TRUE(load(path) == good);
}

TEST(SaveLoad, FailedSavesThrowAndLeaveNothingBehind) {
  TempDir dir;
  Value v = Value::dict();
  v["w"] = zeros({2});
  std::string e = ErrorOf([&] { save(v, dir.file("no/such/dir/x.safetensors")); });
  EXPECT_NE(e.find("[save] cannot create a temporary file next to '" + dir.file("no/such/dir/x.safetensors") + "'"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("No such file or directory"), std::string::npos) << e;

  // Renaming over a non-empty directory fails after the data was written: the temporary goes.
  fs::create_directory(dir.file("taken"));
  WriteBytes(dir.file("taken/inside"), "x");
  e = ErrorOf([&] { save(v, dir.file("taken")); });
  EXPECT_NE(e.find("[save] saving '" + dir.file("taken") + "' failed: renaming the temporary over the target"),
            std::string::npos)
      << e;
  EXPECT_EQ(dir.entries(), std::set<std::string>{"taken"});

  Value undefined = Value::dict();
  undefined["w"] = Tensor();
  EXPECT_NE(ErrorOf([&] { save(undefined, dir.file("u")); }).find("the tensor at 'w' is undefined"), std::string::npos);
  Value bad_text = Value::dict();
  bad_text["s"] = std::string("\xff\xfe");
  EXPECT_NE(ErrorOf([&] { save(bad_text, dir.file("u")); }).find("at 's' is not valid UTF-8"), std::string::npos);
  Value deep = Value::list();
  for (int i = 0; i < 300; ++i) deep = Value(Value::List{deep});
  EXPECT_NE(ErrorOf([&] { save(deep, dir.file("u")); }).find("nests deeper than 200 levels"), std::string::npos);
  EXPECT_EQ(dir.entries(), std::set<std::string>{"taken"});
}

// ---- damaged and hostile files ----

TEST(SaveLoad, DamagedFilesAreRefusedWithTheReason) {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  manual_seed(4);
  Value v = Value::dict();
  v["weights"] = randn({32, 32});
  v["bias"] = randn({32});
  v["epoch"] = 3;
  save(v, path);
  const std::string good = ReadBytes(path);
  const std::string bad = dir.file("bad.safetensors");
  const auto error_for = [&](const std::string& bytes) {
    WriteBytes(bad, bytes);
    return ErrorOf([&] { load(bad); });
  };
  const std::string where = "[load] checkpoint '" + bad + "'";
  const std::string mismatch = where + " is corrupted: checksum mismatch (stored crc32:";

  // One flipped bit in the header (inside a string, so the JSON stays valid), in a tensor
  // name, and in the payload.
  std::string b = good;
  b[b.find("\"ember.version\":\"0.1.0\"") + 17] ^= 0x01;
  std::string e = error_for(b);
  EXPECT_EQ(e.rfind(mismatch, 0), 0u) << e;
  EXPECT_NE(e.find(", computed crc32:"), std::string::npos) << e;
  b = good;
  b[b.find("\"weights\":{") + 2] ^= 0x20;
  EXPECT_EQ(error_for(b).rfind(mismatch, 0), 0u);
  b = good;
  b[b.size() - 100] ^= 0x10;
  EXPECT_EQ(error_for(b).rfind(mismatch, 0), 0u);
  // The checksum entry itself damaged.
  b = good;
  b[b.find("ember.checksum") + 10] ^= 0x01;
  EXPECT_EQ(error_for(b), where + " is corrupted: its ember.checksum entry is missing or malformed");

  // Truncated by one byte, and to half.
  const std::string size = std::to_string(good.size());
  EXPECT_EQ(error_for(good.substr(0, good.size() - 1)),
            where + " is truncated: expected " + size + " bytes, found " + std::to_string(good.size() - 1));
  EXPECT_EQ(error_for(good.substr(0, good.size() / 2)),
            where + " is truncated: expected " + size + " bytes, found " + std::to_string(good.size() / 2));
  // A header length field far larger than the file.
  b = good;
  for (int i = 0; i < 8; ++i) b[static_cast<size_t>(i)] = '\xff';
  EXPECT_EQ(error_for(b), where + " is corrupted: its header length field says 18446744073709551615 bytes but only " +
                              std::to_string(good.size() - 8) +
                              " bytes follow it (truncated, or not a safetensors file)");
  // Extra bytes after the data.
  EXPECT_NE(error_for(good + "xyz").find("is corrupted: 3 bytes follow the last tensor's data"), std::string::npos);
  // Too short, empty, missing.
  EXPECT_NE(error_for("abcde").find("it has 5 bytes, fewer than the 8-byte header length field"), std::string::npos);
  EXPECT_NE(error_for("").find("it has 0 bytes"), std::string::npos);
  e = ErrorOf([&] { load(dir.file("missing.safetensors")); });
  EXPECT_EQ(e, "[load] cannot open checkpoint '" + dir.file("missing.safetensors") + "': No such file or directory");
  // Nothing above changed the original.
  EXPECT_TRUE(load(path) == v);
}

TEST(SaveLoad, HostileHeadersAreRefused) {
  TempDir dir;
  const std::string bad = dir.file("bad.safetensors");
  const auto error_for = [&](const std::string& header, const std::string& payload) {
    WriteBytes(bad, Safetensors(header, payload));
    return ErrorOf([&] { load(bad); });
  };
  const auto expect_error = [&](const std::string& header, const std::string& payload, const std::string& want) {
    const std::string e = error_for(header, payload);
    EXPECT_NE(e.find(want), std::string::npos) << "header " << header.substr(0, 80) << "\nerror: " << e;
  };
  const std::string f32x2 = std::string(8, '\0');
  expect_error(R"({"a":{"dtype":"F32",})", f32x2,
               "has an invalid header: invalid JSON: expected a string key at byte 20");
  expect_error("[1]", "", "it does not start with '{'");
  expect_error(R"({"a":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}})", "abcd",
               "tensor 'a' has dtype 'U16', which ember does not support (supported: F64 F32 F16 BF16 I64 I32 I16 I8 "
               "U8 BOOL)");
  expect_error(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f32x2,
               "tensor 'a' has shape [3] and dtype F32 (12 bytes) but data_offsets [0, 8] span 8 bytes");
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],)"
               R"("data_offsets":[4,12]}})",
               std::string(12, '\0'), "the data of tensors 'a' [0, 8) and 'b' [4, 12) overlap");
  expect_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],)"
               R"("data_offsets":[8,12]}})",
               std::string(12, '\0'), "bytes [4, 8) of the data belong to no tensor");
  expect_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4611686018427387904,4611686018427387908]}})", "",
               "bytes [0, 4611686018427387904) of the data belong to no tensor");
  expect_error(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", f32x2, "is truncated: expected");
  expect_error(R"({"a":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,0]}})", "", "too large");
  expect_error(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", "", "not a non-negative integer");
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", f32x2, "0 <= begin <= end");
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],)"
               R"("data_offsets":[0,8]}})",
               f32x2, "duplicate key \"a\"");
  expect_error("{\"\xff\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", f32x2, "invalid UTF-8");
  expect_error(R"({"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", std::string("\x01\x02", 2),
               "BOOL tensor 'a' holds byte 2 at element 1");
  expect_error(R"({"__metadata__":{"k":1}})", "", "__metadata__ entry 'k' is not a string");
  expect_error("{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}", "", "nesting deeper than");
  expect_error(R"({"__metadata__":{"format":"ember-checkpoint","ember.format_version":"2"}})", "",
               "was written by a newer ember (format 2); this build reads format 1: upgrade ember");
  expect_error(R"({"__metadata__":{"format":"ember-checkpoint","ember.format_version":"1"}})", "",
               "its ember.checksum entry is missing or malformed");
  // An empty header is a valid, empty file.
  WriteBytes(bad, Safetensors("{}", ""));
  EXPECT_EQ(load(bad).size(), 0u);
}

// ---- interoperability with a plain (json + numpy) safetensors reader and writer ----

bool HavePythonWithNumpy() {
  return access("/usr/bin/python3", X_OK) == 0 && std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") == 0;
}

// Runs a Python script; returns its exit status and output.
std::pair<int, std::string> RunPython(const std::string& script_path, const std::string& arg) {
  const std::string cmd = "/usr/bin/python3 '" + script_path + "' '" + arg + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  const int status = pclose(p);
  return {status, out};
}

TEST(SaveLoad, PythonReadsWhatEmberWrites) {
  if (!HavePythonWithNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  TempDir dir;
  Value v = Value::dict();
  v["model"]["fc1.weight"] = arange(6, TensorOptions(kFloat32)).reshape({2, 3}) * 0.5;
  v["model"]["fc1.bias"] = tensor({-1.5, 2.25}, TensorOptions(kFloat64));
  v["half"] = tensor({0.5, -1.25, 3.0}).to(kFloat16);
  v["bf16"] = tensor({1.0, -2.5, 0.15625}).to(kBFloat16);
  v["ints"] = arange(-3, 3);
  v["i32"] = tensor({-7, 8}, TensorOptions(kInt32));
  v["i16"] = tensor({-300, 300}).to(kInt16);
  v["i8"] = tensor({-128, 127}).to(kInt8);
  v["u8"] = tensor({0, 7, 255}).to(kUInt8);
  v["mask"] = tensor({true, false, true});
  v["scalar"] = scalar_tensor(42.0);
  v["empty"] = zeros({0, 3});
  v["transposed"] = arange(6, TensorOptions(kFloat32)).reshape({2, 3}).t();
  v["epoch"] = 7;
  v["name"] = "run \"1\" é";
  save(v, dir.file("from_ember.safetensors"));

  WriteBytes(dir.file("read.py"), R"PY(
import json, struct, sys
import numpy as np
data = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', data[:8])[0]
assert (8 + n) % 8 == 0
header = json.loads(data[8:8 + n])
buf = data[8 + n:]
meta = header.pop('__metadata__')
assert meta['format'] == 'ember-checkpoint' and meta['ember.format_version'] == '1', meta
tree = json.loads(meta['ember.value'])
codes = {'F64': '<f8', 'F32': '<f4', 'F16': '<f2', 'BF16': '<u2', 'I64': '<i8', 'I32': '<i4', 'I16': '<i2',
         'I8': 'i1', 'U8': 'u1', 'BOOL': '?'}
def get(name):
    h = header[name]
    b, e = h['data_offsets']
    a = np.frombuffer(buf[b:e], dtype=codes[h['dtype']]).reshape(h['shape'])
    if h['dtype'] == 'BF16':
        a = (a.astype('<u4') << 16).view('<f4')
    return a
expected = {
    'model/fc1.weight': np.arange(6, dtype='f4').reshape(2, 3) * 0.5,
    'model/fc1.bias': np.array([-1.5, 2.25], 'f8'),
    'half': np.array([0.5, -1.25, 3.0], 'f2'),
    'bf16': np.array([1.0, -2.5, 0.15625], 'f4'),
    'ints': np.arange(-3, 3, dtype='i8'),
    'i32': np.array([-7, 8], 'i4'),
    'i16': np.array([-300, 300], 'i2'),
    'i8': np.array([-128, 127], 'i1'),
    'u8': np.array([0, 7, 255], 'u1'),
    'mask': np.array([True, False, True]),
    'scalar': np.array(42.0, 'f4'),
    'empty': np.zeros((0, 3), 'f4'),
    'transposed': np.arange(6, dtype='f4').reshape(2, 3).T,
}
assert sorted(header) == sorted(expected), sorted(header)
end = 0
for name in header:
    assert header[name]['data_offsets'][0] == end, name
    end = header[name]['data_offsets'][1]
assert end == len(buf)
for name, want in expected.items():
    got = get(name)
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), (name, got, want)
d = tree['dict']
assert d['epoch'] == 7 and d['name'] == 'run "1" \u00e9', d
assert d['model']['dict']['fc1.weight'] == {'tensor': 'model/fc1.weight'}, d['model']
print('OK')
)PY");
  const auto [status, out] = RunPython(dir.file("read.py"), dir.file("from_ember.safetensors"));
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "OK\n");
}

TEST(SaveLoad, EmberReadsWhatPythonWrites) {
  if (!HavePythonWithNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  TempDir dir;
  // Header order differs from data order, json.dumps adds spaces and \u escapes: all allowed.
  WriteBytes(dir.file("write.py"), R"PY(
import json, struct, sys
import numpy as np
tensors = {
    'b.f32': np.array([[1.5, -2.0, 3.25]], '<f4'),
    'a.i64': np.array([1, -2, 3, 2**40], '<i8'),
    'c.f16': np.array([0.5, 65504.0], '<f2'),
    'd.bool': np.array([True, False]),
    'e.f64': np.array(3.141592653589793, '<f8'),
    'f.empty': np.zeros((0, 2), '<f4'),
    '\u043a\u043b\u044e\u0447': np.array([[0, 255], [1, 2]], 'u1'),
}
codes = {'float32': 'F32', 'int64': 'I64', 'float16': 'F16', 'bool': 'BOOL', 'float64': 'F64', 'uint8': 'U8'}
header = {'__metadata__': {'format': 'pt'}}
chunks, off = [], 0
for name in reversed(list(tensors)):
    b = tensors[name].tobytes()
    header[name] = None
    chunks.append((name, b))
for name, b in chunks:
    a = tensors[name]
    header[name] = {'dtype': codes[a.dtype.name], 'shape': list(a.shape), 'data_offsets': [off, off + len(b)]}
    off += len(b)
order = {'__metadata__': header['__metadata__']}
for name in tensors:
    order[name] = header[name]
h = json.dumps(order).encode()
h += b' ' * ((8 - len(h) % 8) % 8)
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h + b''.join(b for _, b in chunks))
print('OK')
)PY");
  const std::string path = dir.file("from_python.safetensors");
  const auto [status, out] = RunPython(dir.file("write.py"), path);
  ASSERT_EQ(status, 0) << out;
  const Value v = load(path);
  std::vector<std::string> keys;
  for (const auto& item : v.to_dict()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"b.f32", "a.i64", "c.f16", "d.bool", "e.f64", "f.empty", "ключ"}));
  EXPECT_TRUE(v.at("b.f32").to_tensor().equal(tensor({{1.5, -2.0, 3.25}}).to(kFloat32)));
  EXPECT_TRUE(v.at("a.i64").to_tensor().equal(tensor(std::vector<int64_t>{1, -2, 3, int64_t{1} << 40})));
  EXPECT_TRUE(v.at("c.f16").to_tensor().equal(tensor({0.5, 65504.0}).to(kFloat16)));
  EXPECT_TRUE(v.at("d.bool").to_tensor().equal(tensor({true, false})));
  const Tensor pi = v.at("e.f64").to_tensor();
  EXPECT_EQ(pi.dim(), 0);
  EXPECT_EQ(pi.dtype(), kFloat64);
  EXPECT_EQ(pi.item<double>(), 3.141592653589793);
  EXPECT_EQ(v.at("f.empty").to_tensor().sizes(), IntArrayRef({0, 2}));
  EXPECT_TRUE(v.at("ключ").to_tensor().equal(tensor({{0, 255}, {1, 2}}).to(kUInt8)));
}


// ---- loader limits (issue 13) ----

TEST(LoadLimits, RefusesAFifoWithoutBlocking) {
  TempDir dir;
  const std::string path = dir.file("pipe.safetensors");
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = ErrorOf([&] { load(path); });
  EXPECT_NE(msg.find("is not a regular file"), std::string::npos) << msg;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(LoadLimits, IntegersBeyondInt64AndNonFiniteNumbersAreErrors) {
  EXPECT_THROW(json::parse("9223372036854775808", 10, 10), json::ParseError);
  EXPECT_THROW(json::parse("-9223372036854775809", 10, 10), json::ParseError);
  EXPECT_THROW(json::parse("1e999", 10, 10), json::ParseError);
  EXPECT_THROW(json::parse("-1e999", 10, 10), json::ParseError);
  EXPECT_EQ(json::parse("9223372036854775807", 10, 10).i, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(json::parse("1e-999", 10, 10).d, 0.0);  // underflow rounds to zero, as the format allows
  // In a file: a data offset beyond int64 is refused, not rounded.
  TempDir dir;
  const std::string path = dir.file("big.safetensors");
  WriteBytes(path, Safetensors(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551620]}})",
                               std::string(4, '\0')));
  const std::string msg = ErrorOf([&] { load(path); });
  EXPECT_NE(msg.find("does not fit in int64"), std::string::npos) << msg;
  WriteBytes(path, Safetensors(R"({"__metadata__":{"a":"b"},"x":{"dtype":"F32","shape":[1e999],"data_offsets":[0,4]}})",
                               std::string(4, '\0')));
  const std::string msg2 = ErrorOf([&] { load(path); });
  EXPECT_NE(msg2.find("outside the range of a double"), std::string::npos) << msg2;
}

TEST(LoadLimits, StaleTemporariesGoAtTheNextAttemptEvenAFailedOne) {
  TempDir dir;
  // A temporary left by a process that is gone: fork a child that exits at once.
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(dead, &status, 0), dead);
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  std::string h(host[0] ? host : "localhost");
  for (char& ch : h) {
    if (ch == '/') ch = '_';
  }
  const std::string stale = ".ckpt.safetensors.ember-tmp." + h + "." + std::to_string(dead) + ".0";
  WriteBytes(dir.file(stale), std::string(1024, 'x'));
  // The target is a directory, so this save fails at the rename, after its clean-up.
  fs::create_directory(dir.file("ckpt.safetensors"));
  fs::create_directory(dir.file("ckpt.safetensors/keep"));
  EXPECT_NE(ErrorOf([&] { save(Value(int64_t{1}), dir.file("ckpt.safetensors")); }), "");
  EXPECT_EQ(dir.entries().count(stale), 0u) << "the stale temporary of a killed save survived a new attempt";
  EXPECT_EQ(dir.entries().count("ckpt.safetensors"), 1u);
}

// Resident bytes of this process: the current size and the peak (/proc/self/status).
int64_t StatusBytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::strlen(field))) * 1024;
  }
  return -1;
}

// How far a forked child's resident memory grows above where it started while it loads
// `path` (the load may fail); -1 when it cannot be measured here.
int64_t LoadPeakGrowth(const std::string& path) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    malloc_trim(0);  // free heap pages the parent left resident would hide the load's growth
    const int64_t before = StatusBytes("VmRSS:");
    int64_t growth = -1;
    // Writing 5 to clear_refs resets the peak (VmHWM) to the current size.
    if (std::ofstream("/proc/self/clear_refs") << "5") {
      try {
        load(path);
      } catch (const Error&) {
      }
      growth = StatusBytes("VmHWM:") - before;
    }
    const ssize_t w = write(fds[1], &growth, sizeof(growth));
    _exit(w == sizeof(growth) ? 0 : 1);
  }
  close(fds[1]);
  int64_t growth = -1;
  if (read(fds[0], &growth, sizeof(growth)) != sizeof(growth)) growth = -1;
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return growth;
}

// Note [Load memory bound]: whatever a file holds, load() stays within ~4x its size plus
// 64 MiB (and the tensors it returns). A 6 MB header of tiny JSON values once took 555 MB.
TEST(LoadLimits, MemoryStaysWithinFourTimesTheFileSize) {
  TempDir dir;
  const int64_t slack = int64_t{64} << 20;
  const auto check = [&](const std::string& name, const std::string& bytes, const std::string& want_error) {
    const std::string path = dir.file(name);
    WriteBytes(path, bytes);
    if (!want_error.empty()) {
      const std::string msg = ErrorOf([&] { load(path); });
      EXPECT_NE(msg.find(want_error), std::string::npos) << name << ": " << msg;
    }
    const int64_t growth = LoadPeakGrowth(path);
    if (growth < 0) GTEST_SKIP() << "peak resident size cannot be measured here";
    const int64_t size = static_cast<int64_t>(bytes.size());
    EXPECT_LE(growth, 4 * size + slack) << name << ": " << size << "-byte file, peak growth " << growth;
    std::printf("%s: %lld-byte file, load's peak memory growth %.1f MB\n", name.c_str(),
                static_cast<long long>(size), static_cast<double>(growth) / 1e6);
  };
  // Hostile headers: millions of two-byte values.
  std::string zeros = R"({"a":[)";
  for (int i = 0; i < 3'000'000; ++i) zeros += i ? ",0" : "0";
  zeros += "]}";
  check("zeros.safetensors", Safetensors(zeros, ""), "JSON values, so that loading it stays within ~4x its size");
  std::string arrays = R"({"a":[)";
  for (int i = 0; i < 2'000'000; ++i) arrays += i ? ",[]" : "[]";
  arrays += "]}";
  check("arrays.safetensors", Safetensors(arrays, ""), "JSON values");
  std::string objects = R"({"a":[)";
  for (int i = 0; i < 1'000'000; ++i) objects += i ? R"(,{"":0})" : R"({"":0})";
  objects += "]}";
  check("objects.safetensors", Safetensors(objects, ""), "JSON values");
  // The largest value save() accepts for a small file loads back within the bound too.
  Value list = Value::list();
  const std::string probe = dir.file("probe.safetensors");
  int64_t n = 1 << 16;
  for (;; n += n / 8) {  // grow until save refuses, then keep the last accepted size
    Value::List items(static_cast<size_t>(n), Value(int64_t{7}));
    const std::string err = ErrorOf([&] { save(Value(items), probe); });
    if (!err.empty()) {
      EXPECT_NE(err.find("keep large lists of numbers in tensors"), std::string::npos) << err;
      break;
    }
    ASSERT_LT(n, int64_t{1} << 24) << "save() accepted a list of " << n << " ints in a tiny file";
  }
  n = n * 8 / 9 - 1;
  const std::string ok = dir.file("largest.safetensors");
  save(Value(Value::List(static_cast<size_t>(n), Value(std::string("abc")))), ok);
  EXPECT_EQ(load(ok).to_list().size(), static_cast<size_t>(n));
  check("largest.safetensors", ReadBytes(ok), "");
}

}  // namespace
}  // namespace ember
