// Random ops: reproducibility (seeds, generator state, thread count), distributions,
// layouts and error cases. See Note [Deterministic random streams] in generator.h.

#include <gtest/gtest.h>

#include "test_util.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <ember/ember.h>

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace ops_random_test {

using namespace testing;  // I64, F32, Sizes, Strides, Longs, Floats, Doubles, ExpectError (test_util.h)

struct Moments {
  double mean = 0, var = 0, min = 0, max = 0;
};

Moments MomentsOf(const Tensor& t) {
  const std::vector<double> v = Doubles(t);
  Moments m;
  m.min = *std::min_element(v.begin(), v.end());
  m.max = *std::max_element(v.begin(), v.end());
  for (double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size());
  return m;
}

// Restores the thread count when a test changes it.
struct ThreadGuard {
  int saved = get_num_threads();
  ~ThreadGuard() { set_num_threads(saved); }
};

bool BitEqual(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::equal(static_cast<const char*>(ca.data_ptr()),
                    static_cast<const char*>(ca.data_ptr()) + ca.nbytes(),
                    static_cast<const char*>(cb.data_ptr()));
}

constexpr int64_t kMillion = 1000000;

// ---------------------------------------------------------------------------------------
// Reproducibility

TEST(RandomSeed, SameSeedSameNumbers) {
  manual_seed(123);
  Tensor a = rand({1000});
  Tensor an = randn({1000});
  Tensor ai = randint(0, 100, {1000});
  manual_seed(123);
  Tensor b = rand({1000});
  Tensor bn = randn({1000});
  Tensor bi = randint(0, 100, {1000});
  EXPECT_TRUE(BitEqual(a, b));
  EXPECT_TRUE(BitEqual(an, bn));
  EXPECT_TRUE(BitEqual(ai, bi));
  // The stream moves on: the next draw differs from the first.
  EXPECT_FALSE(BitEqual(rand({1000}), a));
  EXPECT_EQ(default_generator().current_seed(), 123u);
}

TEST(RandomSeed, ExplicitGeneratorMatchesDefaultGeneratorWithSameSeed) {
  Generator g1(42), g2(42);
  Tensor a = rand({257}, g1);
  Tensor b = rand({257}, g2);
  EXPECT_TRUE(BitEqual(a, b));
  manual_seed(42);
  EXPECT_TRUE(BitEqual(rand({257}), a));
  // Draws from an explicit generator leave the default one alone.
  manual_seed(42);
  Generator g3(7);
  (void)rand({100}, g3);
  EXPECT_TRUE(BitEqual(rand({257}), a));
  // Successive draws continue the stream: two draws of 4 floats (one counter block each)
  // are one draw of 8.
  Generator g4(77);
  Tensor first = rand({4}, g4);
  Tensor second = rand({4}, g4);
  Tensor both = rand({8}, Generator(77));
  EXPECT_TRUE(BitEqual(first, both.slice(0, 0, 4)));
  EXPECT_TRUE(BitEqual(second, both.slice(0, 4)));
  // Copies of a Generator handle share one state.
  Generator alias = g4;
  (void)rand({4}, alias);
  EXPECT_FALSE(BitEqual(rand({8}, g4), rand({8}, Generator(77))));
  // seed() picks a new seed and reports it.
  Generator gs(1);
  const uint64_t s = gs.seed();
  EXPECT_EQ(gs.current_seed(), s);
  EXPECT_TRUE(BitEqual(rand({16}, gs), rand({16}, Generator(s))));
  // Re-seeding a generator rewinds it.
  g1.manual_seed(42);
  EXPECT_TRUE(BitEqual(rand({257}, g1), a));
  EXPECT_EQ(g1.current_seed(), 42u);
  EXPECT_EQ(g1.initial_seed(), 42u);
}

TEST(RandomSeed, DifferentSeedsDiffer) {
  Tensor a = rand({100}, Generator(1));
  Tensor b = rand({100}, Generator(2));
  EXPECT_FALSE(BitEqual(a, b));
  const std::vector<float> va = Floats(a), vb = Floats(b);
  int same = 0;
  for (size_t i = 0; i < va.size(); ++i) same += va[i] == vb[i];
  EXPECT_LT(same, 3);
  EXPECT_FALSE(BitEqual(randn({100}, Generator(1)), randn({100}, Generator(2))));
  EXPECT_FALSE(BitEqual(randperm(50, Generator(1)), randperm(50, Generator(2))));
}

TEST(RandomSeed, GetStateSetStateRoundTrip) {
  Generator g(99);
  (void)rand({10}, g);  // 10 floats use 3 counter blocks
  Tensor state = g.get_state();
  EXPECT_EQ(state.dtype(), kUInt8);
  EXPECT_EQ(state.sizes().vec(), (I64{16}));
  // Seed then offset, little-endian.
  std::vector<uint8_t> bytes = state.to_vector<uint8_t>();
  EXPECT_EQ(bytes[0], 99);
  EXPECT_EQ(bytes[8], 3);
  for (int i : {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15}) EXPECT_EQ(bytes[i], 0) << i;

  Tensor a = rand({300}, g);
  Tensor an = randn({77}, g, kFloat64);
  Tensor ap = randperm(20, g);
  g.set_state(state);
  EXPECT_TRUE(BitEqual(rand({300}, g), a));
  EXPECT_TRUE(BitEqual(randn({77}, g, kFloat64), an));
  EXPECT_TRUE(BitEqual(randperm(20, g), ap));

  // The state can move between generators, including the default one.
  Generator other(5);
  other.set_state(state);
  EXPECT_EQ(other.current_seed(), 99u);
  EXPECT_TRUE(BitEqual(rand({300}, other), a));
  Tensor saved_default = default_generator().get_state();
  default_generator().set_state(state);
  EXPECT_TRUE(BitEqual(rand({300}), a));
  default_generator().set_state(saved_default);

  // Changing the returned tensor does not change the generator.
  Tensor s2 = g.get_state();
  s2.zero_();
  EXPECT_NE(g.current_seed(), 0u);

  ExpectError([&] { g.set_state(zeros({16})); }, {"16"});
  ExpectError([&] { g.set_state(zeros({8}, kUInt8)); }, {"16"});
  ExpectError([&] { g.set_state(Tensor()); }, {"undefined"});
  ExpectError([] { (void)Generator().get_state(); }, {"undefined"});
}

TEST(RandomSeed, BitIdenticalAcrossThreadCounts) {
  ThreadGuard guard;
  set_num_threads(1);
  manual_seed(2024);
  Tensor u1 = rand({kMillion});
  Tensor n1 = randn({kMillion});
  Tensor d1 = randn({kMillion}, Generator(3), kFloat64);
  Tensor i1 = randint(-1000, 1000, {kMillion});
  Tensor b1 = empty({kMillion}).bernoulli_(0.3, Generator(4));
  set_num_threads(2);
  EXPECT_EQ(get_num_threads(), 2);
  manual_seed(2024);
  Tensor u2 = rand({kMillion});
  Tensor n2 = randn({kMillion});
  Tensor d2 = randn({kMillion}, Generator(3), kFloat64);
  Tensor i2 = randint(-1000, 1000, {kMillion});
  Tensor b2 = empty({kMillion}).bernoulli_(0.3, Generator(4));
  EXPECT_TRUE(BitEqual(u1, u2));
  EXPECT_TRUE(BitEqual(n1, n2));
  EXPECT_TRUE(BitEqual(d1, d2));
  EXPECT_TRUE(BitEqual(i1, i2));
  EXPECT_TRUE(BitEqual(b1, b2));
  set_num_threads(3);
  EXPECT_TRUE(BitEqual(rand({kMillion}, Generator(11)), rand({kMillion}, Generator(11))));
}

TEST(RandomSeed, OneBigDrawEqualsItsPrefixes) {
  // Element i depends only on the seed, the offset and i: a longer draw extends a shorter one.
  Tensor small = rand({5}, Generator(8));
  Tensor big = rand({1001}, Generator(8));
  EXPECT_TRUE(BitEqual(small, big.slice(0, 0, 5)));
}

// ---------------------------------------------------------------------------------------
// Distributions

TEST(RandomDist, RandIsUniformInUnitInterval) {
  Tensor r = rand({kMillion}, Generator(1));
  EXPECT_EQ(r.dtype(), kFloat32);
  const Moments m = MomentsOf(r);
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, 1.0);
  EXPECT_NEAR(m.mean, 0.5, 0.005);
  EXPECT_NEAR(m.var, 1.0 / 12.0, 0.002);
  // Roughly a tenth of the values fall in each tenth of [0, 1).
  std::vector<int64_t> bins(10, 0);
  for (float x : Floats(r)) ++bins[static_cast<size_t>(x * 10)];
  for (int64_t c : bins) EXPECT_NEAR(static_cast<double>(c), 1e5, 2e3);
}

