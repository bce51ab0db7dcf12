// ProcessGroupMPI: the collectives of process_group.h over MPI (Open MPI on Debian).
//
// Note [MPI without hangs]: every MPI call that waits on other ranks is a non-blocking
// one (MPI_Iallreduce, MPI_Ibcast, ..., MPI_Isend, MPI_Comm_idup) polled with MPI_Test
// until the group's deadline, so a rank that never arrives turns into an ember::Error
// naming the collective instead of a hang. MPI cannot cancel a collective in flight: after
// a timeout the buffers it may still write are kept alive for the rest of the process and
// the group refuses further collectives (as the Gloo group does). Collectives run on one
// worker thread per group in the order they were issued, or on the waiting thread when it
// is next in line (Note [One worker per group] in process_group_gloo.cpp), so async_op
// overlaps with the caller's work; that needs MPI_THREAD_MULTIPLE. Point-to-point
// operations are posted on the caller's thread, on their own communicator.
//
// Before its data moves, each collective all-gathers the same fingerprint the Gloo group
// sends (collective_common.h), so a mismatch raises the same error on every rank.
//
// Note [MPI progress store]: MPI has no store, but the timeout diagnosis needs one for its
// progress records (Note [Progress records] in progress_records.h), so the default group
// makes one at init: rank 0 starts a TCPStore server on a free port (on loopback when every
// rank runs on its host; otherwise on every interface, reached at MASTER_ADDR if set, else
// at rank 0's host name), MPI broadcasts its address, and the other ranks connect. Each of
// these exchanges is bounded by the timeout, as every collective is. Subgroups keep their
// records under a prefix of the same store. The store is a side channel: when it cannot be
// started or reached, every rank drops it (they agree through one more exchange) and a
// timeout says that the records are unavailable and why, instead of naming ranks; init
// itself never fails because of it.
//
// 16-bit floats are reduced through float32 (MPI has no bfloat16 type): the tensor is
// widened, reduced with MPI's built-in operation, and rounded back once, as on Gloo.

#include "ember/distributed/process_group_mpi.h"

#include "ember/core/check.h"

#ifndef EMBER_HAVE_MPI

namespace ember::distributed::detail {

bool mpi_built() { return false; }

ProcessGroupPtr make_mpi_world_group(ProcessGroup::Options, const char* op) {
  EMBER_ERROR("[", op,
              "] backend 'mpi' is not available: this build of ember has no MPI support. Install Open MPI "
              "(scripts/setup.sh installs libopenmpi-dev and openmpi-bin), re-run cmake and rebuild; or use "
              "backend 'gloo'");
}

ProcessGroupPtr make_mpi_subgroup(const ProcessGroupPtr&, const std::vector<int>&, ProcessGroup::Options) {
  EMBER_ERROR("[new_group] this build of ember has no MPI support");
}

}  // namespace ember::distributed::detail

#else

#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <deque>
#include <thread>
#include <tuple>

#include "ember/distributed/collective_common.h"
#include "ember/distributed/progress_records.h"
#include "ember/distributed/store.h"
#include "ember/ops/join.h"
#include "ember/ops/pointwise.h"

namespace ember::distributed::detail {

bool mpi_built() { return true; }

namespace {

using Clock = std::chrono::steady_clock;

std::string mpi_error_string(int rc) {
  char buf[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(buf, static_cast<size_t>(len));
}

// Throws an ember::Error naming op and what MPI said, unless rc is MPI_SUCCESS.
void check_mpi(int rc, const std::string& op, const char* call) {
  if (rc != MPI_SUCCESS) EMBER_ERROR("[", op, "] ", call, " failed: ", mpi_error_string(rc));
}

// Polls req until it completes (true) or the deadline passes (false). Yields first, then
// sleeps a little longer each round (up to 1 ms): a collective on a busy machine then
// costs little CPU while it waits.
bool poll(MPI_Request* req, Clock::time_point deadline, const std::string& op, MPI_Status* status = MPI_STATUS_IGNORE) {
  for (int round = 0;; ++round) {
    int done = 0;
    check_mpi(MPI_Test(req, &done, status), op, "MPI_Test");
    if (done) return true;
    if (Clock::now() >= deadline) return false;
    if (round < 50) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(std::min(1000, 20 * (round - 49))));
    }
  }
}

// Buffers an abandoned MPI operation may still write: kept until the process exits.
std::mutex g_orphans_mu;
std::vector<std::shared_ptr<void>>& orphans() {
  static auto* v = new std::vector<std::shared_ptr<void>>;
  return *v;
}
void keep_forever(std::shared_ptr<void> p) {
  std::lock_guard<std::mutex> l(g_orphans_mu);
  orphans().push_back(std::move(p));
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::UInt8:
      return MPI_UINT8_T;
    case DType::Int8:
      return MPI_INT8_T;
    case DType::Int16:
      return MPI_INT16_T;
    case DType::Int32:
      return MPI_INT32_T;
    case DType::Int64:
      return MPI_INT64_T;
    case DType::Float32:
      return MPI_FLOAT;
    case DType::Float64:
      return MPI_DOUBLE;
    default:
      EMBER_ERROR("[mpi] no MPI datatype for ", t);
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      return MPI_SUM;
    case ReduceOp::PRODUCT:
      return MPI_PROD;
    case ReduceOp::MIN:
      return MPI_MIN;
    case ReduceOp::MAX:
      return MPI_MAX;
  }
  return MPI_SUM;
}

