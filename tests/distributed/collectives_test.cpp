// Every collective against a single-process reference, for each dtype, on 2 and 3 real
// processes; fingerprint mismatches and timeouts (Note [Hang-proof collectives]).

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <thread>

#include "ember/distributed/distributed.h"
#include "ember/ember.h"
#include "tests/distributed/harness.h"

namespace dist = ember::distributed;
using ember::Tensor;

namespace collectives_test {

const std::vector<ember::DType> kDTypes = {ember::kFloat32, ember::kFloat64, ember::kInt32,    ember::kInt64,
                                           ember::kUInt8,   ember::kInt8,    ember::kBFloat16, ember::kFloat16};

// Rank r's input: small integers (exact in every dtype, sums and products included).
std::vector<double> values(int r, int64_t n, int salt = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>((i * 7 + r * 3 + salt) % 4 + 1);
  return v;
}

Tensor make(int r, std::vector<int64_t> shape, ember::DType dt, int salt = 0) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return ember::tensor(values(r, n, salt)).to(dt).reshape(shape).contiguous();
}

std::vector<double> as_doubles(const Tensor& t) { return t.to(ember::kFloat64).contiguous().to_vector<double>(); }

// Exact unless rtol is given.
void expect_equal(const Tensor& got, const std::vector<double>& want, const std::string& what, double rtol = 0) {
  auto g = as_doubles(got);
  WCHECK(g.size() == want.size(), << what << ": " << g.size() << " elements, want " << want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    WCHECK(std::abs(g[i] - want[i]) <= rtol * std::abs(want[i]),
           << what << ": element " << i << " is " << g[i] << ", want " << want[i]);
  }
}

std::string dname(ember::DType d) { return std::string(ember::dtype_name(d)); }

