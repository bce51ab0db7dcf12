// ember-run: the environment contract, restarts after a failing worker, SIGKILL for a
// worker that ignores SIGTERM, and a real job started through it.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "ember/distributed/distributed.h"
#include "ember/ember.h"
#include "tests/distributed/harness.h"

namespace dist = ember::distributed;

namespace launcher_test {

struct Ran {
  int code = -1;
  std::string output;
  double seconds = 0;
};

// Runs ember-run with the given arguments (a shell fragment), output and errors together.
Ran ember_run(const std::string& args) {
  const auto start = std::chrono::steady_clock::now();
  // timeout(1) bounds every run: a launcher that hangs fails the test.
  const std::string cmd = "timeout -s KILL 60 " + std::string(EMBER_RUN_PATH) + " " + args + " 2>&1";
  Ran r;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  const int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::string self_path() {
  char self[4096] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  return std::string(self, static_cast<size_t>(std::max<ssize_t>(n, 0)));
}

DIST_SCENARIO(launched_all_reduce) {
  dist::init_process_group({.timeout = std::chrono::seconds(20)});
  ember::Tensor t = ember::ones({4});
  dist::all_reduce(t);
  std::cout << "rank " << dist::get_rank() << "/" << dist::get_world_size() << " local " << dist::get_local_rank()
            << " sum " << t[0].item<float>() << std::endl;
  dist::destroy_process_group();
  return 0;
}

}  // namespace launcher_test

using launcher_test::ember_run;

TEST(DistributedLauncher, RestartsTheGroupAfterAWorkerFails) {
  auto r = ember_run(
      "--nproc-per-node 2 --max-restarts 1 --stop-timeout 3 sh -c '"
      "echo \"r=$RANK w=$WORLD_SIZE l=$LOCAL_RANK lw=$LOCAL_WORLD_SIZE c=$TORCHELASTIC_RESTART_COUNT "
      "addr=$MASTER_ADDR omp=$OMP_NUM_THREADS\"; "
      "if [ $TORCHELASTIC_RESTART_COUNT = 0 ] && [ $RANK = 1 ]; then exit 3; fi; "
      "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then sleep 30; fi'");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_LT(r.seconds, 20) << r.output;
  EXPECT_NE(r.output.find("local rank 1 (rank 1) exited with code 3 in attempt 0; stopping the other workers"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("restarting the group (restart 1 of 1)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("r=1 w=2 l=1 lw=2 c=1 addr=127.0.0.1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("all 2 workers finished successfully after 1 restart(s)"), std::string::npos) << r.output;
}

TEST(DistributedLauncher, GivesUpAndNamesTheRootCause) {
  auto r = ember_run("--nproc-per-node 3 --max-restarts 0 sh -c 'if [ $RANK = 2 ]; then exit 5; fi; sleep 30'");
  EXPECT_EQ(r.code, 5) << r.output;
  // The others die of SIGTERM at once, even when it reaches them before their exec.
  EXPECT_LT(r.seconds, 4) << r.output;
  EXPECT_NE(r.output.find("giving up after 0 restart(s) (--max-restarts 0); root cause: local rank 2 (rank 2) exited "
                          "with code 5 in attempt 0"),
            std::string::npos)
      << r.output;
}

TEST(DistributedLauncher, KillsAWorkerThatIgnoresSigterm) {
  // Rank 0 fails once rank 1 has had time to set its trap.
  auto r = ember_run(
      "--nproc-per-node 2 --stop-timeout 0.5 sh -c 'if [ $RANK = 0 ]; then sleep 0.5; exit 1; fi; trap \"\" TERM; "
      "sleep 30'");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_LT(r.seconds, 15) << r.output;
  EXPECT_NE(r.output.find("local rank 1 ignored SIGTERM for 0.5 s; sending SIGKILL"), std::string::npos) << r.output;
}

TEST(DistributedLauncher, RunsADistributedJob) {
  auto r = ember_run("--standalone --nproc-per-node 2 " + launcher_test::self_path() + " --worker launched_all_reduce");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 0/2 local 0 sum 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 1/2 local 1 sum 2"), std::string::npos) << r.output;
}

TEST(DistributedLauncher, RejectsBadFlags) {
  auto r = ember_run("--nproc-per-node two true");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("ember-run: --nproc-per-node expects an integer, got 'two'"), std::string::npos) << r.output;
}
