// The MPI backend (init_process_group({.backend = "mpi"}), process_group_mpi.cpp) on real
// processes started by mpirun (harness.h, run_mpi): the Gloo scenarios of
// collectives_test.cpp and ddp_test.cpp run unchanged on it (EMBER_TEST_BACKEND=mpi), plus
// what is MPI's own: rank and size from mpirun, async operations of several kinds in
// flight, point-to-point timeouts, disjoint subgroups, timeouts that name the missing rank
// through the progress store (and say why not when that store cannot be reached). Every
// test skips, saying why, when this build has no MPI support or mpirun is missing.

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <thread>

#include "ember/distributed/ddp.h"
#include "ember/distributed/distributed.h"
#include "ember/ember.h"
#include "tests/distributed/harness.h"

namespace dist = ember::distributed;
using ember::Tensor;

namespace mpi_test {

std::vector<double> as_doubles(const Tensor& t) { return t.to(ember::kFloat64).contiguous().to_vector<double>(); }

void expect_values(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  auto g = as_doubles(got);
  WCHECK(g == want, << what << ": got " << g.size() << " values starting " << (g.empty() ? 0.0 : g[0]));
}

// Rank and world size come from MPI; a rank that disagrees with mpirun is an error; async
// operations of several kinds are in flight at once; isend/irecv (any source); a recv that
// never gets a message times out in Work::wait and leaves the group usable.
DIST_SCENARIO(mpi_async) {
  try {
    dist::init_process_group({.backend = "mpi", .rank = 7});
    std::cout << "no error" << std::endl;
    return 1;
  } catch (const ember::Error& e) {
    std::cout << "bad rank: " << e.what() << std::endl;
  }
  WCHECK(!dist::is_initialized());
  dist::init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(20)});
  WCHECK(dist::get_backend() == "mpi");
  const int rank = dist::get_rank(), world = dist::get_world_size();
  WCHECK(world == 2, << world);
  // One host: the local rank and size are MPI's.
  WCHECK(dist::get_local_rank() == rank && dist::get_local_world_size() == 2,
         << dist::get_local_rank() << " " << dist::get_local_world_size());
  try {
    dist::default_store();
    return 1;
  } catch (const ember::Error& e) {
    std::cout << "store: " << e.what() << std::endl;
  }
  // Four collectives in flight, waited for in reverse order.
  Tensor a = ember::full({1000}, static_cast<double>(rank + 1));
  Tensor b = ember::full({5}, static_cast<double>(10 * rank + 3), ember::TensorOptions(ember::kInt64));
  Tensor c = ember::full({3}, static_cast<double>(rank) + 0.5, ember::TensorOptions(ember::kBFloat16));
  std::vector<Tensor> gathered{ember::zeros({3}, ember::TensorOptions(ember::kBFloat16)),
                               ember::zeros({3}, ember::TensorOptions(ember::kBFloat16))};
  auto wa = dist::all_reduce(a, dist::ReduceOp::SUM, nullptr, true);
  auto wb = dist::broadcast(b, 1, nullptr, true);
  auto wc = dist::all_gather(gathered, c, nullptr, true);
  auto wd = dist::barrier(nullptr, true);
  wd->wait(std::chrono::seconds(10));
  wc->wait();
  wb->wait();
  wa->wait();
  for (const auto& w : {wa, wb, wc, wd}) WCHECK(w->is_completed() && w->is_success());
  expect_values(a, std::vector<double>(1000, 3.0), "async all_reduce");
  expect_values(b, std::vector<double>(5, 13.0), "async broadcast");
  expect_values(gathered[0], std::vector<double>(3, 0.5), "async all_gather from rank 0");
  expect_values(gathered[1], std::vector<double>(3, 1.5), "async all_gather from rank 1");
  // Point to point: rank 1 sends, rank 0 receives from any rank.
  Tensor msg = ember::arange(0, 6, 1, ember::TensorOptions(ember::kFloat64)).reshape({2, 3});
  if (rank == 1) {
    auto s = dist::isend(msg * 2, 0, nullptr, 5);
    s->wait();
  } else {
    Tensor got = ember::zeros({2, 3}, ember::TensorOptions(ember::kFloat64));
    int from = -1;
    auto r = dist::irecv(got, -1, nullptr, 5, &from);
    r->wait();
    WCHECK(from == 1, << from);
    expect_values(got, {0, 2, 4, 6, 8, 10}, "irecv");
    // Nobody sends with tag 9: the wait gives up after 200 ms.
    Tensor never = ember::zeros({4});
    auto w = dist::irecv(never, 1, nullptr, 9);
    try {
      w->wait(std::chrono::milliseconds(200));
      return 1;
    } catch (const ember::Error& e) {
      std::cout << "recv timeout: " << e.what() << std::endl;
    }
  }
  // Still in step.
  Tensor t = ember::ones({4}, ember::TensorOptions(ember::kFloat64));
  dist::all_reduce(t, dist::ReduceOp::SUM);
  expect_values(t, std::vector<double>(4, 2.0), "all_reduce after the point-to-point");
  dist::destroy_process_group();
  // A second init in the same process reuses MPI.
  dist::init_process_group({.backend = "mpi"});
  Tensor u = ember::full({2}, static_cast<double>(rank + 2));
  dist::all_reduce(u, dist::ReduceOp::PRODUCT);
  expect_values(u, {6.0, 6.0}, "all_reduce after a second init");
  dist::destroy_process_group();
  std::cout << "rank " << rank << " ok" << std::endl;
  return 0;
}

