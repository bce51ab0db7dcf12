// ProcessGroupGloo: the collectives of process_group.h over Gloo's TCP transport.
//
// Note [One worker per group]: collectives run on one worker thread per group, in the
// order they were issued, so every rank drives Gloo through the same sequence and
// async_op collectives overlap with the caller's work (DDP's backward). A thread that
// waits on a collective which is next in line while nothing runs executes it itself
// (one task at a time either way): a synchronous call then avoids two thread hand-overs,
// which dominate small collectives on a busy machine. Sequence
// numbers are assigned when a collective is issued, on the caller's thread. Point-to-point
// operations are posted on the caller's thread instead (Gloo's unbound buffers allow it)
// and completed by Work::wait, so a send and a recv issued in either order never wait on
// each other through the queue.

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/shape.h"
#include "ember/distributed/collective_common.h"
#include "ember/distributed/gloo_sync_lane.h"
#include "ember/distributed/process_group.h"
#include "ember/distributed/progress_records.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"
#include "ember/ops/pointwise.h"

namespace ember::distributed {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
      return "SUM";
    case ReduceOp::AVG:
      return "AVG";
    case ReduceOp::PRODUCT:
      return "PRODUCT";
    case ReduceOp::MIN:
      return "MIN";
    case ReduceOp::MAX:
      return "MAX";
  }
  return "?";
}

namespace detail {
namespace {
thread_local bool tl_synchronous = false;
}
SynchronousCall::SynchronousCall() : previous_(tl_synchronous) { tl_synchronous = true; }
SynchronousCall::~SynchronousCall() { tl_synchronous = previous_; }
bool SynchronousCall::active() { return tl_synchronous; }
}  // namespace detail

int ProcessGroup::group_rank(int global) const {
  if (ranks_.empty()) return global >= 0 && global < size_ ? global : -1;
  auto it = std::find(ranks_.begin(), ranks_.end(), global);
  return it == ranks_.end() ? -1 : static_cast<int>(it - ranks_.begin());
}

