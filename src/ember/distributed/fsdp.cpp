// FullyShardedDataParallel: Note [FSDP units] in fsdp.h.

#include "ember/distributed/fsdp.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/storage.h"
#include "ember/distributed/distributed.h"
#include "ember/ops/creation.h"
#include "ember/optim/optimizer.h"

namespace ember::nn::parallel {

namespace dist = ember::distributed;

namespace {
constexpr const char* kName = "FullyShardedDataParallel";
constexpr const char* kFlatParam = "_flat_param";

// Note [Freeing a unit's buffer]: the autograd graph saves the original parameters (and
// views of them) during forward, so a unit's full buffer keeps its storage object for
// life; freeing swaps the storage's memory for an empty allocation and gathering swaps a
// fresh one back, and every saved view sees the refilled memory. The gather writes the
// buffer without bumping its version counter, so the graph's in-place checks pass. While
// freed, the original parameters point at 0-element placeholders: using one by mistake
// (a unit's forward called directly, bypassing its hooks) fails with a shape error
// instead of reading freed memory.
void free_storage(const Tensor& t) {
  Storage empty_storage = make_storage(0, t.device());
  t.storage()->swap_data(*empty_storage);
}

void allocate_storage(const Tensor& t, size_t nbytes) {
  Storage fresh = make_storage(nbytes, t.device());
  t.storage()->swap_data(*fresh);
}
}  // namespace

struct FullyShardedDataParallelImpl::Unit {
  std::string path;  // module path within the wrapped module ("" for the root unit)
  std::shared_ptr<Module> module;
  std::vector<std::string> names;  // qualified names within the wrapped module
  std::vector<Tensor> params;      // the original parameters
  std::vector<Tensor> views;       // their views into full
  std::vector<Tensor> placeholders;
  std::vector<int64_t> offsets, numels;
  int64_t numel = 0, padded = 0, shard_size = 0;
  DType dtype = kFloat32;          // the shard's (the parameters' before wrapping)
  DType compute_dtype = kFloat32;  // the full buffer's: mixed_precision's param_dtype, else dtype
  bool trainable = true;
  Tensor full;                // [padded], compute_dtype; memory only while gathered
  Tensor shard;               // the _flat_param leaf: elements [rank * shard_size, (rank + 1) * shard_size)
  bool gathered = false;      // full has memory; its contents are final once gather_work is null
  dist::WorkPtr gather_work;  // a prefetch in flight (Note [FSDP prefetch])
  Tensor gather_input;        // what it sends, alive until it finishes
  Tensor accumulated;         // no_sync's sum of full gradients, dtype [padded] (Note [FSDP no_sync])
  bool used = false;          // its forward ran since the last prepare_forward
  bool reduced = false;       // its gradients were reduced (or accumulated under no_sync) since then
  size_t pending = 0;
  std::vector<uint8_t> ready;
  int64_t bytes() const { return padded * static_cast<int64_t>(element_size(compute_dtype)); }
};

FullyShardedDataParallelImpl::FullyShardedDataParallelImpl(std::shared_ptr<Module> module, FSDPOptions options)
    : Module(kName), module_(std::move(module)), options_(std::move(options)) {
  EMBER_CHECK(module_ != nullptr, "[", kName, "] the module is null");
  group_ = options_.process_group ? options_.process_group : dist::default_group();
  register_module("_fsdp_wrapped_module", module_);
  const int world = group_->size();
  const int rank = group_->rank();
  if (options_.mixed_precision) {
    const MixedPrecision& mp = *options_.mixed_precision;
    for (const auto& [field, dt] :
         {std::pair{"param_dtype", mp.param_dtype}, std::pair{"reduce_dtype", mp.reduce_dtype},
          std::pair{"buffer_dtype", mp.buffer_dtype}}) {
      EMBER_CHECK(!dt || is_floating_point(*dt), "[", kName, "] MixedPrecision.", field,
                  " must be a floating-point dtype, got ", *dt,
                  "; use kBFloat16, kFloat16 or kFloat32, or leave it unset");
    }
    mixed_params_ = mp.param_dtype.has_value();
  }

  if (options_.sync_module_states) {
    NoGradGuard ng;
    for (const auto& item : module_->named_parameters()) dist::broadcast(item.value(), group_->global_rank(0), group_);
    for (const auto& item : module_->named_buffers()) dist::broadcast(item.value(), group_->global_rank(0), group_);
  }
  if (options_.mixed_precision && options_.mixed_precision->buffer_dtype) {
    NoGradGuard ng;
    const DType bt = *options_.mixed_precision->buffer_dtype;
    for (const auto& item : module_->named_buffers()) {
      const Tensor& b = item.value();
      if (!b.is_floating_point() || b.dtype() == bt) continue;
      buffer_dtypes_.emplace_back(item.key(), b.dtype());
      b.set_data(b.to(bt));
    }
  }

  for (const auto& item : module_->state_dict()) state_keys_.push_back(item.key());
  // Who owns each parameter (module and local name), for unregistering it.
  struct Owner {
    std::shared_ptr<Module> module;
    std::string local;
  };
  std::unordered_map<const TensorImpl*, Owner> owner;
  for (const auto& item : module_->named_modules()) {
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) {
      EMBER_CHECK(p.key() != kFlatParam, "[", kName, "] the module '", item.key(),
                  "' already has a parameter named _flat_param: is it wrapped twice?");
      owner.emplace(p.value().impl(), Owner{item.value(), p.key()});
    }
  }

