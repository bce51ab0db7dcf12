// ZeroRedundancyOptimizer: Note [ZeRO partition] in zero_redundancy_optimizer.h.

#include "ember/distributed/zero_redundancy_optimizer.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_map>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/distributed/distributed.h"
#include "ember/distributed/object_collectives.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"

namespace ember::distributed {

namespace {
constexpr const char* kName = "ZeroRedundancyOptimizer";
}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<optim::OptimizerParamGroup> groups,
                                                 std::unique_ptr<optim::OptimizerOptions> defaults, Factory factory,
                                                 ZeroOptions options)
    : Optimizer(std::move(groups), std::move(defaults), kName) {
  EMBER_CHECK(factory != nullptr, "[", kName, "] the optimizer factory is empty");
  group_ = options.process_group ? options.process_group : default_group();
  EMBER_CHECK(size() > 0, "[", kName, "] optimizer got an empty parameter list");
  check_same_parameters_everywhere();
  build_partition();
  std::vector<optim::OptimizerParamGroup> local;
  const auto& mine = partition_[static_cast<size_t>(group_->rank())];
  for (size_t g = 0; g < param_groups().size(); ++g) {
    optim::OptimizerParamGroup lg(mine[g], param_groups()[g].options().clone());
    for (const auto& item : param_groups()[g].extras()) lg.set(item.key(), item.value());
    local.push_back(std::move(lg));
  }
  local_ = factory(std::move(local));
  EMBER_CHECK(local_ != nullptr, "[", kName, "] the optimizer factory returned null");
}

ZeroRedundancyOptimizer::~ZeroRedundancyOptimizer() = default;

void ZeroRedundancyOptimizer::check_same_parameters_everywhere() {
  // Every rank must partition the same list, or the ranks would step and exchange
  // different things: compare counts, element totals and a hash of the shapes and dtypes.
  int64_t numel = 0;
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (const auto& g : param_groups()) {
    mix(0xffff);
    for (const Tensor& p : g.params()) {
      numel += p.numel();
      mix(static_cast<uint64_t>(p.dtype()));
      for (int64_t d : p.sizes()) mix(static_cast<uint64_t>(d));
    }
  }
  const std::vector<int64_t> mine{static_cast<int64_t>(param_groups().size()), static_cast<int64_t>(size()), numel,
                                  static_cast<int64_t>(h >> 1)};
  Tensor out = empty({group_->size() * 4}, TensorOptions(kInt64));
  all_gather_into_tensor(out, tensor(std::vector<int64_t>(mine)), group_);
  const auto all = out.to_vector<int64_t>();
  bool same = true;
  for (int r = 0; r < group_->size(); ++r)
    for (int k = 0; k < 4; ++k) same = same && all[static_cast<size_t>(r * 4 + k)] == mine[static_cast<size_t>(k)];
  if (same) return;
  std::ostringstream os;
  os << "[" << kName << "] the ranks hold different parameters: ";
  for (int r = 0; r < group_->size(); ++r) {
    const size_t b = static_cast<size_t>(r * 4);
    os << (r ? "; " : "") << "rank " << group_->global_rank(r) << " has " << all[b + 1] << " parameters (" << all[b + 2]
       << " elements) in " << all[b] << " group" << (all[b] == 1 ? "" : "s");
    if (all[b] == mine[0] && all[b + 1] == mine[1] && all[b + 2] == mine[2] && all[b + 3] != mine[3])
      os << " with other shapes or dtypes than rank " << group_->global_rank(group_->rank());
  }
  os << ". Every rank must pass the same model's parameters, in the same order";
  throw Error(os.str());
}

void ZeroRedundancyOptimizer::build_partition() {
  partition_.assign(static_cast<size_t>(group_->size()), {});
  load_.assign(static_cast<size_t>(group_->size()), 0);
  owner_.clear();
  global_index_.clear();
  for (size_t g = 0; g < param_groups().size(); ++g) partition_group(g);
}

void ZeroRedundancyOptimizer::partition_group(size_t g) {
  size_t base = 0;
  for (size_t k = 0; k < g; ++k) base += param_groups()[k].params().size();
  const auto& params = param_groups()[g].params();
  for (auto& per_rank : partition_) per_rank.resize(g + 1);
  std::vector<size_t> order(params.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return params[a].numel() > params[b].numel(); });
  owner_.resize(base + params.size());
  for (size_t i : order) {
    const size_t r = static_cast<size_t>(std::min_element(load_.begin(), load_.end()) - load_.begin());
    partition_[r][g].push_back(params[i]);
    load_[r] += params[i].numel();
    owner_[base + i] = static_cast<int>(r);
  }
  // Local index (the wrapped optimizer numbers its parameters group by group) -> global.
  std::unordered_map<const TensorImpl*, size_t> index;
  for (size_t i = 0; i < params.size(); ++i) index[params[i].impl()] = base + i;
  for (const Tensor& p : partition_[static_cast<size_t>(group_->rank())][g])
    global_index_.push_back(index.at(p.impl()));
}

