// Sharded checkpoints: Note [Sharded checkpoint layout] in sharded_checkpoint.h.

#include "ember/distributed/sharded_checkpoint.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/distributed/distributed.h"
#include "ember/distributed/fsdp.h"
#include "ember/distributed/object_collectives.h"
#include "ember/distributed/zero_redundancy_optimizer.h"
#include "ember/ops/creation.h"
#include "ember/optim/optimizer.h"
#include "ember/serialize/checkpoint.h"
#include "ember/serialize/checkpoint_format.h"

namespace ember::distributed {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "ember-sharded-checkpoint";
constexpr const char* kMetadataFile = "metadata.safetensors";
constexpr const char* kIdKey = "__checkpoint_id";

std::string pad(int v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%05d", v);
  return buf;
}

std::string new_checkpoint_id() {
  std::random_device rd;
  const uint64_t t = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32 ^ rd()) ^ t;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

Value string_list(const std::vector<std::string>& v) {
  Value out = Value::list();
  for (const auto& s : v) out.push_back(Value(s));
  return out;
}

std::vector<std::string> to_strings(const Value& v) {
  std::vector<std::string> out;
  for (const Value& s : v.to_list()) out.push_back(s.to_string());
  return out;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string quoted_list(const std::vector<std::string>& v, size_t limit = 10) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < limit; ++i) s += (i ? ", '" : "'") + v[i] + "'";
  if (v.size() > limit) s += ", ... (" + std::to_string(v.size() - limit) + " more)";
  return s;
}