int run_all_collectives() {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  WCHECK(dist::get_backend() == dist_test::backend(), << dist::get_backend());
  const std::vector<int64_t> shape{2, 3};
  const int64_t n = 6;
  for (ember::DType dt : kDTypes) {
    const std::string d = dname(dt);
    // all_reduce: every op.
    for (auto op : {dist::ReduceOp::SUM, dist::ReduceOp::MIN, dist::ReduceOp::MAX, dist::ReduceOp::PRODUCT,
                    dist::ReduceOp::AVG}) {
      if (op == dist::ReduceOp::AVG && !ember::is_floating_point(dt)) continue;
      Tensor t = make(rank, shape, dt);
      dist::all_reduce(t, op);
      std::vector<double> want = values(0, n);
      for (int r = 1; r < world; ++r) {
        auto v = values(r, n);
        for (int64_t i = 0; i < n; ++i) {
          double& w = want[static_cast<size_t>(i)];
          const double x = v[static_cast<size_t>(i)];
          switch (op) {
            case dist::ReduceOp::SUM:
            case dist::ReduceOp::AVG:
              w += x;
              break;
            case dist::ReduceOp::MIN:
              w = std::min(w, x);
              break;
            case dist::ReduceOp::MAX:
              w = std::max(w, x);
              break;
            case dist::ReduceOp::PRODUCT:
              w *= x;
              break;
          }
        }
      }
      double rtol = 0;
      if (op == dist::ReduceOp::AVG) {
        for (auto& w : want) w /= world;
        // The mean rounds to the dtype (16-bit floats: 8 or 11 significant bits).
        rtol = dt == ember::kBFloat16 ? 8e-3 : dt == ember::kFloat16 ? 1e-3 : 1e-6;
      }
      expect_equal(t, want, "all_reduce " + std::string(dist::reduce_op_name(op)) + " " + d, rtol);
    }
    // broadcast from the last rank.
    {
      Tensor t = make(rank, shape, dt);
      dist::broadcast(t, world - 1);
      expect_equal(t, values(world - 1, n), "broadcast " + d);
    }
    // reduce to rank 0.
    {
      Tensor t = make(rank, shape, dt);
      dist::reduce(t, 0, dist::ReduceOp::SUM);
      if (rank == 0) {
        std::vector<double> want(static_cast<size_t>(n), 0.0);
        for (int r = 0; r < world; ++r)
          for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] += values(r, n)[static_cast<size_t>(i)];
        expect_equal(t, want, "reduce " + d);
      }
    }
    // all_gather and all_gather_into_tensor.
    {
      Tensor t = make(rank, shape, dt);
      std::vector<Tensor> outs;
      for (int r = 0; r < world; ++r) outs.push_back(ember::zeros(shape, ember::TensorOptions(dt)));
      dist::all_gather(outs, t);
      for (int r = 0; r < world; ++r) expect_equal(outs[static_cast<size_t>(r)], values(r, n), "all_gather " + d);
      Tensor flat = ember::zeros({world * n}, ember::TensorOptions(dt));
      dist::all_gather_into_tensor(flat, t);
      for (int r = 0; r < world; ++r)
        expect_equal(flat.narrow(0, r * n, n), values(r, n), "all_gather_into_tensor " + d);
    }
    // reduce_scatter: rank r gets the sum of every rank's input_list[r].
    {
      std::vector<Tensor> ins;
      for (int j = 0; j < world; ++j) ins.push_back(make(rank, shape, dt, j));
      Tensor out = ember::zeros(shape, ember::TensorOptions(dt));
      dist::reduce_scatter(out, ins, dist::ReduceOp::SUM);
      std::vector<double> want(static_cast<size_t>(n), 0.0);
      for (int r = 0; r < world; ++r)
        for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] += values(r, n, rank)[static_cast<size_t>(i)];
      expect_equal(out, want, "reduce_scatter " + d);
    }
    // reduce_scatter_tensor (the ring): SUM and MAX over a flat input.
    for (auto op : {dist::ReduceOp::SUM, dist::ReduceOp::MAX}) {
      const int64_t m = 7;
      Tensor in = make(rank, {world * m}, dt, 5), out = ember::zeros({m}, ember::TensorOptions(dt));
      dist::reduce_scatter_tensor(out, in, op);
      std::vector<double> want(static_cast<size_t>(m));
      for (int64_t i = 0; i < m; ++i) {
        double w = values(0, world * m, 5)[static_cast<size_t>(rank * m + i)];
        for (int r = 1; r < world; ++r) {
          const double x = values(r, world * m, 5)[static_cast<size_t>(rank * m + i)];
          w = op == dist::ReduceOp::SUM ? w + x : std::max(w, x);
        }
        want[static_cast<size_t>(i)] = w;
      }
      expect_equal(out, want, "reduce_scatter_tensor " + std::string(dist::reduce_op_name(op)) + " " + d);
    }
    // all_to_all_single with uneven splits: rank r sends (r + 2j) % 3 rows of 2 to rank j.
    {
      auto rows = [](int from, int to) { return static_cast<int64_t>((from + 2 * to) % 3); };
      std::vector<Tensor> parts;
      std::vector<int64_t> in_splits, out_splits;
      int64_t out_rows = 0;
      for (int j = 0; j < world; ++j) {
        in_splits.push_back(rows(rank, j));
        out_splits.push_back(rows(j, rank));
        out_rows += rows(j, rank);
        parts.push_back(make(rank * 10 + j, {rows(rank, j), 2}, dt));
      }
      Tensor in = ember::cat(parts, 0), out = ember::zeros({out_rows, 2}, ember::TensorOptions(dt));
      dist::all_to_all_single(out, in, out_splits, in_splits);
      int64_t at = 0;
      for (int j = 0; j < world; ++j) {
        expect_equal(out.narrow(0, at, rows(j, rank)), values(j * 10 + rank, rows(j, rank) * 2),
                     "uneven all_to_all_single from rank " + std::to_string(j) + " " + d);
        at += rows(j, rank);
      }
    }
    // gather to rank 0, scatter from rank 1.
    {
      Tensor t = make(rank, shape, dt);
      std::vector<Tensor> outs;
      if (rank == 0)
        for (int r = 0; r < world; ++r) outs.push_back(ember::zeros(shape, ember::TensorOptions(dt)));
      dist::gather(t, outs, 0);
      if (rank == 0)
        for (int r = 0; r < world; ++r) expect_equal(outs[static_cast<size_t>(r)], values(r, n), "gather " + d);
      std::vector<Tensor> ins;
      if (rank == 1)
        for (int r = 0; r < world; ++r) ins.push_back(make(100 + r, shape, dt));
      Tensor out = ember::zeros(shape, ember::TensorOptions(dt));
      dist::scatter(out, ins, 1);
      expect_equal(out, values(100 + rank, n), "scatter " + d);
    }
    // all_to_all: input j of rank r is values(r * 10 + j); rank r receives input r of each rank j.
    {
      std::vector<Tensor> ins, outs;
      for (int j = 0; j < world; ++j) {
        ins.push_back(make(rank * 10 + j, shape, dt));
        outs.push_back(ember::zeros(shape, ember::TensorOptions(dt)));
      }
      dist::all_to_all(outs, ins);
      for (int j = 0; j < world; ++j)
        expect_equal(outs[static_cast<size_t>(j)], values(j * 10 + rank, n), "all_to_all " + d);
      Tensor in = ember::cat(ins, 0), out = ember::zeros_like(in);
      dist::all_to_all_single(out, in);
      for (int j = 0; j < world; ++j)
        expect_equal(out.narrow(0, j * shape[0], shape[0]), values(j * 10 + rank, n), "all_to_all_single " + d);
    }
    // send/recv around the ring.
    {
      Tensor t = make(rank, shape, dt);
      Tensor got = ember::zeros(shape, ember::TensorOptions(dt));
      auto s = dist::isend(t, (rank + 1) % world);
      const int from = dist::recv(got, (rank + world - 1) % world);
      s->wait();
      WCHECK(from == (rank + world - 1) % world, << "recv reported rank " << from);
      expect_equal(got, values((rank + world - 1) % world, n), "send/recv " + d);
    }
  }
  // Non-contiguous tensors are reduced in place through a copy.
  {
    Tensor base = make(rank, {3, 4}, ember::kFloat32);
    Tensor t = base.t();
    dist::all_reduce(t);
    std::vector<double> want(12, 0.0);
    for (int r = 0; r < world; ++r)
      for (int i = 0; i < 12; ++i) want[static_cast<size_t>(i)] += values(r, 12)[static_cast<size_t>(i)];
    expect_equal(base, want, "all_reduce of a transposed view");
    Tensor b2 = make(rank, {4, 3}, ember::kFloat64);
    Tensor col = b2.select(1, 1);  // stride 3
    dist::broadcast(col, 0);
    expect_equal(col, {values(0, 12)[1], values(0, 12)[4], values(0, 12)[7], values(0, 12)[10]},
                 "broadcast of a column");
  }
  // Async: two reductions in flight, then wait.
  {
    Tensor a = make(rank, {1000}, ember::kFloat32), b = make(rank, {10}, ember::kInt64);
    auto wa = dist::all_reduce(a, dist::ReduceOp::SUM, nullptr, true);
    auto wb = dist::all_reduce(b, dist::ReduceOp::MAX, nullptr, true);
    wb->wait(std::chrono::seconds(10));
    wa->wait(std::chrono::seconds(10));
    WCHECK(wa->is_completed() && wa->is_success());
    std::vector<double> want(1000, 0.0);
    for (int r = 0; r < world; ++r)
      for (int i = 0; i < 1000; ++i) want[static_cast<size_t>(i)] += values(r, 1000)[static_cast<size_t>(i)];
    expect_equal(a, want, "async all_reduce");
  }
  // A large all_reduce (several Gloo segments).
  {
    Tensor t = ember::full({1 << 20}, static_cast<double>(rank + 1), ember::TensorOptions(ember::kFloat32));
    dist::all_reduce(t);
    const double want = world * (world + 1) / 2.0;
    WCHECK(t.min().item<float>() == want && t.max().item<float>() == want);
  }
  dist::barrier();
  WCHECK(dist::default_group()->sequence_number() > 50);
  dist::destroy_process_group();
  std::cout << "rank " << rank << " ok" << std::endl;
  return 0;
}