// Four ranks, two disjoint subgroups {0, 1} and {2, 3} plus an odd one {1, 3}; every rank
// calls new_group for each, members or not.
DIST_SCENARIO(mpi_subgroups) {
  dist::init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank();
  auto low = dist::new_group({0, 1});
  auto high = dist::new_group({2, 3});
  auto odd = dist::new_group({3, 1});
  WCHECK((low != nullptr) == (rank < 2) && (high != nullptr) == (rank >= 2) && (odd != nullptr) == (rank % 2 == 1));
  auto mine = rank < 2 ? low : high;
  WCHECK(dist::get_world_size(mine) == 2 && dist::get_rank(mine) == rank % 2);
  WCHECK(dist::get_backend(mine) == "mpi");
  Tensor t = ember::full({3}, static_cast<double>(rank), ember::TensorOptions(ember::kInt64));
  dist::all_reduce(t, dist::ReduceOp::MAX, mine);
  expect_values(t, std::vector<double>(3, rank < 2 ? 1.0 : 3.0), "subgroup all_reduce MAX");
  std::vector<Tensor> outs{ember::zeros({2}), ember::zeros({2})};
  dist::all_gather(outs, ember::full({2}, static_cast<double>(rank)), mine);
  expect_values(outs[1], std::vector<double>(2, rank < 2 ? 1.0 : 3.0), "subgroup all_gather");
  if (odd) {
    Tensor b = ember::full({2}, static_cast<double>(rank), ember::TensorOptions(ember::kFloat64));
    dist::broadcast(b, 3, odd);  // a global rank
    expect_values(b, {3.0, 3.0}, "broadcast from global rank 3 in {1, 3}");
  }
  Tensor all = ember::ones({2});
  dist::all_reduce(all);
  expect_values(all, {4.0, 4.0}, "world all_reduce after the subgroups");
  dist::destroy_process_group();
  std::cout << "rank " << rank << " ok" << std::endl;
  return 0;
}

// Runs a collective that must time out (the group's timeout is 2 s) and prints its error,
// prefixed by label.
void expect_timeout(const std::string& label, const std::function<void()>& collective) {
  const auto start = std::chrono::steady_clock::now();
  try {
    collective();
  } catch (const ember::Error& e) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << label << ": " << e.what() << std::endl;
    WCHECK(s < 4.0, << label << " took " << s << " s");
    return;
  }
  throw std::runtime_error(label + ": no error");
}

