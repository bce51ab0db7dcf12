#pragma once
// FullyShardedDataParallel (torch.distributed.fsdp.FullyShardedDataParallel, ZeRO stage 3):
// data-parallel training where each rank holds only a 1/world_size shard of every
// parameter, of its gradient and (through the optimizer built on fsdp->parameters()) of
// the optimizer state.
//
//   nn::parallel::FullyShardedDataParallel fsdp(model);          // after init_process_group
//   optim::Adam opt(fsdp->parameters(), optim::AdamOptions(1e-3)); // the local shards
//   F::cross_entropy(fsdp(x), y).backward();                      // this rank's share of a batch
//   opt.step();
//
// Note [FSDP units]: the wrapped module is split into units: by default each direct child
// that has parameters, or the modules an auto_wrap_policy picks; the parameters left over
// (the wrapped module's own, and those of children outside every unit) form the root
// unit. A unit's parameters are flattened in registration order into one buffer padded to
// a multiple of world_size; rank r keeps elements [r*S, (r+1)*S) as the leaf tensor
// `_flat_param` registered on the unit's module (S = padded size / world_size), and the
// original parameters are unregistered and become views into the unit's full buffer.
// That buffer has memory only while the unit is in use:
//   - forward: a forward pre-hook all-gathers the shards into it; a forward hook frees it
//     again (the root unit stays gathered until its gradients are reduced) and hooks the
//     outputs' gradients;
//   - backward: the first gradient reaching a unit's outputs all-gathers the parameters
//     again (the autograd graph saved views of them: their storage is refilled in place);
//     when every parameter of the unit has accumulated its gradient, the gradients are
//     flattened, divided by world_size and reduce-scattered into `_flat_param.grad`
//     (added to what is there, like any gradient), then the full gradients and the full
//     parameters are freed.
// So the optimizer sees only the shards. Collectives are issued in the order the forward
// and the autograd engine reach the units, which is the same on every rank.
// Construction broadcasts rank 0's parameters and buffers (PyTorch's sync_module_states).
// A unit whose parameters were used by the forward but did not all receive gradients in
// the backward makes the next forward raise, naming them.
//
// Note [FSDP mixed precision]: with FSDPOptions::mixed_precision the shards (what the
// optimizer updates) keep the parameters' dtype, and each gather casts the shard to
// param_dtype before the all-gather, so the full buffer, the views the layers see and
// their gradients are param_dtype (half the bytes moved and held for bf16). Floating-point
// inputs of the wrapper and of every unit are cast to param_dtype (torch 1.13 does the
// same), so a unit computes in param_dtype throughout. Gradients are flattened into a
// reduce_dtype buffer (default: param_dtype), divided and reduce-scattered in it, and the
// result is cast back to the shard's dtype before it is added to `_flat_param.grad`.
// Floating-point buffers are cast to buffer_dtype once, at construction;
// full_state_dict() returns parameters from the shards and buffers in their original
// dtypes.
//
// Note [FSDP prefetch]: a gather is split into starting the all-gather (memory allocated,
// async_op collective issued on the group's worker) and completing it (waiting on the
// Work, then pointing the parameters at the buffer). forward_prefetch: a unit's
// pre-forward hook starts the gather of the unit that came after it in the previous
// iteration's forward. backward_prefetch: BACKWARD_PRE starts the gather of the next unit
// in backward order (this iteration's forward order, reversed) when a unit's gradient
// arrives, before the unit's own backward runs; BACKWARD_POST starts it after the unit's
// gradients were reduce-scattered. The all-gather moves bits unchanged, so results are
// bit-identical with and without prefetching; the price is one more unit materialized at
// a time. Every rank issues the same collectives in the same order (the orders come from
// the model, not from timing).
//
// Note [FSDP no_sync]: a backward that runs while a NoSync (no_sync()) is alive does not
// reduce (torch's FSDP decides at backward time, as here; DDP at forward time): each unit
// adds its full gradients, in the shards' dtype, to an unsharded per-unit sum kept by the
// wrapper and frees its parameters as usual. The first backward outside it adds the sum to
// its own gradients before the reduce-scatter, so `_flat_param.grad` receives the average
// over ranks of every micro-batch's gradient, as with DDP's no_sync. The sums cost the
// unsharded model's gradient bytes until then (memory_stats().accumulated_gradient_bytes).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/distributed/process_group.h"
#include "ember/nn/module.h"