// Runs f; turns an exception into a message so that every rank can learn of it.
template <typename F>
std::string capture(F&& f) {
  try {
    f();
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

// ---------------------------------------------------------------- saving

namespace {
void save_sharded_state_impl(const ShardedState& state, const std::string& dir, const ProcessGroupPtr& group_arg);
}

void save_sharded_state(const ShardedState& state, const std::string& dir, const ProcessGroupPtr& group) {
  try {
    save_sharded_state_impl(state, dir, group);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind("[save_sharded]", 0) == 0) throw;
    // A collective failed (a rank died or left): the metadata was not written, so the
    // checkpoint saved before in dir, if any, is still the one that loads.
    throw Error("[save_sharded] the ranks lost contact while saving to '" + dir +
                "'; the checkpoint saved there before (if any) is unchanged: " + what);
  }
}

namespace {
void save_sharded_state_impl(const ShardedState& state, const std::string& dir, const ProcessGroupPtr& group_arg) {
  constexpr const char* op = "save_sharded";
  const ProcessGroupPtr& group = group_arg ? group_arg : default_group();
  const int rank = group->rank(), world = group->size();
  const int root = group->global_rank(0);

  std::vector<Value> box{Value(rank == 0 ? new_checkpoint_id() : std::string())};
  broadcast_object_list(box, root, group);
  const std::string id = box[0].to_string();
  const std::string file = "shard-" + id + "-" + pad(rank) + "-of-" + pad(world) + ".safetensors";

  // This rank's file, and what it holds.
  Value mine = Value::dict();
  Value content = Value::dict();
  content[kIdKey] = id;
  std::string error = capture([&] {
    std::error_code ec;
    fs::create_directories(dir, ec);
    EMBER_CHECK(!ec || fs::is_directory(dir), "[", op, "] cannot create the checkpoint directory '", dir,
                "': ", ec.message());
    for (const auto& item : state.tensors) {
      const ShardedTensor& t = item.value();
      Value info = Value::dict();
      info["shape"] = Value(t.shape);
      info["dtype"] = std::string(serialize_format::dtype_code(t.dtype));
      const int64_t n = t.local.defined() ? t.local.numel() : 0;
      EMBER_CHECK(!t.local.defined() || t.local.dtype() == t.dtype, "[", op, "] tensor '", item.key(), "' is ", t.dtype,
                  " but its local piece is ", t.local.dtype());
      EMBER_CHECK(t.begin >= 0 && t.begin + n <= numel_of(t.shape), "[", op, "] the piece of tensor '", item.key(),
                  "' (elements ", t.begin, " to ", t.begin + n, ") lies outside its shape ", shape_str(t.shape));
      info["begin"] = t.begin;
      info["n"] = n;
      mine[item.key()] = std::move(info);
      if (n > 0) content[item.key()] = Value(t.local.detach().reshape({-1}).contiguous());
    }
    ember::save(content, (fs::path(dir) / file).string());
  });
  Value report = Value::dict();
  report["error"] = error;
  report["tensors"] = std::move(mine);
  std::vector<Value> all;
  all_gather_object(all, report, group);
  for (int r = 0; r < world; ++r) {
    const std::string& e = all[static_cast<size_t>(r)].at("error").to_string();
    EMBER_CHECK(e.empty(), "[", op, "] rank ", group->global_rank(r), " could not write its shard to '", dir, "': ", e);
  }

  // The metadata (every rank checks the pieces, so that all agree on the outcome).
  Value tensors = Value::dict();
  std::map<std::string, std::vector<std::array<int64_t, 3>>> pieces;
  for (int r = 0; r < world; ++r) {
    for (const auto& item : all[static_cast<size_t>(r)].at("tensors").to_dict()) {
      const Value& info = item.value();
      if (!tensors.contains(item.key())) {
        Value t = Value::dict();
        t["shape"] = info.at("shape");
        t["dtype"] = info.at("dtype");
        tensors[item.key()] = std::move(t);
      } else {
        const Value& t = tensors.at(item.key());
        EMBER_CHECK(t.at("shape") == info.at("shape") && t.at("dtype") == info.at("dtype"), "[", op,
                    "] the ranks disagree about tensor '", item.key(), "': ", shape_str(t.at("shape").to_int_list()),
                    " ", t.at("dtype").to_string(), " on one, ", shape_str(info.at("shape").to_int_list()), " ",
                    info.at("dtype").to_string(), " on rank ", group->global_rank(r));
      }
      if (info.at("n").to_int() > 0)
        pieces[item.key()].push_back({r, info.at("begin").to_int(), info.at("n").to_int()});
    }
  }
  for (auto& item : tensors.to_dict()) {
    auto& ps = pieces[item.key()];
    std::sort(ps.begin(), ps.end(), [](const auto& a, const auto& b) { return a[1] < b[1]; });
    const int64_t numel = numel_of(item.value().at("shape").to_int_list());
    int64_t covered = 0;
    Value list = Value::list();
    for (const auto& p : ps) {
      EMBER_CHECK(p[1] == covered, "[", op, "] the pieces of tensor '", item.key(), "' ",
                  p[1] < covered ? "overlap" : "leave a gap", " at element ", std::min(p[1], covered),
                  "; every element must be saved by exactly one rank");
      covered += p[2];
      list.push_back(Value(std::vector<int64_t>{p[0], p[1], p[2]}));
    }
    EMBER_CHECK(covered == numel, "[", op, "] the pieces of tensor '", item.key(), "' cover ", covered, " of its ",
                numel, " elements; every element must be saved by exactly one rank");
    item.value()["pieces"] = std::move(list);
  }
  std::vector<std::string> files;
  for (int r = 0; r < world; ++r) files.push_back("shard-" + id + "-" + pad(r) + "-of-" + pad(world) + ".safetensors");

  std::vector<Value> outcome{Value(std::string())};
  if (rank == 0) {
    outcome[0] = capture([&] {
      Value meta = Value::dict();
      meta["format"] = kFormat;
      meta["version"] = 1;
      meta["id"] = id;
      meta["world_size"] = world;
      meta["files"] = string_list(files);
      meta["tensors"] = std::move(tensors);
      meta["replicated"] = state.replicated;
      ember::save(meta, (fs::path(dir) / kMetadataFile).string());
      // The new checkpoint is complete: remove the files of earlier saves.
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        const bool old_shard = name.rfind("shard-", 0) == 0 && name.rfind("shard-" + id + "-", 0) != 0 &&
                               name.size() > 12 && name.substr(name.size() - 12) == ".safetensors";
        // Temporaries of shards of earlier, interrupted saves (a save's own are gone by now).
        const bool old_temporary = name.rfind(".shard-", 0) == 0 && name.find(id) == std::string::npos &&
                                   name.find(".ember-tmp.") != std::string::npos;
        if (old_shard || old_temporary) fs::remove(entry.path(), ec);
      }
    });
  }
  broadcast_object_list(outcome, root, group);
  EMBER_CHECK(outcome[0].to_string().empty(), "[", op, "] rank ", root, " could not write the metadata to '", dir,
              "': ", outcome[0].to_string());
}
}  // namespace

