#pragma once
// Guards against silent training failures (docs/guards.md). Each guard watches for one
// mistake that trains without an error but wrong or slowly, and warns once through
// ember::warn with the cause and the fix. All but NonFiniteGrad are on by default; one line
// turns one off (or on):
//
//   ember::guards::set_enabled(ember::guards::Guard::EvalMode, false);
//
// Note [Guard cost]: a guard's state is a few counters. The hot paths (saving a tensor
// for backward, accumulating a gradient, a Dropout/BatchNorm call) pay a relaxed atomic
// load of the enabled mask and at most a relaxed atomic add; strings are built only when
// a guard fires.

#include <atomic>
#include <cstdint>
#include <string>

namespace ember::guards {

enum class Guard : uint8_t {
  GradAccumulation,  // optimizer.step() after a number of backward passes other than declared
  EvalMode,          // Dropout/BatchNorm in train mode under NoGradGuard/InferenceMode
  GraphRetention,    // tensors saved for backward growing across optimizer steps
  NonFiniteLoss,     // backward() from a NaN/inf loss
  DataLoaderWait,    // the training loop waiting for batches a large part of the time
  NonFiniteGrad,     // optimizer.step() with NaN/inf gradients (off by default: a pass over them)
};
inline constexpr int kNumGuards = 6;
// The guards on at start: all but NonFiniteGrad.
inline constexpr uint32_t kDefaultGuards = ((1u << kNumGuards) - 1) & ~(1u << static_cast<int>(Guard::NonFiniteGrad));

// The guard's name as written in messages ("GradAccumulation", ...).
const char* guard_name(Guard g);

namespace detail {
extern std::atomic<uint32_t> g_enabled_mask;
}  // namespace detail

inline bool is_enabled(Guard g) {
  return (detail::g_enabled_mask.load(std::memory_order_relaxed) >> static_cast<int>(g)) & 1u;
}
void set_enabled(Guard g, bool enabled);
void set_all_enabled(bool enabled);  // every guard, NonFiniteGrad included
// Re-arms the warn-once guards and clears their counters (tests; a new training run).
void reset();

// Tunables (process-wide). Changing them is not thread-safe against a running loop.
struct Settings {
  int graph_retention_steps = 3;                // consecutive growing steps before warning
  int64_t graph_retention_min_bytes = 1 << 20;  // ... and at least this much held
  double dataloader_wait_fraction = 0.2;        // waited share of the loop time that warns
  int64_t dataloader_min_batches = 20;          // batches measured before judging
};
Settings& settings();

// Optimizer steps taken in this process (every optimizer's step() counts once).
int64_t optimizer_steps();

// Bytes held by tensors saved for backward (parameters excluded), grouped by the optimizer
// step during which they were saved.
struct SavedTensorStats {
  int64_t bytes = 0;                // all saved tensors still held
  int64_t live_graphs = 0;          // distinct steps whose saved tensors are still held
  int64_t oldest_step = -1;         // the earliest such step (-1: none)
  const char* oldest_op = nullptr;  // the op that saved the first tensor in that step
};
SavedTensorStats saved_tensor_stats();

namespace detail {
// A saved tensor's share of the saved-bytes counters; returns them when destroyed or
// released. Copying counts the bytes again (the copy holds the tensor too).
class SavedBytes {
 public:
  SavedBytes() = default;
  explicit SavedBytes(int64_t nbytes);
  SavedBytes(const SavedBytes& o) : SavedBytes(o.nbytes_) {}
  SavedBytes(SavedBytes&& o) noexcept : nbytes_(o.nbytes_), slot_(o.slot_) { o.nbytes_ = 0; }
  SavedBytes& operator=(const SavedBytes& o);
  SavedBytes& operator=(SavedBytes&& o) noexcept;
  ~SavedBytes() { release(); }
  void release() {
    if (nbytes_ != 0) release_slow();
  }

 private:
  void release_slow();
  int64_t nbytes_ = 0;
  uint32_t slot_ = 0;
};

// Hooks called by the library (guards.cpp implements the checks).
void on_optimizer_step(const char* optimizer);  // after every step(): counts, retention check
void check_loss(double value);                  // backward() from a one-element root
// NonFiniteGrad: `optimizer`'s parameter `index` (counted over its groups, sizes `sizes`) has
// `count` NaN/inf gradient values at step(); warns once, unless this step's loss was already
// reported non-finite (its gradients are expected to be).
void nonfinite_grad_warning(const char* optimizer, int64_t index, const std::string& sizes, int64_t count,
                            bool has_nan);
// Anomaly mode: whether the first non-finite forward output is already known, and
// recording it (`what` names the op and its backward node).
bool nonfinite_origin_known();
void record_nonfinite_origin(std::string what);
void eval_mode_warning(const char* module);  // a train-mode Dropout/BatchNorm under no-grad
// An epoch (or its first dataloader_min_batches batches) measured: the consumer waited
// `waited_s` of `total_s` seconds for `batches` batches loaded by `num_workers` workers.
void dataloader_wait_report(double waited_s, double total_s, int64_t batches, int num_workers);
}  // namespace detail

}  // namespace ember::guards