  // Pick the units (Note [FSDP units]).
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> picked;
  if (options_.auto_wrap_policy) {
    std::function<void(const std::shared_ptr<Module>&, const std::string&)> visit = [&](const auto& m,
                                                                                        const std::string& prefix) {
      for (const auto& child : m->named_children()) {
        const std::string qn = prefix.empty() ? child.key() : prefix + "." + child.key();
        if (options_.auto_wrap_policy(*child.value(), qn)) {
          picked.emplace_back(qn, child.value());
        } else {
          visit(child.value(), qn);
        }
      }
    };
    visit(module_, "");
  } else {
    for (const auto& child : module_->named_children())
      if (!child.value()->parameters().empty()) picked.emplace_back(child.key(), child.value());
  }
  std::unordered_set<const TensorImpl*> taken;
  auto make_unit = [&](const std::string& path, const std::shared_ptr<Module>& m,
                       const OrderedDict<std::string, Tensor>& named) {
    auto u = std::make_unique<Unit>();
    u->path = path;
    u->module = m;
    for (const auto& item : named) {
      if (!taken.insert(item.value().impl()).second) continue;  // shared with an earlier unit
      u->names.push_back(path.empty() ? item.key() : path + "." + item.key());
      u->params.push_back(item.value());
    }
    if (!u->params.empty()) units_.push_back(std::move(u));
  };
  for (const auto& [path, m] : picked) {
    OrderedDict<std::string, Tensor> named;
    for (const auto& item : m->named_parameters()) named.insert(item.key(), item.value());
    make_unit(path, m, named);
  }
  make_unit("", module_, module_->named_parameters());
  // The root unit (if any) came last; keep it last: forward gathers it first, separately.