// ---------------------------------------------------------------- reading

struct ShardedCheckpointReader::Entry {
  std::vector<int64_t> shape;
  DType dtype = kFloat32;
  std::vector<std::array<int64_t, 3>> pieces;  // (file, begin, n)
};

ShardedCheckpointReader::ShardedCheckpointReader(std::string dir) : dir_(std::move(dir)) {
  constexpr const char* op = "load_sharded";
  const std::string path = (fs::path(dir_) / kMetadataFile).string();
  EMBER_CHECK(fs::exists(path), "[", op, "] '", dir_, "' is not a sharded checkpoint: its ", kMetadataFile,
              " is missing (the directory does not exist, or no save finished there)");
  Value meta;
  try {
    meta = ember::load(path);
  } catch (const std::exception& e) {
    EMBER_ERROR("[", op, "] cannot read the checkpoint metadata '", path, "': ", e.what());
  }
  EMBER_CHECK(meta.is_dict() && meta.contains("format") && meta.at("format").is_string() &&
                  meta.at("format").to_string() == kFormat,
              "[", op, "] '", path, "' is not the metadata of an ember sharded checkpoint");
  EMBER_CHECK(meta.at("version").to_int() <= 1, "[", op, "] '", path, "' was written by a newer ember (version ",
              meta.at("version").to_int(), "); this build reads version 1");
  id_ = meta.at("id").to_string();
  world_size_ = static_cast<int>(meta.at("world_size").to_int());
  files_ = to_strings(meta.at("files"));
  loaded_.resize(files_.size());
  is_loaded_.assign(files_.size(), false);
  for (const auto& item : meta.at("tensors").to_dict()) {
    auto e = std::make_shared<Entry>();
    e->shape = item.value().at("shape").to_int_list();
    const auto dt = serialize_format::dtype_from_code(item.value().at("dtype").to_string());
    EMBER_CHECK(dt.has_value(), "[", op, "] '", path, "' gives tensor '", item.key(), "' an unknown dtype '",
                item.value().at("dtype").to_string(), "'");
    e->dtype = *dt;
    for (const Value& p : item.value().at("pieces").to_list()) {
      const auto v = p.to_int_list();
      EMBER_CHECK(v.size() == 3 && v[0] >= 0 && static_cast<size_t>(v[0]) < files_.size(), "[", op, "] '", path,
                  "' lists a bad piece for tensor '", item.key(), "'");
      e->pieces.push_back({v[0], v[1], v[2]});
    }
    entries_.insert(item.key(), std::move(e));
  }
  replicated_ = meta.at("replicated");
}

ShardedCheckpointReader::~ShardedCheckpointReader() = default;

std::vector<std::string> ShardedCheckpointReader::names() const {
  std::vector<std::string> out;
  for (const auto& item : entries_) out.push_back(item.key());
  return out;
}

bool ShardedCheckpointReader::contains(const std::string& name) const { return entries_.contains(name); }

const ShardedCheckpointReader::Entry& ShardedCheckpointReader::entry(const std::string& name) const {
  const auto* e = entries_.find(name);
  EMBER_CHECK(e != nullptr, "[load_sharded] the checkpoint in '", dir_, "' has no tensor '", name, "'");
  return **e;
}

std::vector<int64_t> ShardedCheckpointReader::shape(const std::string& name) const { return entry(name).shape; }
DType ShardedCheckpointReader::dtype(const std::string& name) const { return entry(name).dtype; }

