// Two "nodes" on one machine: the test makes two network namespaces joined by a veth
// pair, starts ember-run in each (--nnodes 2, --node-rank 0 and 1, the rendezvous on node
// 0's veth address) and checks that the job's traffic crossed the veth: an all_reduce and
// a DDP training run agree across the nodes, and every worker lists its TCP connections,
// which must lead to the other namespace's address and never to loopback. Needs root (ip
// netns add); skips, saying why, without it.

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "ember/distributed/distributed.h"
#include "ember/ember.h"
#include "tests/distributed/harness.h"

namespace dist = ember::distributed;

namespace netns_test {

// ---- worker side ----

// The IPv4 address of interface `name` in this process's network namespace ("" if none).
std::string ipv4_of(const std::string& name) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && name == a->ifa_name) {
      char buf[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof(buf));
      out = buf;
      break;
    }
  }
  ::freeifaddrs(list);
  return out;
}

// This process's established IPv4 TCP connections, as "local>remote" ("a.b.c.d:port"):
// the socket inodes among /proc/self/fd, looked up in /proc/self/net/tcp (which lists
// the sockets of the whole network namespace).
std::vector<std::string> tcp_peers() {
  std::set<std::string> mine;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d)) {
      char target[256] = {};
      const std::string link = std::string("/proc/self/fd/") + e->d_name;
      const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      const std::string t(target, static_cast<size_t>(n));
      if (t.rfind("socket:[", 0) == 0) mine.insert(t.substr(8, t.size() - 9));
    }
    ::closedir(d);
  }
  std::vector<std::string> peers;
  std::ifstream in("/proc/self/net/tcp");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    row >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    if (state != "01" || !mine.count(inode)) continue;  // 01: ESTABLISHED
    // The address is the network-order word printed as a host integer; the port is in
    // host order.
    auto endpoint = [](const std::string& hex) {
      const auto colon = hex.find(':');
      in_addr addr{};
      addr.s_addr = static_cast<uint32_t>(std::stoul(hex.substr(0, colon), nullptr, 16));
      const unsigned port = static_cast<unsigned>(std::stoul(hex.substr(colon + 1), nullptr, 16));
      char buf[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &addr, buf, sizeof(buf));
      return std::string(buf) + ":" + std::to_string(port);
    };
    peers.push_back(endpoint(local) + ">" + endpoint(remote));
  }
  return peers;
}

// One rank of the two-node job: an all_reduce of (rank + 1) * [1 .. 5] in float64, then
// the address Gloo was told to use and the connections this rank holds, printed while every
// rank still holds them (the barrier keeps them open until all have looked).
DIST_SCENARIO(netns_all_reduce) {
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  WCHECK(ifname && *ifname, << "GLOO_SOCKET_IFNAME is not set");
  const std::string my_addr = ipv4_of(ifname);
  WCHECK(!my_addr.empty(), << "interface " << ifname << " has no IPv4 address");
  const char* node = std::getenv("GROUP_RANK");
  WCHECK(node != nullptr, << "GROUP_RANK is not set; start this scenario with ember-run");
  dist::init_process_group({.timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  ember::Tensor t = ember::arange(1, 6).to(ember::kFloat64) * static_cast<double>(rank + 1);
  dist::all_reduce(t);
  const auto got = t.to_vector<double>();
  const double factor = world * (world + 1) / 2.0;
  std::ostringstream sum;
  for (size_t i = 0; i < got.size(); ++i) {
    WCHECK(got[i] == factor * static_cast<double>(i + 1),
           << "element " << i << " is " << got[i] << ", expected " << factor * static_cast<double>(i + 1));
    sum << " " << got[i];
  }
  std::ostringstream report;
  report << "rank " << rank << "/" << world << " node " << node << " iface " << ifname << " addr " << my_addr
         << " master " << std::getenv("MASTER_ADDR") << ":" << std::getenv("MASTER_PORT") << " sum" << sum.str()
         << "\n";
  report << "rank " << rank << " peers";
  for (const auto& p : tcp_peers()) report << " " << p;
  report << "\n";
  std::cout << report.str() << std::flush;
  dist::barrier();
  dist::destroy_process_group();
  return 0;
}

// ---- test side ----

struct Shell {
  int code = -1;
  std::string output;
};

// Runs a shell command, output and errors together.
Shell shell(const std::string& cmd) {
  Shell r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  const int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

constexpr const char* kPrefix = "ember-n";  // namespaces are ember-n0-<pid> and ember-n1-<pid>

// Deletes the namespaces of earlier runs whose process is gone (a run killed before its
// cleanup); those of runs still alive (ctest -j) are left alone.
void remove_stale_namespaces() {
  const Shell list = shell("ip netns list");
  if (list.code != 0) return;
  static const std::regex ours(R"(^(ember-n[01]-([0-9]+))\b.*)");
  std::istringstream lines(list.output);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, ours)) continue;
    const pid_t owner = static_cast<pid_t>(std::stol(m[2].str()));
    if (owner != ::getpid() && ::kill(owner, 0) != 0 && errno == ESRCH) shell("ip netns del " + m[1].str());
  }
}