// No rank leaves before every rank is done with the groups (rank 0 hosts the progress store
// the others read when they time out): the ranks meet in a file store.
void meet_in_file_store() {
  dist::FileStore store(std::string(std::getenv("EMBER_TEST_TMP")) + "/meet", std::chrono::seconds(30));
  const int world = dist::get_world_size();
  store.add("done", 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (store.add("done", 0) < world) {
    WCHECK(std::chrono::steady_clock::now() < deadline, << "the other ranks did not finish");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Three ranks; rank 2 skips the default group's second all_reduce, and after that rank 1
// waits alone in the second all_reduce of the subgroup {1, 2}. Every rank that times out
// names rank 2 as the one that never arrived (Note [MPI progress store]).
DIST_SCENARIO(mpi_rank_never_arrives) {
  dist::init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(2)});
  const int rank = dist::get_rank();
  auto pair = dist::new_group({1, 2});
  Tensor t = ember::ones({16});
  dist::all_reduce(t);
  if (pair) dist::all_reduce(t, dist::ReduceOp::SUM, pair);
  if (rank < 2) expect_timeout("world", [&] { dist::all_reduce(t); });
  if (rank == 1) expect_timeout("subgroup", [&] { dist::all_reduce(t, dist::ReduceOp::SUM, pair); });
  meet_in_file_store();
  dist::destroy_process_group();
  std::cout << "rank " << rank << " ok" << std::endl;
  return 0;
}

// MASTER_ADDR names no host, so rank 1 cannot reach the progress store: init still works
// and a timeout says why it cannot name the missing rank.
DIST_SCENARIO(mpi_progress_store_unreachable) {
  dist::init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(2)});
  const int rank = dist::get_rank();
  Tensor t = ember::ones({16});
  dist::all_reduce(t);
  expect_values(t, std::vector<double>(16, 2.0), "all_reduce without the progress store");
  if (rank == 0) expect_timeout("error", [&] { dist::all_reduce(t); });
  meet_in_file_store();
  dist::destroy_process_group();
  std::cout << "rank " << rank << " ok" << std::endl;
  return 0;
}

}  // namespace mpi_test

namespace {

using dist_test::run_mpi;

#define SKIP_WITHOUT_MPI()                                                 \
  do {                                                                     \
    const std::string why = dist_test::mpi_skip_reason();                  \
    if (!why.empty()) GTEST_SKIP() << "the MPI backend is not tested: " << why; \
  } while (0)

// What rank k printed on stdout, by mpirun's --tag-output prefix.
std::string tag(int k) { return "[1," + std::to_string(k) + "]<stdout>:"; }

TEST(DistributedMPI, EveryCollectiveTwoRanks) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("all_collectives", 2, 120);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  for (int k = 0; k < 2; ++k) EXPECT_NE(r.ranks[0].output.find(tag(k) + "rank " + std::to_string(k) + " ok"), std::string::npos) << r.dump();
}

TEST(DistributedMPI, EveryCollectiveThreeRanks) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("all_collectives", 3, 120);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  for (int k = 0; k < 3; ++k) EXPECT_NE(r.ranks[0].output.find(tag(k) + "rank " + std::to_string(k) + " ok"), std::string::npos) << r.dump();
}

TEST(DistributedMPI, AsyncPointToPointAndInit) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("mpi_async", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  const std::string& out = r.ranks[0].output;
  for (int k = 0; k < 2; ++k) EXPECT_NE(out.find(tag(k) + "rank " + std::to_string(k) + " ok"), std::string::npos) << r.dump();
  EXPECT_NE(out.find("bad rank: [init_process_group] rank 7 was given, but MPI says this is rank"), std::string::npos)
      << r.dump();
  EXPECT_NE(out.find("store: [default_store] the default group uses backend 'mpi'"), std::string::npos) << r.dump();
  EXPECT_NE(out.find(tag(0) + "recv timeout: [recv from rank 1 (tag 9)] did not complete within 200 ms"),
            std::string::npos)
      << r.dump();
}

TEST(DistributedMPI, MismatchedOpRaisesOnEveryRank) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("mismatch_op", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  const std::string& out = r.ranks[0].output;
  EXPECT_NE(out.find(tag(0) + "error: [all_reduce] collective #2 mismatch: rank 0 called all_reduce(f32[1024], SUM), "
                              "rank 1 called broadcast(f32[1024], root=0)"),
            std::string::npos)
      << r.dump();
  EXPECT_NE(out.find(tag(1) + "error: [broadcast] collective #2 mismatch: rank 0 called all_reduce(f32[1024], SUM), "
                              "rank 1 called broadcast(f32[1024], root=0)"),
            std::string::npos)
      << r.dump();
}