const Value& ShardedCheckpointReader::file(size_t index) {
  if (is_loaded_[index]) return loaded_[index];
  const std::string path = (fs::path(dir_) / files_[index]).string();
  Value v;
  try {
    v = ember::load(path);
  } catch (const std::exception& e) {
    EMBER_ERROR("[load_sharded] cannot read shard file '", path, "': ", e.what());
  }
  EMBER_CHECK(v.is_dict() && v.contains(kIdKey) && v.at(kIdKey).is_string(), "[load_sharded] shard file '", path,
              "' is not a shard of an ember sharded checkpoint");
  EMBER_CHECK(v.at(kIdKey).to_string() == id_, "[load_sharded] shard file '", path, "' belongs to another save (id ",
              v.at(kIdKey).to_string(), "; the metadata is for id ", id_, ")");
  loaded_[index] = std::move(v);
  is_loaded_[index] = true;
  return loaded_[index];
}

Tensor ShardedCheckpointReader::read(const std::string& name, int64_t begin, int64_t end) {
  const Entry& e = entry(name);
  EMBER_CHECK(0 <= begin && begin <= end && end <= numel_of(e.shape), "[load_sharded] elements ", begin, " to ", end,
              " are outside tensor '", name, "' of shape ", shape_str(e.shape));
  Tensor out = empty({end - begin}, TensorOptions(e.dtype));
  NoGradGuard ng;
  for (const auto& p : e.pieces) {
    const int64_t lo = std::max(begin, p[1]), hi = std::min(end, p[1] + p[2]);
    if (lo >= hi) continue;
    const Value& f = file(static_cast<size_t>(p[0]));
    const std::string path = (fs::path(dir_) / files_[static_cast<size_t>(p[0])]).string();
    EMBER_CHECK(f.contains(name) && f.at(name).is_tensor(), "[load_sharded] shard file '", path, "' lacks tensor '",
                name, "' that the metadata places there; the checkpoint is damaged");
    const Tensor& t = f.at(name).to_tensor();
    EMBER_CHECK(t.numel() == p[2] && t.dtype() == e.dtype, "[load_sharded] shard file '", path, "' holds ", t.numel(),
                " elements of tensor '", name, "' where the metadata says ", p[2], "; the checkpoint is damaged");
    out.narrow(0, lo - begin, hi - lo).copy_(t.reshape({-1}).narrow(0, lo - p[1], hi - lo));
  }
  return out;
}

Tensor ShardedCheckpointReader::read_full(const std::string& name) {
  const Entry& e = entry(name);
  return read(name, 0, numel_of(e.shape)).view(e.shape);
}

// ---------------------------------------------------------------- model and optimizer adapters

namespace {

Value group_options(const optim::OptimizerParamGroup& g) {
  Value gv = Value::dict();
  g.options().to_value(gv);
  for (const auto& item : g.extras()) gv[item.key()] = item.value();
  return gv;
}

// Checks the checkpoint's "model." tensors against the model's keys and shapes.
void check_model_keys(ShardedCheckpointReader& r, const std::vector<std::pair<std::string, std::vector<int64_t>>>& want,
                      const char* op) {
  std::vector<std::string> missing, unexpected, mismatched;
  std::unordered_set<std::string> wanted;
  for (const auto& [key, shape] : want) {
    wanted.insert(key);
    if (!r.contains("model." + key)) {
      missing.push_back(key);
    } else if (r.shape("model." + key) != shape) {
      mismatched.push_back(key + ": " + shape_str(r.shape("model." + key)) + " vs " + shape_str(shape));
    }
  }
  for (const auto& name : r.names())
    if (name.rfind("model.", 0) == 0 && !wanted.count(name.substr(6))) unexpected.push_back(name.substr(6));
  if (missing.empty() && unexpected.empty() && mismatched.empty()) return;
  std::ostringstream os;
  os << "[" << op << "] the checkpoint in '" << r.dir() << "' does not match the model:";
  if (!missing.empty()) os << " missing keys " << quoted_list(missing) << ";";
  if (!unexpected.empty()) os << " unexpected keys " << quoted_list(unexpected) << ";";
  if (!mismatched.empty()) os << " shapes differ (checkpoint vs model) " << quoted_list(mismatched) << ";";
  os << " load a checkpoint of the same model";
  throw Error(os.str());
}

// The state keys saved for parameter `name` ("exp_avg", ...; step excluded), in order.
std::vector<std::string> state_keys(ShardedCheckpointReader& r, const std::string& name) {
  std::vector<std::string> keys;
  const std::string prefix = "optim." + name + ".";
  for (const auto& n : r.names())
    if (n.rfind(prefix, 0) == 0 && n.size() > prefix.size() && n.substr(prefix.size()) != "step" &&
        n.find('.', prefix.size()) == std::string::npos)
      keys.push_back(n.substr(prefix.size()));
  return keys;
}

const Value& saved_groups(ShardedCheckpointReader& r, const char* op) {
  const Value& rep = r.replicated();
  EMBER_CHECK(rep.is_dict() && rep.contains("optim"), "[", op, "] the checkpoint in '", r.dir(),
              "' holds no optimizer state; load it without an optimizer");
  return rep.at("optim").at("param_groups");
}

void add_step(ShardedState& st, const std::string& name, const optim::ParamState& s, bool holder) {
  ShardedTensor t;
  t.shape = {};
  t.dtype = kFloat32;
  if (holder) t.local = ember::tensor(std::vector<float>{static_cast<float>(s.step)});
  st.tensors.insert("optim." + name + ".step", std::move(t));
}

}  // namespace