DIST_SCENARIO(all_collectives) { return run_all_collectives(); }

// Rank 0 calls all_reduce, rank 1 broadcast (2 ranks); then (3 ranks) one rank passes
// another shape. Every rank must raise and name both calls.
DIST_SCENARIO(mismatch_op) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(10)});
  const int rank = dist::get_rank();
  Tensor t = ember::ones({1024});
  dist::all_reduce(t);  // collective #1 matches
  try {
    if (rank == 0) {
      dist::all_reduce(t);
    } else {
      dist::broadcast(t, 0);
    }
    std::cout << "no error" << std::endl;
    return 1;
  } catch (const ember::Error& e) {
    std::cout << "error: " << e.what() << std::endl;
  }
  // The group stays usable after a mismatch (every rank saw it).
  dist::all_reduce(t);
  WCHECK(t[0].item<float>() == 4.0f * 1, << "got " << t[0].item<float>());
  // A small all_reduce travels inside the fingerprint exchange (Note [Fused small
  // all-reduce]); a mismatch against it is still caught before any data is used.
  Tensor small = ember::full({16}, static_cast<double>(rank + 1));
  try {
    if (rank == 0) {
      dist::all_reduce(small);
    } else {
      dist::broadcast(small, 0);
    }
    std::cout << "no error" << std::endl;
    return 1;
  } catch (const ember::Error& e) {
    std::cout << "small: " << e.what() << std::endl;
  }
  WCHECK(small[0].item<float>() == static_cast<float>(rank + 1), << "the failed call changed the tensor");
  dist::all_reduce(small);
  WCHECK(small[15].item<float>() == 3.0f, << "got " << small[15].item<float>());
  dist::destroy_process_group();
  return 0;
}

