#pragma once
// GradScaler: dynamic loss scaling for float16 training, with torch.cuda.amp.GradScaler's
// rules. The loss is multiplied by a large scale before backward so small float16
// gradients do not flush to zero; unscale_ divides the gradients back, step() skips the
// optimizer step when any gradient is inf/NaN, and update() halves the scale after such a
// step or doubles it after growth_interval clean steps in a row.
//
//   amp::GradScaler scaler;
//   { amp::AutocastGuard autocast(kFloat16); loss = criterion(model->forward(x), y); }
//   scaler.scale(loss).backward();
//   scaler.unscale_(opt);                       // only if you clip
//   nn::utils::clip_grad_norm_(model->parameters(), 1.0);
//   scaler.step(opt);                           // false: skipped (inf/NaN gradients)
//   scaler.update();

#include <cstdint>
#include <unordered_map>

#include "ember/core/tensor.h"
#include "ember/optim/optimizer.h"
#include "ember/serialize/value.h"

namespace ember::amp {

namespace detail {
// For clip_grad_norm_: if a GradScaler scaled the loss and its gradients are not unscaled
// yet, that scale (first_time says whether this scaler has warned before); otherwise 0.
double scaled_gradients_pending(bool* first_time);
}  // namespace detail

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
};

class GradScaler {
 public:
  explicit GradScaler(const GradScalerOptions& options = {});
  ~GradScaler();
  GradScaler(const GradScaler&) = delete;
  GradScaler& operator=(const GradScaler&) = delete;

  // loss * scale (loss itself when disabled). Marks the gradients of this iteration as
  // scaled until unscale_ or update(), so clip_grad_norm_ can warn.
  Tensor scale(const Tensor& loss);
  // Divides the gradients of optimizer's parameters by the scale in place and records
  // whether any is inf/NaN. At most once per optimizer between update()s; refused after
  // step(). Float16 gradients are refused (keep the parameters in float32).
  void unscale_(optim::Optimizer& optimizer);
  // Unscales if unscale_ was not called, then steps the optimizer unless a gradient was
  // inf/NaN. Returns whether the optimizer stepped. Once per optimizer between update()s.
  bool step(optim::Optimizer& optimizer);
  // Updates the scale from the inf/NaN checks of the steps since the last update: times
  // backoff_factor after a skipped step, times growth_factor after growth_interval clean
  // steps in a row. Then forgets the per-optimizer state for the next iteration.
  void update();
  // Sets the scale directly (the growth counter is kept, as torch's update(new_scale)).
  void update(double new_scale);

  double get_scale() const;  // 1.0 when disabled
  double get_growth_factor() const { return options_.growth_factor; }
  double get_backoff_factor() const { return options_.backoff_factor; }
  int64_t get_growth_interval() const { return options_.growth_interval; }
  int64_t growth_tracker() const { return growth_tracker_; }
  bool is_enabled() const { return options_.enabled; }

  // {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"} as
  // torch's (an empty dict when disabled); load_state_dict refuses an empty one.
  Value state_dict() const;
  void load_state_dict(const Value& state);

 private:
  enum class Stage : uint8_t { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    bool found_inf = false;
  };
  PerOptimizer& state_of(const optim::Optimizer& optimizer);

  GradScalerOptions options_;
  float scale_;  // float32, as torch keeps it: the schedule's rounding matches
  int64_t growth_tracker_ = 0;
  std::unordered_map<const optim::Optimizer*, PerOptimizer> per_optimizer_;
  bool pending_ = false;  // gradients of this iteration are still scaled
  bool warned_clip_ = false;
  friend double detail::scaled_gradients_pending(bool* first_time);
};

}  // namespace ember::amp
