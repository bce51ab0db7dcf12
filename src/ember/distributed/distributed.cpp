// The torch.distributed-style entry points of distributed.h: process-wide state (the
// default group, its store, subgroups) and the free collective functions.

#include "ember/distributed/distributed.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "ember/core/check.h"
#include "ember/distributed/process_group_mpi.h"

namespace ember::distributed {

namespace {

struct State {
  std::mutex mu;
  ProcessGroupPtr group;
  std::shared_ptr<Store> store;
  std::vector<ProcessGroupPtr> subgroups;
  int next_group_id = 0;
  std::string master_addr;
};

State& state() {
  static State* s = new State;  // never destroyed: groups may outlive static destruction order
  return *s;
}

std::string env_str(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

int env_int(const char* name, const char* op, bool required, int fallback) {
  const std::string v = env_str(name);
  if (v.empty()) {
    EMBER_CHECK(!required, "[", op, "] environment variable ", name,
                " is not set; start the processes with ember-run (or torchrun), or pass it explicitly");
    return fallback;
  }
  try {
    size_t used = 0;
    const int x = std::stoi(v, &used);
    EMBER_CHECK(used == v.size(), "");
    return x;
  } catch (...) {
    EMBER_ERROR("[", op, "] environment variable ", name, "='", v, "' is not an integer");
  }
}

bool is_loopback(const std::string& host) {
  return host.empty() || host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

const ProcessGroupPtr& resolve(const ProcessGroupPtr& group, const char* op) {
  if (group) return group;
  auto& s = state();
  EMBER_CHECK(s.group != nullptr, "[", op,
              "] the default process group is not initialized; call "
              "init_process_group() first");
  return s.group;
}

// The group rank of global rank r, or an error naming the op.
int to_group(const ProcessGroup& g, int r, const char* op, const char* what) {
  const int gr = g.group_rank(r);
  EMBER_CHECK(gr >= 0, "[", op, "] ", what, " rank ", r, " is not a member of the group (size ", g.size(), ")");
  return gr;
}

// Issues a collective; a synchronous one may run on this thread (detail::SynchronousCall).
template <typename F>
WorkPtr issue(bool async_op, F&& f) {
  if (async_op) return f();
  detail::SynchronousCall sync;
  WorkPtr w = f();
  w->wait();
  return w;
}

}  // namespace

void init_process_group(const InitOptions& o) {
  constexpr const char* op = "init_process_group";
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  EMBER_CHECK(s.group == nullptr, "[", op,
              "] the default process group is already initialized; call "
              "destroy_process_group() first");
  if (o.backend == "mpi") {
    // Rank and world size come from MPI (mpirun); no store or init_method is involved.
    ProcessGroup::Options po;
    po.timeout = o.timeout;
    po.check_collectives = o.check_collectives;
    auto g = detail::make_mpi_world_group(po, op);
    EMBER_CHECK(o.rank < 0 || o.rank == g->rank(), "[", op, "] rank ", o.rank, " was given, but MPI says this is rank ",
                g->rank(), "; with backend 'mpi' leave rank unset (mpirun assigns it)");
    EMBER_CHECK(o.world_size < 0 || o.world_size == g->size(), "[", op, "] world_size ", o.world_size,
                " was given, but MPI started ", g->size(), " processes; with backend 'mpi' leave world_size unset");
    s.group = std::move(g);
    s.store = nullptr;
    s.master_addr.clear();
    s.next_group_id = 0;
    return;
  }
  EMBER_CHECK(o.backend == "gloo", "[", op, "] backend '", o.backend, "' is not available; this build has 'gloo'",
              detail::mpi_built() ? " and 'mpi'" : " (MPI support was not built; NCCL is not supported)");
  const int rank = o.rank >= 0 ? o.rank : env_int("RANK", op, true, 0);
  const int world = o.world_size >= 0 ? o.world_size : env_int("WORLD_SIZE", op, true, 1);
  EMBER_CHECK(world >= 1 && rank >= 0 && rank < world, "[", op, "] rank ", rank, " is out of range for world_size ",
              world, " (ranks are 0 .. world_size - 1)");
  std::shared_ptr<Store> store = o.store;
  std::string host;
  if (!store) {
    const std::string& m = o.init_method;
    if (m == "env://" || m.empty()) {
      host = env_str("MASTER_ADDR");
      EMBER_CHECK(!host.empty(), "[", op,
                  "] init_method env:// needs MASTER_ADDR (the host of rank 0); start the "
                  "processes with ember-run, or set MASTER_ADDR and MASTER_PORT");
      const int port = env_int("MASTER_PORT", op, true, 0);
      store = std::make_shared<TCPStore>(host, port, rank == 0, o.timeout);
    } else if (m.rfind("tcp://", 0) == 0) {
      std::string rest = m.substr(6);
      const auto q = rest.find('?');
      if (q != std::string::npos) rest = rest.substr(0, q);
      const auto colon = rest.rfind(':');
      EMBER_CHECK(colon != std::string::npos && colon + 1 < rest.size(), "[", op, "] init_method '", m,
                  "' must be tcp://host:port");
      host = rest.substr(0, colon);
      int port = 0;
      try {
        port = std::stoi(rest.substr(colon + 1));
      } catch (...) {
        EMBER_ERROR("[", op, "] init_method '", m, "' has no valid port");
      }
      store = std::make_shared<TCPStore>(host, port, rank == 0, o.timeout);
    } else if (m.rfind("file://", 0) == 0) {
      const std::string path = m.substr(7);
      EMBER_CHECK(!path.empty(), "[", op, "] init_method '", m, "' names no file");
      store = std::make_shared<FileStore>(path, o.timeout);
    } else {
      EMBER_ERROR("[", op, "] init_method '", m, "' is not supported; use env://, tcp://host:port or file:///path");
    }
  }
  ProcessGroup::Options po;
  po.timeout = o.timeout;
  po.check_collectives = o.check_collectives;
  po.interface_name = env_str("GLOO_SOCKET_IFNAME");
  if (po.interface_name.empty() && !is_loopback(host)) {
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) == 0) po.hostname = name;
  }
  auto prefixed = std::make_shared<PrefixStore>("default_pg", store);
  s.group = make_gloo_process_group(prefixed, rank, world, po);
  s.store = store;
  s.master_addr = host;
  s.next_group_id = 0;
}

bool is_mpi_available() { return detail::mpi_built(); }

bool is_initialized() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.group != nullptr;
}