void save_sharded(const std::string& dir, nn::parallel::FullyShardedDataParallelImpl& model,
                  const optim::Optimizer* optimizer) {
  constexpr const char* op = "save_sharded";
  const int rank = model.process_group()->rank();
  ShardedState st;
  NoGradGuard ng;
  const auto pieces = model.local_pieces();
  std::unordered_set<std::string> param_names;
  for (const auto& p : pieces) {
    param_names.insert(p.name);
    ShardedTensor t;
    t.shape = p.shape;
    t.dtype = model.shard(p.unit).dtype();
    t.begin = p.begin;
    if (p.end > p.begin) t.local = model.shard(p.unit).detach().narrow(0, p.shard_offset, p.end - p.begin);
    st.tensors.insert("model." + p.name, std::move(t));
  }
  const auto module_state = model.module()->state_dict();
  for (const auto& key : model.original_state_keys()) {
    if (param_names.count(key)) continue;
    const Tensor& b = module_state[key];
    ShardedTensor t;
    t.shape = std::vector<int64_t>(b.sizes().begin(), b.sizes().end());
    t.dtype = model.original_buffer_dtype(key, b.dtype());  // not MixedPrecision's buffer_dtype
    if (rank == 0) t.local = b.reshape({-1}).to(t.dtype);
    st.tensors.insert("model." + key, std::move(t));
  }
  st.replicated["model_keys"] = string_list(model.original_state_keys());
  if (optimizer) {
    const auto unit_names = model.unit_parameter_names();
    std::unordered_map<const TensorImpl*, size_t> unit_of;
    for (size_t k = 0; k < unit_names.size(); ++k) unit_of[model.shard(k).impl()] = k;
    Value groups = Value::list();
    for (const auto& g : optimizer->param_groups()) {
      Value gv = group_options(g);
      std::vector<std::string> names;
      for (const Tensor& p : g.params()) {
        auto it = unit_of.find(p.impl());
        EMBER_CHECK(it != unit_of.end(), "[", op, "] the optimizer holds a tensor (sizes ", p.sizes(),
                    ") that is not one of the model's shards; build the optimizer on fsdp->parameters()");
        const size_t k = it->second;
        names.insert(names.end(), unit_names[k].begin(), unit_names[k].end());
        const optim::ParamState* s = optimizer->find_state(p);
        if (!s) continue;
        for (const auto& piece : pieces) {
          if (piece.unit != k) continue;
          for (const auto& item : s->tensors) {
            if (!item.value().defined()) continue;
            EMBER_CHECK(item.value().numel() == p.numel(), "[", op, "] optimizer state '", item.key(), "' has ",
                        item.value().numel(), " elements, not the shard's ", p.numel(),
                        ": only state shaped like the parameter can be sharded");
            ShardedTensor t;
            t.shape = piece.shape;
            t.dtype = item.value().dtype();
            t.begin = piece.begin;
            if (piece.end > piece.begin)
              t.local = item.value().reshape({-1}).narrow(0, piece.shard_offset, piece.end - piece.begin);
            st.tensors.insert("optim." + piece.name + "." + item.key(), std::move(t));
          }
          if (s->has_step) add_step(st, piece.name, *s, rank == 0);
        }
      }
      gv["params"] = string_list(names);
      groups.push_back(std::move(gv));
    }
    Value o = Value::dict();
    o["param_groups"] = std::move(groups);
    st.replicated["optim"] = std::move(o);
  }
  save_sharded_state(st, dir, model.process_group());
}

