// IDX reading (plain and gzip, errors), the Fashion-MNIST files, the memory-mapped token
// data set.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ember::data {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace data_idx_test {

namespace fs = std::filesystem;

using ember::testing::ErrorOf;

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("ember_data_" + std::to_string(getpid()) + "_" + std::to_string(n_++))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int n_ = 0;
  fs::path path_;
};

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

TEST(Idx, RoundTripPlainAndGzip) {
  TempDir dir;
  Tensor u8 = arange(0, 24, TensorOptions(kUInt8)).reshape({2, 3, 4});
  Tensor i32 = tensor(std::vector<int32_t>{-1, 70000, 3}, kInt32);
  Tensor f64 = tensor({1.5, -2.25});
  for (const std::string& ext : {std::string(""), std::string(".gz")}) {
    write_idx(u8, dir.file("u8" + ext));
    write_idx(i32, dir.file("i32" + ext));
    write_idx(f64, dir.file("f64" + ext));
    Tensor a = read_idx(dir.file("u8" + ext));
    EXPECT_EQ(a.dtype(), kUInt8);
    EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{2, 3, 4}));
    EXPECT_TRUE(a.equal(u8));
    EXPECT_TRUE(read_idx(dir.file("i32" + ext)).equal(i32));
    EXPECT_TRUE(read_idx(dir.file("f64" + ext)).equal(f64));
  }
  // A hand-written big-endian int16 file: magic 00 00 0B 01, dim 2, values 258 and -2.
  WriteBytes(dir.file("be"), {0, 0, 0x0B, 1, 0, 0, 0, 2, 0x01, 0x02, 0xFF, 0xFE});
  EXPECT_EQ(read_idx(dir.file("be")).to_vector<int64_t>(), (std::vector<int64_t>{258, -2}));
  EXPECT_GT(fs::file_size(dir.file("u8")), 0u);
}

TEST(Idx, ClearErrors) {
  TempDir dir;
  EXPECT_NE(ErrorOf([&] { read_idx(dir.file("missing")); }).find("no such file"), std::string::npos);
  WriteBytes(dir.file("magic"), {1, 2, 3, 4, 5, 6, 7, 8});
  std::string msg = ErrorOf([&] { read_idx(dir.file("magic")); });
  EXPECT_NE(msg.find("bad magic"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.file("magic")), std::string::npos) << msg;
  WriteBytes(dir.file("short"), {0, 0, 8, 1, 0, 0, 0, 10, 1, 2, 3});
  msg = ErrorOf([&] { read_idx(dir.file("short")); });
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[10]"), std::string::npos) << msg;
  WriteBytes(dir.file("long"), {0, 0, 8, 1, 0, 0, 0, 2, 1, 2, 3});
  EXPECT_NE(ErrorOf([&] { read_idx(dir.file("long")); }).find("does not match its header"), std::string::npos);
  WriteBytes(dir.file("hdr"), {0, 0, 8, 3, 0, 0});
  EXPECT_NE(ErrorOf([&] { read_idx(dir.file("hdr")); }).find("declares 3 dims"), std::string::npos);
}

TEST(Idx, MNISTFromGeneratedFilesAndMissingFiles) {
  TempDir dir;
  write_idx(arange(0, 2 * 4 * 4, TensorOptions(kUInt8)).reshape({2, 4, 4}), dir.file("train-images-idx3-ubyte.gz"));
  write_idx(tensor(std::vector<uint8_t>{7, 3}, kUInt8), dir.file("train-labels-idx1-ubyte"));
  MNIST ds(dir.file(""), true);
  ASSERT_EQ(ds.size(), 2);
  Example e = ds.get(1);
  EXPECT_EQ(e.data.sizes().vec(), (std::vector<int64_t>{1, 4, 4}));
  EXPECT_EQ(e.data.to_vector<float>()[0], 16.0f / 255.0f);
  EXPECT_EQ(e.target.dim(), 0);
  EXPECT_EQ(e.target.item<int64_t>(), 3);
  std::string msg = ErrorOf([&] { FashionMNIST(dir.file(""), false); });
  EXPECT_NE(msg.find("t10k-images-idx3-ubyte"), std::string::npos) << msg;
  EXPECT_NE(msg.find("apt-get install dataset-fashion-mnist"), std::string::npos) << msg;
}

