#pragma once
// ember::distributed: torch.distributed for ember (docs/distributed.md). One process per
// rank; ranks meet through a store and then run collectives over Gloo's TCP transport, or
// (backend "mpi") mpirun starts them and MPI carries the collectives.
//
//   namespace dist = ember::distributed;
//   dist::init_process_group({.backend = "gloo"});      // env:// (torchrun / ember-run)
//   dist::all_reduce(t);                                // SUM over every rank, in place
//   dist::destroy_process_group();
//
// Ranks in these functions are global ranks (as in PyTorch); `group` defaults to the
// group init_process_group made. Synchronous calls return when the operation finished on
// this rank; async_op = true returns the Work to wait on instead.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ember/distributed/process_group.h"
#include "ember/distributed/store.h"

namespace ember::distributed {

struct InitOptions {
  // "gloo", or "mpi" (when built with MPI; rank and world size then come from MPI, and
  // init_method and store are not used).
  std::string backend = "gloo";
  // "env://" reads MASTER_ADDR/MASTER_PORT (and RANK/WORLD_SIZE unless given);
  // "tcp://host:port"; "file:///path/to/file" (use a fresh file per run).
  std::string init_method = "env://";
  int rank = -1;        // -1: from RANK
  int world_size = -1;  // -1: from WORLD_SIZE
  std::chrono::milliseconds timeout = kDefaultTimeout;
  // An explicit store instead of init_method (as torch's store= argument).
  std::shared_ptr<Store> store = nullptr;
  // Fingerprint checks before each collective (Note [Hang-proof collectives]).
  bool check_collectives = true;
};

// Connects this process to the others; throws when it is already initialized, when the
// environment lacks what init_method needs, or when some rank does not show up within
// the timeout.
void init_process_group(const InitOptions& options = {});
bool is_initialized();
// Whether this build has the MPI backend (torch.distributed.is_mpi_available).
bool is_mpi_available();
// Leaves the group (and every subgroup); a later init_process_group may start afresh.
void destroy_process_group();
// The default group (throws when not initialized).
const ProcessGroupPtr& default_group();
// The global rank and world size, or the rank within / size of `group`.
int get_rank(const ProcessGroupPtr& group = nullptr);
int get_world_size(const ProcessGroupPtr& group = nullptr);
std::string get_backend(const ProcessGroupPtr& group = nullptr);
// The store the default group met through (the TCP store on env:// and tcp://).
const std::shared_ptr<Store>& default_store();
// Torchrun's LOCAL_RANK / LOCAL_WORLD_SIZE; under mpirun, Open MPI's
// OMPI_COMM_WORLD_LOCAL_RANK / _LOCAL_SIZE (0 and 1 when none is set).
int get_local_rank();
int get_local_world_size();

// A group of some ranks (global ranks, any order; sorted like PyTorch). Every rank of the
// default group must call it, members or not, in the same order; non-members get null.
ProcessGroupPtr new_group(std::vector<int> ranks = {},
                          std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

// ---- collectives (torch.distributed's signatures; tensors are written in place) ----
WorkPtr all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::SUM, const ProcessGroupPtr& group = nullptr,
                   bool async_op = false);
WorkPtr broadcast(const Tensor& tensor, int src, const ProcessGroupPtr& group = nullptr, bool async_op = false);
WorkPtr reduce(const Tensor& tensor, int dst, ReduceOp op = ReduceOp::SUM, const ProcessGroupPtr& group = nullptr,
               bool async_op = false);
// tensor_list: one tensor per rank, each shaped like tensor.
WorkPtr all_gather(const std::vector<Tensor>& tensor_list, const Tensor& tensor, const ProcessGroupPtr& group = nullptr,
                   bool async_op = false);
// output: world_size times the input's elements.
WorkPtr all_gather_into_tensor(const Tensor& output, const Tensor& input, const ProcessGroupPtr& group = nullptr,
                               bool async_op = false);
// input_list: one tensor per rank, each shaped like output; rank r gets the reduction of
// every rank's input_list[r].
WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& input_list, ReduceOp op = ReduceOp::SUM,
                       const ProcessGroupPtr& group = nullptr, bool async_op = false);
// The flat form (torch's reduce_scatter_tensor): input holds world_size times output's
// elements; rank r gets the reduction of every rank's elements [r*n, (r+1)*n). Both
// forms run a ring reduce-scatter: each rank sends (world_size-1)/world_size of its input.
WorkPtr reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::SUM,
                              const ProcessGroupPtr& group = nullptr, bool async_op = false);
// gather_list: one tensor per rank on dst, empty elsewhere.
WorkPtr gather(const Tensor& tensor, const std::vector<Tensor>& gather_list = {}, int dst = 0,
               const ProcessGroupPtr& group = nullptr, bool async_op = false);
// scatter_list: one tensor per rank on src, empty elsewhere.
WorkPtr scatter(const Tensor& tensor, const std::vector<Tensor>& scatter_list = {}, int src = 0,
                const ProcessGroupPtr& group = nullptr, bool async_op = false);
// Equal splits: input_tensor_list[r] goes to rank r, output_tensor_list[r] comes from it.
WorkPtr all_to_all(const std::vector<Tensor>& output_tensor_list, const std::vector<Tensor>& input_tensor_list,
                   const ProcessGroupPtr& group = nullptr, bool async_op = false);
// Equal splits of dim 0.
WorkPtr all_to_all_single(const Tensor& output, const Tensor& input, const ProcessGroupPtr& group = nullptr,
                          bool async_op = false);
// Uneven splits of dim 0: input rows [sum(input_split_sizes[:j]), +input_split_sizes[j]) go
// to rank j; output_split_sizes[j] rows come from rank j (empty lists: equal splits). Rank
// r's input_split_sizes[j] must equal rank j's output_split_sizes[r] (checked unless
// collective checks are off).
WorkPtr all_to_all_single(const Tensor& output, const Tensor& input, const std::vector<int64_t>& output_split_sizes,
                          const std::vector<int64_t>& input_split_sizes, const ProcessGroupPtr& group = nullptr,
                          bool async_op = false);
WorkPtr barrier(const ProcessGroupPtr& group = nullptr, bool async_op = false);

// ---- point to point (blocking; isend/irecv return the Work) ----
void send(const Tensor& tensor, int dst, const ProcessGroupPtr& group = nullptr, int tag = 0);
// src = -1 receives from any rank; returns the sender's rank.
int recv(const Tensor& tensor, int src = -1, const ProcessGroupPtr& group = nullptr, int tag = 0);
WorkPtr isend(const Tensor& tensor, int dst, const ProcessGroupPtr& group = nullptr, int tag = 0);
// source_rank (optional) receives the sender's rank once the Work is waited on.
WorkPtr irecv(const Tensor& tensor, int src = -1, const ProcessGroupPtr& group = nullptr, int tag = 0,
              int* source_rank = nullptr);

}  // namespace ember::distributed