  NoGradGuard ng;
  for (size_t k = 0; k < units_.size(); ++k) {
    Unit& u = *units_[k];
    u.dtype = u.params[0].dtype();
    u.compute_dtype = mixed_params_ ? *options_.mixed_precision->param_dtype : u.dtype;
    u.trainable = u.params[0].requires_grad();
    for (size_t i = 0; i < u.params.size(); ++i) {
      const Tensor& p = u.params[i];
      EMBER_CHECK(p.dtype() == u.dtype && p.is_floating_point(), "[", kName, "] unit '", u.path,
                  "' mixes parameter dtypes (", u.names[0], " is ", u.dtype, ", ", u.names[i], " is ", p.dtype(),
                  "); every parameter of a unit must have the same floating-point dtype: convert the module, or "
                  "give such parameters their own unit with auto_wrap_policy");
      EMBER_CHECK(p.requires_grad() == u.trainable, "[", kName, "] unit '", u.path,
                  "' mixes trainable and frozen parameters (", u.names[0], " and ", u.names[i],
                  "); give frozen parameters their own unit with auto_wrap_policy");
      u.offsets.push_back(u.numel);
      u.numels.push_back(p.numel());
      u.numel += p.numel();
    }
    u.shard_size = (u.numel + world - 1) / world;
    u.padded = u.shard_size * world;
    Tensor flat = zeros({u.padded}, TensorOptions(u.dtype));
    for (size_t i = 0; i < u.params.size(); ++i)
      flat.narrow(0, u.offsets[i], u.numels[i]).copy_(u.params[i].detach().reshape({-1}));
    u.shard = flat.narrow(0, rank * u.shard_size, u.shard_size).clone();
    u.full = u.compute_dtype == u.dtype ? flat : flat.to(u.compute_dtype);
    for (size_t i = 0; i < u.params.size(); ++i) {
      u.views.push_back(u.full.narrow(0, u.offsets[i], u.numels[i]).view(u.params[i].sizes()));
      u.placeholders.push_back(empty({0}, TensorOptions(u.compute_dtype)));
    }
    u.shard.requires_grad_(u.trainable);
    for (size_t i = 0; i < u.params.size(); ++i) {
      const Owner& o = owner.at(u.params[i].impl());
      o.module->unregister_parameter(o.local);
      u.params[i].set_data(u.views[i]);
    }
    u.module->register_parameter(kFlatParam, u.shard, u.trainable);
    u.gathered = true;
    gathered_bytes_ += u.bytes();
    reshard(u);
    u.ready.assign(u.params.size(), 0);
    if (u.trainable) {
      for (size_t i = 0; i < u.params.size(); ++i) {
        hooks_.push_back(u.params[i].register_post_accumulate_grad_hook([this, k, i](const Tensor&) {
          Unit& unit = *units_[k];
          if (unit.ready[i]) return;
          unit.ready[i] = 1;
          if (--unit.pending == 0) on_grad_ready(k);
        }));
      }
    }
    if (!u.path.empty()) {
      hooks_.push_back(u.module->register_forward_pre_hook([this, k](Module&, const TensorList& inputs) {
        Unit& unit = *units_[k];
        gather(unit);
        unit.used = true;
        prefetch_forward(k);
        forward_order_.push_back(k);
        if (!mixed_params_) return std::optional<TensorList>();
        TensorList cast;
        for (const Tensor& t : inputs) cast.push_back(cast_input(t));
        return std::optional<TensorList>(std::move(cast));
      }));
      hooks_.push_back(
          u.module->register_forward_hook([this, k](Module&, const TensorList&, const TensorList& outputs) {
            hook_outputs(k, outputs);
            // SHARD_GRAD_OP keeps the parameters for the backward (freed after the reduction);
            // without a backward to come, they are freed now.
            const bool keep = options_.sharding_strategy == ShardingStrategy::SHARD_GRAD_OP && GradMode::is_enabled() &&
                              units_[k]->trainable;
            if (!keep) reshard(*units_[k]);
            return std::optional<TensorList>();
          }));
    }
  }
  for (auto& u : units_) u->pending = u->trainable ? u->params.size() : 0;
}

FullyShardedDataParallelImpl::~FullyShardedDataParallelImpl() {
  for (auto& h : hooks_) h.remove();
  for (auto& u : units_) {
    if (!u->gather_work) continue;
    try {
      u->gather_work->wait();  // it writes into u->full
    } catch (const std::exception&) {
      // The group failed; the error was or will be reported by the next collective.
    }
  }
}

void FullyShardedDataParallelImpl::gather(Unit& u) {
  start_gather(u, /*async=*/false);
  complete_gather(u);
}