void destroy_process_group() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.subgroups.clear();
  s.group.reset();
  s.store.reset();
  s.next_group_id = 0;
}

const ProcessGroupPtr& default_group() { return resolve(nullptr, "default_group"); }

const std::shared_ptr<Store>& default_store() {
  auto& s = state();
  EMBER_CHECK(s.group != nullptr, "[default_store] the default process group is not initialized");
  EMBER_CHECK(s.store != nullptr, "[default_store] the default group uses backend '", s.group->backend(),
              "', which meets through MPI, not through a store; create a TCPStore or FileStore yourself if you need one");
  return s.store;
}

int get_rank(const ProcessGroupPtr& group) {
  const auto& g = resolve(group, "get_rank");
  return g->rank();
}

int get_world_size(const ProcessGroupPtr& group) { return resolve(group, "get_world_size")->size(); }

std::string get_backend(const ProcessGroupPtr& group) { return resolve(group, "get_backend")->backend(); }

// Under mpirun (no LOCAL_RANK), Open MPI's own variables say the same.
int get_local_rank() {
  if (env_str("LOCAL_RANK").empty() && !env_str("OMPI_COMM_WORLD_LOCAL_RANK").empty())
    return env_int("OMPI_COMM_WORLD_LOCAL_RANK", "get_local_rank", false, 0);
  return env_int("LOCAL_RANK", "get_local_rank", false, 0);
}
int get_local_world_size() {
  if (env_str("LOCAL_WORLD_SIZE").empty() && !env_str("OMPI_COMM_WORLD_LOCAL_SIZE").empty())
    return env_int("OMPI_COMM_WORLD_LOCAL_SIZE", "get_local_world_size", false, 1);
  return env_int("LOCAL_WORLD_SIZE", "get_local_world_size", false, 1);
}

ProcessGroupPtr new_group(std::vector<int> ranks, std::chrono::milliseconds timeout) {
  constexpr const char* op = "new_group";
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  EMBER_CHECK(s.group != nullptr, "[", op, "] the default process group is not initialized");
  const int world = s.group->size();
  if (ranks.empty()) {
    for (int r = 0; r < world; ++r) ranks.push_back(r);
  }
  std::sort(ranks.begin(), ranks.end());
  for (size_t i = 0; i < ranks.size(); ++i) {
    EMBER_CHECK(ranks[i] >= 0 && ranks[i] < world, "[", op, "] rank ", ranks[i], " is out of range for world_size ",
                world);
    EMBER_CHECK(i == 0 || ranks[i] != ranks[i - 1], "[", op, "] rank ", ranks[i], " is listed twice");
  }
  const int id = ++s.next_group_id;
  const int me = s.group->rank();
  if (s.group->backend() == "mpi") {
    // Every rank takes part in the communicator split; non-members get null.
    ProcessGroup::Options po = s.group->options();
    if (timeout.count() > 0) po.timeout = timeout;
    auto g = detail::make_mpi_subgroup(s.group, ranks, po);
    if (g) s.subgroups.push_back(g);
    return g;
  }
  auto it = std::find(ranks.begin(), ranks.end(), me);
  if (it == ranks.end()) return nullptr;
  ProcessGroup::Options po = s.group->options();
  if (timeout.count() > 0) po.timeout = timeout;
  auto prefixed = std::make_shared<PrefixStore>("group_" + std::to_string(id), s.store);
  auto g = make_gloo_process_group(prefixed, static_cast<int>(it - ranks.begin()), static_cast<int>(ranks.size()), po,
                                   ranks);
  s.subgroups.push_back(g);
  return g;
}

