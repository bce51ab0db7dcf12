// ember-run: starts the worker processes of a distributed job with torchrun's flags and
// environment contract (docs/distributed.md).
//
//   ember-run --nproc-per-node 2 build/examples/fashion_mnist --distributed --epochs 1
//   ember-run --standalone --nproc-per-node 4 --max-restarts 2 ./train
//
// Each worker gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
// MASTER_PORT, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID
// and OMP_NUM_THREADS (this machine's cores divided among the local workers, unless set).
// When a worker fails (non-zero exit or a signal) the launcher stops the others (SIGTERM,
// then SIGKILL after --stop-timeout seconds) and starts the whole local group again while
// restarts remain; the summary names the first failure as the root cause. A script
// ending in .py is run with python3.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int nproc = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  bool standalone = false;
  int max_restarts = 0;
  double stop_timeout = 5.0;
  std::string run_id;
  std::vector<std::string> command;
};

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

[[noreturn]] void usage(const std::string& error) {
  if (!error.empty()) std::cerr << "ember-run: " << error << "\n";
  std::cerr << "usage: ember-run [--nproc-per-node N] [--nnodes 1] [--node-rank R] [--master-addr HOST]\n"
               "                 [--master-port PORT] [--rdzv-endpoint HOST:PORT] [--standalone]\n"
               "                 [--max-restarts N] [--stop-timeout SECONDS] [--run-id ID]\n"
               "                 program [args...]\n";
  std::exit(2);
}

int to_int(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    const int x = std::stoi(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return x;
  } catch (...) {
    usage(flag + " expects an integer, got '" + v + "'");
  }
}