void FullyShardedDataParallelImpl::start_gather(Unit& u, bool async) {
  if (u.gathered) return;
  NoGradGuard ng;
  allocate_storage(u.full, static_cast<size_t>(u.bytes()));
  // Mixed precision: each rank casts its own shard, so the all-gather moves param_dtype.
  // An async gather sends a copy: the shard may change (an optimizer step) before it runs.
  Tensor mine = u.shard.detach().to(u.compute_dtype, /*copy=*/async);
  if (group_->size() == 1) {
    std::memcpy(u.full.data_ptr(), mine.data_ptr(), static_cast<size_t>(u.bytes()));
  } else if (async) {
    ++prefetch_count_;
    u.gather_input = mine;
    u.gather_work = dist::all_gather_into_tensor(u.full, mine, group_, /*async_op=*/true);
  } else {
    dist::all_gather_into_tensor(u.full, mine, group_);
  }
  u.gathered = true;
  gathered_bytes_ += u.bytes();
  peak_gathered_bytes_ = std::max(peak_gathered_bytes_, gathered_bytes_);
  if (!u.gather_work) {
    for (size_t i = 0; i < u.params.size(); ++i) u.params[i].set_data(u.views[i]);
  }
}

void FullyShardedDataParallelImpl::complete_gather(Unit& u) {
  if (!u.gather_work) return;
  dist::WorkPtr work = std::move(u.gather_work);
  u.gather_work = nullptr;
  u.gather_input = Tensor();
  work->wait();
  for (size_t i = 0; i < u.params.size(); ++i) u.params[i].set_data(u.views[i]);
}

void FullyShardedDataParallelImpl::prefetch_forward(size_t k) {
  if (!options_.forward_prefetch) return;
  // The unit that followed this one in the last forward, if this forward follows it so far.
  const size_t pos = forward_order_.size();
  if (pos + 1 >= previous_forward_order_.size() || previous_forward_order_[pos] != k) return;
  const size_t next = previous_forward_order_[pos + 1];
  if (next != k) start_gather(*units_[next], /*async=*/true);
}

void FullyShardedDataParallelImpl::prefetch_backward(size_t k) {
  // Backward runs the units roughly in reverse forward order: the next one to need its
  // parameters is the last unit before k's last forward that still awaits its gradients.
  auto it = std::find(forward_order_.rbegin(), forward_order_.rend(), k);
  for (; it != forward_order_.rend(); ++it) {
    Unit& next = *units_[*it];
    if (*it == k || !next.trainable || next.reduced) continue;
    start_gather(next, /*async=*/true);
    return;
  }
}

Tensor FullyShardedDataParallelImpl::cast_input(const Tensor& t) const {
  if (!mixed_params_ || !t.defined() || !t.is_floating_point()) return t;
  return t.to(*options_.mixed_precision->param_dtype);
}

void FullyShardedDataParallelImpl::reshard(Unit& u) {
  if (!u.gathered) return;
  complete_gather(u);  // a prefetch nobody used: let it finish writing before the memory goes
  for (size_t i = 0; i < u.params.size(); ++i) u.params[i].set_data(u.placeholders[i]);
  free_storage(u.full);
  u.gathered = false;
  gathered_bytes_ -= u.bytes();
}

void FullyShardedDataParallelImpl::hook_outputs(size_t k, const std::vector<Tensor>& outputs) {
  if (!GradMode::is_enabled() || !units_[k]->trainable) return;
  for (const Tensor& o : outputs) {
    if (!o.defined() || !o.requires_grad() || !o.grad_fn()) continue;
    // The gradient reaching an output comes before the unit's own backward nodes run.
    o.register_hook([this, k](const Tensor&) {
      Unit& u = *units_[k];
      if (u.reduced) return;
      gather(u);
      if (options_.backward_prefetch == BackwardPrefetch::BACKWARD_PRE) prefetch_backward(k);
    });
  }
}

