#pragma once
// Anomaly mode: while on, backward checks every gradient a node produces for NaN/inf and
// names the node and the forward op (with the stack trace captured when the forward ran).
// Process-wide, as in PyTorch.

namespace ember::autograd {

struct AnomalyMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

inline void set_detect_anomaly(bool enabled) { AnomalyMode::set_enabled(enabled); }

class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard() : prev_(AnomalyMode::is_enabled()) { AnomalyMode::set_enabled(true); }
  ~DetectAnomalyGuard() { AnomalyMode::set_enabled(prev_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace ember::autograd
