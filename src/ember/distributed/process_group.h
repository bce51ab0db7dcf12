#pragma once
// ProcessGroup: a set of ranks that run collectives together (torch.distributed's
// ProcessGroup), implemented over Gloo's TCP transport (ProcessGroupGloo in
// process_group_gloo.cpp). Collectives keep PyTorch's names and semantics; each returns a
// Work handle: the synchronous free functions of distributed.h wait on it, the async_op
// forms hand it back.
//
// Note [Hang-proof collectives]: before its data moves, every collective all-gathers a
// small fixed-size fingerprint (op, sequence number within the group, dtype, shape,
// reduce op, root) and compares them; a mismatch raises on every rank an ember::Error
// naming the collective, the ranks and what each called. Each rank also records in the
// store, without waiting for an answer, the collective it has reached; when a collective
// does not complete within the group's timeout, that record tells which ranks never
// arrived, and the error names them. After a timeout the group is unusable (the
// transport is in an unknown state): later collectives throw at once, saying why.
// EMBER_DISTRIBUTED_CHECKS=0 (or Options::check_collectives=false) skips the fingerprint
// exchange; the timeout diagnosis stays.

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/distributed/store.h"

namespace ember::distributed {

// Element-wise reductions (torch.distributed.ReduceOp). AVG is for floating-point tensors.
enum class ReduceOp : uint8_t { SUM, AVG, PRODUCT, MIN, MAX };
std::string_view reduce_op_name(ReduceOp op);

// The handle of a collective or point-to-point operation in flight.
class Work {
 public:
  virtual ~Work() = default;
  // True once it finished (successfully or not).
  virtual bool is_completed() const = 0;
  // True when it finished without an error.
  virtual bool is_success() const = 0;
  // Waits until it finishes and rethrows its error. With a timeout, an operation still
  // running after it throws ember::Error ("[wait] ... did not complete within N ms").
  virtual void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds::max()) = 0;
  // The error it finished with (null when none, or still running).
  virtual std::exception_ptr exception() const = 0;
};
using WorkPtr = std::shared_ptr<Work>;

class ProcessGroup {
 public:
  struct Options {
    std::chrono::milliseconds timeout = kDefaultTimeout;
    // Exchange fingerprints before each collective (Note [Hang-proof collectives]).
    bool check_collectives = true;
    // The address this process's Gloo device listens on; empty: chosen from the
    // environment (GLOO_SOCKET_IFNAME, else loopback when the master is on this host,
    // else this host's name).
    std::string hostname;
    std::string interface_name;
  };

  virtual ~ProcessGroup() = default;
  // This process's rank within the group, and the group's size.
  int rank() const { return rank_; }
  int size() const { return size_; }
  // The global rank (in the default group) of group rank r, and the reverse (-1 when
  // the global rank is not a member).
  int global_rank(int group_rank) const { return ranks_.empty() ? group_rank : ranks_.at(group_rank); }
  int group_rank(int global_rank) const;
  const std::vector<int>& ranks() const { return ranks_; }
  virtual std::string backend() const = 0;
  std::chrono::milliseconds timeout() const { return options_.timeout; }
  const Options& options() const { return options_; }

  // Collectives: ranks are group ranks here (the free functions translate global ones).
  virtual WorkPtr all_reduce(const Tensor& tensor, ReduceOp op) = 0;
  virtual WorkPtr broadcast(const Tensor& tensor, int root) = 0;
  virtual WorkPtr reduce(const Tensor& tensor, int root, ReduceOp op) = 0;
  virtual WorkPtr all_gather(const std::vector<Tensor>& outputs, const Tensor& input) = 0;
  virtual WorkPtr all_gather_into_tensor(const Tensor& output, const Tensor& input) = 0;
  virtual WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) = 0;
  // input: world_size times output's elements, rank r's part being elements [r*n, (r+1)*n).
  virtual WorkPtr reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op) = 0;
  virtual WorkPtr gather(const Tensor& input, const std::vector<Tensor>& outputs, int root) = 0;
  virtual WorkPtr scatter(const Tensor& output, const std::vector<Tensor>& inputs, int root) = 0;
  virtual WorkPtr all_to_all(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs) = 0;
  virtual WorkPtr all_to_all_single(const Tensor& output, const Tensor& input) = 0;
  // Uneven splits of dim 0 (an empty list: equal splits).
  virtual WorkPtr all_to_all_single(const Tensor& output, const Tensor& input,
                                    const std::vector<int64_t>& output_split_sizes,
                                    const std::vector<int64_t>& input_split_sizes) = 0;
  virtual WorkPtr barrier() = 0;
  virtual WorkPtr send(const Tensor& tensor, int dst, int tag) = 0;
  // src < 0: from any rank; the Work's source_rank tells which (see recv in distributed.h).
  virtual WorkPtr recv(const Tensor& tensor, int src, int tag, int* source_rank = nullptr) = 0;

  // Collectives issued so far (the sequence number the next one gets is this + 1).
  virtual uint64_t sequence_number() const = 0;

 protected:
  ProcessGroup(int rank, int size, Options options, std::vector<int> ranks)
      : rank_(rank), size_(size), options_(std::move(options)), ranks_(std::move(ranks)) {}
  int rank_;
  int size_;
  Options options_;
  std::vector<int> ranks_;  // global ranks of the members (empty for the default group)
};
using ProcessGroupPtr = std::shared_ptr<ProcessGroup>;

namespace detail {
// Internal: distributed.h's synchronous free functions open one of these around the call,
// so that a group may run the operation on the calling thread instead of handing it to
// its worker (Note [One worker per group] in process_group_gloo.cpp).
class SynchronousCall {
 public:
  SynchronousCall();
  ~SynchronousCall();
  SynchronousCall(const SynchronousCall&) = delete;
  SynchronousCall& operator=(const SynchronousCall&) = delete;
  static bool active();

 private:
  bool previous_;
};
}  // namespace detail

// A Gloo group of `size` ranks meeting through `store` (use a PrefixStore per group).
// ranks: the members' global ranks, for messages (empty: the default group). Connects
// every pair of ranks before it returns; throws after options.timeout when some rank
// never shows up.
ProcessGroupPtr make_gloo_process_group(std::shared_ptr<Store> store, int rank, int size, ProcessGroup::Options options,
                                        std::vector<int> ranks = {});

}  // namespace ember::distributed