TEST(DistributedMPI, MismatchedShapeNamesTheOddRankOnEveryRank) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("mismatch_shape", 3, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  for (int k = 0; k < 3; ++k) {
    EXPECT_NE(r.ranks[0].output.find(tag(k) +
                                     "error: [all_reduce] collective #1 mismatch: ranks 0, 1 called all_reduce(f64[2, "
                                     "4], MAX), rank 2 called all_reduce(f64[2, 5], MAX)"),
              std::string::npos)
        << r.dump();
  }
}

TEST(DistributedMPI, TimeoutRaisesInsteadOfHanging) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("skip_collective", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  const std::string& out = r.ranks[0].output;
  EXPECT_NE(out.find(tag(0) + "error after "), std::string::npos) << r.dump();
  EXPECT_NE(out.find("[all_reduce] collective #2 all_reduce(f32[16], SUM) did not complete within 2000 ms on rank 0 "
                     "(waiting for the fingerprint exchange): rank 1 never arrived (its last recorded collective was "
                     "#1 all_reduce(f32[16], SUM)); rank 0 reached it. MPI cannot cancel a collective in flight; the "
                     "process group is unusable now"),
            std::string::npos)
      << r.dump();
  EXPECT_NE(out.find(tag(0) + "then: [barrier] the process group is unusable after an earlier failure"),
            std::string::npos)
      << r.dump();
}

TEST(DistributedMPI, TimeoutNamesTheRankThatNeverArrived) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("mpi_rank_never_arrives", 3, 60);
  ASSERT_FALSE(r.timed_out) << r.dump();
  ASSERT_TRUE(r.all_ok()) << r.dump();
  const std::string& out = r.ranks[0].output;
  for (int k = 0; k < 2; ++k) {
    EXPECT_NE(out.find(tag(k) + "world: [all_reduce] collective #2 all_reduce(f32[16], SUM) did not complete within "
                                "2000 ms on rank " +
                       std::to_string(k) +
                       " (waiting for the fingerprint exchange): rank 2 never arrived (its last recorded collective "
                       "was #1 all_reduce(f32[16], SUM)); ranks 0, 1 reached it. MPI cannot cancel a collective in "
                       "flight; the process group is unusable now"),
              std::string::npos)
        << r.dump();
  }
  // The subgroup's records are its own (group sequence numbers, global ranks).
  EXPECT_NE(out.find(tag(1) + "subgroup: [all_reduce] collective #2 all_reduce(f32[16], SUM) did not complete within "
                              "2000 ms on rank 1 (waiting for the fingerprint exchange): rank 2 never arrived (its last "
                              "recorded collective was #1 all_reduce(f32[16], SUM)); rank 1 reached it."),
            std::string::npos)
      << r.dump();
  for (int k = 0; k < 3; ++k) EXPECT_NE(out.find(tag(k) + "rank " + std::to_string(k) + " ok"), std::string::npos) << r.dump();
}

TEST(DistributedMPI, TimeoutSaysWhenTheProgressRecordsAreUnavailable) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("mpi_progress_store_unreachable", 2, 60, {"MASTER_ADDR=no-such-host.invalid"});
  ASSERT_FALSE(r.timed_out) << r.dump();
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_NE(r.ranks[0].output.find(
                tag(0) + "error: [all_reduce] collective #2 all_reduce(f32[16], SUM) did not complete within 2000 ms "
                         "on rank 0 (waiting for the fingerprint exchange): some rank of the group did not reach it, or "
                         "is stuck before it (the progress records that would name it are unavailable: rank 1 could "
                         "not connect to the TCPStore rank 0 started at no-such-host.invalid:"),
            std::string::npos)
      << r.dump();
  EXPECT_NE(r.ranks[0].output.find(" within 2000 ms; set MASTER_ADDR to an address of rank 0's host that every rank "
                                   "can reach). MPI cannot cancel a collective in flight"),
            std::string::npos)
      << r.dump();
}

TEST(DistributedMPI, WorkWaitTimeout) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("wait_timeout", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_NE(r.ranks[0].output.find(tag(0) + "early: [wait] all_reduce did not complete within 100 ms"),
            std::string::npos)
      << r.dump();
}

