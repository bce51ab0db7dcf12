#include "ember/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "ember/core/check.h"

namespace ember::optim {
namespace {

constexpr double kPi = std::numbers::pi;

// Python's `a % b` for b > 0 (the result has b's sign).
int64_t py_mod(int64_t a, int64_t b) {
  const int64_t r = a % b;
  return r < 0 ? r + b : r;
}

// One value per group from a list of one or n values.
std::vector<double> per_group(const std::vector<double>& v, size_t n, const char* op, const char* name) {
  if (v.size() == 1) return std::vector<double>(n, v[0]);
  EMBER_CHECK(v.size() == n, "[", op, "] expected ", n, " values for ", name, " (one per param group), got ",
              v.size());
  return v;
}

}  // namespace

// ---- LRScheduler ----

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (OptimizerParamGroup& g : optimizer_.param_groups()) {
    if (!g.has("initial_lr")) g.set("initial_lr", g.lr());
    base_lrs_.push_back(g.get("initial_lr"));
  }
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> out;
  for (const OptimizerParamGroup& g : optimizer_.param_groups()) out.push_back(g.lr());
  return out;
}

void LRScheduler::apply(const std::vector<double>& lrs) {
  auto& groups = optimizer_.param_groups();
  EMBER_CHECK(lrs.size() == groups.size(), "[LRScheduler] the optimizer has ", groups.size(),
              " param groups but the scheduler was built for ", lrs.size());
  for (size_t i = 0; i < groups.size(); ++i) groups[i].set_lr(lrs[i]);
  last_lr_ = group_lrs();
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  apply(get_lr());
}

void LRScheduler::step_to(int64_t epoch) {
  ++step_count_;
  last_epoch_ = epoch;
  std::optional<std::vector<double>> closed = closed_form_lr();
  apply(closed ? *closed : get_lr());
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

Value LRScheduler::state_dict() const {
  Value s = Value::dict();
  s["base_lrs"] = Value(base_lrs_);
  s["last_epoch"] = last_epoch_;
  s["_step_count"] = step_count_;
  s["_last_lr"] = Value(last_lr_);
  save_fields(s);
  return s;
}

void LRScheduler::load_state_dict(const Value& s) {
  EMBER_CHECK(s.is_dict() && s.contains("last_epoch"),
              "[LRScheduler] load_state_dict expects the dict state_dict() returned");
  base_lrs_ = s.at("base_lrs").to_double_list();
  last_epoch_ = s.at("last_epoch").to_int();
  step_count_ = s.at("_step_count").to_int();
  last_lr_ = s.at("_last_lr").to_double_list();
  load_fields(s);
}

// ---- StepLR ----

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK(step_size > 0, "[StepLR] step_size must be positive, got ", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || py_mod(last_epoch_, step_size_) != 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  std::vector<double> lrs;
  const int64_t k = static_cast<int64_t>(std::floor(static_cast<double>(last_epoch_) / static_cast<double>(step_size_)));
  for (double b : base_lrs_) lrs.push_back(b * std::pow(gamma_, static_cast<double>(k)));
  return lrs;
}

void StepLR::save_fields(Value& s) const {
  s["step_size"] = step_size_;
  s["gamma"] = gamma_;
}

void StepLR::load_fields(const Value& s) {
  step_size_ = s.at("step_size").to_int();
  gamma_ = s.at("gamma").to_double();
}

// ---- MultiStepLR ----

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  const auto n = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (n == 0) return lrs;
  for (double& lr : lrs) lr *= std::pow(gamma_, static_cast<double>(n));
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  const auto k = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> lrs;
  for (double b : base_lrs_) lrs.push_back(b * std::pow(gamma_, static_cast<double>(k)));
  return lrs;
}

void MultiStepLR::save_fields(Value& s) const {
  s["milestones"] = Value(milestones_);
  s["gamma"] = gamma_;
}

void MultiStepLR::load_fields(const Value& s) {
  milestones_ = s.at("milestones").to_int_list();
  gamma_ = s.at("gamma").to_double();
}

// ---- ExponentialLR ----

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double b : base_lrs_) lrs.push_back(b * std::pow(gamma_, static_cast<double>(last_epoch_)));
  return lrs;
}