Args parse(int argc, char** argv) {
  Args a;
  int i = 1;
  auto value = [&](const std::string& flag, std::string& inline_value) -> std::string {
    if (!inline_value.empty()) return inline_value;
    if (i + 1 >= argc) usage(flag + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.rfind("--", 0) != 0) break;  // the program
    std::string inline_value;
    const auto eq = arg.find('=');
    if (eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    for (auto& c : arg)
      if (c == '_') c = '-';  // torchrun accepts both spellings
    if (arg == "--nproc-per-node") {
      const std::string v = value(arg, inline_value);
      if (v == "auto" || v == "cpu") {
        a.nproc = static_cast<int>(std::thread::hardware_concurrency());
      } else {
        a.nproc = to_int(arg, v);
      }
    } else if (arg == "--nnodes") {
      std::string v = value(arg, inline_value);
      const auto colon = v.find(':');  // MIN:MAX: elastic ranges are not supported; use MAX == MIN
      if (colon != std::string::npos) {
        if (v.substr(0, colon) != v.substr(colon + 1))
          usage("--nnodes " + v + ": elastic node ranges are not supported; give a fixed count");
        v = v.substr(0, colon);
      }
      a.nnodes = to_int(arg, v);
    } else if (arg == "--node-rank") {
      a.node_rank = to_int(arg, value(arg, inline_value));
    } else if (arg == "--master-addr") {
      a.master_addr = value(arg, inline_value);
    } else if (arg == "--master-port") {
      a.master_port = to_int(arg, value(arg, inline_value));
    } else if (arg == "--rdzv-endpoint") {
      const std::string v = value(arg, inline_value);
      const auto colon = v.rfind(':');
      if (colon == std::string::npos) usage("--rdzv-endpoint expects HOST:PORT, got '" + v + "'");
      a.master_addr = v.substr(0, colon);
      a.master_port = to_int(arg, v.substr(colon + 1));
    } else if (arg == "--standalone") {
      a.standalone = true;
    } else if (arg == "--max-restarts") {
      a.max_restarts = to_int(arg, value(arg, inline_value));
    } else if (arg == "--stop-timeout") {
      a.stop_timeout = std::atof(value(arg, inline_value).c_str());
    } else if (arg == "--run-id" || arg == "--rdzv-id") {
      a.run_id = value(arg, inline_value);
    } else if (arg == "--rdzv-backend" || arg == "--monitor-interval" || arg == "--log-dir" || arg == "--redirects" ||
               arg == "--tee" || arg == "--role") {
      value(arg, inline_value);  // accepted for torchrun compatibility; no effect
    } else if (arg == "--help" || arg == "-h") {
      usage("");
    } else {
      usage("unknown flag " + arg);
    }
  }
  for (; i < argc; ++i) a.command.push_back(argv[i]);
  if (a.command.empty()) usage("no program to run");
  if (a.nproc < 1) usage("--nproc-per-node must be at least 1");
  if (a.nnodes < 1) usage("--nnodes must be at least 1");
  if (a.node_rank < 0 || a.node_rank >= a.nnodes) usage("--node-rank must be in [0, nnodes)");
  if (a.max_restarts < 0) usage("--max-restarts must be >= 0");
  if (a.standalone && a.nnodes != 1) usage("--standalone runs one node; drop --nnodes or --standalone");
  if (a.run_id.empty()) a.run_id = a.standalone ? std::to_string(::getpid()) : "none";
  return a;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

struct Worker {
  pid_t pid = -1;
  int local_rank = 0;
  bool running = false;
  int status = 0;  // exit code, or 128 + signal
};

std::string describe_status(int raw) {
  if (WIFEXITED(raw)) return "exited with code " + std::to_string(WEXITSTATUS(raw));
  if (WIFSIGNALED(raw)) {
    const int s = WTERMSIG(raw);
    return "was killed by signal " + std::to_string(s) + " (" + ::strsignal(s) + ")";
  }
  return "stopped";
}

int code_of(int raw) { return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0); }

pid_t start_worker(const Args& a, int local_rank, int restart, const std::string& master_addr, int master_port) {
  const int world = a.nproc * a.nnodes;
  const int rank = a.node_rank * a.nproc + local_rank;
  // SIGTERM/SIGINT stay blocked across fork until the child has its default handlers
  // back: one sent right after the fork is then delivered to the child as such, instead
  // of landing in a copy of the launcher's own handler.
  sigset_t stop_signals, old_mask;
  ::sigemptyset(&stop_signals);
  ::sigaddset(&stop_signals, SIGTERM);
  ::sigaddset(&stop_signals, SIGINT);
  ::sigprocmask(SIG_BLOCK, &stop_signals, &old_mask);
  const pid_t pid = ::fork();
  if (pid != 0) {
    if (pid < 0) std::perror("ember-run: fork");
    if (pid > 0) ::setpgid(pid, pid);  // also here: the launcher may signal the group before the child ran
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return pid;
  }
  ::setpgid(0, 0);  // its own process group: stopping it stops what it started too
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  auto set = [](const char* k, const std::string& v) { ::setenv(k, v.c_str(), 1); };
  set("RANK", std::to_string(rank));
  set("LOCAL_RANK", std::to_string(local_rank));
  set("WORLD_SIZE", std::to_string(world));
  set("LOCAL_WORLD_SIZE", std::to_string(a.nproc));
  set("GROUP_RANK", std::to_string(a.node_rank));
  set("GROUP_WORLD_SIZE", std::to_string(a.nnodes));
  set("ROLE_RANK", std::to_string(rank));
  set("ROLE_WORLD_SIZE", std::to_string(world));
  set("MASTER_ADDR", master_addr);
  set("MASTER_PORT", std::to_string(master_port));
  set("TORCHELASTIC_RESTART_COUNT", std::to_string(restart));
  set("TORCHELASTIC_MAX_RESTARTS", std::to_string(a.max_restarts));
  set("TORCHELASTIC_RUN_ID", a.run_id);
  if (!std::getenv("OMP_NUM_THREADS")) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    set("OMP_NUM_THREADS", std::to_string(std::max(1u, cores / static_cast<unsigned>(a.nproc))));
  }
  std::vector<std::string> cmd = a.command;
  if (cmd[0].size() > 3 && cmd[0].compare(cmd[0].size() - 3, 3, ".py") == 0) cmd.insert(cmd.begin(), "python3");
  std::vector<char*> argv;
  for (auto& s : cmd) argv.push_back(s.data());
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::fprintf(stderr, "ember-run: cannot run %s: %s\n", argv[0], std::strerror(errno));
  std::_Exit(127);
}