void ZeroRedundancyOptimizer::add_param_group(const optim::OptimizerParamGroup& group) {
  Optimizer::add_param_group(group);
  const size_t g = param_groups().size() - 1;
  partition_group(g);
  optim::OptimizerParamGroup local(partition_[static_cast<size_t>(group_->rank())][g],
                                   param_groups()[g].options().clone());
  for (const auto& item : param_groups()[g].extras()) local.set(item.key(), item.value());
  local_->add_param_group(local);
}

int ZeroRedundancyOptimizer::owner(const Tensor& param) const {
  size_t k = 0;
  for (const auto& g : param_groups()) {
    for (const Tensor& p : g.params()) {
      if (p.impl() == param.impl()) return owner_[k];
      ++k;
    }
  }
  EMBER_ERROR("[", kName, ".owner] the tensor (sizes ", param.sizes(), ") is not one of this optimizer's parameters");
}

int64_t ZeroRedundancyOptimizer::local_state_bytes() const {
  int64_t n = 0;
  for (const Tensor& p : local_->parameters()) {
    if (const optim::ParamState* st = local_->find_state(p)) {
      for (const auto& item : st->tensors)
        if (item.value().defined()) n += static_cast<int64_t>(item.value().nbytes());
    }
  }
  return n;
}

void ZeroRedundancyOptimizer::sync_options_to_local() {
  auto& local = local_->param_groups();
  for (size_t g = 0; g < local.size(); ++g) {
    local[g].set_options(param_groups()[g].options().clone());
    for (const auto& item : param_groups()[g].extras()) local[g].set(item.key(), item.value());
  }
}

Tensor ZeroRedundancyOptimizer::step(const optim::LossClosure& closure) {
  Tensor loss;
  if (closure) {
    EnableGradGuard enable;
    loss = closure();
  }
  sync_options_to_local();
  local_->step();
  sync_parameters();
  return loss;
}

void ZeroRedundancyOptimizer::sync_parameters() {
  const int world = group_->size();
  if (world == 1) return;
  NoGradGuard ng;
  // One all-gather per dtype (in order of first appearance): rank r's segment holds its
  // parameters of that dtype, flattened in partition order, padded to the longest segment.
  std::vector<DType> dtypes;
  for (const Tensor& p : parameters())
    if (std::find(dtypes.begin(), dtypes.end(), p.dtype()) == dtypes.end()) dtypes.push_back(p.dtype());
  for (DType dt : dtypes) {
    std::vector<std::vector<Tensor>> of_rank(static_cast<size_t>(world));
    std::vector<int64_t> counts(static_cast<size_t>(world), 0);
    for (int r = 0; r < world; ++r) {
      for (const auto& params : partition_[static_cast<size_t>(r)])
        for (const Tensor& p : params)
          if (p.dtype() == dt) {
            of_rank[static_cast<size_t>(r)].push_back(p);
            counts[static_cast<size_t>(r)] += p.numel();
          }
    }
    const int64_t longest = *std::max_element(counts.begin(), counts.end());
    if (longest == 0) continue;
    const auto me = static_cast<size_t>(group_->rank());
    Tensor segment = zeros({longest}, TensorOptions(dt));
    int64_t off = 0;
    for (const Tensor& p : of_rank[me]) {
      segment.narrow(0, off, p.numel()).copy_(p.detach().reshape({-1}));
      off += p.numel();
    }
    Tensor all = empty({longest * world}, TensorOptions(dt));
    all_gather_into_tensor(all, segment, group_);
    for (int r = 0; r < world; ++r) {
      if (static_cast<size_t>(r) == me) continue;
      off = static_cast<int64_t>(r) * longest;
      for (const Tensor& p : of_rank[static_cast<size_t>(r)]) {
        Tensor(p).copy_(all.narrow(0, off, p.numel()).view(p.sizes()));
        off += p.numel();
      }
    }
  }
}

void ZeroRedundancyOptimizer::consolidate_state_dict(int to) {
  EMBER_CHECK(to >= 0 && to < group_->size(), "[", kName, ".consolidate_state_dict] to=", to,
              " is not a rank of the group (size ", group_->size(), ")");
  // This rank's state, keyed by global parameter index.
  Value local = local_->state_dict();
  Value state = Value::dict();
  for (const auto& item : local.at("state").to_dict()) {
    const size_t li = static_cast<size_t>(std::stoll(item.key()));
    state[std::to_string(global_index_.at(li))] = item.value();
  }
  std::vector<Value> gathered;
  const bool receiver = group_->rank() == to;
  gather_object(state, receiver ? &gathered : nullptr, group_->global_rank(to), group_);
  consolidated_ = receiver;
  consolidated_on_ = to;
  if (!receiver) {
    consolidated_state_ = Value();
    return;
  }
  std::map<int64_t, Value> by_index;
  for (const Value& part : gathered)
    for (const auto& item : part.to_dict()) by_index[std::stoll(item.key())] = item.value();
  Value full_state = Value::dict();
  for (auto& [k, v] : by_index) full_state[std::to_string(k)] = std::move(v);
  Value groups = Value::list();
  int64_t index = 0;
  for (const auto& g : param_groups()) {
    Value gv = Value::dict();
    g.options().to_value(gv);
    for (const auto& item : g.extras()) gv[item.key()] = item.value();
    std::vector<int64_t> ids;
    for (size_t i = 0; i < g.params().size(); ++i) ids.push_back(index++);
    gv["params"] = Value(ids);
    groups.push_back(std::move(gv));
  }
  consolidated_state_ = Value::dict();
  consolidated_state_["state"] = std::move(full_state);
  consolidated_state_["param_groups"] = std::move(groups);
}