TEST(RandomDist, RandnIsStandardNormal) {
  Tensor r = randn({kMillion}, Generator(2));
  const Moments m = MomentsOf(r);
  EXPECT_NEAR(m.mean, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(m.var), 1.0, 0.01);
  EXPECT_LT(m.min, -3.5);
  EXPECT_GT(m.max, 3.5);
  int64_t within1 = 0;
  for (float x : Floats(r)) within1 += std::fabs(x) < 1.0f;
  EXPECT_NEAR(static_cast<double>(within1) / kMillion, 0.6827, 0.005);
  for (float x : Floats(r)) {
    if (!std::isfinite(x)) {
      ADD_FAILURE() << "non-finite normal sample " << x;
      break;
    }
  }
}

TEST(RandomDist, NormalWithMeanAndStd) {
  Tensor t = empty({kMillion});
  Tensor& ret = t.normal_(3.0, 2.0, Generator(3));
  EXPECT_TRUE(ret.is_same(t));
  Moments m = MomentsOf(t);
  EXPECT_NEAR(m.mean, 3.0, 0.02);
  EXPECT_NEAR(std::sqrt(m.var), 2.0, 0.02);

  Tensor n = normal(-1.0, 0.5, {kMillion}, Generator(4), kFloat64);
  EXPECT_EQ(n.dtype(), kFloat64);
  m = MomentsOf(n);
  EXPECT_NEAR(m.mean, -1.0, 0.005);
  EXPECT_NEAR(std::sqrt(m.var), 0.5, 0.005);

  // std = 0 gives the mean exactly.
  EXPECT_EQ(Floats(empty({5}).normal_(1.5, 0.0)), std::vector<float>(5, 1.5f));
}