void FullyShardedDataParallelImpl::on_grad_ready(size_t k) {
  Unit& u = *units_[k];
  NoGradGuard ng;
  const int world = group_->size();
  // Without mixed precision, or under no_sync (Note [FSDP no_sync]), the gradients are
  // flattened in the shard's dtype; otherwise straight into reduce_dtype.
  const bool accumulate = !require_sync_;  // read during backward, as torch's FSDP does
  const DType reduce_dtype = options_.mixed_precision && options_.mixed_precision->reduce_dtype
                                 ? *options_.mixed_precision->reduce_dtype
                                 : u.compute_dtype;
  const bool widen = accumulate || u.accumulated.defined();
  Tensor flat = zeros({u.padded}, TensorOptions(widen ? u.dtype : reduce_dtype));
  for (size_t i = 0; i < u.params.size(); ++i) {
    const Tensor& g = u.params[i].grad();
    if (g.defined()) flat.narrow(0, u.offsets[i], u.numels[i]).copy_(g.reshape({-1}));
  }
  for (auto& p : u.params) p.set_grad(Tensor());
  if (accumulate) {
    if (u.accumulated.defined()) {
      u.accumulated.add_(flat);
    } else {
      u.accumulated = flat;
    }
    u.reduced = true;
    reshard(u);
    return;
  }
  if (u.accumulated.defined()) {
    flat.add_(u.accumulated);
    u.accumulated = Tensor();
    flat = flat.to(reduce_dtype);
  }
  Tensor mine;
  if (world == 1) {
    mine = flat;
  } else {
    // Divided first, then summed: the same arithmetic as DDP's buckets.
    flat.div_(world);
    mine = empty({u.shard_size}, TensorOptions(reduce_dtype));
    dist::reduce_scatter_tensor(mine, flat, dist::ReduceOp::SUM, group_);
  }
  mine = mine.to(u.dtype);
  if (u.shard.grad().defined()) {
    u.shard.mutable_grad().add_(mine);
  } else {
    u.shard.set_grad(mine);
  }
  u.reduced = true;
  reshard(u);
  if (options_.backward_prefetch == BackwardPrefetch::BACKWARD_POST) prefetch_backward(k);
}

void FullyShardedDataParallelImpl::check_previous_iteration() {
  bool backward_ran = false;
  for (const auto& u : units_)
    backward_ran = backward_ran || u->reduced || (u->trainable && u->pending < u->params.size());
  std::vector<std::string> missing;
  if (backward_ran) {
    for (const auto& u : units_) {
      if (!u->trainable || !u->used || u->reduced) continue;
      for (size_t i = 0; i < u->params.size(); ++i)
        if (!u->ready[i]) missing.push_back(u->names[i]);
    }
  }
  // A fresh iteration either way, so that a caught error does not repeat.
  for (auto& u : units_) {
    if (!u->reduced) {
      for (auto& p : u->params) p.set_grad(Tensor());
    }
    reshard(*u);
    u->used = false;
    u->reduced = false;
    std::fill(u->ready.begin(), u->ready.end(), 0);
    u->pending = u->trainable ? u->params.size() : 0;
  }
  if (missing.empty()) return;
  std::ostringstream os;
  os << "[" << kName << "] the last backward did not produce gradients for " << missing.size()
     << " parameter(s) used in its forward on rank " << group_->global_rank(group_->rank())
     << ", so their units' gradients were never reduced: ";
  for (size_t i = 0; i < missing.size() && i < 10; ++i) os << (i ? ", " : "") << "'" << missing[i] << "'";
  if (missing.size() > 10) os << ", ... (" << missing.size() - 10 << " more)";
  os << ". Make every parameter of a unit take part in the loss, or give the unused ones their own unit";
  throw Error(os.str());
}

void FullyShardedDataParallelImpl::prepare_forward() {
  check_previous_iteration();
  if (!forward_order_.empty()) previous_forward_order_ = std::move(forward_order_);
  forward_order_.clear();
  // The root unit is gathered for the whole forward and backward.
  for (auto& u : units_) {
    if (u->path.empty()) {
      gather(*u);
      u->used = true;
    }
  }
}