TEST(Idx, BatchFastPathMatchesPerSampleWithNormalize) {
  TempDir dir;
  write_idx(randint(0, 256, {5, 3, 3}, TensorOptions(kUInt8)), dir.file("train-images-idx3-ubyte.gz"));
  write_idx(tensor(std::vector<uint8_t>{0, 1, 2, 3, 4}, kUInt8), dir.file("train-labels-idx1-ubyte.gz"));
  MNIST ds(dir.file(""), true);
  ds.set_transform(transforms::Normalize({0.2860}, {0.3530}));
  Example fast;
  ASSERT_TRUE(ds.get_batch({4, 0, 2}, fast));
  std::vector<Example> samples{ds.get(4), ds.get(0), ds.get(2)};
  Example slow = default_collate(std::move(samples));
  EXPECT_TRUE(fast.data.equal(slow.data));  // bit for bit
  EXPECT_TRUE(fast.target.equal(slow.target));
}

const char* kFashion = "/usr/share/datasets/fashion-mnist";

TEST(Idx, FashionMNISTFiles) {
  if (!fs::exists(std::string(kFashion) + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  Tensor images = read_idx(std::string(kFashion) + "/t10k-images-idx3-ubyte.gz");
  EXPECT_EQ(images.sizes().vec(), (std::vector<int64_t>{10000, 28, 28}));
  EXPECT_EQ(images.dtype(), kUInt8);
  FashionMNIST train(kFashion, true);
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(train.images().sizes().vec(), (std::vector<int64_t>{60000, 28, 28}));
  EXPECT_EQ(train.targets().min().item<int64_t>(), 0);
  EXPECT_EQ(train.targets().max().item<int64_t>(), 9);
  Example e = train.get(0);
  EXPECT_EQ(e.data.sizes().vec(), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_GE(e.data.min().item<float>(), 0.0f);
  EXPECT_LE(e.data.max().item<float>(), 1.0f);
  EXPECT_EQ(e.target.item<int64_t>(), 9);  // the first training image is an ankle boot
  EXPECT_EQ(FashionMNIST::classes()[9], "Ankle boot");
  DataLoader loader(std::make_shared<FashionMNIST>(kFashion, false), DataLoaderOptions().batch_size(1000).num_workers(2));
  int64_t seen = 0;
  for (Example& b : loader) {
    EXPECT_EQ(b.data.sizes().vec(), (std::vector<int64_t>{1000, 1, 28, 28}));
    seen += b.target.size(0);
  }
  EXPECT_EQ(seen, 10000);
}

TEST(TokenDataset, MemoryMappedBlocks) {
  TempDir dir;
  std::vector<uint16_t> tokens(101);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>(60000 + i);
  {
    std::ofstream f(dir.file("tok.bin"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 2));
  }
  TokenDataset ds(dir.file("tok.bin"), 8);
  EXPECT_EQ(ds.num_tokens(), 101);
  EXPECT_EQ(ds.size(), 12);  // (101 - 1) / 8
  Example e = ds.get(2);
  EXPECT_EQ(e.data.dtype(), kInt64);
  EXPECT_EQ(e.data.to_vector<int64_t>()[0], 60016);
  EXPECT_EQ(e.target.to_vector<int64_t>()[0], 60017);
  EXPECT_EQ(e.target.to_vector<int64_t>()[7], 60024);
  EXPECT_NE(ErrorOf([&] { ds.get(12); }).find("out of range"), std::string::npos);
  DataLoader loader(std::make_shared<TokenDataset>(dir.file("tok.bin"), 8), DataLoaderOptions().batch_size(4));
  for (Example& b : loader) {
    EXPECT_EQ(b.data.sizes().vec(), (std::vector<int64_t>{4, 8}));
    EXPECT_TRUE(b.target.slice(1, 0, 7).equal(b.data.slice(1, 1, 8)));
  }
  // 202 bytes are no whole number of uint32 tokens.
  EXPECT_NE(ErrorOf([&] { TokenDataset(dir.file("tok.bin"), 8, TokenDType::UInt32); }).find("not a multiple"),
            std::string::npos);
  std::vector<uint32_t> wide_tokens{70000, 70001, 70002, 70003, 70004};
  {
    std::ofstream f(dir.file("wide.bin"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(wide_tokens.data()), 20);
  }
  TokenDataset wide(dir.file("wide.bin"), 2, TokenDType::UInt32);
  EXPECT_EQ(wide.size(), 2);
  EXPECT_EQ(wide.get(1).data.to_vector<int64_t>(), (std::vector<int64_t>{70002, 70003}));
  EXPECT_EQ(wide.get(1).target.to_vector<int64_t>(), (std::vector<int64_t>{70003, 70004}));
  EXPECT_NE(ErrorOf([&] { TokenDataset(dir.file("nope.bin"), 8); }).find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace ember::data