DIST_SCENARIO(mismatch_shape) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(10)});
  const int rank = dist::get_rank();
  Tensor t = rank == 2 ? ember::ones({2, 5}, ember::TensorOptions(ember::kFloat64))
                       : ember::ones({2, 4}, ember::TensorOptions(ember::kFloat64));
  try {
    dist::all_reduce(t, dist::ReduceOp::MAX);
    std::cout << "no error" << std::endl;
    return 1;
  } catch (const ember::Error& e) {
    std::cout << "error: " << e.what() << std::endl;
  }
  dist::destroy_process_group();
  return 0;
}

// Rank 1 skips the second collective; rank 0 must fail within the 2 s timeout, naming
// rank 1.
DIST_SCENARIO(skip_collective) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(2)});
  const int rank = dist::get_rank();
  Tensor t = ember::ones({16});
  dist::all_reduce(t);
  if (rank == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));
    std::cout << "rank 1 slept" << std::endl;
    dist::destroy_process_group();
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    dist::all_reduce(t);
    std::cout << "no error" << std::endl;
    return 1;
  } catch (const ember::Error& e) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "error after " << s << " s: " << e.what() << std::endl;
    WCHECK(s < 4.0, << "took " << s << " s");
  }
  // The group is unusable now, and says so at once.
  try {
    dist::barrier();
    return 1;
  } catch (const ember::Error& e) {
    std::cout << "then: " << e.what() << std::endl;
  }
  dist::destroy_process_group();
  return 0;
}

// Rank 1 dies before the second collective: rank 0 fails at once (not after its 20 s
// timeout), naming rank 1.
DIST_SCENARIO(rank_dies) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank();
  Tensor t = ember::ones({16});
  dist::all_reduce(t);
  if (rank == 1) std::_Exit(7);
  const auto start = std::chrono::steady_clock::now();
  try {
    dist::all_reduce(t);
    return 1;
  } catch (const ember::Error& e) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "error after " << s << " s: " << e.what() << std::endl;
    WCHECK(s < 10.0, << "took " << s << " s");
  }
  dist::destroy_process_group();
  return 0;
}

// Work::wait with a timeout: an all_reduce whose peer is late is still running after
// 100 ms; waiting again without a limit completes it.
DIST_SCENARIO(wait_timeout) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank();
  Tensor t = ember::ones({8});
  if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(800));
  auto w = dist::all_reduce(t, dist::ReduceOp::SUM, nullptr, /*async_op=*/true);
  if (rank == 0) {
    try {
      w->wait(std::chrono::milliseconds(100));
      return 1;
    } catch (const ember::Error& e) {
      std::cout << "early: " << e.what() << std::endl;
    }
    WCHECK(!w->is_completed());
  }
  w->wait();
  WCHECK(w->is_success() && t[0].item<float>() == 2.0f);
  dist::destroy_process_group();
  return 0;
}