TEST(DistributedMPI, Subgroup) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("subgroup", 3, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
}

TEST(DistributedMPI, DisjointSubgroupsFourRanks) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("mpi_subgroups", 4, 90);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  for (int k = 0; k < 4; ++k) EXPECT_NE(r.ranks[0].output.find(tag(k) + "rank " + std::to_string(k) + " ok"), std::string::npos) << r.dump();
}

TEST(DistributedMPI, ArgumentErrorsNameTheCall) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("argument_errors", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
}

TEST(DistributedMPI, UnevenAllToAllSplitsMustAgree) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("bad_splits", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  for (int k = 0; k < 2; ++k)
    EXPECT_NE(r.ranks[0].output.find(tag(k) + "error: [all_to_all_single] split sizes disagree: rank 1 sends 2 rows "
                                              "to rank 0, which expects 1 from it"),
              std::string::npos)
        << r.dump();
}

// ddp_test.cpp's scenario: DDP gradients on 2 MPI ranks equal the single-process
// gradients of the concatenated batch (and so do the parameters after three SGD steps).
// The parameters' digest rank k printed ("" when none).
std::string digest_of(const dist_test::RunResult& r, int k) {
  const std::string& out = r.ranks[0].output;
  const std::string key = tag(k) + "digest ";
  const auto pos = out.find(key);
  return pos == std::string::npos ? "" : out.substr(pos + key.size(), out.find('\n', pos) - pos - key.size());
}

TEST(DistributedMPI, DdpGradientsMatchTheConcatenatedBatch) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("ddp_grads", 2, 120);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  // The same bits on every rank.
  EXPECT_FALSE(digest_of(r, 0).empty()) << r.dump();
  EXPECT_EQ(digest_of(r, 0), digest_of(r, 1)) << r.dump();
  // Every parameter in its own bucket, on 3 ranks.
  auto three = run_mpi("ddp_grads", 3, 120, {"DDP_BUCKET_MB=0.00001", "DDP_FIRST_BUCKET_MB=0.00001"});
  ASSERT_TRUE(three.all_ok()) << three.dump();
  EXPECT_FALSE(digest_of(three, 0).empty()) << three.dump();
  EXPECT_EQ(digest_of(three, 0), digest_of(three, 1)) << three.dump();
  EXPECT_EQ(digest_of(three, 0), digest_of(three, 2)) << three.dump();
}

}  // namespace

// A rank that exits early: mpirun stops the job at once with that rank's exit code.
TEST(DistributedMPI, DeadRankStopsTheJob) {
  SKIP_WITHOUT_MPI();
  auto r = run_mpi("rank_dies", 2, 60);
  EXPECT_FALSE(r.timed_out) << r.dump();
  EXPECT_EQ(r.ranks[0].exit_code, 7) << r.dump();
}

// zero_test.cpp's and fsdp_test.cpp's scenarios: ZeRO-1 and FSDP against DDP (on the same
// MPI group), and the object collectives.
TEST(DistributedMPI, ZeroAndFsdpMatchDdp) {
  SKIP_WITHOUT_MPI();
  auto zero = run_mpi("zero_matches_ddp", 2, 120, {"ZERO_OPT=adam"});
  ASSERT_TRUE(zero.all_ok()) << zero.dump();
  auto fsdp = run_mpi("fsdp_matches_ddp", 2, 120);
  ASSERT_TRUE(fsdp.all_ok()) << fsdp.dump();
  auto objects = run_mpi("object_collectives", 3, 120);
  ASSERT_TRUE(objects.all_ok()) << objects.dump();
}

#ifndef EMBER_HAVE_MPI
// Without MPI support, backend "mpi" is an error that says how to get it (no mpirun needed).
TEST(DistributedMPI, NotBuiltSaysHowToGetIt) {
  try {
    dist::init_process_group({.backend = "mpi"});
    dist::destroy_process_group();
    GTEST_SKIP() << "this library has MPI support, but the tests found no mpirun";
  } catch (const ember::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[init_process_group] backend 'mpi' is not available: this build of ember "
                                         "has no MPI support"),
              std::string::npos)
        << e.what();
  }
}
#endif