void load_sharded(const std::string& dir, nn::parallel::FullyShardedDataParallelImpl& model,
                  optim::Optimizer* optimizer) {
  constexpr const char* op = "load_sharded";
  ShardedCheckpointReader r(dir);
  const auto pieces = model.local_pieces();
  std::unordered_map<std::string, std::vector<int64_t>> param_shape;
  for (const auto& p : pieces) param_shape[p.name] = p.shape;
  auto module_state = model.module()->state_dict();
  std::vector<std::pair<std::string, std::vector<int64_t>>> want;
  for (const auto& key : model.original_state_keys()) {
    auto it = param_shape.find(key);
    if (it != param_shape.end()) {
      want.emplace_back(key, it->second);
    } else {
      const Tensor& b = module_state[key];
      want.emplace_back(key, std::vector<int64_t>(b.sizes().begin(), b.sizes().end()));
    }
  }
  check_model_keys(r, want, op);

  // Read everything first, so that a damaged file leaves the model untouched.
  std::vector<Tensor> values;
  for (const auto& p : pieces) values.push_back(p.end > p.begin ? r.read("model." + p.name, p.begin, p.end) : Tensor());
  std::vector<std::pair<Tensor, Tensor>> buffers;
  for (const auto& key : model.original_state_keys())
    if (!param_shape.count(key)) buffers.emplace_back(module_state[key], r.read_full("model." + key));

  Value local_sd;
  if (optimizer) {
    const Value& groups = saved_groups(r, op);
    const auto unit_names = model.unit_parameter_names();
    std::unordered_map<const TensorImpl*, size_t> unit_of;
    for (size_t k = 0; k < unit_names.size(); ++k) unit_of[model.shard(k).impl()] = k;
    const auto& opt_groups = optimizer->param_groups();
    EMBER_CHECK(groups.size() == opt_groups.size(), "[", op, "] the checkpoint's optimizer has ", groups.size(),
                " parameter groups, this one has ", opt_groups.size());
    Value state = Value::dict();
    Value new_groups = Value::list();
    int64_t index = 0;
    for (size_t g = 0; g < opt_groups.size(); ++g) {
      std::vector<std::string> names;
      std::vector<int64_t> ids;
      for (const Tensor& p : opt_groups[g].params()) {
        auto it = unit_of.find(p.impl());
        EMBER_CHECK(it != unit_of.end(), "[", op, "] the optimizer holds a tensor (sizes ", p.sizes(),
                    ") that is not one of the model's shards; build the optimizer on fsdp->parameters()");
        const size_t k = it->second;
        names.insert(names.end(), unit_names[k].begin(), unit_names[k].end());
        const auto keys = state_keys(r, unit_names[k][0]);
        if (!keys.empty()) {
          Value sv = Value::dict();
          const std::string step = "optim." + unit_names[k][0] + ".step";
          if (r.contains(step)) sv["step"] = r.read_full(step);
          for (const auto& key : keys) {
            Tensor t = zeros({p.numel()}, TensorOptions(r.dtype("optim." + unit_names[k][0] + "." + key)));
            for (const auto& piece : pieces) {
              if (piece.unit != k || piece.end == piece.begin) continue;
              t.narrow(0, piece.shard_offset, piece.end - piece.begin)
                  .copy_(r.read("optim." + piece.name + "." + key, piece.begin, piece.end));
            }
            sv[key] = std::move(t);
          }
          state[std::to_string(index)] = std::move(sv);
        }
        ids.push_back(index++);
      }
      const Value& saved = groups.to_list()[g];
      EMBER_CHECK(to_strings(saved.at("params")) == names, "[", op, "] parameter group ", g,
                  " of the checkpoint's optimizer holds other parameters than this one's (",
                  quoted_list(to_strings(saved.at("params")), 4), " vs ", quoted_list(names, 4),
                  "); build the optimizer as it was when saved");
      Value gv = saved;
      gv["params"] = Value(ids);
      new_groups.push_back(std::move(gv));
    }
    local_sd = Value::dict();
    local_sd["state"] = std::move(state);
    local_sd["param_groups"] = std::move(new_groups);
  }

  NoGradGuard ng;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto& p = pieces[i];
    if (p.end > p.begin) model.shard(p.unit).detach().narrow(0, p.shard_offset, p.end - p.begin).copy_(values[i]);
  }
  for (auto& [dst, src] : buffers) Tensor(dst).copy_(src.view(dst.sizes()));
  if (optimizer) optimizer->load_state_dict(local_sd);
}

