#pragma once
// Sharded checkpoints: every rank writes only what it holds, and a checkpoint saved with N
// ranks loads with M ranks or into a single process (docs/distributed.md).
//
//   dist::save_sharded("ckpt", *fsdp, &opt);        // on every rank (a collective)
//   dist::load_sharded("ckpt", *fsdp, &opt);        // any world size
//   auto full = dist::load_full_checkpoint("ckpt");  // one process: model->load_state_dict(full.model)
//
// Note [Sharded checkpoint layout]: a checkpoint is a directory holding one file per rank,
// "shard-<id>-<rank>-of-<world>.safetensors", and "metadata.safetensors". A tensor is
// saved in pieces: each rank writes the contiguous elements [begin, begin + n) of the
// tensor's row-major flattening it holds, as a 1-D tensor under the tensor's name; the
// metadata lists, for every tensor, its shape, dtype and pieces (file, begin, n), plus
// values every rank shares (optimizer options, key order). Files are written with
// ember::save (atomic, checksummed). <id> is new for every save and the metadata is
// written last, after every rank's file is complete, then the files of earlier saves are
// removed: a crash at any point leaves the previous checkpoint whole. Loading reads only
// the pieces that overlap what the loading rank holds; a missing, truncated or corrupt
// file is an ember::Error naming it.
//
// Names: model parameters and buffers are "model.<state_dict key>", optimizer state is
// "optim.<parameter name>.<state key>" (step included, as a scalar tensor), so the full
// model and a plain optimizer state dict can be rebuilt without any of the ranks.

#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/ordered_dict.h"
#include "ember/core/tensor.h"
#include "ember/distributed/process_group.h"
#include "ember/serialize/value.h"

namespace ember::nn {
class Module;
namespace parallel {
class FullyShardedDataParallelImpl;
}
}  // namespace ember::nn
namespace ember::optim {
class Optimizer;
}

namespace ember::distributed {

class ZeroRedundancyOptimizer;

// A tensor of which this rank holds elements [begin, begin + local.numel()) of the
// row-major flattening (local: 1-D; undefined or empty when it holds none).
struct ShardedTensor {
  std::vector<int64_t> shape;
  DType dtype = kFloat32;
  int64_t begin = 0;
  Tensor local;
};

struct ShardedState {
  OrderedDict<std::string, ShardedTensor> tensors;
  // Values every rank has (rank 0's are saved).
  Value replicated = Value::dict();
};

// Writes a sharded checkpoint into dir (created if needed). A collective over group: every
// rank calls it with its pieces; the pieces of each tensor must cover it exactly once.
void save_sharded_state(const ShardedState& state, const std::string& dir, const ProcessGroupPtr& group = nullptr);

// Reads a sharded checkpoint written with any number of ranks; no communication.
class ShardedCheckpointReader {
 public:
  explicit ShardedCheckpointReader(std::string dir);
  ~ShardedCheckpointReader();
  ShardedCheckpointReader(const ShardedCheckpointReader&) = delete;
  ShardedCheckpointReader& operator=(const ShardedCheckpointReader&) = delete;

  const std::string& dir() const { return dir_; }
  int world_size() const { return world_size_; }
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const;
  std::vector<int64_t> shape(const std::string& name) const;
  DType dtype(const std::string& name) const;
  const Value& replicated() const { return replicated_; }
  // Elements [begin, end) of the tensor's flattening, as a 1-D tensor.
  Tensor read(const std::string& name, int64_t begin, int64_t end);
  // The whole tensor, shaped.
  Tensor read_full(const std::string& name);

 private:
  struct Entry;
  const Entry& entry(const std::string& name) const;
  const Value& file(size_t index);

  std::string dir_;
  std::string id_;
  int world_size_ = 0;
  std::vector<std::string> files_;
  std::vector<Value> loaded_;
  std::vector<bool> is_loaded_;
  OrderedDict<std::string, std::shared_ptr<Entry>> entries_;
  Value replicated_;
};

// FSDP: each rank writes its shards of the parameters (and of the optimizer's state for
// them, when given); load_sharded works with any world size and the same model.
void save_sharded(const std::string& dir, nn::parallel::FullyShardedDataParallelImpl& model,
                  const optim::Optimizer* optimizer = nullptr);
void load_sharded(const std::string& dir, nn::parallel::FullyShardedDataParallelImpl& model,
                  optim::Optimizer* optimizer = nullptr);

// ZeRO-1: the model is replicated; each parameter and its optimizer state are written by
// the rank that owns it in the optimizer's partition.
void save_sharded(const std::string& dir, const nn::Module& model, ZeroRedundancyOptimizer& optimizer);
void load_sharded(const std::string& dir, nn::Module& model, ZeroRedundancyOptimizer& optimizer);

// A sharded checkpoint as one process sees it: the unsharded model's state_dict and, if
// one was saved, the optimizer's state dict in the plain optimizer's layout (parameters
// numbered as a plain optimizer over the same groups numbers them).
struct FullCheckpoint {
  OrderedDict<std::string, Tensor> model;
  Value optimizer;  // None when no optimizer was saved
};
FullCheckpoint load_full_checkpoint(const std::string& dir);

}  // namespace ember::distributed
