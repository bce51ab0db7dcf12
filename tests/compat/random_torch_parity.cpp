// GeneratorKind::MT19937 against libtorch 1.13's CPU generator: after the same seed both
// libraries must draw the same numbers, value by value (Note [PyTorch's CPU random numbers]
// in src/ember/ops/random.cpp). Its own binary, like the quantization parity test, so it
// does not rebuild the big parity target.

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "parity/torch_bridge.h"

namespace {

ember::Generator mt(uint64_t seed) { return ember::Generator(seed, ember::GeneratorKind::MT19937); }

template <typename T>
std::vector<T> values(const ember::Tensor& t) {
  return t.contiguous().to_vector<T>();
}
template <typename T>
std::vector<T> values(const torch::Tensor& t) {
  torch::Tensor c = t.contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

// Bit-for-bit equality for exact draws; `ulps` > 0 allows that many float ulps (libtorch's
// AVX2 Box-Muller uses its own vectorised sin/cos/log).
template <typename T>
void expect_same(const std::vector<T>& a, const std::vector<T>& b, double rel = 0.0) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (rel == 0.0) {
      EXPECT_EQ(a[i], b[i]) << "element " << i;
    } else {
      EXPECT_NEAR(static_cast<double>(a[i]), static_cast<double>(b[i]), rel * (1.0 + std::abs(static_cast<double>(b[i]))))
          << "element " << i;
    }
  }
}

TEST(RandomParity, UniformFloatAndDouble) {
  for (uint64_t seed : {0ull, 1ull, 123456789ull, 0x1234567890abcdefull}) {
    torch::manual_seed(seed);
    torch::Tensor tf = torch::empty({37}).uniform_(-2.0, 3.0);
    torch::Tensor td = torch::empty({19}, torch::kFloat64).uniform_();
    ember::Generator g = mt(seed);
    ember::Tensor ef = ember::empty({37}).uniform_(-2.0, 3.0, g);
    ember::Tensor ed = ember::empty({19}, ember::kFloat64).uniform_(0.0, 1.0, g);
    expect_same(values<float>(ef), values<float>(tf));
    expect_same(values<double>(ed), values<double>(td));
  }
}

TEST(RandomParity, NormalSmallUsesCachedPairs) {
  // Fewer than 16 elements: per-element Box-Muller in double with the pair's second value
  // cached in the generator (so an odd count leaves one for the next call).
  torch::manual_seed(0);
  torch::Tensor a = torch::randn({3});
  torch::Tensor b = torch::randn({5}, torch::kFloat64);
  ember::Generator g = mt(0);
  ember::Tensor ea = ember::randn({3}, g);
  ember::Tensor eb = ember::randn({5}, g, ember::kFloat64);
  expect_same(values<float>(ea), values<float>(a));
  expect_same(values<double>(eb), values<double>(b));
  EXPECT_NEAR(values<float>(ea)[0], 1.5410f, 1e-4);  // the well-known first draw after seed 0
}

TEST(RandomParity, NormalLargeBlocks) {
  for (int64_t n : {16, 32, 37, 100}) {
    torch::manual_seed(7);
    torch::Tensor t = torch::empty({n}).normal_(0.5, 2.0);
    torch::Tensor td = torch::empty({n}, torch::kFloat64).normal_(0.5, 2.0);
    ember::Generator g = mt(7);
    ember::Tensor e = ember::empty({n}).normal_(0.5, 2.0, g);
    ember::Tensor ed = ember::empty({n}, ember::kFloat64).normal_(0.5, 2.0, g);
    expect_same(values<float>(e), values<float>(t), 2e-6);
    expect_same(values<double>(ed), values<double>(td));
  }
}

TEST(RandomParity, IntegersPermutationsAndBernoulli) {
  torch::manual_seed(42);
  torch::Tensor r = torch::randint(-5, 17, {50});
  torch::Tensor big = torch::empty({20}, torch::kInt64).random_(0, int64_t{1} << 40);
  torch::Tensor full = torch::empty({10}, torch::kInt32).random_();
  torch::Tensor fullf = torch::empty({10}).random_();
  torch::Tensor perm = torch::randperm(30);
  torch::Tensor bern = torch::empty({40}).bernoulli_(0.3);
  ember::Generator g = mt(42);
  ember::Tensor er = ember::randint(-5, 17, {50}, g);
  ember::Tensor ebig = ember::empty({20}, ember::kInt64).random_(0, int64_t{1} << 40, g);
  ember::Tensor efull = ember::empty({10}, ember::kInt32).random_(g);
  ember::Tensor efullf = ember::empty({10}).random_(g);
  ember::Tensor eperm = ember::randperm(30, g);
  ember::Tensor ebern = ember::empty({40}).bernoulli_(0.3, g);
  expect_same(values<int64_t>(er), values<int64_t>(r));
  expect_same(values<int64_t>(ebig), values<int64_t>(big));
  expect_same(values<int32_t>(efull), values<int32_t>(full));
  expect_same(values<float>(efullf), values<float>(fullf));
  expect_same(values<int64_t>(eperm), values<int64_t>(perm));
  expect_same(values<float>(ebern), values<float>(bern));
}

TEST(RandomParity, SeededLayersInitialiseTheSameWeights) {
  // The default generator switched to MT19937: a seeded Linear gets libtorch's weights.
  ember::set_default_generator_kind(ember::GeneratorKind::MT19937);
  torch::manual_seed(3);
  torch::nn::Linear tl(7, 5);
  ember::manual_seed(3);
  ember::nn::Linear el(7, 5);
  ember::set_default_generator_kind(ember::GeneratorKind::Philox);
  expect_same(values<float>(el->weight), values<float>(tl->weight), 1e-6);
  expect_same(values<float>(el->bias), values<float>(tl->bias), 1e-6);
}

TEST(RandomParity, StateRoundTripAndKindSwitch) {
  ember::Generator g = mt(9);
  ember::Tensor state = g.get_state();
  ember::Tensor a = ember::randn({21}, g);
  g.set_state(state);
  ember::Tensor b = ember::randn({21}, g);
  EXPECT_TRUE(ember::equal(a, b));
  // A Philox state is refused by an MT19937 generator, naming the expected size.
  ember::Generator p(9, ember::GeneratorKind::Philox);
  try {
    g.set_state(p.get_state());
    FAIL() << "expected an error";
  } catch (const ember::Error& e) {
    EXPECT_NE(std::string(e.what()).find("mt19937"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g.kind(), ember::GeneratorKind::MT19937);
  EXPECT_EQ(p.kind(), ember::GeneratorKind::Philox);
}

}  // namespace
