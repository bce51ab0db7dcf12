#include "ember/amp/grad_scaler.h"

#include <cmath>
#include <mutex>
#include <unordered_set>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/reduce.h"

namespace ember::amp {

namespace {

// The scalers alive in the process, so clip_grad_norm_ can ask whether one of them has
// scaled gradients outstanding (Note [Clipping scaled gradients] in optim/clip_grad.cpp).
std::mutex g_mutex;
std::unordered_set<GradScaler*>& registry() {
  static std::unordered_set<GradScaler*> r;
  return r;
}

}  // namespace

GradScaler::GradScaler(const GradScalerOptions& options)
    : options_(options), scale_(static_cast<float>(options.init_scale)) {
  EMBER_CHECK(options.init_scale > 0 && std::isfinite(options.init_scale),
              "[GradScaler] init_scale must be a positive finite number, got ", options.init_scale);
  EMBER_CHECK(options.growth_factor > 1.0, "[GradScaler] growth_factor must be greater than 1, got ",
              options.growth_factor);
  EMBER_CHECK(options.backoff_factor > 0.0 && options.backoff_factor < 1.0,
              "[GradScaler] backoff_factor must be in (0, 1), got ", options.backoff_factor);
  EMBER_CHECK(options.growth_interval > 0, "[GradScaler] growth_interval must be positive, got ",
              options.growth_interval);
  std::lock_guard<std::mutex> lock(g_mutex);
  registry().insert(this);
}

GradScaler::~GradScaler() {
  std::lock_guard<std::mutex> lock(g_mutex);
  registry().erase(this);
}

GradScaler::PerOptimizer& GradScaler::state_of(const optim::Optimizer& optimizer) {
  return per_optimizer_[&optimizer];
}

Tensor GradScaler::scale(const Tensor& loss) {
  if (!options_.enabled) return loss;
  EMBER_CHECK(loss.defined(), "[GradScaler.scale] the loss is an undefined tensor");
  EMBER_CHECK(loss.is_floating_point(), "[GradScaler.scale] expected a floating-point loss, got ", loss.dtype());
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    pending_ = true;
  }
  return loss * static_cast<double>(scale_);
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!options_.enabled) return;
  PerOptimizer& st = state_of(optimizer);
  EMBER_CHECK(st.stage != Stage::Unscaled, "[GradScaler.unscale_] unscale_() has already been called on this ",
              optimizer.name(), " optimizer since the last update(); call it at most once per iteration, "
              "after backward and before step()");
  EMBER_CHECK(st.stage != Stage::Stepped, "[GradScaler.unscale_] unscale_() is being called after step() on this ",
              optimizer.name(), " optimizer; call unscale_() before step(), or update() first to start a new "
              "iteration");
  // The reciprocal is taken in double and rounded to float32, as torch does.
  const double inv = static_cast<double>(static_cast<float>(1.0 / static_cast<double>(scale_)));
  NoGradGuard no_grad;
  bool found_inf = false;
  for (optim::OptimizerParamGroup& group : optimizer.param_groups()) {
    for (Tensor& p : group.params()) {
      if (!p.defined() || !p.grad().defined()) continue;
      Tensor g = p.grad();
      EMBER_CHECK(g.dtype() != kFloat16, "[GradScaler.unscale_] attempting to unscale float16 gradients (a "
                  "parameter of shape ", p.sizes(), " is float16); keep the parameters in float32 and let "
                  "AutocastGuard(kFloat16) cast them in the forward pass");
      // The check reads the gradient before it is multiplied, as torch's kernel does.
      if (!found_inf && g.numel() > 0 && !g.isfinite().all().item<bool>()) found_inf = true;
      g.mul_(inv);
    }
  }
  st.found_inf = found_inf;
  st.stage = Stage::Unscaled;
  std::lock_guard<std::mutex> lock(g_mutex);
  pending_ = false;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  PerOptimizer& st = state_of(optimizer);
  EMBER_CHECK(st.stage != Stage::Stepped, "[GradScaler.step] step() has already been called on this ",
              optimizer.name(), " optimizer since the last update(); call update() once per iteration");
  if (st.stage == Stage::Ready) unscale_(optimizer);
  const bool skip = st.found_inf;
  if (!skip) optimizer.step();
  st.stage = Stage::Stepped;
  return !skip;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  bool any_check = false, found_inf = false;
  for (const auto& [opt, st] : per_optimizer_) {
    if (st.stage == Stage::Ready) continue;
    any_check = true;
    found_inf = found_inf || st.found_inf;
  }
  EMBER_CHECK(any_check, "[GradScaler.update] no inf/NaN check was recorded since the last update(); call "
              "scaler.step(optimizer) (or scaler.unscale_(optimizer)) before update()");
  // torch's _amp_update_scale_: float32 scale, products taken in double and rounded.
  if (found_inf) {
    scale_ = static_cast<float>(static_cast<double>(scale_) * options_.backoff_factor);
    growth_tracker_ = 0;
  } else if (growth_tracker_ + 1 == options_.growth_interval) {
    const float grown = static_cast<float>(static_cast<double>(scale_) * options_.growth_factor);
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  } else {
    ++growth_tracker_;
  }
  per_optimizer_.clear();
  std::lock_guard<std::mutex> lock(g_mutex);
  pending_ = false;
}