// Subgroups: ranks {0, 2} of 3 reduce among themselves; rank 1 is not a member.
DIST_SCENARIO(subgroup) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank();
  auto g = dist::new_group({2, 0});
  WCHECK((g == nullptr) == (rank == 1));
  if (g) {
    WCHECK(dist::get_world_size(g) == 2);
    WCHECK(dist::get_rank(g) == (rank == 0 ? 0 : 1));
    Tensor t = ember::full({4}, static_cast<double>(rank + 1));
    dist::all_reduce(t, dist::ReduceOp::SUM, g);
    WCHECK(t[0].item<float>() == 4.0f, << t[0].item<float>());  // ranks 0 and 2: 1 + 3
    Tensor b = ember::full({2}, static_cast<double>(rank));
    dist::broadcast(b, 2, g);  // global rank 2 is the source
    WCHECK(b[1].item<float>() == 2.0f);
  }
  Tensor all = ember::ones({3});
  dist::all_reduce(all);
  WCHECK(all[0].item<float>() == 3.0f);
  dist::destroy_process_group();
  return 0;
}

// init_method tcp:// and file://, with explicit rank and world size.
DIST_SCENARIO(init_methods) {
  const int rank = std::stoi(std::getenv("RANK")), world = std::stoi(std::getenv("WORLD_SIZE"));
  const std::string tcp = std::string("tcp://127.0.0.1:") + std::getenv("MASTER_PORT");
  dist::init_process_group(
      {.init_method = tcp, .rank = rank, .world_size = world, .timeout = std::chrono::seconds(10)});
  Tensor t = ember::ones({5});
  dist::all_reduce(t);
  WCHECK(t[4].item<float>() == static_cast<float>(world));
  dist::destroy_process_group();
  const std::string file = std::string("file://") + std::getenv("EMBER_TEST_TMP") + "/store";
  dist::init_process_group(
      {.init_method = file, .rank = rank, .world_size = world, .timeout = std::chrono::seconds(10)});
  Tensor u = ember::full({3}, 2.0);
  dist::all_reduce(u, dist::ReduceOp::PRODUCT);
  WCHECK(u[0].item<float>() == std::pow(2.0f, static_cast<float>(world)));
  dist::barrier();
  dist::destroy_process_group();
  return 0;
}

// Uneven all_to_all_single whose splits disagree across ranks: every rank raises, naming
// the pair, and the group stays usable.
DIST_SCENARIO(bad_splits) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(10)});
  const int rank = dist::get_rank();
  const std::vector<int64_t> in_splits = rank == 0 ? std::vector<int64_t>{1, 1} : std::vector<int64_t>{2, 1};
  Tensor in = ember::ones({rank == 0 ? 2 : 3, 4}), out = ember::zeros({2, 4});
  try {
    dist::all_to_all_single(out, in, {1, 1}, in_splits);
    std::cout << "no error" << std::endl;
    return 1;
  } catch (const ember::Error& e) {
    std::cout << "error: " << e.what() << std::endl;
  }
  dist::barrier();
  dist::destroy_process_group();
  return 0;
}

