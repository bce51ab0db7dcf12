#include "ember/guards/guards.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <thread>

#include "ember/core/op_scope.h"
#include "ember/core/warning.h"
#include "ember/guards/quiet.h"

namespace ember::guards {

namespace detail {
std::atomic<uint32_t> g_enabled_mask{kDefaultGuards};
}  // namespace detail

namespace {

constexpr uint32_t kSlots = 64;  // steps told apart by the retention guard

struct SavedSlot {
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> step{-1};
  std::atomic<const char*> op{nullptr};
};

std::atomic<int64_t> g_steps{0};
std::array<SavedSlot, kSlots> g_slots;
std::atomic<int64_t> g_retention_last{0};
std::atomic<int> g_retention_streak{0};
std::array<std::atomic<bool>, kNumGuards> g_warned{};
// The optimizer step at which backward() last saw a non-finite loss (-1: never).
std::atomic<int64_t> g_nonfinite_loss_step{-1};

// The nonfinite origin is written once per run, in anomaly mode only.
std::mutex g_origin_mu;
std::string g_origin;
std::atomic<bool> g_origin_known{false};

Settings g_settings;
[[gnu::tls_model("initial-exec")]] constinit thread_local bool tl_eval_mode_quiet = false;

bool first_warning(Guard g) { return !g_warned[static_cast<int>(g)].exchange(true); }

std::string disable_line(Guard g) {
  std::string s = "(disable: ember::guards::set_enabled(ember::guards::Guard::";
  s += guard_name(g);
  s += ", false))";
  return s;
}

std::string megabytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

}  // namespace

const char* guard_name(Guard g) {
  switch (g) {
    case Guard::GradAccumulation:
      return "GradAccumulation";
    case Guard::EvalMode:
      return "EvalMode";
    case Guard::GraphRetention:
      return "GraphRetention";
    case Guard::NonFiniteLoss:
      return "NonFiniteLoss";
    case Guard::DataLoaderWait:
      return "DataLoaderWait";
    case Guard::NonFiniteGrad:
      return "NonFiniteGrad";
  }
  return "?";
}

void set_enabled(Guard g, bool enabled) {
  const uint32_t bit = 1u << static_cast<int>(g);
  if (enabled) {
    detail::g_enabled_mask.fetch_or(bit, std::memory_order_relaxed);
  } else {
    detail::g_enabled_mask.fetch_and(~bit, std::memory_order_relaxed);
  }
}

void set_all_enabled(bool enabled) {
  detail::g_enabled_mask.store(enabled ? (1u << kNumGuards) - 1 : 0u, std::memory_order_relaxed);
}

void reset() {
  for (auto& w : g_warned) w.store(false);
  g_steps.store(0);
  g_retention_last.store(0);
  g_retention_streak.store(0);
  g_nonfinite_loss_step.store(-1);
  std::lock_guard<std::mutex> lk(g_origin_mu);
  g_origin.clear();
  g_origin_known.store(false);
}

Settings& settings() { return g_settings; }

int64_t optimizer_steps() { return g_steps.load(std::memory_order_relaxed); }

SavedTensorStats saved_tensor_stats() {
  SavedTensorStats s;
  for (const SavedSlot& slot : g_slots) {
    const int64_t b = slot.bytes.load(std::memory_order_relaxed);
    if (b <= 0) continue;
    s.bytes += b;
    ++s.live_graphs;
    const int64_t step = slot.step.load(std::memory_order_relaxed);
    if (s.oldest_step < 0 || step < s.oldest_step) {
      s.oldest_step = step;
      s.oldest_op = slot.op.load(std::memory_order_relaxed);
    }
  }
  return s;
}

namespace detail {

SavedBytes::SavedBytes(int64_t nbytes) {
  if (nbytes <= 0 || !is_enabled(Guard::GraphRetention)) return;
  const int64_t step = g_steps.load(std::memory_order_relaxed);
  slot_ = static_cast<uint32_t>(step) % kSlots;
  SavedSlot& slot = g_slots[slot_];
  slot.bytes.fetch_add(nbytes, std::memory_order_relaxed);
  if (slot.step.load(std::memory_order_relaxed) != step) {
    slot.step.store(step, std::memory_order_relaxed);
    slot.op.store(OpScope::outermost(), std::memory_order_relaxed);
  }
  nbytes_ = nbytes;
}

SavedBytes& SavedBytes::operator=(const SavedBytes& o) {
  if (this != &o) {
    release();
    SavedBytes copy(o);
    *this = std::move(copy);
  }
  return *this;
}

SavedBytes& SavedBytes::operator=(SavedBytes&& o) noexcept {
  if (this != &o) {
    release();
    nbytes_ = o.nbytes_;
    slot_ = o.slot_;
    o.nbytes_ = 0;
  }
  return *this;
}

void SavedBytes::release_slow() {
  g_slots[slot_].bytes.fetch_sub(nbytes_, std::memory_order_relaxed);
  nbytes_ = 0;
}

void on_optimizer_step(const char* optimizer) {
  g_steps.fetch_add(1, std::memory_order_relaxed);
  if (!is_enabled(Guard::GraphRetention)) return;
  const SavedTensorStats s = saved_tensor_stats();
  const int64_t last = g_retention_last.exchange(s.bytes, std::memory_order_relaxed);
  const bool growing = s.bytes > last && s.bytes >= g_settings.graph_retention_min_bytes;
  const int streak = growing ? g_retention_streak.fetch_add(1, std::memory_order_relaxed) + 1 : 0;
  if (!growing) g_retention_streak.store(0, std::memory_order_relaxed);
  if (streak < g_settings.graph_retention_steps || !first_warning(Guard::GraphRetention)) return;
  std::string msg = "[";
  msg += optimizer;
  msg += ".step] tensors saved for backward grew for ";
  msg += std::to_string(streak);
  msg += " consecutive optimizer steps, to ";
  msg += megabytes(s.bytes);
  msg += " held by ";
  msg += std::to_string(s.live_graphs);
  msg += " live graphs; the oldest was created at step ";
  msg += std::to_string(s.oldest_step);
  msg += " by '";
  msg += s.oldest_op ? s.oldest_op : "?";
  msg +=
      "'. Something keeps autograd graphs alive after backward: a loss or output stored with its graph "
      "(store loss.item<double>() or loss.detach()), or a forward pass run with grad enabled whose "
      "backward never runs (run it under ember::NoGradGuard) ";
  msg += disable_line(Guard::GraphRetention);
  warn(msg);
}

void check_loss(double value) {
  if (std::isfinite(value)) return;
  g_nonfinite_loss_step.store(optimizer_steps(), std::memory_order_relaxed);
  if (!is_enabled(Guard::NonFiniteLoss) || !first_warning(Guard::NonFiniteLoss)) return;
  std::string msg = "[backward] the loss is ";
  msg += std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
  msg += " at step ";
  msg += std::to_string(optimizer_steps());
  msg +=
      " (optimizer steps taken so far; the first non-finite loss of this run). Its gradients are not "
      "finite either, and step() would write them into the parameters. ";
  if (g_origin_known.load()) {
    std::lock_guard<std::mutex> lk(g_origin_mu);
    msg += "Anomaly mode saw the first non-finite forward value come from ";
    msg += g_origin;
    msg += ". ";
  } else {
    msg +=
        "Run with ember::autograd::DetectAnomalyGuard to name the forward op that produced it; check the "
        "learning rate, log/div/sqrt of values that reach 0, and the input data ";
  }
  msg += disable_line(Guard::NonFiniteLoss);
  warn(msg);
}

void nonfinite_grad_warning(const char* optimizer, int64_t index, const std::string& sizes, int64_t count,
                            bool has_nan) {
  const int64_t step = optimizer_steps();
  if (g_nonfinite_loss_step.load(std::memory_order_relaxed) == step || !first_warning(Guard::NonFiniteGrad)) return;
  std::string msg = "[";
  msg += optimizer;
  msg += ".step] the gradient of parameter ";
  msg += std::to_string(index);
  msg += " (sizes ";
  msg += sizes;
  msg += ") has ";
  msg += std::to_string(count);
  msg += has_nan ? " NaN/inf values" : " inf values";
  msg += " at step ";
  msg += std::to_string(step);
  msg +=
      " (optimizer steps taken so far; the first non-finite gradient of this run), from a finite loss: "
      "step() writes them into the parameters, which stay NaN from then on. Backward produced them "
      "(sqrt/pow/div/log at 0, an overflow); ember::autograd::DetectAnomalyGuard names the backward node "
      "that did. Check the learning rate and the data, clip the gradients, and with float16 use "
      "amp::GradScaler, which skips such steps ";
  msg += disable_line(Guard::NonFiniteGrad);
  warn(msg);
}

bool nonfinite_origin_known() { return g_origin_known.load(std::memory_order_relaxed); }

void record_nonfinite_origin(std::string what) {
  std::lock_guard<std::mutex> lk(g_origin_mu);
  if (g_origin_known.load()) return;
  g_origin = std::move(what);
  g_origin += " at step ";
  g_origin += std::to_string(optimizer_steps());
  g_origin_known.store(true);
}

EvalModeQuiet::EvalModeQuiet() : prev_(tl_eval_mode_quiet) { tl_eval_mode_quiet = true; }
EvalModeQuiet::~EvalModeQuiet() { tl_eval_mode_quiet = prev_; }

void eval_mode_warning(const char* module) {
  if (tl_eval_mode_quiet || !first_warning(Guard::EvalMode)) return;
  std::string msg = "[";
  msg += module;
  msg +=
      "] called in training mode under NoGradGuard/InferenceMode: evaluation without model.eval()? In "
      "training mode Dropout zeroes activations at random and BatchNorm normalizes with the batch's own "
      "statistics (and updates its running averages), so the results are not the model's. Call "
      "model->eval() before evaluating and model->train() after, or use ember::nn::evaluate(model, loader, "
      "fn) ";
  msg += disable_line(Guard::EvalMode);
  warn(msg);
}

void dataloader_wait_report(double waited_s, double total_s, int64_t batches, int num_workers) {
  if (total_s <= 0 || waited_s < g_settings.dataloader_wait_fraction * total_s) return;
  if (!is_enabled(Guard::DataLoaderWait) || !first_warning(Guard::DataLoaderWait)) return;
  // Loading one batch takes about (num_workers or 1) x the wait per batch plus the compute time it
  // overlaps with; enough workers make loading as fast as computing.
  const double compute = std::max(total_s - waited_s, 1e-9);
  const double load = num_workers == 0 ? waited_s : num_workers * total_s;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const int suggested = static_cast<int>(
      std::min<double>(std::max<double>(std::ceil(load / compute), num_workers + 1), static_cast<double>(cores)));
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%.0f%% of the time (%.2f s of %.2f s over %lld batches)", 100.0 * waited_s / total_s,
                waited_s, total_s, static_cast<long long>(batches));
  std::string msg = "[DataLoader] the training loop waited for batches ";
  msg += buf;
  msg += " with num_workers=";
  msg += std::to_string(num_workers);
  if (suggested > num_workers) {
    msg += "; try DataLoaderOptions().num_workers(";
    msg += std::to_string(suggested);
    msg += ")";
  } else {
    msg += "; all cores already load data: make loading cheaper (pre-decode, cache, smaller transforms)";
  }
  msg += ", or see where the time goes with ember::profiler ";
  msg += disable_line(Guard::DataLoaderWait);
  warn(msg);
}

}  // namespace detail

}  // namespace ember::guards
