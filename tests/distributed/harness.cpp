// The multi-process test harness (harness.h) and the test binary's main: without
// --worker it runs GoogleTest; with --worker <scenario> it is one rank of a test.

#include "tests/distributed/harness.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

namespace dist_test {

namespace {
std::string g_self;  // this executable
}

std::map<std::string, Scenario>& scenarios() {
  static std::map<std::string, Scenario> m;
  return m;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string temp_dir() {
  std::string tmpl = "/tmp/ember_dist_XXXXXX";
  char* d = ::mkdtemp(tmpl.data());
  if (!d) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

std::string RunResult::dump() const {
  std::ostringstream os;
  os << (timed_out ? "[timed out] " : "") << "after " << seconds << " s\n";
  for (size_t r = 0; r < ranks.size(); ++r) {
    os << "---- rank " << r << " (exit " << ranks[r].exit_code << ") ----\n" << ranks[r].output << "\n";
  }
  return os.str();
}

bool RunResult::all_ok() const {
  for (const auto& r : ranks)
    if (r.exit_code != 0) return false;
  return !timed_out;
}

RunResult run_ranks(const std::string& scenario, int world_size, double timeout_s,
                    const std::vector<std::string>& extra_env) {
  const std::string dir = temp_dir();
  const int port = free_port();
  const auto start = std::chrono::steady_clock::now();
  std::vector<pid_t> pids;
  for (int r = 0; r < world_size; ++r) {
    const std::string log = dir + "/rank" + std::to_string(r) + ".log";
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(world_size).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(world_size).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("OMP_NUM_THREADS", "1", 1);
      ::setenv("EMBER_TEST_TMP", dir.c_str(), 1);
      for (const auto& kv : extra_env) {
        const auto eq = kv.find('=');
        ::setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
      }
      ::execl(g_self.c_str(), g_self.c_str(), "--worker", scenario.c_str(), static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    pids.push_back(pid);
  }
  RunResult res;
  res.ranks.resize(static_cast<size_t>(world_size));
  std::vector<bool> done(static_cast<size_t>(world_size), false);
  size_t left = pids.size();
  while (left > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      if (::waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        done[i] = true;
        --left;
        res.ranks[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (left > 0 && elapsed > timeout_s) {
      res.timed_out = true;
      for (size_t i = 0; i < pids.size(); ++i) {
        if (!done[i]) {
          ::kill(pids[i], SIGKILL);
          ::waitpid(pids[i], nullptr, 0);
          done[i] = true;
          res.ranks[i].exit_code = -1;
        }
      }
      left = 0;
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int r = 0; r < world_size; ++r) {
    std::ifstream in(dir + "/rank" + std::to_string(r) + ".log");
    std::stringstream ss;
    ss << in.rdbuf();
    res.ranks[static_cast<size_t>(r)].output = ss.str();
  }
  [[maybe_unused]] int rc = std::system(("rm -rf " + dir).c_str());
  return res;
}

std::string backend() {
  const char* b = std::getenv("EMBER_TEST_BACKEND");
  return b && *b ? std::string(b) : std::string("gloo");
}

std::string mpi_skip_reason() {
#if defined(EMBER_HAVE_MPI) && defined(EMBER_MPIEXEC)
  if (::access(EMBER_MPIEXEC, X_OK) != 0) return std::string(EMBER_MPIEXEC) + " is missing; run scripts/setup.sh";
  return "";
#else
  return "this build has no MPI support (install libopenmpi-dev and openmpi-bin with scripts/setup.sh, re-run cmake)";
#endif
}

RunResult run_mpi(const std::string& scenario, int np, double timeout_s, const std::vector<std::string>& extra_env) {
  RunResult res;
  res.ranks.resize(1);
#if defined(EMBER_HAVE_MPI) && defined(EMBER_MPIEXEC)
  const std::string dir = temp_dir();
  const std::string log = dir + "/mpirun.log";
  std::vector<std::string> args = {EMBER_MPIEXEC, "-np", std::to_string(np), "--oversubscribe", "--allow-run-as-root",
                                   "--tag-output",
                                   // this machine only: shared memory between the ranks,
                                   // loopback for mpirun's own wiring
                                   "--mca", "btl", "self,vader", "--mca", "pml", "ob1", "--mca",
                                   "btl_vader_single_copy_mechanism", "none", "--mca", "oob_tcp_if_include", "lo",
                                   "--mca", "btl_tcp_if_include", "lo", "-x", "EMBER_TEST_BACKEND=mpi", "-x",
                                   "OMP_NUM_THREADS=1", "-x", "EMBER_TEST_TMP=" + dir};
  for (const auto& kv : extra_env) {
    args.push_back("-x");
    args.push_back(kv);
  }
  args.insert(args.end(), {g_self, "--worker", scenario});
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  ::setpgid(pid, pid);
  while (true) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      res.ranks[0].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed > timeout_s) {
      res.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      res.ranks[0].exit_code = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  res.ranks[0].output = ss.str();
  [[maybe_unused]] int rc = std::system(("rm -rf " + dir).c_str());
#else
  (void)scenario;
  (void)np;
  (void)timeout_s;
  (void)extra_env;
  res.ranks[0].output = mpi_skip_reason();
#endif
  return res;
}

}  // namespace dist_test

int main(int argc, char** argv) {
  char self[4096] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  dist_test::g_self = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string(argv[0]);
  if (argc >= 3 && std::strcmp(argv[1], "--worker") == 0) {
    auto& s = dist_test::scenarios();
    auto it = s.find(argv[2]);
    if (it == s.end()) {
      std::cerr << "unknown scenario " << argv[2] << "\n";
      return 2;
    }
    try {
      const int rc = it->second();
      std::cout.flush();
      return rc;
    } catch (const std::exception& e) {
      std::cout << "FAILED: " << e.what() << std::endl;
      return 1;
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