void FullyShardedDataParallelImpl::after_forward(const std::vector<Tensor>& outputs) {
  bool needs_backward = GradMode::is_enabled();
  if (needs_backward) {
    needs_backward = false;
    for (const auto& o : outputs) needs_backward = needs_backward || (o.defined() && o.requires_grad());
  }
  for (auto& u : units_) {
    if (u->path.empty() && (!needs_backward || !u->trainable)) reshard(*u);
  }
}

Tensor FullyShardedDataParallelImpl::forward(const Tensor& input) {
  prepare_forward();
  Tensor out = (*module_)(cast_input(input));
  after_forward({out});
  return out;
}

std::vector<std::string> FullyShardedDataParallelImpl::unit_names() const {
  std::vector<std::string> out;
  for (const auto& u : units_) out.push_back(u->path);
  return out;
}

std::vector<std::vector<std::string>> FullyShardedDataParallelImpl::unit_parameter_names() const {
  std::vector<std::vector<std::string>> out;
  for (const auto& u : units_) out.push_back(u->names);
  return out;
}

const Tensor& FullyShardedDataParallelImpl::shard(size_t unit) const {
  EMBER_CHECK(unit < units_.size(), "[", kName, ".shard] unit ", unit, " out of range (", units_.size(), " units)");
  return units_[unit]->shard;
}

std::vector<FullyShardedDataParallelImpl::LocalPiece> FullyShardedDataParallelImpl::local_pieces() const {
  std::vector<LocalPiece> out;
  const int64_t rank = group_->rank();
  for (size_t k = 0; k < units_.size(); ++k) {
    const Unit& u = *units_[k];
    const int64_t lo = rank * u.shard_size, hi = lo + u.shard_size;
    for (size_t i = 0; i < u.params.size(); ++i) {
      const int64_t b = std::max(lo, u.offsets[i]), e = std::min(hi, u.offsets[i] + u.numels[i]);
      LocalPiece piece;
      piece.name = u.names[i];
      piece.shape = std::vector<int64_t>(u.views[i].sizes().begin(), u.views[i].sizes().end());
      piece.unit = k;
      if (b < e) {
        piece.begin = b - u.offsets[i];
        piece.end = e - u.offsets[i];
        piece.shard_offset = b - lo;
      }
      out.push_back(std::move(piece));
    }
  }
  return out;
}

DType FullyShardedDataParallelImpl::original_buffer_dtype(const std::string& name, DType current) const {
  for (const auto& [key, dtype] : buffer_dtypes_)
    if (key == name) return dtype;
  return current;
}

Tensor FullyShardedDataParallelImpl::gather_master(Unit& u) {
  // From the shards, in their dtype: with mixed precision the full buffer holds rounded values.
  Tensor flat = empty({u.padded}, TensorOptions(u.dtype));
  if (group_->size() == 1) {
    flat.copy_(u.shard.detach());
  } else {
    dist::all_gather_into_tensor(flat, u.shard.detach(), group_);
  }
  return flat;
}

OrderedDict<std::string, Tensor> FullyShardedDataParallelImpl::full_state_dict() {
  NoGradGuard ng;
  std::map<std::string, Tensor> params;
  for (auto& u : units_) {
    Tensor flat = gather_master(*u);
    for (size_t i = 0; i < u->params.size(); ++i)
      params[u->names[i]] = flat.narrow(0, u->offsets[i], u->numels[i]).view(u->views[i].sizes()).clone();
  }

  // The wrapped module's own order: its state_dict lists the shards where the original
  // parameters were, so walk it and expand each unit's shard into its parameters.
  OrderedDict<std::string, Tensor> out;
  std::unordered_map<std::string, size_t> unit_of_shard;
  for (size_t k = 0; k < units_.size(); ++k)
    unit_of_shard[units_[k]->path.empty() ? kFlatParam : units_[k]->path + "." + kFlatParam] = k;
  for (const auto& item : module_->state_dict()) {
    auto it = unit_of_shard.find(item.key());
    if (it == unit_of_shard.end()) {
      out.insert(item.key(), item.value().to(original_buffer_dtype(item.key(), item.value().dtype()), /*copy=*/true));
      continue;
    }
    for (const auto& name : units_[it->second]->names) out.insert(name, params.at(name));
  }
  return out;
}