void GradScaler::update(double new_scale) {
  if (!options_.enabled) return;
  EMBER_CHECK(new_scale > 0 && std::isfinite(new_scale), "[GradScaler.update] new_scale must be a positive finite "
              "number, got ", new_scale);
  scale_ = static_cast<float>(new_scale);
  per_optimizer_.clear();
  std::lock_guard<std::mutex> lock(g_mutex);
  pending_ = false;
}

double GradScaler::get_scale() const { return options_.enabled ? static_cast<double>(scale_) : 1.0; }

Value GradScaler::state_dict() const {
  Value d = Value::dict();
  if (!options_.enabled) return d;
  d["scale"] = Value(static_cast<double>(scale_));
  d["growth_factor"] = Value(options_.growth_factor);
  d["backoff_factor"] = Value(options_.backoff_factor);
  d["growth_interval"] = Value(options_.growth_interval);
  d["_growth_tracker"] = Value(growth_tracker_);
  return d;
}

void GradScaler::load_state_dict(const Value& state) {
  if (!options_.enabled) return;
  EMBER_CHECK(state.is_dict(), "[GradScaler.load_state_dict] expected a dict from GradScaler::state_dict()");
  EMBER_CHECK(state.size() != 0, "[GradScaler.load_state_dict] the state dict is empty, possibly because it "
              "was saved from a disabled GradScaler");
  auto number = [&](const char* key) -> double {
    EMBER_CHECK(state.contains(key), "[GradScaler.load_state_dict] the state dict has no \"", key, "\" entry");
    const Value& v = state.at(key);
    EMBER_CHECK(v.is_double() || v.is_int(), "[GradScaler.load_state_dict] \"", key, "\" must be a number");
    return v.to_double();
  };
  GradScalerOptions next = options_;
  next.growth_factor = number("growth_factor");
  next.backoff_factor = number("backoff_factor");
  next.growth_interval = static_cast<int64_t>(number("growth_interval"));
  const double s = number("scale");
  EMBER_CHECK(s > 0 && std::isfinite(s), "[GradScaler.load_state_dict] \"scale\" must be a positive finite number, got ",
              s);
  scale_ = static_cast<float>(s);
  growth_tracker_ = static_cast<int64_t>(number("_growth_tracker"));
  options_ = next;
}

namespace detail {

double scaled_gradients_pending(bool* first_time) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (GradScaler* s : registry()) {
    if (!s->pending_) continue;
    *first_time = !s->warned_clip_;
    s->warned_clip_ = true;
    return s->get_scale();
  }
  *first_time = false;
  return 0;
}

}  // namespace detail

}  // namespace ember::amp