// ---- collectives ----

WorkPtr all_reduce(const Tensor& tensor, ReduceOp op, const ProcessGroupPtr& group, bool async_op) {
  return issue(async_op, [&] { return resolve(group, "all_reduce")->all_reduce(tensor, op); });
}

WorkPtr broadcast(const Tensor& tensor, int src, const ProcessGroupPtr& group, bool async_op) {
  const auto& g = resolve(group, "broadcast");
  return issue(async_op, [&] { return g->broadcast(tensor, to_group(*g, src, "broadcast", "src")); });
}

WorkPtr reduce(const Tensor& tensor, int dst, ReduceOp op, const ProcessGroupPtr& group, bool async_op) {
  const auto& g = resolve(group, "reduce");
  return issue(async_op, [&] { return g->reduce(tensor, to_group(*g, dst, "reduce", "dst"), op); });
}

WorkPtr all_gather(const std::vector<Tensor>& tensor_list, const Tensor& tensor, const ProcessGroupPtr& group,
                   bool async_op) {
  return issue(async_op, [&] { return resolve(group, "all_gather")->all_gather(tensor_list, tensor); });
}

WorkPtr all_gather_into_tensor(const Tensor& output, const Tensor& input, const ProcessGroupPtr& group, bool async_op) {
  return issue(async_op,
               [&] { return resolve(group, "all_gather_into_tensor")->all_gather_into_tensor(output, input); });
}

WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& input_list, ReduceOp op,
                       const ProcessGroupPtr& group, bool async_op) {
  return issue(async_op, [&] { return resolve(group, "reduce_scatter")->reduce_scatter(output, input_list, op); });
}

WorkPtr reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op, const ProcessGroupPtr& group,
                              bool async_op) {
  return issue(async_op,
               [&] { return resolve(group, "reduce_scatter_tensor")->reduce_scatter_tensor(output, input, op); });
}

WorkPtr gather(const Tensor& tensor, const std::vector<Tensor>& gather_list, int dst, const ProcessGroupPtr& group,
               bool async_op) {
  const auto& g = resolve(group, "gather");
  return issue(async_op, [&] { return g->gather(tensor, gather_list, to_group(*g, dst, "gather", "dst")); });
}

WorkPtr scatter(const Tensor& tensor, const std::vector<Tensor>& scatter_list, int src, const ProcessGroupPtr& group,
                bool async_op) {
  const auto& g = resolve(group, "scatter");
  return issue(async_op, [&] { return g->scatter(tensor, scatter_list, to_group(*g, src, "scatter", "src")); });
}

WorkPtr all_to_all(const std::vector<Tensor>& output_tensor_list, const std::vector<Tensor>& input_tensor_list,
                   const ProcessGroupPtr& group, bool async_op) {
  return issue(async_op,
               [&] { return resolve(group, "all_to_all")->all_to_all(output_tensor_list, input_tensor_list); });
}

WorkPtr all_to_all_single(const Tensor& output, const Tensor& input, const ProcessGroupPtr& group, bool async_op) {
  return issue(async_op, [&] { return resolve(group, "all_to_all_single")->all_to_all_single(output, input); });
}

WorkPtr all_to_all_single(const Tensor& output, const Tensor& input, const std::vector<int64_t>& output_split_sizes,
                          const std::vector<int64_t>& input_split_sizes, const ProcessGroupPtr& group, bool async_op) {
  return issue(async_op, [&] {
    return resolve(group, "all_to_all_single")->all_to_all_single(output, input, output_split_sizes, input_split_sizes);
  });
}

WorkPtr barrier(const ProcessGroupPtr& group, bool async_op) {
  return issue(async_op, [&] { return resolve(group, "barrier")->barrier(); });
}

void send(const Tensor& tensor, int dst, const ProcessGroupPtr& group, int tag) {
  isend(tensor, dst, group, tag)->wait();
}

int recv(const Tensor& tensor, int src, const ProcessGroupPtr& group, int tag) {
  int from = -1;
  irecv(tensor, src, group, tag, &from)->wait();
  return from;
}

WorkPtr isend(const Tensor& tensor, int dst, const ProcessGroupPtr& group, int tag) {
  const auto& g = resolve(group, "send");
  return g->send(tensor, to_group(*g, dst, "send", "dst"), tag);
}

WorkPtr irecv(const Tensor& tensor, int src, const ProcessGroupPtr& group, int tag, int* source_rank) {
  const auto& g = resolve(group, "recv");
  return g->recv(tensor, src < 0 ? -1 : to_group(*g, src, "recv", "src"), tag, source_rank);
}

}  // namespace ember::distributed