TEST(RandomDist, UniformBounds) {
  Tensor t = empty({100000});
  t.uniform_(-2.0, 3.0, Generator(5));
  Moments m = MomentsOf(t);
  EXPECT_GE(m.min, -2.0);
  EXPECT_LT(m.max, 3.0);
  EXPECT_NEAR(m.mean, 0.5, 0.05);
  EXPECT_NEAR(m.var, 25.0 / 12.0, 0.05);
  EXPECT_LT(m.min, -1.99);
  EXPECT_GT(m.max, 2.99);

  Tensor d = empty({100000}, kFloat64);
  d.uniform_(10.0, 10.5, Generator(6));
  m = MomentsOf(d);
  EXPECT_GE(m.min, 10.0);
  EXPECT_LT(m.max, 10.5);
  EXPECT_NEAR(m.mean, 10.25, 0.01);
  // from == to gives that value.
  EXPECT_EQ(Floats(empty({3}).uniform_(4.0, 4.0)), std::vector<float>(3, 4.0f));
}

TEST(RandomDist, BernoulliFrequency) {
  Tensor t = empty({kMillion});
  t.bernoulli_(0.3, Generator(7));
  std::vector<float> v = Floats(t);
  int64_t ones_count = 0;
  for (float x : v) {
    ASSERT_TRUE(x == 0.0f || x == 1.0f) << x;
    ones_count += x == 1.0f;
  }
  EXPECT_NEAR(static_cast<double>(ones_count) / kMillion, 0.3, 0.003);

  EXPECT_EQ(Floats(empty({1000}).bernoulli_(0.0)), std::vector<float>(1000, 0.0f));
  EXPECT_EQ(Floats(empty({1000}).bernoulli_(1.0)), std::vector<float>(1000, 1.0f));
  EXPECT_EQ(Doubles(empty({1001}, kFloat64).bernoulli_(1.0)), std::vector<double>(1001, 1.0));
  EXPECT_EQ(Doubles(empty({1001}, kFloat64).bernoulli_(0.0)), std::vector<double>(1001, 0.0));

  // Integer and bool outputs hold 0/1.
  Tensor b = empty({10000}, kBool).bernoulli_(0.5, Generator(8));
  std::vector<bool> bv = b.to_vector<bool>();
  const auto trues = std::count(bv.begin(), bv.end(), true);
  EXPECT_NEAR(static_cast<double>(trues), 5000.0, 300.0);
  Tensor i = empty({1000}, kInt32).bernoulli_(0.5, Generator(9));
  for (int32_t x : i.to_vector<int32_t>()) ASSERT_TRUE(x == 0 || x == 1);
  Tensor d = empty({100000}, kFloat64).bernoulli_(0.75, Generator(10));
  EXPECT_NEAR(MomentsOf(d).mean, 0.75, 0.01);
}