// Errors that need no other rank: bad arguments name the call.
DIST_SCENARIO(argument_errors) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(10)});
  int errors = 0;
  auto expect_error = [&](const std::function<void()>& f, const std::string& text) {
    try {
      f();
    } catch (const ember::Error& e) {
      const std::string w = e.what();
      WCHECK(w.find(text) != std::string::npos, << "error '" << w << "' lacks '" << text << "'");
      ++errors;
      return;
    }
    WCHECK(false, << "no error, expected '" << text << "'");
  };
  expect_error([] { dist::all_reduce(ember::ones({3}, ember::TensorOptions(ember::kInt32)), dist::ReduceOp::AVG); },
               "[all_reduce] ReduceOp::AVG needs a floating-point tensor");
  expect_error([] { dist::broadcast(ember::ones({3}), 5); }, "[broadcast] src rank 5 is not a member");
  expect_error(
      [] {
        std::vector<Tensor> outs{ember::zeros({3})};
        dist::all_gather(outs, ember::ones({3}));
      },
      "[all_gather] tensor_list has 1 tensors; it needs one per rank (2)");
  expect_error([] { dist::all_to_all_single(ember::zeros({3}), ember::ones({3})); },
               "[all_to_all_single] the input's first dim (3) must divide evenly by world_size (2)");
  expect_error(
      [] {
        dist::all_to_all_single(ember::zeros({3}), ember::ones({3}), {1, 2}, {2, 2});
      },
      "[all_to_all_single] input_split_sizes sum to 4 but the input's first dim is 3");
  expect_error([] { dist::reduce_scatter_tensor(ember::zeros({3}), ember::ones({5})); },
               "[reduce_scatter_tensor] the input (f32 with 5 elements) must have the output's dtype (f32) and "
               "world_size (2) times its elements (6)");
  // Nothing above reached the other rank: the group is in step.
  dist::barrier();
  dist::destroy_process_group();
  expect_error([] { dist::barrier(); }, "[barrier] the default process group is not initialized");
  return errors == 7 ? 0 : 1;
}

// Note [Sync lane]: sizes on both sides of the lane's 256 KB limit, more distinct sizes than
// its cache holds (so entries are evicted and rebuilt), in two passes, with and without the
// fingerprint checks (the test runs it both ways); every result checked exactly.
DIST_SCENARIO(lane_sizes) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const std::vector<int64_t> sizes = {1, 3, 256, 257, 1000, 4096, 16384, 65535, 65536, 65537, 100000};
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t n : sizes) {
      for (ember::DType dt : {ember::kFloat32, ember::kFloat64}) {
        const std::string what = "n=" + std::to_string(n) + " pass " + std::to_string(pass);
        Tensor t = make(rank, {n}, dt, pass);
        dist::all_reduce(t);
        std::vector<double> want(static_cast<size_t>(n), 0.0);
        for (int r = 0; r < world; ++r) {
          auto v = values(r, n, pass);
          for (size_t i = 0; i < want.size(); ++i) want[i] += v[i];
        }
        expect_equal(t, want, "all_reduce " + what);
        Tensor m = make(rank, {n}, dt, pass);
        dist::all_reduce(m, dist::ReduceOp::MAX);
        std::vector<double> wmax = values(0, n, pass);
        for (int r = 1; r < world; ++r) {
          auto v = values(r, n, pass);
          for (size_t i = 0; i < wmax.size(); ++i) wmax[i] = std::max(wmax[i], v[i]);
        }
        expect_equal(m, wmax, "all_reduce MAX " + what);
        Tensor b = make(rank, {n}, dt, pass);
        dist::broadcast(b, world - 1);
        expect_equal(b, values(world - 1, n, pass), "broadcast " + what);
      }
      std::vector<Tensor> gathered;
      for (int r = 0; r < world; ++r) gathered.push_back(ember::zeros({n}));
      dist::all_gather(gathered, make(rank, {n}, ember::kFloat32, pass));
      for (int r = 0; r < world; ++r) expect_equal(gathered[static_cast<size_t>(r)], values(r, n, pass), "all_gather");
    }
    dist::barrier();
  }
  dist::destroy_process_group();
  return 0;
}

}  // namespace collectives_test

using dist_test::run_ranks;

