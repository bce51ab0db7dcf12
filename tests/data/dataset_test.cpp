// Data sets (TensorDataset, Subset, ConcatDataset, random_split), collate functions and
// transforms.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <set>
#include <string>
#include <vector>

namespace ember::data {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace data_dataset_test {

using ember::testing::ErrorOf;

std::shared_ptr<TensorDataset> Rows(int64_t n) {
  return std::make_shared<TensorDataset>(arange(0, n * 3, TensorOptions(kFloat32)).reshape({n, 3}), arange(n));
}

TEST(Dataset, TensorDatasetRows) {
  auto ds = Rows(5);
  EXPECT_EQ(ds->size(), 5);
  Example e = ds->get(2);
  EXPECT_EQ(e.data.to_vector<float>(), (std::vector<float>{6, 7, 8}));
  EXPECT_EQ(e.target.item<int64_t>(), 2);
  EXPECT_NE(ErrorOf([&] { ds->get(5); }).find("index 5 is out of range"), std::string::npos);
  EXPECT_NE(ErrorOf([] { TensorDataset(zeros({3, 2}), zeros({4})); }).find("same size along dim 0"), std::string::npos);
}

TEST(Dataset, SubsetConcatSizes) {
  auto a = Rows(5), b = Rows(3);
  auto sub = std::make_shared<Subset>(a, std::vector<int64_t>{4, 0});
  EXPECT_EQ(sub->size(), 2);
  EXPECT_EQ(sub->get(0).target.item<int64_t>(), 4);
  ConcatDataset cat({a, b, sub});
  EXPECT_EQ(cat.size(), 10);
  EXPECT_EQ(cat.get(4).target.item<int64_t>(), 4);
  EXPECT_EQ(cat.get(5).target.item<int64_t>(), 0);
  EXPECT_EQ(cat.get(7).target.item<int64_t>(), 2);
  EXPECT_EQ(cat.get(8).target.item<int64_t>(), 4);
  EXPECT_NE(ErrorOf([&] { cat.get(10); }).find("out of range"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { Subset(a, {7}); }).find("index 7"), std::string::npos);
}

TEST(Dataset, RandomSplitIsDisjointAndComplete) {
  auto ds = Rows(10);
  auto parts = random_split(ds, {7, 3}, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0]->size(), 7);
  EXPECT_EQ(parts[1]->size(), 3);
  std::set<int64_t> all;
  for (auto& p : parts) all.insert(p->indices().begin(), p->indices().end());
  EXPECT_EQ(all.size(), 10u);
  EXPECT_EQ(random_split(ds, {7, 3}, 1)[0]->indices(), parts[0]->indices());
  EXPECT_NE(random_split(ds, {7, 3}, 2)[0]->indices(), parts[0]->indices());
  // Fractions: floor(0.5*11)=5, floor(0.3*11)=3, floor(0.2*11)=2, one left -> the first.
  auto f = random_split(Rows(11), {0.5, 0.3, 0.2});
  EXPECT_EQ(f[0]->size(), 6);
  EXPECT_EQ(f[1]->size(), 3);
  EXPECT_EQ(f[2]->size(), 2);
  EXPECT_NE(ErrorOf([&] { random_split(ds, {4, 4}); }).find("sum to 8"), std::string::npos);
}

TEST(Collate, DefaultStacksByCopying) {
  std::vector<Example> s;
  s.push_back({tensor({1.0f, 2.0f}), tensor(int64_t{3})});
  s.push_back({tensor({4.0f, 5.0f, 6.0f, 7.0f}).slice(0, 0, 4, 2), tensor(int64_t{8})});  // non-contiguous
  Example b = default_collate(std::move(s));
  EXPECT_EQ(b.data.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(b.data.to_vector<float>(), (std::vector<float>{1, 2, 4, 6}));
  EXPECT_EQ(b.target.to_vector<int64_t>(), (std::vector<int64_t>{3, 8}));
  std::vector<Example> bad;
  bad.push_back({zeros({2}), Tensor()});
  bad.push_back({zeros({3}), Tensor()});
  const std::string msg = ErrorOf([&] { default_collate(std::move(bad)); });
  EXPECT_NE(msg.find("sample 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pad_collate"), std::string::npos) << msg;
}

TEST(Collate, PadCollateValuesLengthsMask) {
  std::vector<Example> s;
  s.push_back({tensor({1, 2, 3}), tensor({1, 1, 1})});
  s.push_back({tensor({4}), tensor({2})});
  s.push_back({tensor({5, 6}), tensor({3, 3})});
  PaddedBatch b = pad_collate(std::move(s), -1.0);
  EXPECT_EQ(b.data.sizes().vec(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(b.data.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, -1, -1, 5, 6, -1}));
  EXPECT_EQ(b.target.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1, 2, -100, -100, 3, 3, -100}));
  EXPECT_EQ(b.lengths.to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(b.mask.dtype(), kBool);
  EXPECT_EQ(b.mask.to_vector<bool>(), (std::vector<bool>{true, true, true, true, false, false, true, true, false}));
  std::vector<Example> bad;
  bad.push_back({zeros({2, 3}), Tensor()});
  bad.push_back({zeros({2, 4}), Tensor()});
  EXPECT_NE(ErrorOf([&] { pad_collate(std::move(bad)); }).find("only dim 0"), std::string::npos);
}

TEST(Transforms, NormalizeValues) {
  Tensor x = tensor({0.0f, 0.5f, 1.0f, 0.25f}).reshape({2, 1, 2});
  Tensor y = transforms::Normalize({0.5, 0.0}, {0.5, 0.25})(x);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-1, 0, 4, 1}));
  Tensor z = transforms::Normalize({0.2860}, {0.3530})(tensor({0.2860f}).reshape({1, 1, 1}));
  EXPECT_EQ(z.item<float>(), 0.0f);
  EXPECT_NE(ErrorOf([] { transforms::Normalize({0.1, 0.2}, {1.0}); }).find("same, non-zero length"), std::string::npos);
  EXPECT_NE(ErrorOf([] { transforms::Normalize({0.1}, {0.0}); }).find("non-zero"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { transforms::Normalize({0, 0, 0}, {1, 1, 1})(x); }).find("2 channels"), std::string::npos);
}