// Stops every running worker: SIGTERM to its process group, SIGKILL after the timeout.
void stop_all(std::vector<Worker>& ws, double timeout_s) {
  for (auto& w : ws)
    if (w.running && ::kill(-w.pid, SIGTERM) != 0) ::kill(w.pid, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    bool any = false;
    for (auto& w : ws) {
      if (!w.running) continue;
      int st = 0;
      if (::waitpid(w.pid, &st, WNOHANG) == w.pid) {
        w.running = false;
        w.status = st;
      } else {
        any = true;
      }
    }
    if (!any) return;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& w : ws) {
    if (!w.running) continue;
    std::cerr << "ember-run: local rank " << w.local_rank << " ignored SIGTERM for " << timeout_s
              << " s; sending SIGKILL\n";
    if (::kill(-w.pid, SIGKILL) != 0) ::kill(w.pid, SIGKILL);
    int st = 0;
    ::waitpid(w.pid, &st, 0);
    w.running = false;
    w.status = st;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: waitpid returns on a signal
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  std::string master_addr = a.master_addr;
  int master_port = a.master_port;
  if (a.standalone) {
    master_addr = "127.0.0.1";
    master_port = free_port();
  }
  std::optional<std::string> root_cause;
  int root_code = 0;
  for (int restart = 0;; ++restart) {
    std::vector<Worker> ws(static_cast<size_t>(a.nproc));
    for (int l = 0; l < a.nproc; ++l) {
      ws[static_cast<size_t>(l)].local_rank = l;
      ws[static_cast<size_t>(l)].pid = start_worker(a, l, restart, master_addr, master_port);
      ws[static_cast<size_t>(l)].running = ws[static_cast<size_t>(l)].pid > 0;
    }
    std::optional<size_t> failed;
    size_t left = ws.size();
    while (left > 0 && !failed && !g_signal) {
      int st = 0;
      const pid_t pid = ::waitpid(-1, &st, 0);
      if (pid < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (size_t i = 0; i < ws.size(); ++i) {
        if (ws[i].pid != pid || !ws[i].running) continue;
        ws[i].running = false;
        ws[i].status = st;
        --left;
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) failed = i;
      }
    }
    if (g_signal) {
      std::cerr << "ember-run: got signal " << g_signal << "; stopping the workers\n";
      stop_all(ws, a.stop_timeout);
      return 128 + g_signal;
    }
    if (!failed) {
      std::cerr << "ember-run: all " << a.nproc << " workers finished successfully"
                << (restart ? " after " + std::to_string(restart) + " restart(s)" : "") << "\n";
      if (root_cause) std::cerr << "ember-run: (the first failure was: " << *root_cause << ")\n";
      return 0;
    }
    const Worker& w = ws[*failed];
    const std::string what = "local rank " + std::to_string(w.local_rank) + " (rank " +
                             std::to_string(a.node_rank * a.nproc + w.local_rank) + ") " + describe_status(w.status) +
                             " in attempt " + std::to_string(restart);
    if (!root_cause) {
      root_cause = what;
      root_code = code_of(w.status);
    }
    std::cerr << "ember-run: " << what << "; stopping the other workers\n";
    stop_all(ws, a.stop_timeout);
    if (restart >= a.max_restarts) {
      std::cerr << "ember-run: giving up after " << restart << " restart(s) (--max-restarts " << a.max_restarts
                << "); root cause: " << *root_cause << "\n";
      return root_code == 0 ? 1 : root_code;
    }
    std::cerr << "ember-run: restarting the group (restart " << restart + 1 << " of " << a.max_restarts << ")\n";
  }
}