// Two network namespaces joined by a veth pair: node k is namespace ns[k] with interface
// ifname[k] at addr[k] (10.231.S.1 and .2/24, S from the pid; the namespaces see no other
// interface than their loopback, so the subnet cannot clash with the host's). The
// destructor deletes both namespaces (and with them the veth pair), whatever happened.
class TwoNodes {
 public:
  TwoNodes() {
    remove_stale_namespaces();
    const std::string pid = std::to_string(::getpid());
    const std::string subnet = "10.231." + std::to_string(::getpid() % 250 + 1) + ".";
    for (int k = 0; k < 2; ++k) {
      ns[k] = std::string(kPrefix) + std::to_string(k) + "-" + pid;
      ifname[k] = "ember" + std::to_string(k);
      addr[k] = subnet + std::to_string(k + 1);
    }
    for (int k = 0; k < 2; ++k) {
      const Shell add = shell("ip netns add " + ns[k]);
      if (add.code != 0) {
        skip = "'ip netns add " + ns[k] + "' failed (exit " + std::to_string(add.code) + "): " + add.output;
        return;
      }
      created[k] = true;
    }
    // The veth pair is created with its ends already in the namespaces: it never appears
    // in the host's namespace, so its names cannot clash with another run's.
    const Shell veth =
        shell("ip -n " + ns[0] + " link add " + ifname[0] + " type veth peer name " + ifname[1] + " netns " + ns[1]);
    if (veth.code != 0) {
      skip = "cannot create a veth pair between the namespaces: " + veth.output;
      return;
    }
    for (int k = 0; k < 2; ++k) {
      const std::string n = "ip -n " + ns[k] + " ";
      // Only IPv4 in the namespaces: Gloo then has one address to pick on the veth.
      shell("ip netns exec " + ns[k] + " sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6'");
      for (const std::string& cmd : {n + "link set lo up", n + "addr add " + addr[k] + "/24 dev " + ifname[k],
                                     n + "link set " + ifname[k] + " up"}) {
        const Shell r = shell(cmd);
        if (r.code != 0) {
          error = "'" + cmd + "' failed: " + r.output;
          return;
        }
      }
    }
  }
  ~TwoNodes() {
    for (int k = 0; k < 2; ++k)
      if (created[k]) shell("ip netns del " + ns[k]);
  }
  TwoNodes(const TwoNodes&) = delete;
  TwoNodes& operator=(const TwoNodes&) = delete;

  std::string ns[2], ifname[2], addr[2];
  bool created[2] = {false, false};
  std::string skip;   // non-empty: this machine cannot make the namespaces (why)
  std::string error;  // non-empty: setting them up failed after they were made
};

struct Node {
  pid_t pid = -1;
  std::string log;
  int code = -1;  // ember-run's exit code; -1: stopped at the deadline
  std::string output;
};

