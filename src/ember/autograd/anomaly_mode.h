#pragma once
// Anomaly mode: while on, backward checks every gradient a node produces for NaN/inf and
// names the node and the forward op (with the stack trace captured when the forward ran).
// Process-wide, as in PyTorch.

namespace ember::autograd {

struct AnomalyMode {
  static bool is_enabled();
  // check_nan false keeps the forward traces but skips the NaN/inf checks (libtorch's
  // DetectAnomalyGuard(/*check_nan=*/false)).
  static void set_enabled(bool enabled, bool check_nan = true);
  static bool should_check_nan();
};

inline void set_detect_anomaly(bool enabled, bool check_nan = true) { AnomalyMode::set_enabled(enabled, check_nan); }

class DetectAnomalyGuard {
 public:
  explicit DetectAnomalyGuard(bool check_nan = true)
      : prev_(AnomalyMode::is_enabled()), prev_check_nan_(AnomalyMode::should_check_nan()) {
    AnomalyMode::set_enabled(true, check_nan);
  }
  ~DetectAnomalyGuard() { AnomalyMode::set_enabled(prev_, prev_check_nan_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_;
  bool prev_check_nan_;
};

}  // namespace ember::autograd