// MPI counts are ints: an error naming op when n does not fit.
int count_of(int64_t n, const char* op, const char* what) {
  EMBER_CHECK(n >= 0 && n <= INT_MAX, "[", op, "] the ", what, " (", n,
              ") exceeds MPI's int count limit; split the tensor into smaller ones");
  return static_cast<int>(n);
}

// MPI must allow calls from several threads: the group's worker runs collectives while
// the caller posts sends and receives.
void ensure_mpi(const char* op) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  EMBER_CHECK(!finalized, "[", op, "] MPI was already finalized in this process; MPI cannot be initialized twice");
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    EMBER_CHECK(rc == MPI_SUCCESS, "[", op, "] MPI_Init_thread failed (", rc,
                "); start the program with mpirun (e.g. mpirun -np 2 prog)");
    // MPI_Finalize at exit: mpirun treats a process that exits without it as failed.
    std::atexit([] {
      int fin = 0;
      MPI_Finalized(&fin);
      if (!fin) MPI_Finalize();
    });
  } else {
    MPI_Query_thread(&provided);
  }
  EMBER_CHECK(provided >= MPI_THREAD_MULTIPLE, "[", op,
              "] the mpi backend needs MPI_THREAD_MULTIPLE, but MPI provides thread level ", provided,
              initialized ? " (the program initialized MPI itself: call MPI_Init_thread with MPI_THREAD_MULTIPLE, or "
                            "let init_process_group initialize it)"
                          : " (this MPI library was built without thread support)");
}

// A duplicate of comm (its own matching space), made without blocking past the deadline.
MPI_Comm dup_comm(MPI_Comm comm, Clock::time_point deadline, const char* op, long long timeout_ms) {
  MPI_Comm out = MPI_COMM_NULL;
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(MPI_Comm_idup(comm, &out, &req), op, "MPI_Comm_idup");
  EMBER_CHECK(poll(&req, deadline, op), "[", op, "] the other ranks did not join within ", timeout_ms,
              " ms (MPI_Comm_idup); every rank must call ", op);
  MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN);
  return out;
}

