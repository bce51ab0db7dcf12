#pragma once
// ZeroRedundancyOptimizer (torch.distributed.optim.ZeroRedundancyOptimizer, ZeRO stage 1):
// wraps an optimizer class so that each rank keeps optimizer state only for its share of
// the parameters. Use it with DistributedDataParallel (gradients already averaged):
//
//   nn::parallel::DistributedDataParallel ddp(model);
//   dist::ZeroRedundancyOptimizer opt(model->parameters(), dist::optimizer_class<optim::Adam>,
//                                     optim::AdamOptions(1e-3));
//   loss.backward(); opt.step();       // each rank steps its shard, then every rank has all
//
// Note [ZeRO partition]: parameters are assigned to ranks group by group, largest first
// (a stable sort by element count), each to the rank with the fewest elements so far
// (the lowest such rank on ties); the counts carry over from one group to the next. This
// is PyTorch's greedy rule, so a model partitions the same way in both. step() runs the
// local optimizer on this rank's shard, then every rank's updated parameters are
// all-gathered (one collective per dtype), so every rank ends with identical parameters:
// bit-identical to running the wrapped optimizer on every rank, because each update is
// the same per-parameter arithmetic.
//
// state_dict() works like PyTorch's: call consolidate_state_dict(to) on every rank first;
// rank `to` then returns the full state in the wrapped optimizer's own layout (parameters
// numbered across groups), loadable into a plain optimizer or into a
// ZeroRedundancyOptimizer of any world size (load_state_dict keeps this rank's shard).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/distributed/process_group.h"
#include "ember/optim/optimizer.h"

namespace ember::distributed {

// Names the optimizer class to wrap: dist::optimizer_class<optim::SGD>.
template <class Opt>
struct OptimizerClass {};
template <class Opt>
inline constexpr OptimizerClass<Opt> optimizer_class{};

struct ZeroOptions {
  // The group to shard over; null: the default group.
  ProcessGroupPtr process_group = nullptr;
};

class ZeroRedundancyOptimizer : public optim::Optimizer {
 public:
  // Builds the wrapped optimizer over this rank's groups (same options, fewer parameters).
  using Factory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<optim::OptimizerParamGroup>)>;

  template <class Opt, class Options>
  ZeroRedundancyOptimizer(std::vector<Tensor> params, OptimizerClass<Opt> cls, const Options& defaults,
                          ZeroOptions options = {})
      : ZeroRedundancyOptimizer(std::vector<optim::OptimizerParamGroup>{optim::OptimizerParamGroup(std::move(params))},
                                cls, defaults, std::move(options)) {}
  template <class Opt, class Options>
  ZeroRedundancyOptimizer(std::vector<optim::OptimizerParamGroup> groups, OptimizerClass<Opt>, const Options& defaults,
                          ZeroOptions options = {})
      : ZeroRedundancyOptimizer(
            std::move(groups), defaults.clone(),
            [defaults](std::vector<optim::OptimizerParamGroup> g) -> std::unique_ptr<optim::Optimizer> {
              return std::make_unique<Opt>(std::move(g), defaults);
            },
            std::move(options)) {}
  // The general form: defaults for the global groups, and the factory of the local optimizer.
  ZeroRedundancyOptimizer(std::vector<optim::OptimizerParamGroup> groups,
                          std::unique_ptr<optim::OptimizerOptions> defaults, Factory factory, ZeroOptions options = {});
  ~ZeroRedundancyOptimizer() override;

  // Steps this rank's shard with the wrapped optimizer (after copying the global groups'
  // options into it, so schedulers work), then gathers every rank's parameters.
  Tensor step(const optim::LossClosure& closure = nullptr) override;

  // Adds a group on every rank: its parameters are partitioned after the existing ones, as
  // PyTorch does, and this rank's share joins the wrapped optimizer. (Optimizer's
  // add_param_group is not virtual: call this one on the ZeroRedundancyOptimizer itself.)
  void add_param_group(const optim::OptimizerParamGroup& group);

  // Collects every rank's optimizer state on rank `to` (a collective: call it on every rank).
  void consolidate_state_dict(int to = 0);
  // The consolidated full state (only on the rank given to consolidate_state_dict).
  Value state_dict() const override;
  // Loads a full state dict (from state_dict() here or from the wrapped optimizer class);
  // each rank keeps the state of its own shard.
  void load_state_dict(const Value& state_dict) override;

  // The wrapped optimizer of this rank (holds the shard's state).
  optim::Optimizer& optim() { return *local_; }
  const optim::Optimizer& optim() const { return *local_; }
  // Rank r's parameters, per group: partition()[r][g] (Note [ZeRO partition]).
  const std::vector<std::vector<std::vector<Tensor>>>& partition() const { return partition_; }
  // The rank (of the group) that owns param; throws for a tensor it does not hold.
  int owner(const Tensor& param) const;
  // Bytes of optimizer state held on this rank (the wrapped optimizer's state tensors).
  int64_t local_state_bytes() const;
  const ProcessGroupPtr& process_group() const { return group_; }

 protected:
  void update(optim::OptimizerParamGroup&) override {}

 private:
  void build_partition();
  // Assigns the parameters of group g (Note [ZeRO partition]), continuing from load_.
  void partition_group(size_t g);
  void check_same_parameters_everywhere();
  void sync_options_to_local();
  void sync_parameters();

  ProcessGroupPtr group_;
  std::unique_ptr<optim::Optimizer> local_;
  std::vector<std::vector<std::vector<Tensor>>> partition_;  // [rank][group] -> params
  std::vector<int> owner_;                                   // global index -> rank
  std::vector<int64_t> load_;                                // elements assigned to each rank
  std::vector<size_t> global_index_;                         // local index -> global index
  bool consolidated_ = false;
  int consolidated_on_ = -1;
  Value consolidated_state_;
};

}  // namespace ember::distributed