void save_sharded(const std::string& dir, const nn::Module& model, ZeroRedundancyOptimizer& optimizer) {
  constexpr const char* op = "save_sharded";
  const int rank = optimizer.process_group()->rank();
  ShardedState st;
  NoGradGuard ng;
  std::unordered_map<const TensorImpl*, std::string> name_of;
  std::unordered_map<const TensorImpl*, int> owner;
  for (const auto& g : optimizer.param_groups())
    for (const Tensor& p : g.params()) owner[p.impl()] = optimizer.owner(p);
  std::vector<std::string> keys;
  for (const auto& item : model.named_parameters()) name_of[item.value().impl()] = item.key();
  for (const auto& item : model.state_dict()) {
    keys.push_back(item.key());
    const Tensor& v = item.value();
    auto it = owner.find(v.impl());
    const int holder = it == owner.end() ? 0 : it->second;
    ShardedTensor t;
    t.shape = std::vector<int64_t>(v.sizes().begin(), v.sizes().end());
    t.dtype = v.dtype();
    if (rank == holder) t.local = v.detach().reshape({-1});
    st.tensors.insert("model." + item.key(), std::move(t));
  }
  st.replicated["model_keys"] = string_list(keys);
  Value groups = Value::list();
  for (const auto& g : optimizer.param_groups()) {
    Value gv = group_options(g);
    std::vector<std::string> names;
    for (const Tensor& p : g.params()) {
      auto it = name_of.find(p.impl());
      EMBER_CHECK(it != name_of.end(), "[", op, "] the optimizer holds a tensor (sizes ", p.sizes(),
                  ") that is not a parameter of the model; pass the model the optimizer was built on");
      names.push_back(it->second);
    }
    gv["params"] = string_list(names);
    groups.push_back(std::move(gv));
  }
  const optim::Optimizer& local = optimizer.optim();
  for (const Tensor& p : local.parameters()) {
    const optim::ParamState* s = local.find_state(p);
    if (!s) continue;
    const std::string& name = name_of.at(p.impl());
    for (const auto& item : s->tensors) {
      if (!item.value().defined()) continue;
      ShardedTensor t;
      t.shape = std::vector<int64_t>(item.value().sizes().begin(), item.value().sizes().end());
      t.dtype = item.value().dtype();
      t.local = item.value().reshape({-1});
      st.tensors.insert("optim." + name + "." + item.key(), std::move(t));
    }
    if (s->has_step) add_step(st, name, *s, true);
  }
  Value o = Value::dict();
  o["param_groups"] = std::move(groups);
  st.replicated["optim"] = std::move(o);
  save_sharded_state(st, dir, optimizer.process_group());
}

