// bench/ops: element-wise ops, reductions, softmax, matmul and indexing
// (bench/harness.h: built once against ember and once against libtorch;
// bench/run.py runs each case in its own process and prints ember/torch).

#include <cstdint>
#include <memory>

#include "harness.h"

namespace {

using bench::Case;
using bench::clear_grad;
using bench::keep;
using bench::Limit;
using bench::Tensor;

constexpr int64_t kBig = 16 * 1024 * 1024;  // 64 MB of float32: far beyond the caches
constexpr double kBigBytes = kBig * 4.0;
constexpr int64_t kRows = 4096;  // softmax / reductions over a 4096x4096 matrix
constexpr double kMatBytes = kRows * kRows * 4.0;

// A case on one or two random float32 vectors (or matrices) of the given shape.
Case unary(std::string name, std::vector<int64_t> shape, std::function<Tensor(Tensor &)> f, double bytes, Limit limit,
           int reps = 15, int inner = 1) {
  return {std::move(name),
          [shape, f] {
            auto a = std::make_shared<Tensor>(lib::randn(shape));
            return std::function<void()>([a, f] { keep(f(*a)); });
          },
          reps,
          inner,
          bytes,
          0,
          limit};
}

Case binary(std::string name, std::vector<int64_t> shape, std::function<Tensor(Tensor &, Tensor &)> f, double bytes,
            Limit limit, int reps = 15, int inner = 1) {
  return {std::move(name),
          [shape, f] {
            auto a = std::make_shared<Tensor>(lib::randn(shape));
            auto b = std::make_shared<Tensor>(lib::randn(shape));
            return std::function<void()>([a, b, f] { keep(f(*a, *b)); });
          },
          reps,
          inner,
          bytes,
          0,
          limit};
}

Case matmul(int64_t n) {
  const double flops = 2.0 * n * n * n;
  return {"matmul " + std::to_string(n),
          [n] {
            auto a = std::make_shared<Tensor>(lib::randn({n, n}));
            return std::function<void()>([a] { keep(a->matmul(*a)); });
          },
          n >= 2048 ? 5 : 15,
          n <= 256 ? 10 : 1,
          0,
          flops,
          Limit::Gemm};
}

std::vector<Case> cases() {
  const std::vector<int64_t> tiny{10}, big{kBig}, mat{kRows, kRows};
  return {
      // Per-op overhead: a 10-element op, timed per call.
      binary(
          "add 10 elements (per call)", tiny, [](Tensor &a, Tensor &b) { return a + b; }, 0, Limit::None, 21, 5000),
      unary(
          "relu 10 elements (per call)", tiny, [](Tensor &a) { return a.relu(); }, 0, Limit::None, 21, 5000),
      {"add 10 elements, no grad mode (per call)",
       [] {
         auto a = std::make_shared<Tensor>(lib::randn({10})), b = std::make_shared<Tensor>(lib::randn({10}));
         return std::function<void()>([a, b] {
           lib::NoGradGuard g;
           keep(*a + *b);
         });
       },
       21, 5000},
      // Memory-bound element-wise ops (bytes: inputs read + output written).
      binary(
          "add 16M", big, [](Tensor &a, Tensor &b) { return a + b; }, 3 * kBigBytes, Limit::Copy),
      binary(
          "mul 16M", big, [](Tensor &a, Tensor &b) { return a * b; }, 3 * kBigBytes, Limit::Copy),
      unary(
          "exp 16M", big, [](Tensor &a) { return a.exp(); }, 2 * kBigBytes, Limit::Copy),
      unary(
          "tanh 16M", big, [](Tensor &a) { return a.tanh(); }, 2 * kBigBytes, Limit::Copy),
      binary(
          "add_ 16M (in place)", big, [](Tensor &a, Tensor &b) { return a.add_(b); }, 3 * kBigBytes, Limit::Copy),
      unary(
          "clamp_ 16M (in place)", big, [](Tensor &a) { return a.clamp_(-10, 10); }, 2 * kBigBytes, Limit::Copy),
      // Reductions (bytes: the input read once).
      unary(
          "sum 16M", big, [](Tensor &a) { return a.sum(); }, kBigBytes, Limit::Read),
      unary(
          "mean 16M", big, [](Tensor &a) { return a.mean(); }, kBigBytes, Limit::Read),
      unary(
          "sum rows 4096x4096 (dim 1)", mat, [](Tensor &a) { return a.sum(1); }, kMatBytes, Limit::Read),
      unary(
          "sum columns 4096x4096 (dim 0)", mat, [](Tensor &a) { return a.sum(0); }, kMatBytes, Limit::Read),
      unary(
          "mean rows 4096x4096 (dim 1)", mat, [](Tensor &a) { return a.mean({1}); }, kMatBytes, Limit::Read),
      unary(
          "amax rows 4096x4096 (dim 1)", mat, [](Tensor &a) { return a.amax({1}); }, kMatBytes, Limit::Read),
      unary(
          "amax columns 4096x4096 (dim 0)", mat, [](Tensor &a) { return a.amax({0}); }, kMatBytes, Limit::Read),
      unary(
          "var rows 4096x4096 (dim 1)", mat, [](Tensor &a) { return a.var({1}); }, kMatBytes, Limit::Read),
      unary(
          "var columns 4096x4096 (dim 0)", mat, [](Tensor &a) { return a.var({0}); }, kMatBytes, Limit::Read),
      // Row-wise normalisations (bytes: input read + output written).
      unary(
          "softmax rows 4096x4096", mat, [](Tensor &a) { return a.softmax(1); }, 2 * kMatBytes, Limit::Copy, 10),
      unary(
          "log_softmax rows 4096x4096", mat, [](Tensor &a) { return a.log_softmax(1); }, 2 * kMatBytes, Limit::Copy,
          10),
      unary(
          "softmax columns 4096x4096 (dim 0)", mat, [](Tensor &a) { return a.softmax(0); }, 2 * kMatBytes, Limit::Copy,
          10),
      {"cross_entropy 4096x1000 (mean)",
       [] {
         auto x = std::make_shared<Tensor>(lib::randn({4096, 1000}));
         auto t = std::make_shared<Tensor>(lib::randint(0, 1000, {4096}));
         return std::function<void()>([x, t] { keep(lib::nn::functional::cross_entropy(*x, *t)); });
       },
       15, 1, 4096 * 1000 * 4.0, 0, Limit::Read},
      // Forward and backward: the logits read twice, their gradient written once.
      {"cross_entropy 4096x1000 (mean) fwd+bwd",
       [] {
         auto x = std::make_shared<Tensor>(lib::randn({4096, 1000}).requires_grad_());
         auto t = std::make_shared<Tensor>(lib::randint(0, 1000, {4096}));
         return std::function<void()>([x, t] {
           lib::nn::functional::cross_entropy(*x, *t).backward();
           clear_grad(*x);
         });
       },
       15, 1, 3 * 4096 * 1000 * 4.0, 0, Limit::Copy},
      // GEMM (flops: 2 n^3).
      matmul(256),
      matmul(1024),
      matmul(2048),
      {"bmm 64x(128x128)",
       [] {
         auto a = std::make_shared<Tensor>(lib::randn({64, 128, 128}));
         return std::function<void()>([a] { keep(a->bmm(*a)); });
       },
       15, 1, 0, 2.0 * 64 * 128 * 128 * 128, Limit::Gemm},
      // Copies and gathers.
      {"cat 2x(500k,16) -> 1M rows",
       [] {
         auto a = std::make_shared<Tensor>(lib::randn({500000, 16})),
              b = std::make_shared<Tensor>(lib::randn({500000, 16}));
         return std::function<void()>([a, b] { keep(lib::cat({*a, *b})); });
       },
       15, 1, 2 * 1000000 * 16 * 4.0, 0, Limit::Copy},
      {"index_select 1M rows of 16",
       [] {
         auto table = std::make_shared<Tensor>(lib::randn({1000000, 16}));
         auto idx = std::make_shared<Tensor>(lib::randperm(1000000));
         return std::function<void()>([table, idx] { keep(table->index_select(0, *idx)); });
       },
       15, 1, 1000000 * (2 * 16 * 4.0 + 8), 0, Limit::Copy},
  };
}

}  // namespace

int main(int argc, char **argv) { return bench::main_with_cases(argc, argv, cases()); }