// The store a group keeps its progress records in (Note [MPI progress store]): null when
// there is none, `unavailable` then saying why.
struct SideChannel {
  std::shared_ptr<Store> store;
  std::string unavailable;
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Completes a collective on the buffers `keep` holds within timeout; otherwise keeps them
// for good and throws: a rank that does not take part in init is missing, not the store.
void complete_at_init(MPI_Request& req, milliseconds timeout, std::shared_ptr<void> keep, const char* op,
                      const char* call) {
  if (poll(&req, Clock::now() + timeout, op)) return;
  keep_forever(std::move(keep));
  EMBER_ERROR("[", op, "] the other ranks did not join within ", timeout.count(), " ms (", call,
              " while setting up the progress store); every rank must call ", op);
}

// The default group's progress store (Note [MPI progress store]), set up over comm.
SideChannel make_side_channel(MPI_Comm comm, milliseconds timeout, const char* op) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  SideChannel sc;
  if (size == 1) return sc;  // nothing to wait for, so nothing to diagnose
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) std::strcpy(name, "?");
  // Whether every rank runs on this host.
  auto hosts = std::make_shared<std::vector<uint64_t>>(static_cast<size_t>(size) + 1);
  (*hosts)[static_cast<size_t>(size)] = fnv1a(name);
  MPI_Request req;
  check_mpi(MPI_Iallgather(hosts->data() + size, 1, MPI_UINT64_T, hosts->data(), 1, MPI_UINT64_T, comm, &req), op,
            "MPI_Iallgather");
  complete_at_init(req, timeout, hosts, op, "MPI_Iallgather");
  const bool one_host = std::all_of(hosts->begin(), hosts->end(), [&](uint64_t h) { return h == hosts->back(); });
  // Rank 0 starts the server and broadcasts where it listens: "<port>|<host>", or
  // "0|<why not>".
  const char* master = std::getenv("MASTER_ADDR");
  const std::string host = master && *master ? master : one_host ? "127.0.0.1" : name;
  constexpr size_t kAddressBytes = 512;
  auto address = std::make_shared<std::vector<char>>(kAddressBytes, '\0');
  std::shared_ptr<TCPStore> store;
  if (rank == 0) {
    std::string text;
    try {
      store = std::make_shared<TCPStore>(host, 0, true, timeout);
      text = std::to_string(store->port()) + "|" + host;
    } catch (const std::exception& e) {
      text = std::string("0|") + e.what();
    }
    std::memcpy(address->data(), text.data(), std::min(text.size(), kAddressBytes - 1));
  }
  check_mpi(MPI_Ibcast(address->data(), static_cast<int>(kAddressBytes), MPI_CHAR, 0, comm, &req), op, "MPI_Ibcast");
  complete_at_init(req, timeout, address, op, "MPI_Ibcast");
  const std::string text(address->data());
  const auto bar = text.find('|');
  const int port = std::atoi(text.c_str());
  const std::string where = bar == std::string::npos ? "" : text.substr(bar + 1);
  // Connecting gives up sooner than the group's (by default 30-minute) timeout: the store
  // only serves the diagnosis.
  const milliseconds connect_limit = std::min<milliseconds>(timeout, std::chrono::seconds(10));
  bool ok = port > 0;
  if (ok && rank != 0) {
    try {
      store = std::make_shared<TCPStore>(where, port, false, connect_limit);
      store->set_timeout(timeout);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  // Every rank keeps the store, or none does: the first rank without it, or size.
  auto first_failed = std::make_shared<std::pair<int, int>>(ok ? size : rank, size);
  check_mpi(MPI_Iallreduce(&first_failed->first, &first_failed->second, 1, MPI_INT, MPI_MIN, comm, &req), op,
            "MPI_Iallreduce");
  complete_at_init(req, timeout + connect_limit, first_failed, op, "MPI_Iallreduce");
  const int failed = first_failed->second;
  if (failed == size) {
    sc.store = std::move(store);
  } else if (port <= 0) {
    sc.unavailable = "rank 0 could not start a TCPStore for them: " + where;
  } else {
    sc.unavailable = "rank " + std::to_string(failed) + " could not connect to the TCPStore rank 0 started at " +
                     where + ":" + std::to_string(port) + " within " + std::to_string(connect_limit.count()) +
                     " ms; set MASTER_ADDR to an address of rank 0's host that every rank can reach";
  }
  return sc;
}

// A point-to-point operation, completed by wait().
class MpiP2PWork : public Work {
 public:
  MpiP2PWork(std::string what, MPI_Request req, Buffer b, bool is_recv, milliseconds timeout, int* source_rank,
             std::vector<int> ranks)
      : what_(std::move(what)),
        req_(req),
        b_(std::make_shared<Buffer>(std::move(b))),
        recv_(is_recv),
        timeout_(timeout),
        source_(source_rank),
        ranks_(std::move(ranks)) {}
  ~MpiP2PWork() override {
    // Never waited for: wait (bounded by the timeout) so that MPI never writes into freed
    // memory; one that still did not finish keeps its buffer forever.
    try {
      wait(milliseconds::max());
    } catch (...) {
    }
  }
  bool is_completed() const override {
    std::lock_guard<std::mutex> l(mu_);
    return done_;
  }
  bool is_success() const override {
    std::lock_guard<std::mutex> l(mu_);
    return done_ && !error_;
  }
  std::exception_ptr exception() const override {
    std::lock_guard<std::mutex> l(mu_);
    return error_;
  }
  void wait(milliseconds timeout) override {
    std::lock_guard<std::mutex> l(mu_);
    if (!done_) {
      const milliseconds t = std::min(timeout, timeout_);
      try {
        MPI_Status st{};
        if (poll(&req_, Clock::now() + t, what_, &st)) {
          if (recv_) {
            int got = 0;
            MPI_Get_count(&st, MPI_BYTE, &got);
            EMBER_CHECK(static_cast<size_t>(got) == b_->nbytes(), "[", what_, "] received ", got,
                        " bytes but the tensor holds ", b_->nbytes(), "; send and recv tensors must match");
            b_->finish();
            if (source_) *source_ = ranks_.empty() ? st.MPI_SOURCE : ranks_.at(static_cast<size_t>(st.MPI_SOURCE));
          }
        } else {
          if (recv_ && MPI_Cancel(&req_) == MPI_SUCCESS) {
            MPI_Wait(&req_, MPI_STATUS_IGNORE);  // a cancelled receive completes locally
          } else {
            keep_forever(b_);
            MPI_Request_free(&req_);
          }
          EMBER_ERROR("[", what_, "] did not complete within ", t.count(), " ms");
        }
      } catch (...) {
        error_ = std::current_exception();
      }
      done_ = true;
    }
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::string what_;
  MPI_Request req_;
  std::shared_ptr<Buffer> b_;
  bool recv_;
  milliseconds timeout_;
  int* source_;
  std::vector<int> ranks_;
  mutable std::mutex mu_;
  bool done_ = false;
  std::exception_ptr error_;
};

// ---------------------------------------------------------------- the group

class ProcessGroupMPI final : public ProcessGroup {
 public:
  // comm: this group's communicator (the group takes it and duplicates it for
  // point-to-point); split: for the default group, a communicator new_group splits.
  // side: the default group's progress store (Note [MPI progress store]); this group's
  // records go under `prefix` in it.
  ProcessGroupMPI(MPI_Comm comm, Options options, std::vector<int> ranks, const char* op, SideChannel side,
                  const std::string& prefix)
      : ProcessGroup(0, 1, std::move(options), std::move(ranks)), comm_(comm), side_(std::move(side)) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    if (!env_flag("EMBER_DISTRIBUTED_CHECKS", true)) options_.check_collectives = false;
    const auto deadline = Clock::now() + options_.timeout;
    p2p_comm_ = dup_comm(comm_, deadline, op, options_.timeout.count());
    if (ranks_.empty()) split_comm_ = dup_comm(comm_, deadline, op, options_.timeout.count());
    progress_ = std::make_unique<ProgressRecords>(
        *this, side_.store ? std::make_shared<PrefixStore>(prefix, side_.store) : nullptr, side_.unavailable);
    worker_ = std::thread([this] { loop(); });
  }

  ~ProcessGroupMPI() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
    progress_.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    // A broken group may have operations in flight on its communicators: leave them.
    if (!finalized && broken_.empty()) {
      MPI_Comm_free(&p2p_comm_);
      if (split_comm_ != MPI_COMM_NULL) MPI_Comm_free(&split_comm_);
      MPI_Comm_free(&comm_);
    }
  }

  std::string backend() const override { return "mpi"; }
  uint64_t sequence_number() const override { return seq_.load(); }
  MPI_Comm split_comm() const { return split_comm_; }
  // The progress store of the next subgroup (every rank of the default group calls it
  // once per new_group, members or not, so the numbering agrees).
  std::pair<SideChannel, std::string> next_subgroup_side() {
    return {side_, "mpi_group_" + std::to_string(++subgroups_made_)};
  }

  // ---- collectives ----

  WorkPtr all_reduce(const Tensor& t, ReduceOp op) override {
    check_tensor("all_reduce", t, true, op);
    return enqueue("all_reduce", make_fingerprint(Coll::AllReduce, t, op, -1), [this, t, op](const Task& task) {
      auto b = std::make_shared<Buffer>(make_buffer(t, true));
      if (size_ > 1 && b->nbytes() > 0) {
        const int n = count_of(b->work.numel(), "all_reduce", "element count");
        MPI_Request req;
        start(task, MPI_Iallreduce(MPI_IN_PLACE, b->bytes(), n, mpi_type(b->work.dtype()), mpi_op(op), comm_, &req),
              "MPI_Iallreduce");
        await(task, req, "the data exchange", b);
      }
      finish_reduction(*b, op);
    });
  }

  WorkPtr broadcast(const Tensor& t, int root) override {
    check_tensor("broadcast", t, false, std::nullopt);
    check_root_arg("broadcast", root, "src", size_);
    return enqueue("broadcast", make_fingerprint(Coll::Broadcast, t, std::nullopt, root),
                   [this, t, root](const Task& task) {
                     auto b = std::make_shared<Buffer>(make_buffer(t, false, rank_ == root));
                     if (size_ > 1 && b->nbytes() > 0) {
                       const int n = count_of(static_cast<int64_t>(b->nbytes()), "broadcast", "byte count");
                       MPI_Request req;
                       start(task, MPI_Ibcast(b->bytes(), n, MPI_BYTE, root, comm_, &req), "MPI_Ibcast");
                       await(task, req, "the data exchange", b);
                     }
                     b->finish();
                   });
  }

  WorkPtr reduce(const Tensor& t, int root, ReduceOp op) override {
    check_tensor("reduce", t, true, op);
    check_root_arg("reduce", root, "dst", size_);
    return enqueue("reduce", make_fingerprint(Coll::Reduce, t, op, root), [this, t, root, op](const Task& task) {
      auto b = std::make_shared<Buffer>(make_buffer(t, true));
      if (size_ > 1 && b->nbytes() > 0) {
        const int n = count_of(b->work.numel(), "reduce", "element count");
        MPI_Request req;
        const bool me = rank_ == root;
        start(task,
              MPI_Ireduce(me ? MPI_IN_PLACE : b->bytes(), me ? b->bytes() : nullptr, n, mpi_type(b->work.dtype()),
                          mpi_op(op), root, comm_, &req),
              "MPI_Ireduce");
        await(task, req, "the data exchange", b);
      }
      if (rank_ == root) finish_reduction(*b, op);
    });
  }

  WorkPtr all_gather(const std::vector<Tensor>& outputs, const Tensor& input) override {
    check_tensor("all_gather", input, false, std::nullopt);
    check_list_arg("all_gather", "tensor_list", outputs, input, size_);
    return enqueue("all_gather", make_fingerprint(Coll::AllGather, input, std::nullopt, -1),
                   [this, outputs, input](const Task& task) {
                     NoGradGuard ng;
                     Tensor flat = empty({static_cast<int64_t>(size_) * input.numel()}, input.options());
                     gather_all(task, input.detach().contiguous(), flat);
                     for (int r = 0; r < size_; ++r)
                       Tensor(outputs[static_cast<size_t>(r)])
                           .copy_(flat.narrow(0, r * input.numel(), input.numel()).view(input.sizes()));
                   });
  }

  WorkPtr all_gather_into_tensor(const Tensor& output, const Tensor& input) override {
    check_tensor("all_gather_into_tensor", input, false, std::nullopt);
    check_tensor("all_gather_into_tensor", output, false, std::nullopt);
    EMBER_CHECK(output.dtype() == input.dtype() && output.numel() == input.numel() * size_,
                "[all_gather_into_tensor] the output (", output.dtype(), " with ", output.numel(),
                " elements) must have the input's dtype (", input.dtype(), ") and world_size (", size_,
                ") times its elements (", input.numel() * size_, ")");
    return enqueue("all_gather_into_tensor", make_fingerprint(Coll::AllGather, input, std::nullopt, -1),
                   [this, output, input](const Task& task) {
                     NoGradGuard ng;
                     Buffer out = make_buffer(output, false, false);
                     gather_all(task, input.detach().contiguous(), out.work);
                     out.finish();
                   });
  }

  WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) override {
    check_tensor("reduce_scatter", output, true, op);
    check_list_arg("reduce_scatter", "input_list", inputs, output, size_);
    return enqueue("reduce_scatter", make_fingerprint(Coll::ReduceScatter, output, op, -1),
                   [this, output, inputs, op](const Task& task) {
                     NoGradGuard ng;
                     std::vector<Tensor> parts;
                     for (const auto& t : inputs) parts.push_back(t.detach().reshape({-1}).to(reduce_type(output.dtype())));
                     reduce_scatter_flat(task, output, cat(parts, 0).contiguous(), op);
                   });
  }

  WorkPtr reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op) override {
    check_tensor("reduce_scatter_tensor", output, true, op);
    check_tensor("reduce_scatter_tensor", input, true, op);
    EMBER_CHECK(input.dtype() == output.dtype() && input.numel() == output.numel() * size_,
                "[reduce_scatter_tensor] the input (", short_dtype(input.dtype()), " with ", input.numel(),
                " elements) must have the output's dtype (", short_dtype(output.dtype()), ") and world_size (", size_,
                ") times its elements (", output.numel() * size_, ")");
    return enqueue("reduce_scatter_tensor", make_fingerprint(Coll::ReduceScatter, output, op, -1),
                   [this, output, input, op](const Task& task) {
                     NoGradGuard ng;
                     reduce_scatter_flat(task, output,
                                         input.detach().reshape({-1}).to(reduce_type(output.dtype())).contiguous(), op);
                   });
  }

  WorkPtr gather(const Tensor& input, const std::vector<Tensor>& outputs, int root) override {
    check_tensor("gather", input, false, std::nullopt);
    check_root_arg("gather", root, "dst", size_);
    if (rank_ == root) {
      check_list_arg("gather", "gather_list", outputs, input, size_);
    } else {
      EMBER_CHECK(outputs.empty(), "[gather] gather_list must be empty on ranks other than dst (rank ",
                  global_rank(rank_), " passed ", outputs.size(), " tensors; dst is rank ", global_rank(root), ")");
    }
    return enqueue("gather", make_fingerprint(Coll::Gather, input, std::nullopt, root),
                   [this, input, outputs, root](const Task& task) {
                     NoGradGuard ng;
                     auto in = std::make_shared<Tensor>(input.detach().contiguous());
                     auto flat = std::make_shared<Tensor>();
                     if (rank_ == root) *flat = empty({static_cast<int64_t>(size_) * input.numel()}, input.options());
                     if (size_ > 1 && in->nbytes() > 0) {
                       const int n = count_of(static_cast<int64_t>(in->nbytes()), "gather", "byte count");
                       MPI_Request req;
                       start(task,
                             MPI_Igather(in->data_ptr(), n, MPI_BYTE, rank_ == root ? flat->data_ptr() : nullptr, n,
                                         MPI_BYTE, root, comm_, &req),
                             "MPI_Igather");
                       await(task, req, "the data exchange", std::make_shared<std::pair<std::shared_ptr<Tensor>, std::shared_ptr<Tensor>>>(in, flat));
                     } else if (rank_ == root) {
                       flat->copy_(in->reshape({-1}));
                     }
                     if (rank_ == root) {
                       for (int r = 0; r < size_; ++r)
                         Tensor(outputs[static_cast<size_t>(r)])
                             .copy_(flat->narrow(0, r * input.numel(), input.numel()).view(input.sizes()));
                     }
                   });
  }

  WorkPtr scatter(const Tensor& output, const std::vector<Tensor>& inputs, int root) override {
    check_tensor("scatter", output, false, std::nullopt);
    check_root_arg("scatter", root, "src", size_);
    if (rank_ == root) {
      check_list_arg("scatter", "scatter_list", inputs, output, size_);
    } else {
      EMBER_CHECK(inputs.empty(), "[scatter] scatter_list must be empty on ranks other than src (rank ",
                  global_rank(rank_), " passed ", inputs.size(), " tensors; src is rank ", global_rank(root), ")");
    }
    return enqueue("scatter", make_fingerprint(Coll::Scatter, output, std::nullopt, root),
                   [this, output, inputs, root](const Task& task) {
                     NoGradGuard ng;
                     auto out = std::make_shared<Buffer>(make_buffer(output, false, false));
                     auto flat = std::make_shared<Tensor>();
                     if (rank_ == root) {
                       std::vector<Tensor> parts;
                       for (const auto& t : inputs) parts.push_back(t.detach().reshape({-1}));
                       *flat = cat(parts, 0).contiguous();
                     }
                     if (size_ > 1 && out->nbytes() > 0) {
                       const int n = count_of(static_cast<int64_t>(out->nbytes()), "scatter", "byte count");
                       MPI_Request req;
                       start(task,
                             MPI_Iscatter(rank_ == root ? flat->data_ptr() : nullptr, n, MPI_BYTE, out->bytes(), n,
                                          MPI_BYTE, root, comm_, &req),
                             "MPI_Iscatter");
                       await(task, req, "the data exchange", std::make_shared<std::pair<std::shared_ptr<Buffer>, std::shared_ptr<Tensor>>>(out, flat));
                     } else if (size_ == 1) {
                       out->work.copy_(inputs[0]);
                     }
                     out->finish();
                   });
  }

  WorkPtr all_to_all(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs) override {
    EMBER_CHECK(!inputs.empty(), "[all_to_all] input_tensor_list is empty; it needs world_size (", size_, ") tensors");
    check_tensor("all_to_all", inputs[0], false, std::nullopt);
    check_list_arg("all_to_all", "input_tensor_list", inputs, inputs[0], size_);
    check_list_arg("all_to_all", "output_tensor_list", outputs, inputs[0], size_);
    return enqueue("all_to_all", make_fingerprint(Coll::AllToAll, inputs[0], std::nullopt, -1),
                   [this, outputs, inputs](const Task& task) {
                     NoGradGuard ng;
                     std::vector<Tensor> parts;
                     for (const auto& t : inputs) parts.push_back(t.detach().reshape({-1}));
                     auto in = std::make_shared<Tensor>(cat(parts, 0).contiguous());
                     auto out = std::make_shared<Tensor>(empty_like(*in));
                     const int64_t n = inputs[0].numel();
                     const int64_t bytes = n * inputs[0].element_size();
                     if (size_ > 1 && bytes > 0) {
                       const int c = count_of(bytes, "all_to_all", "byte count");
                       MPI_Request req;
                       start(task, MPI_Ialltoall(in->data_ptr(), c, MPI_BYTE, out->data_ptr(), c, MPI_BYTE, comm_, &req),
                             "MPI_Ialltoall");
                       await(task, req, "the data exchange", std::make_shared<std::pair<std::shared_ptr<Tensor>, std::shared_ptr<Tensor>>>(in, out));
                     } else {
                       out->copy_(*in);
                     }
                     for (int r = 0; r < size_; ++r)
                       Tensor(outputs[static_cast<size_t>(r)]).copy_(out->narrow(0, r * n, n).view(inputs[0].sizes()));
                   });
  }

  WorkPtr all_to_all_single(const Tensor& output, const Tensor& input) override {
    return all_to_all_single(output, input, {}, {});
  }

  WorkPtr all_to_all_single(const Tensor& output, const Tensor& input, const std::vector<int64_t>& output_splits,
                            const std::vector<int64_t>& input_splits) override {
    constexpr const char* op = "all_to_all_single";
    check_tensor(op, input, false, std::nullopt);
    check_tensor(op, output, false, std::nullopt);
    const AllToAllSplits splits = check_all_to_all_single_args(op, output, input, output_splits, input_splits, size_);
    const std::vector<int64_t>& ins = splits.input;
    const std::vector<int64_t>& outs = splits.output;
    const bool uneven = splits.uneven;
    Fingerprint fp = make_fingerprint(Coll::AllToAll, input, std::nullopt, -1);
    if (uneven) {
      // The first dims legitimately differ; the splits are checked against each other below.
      fp.shape[0] = -1;
      fp.numel = -1;
    }
    return enqueue(op, fp, [this, output, input, outs, ins, uneven](const Task& task) {
      NoGradGuard ng;
      if (uneven && options_.check_collectives && size_ > 1) {
        auto mine = std::make_shared<std::vector<int64_t>>(ins);
        mine->insert(mine->end(), outs.begin(), outs.end());
        auto all = std::make_shared<std::vector<int64_t>>(mine->size() * static_cast<size_t>(size_));
        const int c = static_cast<int>(mine->size());
        MPI_Request req;
        start(task, MPI_Iallgather(mine->data(), c, MPI_INT64_T, all->data(), c, MPI_INT64_T, comm_, &req),
              "MPI_Iallgather");
        await(task, req, "the exchange of split sizes", std::make_shared<std::pair<decltype(mine), decltype(all)>>(mine, all));
        check_split_agreement(*all, *this);
      }
      auto in = std::make_shared<Tensor>(input.detach().contiguous());
      auto out = std::make_shared<Buffer>(make_buffer(output, false, false));
      int64_t row = input.element_size();
      for (int64_t d = 1; d < input.dim(); ++d) row *= input.size(d);
      if (size_ == 1) {
        if (in->nbytes()) std::memcpy(out->work.data_ptr(), in->data_ptr(), in->nbytes());
      } else {
        std::vector<int> sc, sd, rc, rd;
        int64_t so = 0, ro = 0;
        for (int r = 0; r < size_; ++r) {
          const int64_t s = ins[static_cast<size_t>(r)] * row, g = outs[static_cast<size_t>(r)] * row;
          sc.push_back(count_of(s, "all_to_all_single", "byte count"));
          sd.push_back(count_of(so, "all_to_all_single", "byte offset"));
          rc.push_back(count_of(g, "all_to_all_single", "byte count"));
          rd.push_back(count_of(ro, "all_to_all_single", "byte offset"));
          so += s;
          ro += g;
        }
        auto counts = std::make_shared<std::vector<std::vector<int>>>(std::vector<std::vector<int>>{sc, sd, rc, rd});
        auto& v = *counts;
        MPI_Request req;
        start(task,
              MPI_Ialltoallv(in->data_ptr(), v[0].data(), v[1].data(), MPI_BYTE, out->work.data_ptr(), v[2].data(),
                             v[3].data(), MPI_BYTE, comm_, &req),
              "MPI_Ialltoallv");
        await(task, req, "the data exchange",
              std::make_shared<std::tuple<decltype(in), decltype(out), decltype(counts)>>(in, out, counts));
      }
      out->finish();
    });
  }

  WorkPtr barrier() override {
    Fingerprint fp;
    fp.coll = static_cast<uint8_t>(Coll::Barrier);
    return enqueue("barrier", fp, [this](const Task& task) {
      if (size_ == 1) return;
      MPI_Request req;
      start(task, MPI_Ibarrier(comm_, &req), "MPI_Ibarrier");
      await(task, req, "the barrier", nullptr);
    });
  }

  // ---- point to point ----

  WorkPtr send(const Tensor& t, int dst, int tag) override {
    check_tensor("send", t, false, std::nullopt);
    EMBER_CHECK(dst >= 0 && dst < size_ && dst != rank_, "[send] dst ", dst, " must be another rank of the group (",
                "this is rank ", rank_, " of ", size_, ")");
    check_tag("send", tag);
    Buffer b = make_buffer(t, false);
    const int n = count_of(static_cast<int64_t>(b.nbytes()), "send", "byte count");
    MPI_Request req;
    check_mpi(MPI_Isend(b.bytes(), n, MPI_BYTE, dst, tag, p2p_comm_, &req), "send", "MPI_Isend");
    return std::make_shared<MpiP2PWork>(
        "send to rank " + std::to_string(global_rank(dst)) + " (tag " + std::to_string(tag) + ")", req, std::move(b),
        false, options_.timeout, nullptr, ranks_);
  }

  WorkPtr recv(const Tensor& t, int src, int tag, int* source_rank) override {
    check_tensor("recv", t, false, std::nullopt);
    EMBER_CHECK(src < size_ && src != rank_, "[recv] src ", src, " must be another rank of the group (this is rank ",
                rank_, " of ", size_, ") or -1 for any");
    check_tag("recv", tag);
    Buffer b = make_buffer(t, false, false);
    const int n = count_of(static_cast<int64_t>(b.nbytes()), "recv", "byte count");
    MPI_Request req;
    check_mpi(MPI_Irecv(b.bytes(), n, MPI_BYTE, src >= 0 ? src : MPI_ANY_SOURCE, tag, p2p_comm_, &req), "recv",
              "MPI_Irecv");
    const std::string what = src >= 0 ? "recv from rank " + std::to_string(global_rank(src)) : "recv from any rank";
    return std::make_shared<MpiP2PWork>(what + " (tag " + std::to_string(tag) + ")", req, std::move(b), true,
                                        options_.timeout, source_rank, ranks_);
  }

 private:
  struct Task {
    std::string op;
    Fingerprint fp;
    std::function<void(const Task&)> body;
    std::shared_ptr<WorkImpl> work;
    Clock::time_point deadline;
  };

  void check_tensor(const char* op, const Tensor& t, bool reducing, std::optional<ReduceOp> rop) const {
    check_tensor_arg(op, t, reducing, rop, "mpi");
    check_usable(op);
  }

  void check_usable(const char* op) const {
    std::lock_guard<std::mutex> l(mu_);
    EMBER_CHECK(broken_.empty(), "[", op, "] the process group is unusable after an earlier failure: ", broken_);
  }

  static void check_tag(const char* op, int tag) {
    int* ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    const int limit = found && ub ? *ub : 32767;
    EMBER_CHECK(tag >= 0 && tag <= limit, "[", op, "] tag ", tag, " is outside MPI's range 0 .. ", limit);
  }

  static DType reduce_type(DType t) { return (t == kFloat16 || t == kBFloat16) ? kFloat32 : t; }

  void finish_reduction(Buffer& b, ReduceOp op) const {
    if (op == ReduceOp::AVG) {
      NoGradGuard ng;
      b.work.div_(size_);
    }
    b.finish();
  }

  // The failure of a non-blocking call's start.
  void start(const Task& task, int rc, const char* call) {
    if (rc == MPI_SUCCESS) return;
    const std::string msg = "collective #" + std::to_string(task.fp.seq) + " " + describe(task.fp, *this) + ": " +
                            call + " failed: " + mpi_error_string(rc);
    mark_broken(msg);
    EMBER_ERROR("[", task.op, "] ", msg, ". The process group is unusable now");
  }

  // Waits for req until the task's deadline (Note [MPI without hangs]); on a timeout keeps
  // `keep` (what MPI may still write) alive for good and throws.
  void await(const Task& task, MPI_Request& req, const char* stage, std::shared_ptr<void> keep) {
    if (poll(&req, task.deadline, task.op)) return;
    if (keep) keep_forever(std::move(keep));
    const std::string what = "collective #" + std::to_string(task.fp.seq) + " " + describe(task.fp, *this);
    mark_broken(what + " timed out");
    const std::string arrivals =
        progress_->arrivals(task.fp.seq,
                            ": every rank reached it by its progress record, so MPI did not finish it in time (a rank "
                            "may be stuck inside MPI, or the timeout is too short for the data)");
    EMBER_ERROR("[", task.op, "] ", what, " did not complete within ", options_.timeout.count(), " ms on rank ",
                global_rank(rank_), " (waiting for ", stage, ")", arrivals,
                ". MPI cannot cancel a collective in flight; the process group is unusable now");
  }

  void mark_broken(const std::string& why) {
    std::lock_guard<std::mutex> l(mu_);
    if (broken_.empty()) broken_ = why;
  }

  void gather_all(const Task& task, const Tensor& in, const Tensor& out) {
    if (size_ == 1 || in.nbytes() == 0) {
      if (in.nbytes()) std::memcpy(out.data_ptr(), in.data_ptr(), in.nbytes());
      return;
    }
    const int n = count_of(static_cast<int64_t>(in.nbytes()), task.op.c_str(), "byte count");
    MPI_Request req;
    start(task, MPI_Iallgather(in.data_ptr(), n, MPI_BYTE, out.data_ptr(), n, MPI_BYTE, comm_, &req),
          "MPI_Iallgather");
    await(task, req, "the data exchange", std::make_shared<std::pair<Tensor, Tensor>>(in, out));
  }

  // work: size_ chunks of output's elements, in the reduction dtype.
  void reduce_scatter_flat(const Task& task, const Tensor& output, const Tensor& work, ReduceOp op) {
    const int64_t n = output.numel();
    auto mine = std::make_shared<Tensor>(empty({n}, work.options()));
    if (size_ > 1 && n > 0) {
      const int c = count_of(n, task.op.c_str(), "element count");
      auto keep = std::make_shared<std::pair<Tensor, std::shared_ptr<Tensor>>>(work, mine);
      MPI_Request req;
      start(task,
            MPI_Ireduce_scatter_block(work.data_ptr(), mine->data_ptr(), c, mpi_type(work.dtype()), mpi_op(op), comm_,
                                      &req),
            "MPI_Ireduce_scatter_block");
      await(task, req, "the data exchange", keep);
    } else if (n > 0) {
      mine->copy_(work.narrow(0, 0, n));
    }
    Tensor result = *mine;
    if (op == ReduceOp::AVG) result = result / static_cast<double>(size_);
    Tensor(output).copy_(result.view(output.sizes()));
  }

  // ---- the worker (Note [One worker per group] in process_group_gloo.cpp) ----

  WorkPtr enqueue(const char* op, Fingerprint fp, std::function<void(const Task&)> body) {
    auto work = std::make_shared<WorkImpl>(std::string(op), [this](WorkImpl* w) { return run_inline(w); });
    Task task;
    {
      std::lock_guard<std::mutex> l(mu_);
      fp.seq = ++seq_;
      task = Task{op, fp, std::move(body), work, {}};
      if (!SynchronousCall::active() || busy_ || !queue_.empty()) {
        queue_.push_back(std::move(task));
        task.work = nullptr;
      } else {
        busy_ = true;  // a synchronous call with nothing ahead of it: run it right here
      }
    }
    if (task.work) {
      execute(task);
    } else {
      cv_.notify_one();
    }
    return work;
  }

  void loop() {
    while (true) {
      Task task;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return stop_ || (!queue_.empty() && !busy_); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
      }
      execute(task);
    }
  }

  bool run_inline(WorkImpl* w) {
    Task task;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (busy_ || queue_.empty() || queue_.front().work.get() != w) return false;
      task = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    execute(task);
    return true;
  }

  void execute(Task& task) {
    try {
      run(task);
      task.work->finish(nullptr);
    } catch (...) {
      task.work->finish(std::current_exception());
    }
    bool more = false;
    {
      std::lock_guard<std::mutex> l(mu_);
      busy_ = false;
      more = !queue_.empty();
    }
    if (more) cv_.notify_all();
  }

  void run(Task& task) {
    check_usable(task.op.c_str());
    progress_->started(task.fp);  // Note [Progress records] in progress_records.h
    // The timeout counts from when the collective starts running on this rank.
    task.deadline = Clock::now() + options_.timeout;
    if (options_.check_collectives && size_ > 1) {
      auto all = std::make_shared<std::vector<Fingerprint>>(static_cast<size_t>(size_));
      auto mine = std::make_shared<Fingerprint>(task.fp);
      const int n = static_cast<int>(sizeof(Fingerprint));
      MPI_Request req;
      start(task, MPI_Iallgather(mine.get(), n, MPI_BYTE, all->data(), n, MPI_BYTE, comm_, &req), "MPI_Iallgather");
      await(task, req, "the fingerprint exchange", std::make_shared<std::pair<decltype(mine), decltype(all)>>(mine, all));
      check_fingerprints(task.op, task.fp.seq, *all, *this);
    }
    task.body(task);
  }

  MPI_Comm comm_;
  SideChannel side_;
  int subgroups_made_ = 0;
  std::unique_ptr<ProgressRecords> progress_;
  MPI_Comm p2p_comm_ = MPI_COMM_NULL;
  MPI_Comm split_comm_ = MPI_COMM_NULL;
  std::thread worker_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stop_ = false;
  bool busy_ = false;
  std::atomic<uint64_t> seq_{0};
  std::string broken_;
};

}  // namespace