void load_sharded(const std::string& dir, nn::Module& model, ZeroRedundancyOptimizer& optimizer) {
  constexpr const char* op = "load_sharded";
  ShardedCheckpointReader r(dir);
  auto current = model.state_dict();
  std::vector<std::pair<std::string, std::vector<int64_t>>> want;
  for (const auto& item : current)
    want.emplace_back(item.key(), std::vector<int64_t>(item.value().sizes().begin(), item.value().sizes().end()));
  check_model_keys(r, want, op);
  OrderedDict<std::string, Tensor> values;
  for (const auto& item : current) values.insert(item.key(), r.read_full("model." + item.key()));

  std::unordered_map<const TensorImpl*, std::string> name_of;
  for (const auto& item : model.named_parameters()) name_of[item.value().impl()] = item.key();
  const Value& groups = saved_groups(r, op);
  const auto& opt_groups = optimizer.param_groups();
  EMBER_CHECK(groups.size() == opt_groups.size(), "[", op, "] the checkpoint's optimizer has ", groups.size(),
              " parameter groups, this one has ", opt_groups.size());
  const int rank = optimizer.process_group()->rank();
  Value state = Value::dict();
  Value new_groups = Value::list();
  int64_t index = 0;
  for (size_t g = 0; g < opt_groups.size(); ++g) {
    std::vector<std::string> names;
    std::vector<int64_t> ids;
    for (const Tensor& p : opt_groups[g].params()) {
      auto it = name_of.find(p.impl());
      EMBER_CHECK(it != name_of.end(), "[", op, "] the optimizer holds a tensor (sizes ", p.sizes(),
                  ") that is not a parameter of the model; pass the model the optimizer was built on");
      names.push_back(it->second);
      if (optimizer.owner(p) == rank) {
        const auto keys = state_keys(r, it->second);
        const std::string step = "optim." + it->second + ".step";
        if (!keys.empty() || r.contains(step)) {
          Value sv = Value::dict();
          if (r.contains(step)) sv["step"] = r.read_full(step);
          for (const auto& key : keys) sv[key] = r.read_full("optim." + it->second + "." + key);
          state[std::to_string(index)] = std::move(sv);
        }
      }
      ids.push_back(index++);
    }
    const Value& saved = groups.to_list()[g];
    EMBER_CHECK(to_strings(saved.at("params")) == names, "[", op, "] parameter group ", g,
                " of the checkpoint's optimizer holds other parameters than this one's (",
                quoted_list(to_strings(saved.at("params")), 4), " vs ", quoted_list(names, 4),
                "); build the optimizer as it was when saved");
    Value gv = saved;
    gv["params"] = Value(ids);
    new_groups.push_back(std::move(gv));
  }
  Value sd = Value::dict();
  sd["state"] = std::move(state);
  sd["param_groups"] = std::move(new_groups);
  model.load_state_dict(values);
  optimizer.load_state_dict(sd);
}

FullCheckpoint load_full_checkpoint(const std::string& dir) {
  ShardedCheckpointReader r(dir);
  FullCheckpoint out;
  const Value& rep = r.replicated();
  EMBER_CHECK(rep.is_dict() && rep.contains("model_keys"), "[load_full_checkpoint] the checkpoint in '", dir,
              "' lists no model keys");
  for (const auto& key : to_strings(rep.at("model_keys"))) out.model.insert(key, r.read_full("model." + key));
  if (!rep.contains("optim")) return out;
  Value state = Value::dict();
  Value groups = Value::list();
  int64_t index = 0;
  for (const Value& saved : rep.at("optim").at("param_groups").to_list()) {
    std::vector<int64_t> ids;
    for (const auto& name : to_strings(saved.at("params"))) {
      const auto keys = state_keys(r, name);
      const std::string step = "optim." + name + ".step";
      if (!keys.empty() || r.contains(step)) {
        Value sv = Value::dict();
        if (r.contains(step)) sv["step"] = r.read_full(step);
        for (const auto& key : keys) sv[key] = r.read_full("optim." + name + "." + key);
        state[std::to_string(index)] = std::move(sv);
      }
      ids.push_back(index++);
    }
    Value gv = saved;
    gv["params"] = Value(ids);
    groups.push_back(std::move(gv));
  }
  out.optimizer = Value::dict();
  out.optimizer["state"] = std::move(state);
  out.optimizer["param_groups"] = std::move(groups);
  return out;
}

}  // namespace ember::distributed