TEST(RandomDist, Randint) {
  Tensor t = randint(3, 7, {10000}, Generator(11));
  EXPECT_EQ(t.dtype(), kInt64);
  std::set<int64_t> seen;
  for (int64_t x : Longs(t)) {
    ASSERT_GE(x, 3);
    ASSERT_LT(x, 7);
    seen.insert(x);
  }
  EXPECT_EQ(seen, (std::set<int64_t>{3, 4, 5, 6}));

  manual_seed(12);
  Tensor h = randint(5, {2, 50});
  EXPECT_EQ(h.dtype(), kInt64);
  EXPECT_EQ(h.sizes().vec(), (I64{2, 50}));
  for (int64_t x : Longs(h)) ASSERT_TRUE(x >= 0 && x < 5);

  Tensor neg = randint(-5, -2, {1000}, Generator(13));
  std::set<int64_t> seen_neg;
  for (int64_t x : Longs(neg)) seen_neg.insert(x);
  EXPECT_EQ(seen_neg, (std::set<int64_t>{-5, -4, -3}));

  // Other dtypes; the full int8 range.
  Tensor i8 = randint(-128, 128, {10000}, Generator(14), kInt8);
  EXPECT_EQ(i8.dtype(), kInt8);
  std::set<int64_t> s8;
  for (int64_t x : Longs(i8)) s8.insert(x);
  EXPECT_EQ(*s8.begin(), -128);
  EXPECT_EQ(*s8.rbegin(), 127);
  Tensor f = randint(0, 10, {1000}, Generator(15), kFloat32);
  EXPECT_EQ(f.dtype(), kFloat32);
  for (float x : Floats(f)) ASSERT_TRUE(x == std::floor(x) && x >= 0 && x < 10);

  // Ranges wider than 2^32 use 64-bit words.
  const int64_t big = int64_t{1} << 40;
  Tensor wide = randint(-big, big, {10000}, Generator(16));
  Moments m = MomentsOf(wide);
  EXPECT_GE(m.min, -static_cast<double>(big));
  EXPECT_LT(m.max, static_cast<double>(big));
  EXPECT_GT(m.max, 0.9 * static_cast<double>(big));
  EXPECT_LT(m.min, -0.9 * static_cast<double>(big));

  // A one-value range.
  EXPECT_EQ(Longs(randint(4, 5, {3})), (I64{4, 4, 4}));
}

TEST(RandomDist, RandintFullInt64Range) {
  const int64_t lo = INT64_MIN, hi = INT64_MAX;
  Tensor t = empty({10000}, kInt64);
  t.random_(lo, hi, Generator(17));
  bool neg = false, pos = false;
  for (int64_t x : Longs(t)) {
    ASSERT_LT(x, hi);
    neg = neg || x < 0;
    pos = pos || x > 0;
  }
  EXPECT_TRUE(neg);
  EXPECT_TRUE(pos);
}