Value ZeroRedundancyOptimizer::state_dict() const {
  EMBER_CHECK(consolidated_, "[", kName, ".state_dict] the optimizer state has not been consolidated on rank ",
              group_->global_rank(group_->rank()),
              consolidated_on_ >= 0 ? " (the last consolidate_state_dict sent it to rank " +
                                          std::to_string(group_->global_rank(consolidated_on_)) + ")"
                                    : std::string(),
              "; call consolidate_state_dict(to=", group_->rank(),
              ") on every rank first if this rank is to save the global state");
  return consolidated_state_;
}

void ZeroRedundancyOptimizer::load_state_dict(const Value& sd) {
  const std::string op = std::string(kName) + ".load_state_dict";
  EMBER_CHECK(sd.is_dict() && sd.contains("state") && sd.contains("param_groups"), "[", op,
              "] expects a dict with 'state' and 'param_groups' (from state_dict())");
  const Value::List& saved_groups = sd.at("param_groups").to_list();
  EMBER_CHECK(saved_groups.size() == param_groups().size(), "[", op, "] the state dict has ", saved_groups.size(),
              " parameter groups but the optimizer has ", param_groups().size(),
              "; load a state dict saved for the same model and parameter groups");
  std::vector<std::vector<int64_t>> saved_ids;
  for (size_t g = 0; g < saved_groups.size(); ++g) {
    saved_ids.push_back(saved_groups[g].at("params").to_int_list());
    EMBER_CHECK(saved_ids.back().size() == param_groups()[g].params().size(), "[", op, "] parameter group ", g,
                " of the state dict has ", saved_ids.back().size(), " parameters but the optimizer's has ",
                param_groups()[g].params().size(), "; load a state dict saved for the same model");
  }
  // Global options first (validated), then the local optimizer's share of the state.
  std::vector<std::unique_ptr<optim::OptimizerOptions>> opts;
  for (const Value& gv : saved_groups) {
    opts.push_back(make_options());
    opts.back()->from_value(gv);
    opts.back()->validate(op.c_str());
  }
  const Value& saved_state = sd.at("state");
  std::vector<const Tensor*> global_params;
  for (const auto& g : param_groups())
    for (const Tensor& p : g.params()) global_params.push_back(&p);
  // Saved id of each global index (ids may be numbered freely in the file).
  std::vector<int64_t> id_of;
  for (const auto& ids : saved_ids) id_of.insert(id_of.end(), ids.begin(), ids.end());
  for (size_t gi = 0; gi < id_of.size(); ++gi) {
    const std::string key = std::to_string(id_of[gi]);
    if (!saved_state.contains(key)) continue;
    for (const auto& item : saved_state.at(key).to_dict()) {
      if (!item.value().is_tensor() || item.key() == "step") continue;
      const Tensor& t = item.value().to_tensor();
      EMBER_CHECK(t.sizes() == global_params[gi]->sizes(), "[", op, "] state '", item.key(), "' of parameter ", gi,
                  " has sizes ", t.sizes(), " but the parameter has sizes ", global_params[gi]->sizes(),
                  "; load a state dict saved for the same model");
    }
  }
  Value local = Value::dict();
  Value local_state = Value::dict();
  Value local_groups = Value::list();
  size_t li = 0;
  const auto& mine = partition_[static_cast<size_t>(group_->rank())];
  for (size_t g = 0; g < saved_groups.size(); ++g) {
    Value gv = saved_groups[g];
    std::vector<int64_t> ids;
    for (size_t k = 0; k < mine[g].size(); ++k, ++li) {
      ids.push_back(static_cast<int64_t>(li));
      const std::string key = std::to_string(id_of[global_index_[li]]);
      if (saved_state.contains(key)) local_state[std::to_string(li)] = saved_state.at(key);
    }
    gv["params"] = Value(ids);
    local_groups.push_back(std::move(gv));
  }
  local["state"] = std::move(local_state);
  local["param_groups"] = std::move(local_groups);
  local_->load_state_dict(local);
  for (size_t g = 0; g < opts.size(); ++g) param_groups()[g].set_options(std::move(opts[g]));
  // Extras (scheduler entries such as initial_lr) as the wrapped optimizer read them.
  for (size_t g = 0; g < opts.size(); ++g)
    for (const auto& item : local_->param_groups()[g].extras()) param_groups()[g].set(item.key(), item.value());
}

}  // namespace ember::distributed
