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
// So the optimizer sees only the shards. Collectives run synchronously in the order the
// forward and the autograd engine reach the units, which is the same on every rank.
// Construction broadcasts rank 0's parameters and buffers (PyTorch's sync_module_states).
// A unit whose parameters were used by the forward but did not all receive gradients in
// the backward makes the next forward raise, naming them.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
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
};

// Bytes held on this rank (FullyShardedDataParallelImpl::memory_stats).
struct FSDPMemoryStats {
  int64_t sharded_parameter_bytes = 0;  // the _flat_param shards (with padding)
  int64_t sharded_gradient_bytes = 0;   // their gradients
  int64_t optimizer_state_bytes = 0;    // the given optimizer's state for the shards
  int64_t full_parameter_bytes = 0;     // the unsharded model's parameters (for comparison)
  int64_t gathered_bytes_now = 0;       // full parameters materialized right now
  int64_t peak_gathered_bytes = 0;      // the most materialized at once so far
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

 private:
  struct Unit;
  void gather(Unit& u);
  void reshard(Unit& u);
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
};
EMBER_MODULE(FullyShardedDataParallel);

}  // namespace ember::nn::parallel