TEST(RandomDist, RandpermIsAPermutation) {
  Tensor p = randperm(1000, Generator(18));
  EXPECT_EQ(p.dtype(), kInt64);
  I64 v = Longs(p);
  I64 sorted = v;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, Longs(arange(1000)));
  EXPECT_NE(v, sorted);  // shuffled
  // Depends on the seed, reproducible for a fixed seed.
  EXPECT_EQ(Longs(randperm(1000, Generator(18))), v);
  EXPECT_NE(Longs(randperm(1000, Generator(19))), v);
  manual_seed(18);
  EXPECT_EQ(Longs(randperm(1000)), v);

  EXPECT_EQ(randperm(0).numel(), 0);
  EXPECT_EQ(Longs(randperm(1)), (I64{0}));
  Tensor p32 = randperm(10, Generator(1), kInt32);
  EXPECT_EQ(p32.dtype(), kInt32);
  std::vector<int32_t> v32 = p32.to_vector<int32_t>();
  std::sort(v32.begin(), v32.end());
  EXPECT_EQ(v32, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(randperm(5, kFloat32).dtype(), kFloat32);

  // Each position sees every value about equally often.
  std::vector<int64_t> first(4, 0);
  Generator g(20);
  for (int i = 0; i < 4000; ++i) ++first[static_cast<size_t>(randperm(4, g)[0].item<int64_t>())];
  for (int64_t c : first) EXPECT_NEAR(static_cast<double>(c), 1000.0, 150.0);

  ExpectError([] { (void)randperm(-1); }, {"non-negative"});
  ExpectError([] { (void)randperm(300, kUInt8); }, {"uint8"});
  ExpectError([] { (void)randperm(3, kBool); }, {"bool"});
}

// ---------------------------------------------------------------------------------------
// Layouts and dtypes

TEST(RandomLayout, NonContiguousFillMatchesContiguousRowMajor) {
  // A transposed view (4x3 over 3x4 storage) gets the values a contiguous 4x3 tensor
  // gets from the same seed, in its own row-major order.
  Tensor base = zeros({3, 4});
  Tensor view = base.t();
  view.uniform_(0.0, 1.0, Generator(21));
  Tensor ref = empty({4, 3}).uniform_(0.0, 1.0, Generator(21));
  EXPECT_EQ(Floats(view), Floats(ref));
  EXPECT_EQ(Floats(base), Floats(ref.t()));

  Tensor nb = zeros({3, 4}, kFloat64);
  nb.t().normal_(0.0, 1.0, Generator(22));
  EXPECT_EQ(Doubles(nb.t()), Doubles(empty({4, 3}, kFloat64).normal_(0.0, 1.0, Generator(22))));

  // A strided slice: only the selected elements change.
  Tensor s = zeros({10});
  s.slice(0, 1, std::nullopt, 3).bernoulli_(1.0);
  EXPECT_EQ(Floats(s), (std::vector<float>{0, 1, 0, 0, 1, 0, 0, 1, 0, 0}));
  Tensor r = zeros({4, 6}, kInt64);
  r.slice(1, 0, std::nullopt, 2).random_(0, 1000, Generator(23));
  Tensor rref = empty({4, 3}, kInt64).random_(0, 1000, Generator(23));
  EXPECT_EQ(Longs(r.slice(1, 0, std::nullopt, 2)), Longs(rref));
  EXPECT_EQ(Longs(r.slice(1, 1, std::nullopt, 2)), I64(12, 0));

  // The fill is a write: the version counter moves for the view and the base.
  const uint32_t v = base._version();
  view.normal_();
  EXPECT_GT(base._version(), v);
  const uint32_t cv = ref._version();
  ref.uniform_();
  EXPECT_EQ(ref._version(), cv + 1);

  // Expanded tensors cannot be filled.
  ExpectError([] { zeros({3, 1}).expand({3, 4}).uniform_(); }, {"single memory location"});
}