TEST(Transforms, FlipProbability) {
  Tensor x = arange(0, 4, TensorOptions(kFloat32)).reshape({1, 1, 4});
  transforms::RandomHorizontalFlip flip(0.3);
  int flipped = 0;
  for (int64_t i = 0; i < 2000; ++i) {
    SampleScope scope({7, 0, i});
    Tensor y = flip(x);
    if (y.to_vector<float>()[0] == 3.0f) {
      ++flipped;
      EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 2, 1, 0}));
    }
  }
  EXPECT_NEAR(flipped / 2000.0, 0.3, 0.04);
  // The same key gives the same decision.
  SampleScope a({7, 0, 5});
  const float first = flip(x).to_vector<float>()[0];
  SampleScope b({7, 0, 5});
  EXPECT_EQ(flip(x).to_vector<float>()[0], first);
  EXPECT_EQ(transforms::RandomHorizontalFlip(1.0)(x).to_vector<float>(), (std::vector<float>{3, 2, 1, 0}));
  EXPECT_EQ(transforms::RandomHorizontalFlip(0.0)(x).to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
}

TEST(Transforms, CropShapesAndPadding) {
  Tensor x = ones({1, 28, 28});
  transforms::RandomCrop crop({28, 28}, 4);
  std::set<float> corners;
  for (int64_t i = 0; i < 50; ++i) {
    SampleScope scope({1, 0, i});
    Tensor y = crop(x);
    EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 28, 28}));
    corners.insert(y.to_vector<float>()[0]);
  }
  EXPECT_EQ(corners, (std::set<float>{0.0f, 1.0f}));  // some windows reach the zero padding
  Tensor small = transforms::RandomCrop({5, 3})(arange(0, 60, TensorOptions(kFloat32)).reshape({2, 6, 5}));
  EXPECT_EQ(small.sizes().vec(), (std::vector<int64_t>{2, 5, 3}));
  EXPECT_NE(ErrorOf([&] { transforms::RandomCrop({30, 30})(x); }).find("larger than the padded input"),
            std::string::npos);
  auto composed = transforms::Compose({transforms::RandomCrop({20, 20}), transforms::Normalize({1.0}, {2.0})});
  Tensor c = composed(x);
  EXPECT_EQ(c.sizes().vec(), (std::vector<int64_t>{1, 20, 20}));
  EXPECT_EQ(c.sum().item<float>(), 0.0f);
}

}  // namespace
}  // namespace ember::data