void ExponentialLR::save_fields(Value& s) const { s["gamma"] = gamma_; }
void ExponentialLR::load_fields(const Value& s) { gamma_ = s.at("gamma").to_double(); }

// ---- CosineAnnealingLR ----

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  EMBER_CHECK(T_max > 0, "[CosineAnnealingLR] T_max must be positive, got ", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  const double T = static_cast<double>(T_max_), e = static_cast<double>(last_epoch_);
  if (last_epoch_ == 0) return lrs;
  if (step_count_ == 1 && last_epoch_ > 0) {
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = eta_min_ + (base_lrs_[i] - eta_min_) * (1 + std::cos(e * kPi / T)) / 2;
  } else if (py_mod(last_epoch_ - 1 - T_max_, 2 * T_max_) == 0) {
    for (size_t i = 0; i < lrs.size(); ++i) lrs[i] = lrs[i] + (base_lrs_[i] - eta_min_) * (1 - std::cos(kPi / T)) / 2;
  } else {
    for (double& lr : lrs)
      lr = (1 + std::cos(kPi * e / T)) / (1 + std::cos(kPi * (e - 1) / T)) * (lr - eta_min_) + eta_min_;
  }
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  std::vector<double> lrs;
  const double T = static_cast<double>(T_max_), e = static_cast<double>(last_epoch_);
  for (double b : base_lrs_) lrs.push_back(eta_min_ + (b - eta_min_) * (1 + std::cos(kPi * e / T)) / 2);
  return lrs;
}

void CosineAnnealingLR::save_fields(Value& s) const {
  s["T_max"] = T_max_;
  s["eta_min"] = eta_min_;
}

void CosineAnnealingLR::load_fields(const Value& s) {
  T_max_ = s.at("T_max").to_int();
  eta_min_ = s.at("eta_min").to_double();
}

// ---- LinearLR ----

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  EMBER_CHECK(start_factor <= 1.0 && start_factor >= 0, "[LinearLR] start_factor must be in [0, 1], got ",
              start_factor);
  EMBER_CHECK(end_factor <= 1.0 && end_factor >= 0, "[LinearLR] end_factor must be in [0, 1], got ", end_factor);
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= start_factor_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  const double d = end_factor_ - start_factor_;
  const double f = 1. + d / (static_cast<double>(total_iters_) * start_factor_ + static_cast<double>(last_epoch_ - 1) * d);
  for (double& lr : lrs) lr *= f;
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  std::vector<double> lrs;
  const double t = static_cast<double>(std::min(total_iters_, last_epoch_));
  for (double b : base_lrs_)
    lrs.push_back(b * (start_factor_ + (end_factor_ - start_factor_) * t / static_cast<double>(total_iters_)));
  return lrs;
}

void LinearLR::save_fields(Value& s) const {
  s["start_factor"] = start_factor_;
  s["end_factor"] = end_factor_;
  s["total_iters"] = total_iters_;
}

void LinearLR::load_fields(const Value& s) {
  start_factor_ = s.at("start_factor").to_double();
  end_factor_ = s.at("end_factor").to_double();
  total_iters_ = s.at("total_iters").to_int();
}

// ---- LambdaLR ----

LambdaLR::LambdaLR(Optimizer& optimizer, Lambda lr_lambda)
    : LambdaLR(optimizer, std::vector<Lambda>(optimizer.param_groups().size(), lr_lambda)) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas)
    : LRScheduler(optimizer), lambdas_(std::move(lr_lambdas)) {
  EMBER_CHECK(lambdas_.size() == optimizer.param_groups().size(), "[LambdaLR] Expected ",
              optimizer.param_groups().size(), " lr_lambdas, but got ", lambdas_.size());
  initial_step();
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> lrs;
  for (size_t i = 0; i < base_lrs_.size(); ++i) lrs.push_back(base_lrs_[i] * lambdas_[i](last_epoch_));
  return lrs;
}

// ---- OneCycleLR ----

OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& o) : LRScheduler(optimizer), options_(o) {
  const double total = static_cast<double>(o.total_steps());
  EMBER_CHECK(o.total_steps() > 0, "[OneCycleLR] Expected positive integer total_steps, but got ", o.total_steps());
  EMBER_CHECK(o.pct_start() >= 0 && o.pct_start() <= 1, "[OneCycleLR] Expected float between 0 and 1 pct_start, but got ",
              o.pct_start());
  EMBER_CHECK(o.anneal_strategy() == "cos" || o.anneal_strategy() == "linear",
              "[OneCycleLR] anneal_strategy must by one of 'cos' or 'linear', instead got ", o.anneal_strategy());
  if (o.three_phase()) {
    phases_ = {{o.pct_start() * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {2 * o.pct_start() * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
               {total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
  } else {
    phases_ = {{o.pct_start() * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
  }
  auto& groups = optimizer.param_groups();
  const std::vector<double> max_lrs = per_group(o.max_lr(), groups.size(), "OneCycleLR", "max_lr");
  for (size_t i = 0; i < groups.size(); ++i) {
    groups[i].set("initial_lr", max_lrs[i] / o.div_factor());
    groups[i].set("max_lr", max_lrs[i]);
    groups[i].set("min_lr", groups[i].get("initial_lr") / o.final_div_factor());
  }
  if (o.cycle_momentum()) {
    EMBER_CHECK(optimizer.defaults().has_momentum(),
                "[OneCycleLR] optimizer must support momentum with `cycle_momentum` option enabled (", optimizer.name(),
                " has neither momentum nor betas); pass cycle_momentum(false)");
    for (OptimizerParamGroup& g : groups) {
      g.options().set_momentum(o.max_momentum());
      g.set("max_momentum", o.max_momentum());
      g.set("base_momentum", o.base_momentum());
    }
  }
  base_lrs_.clear();
  for (const OptimizerParamGroup& g : groups) base_lrs_.push_back(g.get("initial_lr"));
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (options_.anneal_strategy() == "cos") {
    const double cos_out = std::cos(kPi * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
  }
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() {
  const int64_t step_num = last_epoch_;
  EMBER_CHECK(step_num <= options_.total_steps(), "[OneCycleLR] Tried to step ", step_num + 1,
              " times. The specified number of total steps is ", options_.total_steps());
  std::vector<double> lrs;
  const double s = static_cast<double>(step_num);
  for (OptimizerParamGroup& g : optimizer_.param_groups()) {
    double start_step = 0, lr = 0, momentum = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& ph = phases_[i];
      if (s <= ph.end_step || i + 1 == phases_.size()) {
        const double pct = (s - start_step) / (ph.end_step - start_step);
        lr = anneal(g.get(ph.start_lr), g.get(ph.end_lr), pct);
        if (options_.cycle_momentum()) momentum = anneal(g.get(ph.start_momentum), g.get(ph.end_momentum), pct);
        break;
      }
      start_step = ph.end_step;
    }
    lrs.push_back(lr);
    if (options_.cycle_momentum()) g.options().set_momentum(momentum);
  }
  return lrs;
}

void OneCycleLR::save_fields(Value& s) const { s["total_steps"] = options_.total_steps(); }

// ---- SequentialLR ----

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  EMBER_CHECK(!schedulers_.empty(), "[SequentialLR] expects at least one scheduler");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    EMBER_CHECK(&schedulers_[i]->optimizer() == &optimizer, "[SequentialLR] Sequential Schedulers expects all ",
                "schedulers to belong to the same optimizer, but got schedulers at index ", i,
                " to be different than the optimizer passed in.");
  }
  EMBER_CHECK(milestones_.size() + 1 == schedulers_.size(), "[SequentialLR] Sequential Schedulers expects number of ",
              "schedulers provided to be one more than the number of milestone points, but got number of schedulers ",
              schedulers_.size(), " and the number of milestones to be equal to ", milestones_.size());
  last_epoch_ = 0;  // PyTorch: last_epoch + 1
  for (OptimizerParamGroup& g : optimizer.param_groups()) g.set_lr(g.get("initial_lr"));
  for (auto& s : schedulers_) s->set_last_epoch(s->last_epoch() - 1);
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  const size_t idx = static_cast<size_t>(
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) {
    s.step_to(0);
  } else {
    s.step();
  }
  last_lr_ = s.get_last_lr();
}

Value SequentialLR::state_dict() const {
  Value s = Value::dict();
  s["_milestones"] = Value(milestones_);
  s["last_epoch"] = last_epoch_;
  s["_last_lr"] = Value(last_lr_);
  Value subs = Value::list();
  for (const auto& sch : schedulers_) subs.push_back(sch->state_dict());
  s["_schedulers"] = std::move(subs);
  return s;
}

void SequentialLR::load_state_dict(const Value& s) {
  const Value::List& subs = s.at("_schedulers").to_list();
  EMBER_CHECK(subs.size() == schedulers_.size(), "[SequentialLR] load_state_dict: ", subs.size(),
              " saved schedulers, but this SequentialLR has ", schedulers_.size());
  milestones_ = s.at("_milestones").to_int_list();
  last_epoch_ = s.at("last_epoch").to_int();
  last_lr_ = s.at("_last_lr").to_double_list();
  for (size_t i = 0; i < subs.size(); ++i) schedulers_[i]->load_state_dict(subs[i]);
}

// ---- ReduceLROnPlateau ----

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& options)
    : optimizer_(optimizer), options_(options) {
  EMBER_CHECK(options.factor() < 1.0, "[ReduceLROnPlateau] Factor should be < 1.0, got ", options.factor());
  EMBER_CHECK(options.mode() == "min" || options.mode() == "max", "[ReduceLROnPlateau] mode ", options.mode(),
              " is unknown! (use \"min\" or \"max\")");
  EMBER_CHECK(options.threshold_mode() == "rel" || options.threshold_mode() == "abs",
              "[ReduceLROnPlateau] threshold mode ", options.threshold_mode(), " is unknown! (use \"rel\" or \"abs\")");
  min_lrs_ = per_group(options.min_lr(), optimizer.param_groups().size(), "ReduceLROnPlateau", "min_lr");
  best_ = options.mode() == "min" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  for (const OptimizerParamGroup& g : optimizer.param_groups()) last_lr_.push_back(g.lr());
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  const bool min = options_.mode() == "min", rel = options_.threshold_mode() == "rel";
  const double t = options_.threshold();
  if (min && rel) return a < best * (1. - t);
  if (min) return a < best - t;
  if (rel) return a > best * (t + 1.);
  return a > best + t;
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;
  }
  if (num_bad_epochs_ > options_.patience()) {
    auto& groups = optimizer_.param_groups();
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].lr();
      const double new_lr = std::max(old_lr * options_.factor(), min_lrs_[i]);
      if (old_lr - new_lr > options_.eps()) groups[i].set_lr(new_lr);
    }
    cooldown_counter_ = options_.cooldown();
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const OptimizerParamGroup& g : optimizer_.param_groups()) last_lr_.push_back(g.lr());
}

Value ReduceLROnPlateau::state_dict() const {
  Value s = Value::dict();
  s["factor"] = options_.factor();
  s["min_lrs"] = Value(min_lrs_);
  s["patience"] = options_.patience();
  s["cooldown"] = options_.cooldown();
  s["cooldown_counter"] = cooldown_counter_;
  s["mode"] = options_.mode();
  s["threshold"] = options_.threshold();
  s["threshold_mode"] = options_.threshold_mode();
  s["best"] = best_;
  s["num_bad_epochs"] = num_bad_epochs_;
  s["eps"] = options_.eps();
  s["last_epoch"] = last_epoch_;
  s["_last_lr"] = Value(last_lr_);
  return s;
}

void ReduceLROnPlateau::load_state_dict(const Value& s) {
  options_.factor(s.at("factor").to_double());
  min_lrs_ = s.at("min_lrs").to_double_list();
  options_.patience(s.at("patience").to_int());
  options_.cooldown(s.at("cooldown").to_int());
  cooldown_counter_ = s.at("cooldown_counter").to_int();
  options_.mode(s.at("mode").to_string());
  options_.threshold(s.at("threshold").to_double());
  options_.threshold_mode(s.at("threshold_mode").to_string());
  best_ = s.at("best").to_double();
  num_bad_epochs_ = s.at("num_bad_epochs").to_int();
  options_.eps(s.at("eps").to_double());
  last_epoch_ = s.at("last_epoch").to_int();
  last_lr_ = s.at("_last_lr").to_double_list();
}

}  // namespace ember::optim