void FullyShardedDataParallelImpl::load_full_state_dict(const OrderedDict<std::string, Tensor>& state, bool strict) {
  const std::string op = std::string(kName) + ".load_full_state_dict";
  std::unordered_map<std::string, std::pair<size_t, size_t>> where;  // name -> (unit, index)
  for (size_t k = 0; k < units_.size(); ++k)
    for (size_t i = 0; i < units_[k]->names.size(); ++i) where[units_[k]->names[i]] = {k, i};
  auto buffers = module_->named_buffers();
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [name, ki] : where) {
    const Tensor* t = state.find(name);
    if (!t) {
      missing.push_back(name);
    } else if (t->sizes() != units_[ki.first]->views[ki.second].sizes()) {
      std::ostringstream os;
      os << name << ": " << t->sizes() << " vs " << units_[ki.first]->views[ki.second].sizes();
      mismatched.push_back(os.str());
    }
  }
  for (const auto& item : state) {
    if (where.count(item.key())) continue;
    const Tensor* b = buffers.find(item.key());
    if (!b) {
      unexpected.push_back(item.key());
    } else if (b->sizes() != item.value().sizes()) {
      std::ostringstream os;
      os << item.key() << ": " << item.value().sizes() << " vs " << b->sizes();
      mismatched.push_back(os.str());
    }
  }
  std::sort(missing.begin(), missing.end());
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + ("'" + v[i] + "'");
    return s;
  };
  EMBER_CHECK(mismatched.empty(), "[", op, "] shapes differ from the model's (checkpoint vs model): ", list(mismatched),
              "; load a checkpoint of the same model");
  EMBER_CHECK(!strict || (missing.empty() && unexpected.empty()), "[", op,
              "] the state dict does not match the model: ", missing.empty() ? "" : "missing keys " + list(missing),
              missing.empty() || unexpected.empty() ? "" : "; ",
              unexpected.empty() ? "" : "unexpected keys " + list(unexpected),
              "; load a checkpoint of the same model, or pass strict=false");
  NoGradGuard ng;
  for (const auto& piece : local_pieces()) {
    const Tensor* t = state.find(piece.name);
    if (!t || piece.begin == piece.end) continue;
    Tensor shard = units_[piece.unit]->shard.detach();
    shard.narrow(0, piece.shard_offset, piece.end - piece.begin)
        .copy_(t->reshape({-1}).narrow(0, piece.begin, piece.end - piece.begin));
  }
  for (const auto& item : state) {
    if (where.count(item.key())) continue;
    if (Tensor* b = buffers.find(item.key())) b->copy_(item.value());
  }
}

FSDPMemoryStats FullyShardedDataParallelImpl::memory_stats(const optim::Optimizer* optimizer) const {
  FSDPMemoryStats m;
  for (const auto& u : units_) {
    m.sharded_parameter_bytes += static_cast<int64_t>(u->shard.nbytes());
    if (u->shard.grad().defined()) m.sharded_gradient_bytes += static_cast<int64_t>(u->shard.grad().nbytes());
    m.full_parameter_bytes += u->numel * static_cast<int64_t>(element_size(u->dtype));
    if (u->accumulated.defined()) m.accumulated_gradient_bytes += static_cast<int64_t>(u->accumulated.nbytes());
    if (optimizer) {
      if (const optim::ParamState* st = optimizer->find_state(u->shard)) {
        for (const auto& item : st->tensors)
          if (item.value().defined()) m.optimizer_state_bytes += static_cast<int64_t>(item.value().nbytes());
      }
    }
  }
  m.gathered_bytes_now = gathered_bytes_;
  m.peak_gathered_bytes = peak_gathered_bytes_;
  return m;
}

}  // namespace ember::nn::parallel
