#pragma once
// Multi-process tests: a test starts N real processes of this same binary (re-executed
// with --worker <scenario>), one per rank, with torchrun's environment (RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT=<a free port>), waits
// for them with a deadline (killing them all when it passes) and checks their exit codes
// and output. A scenario is a function registered with DIST_SCENARIO; it fails by
// throwing (WCHECK) or returning nonzero.

#include <chrono>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace dist_test {

struct RankResult {
  int exit_code = -1;  // -1: killed at the deadline, 128+N: died of signal N
  std::string output;  // stdout and stderr
};

struct RunResult {
  std::vector<RankResult> ranks;
  double seconds = 0;
  bool timed_out = false;
  // Every rank's output, labelled, for failure messages.
  std::string dump() const;
  bool all_ok() const;
};

// Runs scenario on world_size ranks; kills everything after timeout_s.
RunResult run_ranks(const std::string& scenario, int world_size, double timeout_s = 30,
                    const std::vector<std::string>& extra_env = {});

// The MPI backend's tests: starts np ranks of scenario with mpirun on this machine only
// (shared memory and loopback: --mca btl self,vader, oob and tcp on lo), as root if need
// be, oversubscribing the cores. ranks has one entry: mpirun's exit code and every rank's
// output, each line tagged "[1,<rank>]<stdout>:". Kills mpirun's process group after
// timeout_s. extra_env entries are exported to every rank (-x).
RunResult run_mpi(const std::string& scenario, int np, double timeout_s = 60,
                  const std::vector<std::string>& extra_env = {});
// Empty when the MPI tests can run; otherwise why not (for GTEST_SKIP).
std::string mpi_skip_reason();

// The backend a scenario uses: EMBER_TEST_BACKEND ("gloo" when unset); run_mpi sets
// "mpi", so a scenario written for Gloo runs unchanged on MPI.
std::string backend();

// A free TCP port on 127.0.0.1 (bound, then released).
int free_port();

// The directory of test binary's helpers, and a fresh temporary directory.
std::string temp_dir();

using Scenario = std::function<int()>;
std::map<std::string, Scenario>& scenarios();
struct Register {
  Register(const char* name, Scenario fn) { scenarios()[name] = std::move(fn); }
};

}  // namespace dist_test

#define DIST_SCENARIO(name)                                                   \
  static int dist_scenario_##name();                                          \
  static ::dist_test::Register dist_register_##name(#name, dist_scenario_##name); \
  static int dist_scenario_##name()

// A check inside a worker: throws with the location and the message.
#define WCHECK(cond, ...)                                                                  \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::ostringstream wcheck_os;                                                        \
      wcheck_os << __FILE__ << ":" << __LINE__ << ": check failed: " #cond " " __VA_ARGS__; \
      throw std::runtime_error(wcheck_os.str());                                           \
    }                                                                                      \
  } while (0)