namespace ember::optim {
class Optimizer;
}

namespace ember::nn::parallel {

// What is sharded between uses (torch.distributed.fsdp.ShardingStrategy).
enum class ShardingStrategy {
  // Parameters freed after each unit's forward and gathered again for its backward.
  FULL_SHARD,
  // Parameters kept from a unit's forward until its gradients are reduced: one all-gather
  // per unit and step instead of two, at the cost of holding the full model during a step.
  SHARD_GRAD_OP,
};

// Dtypes for FSDP's gathered parameters, gradient reduction and buffers
// (torch.distributed.fsdp.MixedPrecision; Note [FSDP mixed precision]). Unset: unchanged.
struct MixedPrecision {
  std::optional<DType> param_dtype = std::nullopt;   // gathered parameters, forward and backward compute
  std::optional<DType> reduce_dtype = std::nullopt;  // the reduce-scatter (unset: the gathered dtype)
  std::optional<DType> buffer_dtype = std::nullopt;  // floating-point buffers, cast at construction
};

// When to start gathering the next unit during backward (torch.distributed.fsdp.BackwardPrefetch).
enum class BackwardPrefetch {
  BACKWARD_PRE,   // when a unit's output gradient arrives, before its own backward
  BACKWARD_POST,  // after a unit's gradients were reduce-scattered
};

// torch.distributed.fsdp.CPUOffload. Accepted for portability and a no-op: ember computes
// on the CPU, so shards, gradients and optimizer state already live in host memory.
struct CPUOffload {
  bool offload_params = false;
};

struct FSDPOptions {
  // The group to shard over; null: the default group.
  distributed::ProcessGroupPtr process_group = nullptr;
  // Called for each descendant of the wrapped module, depth first, with its qualified name;
  // a module it accepts becomes a unit (its own descendants are not visited). Null: each
  // direct child that has parameters.
  std::function<bool(const Module& module, const std::string& name)> auto_wrap_policy = nullptr;
  // Broadcast rank 0's parameters and buffers at construction.
  bool sync_module_states = true;
  ShardingStrategy sharding_strategy = ShardingStrategy::FULL_SHARD;
  // Compute in a lower precision than the shards keep (Note [FSDP mixed precision]).
  std::optional<MixedPrecision> mixed_precision = std::nullopt;
  // Overlap gathers with compute (Note [FSDP prefetch]); unset / false: no prefetching.
  std::optional<BackwardPrefetch> backward_prefetch = std::nullopt;
  bool forward_prefetch = false;
  CPUOffload cpu_offload = {};  // a no-op on the CPU (see CPUOffload)
};

// Bytes held on this rank (FullyShardedDataParallelImpl::memory_stats).
struct FSDPMemoryStats {
  int64_t sharded_parameter_bytes = 0;     // the _flat_param shards (with padding)
  int64_t sharded_gradient_bytes = 0;      // their gradients
  int64_t optimizer_state_bytes = 0;       // the given optimizer's state for the shards
  int64_t full_parameter_bytes = 0;        // the unsharded model's parameters (for comparison)
  int64_t gathered_bytes_now = 0;          // full parameters materialized right now
  int64_t peak_gathered_bytes = 0;         // the most materialized at once so far
  int64_t accumulated_gradient_bytes = 0;  // no_sync's unsharded gradient sums
};

class FullyShardedDataParallelImpl : public Module {
 public:
  explicit FullyShardedDataParallelImpl(std::shared_ptr<Module> module, FSDPOptions options = {});
  template <typename Holder, typename = decltype(std::declval<Holder>().ptr())>
  explicit FullyShardedDataParallelImpl(const Holder& holder, FSDPOptions options = {})
      : FullyShardedDataParallelImpl(std::static_pointer_cast<Module>(holder.ptr()), std::move(options)) {}
  ~FullyShardedDataParallelImpl() override;

  Tensor forward(const Tensor& input) override;
  // For wrapped modules with another forward signature: call prepare_forward() before
  // running the module yourself and after_forward(outputs) with what it returned.
  void prepare_forward();
  void after_forward(const std::vector<Tensor>& outputs);

  const std::shared_ptr<Module>& module() const { return module_; }
  const distributed::ProcessGroupPtr& process_group() const { return group_; }