namespace {

using namespace ember::distributed::detail;  // collective_common.h
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// ---------------------------------------------------------------- Gloo's store

// Gloo's rendezvous reads and writes through ember's store.
class GlooStoreAdapter : public gloo::rendezvous::Store {
 public:
  explicit GlooStoreAdapter(std::shared_ptr<distributed::Store> s) : s_(std::move(s)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    s_->set(key, Bytes(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    Bytes b = s_->get(key);
    return std::vector<char>(b.begin(), b.end());
  }
  void wait(const std::vector<std::string>& keys) override { s_->wait(keys); }
  void wait(const std::vector<std::string>& keys, const milliseconds& timeout) override { s_->wait(keys, timeout); }

 private:
  std::shared_ptr<distributed::Store> s_;
};

// ---------------------------------------------------------------- reductions

template <typename T>
void reduce_sum(void* c, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(c);
  auto* x = static_cast<const T*>(a);
  auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = static_cast<T>(x[i] + y[i]);
}
template <typename T>
void reduce_prod(void* c, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(c);
  auto* x = static_cast<const T*>(a);
  auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = static_cast<T>(x[i] * y[i]);
}
template <typename T>
void reduce_min(void* c, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(c);
  auto* x = static_cast<const T*>(a);
  auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = y[i] < x[i] ? y[i] : x[i];
}
template <typename T>
void reduce_max(void* c, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(c);
  auto* x = static_cast<const T*>(a);
  auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = y[i] > x[i] ? y[i] : x[i];
}

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

template <typename T>
ReduceFn pick(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      return &reduce_sum<T>;
    case ReduceOp::PRODUCT:
      return &reduce_prod<T>;
    case ReduceOp::MIN:
      return &reduce_min<T>;
    case ReduceOp::MAX:
      return &reduce_max<T>;
  }
  return nullptr;
}

// The reduction for a buffer of dtype t (16-bit floats are reduced as float32).
ReduceFn reduce_fn(DType t, ReduceOp op) {
  switch (t) {
    case DType::UInt8:
      return pick<uint8_t>(op);
    case DType::Int8:
      return pick<int8_t>(op);
    case DType::Int16:
      return pick<int16_t>(op);
    case DType::Int32:
      return pick<int32_t>(op);
    case DType::Int64:
      return pick<int64_t>(op);
    case DType::Float32:
      return pick<float>(op);
    case DType::Float64:
      return pick<double>(op);
    default:
      return nullptr;
  }
}

// Gloo's typed setters only use sizeof(T): calls f(type tag) with the unsigned type of
// the buffer's element size.
template <typename F>
void with_element_type(size_t elem, F f) {
  switch (elem) {
    case 1:
      f(uint8_t{});
      break;
    case 2:
      f(uint16_t{});
      break;
    case 4:
      f(uint32_t{});
      break;
    default:
      f(uint64_t{});
  }
}
template <typename Options>
void set_output(Options& o, void* p, size_t nbytes, size_t elem) {
  with_element_type(elem, [&](auto tag) {
    using T = decltype(tag);
    o.template setOutput<T>(static_cast<T*>(p), nbytes / sizeof(T));
  });
}
template <typename Options>
void set_input(Options& o, void* p, size_t nbytes, size_t elem) {
  with_element_type(elem, [&](auto tag) {
    using T = decltype(tag);
    o.template setInput<T>(static_cast<T*>(p), nbytes / sizeof(T));
  });
}

constexpr uint8_t kP2PSlotPrefix = 0x40;
constexpr uint8_t kReduceScatterSlotPrefix = 0x41;
// Payload bytes carried in every fingerprint record (Note [Fused small all-reduce]).
constexpr size_t kInlinePayloadBytes = 1024;
constexpr size_t kRecordBytes = sizeof(Fingerprint) + kInlinePayloadBytes;

// A point-to-point operation, completed by wait().
class P2PWork : public Work {
 public:
  P2PWork(std::string what, std::unique_ptr<gloo::transport::UnboundBuffer> buf, Buffer b, bool is_recv,
          milliseconds timeout, int* source_rank, std::vector<int> ranks)
      : what_(std::move(what)),
        buf_(std::move(buf)),
        b_(std::move(b)),
        recv_(is_recv),
        timeout_(timeout),
        source_(source_rank),
        ranks_(std::move(ranks)) {}
  ~P2PWork() override {
    // An operation never waited for still references the tensor's memory: wait for it
    // (bounded by the timeout) so that Gloo never writes into freed memory.
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
        int src = -1;
        const bool ok = recv_ ? buf_->waitRecv(&src, t) : buf_->waitSend(&src, t);
        EMBER_CHECK(ok, "[", what_, "] was aborted");
        if (recv_) {
          b_.finish();
          if (source_) *source_ = ranks_.empty() ? src : ranks_.at(static_cast<size_t>(src));
        }
      } catch (const gloo::Exception& e) {
        error_ = std::make_exception_ptr(
            Error("[" + what_ + "] did not complete within " + std::to_string(t.count()) + " ms (" + e.what() + ")"));
      } catch (...) {
        error_ = std::current_exception();
      }
      done_ = true;
    }
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::string what_;
  std::unique_ptr<gloo::transport::UnboundBuffer> buf_;
  Buffer b_;
  bool recv_;
  milliseconds timeout_;
  int* source_;
  std::vector<int> ranks_;
  mutable std::mutex mu_;
  bool done_ = false;
  std::exception_ptr error_;
};

// ---------------------------------------------------------------- the group

class ProcessGroupGloo final : public ProcessGroup {
 public:
  ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size, Options options, std::vector<int> ranks)
      : ProcessGroup(rank, size, std::move(options), std::move(ranks)), store_(std::move(store)) {
    EMBER_CHECK(size >= 1 && rank >= 0 && rank < size, "[init_process_group] rank ", rank,
                " is out of range for world_size ", size);
    if (!env_flag("EMBER_DISTRIBUTED_CHECKS", true)) options_.check_collectives = false;
    // Gloo writes to sockets without MSG_NOSIGNAL: a peer that died would kill this
    // process with SIGPIPE instead of failing the collective (Python ignores SIGPIPE, so
    // PyTorch never meets this). Ignore it unless the program installed its own handler.
    struct sigaction old {};
    if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);
    gloo::transport::tcp::attr attr;
    if (!options_.interface_name.empty()) {
      attr.iface = options_.interface_name;
    } else {
      attr.hostname = options_.hostname.empty() ? "127.0.0.1" : options_.hostname;
    }
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      context_ = std::make_shared<gloo::rendezvous::Context>(rank, size);
      context_->setTimeout(options_.timeout);
      GlooStoreAdapter adapter(store_);
      context_->connectFullMesh(adapter, device_);
      if (size > 1 && env_flag("EMBER_DISTRIBUTED_SYNC_LANE", true)) {
        GlooStoreAdapter lane_store(std::make_shared<PrefixStore>("sync_lane", store_));
        lane_ = std::make_unique<SyncLane>(lane_store, device_, rank, size, options_.timeout, kRecordBytes);
      }
    } catch (const gloo::Exception& e) {
      EMBER_ERROR("[init_process_group] rank ", global_rank(rank), " could not connect to the other ", size - 1,
                  " rank", size == 2 ? "" : "s", " within ", options_.timeout.count(), " ms: ", e.what());
    }
    progress_ = std::make_unique<ProgressRecords>(*this, store_);
    worker_ = std::thread([this] { loop(); });
  }

  ~ProcessGroupGloo() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
    progress_.reset();
  }

  std::string backend() const override { return "gloo"; }
  uint64_t sequence_number() const override { return seq_.load(); }

  // ---- collectives ----

  WorkPtr all_reduce(const Tensor& t, ReduceOp op) override {
    check_tensor("all_reduce", t, true, op);
    Fingerprint fp = make_fingerprint(Coll::AllReduce, t, op, -1);
    // Note [Fused small all-reduce]: a tensor that fits in the fingerprint record travels in
    // it: one all-gather carries every rank's fingerprint and data, and each rank reduces the
    // W copies itself, in rank order (the same order on every rank, so the results agree bit
    // for bit). That saves the second round trip of a checked small all-reduce.
    const size_t work_bytes =
        static_cast<size_t>(t.numel()) * (t.dtype() == kFloat16 || t.dtype() == kBFloat16 ? 4 : t.element_size());
    std::function<void(const Task&, uint32_t)> fused;
    if (work_bytes <= kInlinePayloadBytes) {
      fused = [this, t, op](const Task& task, uint32_t tag) {
        Buffer b = make_buffer(t, true);
        std::vector<uint8_t> all;
        exchange_fingerprints(task, tag, b.work.data_ptr(), b.nbytes(), &all);
        reduce_copies(b, all.data(), kInlinePayloadBytes, op);
        if (op == ReduceOp::AVG) {
          NoGradGuard ng;
          b.work.div_(size_);
        }
        b.finish();
      };
    }
    return enqueue(
        "all_reduce", fp,
        [this, t, op](uint32_t tag) mutable {
          Buffer b = make_buffer(t, true);
          if (size_ > 1 && lane_ && b.nbytes() > 0 && b.nbytes() <= SyncLane::kMaxBytes) {
            // Note [Sync lane]: all-gather, then every rank reduces the copies in rank order.
            const uint8_t* all = lane_->all_gather(b.bytes(), b.nbytes());
            reduce_copies(b, all, b.nbytes(), op);
          } else if (size_ > 1) {
            gloo::AllreduceOptions o(context_);
            set_output(o, b.work.data_ptr(), b.nbytes(), b.work.element_size());
            o.setReduceFunction(reduce_fn(b.work.dtype(), op));
            o.setTag(tag);
            o.setTimeout(options_.timeout);
            gloo::allreduce(o);
          }
          if (op == ReduceOp::AVG) {
            NoGradGuard ng;
            b.work.div_(size_);
          }
          b.finish();
        },
        std::move(fused));
  }

  WorkPtr broadcast(const Tensor& t, int root) override {
    check_tensor("broadcast", t, false, std::nullopt);
    check_root("broadcast", root, "src");
    Fingerprint fp = make_fingerprint(Coll::Broadcast, t, std::nullopt, root);
    return enqueue("broadcast", fp, [this, t, root](uint32_t tag) mutable {
      Buffer b = make_buffer(t, false, rank_ == root);
      if (size_ > 1 && lane_ && b.nbytes() > 0 && b.nbytes() <= SyncLane::kMaxBytes) {
        // Note [Sync lane]: for small tensors an all-gather on the lane is faster than Gloo's
        // broadcast; every rank keeps the root's copy.
        const uint8_t* all = lane_->all_gather(b.bytes(), b.nbytes());
        if (rank_ != root) std::memcpy(b.bytes(), all + static_cast<size_t>(root) * b.nbytes(), b.nbytes());
      } else if (size_ > 1) {
        gloo::BroadcastOptions o(context_);
        set_output(o, b.work.data_ptr(), b.nbytes(), 1);
        o.setRoot(root);
        o.setTag(tag);
        o.setTimeout(options_.timeout);
        gloo::broadcast(o);
      }
      b.finish();
    });
  }

  WorkPtr reduce(const Tensor& t, int root, ReduceOp op) override {
    check_tensor("reduce", t, true, op);
    check_root("reduce", root, "dst");
    Fingerprint fp = make_fingerprint(Coll::Reduce, t, op, root);
    return enqueue("reduce", fp, [this, t, root, op](uint32_t tag) mutable {
      Buffer b = make_buffer(t, true);
      if (size_ > 1) {
        gloo::ReduceOptions o(context_);
        set_output(o, b.work.data_ptr(), b.nbytes(), b.work.element_size());
        o.setRoot(root);
        o.setReduceFunction(reduce_fn(b.work.dtype(), op));
        o.setTag(tag);
        o.setTimeout(options_.timeout);
        gloo::reduce(o);
      }
      if (rank_ == root) {
        if (op == ReduceOp::AVG) {
          NoGradGuard ng;
          b.work.div_(size_);
        }
        b.finish();
      }
    });
  }

  WorkPtr all_gather(const std::vector<Tensor>& outputs, const Tensor& input) override {
    check_tensor("all_gather", input, false, std::nullopt);
    check_list("all_gather", "tensor_list", outputs, input);
    Fingerprint fp = make_fingerprint(Coll::AllGather, input, std::nullopt, -1);
    return enqueue("all_gather", fp, [this, outputs, input](uint32_t tag) mutable {
      NoGradGuard ng;
      Tensor in = input.detach().contiguous();
      Tensor flat = empty({static_cast<int64_t>(size_) * input.numel()}, input.options());
      gather_all(in, flat, tag);
      for (int r = 0; r < size_; ++r) {
        Tensor(outputs[static_cast<size_t>(r)])
            .copy_(flat.narrow(0, r * input.numel(), input.numel()).view(input.sizes()));
      }
    });
  }

  WorkPtr all_gather_into_tensor(const Tensor& output, const Tensor& input) override {
    check_tensor("all_gather_into_tensor", input, false, std::nullopt);
    check_tensor("all_gather_into_tensor", output, false, std::nullopt);
    EMBER_CHECK(output.dtype() == input.dtype() && output.numel() == input.numel() * size_,
                "[all_gather_into_tensor] the output (", output.dtype(), " with ", output.numel(),
                " elements) must have the input's dtype (", input.dtype(), ") and world_size (", size_,
                ") times its elements (", input.numel() * size_, ")");
    Fingerprint fp = make_fingerprint(Coll::AllGather, input, std::nullopt, -1);
    return enqueue("all_gather_into_tensor", fp, [this, output, input](uint32_t tag) mutable {
      NoGradGuard ng;
      Tensor in = input.detach().contiguous();
      Buffer out = make_buffer(output, false, false);
      gather_all(in, out.work, tag);
      out.finish();
    });
  }

  WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) override {
    check_tensor("reduce_scatter", output, true, op);
    check_list("reduce_scatter", "input_list", inputs, output);
    Fingerprint fp = make_fingerprint(Coll::ReduceScatter, output, op, -1);
    return enqueue("reduce_scatter", fp, [this, output, inputs, op](uint32_t tag) mutable {
      NoGradGuard ng;
      const DType wt = reduce_type(output.dtype());
      std::vector<Tensor> flat_parts;
      for (const auto& t : inputs) flat_parts.push_back(t.detach().reshape({-1}).to(wt));
      Tensor work = cat(flat_parts, 0).contiguous();
      finish_reduce_scatter(output, work, op, tag);
    });
  }

  WorkPtr reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op) override {
    check_tensor("reduce_scatter_tensor", output, true, op);
    check_tensor("reduce_scatter_tensor", input, true, op);
    EMBER_CHECK(input.dtype() == output.dtype() && input.numel() == output.numel() * size_,
                "[reduce_scatter_tensor] the input (", short_dtype(input.dtype()), " with ", input.numel(),
                " elements) must have the output's dtype (", short_dtype(output.dtype()), ") and world_size (", size_,
                ") times its elements (", output.numel() * size_, ")");
    Fingerprint fp = make_fingerprint(Coll::ReduceScatter, output, op, -1);
    return enqueue("reduce_scatter_tensor", fp, [this, output, input, op](uint32_t tag) mutable {
      NoGradGuard ng;
      // A private copy: the ring accumulates in place.
      Tensor work = input.detach().reshape({-1}).to(reduce_type(output.dtype()), /*copy=*/true).contiguous();
      finish_reduce_scatter(output, work, op, tag);
    });
  }

  WorkPtr gather(const Tensor& input, const std::vector<Tensor>& outputs, int root) override {
    check_tensor("gather", input, false, std::nullopt);
    check_root("gather", root, "dst");
    if (rank_ == root) {
      check_list("gather", "gather_list", outputs, input);
    } else {
      EMBER_CHECK(outputs.empty(), "[gather] gather_list must be empty on ranks other than dst (rank ",
                  global_rank(rank_), " passed ", outputs.size(), " tensors; dst is rank ", global_rank(root), ")");
    }
    Fingerprint fp = make_fingerprint(Coll::Gather, input, std::nullopt, root);
    return enqueue("gather", fp, [this, input, outputs, root](uint32_t tag) mutable {
      NoGradGuard ng;
      Tensor in = input.detach().contiguous();
      Tensor flat;
      if (rank_ == root) flat = empty({static_cast<int64_t>(size_) * input.numel()}, input.options());
      if (size_ > 1) {
        gloo::GatherOptions o(context_);
        set_input(o, in.data_ptr(), in.nbytes(), 1);
        if (rank_ == root) set_output(o, flat.data_ptr(), flat.nbytes(), 1);
        o.setRoot(root);
        o.setTag(tag);
        o.setTimeout(options_.timeout);
        gloo::gather(o);
      } else {
        flat.copy_(in.reshape({-1}));
      }
      if (rank_ == root) {
        for (int r = 0; r < size_; ++r)
          Tensor(outputs[static_cast<size_t>(r)])
              .copy_(flat.narrow(0, r * input.numel(), input.numel()).view(input.sizes()));
      }
    });
  }

  WorkPtr scatter(const Tensor& output, const std::vector<Tensor>& inputs, int root) override {
    check_tensor("scatter", output, false, std::nullopt);
    check_root("scatter", root, "src");
    if (rank_ == root) {
      check_list("scatter", "scatter_list", inputs, output);
    } else {
      EMBER_CHECK(inputs.empty(), "[scatter] scatter_list must be empty on ranks other than src (rank ",
                  global_rank(rank_), " passed ", inputs.size(), " tensors; src is rank ", global_rank(root), ")");
    }
    Fingerprint fp = make_fingerprint(Coll::Scatter, output, std::nullopt, root);
    return enqueue("scatter", fp, [this, output, inputs, root](uint32_t tag) mutable {
      NoGradGuard ng;
      Buffer out = make_buffer(output, false, false);
      if (size_ > 1) {
        std::vector<Tensor> ins;
        std::vector<uint8_t*> ptrs;
        gloo::ScatterOptions o(context_);
        if (rank_ == root) {
          for (const auto& t : inputs) {
            ins.push_back(t.detach().contiguous());
            ptrs.push_back(static_cast<uint8_t*>(ins.back().data_ptr()));
          }
          o.setInputs<uint8_t>(ptrs, out.nbytes());
        }
        o.setOutput<uint8_t>(out.bytes(), out.nbytes());
        o.setRoot(root);
        o.setTag(tag);
        o.setTimeout(options_.timeout);
        gloo::scatter(o);
      } else {
        out.work.copy_(inputs[0]);
      }
      out.finish();
    });
  }

  WorkPtr all_to_all(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs) override {
    EMBER_CHECK(!inputs.empty(), "[all_to_all] input_tensor_list is empty; it needs world_size (", size_, ") tensors");
    check_tensor("all_to_all", inputs[0], false, std::nullopt);
    check_list("all_to_all", "input_tensor_list", inputs, inputs[0]);
    check_list("all_to_all", "output_tensor_list", outputs, inputs[0]);
    Fingerprint fp = make_fingerprint(Coll::AllToAll, inputs[0], std::nullopt, -1);
    return enqueue("all_to_all", fp, [this, outputs, inputs](uint32_t tag) mutable {
      NoGradGuard ng;
      std::vector<Tensor> parts;
      for (const auto& t : inputs) parts.push_back(t.detach().reshape({-1}));
      Tensor in = cat(parts, 0).contiguous();
      Tensor out = empty_like(in);
      exchange_all(in, out, tag);
      const int64_t n = inputs[0].numel();
      for (int r = 0; r < size_; ++r)
        Tensor(outputs[static_cast<size_t>(r)]).copy_(out.narrow(0, r * n, n).view(inputs[0].sizes()));
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
      // The ranks' first dims legitimately differ: compare the rest (the splits are
      // checked against each other inside the collective).
      fp.shape[0] = -1;
      fp.numel = -1;
    }
    return enqueue(op, fp, [this, output, input, outs, ins, uneven](uint32_t tag) mutable {
      NoGradGuard ng;
      if (uneven && options_.check_collectives && size_ > 1) check_splits(ins, outs, tag);
      Tensor in = input.detach().contiguous();
      Buffer out = make_buffer(output, false, false);
      int64_t row = input.element_size();
      for (int64_t d = 1; d < input.dim(); ++d) row *= input.size(d);
      if (size_ == 1) {
        if (in.nbytes()) std::memcpy(out.work.data_ptr(), in.data_ptr(), in.nbytes());
      } else {
        std::vector<int64_t> in_bytes, out_bytes;
        for (int r = 0; r < size_; ++r) {
          in_bytes.push_back(ins[static_cast<size_t>(r)] * row);
          out_bytes.push_back(outs[static_cast<size_t>(r)] * row);
        }
        gloo::AlltoallvOptions o(context_);
        o.setInput<uint8_t>(static_cast<uint8_t*>(in.data_ptr()), in_bytes);
        o.setOutput<uint8_t>(static_cast<uint8_t*>(out.work.data_ptr()), out_bytes);
        o.setTag(tag);
        o.setTimeout(options_.timeout);
        gloo::alltoallv(o);
      }
      out.finish();
    });
  }

  WorkPtr barrier() override {
    Fingerprint fp;
    fp.coll = static_cast<uint8_t>(Coll::Barrier);
    return enqueue("barrier", fp, [this](uint32_t tag) mutable {
      if (size_ == 1) return;
      if (lane_) {
        const uint8_t arrived = 1;
        lane_->all_gather(&arrived, 1);  // no rank leaves an all-gather before every rank joined it
        return;
      }
      gloo::BarrierOptions o(context_);
      o.setTag(tag);
      o.setTimeout(options_.timeout);
      gloo::barrier(o);
    });
  }

  // ---- point to point ----

  WorkPtr send(const Tensor& t, int dst, int tag) override {
    check_tensor("send", t, false, std::nullopt);
    EMBER_CHECK(dst >= 0 && dst < size_ && dst != rank_, "[send] dst ", dst, " must be another rank of the group (",
                "this is rank ", rank_, " of ", size_, ")");
    check_usable("send");
    Buffer b = make_buffer(t, false);
    auto buf = context_->createUnboundBuffer(b.work.data_ptr(), b.nbytes());
    buf->send(dst, gloo::Slot::build(kP2PSlotPrefix, static_cast<uint32_t>(tag)));
    return std::make_shared<P2PWork>(
        "send to rank " + std::to_string(global_rank(dst)) + " (tag " + std::to_string(tag) + ")", std::move(buf),
        std::move(b), false, options_.timeout, nullptr, ranks_);
  }

  WorkPtr recv(const Tensor& t, int src, int tag, int* source_rank) override {
    check_tensor("recv", t, false, std::nullopt);
    EMBER_CHECK(src < size_ && src != rank_, "[recv] src ", src, " must be another rank of the group (this is rank ",
                rank_, " of ", size_, ") or -1 for any");
    check_usable("recv");
    Buffer b = make_buffer(t, false, false);
    auto buf = context_->createUnboundBuffer(b.work.data_ptr(), b.nbytes());
    const auto slot = gloo::Slot::build(kP2PSlotPrefix, static_cast<uint32_t>(tag));
    if (src >= 0) {
      buf->recv(src, slot);
    } else {
      std::vector<int> others;
      for (int r = 0; r < size_; ++r)
        if (r != rank_) others.push_back(r);
      buf->recv(others, slot);
    }
    const std::string what = src >= 0 ? "recv from rank " + std::to_string(global_rank(src)) : "recv from any rank";
    return std::make_shared<P2PWork>(what + " (tag " + std::to_string(tag) + ")", std::move(buf), std::move(b), true,
                                     options_.timeout, source_rank, ranks_);
  }

 private:
  struct Task {
    std::string op;
    Fingerprint fp;
    std::function<void(uint32_t)> body;
    std::shared_ptr<WorkImpl> work;
    // Note [Fused small all-reduce]: when set and the checks are on, runs instead of the
    // fingerprint exchange and body, moving the data inside the fingerprint exchange.
    std::function<void(const Task&, uint32_t)> fused = nullptr;
  };

  // ---- argument checks (on the caller's thread, so errors name the call) ----

  void check_tensor(const char* op, const Tensor& t, bool reducing, std::optional<ReduceOp> rop) const {
    check_tensor_arg(op, t, reducing, rop, "gloo");
    check_usable(op);
  }

  void check_root(const char* op, int root, const char* what) const { check_root_arg(op, root, what, size_); }

  void check_list(const char* op, const char* name, const std::vector<Tensor>& list, const Tensor& like) const {
    check_list_arg(op, name, list, like, size_);
  }

  void check_usable(const char* op) const {
    std::lock_guard<std::mutex> l(mu_);
    EMBER_CHECK(broken_.empty(), "[", op, "] the process group is unusable after an earlier failure: ", broken_);
  }

  // ---- the worker ----

  WorkPtr enqueue(const char* op, Fingerprint fp, std::function<void(uint32_t)> body,
                  std::function<void(const Task&, uint32_t)> fused = nullptr) {
    auto work = std::make_shared<WorkImpl>(std::string(op), [this](WorkImpl* w) { return run_inline(w); });
    Task task;
    {
      std::lock_guard<std::mutex> l(mu_);
      fp.seq = ++seq_;
      task = Task{op, fp, std::move(body), work, std::move(fused)};
      if (!detail::SynchronousCall::active() || busy_ || !queue_.empty()) {
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
        if (queue_.empty()) return;  // stopping, nothing left
        task = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
      }
      execute(task);
    }
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

  // A thread waiting for w runs it itself when w is next in line and nothing runs: a
  // synchronous collective then costs no hand-over to the worker and back.
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

  void run(const Task& task) {
    {
      std::lock_guard<std::mutex> l(mu_);
      EMBER_CHECK(broken_.empty(), "[", task.op, "] the process group is unusable after an earlier failure: ", broken_);
    }
    progress_->started(task.fp);  // Note [Progress records] in progress_records.h
    const uint32_t tag = static_cast<uint32_t>(task.fp.seq * 2);
    try {
      if (options_.check_collectives && size_ > 1) {
        if (task.fused) {
          task.fused(task, tag);
          return;
        }
        exchange_fingerprints(task, tag);
      }
      task.body(tag + 1);
    } catch (const gloo::Exception& e) {
      fail(task, describe(task.fp, *this), e.what());
    } catch (const gloo::EnforceNotMet& e) {
      fail(task, describe(task.fp, *this), e.what());
    }
  }

  [[noreturn]] void fail(const Task& task, const std::string& what, const std::string& gloo_msg) {
    {
      std::string msg = diagnose(task, what, gloo_msg);
      {
        std::lock_guard<std::mutex> l(mu_);
        broken_ = "collective #" + std::to_string(task.fp.seq) + " " + what + " failed";
      }
      throw Error("[" + task.op + "] " + msg);
    }
  }

  // Every rank's fingerprint record: the fingerprint, then kInlinePayloadBytes of payload
  // (a fused all-reduce's data, Note [Fused small all-reduce]; zeros otherwise). The size is
  // the same for every collective, so that ranks that called different ones still exchange
  // records and report the mismatch. all_payloads (if given) receives every rank's payload.
  void exchange_fingerprints(const Task& task, uint32_t tag, const void* payload = nullptr, size_t nbytes = 0,
                             std::vector<uint8_t>* all_payloads = nullptr) {
    constexpr size_t kRecord = kRecordBytes;
    std::vector<uint8_t> mine(kRecord, 0);
    std::memcpy(mine.data(), &task.fp, sizeof(Fingerprint));
    if (nbytes) std::memcpy(mine.data() + sizeof(Fingerprint), payload, nbytes);
    std::vector<uint8_t> gathered;
    const uint8_t* records = nullptr;
    if (lane_) {
      records = lane_->all_gather(mine.data(), kRecord);  // Note [Sync lane]
    } else {
      gathered.resize(kRecord * static_cast<size_t>(size_));
      gloo::AllgatherOptions o(context_);
      o.setInput<uint8_t>(mine.data(), kRecord);
      o.setOutput<uint8_t>(gathered.data(), gathered.size());
      o.setTag(tag);
      o.setTimeout(options_.timeout);
      gloo::allgather(o);
      records = gathered.data();
    }
    std::vector<Fingerprint> all(static_cast<size_t>(size_));
    for (size_t r = 0; r < all.size(); ++r) std::memcpy(&all[r], records + r * kRecord, sizeof(Fingerprint));
    if (all_payloads) {
      all_payloads->resize(all.size() * kInlinePayloadBytes);
      for (size_t r = 0; r < all.size(); ++r)
        std::memcpy(all_payloads->data() + r * kInlinePayloadBytes, records + r * kRecord + sizeof(Fingerprint),
                    kInlinePayloadBytes);
    }
    check_fingerprints(task.op, task.fp.seq, all, *this);
  }

  // Why a collective failed: which ranks never reached it (from the store's progress
  // records), else the transport's own words.
  std::string diagnose(const Task& task, const std::string& what, const std::string& gloo_msg) {
    std::ostringstream os;
    // "Timed out" from the event-loop path, "Read timeout" from the sync lane's sockets.
    const bool timed_out =
        gloo_msg.find("imed out") != std::string::npos || gloo_msg.find("timeout") != std::string::npos;
    os << "collective #" << task.fp.seq << " " << what
       << (timed_out ? " did not complete within " + std::to_string(options_.timeout.count()) + " ms" : " failed");
    os << progress_->arrivals(task.fp.seq,
                              ": every rank reached it, then the transport failed (a rank may have crashed or been "
                              "killed)");
    os << ". Transport: " << gloo_msg << ". The process group is unusable now";
    return os.str();
  }

  // b.work = the reduction of the size_ copies at all[r * stride], in rank order (the same
  // order on every rank, so that every rank gets the same bits).
  void reduce_copies(Buffer& b, const uint8_t* all, size_t stride, ReduceOp op) const {
    if (b.nbytes() == 0) return;
    const ReduceFn fn = reduce_fn(b.work.dtype(), op);
    const size_t n = static_cast<size_t>(b.work.numel());
    std::memcpy(b.bytes(), all, b.nbytes());
    for (int r = 1; r < size_; ++r) fn(b.bytes(), b.bytes(), all + static_cast<size_t>(r) * stride, n);
  }

  static DType reduce_type(DType t) { return (t == kFloat16 || t == kBFloat16) ? kFloat32 : t; }

  // Note [Ring reduce-scatter]: `work` (contiguous, reduced dtype) holds size_ chunks; in
  // step s = 0 .. size_-2 each rank sends chunk (rank - s - 1) to its right neighbour and
  // folds the chunk (rank - s - 2) arriving from its left into its own copy, so after the
  // last step chunk `rank` holds every rank's contribution. Each rank sends (size_-1)
  // chunks, the least any reduce-scatter can; the order of the additions is fixed by the
  // ring, so results are the same run to run. Runs on Gloo's unbound buffers.
  void finish_reduce_scatter(const Tensor& output, const Tensor& work, ReduceOp op, uint32_t tag) {
    const int64_t n = output.numel();
    if (size_ > 1 && n > 0) {
      const size_t chunk = static_cast<size_t>(n) * work.element_size();
      ReduceFn fn = reduce_fn(work.dtype(), op);
      Tensor incoming = empty({n}, work.options());
      auto* base = static_cast<uint8_t*>(work.data_ptr());
      auto out_buf = context_->createUnboundBuffer(base, work.nbytes());
      auto in_buf = context_->createUnboundBuffer(incoming.data_ptr(), chunk);
      const int right = (rank_ + 1) % size_, left = (rank_ + size_ - 1) % size_;
      const auto slot = gloo::Slot::build(kReduceScatterSlotPrefix, tag);
      for (int s = 0; s + 1 < size_; ++s) {
        const size_t send_idx = static_cast<size_t>(((rank_ - s - 1) % size_ + size_) % size_);
        const size_t recv_idx = static_cast<size_t>(((rank_ - s - 2) % size_ + 2 * size_) % size_);
        out_buf->send(right, slot, send_idx * chunk, chunk);
        in_buf->recv(left, slot, 0, chunk);
        EMBER_CHECK(in_buf->waitRecv(options_.timeout), "[reduce_scatter] the receive was aborted");
        fn(base + recv_idx * chunk, base + recv_idx * chunk, incoming.data_ptr(), static_cast<size_t>(n));
        EMBER_CHECK(out_buf->waitSend(options_.timeout), "[reduce_scatter] the send was aborted");
      }
    }
    Tensor mine = work.narrow(0, rank_ * n, n);
    if (op == ReduceOp::AVG) mine = mine / static_cast<double>(size_);
    Tensor(output).copy_(mine.view(output.sizes()));
  }

  // Every rank's input and output splits, checked against each other on every rank.
  void check_splits(const std::vector<int64_t>& ins, const std::vector<int64_t>& outs, uint32_t tag) {
    std::vector<int64_t> mine(ins);
    mine.insert(mine.end(), outs.begin(), outs.end());
    std::vector<int64_t> all(mine.size() * static_cast<size_t>(size_));
    if (lane_ && mine.size() * sizeof(int64_t) <= SyncLane::kMaxBytes) {
      std::memcpy(all.data(), lane_->all_gather(mine.data(), mine.size() * sizeof(int64_t)),
                  all.size() * sizeof(int64_t));
    } else {
      gloo::AllgatherOptions o(context_);
      o.setInput<int64_t>(mine.data(), mine.size());
      o.setOutput<int64_t>(all.data(), all.size());
      o.setTag(tag);
      o.setTimeout(options_.timeout);
      gloo::allgather(o);
    }
    check_split_agreement(all, *this);
  }

  void gather_all(const Tensor& in, const Tensor& out, uint32_t tag) {
    if (size_ == 1) {
      std::memcpy(out.data_ptr(), in.data_ptr(), in.nbytes());
      return;
    }
    if (lane_ && in.nbytes() > 0 && in.nbytes() <= SyncLane::kMaxBytes) {
      std::memcpy(out.data_ptr(), lane_->all_gather(in.data_ptr(), in.nbytes()), out.nbytes());
      return;
    }
    gloo::AllgatherOptions o(context_);
    o.setInput<uint8_t>(static_cast<uint8_t*>(in.data_ptr()), in.nbytes());
    o.setOutput<uint8_t>(static_cast<uint8_t*>(out.data_ptr()), out.nbytes());
    o.setTag(tag);
    o.setTimeout(options_.timeout);
    gloo::allgather(o);
  }

  void exchange_all(const Tensor& in, const Tensor& out, uint32_t tag) {
    if (size_ == 1) {
      std::memcpy(out.data_ptr(), in.data_ptr(), in.nbytes());
      return;
    }
    gloo::AlltoallOptions o(context_);
    o.setInput<uint8_t>(static_cast<uint8_t*>(in.data_ptr()), in.nbytes());
    o.setOutput<uint8_t>(static_cast<uint8_t*>(out.data_ptr()), out.nbytes());
    o.setTag(tag);
    o.setTimeout(options_.timeout);
    gloo::alltoall(o);
  }

  std::shared_ptr<Store> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::unique_ptr<SyncLane> lane_;  // Note [Sync lane]; null for one rank or EMBER_DISTRIBUTED_SYNC_LANE=0
  std::thread worker_;
  std::unique_ptr<ProgressRecords> progress_;  // Note [Progress records] in progress_records.h
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stop_ = false;
  bool busy_ = false;  // a task runs (on the worker or on a waiting thread)
  std::atomic<uint64_t> seq_{0};
  std::string broken_;
};

}  // namespace

ProcessGroupPtr make_gloo_process_group(std::shared_ptr<Store> store, int rank, int size, ProcessGroup::Options options,
                                        std::vector<int> ranks) {
  EMBER_CHECK(store != nullptr, "[init_process_group] the store is null");
  return std::make_shared<ProcessGroupGloo>(std::move(store), rank, size, std::move(options), std::move(ranks));
}

}  // namespace ember::distributed