ProcessGroupPtr make_mpi_world_group(ProcessGroup::Options options, const char* op) {
  ensure_mpi(op);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const auto deadline = Clock::now() + options.timeout;
  MPI_Comm comm = dup_comm(MPI_COMM_WORLD, deadline, op, options.timeout.count());
  SideChannel side = make_side_channel(comm, options.timeout, op);
  return std::make_shared<ProcessGroupMPI>(comm, std::move(options), std::vector<int>{}, op, std::move(side),
                                           "default_pg");
}

ProcessGroupPtr make_mpi_subgroup(const ProcessGroupPtr& world, const std::vector<int>& ranks,
                                  ProcessGroup::Options options) {
  constexpr const char* op = "new_group";
  auto* w = dynamic_cast<ProcessGroupMPI*>(world.get());
  EMBER_CHECK(w != nullptr && w->split_comm() != MPI_COMM_NULL, "[", op,
              "] an mpi subgroup needs the default group to be an mpi group");
  const int me = w->rank();
  auto [side, prefix] = w->next_subgroup_side();
  const bool member = std::find(ranks.begin(), ranks.end(), me) != ranks.end();
  const auto deadline = Clock::now() + options.timeout;
  // Every rank first shows up (bounded), so the blocking split below cannot wait forever
  // on a rank that never calls new_group. The ranks also compare the member lists.
  uint64_t h = 1469598103934665603ull;
  for (int r : ranks) h = (h ^ static_cast<uint64_t>(r + 1)) * 1099511628211ull;
  std::vector<uint64_t> all(static_cast<size_t>(w->size()));
  MPI_Request req;
  check_mpi(MPI_Iallgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, w->split_comm(), &req), op,
            "MPI_Iallgather");
  if (!poll(&req, deadline, op)) {
    keep_forever(std::make_shared<std::pair<uint64_t, std::vector<uint64_t>>>(h, std::move(all)));
    EMBER_ERROR("[", op, "] some rank did not call new_group within ", options.timeout.count(),
                " ms; every rank of the default group must call it, members or not, in the same order");
  }
  for (size_t r = 0; r < all.size(); ++r) {
    EMBER_CHECK(all[r] == h, "[", op, "] rank ", r, " asked for a different member list than rank ", me,
                "; every rank must call new_group with the same ranks in the same order");
  }
  MPI_Comm comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(w->split_comm(), member ? 0 : MPI_UNDEFINED, me, &comm), op, "MPI_Comm_split");
  if (!member) return nullptr;
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return std::make_shared<ProcessGroupMPI>(comm, std::move(options), ranks, op, std::move(side), prefix);
}

}  // namespace ember::distributed::detail

#endif  // EMBER_HAVE_MPI