  // While a NoSync is alive, backward passes accumulate unsharded gradients instead of
  // reduce-scattering them (Note [FSDP no_sync]).
  class NoSync {
   public:
    explicit NoSync(FullyShardedDataParallelImpl& fsdp) : fsdp_(&fsdp), previous_(fsdp.require_sync_) {
      fsdp.require_sync_ = false;
    }
    ~NoSync() {
      if (fsdp_) fsdp_->require_sync_ = previous_;
    }
    NoSync(NoSync&& o) noexcept : fsdp_(std::exchange(o.fsdp_, nullptr)), previous_(o.previous_) {}
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    NoSync& operator=(NoSync&&) = delete;

   private:
    FullyShardedDataParallelImpl* fsdp_;
    bool previous_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  const FSDPOptions& options() const { return options_; }
  // All-gathers started ahead of use by forward_prefetch / backward_prefetch so far (a
  // prefetch of a unit that is still gathered starts none).
  int64_t prefetch_count() const { return prefetch_count_; }

  // The units: their module paths ("" for the root unit) and original parameter names.
  std::vector<std::string> unit_names() const;
  std::vector<std::vector<std::string>> unit_parameter_names() const;

  // The unsharded parameters and buffers under the wrapped module's own names (what
  // module->state_dict() gave before wrapping). A collective: call it on every rank.
  OrderedDict<std::string, Tensor> full_state_dict();
  // Loads such a dict (on every rank; no communication): each rank keeps its shard.
  // strict: missing, unexpected or mismatched keys are an error naming them all.
  void load_full_state_dict(const OrderedDict<std::string, Tensor>& state, bool strict = true);

  // This rank's memory; with an optimizer, its state for the shards too.
  FSDPMemoryStats memory_stats(const optim::Optimizer* optimizer = nullptr) const;

  // For sharded checkpoints (distributed/sharded_checkpoint.h): each original parameter's
  // name, full shape and the element range [begin, end) of its flattening held here,
  // viewed in the shard (or in a tensor shaped like the shard, e.g. optimizer state).
  struct LocalPiece {
    std::string name;
    std::vector<int64_t> shape;
    int64_t begin = 0, end = 0;  // within the parameter's flattening
    size_t unit = 0;
    int64_t shard_offset = 0;  // where the piece starts in the unit's shard
  };
  std::vector<LocalPiece> local_pieces() const;
  // The unit's shard (the `_flat_param` leaf).
  const Tensor& shard(size_t unit) const;
  // The keys the wrapped module's state_dict() had before wrapping, in order (what
  // full_state_dict() returns).
  const std::vector<std::string>& original_state_keys() const { return state_keys_; }
  // The dtype a buffer had before MixedPrecision::buffer_dtype cast it (what
  // full_state_dict() returns it in); `current` when it was not cast.
  DType original_buffer_dtype(const std::string& name, DType current) const;

 private:
  struct Unit;
  void gather(Unit& u);
  void start_gather(Unit& u, bool async);
  void complete_gather(Unit& u);
  void reshard(Unit& u);
  void prefetch_forward(size_t unit);
  void prefetch_backward(size_t unit);
  Tensor cast_input(const Tensor& t) const;
  Tensor gather_master(Unit& u);
  void on_grad_ready(size_t unit);
  void hook_outputs(size_t unit, const std::vector<Tensor>& outputs);
  void check_previous_iteration();

  std::shared_ptr<Module> module_;
  FSDPOptions options_;
  distributed::ProcessGroupPtr group_;
  std::vector<std::unique_ptr<Unit>> units_;
  std::vector<std::string> state_keys_;
  std::vector<RemovableHandle> hooks_;
  int64_t gathered_bytes_ = 0;
  int64_t peak_gathered_bytes_ = 0;
  bool mixed_params_ = false;                                 // mixed_precision->param_dtype is set
  std::vector<std::pair<std::string, DType>> buffer_dtypes_;  // buffers cast by buffer_dtype
  // Units in the order their forward started, this iteration and the last (root excluded).
  std::vector<size_t> forward_order_, previous_forward_order_;
  int64_t prefetch_count_ = 0;
  bool require_sync_ = true;  // no_sync() clears it
};
EMBER_MODULE(FullyShardedDataParallel);

}  // namespace ember::nn::parallel