TEST(DistributedCollectives, EveryCollectiveTwoRanks) {
  auto r = run_ranks("all_collectives", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
}

TEST(DistributedCollectives, EveryCollectiveThreeRanks) {
  auto r = run_ranks("all_collectives", 3, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
}

TEST(DistributedCollectives, MismatchedOpRaisesOnEveryRank) {
  auto r = run_ranks("mismatch_op", 2, 30);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_NE(r.ranks[0].output.find("[all_reduce] collective #2 mismatch: rank 0 called all_reduce(f32[1024], SUM), "
                                   "rank 1 called broadcast(f32[1024], root=0)"),
            std::string::npos)
      << r.dump();
  EXPECT_NE(r.ranks[1].output.find("[broadcast] collective #2 mismatch: rank 0 called all_reduce(f32[1024], SUM), "
                                   "rank 1 called broadcast(f32[1024], root=0)"),
            std::string::npos)
      << r.dump();
  for (const auto& rr : r.ranks)
    EXPECT_NE(rr.output.find("collective #4 mismatch: rank 0 called all_reduce(f32[16], SUM), rank 1 called "
                             "broadcast(f32[16], root=0)"),
              std::string::npos)
        << r.dump();
}

TEST(DistributedCollectives, MismatchedShapeNamesTheOddRank) {
  auto r = run_ranks("mismatch_shape", 3, 30);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  for (int k = 0; k < 3; ++k) {
    EXPECT_NE(r.ranks[static_cast<size_t>(k)].output.find(
                  "[all_reduce] collective #1 mismatch: ranks 0, 1 called all_reduce(f64[2, 4], MAX), rank 2 called "
                  "all_reduce(f64[2, 5], MAX)"),
              std::string::npos)
        << r.dump();
  }
}

TEST(DistributedCollectives, TimeoutNamesTheRankThatNeverArrived) {
  auto r = run_ranks("skip_collective", 2, 30);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  const std::string& out = r.ranks[0].output;
  EXPECT_NE(out.find("[all_reduce] collective #2 all_reduce(f32[16], SUM) did not complete within 2000 ms: rank 1 "
                     "never arrived (its last recorded collective was #1 all_reduce(f32[16], SUM)); rank 0 reached it"),
            std::string::npos)
      << r.dump();
  EXPECT_NE(out.find("then: [barrier] the process group is unusable after an earlier failure"), std::string::npos)
      << r.dump();
}

TEST(DistributedCollectives, DeadRankIsNamedAtOnce) {
  auto r = run_ranks("rank_dies", 2, 30);
  ASSERT_EQ(r.ranks[0].exit_code, 0) << r.dump();
  EXPECT_EQ(r.ranks[1].exit_code, 7) << r.dump();
  // (Whether rank 1's progress record was written before it died depends on timing.)
  EXPECT_NE(r.ranks[0].output.find("[all_reduce] collective #2 all_reduce(f32[16], SUM) failed: rank 1 never arrived "),
            std::string::npos)
      << r.dump();
  EXPECT_NE(r.ranks[0].output.find("; rank 0 reached it. Transport: "), std::string::npos) << r.dump();
}

TEST(DistributedCollectives, WorkWaitTimeout) {
  auto r = run_ranks("wait_timeout", 2, 30);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_NE(r.ranks[0].output.find("early: [wait] all_reduce did not complete within 100 ms"), std::string::npos)
      << r.dump();
}

TEST(DistributedCollectives, Subgroup) {
  auto r = run_ranks("subgroup", 3, 30);
  ASSERT_TRUE(r.all_ok()) << r.dump();
}

TEST(DistributedCollectives, InitMethodsTcpAndFile) {
  auto r = run_ranks("init_methods", 2, 30);
  ASSERT_TRUE(r.all_ok()) << r.dump();
}

TEST(DistributedCollectives, ArgumentErrorsNameTheCall) {
  auto r = run_ranks("argument_errors", 2, 30);
  ASSERT_TRUE(r.all_ok()) << r.dump();
}

TEST(DistributedCollectives, UnevenAllToAllSplitsMustAgree) {
  auto r = run_ranks("bad_splits", 2, 30);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  for (const auto& rr : r.ranks)
    EXPECT_NE(rr.output.find("error: [all_to_all_single] split sizes disagree: rank 1 sends 2 rows to rank 0, which "
                             "expects 1 from it"),
              std::string::npos)
        << r.dump();
}

TEST(DistributedCollectives, SyncLaneSizesThreeRanks) {
  auto r = run_ranks("lane_sizes", 3, 120);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  auto unchecked = run_ranks("lane_sizes", 3, 120, {"EMBER_DISTRIBUTED_CHECKS=0"});
  ASSERT_TRUE(unchecked.all_ok()) << unchecked.dump();
}