TEST(RandomLayout, ReducedPrecisionAndDoubleOutputs) {
  for (DType dt : {kFloat16, kBFloat16, kFloat64, kFloat32}) {
    Tensor u = rand({200000}, Generator(24), dt);
    EXPECT_EQ(u.dtype(), dt);
    Moments m = MomentsOf(u);
    EXPECT_GE(m.min, 0.0) << dt;
    EXPECT_LT(m.max, 1.0) << dt;  // [0, 1) also after rounding to the narrow type
    EXPECT_NEAR(m.mean, 0.5, 0.01) << dt;
    Tensor n = randn({200000}, Generator(25), dt);
    m = MomentsOf(n);
    EXPECT_NEAR(m.mean, 0.0, 0.02) << dt;
    EXPECT_NEAR(std::sqrt(m.var), 1.0, 0.02) << dt;
    Tensor b = empty({200000}, dt).bernoulli_(0.25, Generator(26));
    EXPECT_NEAR(MomentsOf(b).mean, 0.25, 0.01) << dt;
  }
  // float64 draws are not float32 draws widened: they carry more than 24 random bits.
  std::vector<double> d = Doubles(rand({100}, Generator(27), kFloat64));
  int wide = 0;
  for (double x : d) wide += static_cast<double>(static_cast<float>(x)) != x;
  EXPECT_GT(wide, 90);
}

TEST(RandomLayout, EmptyTensors) {
  Generator g(28);
  Tensor e = rand({0, 3}, g);
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(randn({0}, g).numel(), 0);
  EXPECT_EQ(randint(0, 2, {0}, g).numel(), 0);
  // Nothing was drawn: the stream continues where it was.
  EXPECT_TRUE(BitEqual(rand({8}, g), rand({8}, Generator(28))));
}

TEST(RandomLayout, RequiresGradOption) {
  EXPECT_TRUE(rand({2}, requires_grad()).requires_grad());
  EXPECT_TRUE(randn({2}, requires_grad()).requires_grad());
  EXPECT_FALSE(rand({2}).requires_grad());
}

// ---------------------------------------------------------------------------------------
// Errors

TEST(RandomErrors, BadArguments) {
  ExpectError([] { zeros({3}, kInt64).uniform_(); }, {"floating", "int64"});
  ExpectError([] { (void)rand({3}, kInt32); }, {"floating"});
  ExpectError([] { zeros({3}).uniform_(2.0, 1.0); }, {"from=2", "to=1"});
  ExpectError([] { zeros({3}, kInt64).normal_(); }, {"floating"});
  ExpectError([] { zeros({3}).normal_(0.0, -1.0); }, {"std >= 0.0", "-1"});
  ExpectError([] { (void)normal(0.0, -0.5, {2}); }, {"std"});
  ExpectError([] { zeros({3}).bernoulli_(1.5); }, {"0 <= p <= 1", "1.5"});
  ExpectError([] { zeros({3}).bernoulli_(-0.1); }, {"0 <= p <= 1"});
  ExpectError([] { (void)randint(5, 5, {3}); }, {"from=5", "to=5"});
  ExpectError([] { (void)randint(7, 2, {3}); }, {"less than"});
  ExpectError([] { (void)randint(0, 300, {3}, kUInt8); }, {"does not fit", "uint8"});
  ExpectError([] { (void)randint(-1, 10, {3}, kUInt8); }, {"does not fit"});
  ExpectError([] { (void)randint(0, 129, {3}, kInt8); }, {"does not fit", "int8"});
  ExpectError([] { (void)randint(0, 3, {3}, kBool); }, {"does not fit", "bool"});
  ExpectError([] { (void)randint(0, (int64_t{1} << 31) + 1, {3}, kInt32); }, {"does not fit"});
  EXPECT_NO_THROW((void)randint(0, 2, {3}, kBool));
  EXPECT_NO_THROW((void)randint(INT32_MIN, int64_t{INT32_MAX} + 1, {3}, kInt32));
  ExpectError([] { Tensor().uniform_(); }, {"undefined"});
  // A failed call draws nothing and writes nothing.
  Tensor z = zeros({3});
  const uint32_t v = z._version();
  EXPECT_THROW(z.normal_(0.0, -1.0), Error);
  EXPECT_EQ(z._version(), v);
  EXPECT_EQ(Floats(z), std::vector<float>(3, 0.0f));
}

}  // namespace
}  // namespace ember