// Starts, in namespace ns, `ember-run <launcher_args> <self> --worker <scenario>` with env
// (NAME=VALUE ...) added, in a process group of its own, output to log.
pid_t start_node(const std::string& ns, const std::vector<std::string>& env, const std::string& launcher_args,
                 const std::string& scenario, const std::string& log) {
  char self[4096] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string cmd = "exec ip netns exec " + ns + " env";
  for (const auto& kv : env) cmd += " " + quote(kv);
  cmd += " " + std::string(EMBER_RUN_PATH) + " " + launcher_args + " " +
         quote(std::string(self, static_cast<size_t>(std::max<ssize_t>(n, 0)))) + " --worker " + scenario;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

// Runs scenario as a two-node job, nproc workers per node; stops both launchers (SIGTERM,
// which makes ember-run stop its workers, then SIGKILL) after timeout_s.
std::vector<Node> run_two_nodes(const TwoNodes& net, int nproc, const std::string& scenario, double timeout_s = 90) {
  const std::string dir = dist_test::temp_dir();
  const int port = 29500;  // free: nothing else listens in a namespace made for this run
  std::vector<Node> nodes(2);
  for (int k = 0; k < 2; ++k) {
    // Node 0 names the master with --master-addr/--master-port, node 1 with
    // --rdzv-endpoint: both of torchrun's spellings.
    const std::string where = k == 0 ? "--master-addr " + net.addr[0] + " --master-port " + std::to_string(port)
                                     : "--rdzv-endpoint " + net.addr[0] + ":" + std::to_string(port);
    const std::string args = "--nnodes 2 --node-rank " + std::to_string(k) + " --nproc-per-node " +
                             std::to_string(nproc) + " " + where + " --stop-timeout 2";
    nodes[k].log = dir + "/node" + std::to_string(k) + ".log";
    nodes[k].pid = start_node(net.ns[k], {"GLOO_SOCKET_IFNAME=" + net.ifname[k], "OMP_NUM_THREADS=1"}, args, scenario,
                              nodes[k].log);
  }
  const auto start = std::chrono::steady_clock::now();
  int left = 2;
  bool stopping = false;
  auto stop_at = start;
  while (left > 0) {
    for (auto& node : nodes) {
      int st = 0;
      if (node.pid > 0 && ::waitpid(node.pid, &st, WNOHANG) == node.pid) {
        node.pid = -1;
        --left;
        if (!stopping) node.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (left > 0 && !stopping && std::chrono::duration<double>(now - start).count() > timeout_s) {
      stopping = true;
      stop_at = now;
      for (auto& node : nodes)
        if (node.pid > 0) ::kill(-node.pid, SIGTERM);
    }
    if (left > 0 && stopping && std::chrono::duration<double>(now - stop_at).count() > 10) {
      for (auto& node : nodes)
        if (node.pid > 0) ::kill(-node.pid, SIGKILL);
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& node : nodes) {
    std::ifstream in(node.log);
    std::stringstream ss;
    ss << in.rdbuf();
    node.output = ss.str();
  }
  [[maybe_unused]] int rc = std::system(("rm -rf " + dir).c_str());
  return nodes;
}

std::string dump(const std::vector<Node>& nodes) {
  std::ostringstream os;
  for (size_t k = 0; k < nodes.size(); ++k)
    os << "---- node " << k << " (ember-run exit " << nodes[k].code << ") ----\n" << nodes[k].output << "\n";
  return os.str();
}

// The rest of the line after `prefix` in text ("" when absent).
std::string line_after(const std::string& text, const std::string& prefix) {
  const auto pos = text.find(prefix);
  if (pos == std::string::npos) return "";
  const auto start = pos + prefix.size();
  return text.substr(start, text.find('\n', start) - start);
}

// The connections ("local>remote") listed by `rank <r> peers ...`.
std::vector<std::string> peers_of(const std::string& output, int rank) {
  std::istringstream in(line_after(output, "rank " + std::to_string(rank) + " peers"));
  std::vector<std::string> out;
  std::string p;
  while (in >> p) out.push_back(p);
  return out;
}

// The remote end of a "local>remote" connection.
std::string remote_of(const std::string& conn) { return conn.substr(conn.find('>') + 1); }

// How many connections lead to addr.
int count_at(const std::vector<std::string>& conns, const std::string& addr) {
  int n = 0;
  for (const auto& c : conns)
    if (remote_of(c).rfind(addr + ":", 0) == 0) ++n;
  return n;
}

// The connections to loopback whose other end is not in this same process (rank 0's
// TCPStore client talks to its own server over 127.0.0.1: both ends are listed).
std::vector<std::string> loopback_to_others(const std::vector<std::string>& conns) {
  std::vector<std::string> out;
  for (const auto& c : conns) {
    if (remote_of(c).rfind("127.", 0) != 0) continue;
    const std::string mirror = remote_of(c) + ">" + c.substr(0, c.find('>'));
    if (std::find(conns.begin(), conns.end(), mirror) == conns.end()) out.push_back(c);
  }
  return out;
}

#define NETNS_SETUP(net)                                                                                      \
  if (::geteuid() != 0)                                                                                       \
    GTEST_SKIP() << "needs root to create network namespaces (ip netns add); running as uid " << ::geteuid(); \
  if (shell("ip -V").code != 0) GTEST_SKIP() << "the ip command (iproute2) is missing";                       \
  TwoNodes net;                                                                                               \
  if (!net.skip.empty()) GTEST_SKIP() << "cannot make network namespaces here: " << net.skip;                 \
  ASSERT_TRUE(net.error.empty()) << net.error

}  // namespace netns_test

using namespace netns_test;

TEST(DistributedTwoNodes, NamespacesReachEachOtherOnlyThroughTheVeth) {
  NETNS_SETUP(net);
  for (int k = 0; k < 2; ++k) {
    // Each namespace has its loopback and its end of the veth, nothing else.
    const Shell links = shell("ip -n " + net.ns[k] + " -o link show");
    ASSERT_EQ(links.code, 0) << links.output;
    EXPECT_EQ(std::count(links.output.begin(), links.output.end(), '\n'), 2) << links.output;
    EXPECT_NE(links.output.find(" lo: "), std::string::npos) << links.output;
    EXPECT_NE(links.output.find(" " + net.ifname[k] + "@"), std::string::npos) << links.output;
    // The other node's address is routed through the veth.
    const Shell route = shell("ip -n " + net.ns[k] + " route get " + net.addr[1 - k]);
    ASSERT_EQ(route.code, 0) << route.output;
    EXPECT_NE(route.output.find(net.addr[1 - k] + " dev " + net.ifname[k] + " src " + net.addr[k]), std::string::npos)
        << route.output;
  }
  // Both are listed while the guard lives (AllReduceCrossesTheVeth checks that they are
  // gone after it).
  const Shell list = shell("ip netns list");
  EXPECT_NE(list.output.find(net.ns[0]), std::string::npos) << list.output;
  EXPECT_NE(list.output.find(net.ns[1]), std::string::npos) << list.output;
}

TEST(DistributedTwoNodes, AllReduceCrossesTheVeth) {
  std::string names[2];
  {
    NETNS_SETUP(net);
    names[0] = net.ns[0];
    names[1] = net.ns[1];
    const auto nodes = run_two_nodes(net, 2, "netns_all_reduce");
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(nodes[k].code, 0) << dump(nodes);
      EXPECT_NE(nodes[k].output.find("ember-run: all 2 workers finished successfully"), std::string::npos)
          << dump(nodes);
    }
    // Ranks 0 and 1 on node 0, ranks 2 and 3 on node 1: each has the sum of
    // (rank + 1) * [1 .. 5] over the 4 ranks, and used its node's veth.
    const std::string master = " master " + net.addr[0] + ":29500";
    for (int r = 0; r < 4; ++r) {
      const int k = r / 2;
      const std::string expected = "rank " + std::to_string(r) + "/4 node " + std::to_string(k) + " iface " +
                                   net.ifname[k] + " addr " + net.addr[k] + master + " sum 10 20 30 40 50";
      EXPECT_NE(nodes[k].output.find(expected), std::string::npos) << expected << "\n" << dump(nodes);
      // The connections: none over loopback to another process; at least 2 lead to the
      // other node's veth address (Gloo's pairs with its 2 ranks), and node 1's ranks reach
      // the store on node 0's veth address.
      const auto conns = peers_of(nodes[k].output, r);
      EXPECT_TRUE(loopback_to_others(conns).empty()) << "rank " << r << "\n" << dump(nodes);
      EXPECT_GE(count_at(conns, net.addr[1 - k]), 2) << "rank " << r << "\n" << dump(nodes);
      if (k == 1) {
        EXPECT_TRUE(std::any_of(conns.begin(), conns.end(),
                                [&](const std::string& c) { return remote_of(c) == net.addr[0] + ":29500"; }))
            << "rank " << r << " holds no connection to the store on node 0\n"
            << dump(nodes);
      }
    }
  }
  // The guard deleted both namespaces.
  const Shell list = shell("ip netns list");
  EXPECT_EQ(list.output.find(names[0]), std::string::npos) << list.output;
  EXPECT_EQ(list.output.find(names[1]), std::string::npos) << list.output;
}

TEST(DistributedTwoNodes, DdpAgreesAcrossNodesAndWithLoopback) {
  NETNS_SETUP(net);
  // ddp_grads (ddp_test.cpp): 3 DDP steps, each rank's gradients checked against the
  // single-process gradients of the whole batch, then a digest of the parameters.
  const auto nodes = run_two_nodes(net, 1, "ddp_grads");
  ASSERT_EQ(nodes[0].code, 0) << dump(nodes);
  ASSERT_EQ(nodes[1].code, 0) << dump(nodes);
  const std::string d0 = line_after(nodes[0].output, "digest "), d1 = line_after(nodes[1].output, "digest ");
  EXPECT_FALSE(d0.empty()) << dump(nodes);
  EXPECT_EQ(d0, d1) << dump(nodes);
  // Bit-identical to the same job on one host over loopback.
  const auto local = dist_test::run_ranks("ddp_grads", 2, 60);
  ASSERT_TRUE(local.all_ok()) << local.dump();
  EXPECT_EQ(d0, line_after(local.ranks[0].output, "digest ")) << dump(nodes) << local.dump();
}
