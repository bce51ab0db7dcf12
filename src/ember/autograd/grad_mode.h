#pragma once
// Thread-local autograd modes and their RAII guards (DESIGN.md decision 6), named as in
// libtorch: NoGradGuard, AutoGradMode, InferenceMode.

namespace ember {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Grad mode off for the guard's lifetime; restores the previous mode on exit.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

struct NoGradGuard : AutoGradMode {
  NoGradGuard() : AutoGradMode(false) {}
};
struct EnableGradGuard : AutoGradMode {
  EnableGradGuard() : AutoGradMode(true) {}
};

inline bool is_grad_enabled() { return GradMode::is_enabled(); }
inline void set_grad_enabled(bool enabled) { GradMode::set_enabled(enabled); }

// Inference mode: no graph is recorded, in-place ops on tensors created inside do not
// bump version counters, and tensors created inside are "inference tensors" that can
// never enter autograd later (requires_grad_, saving for backward and in-place updates
// outside the mode are refused). Implies grad mode off.
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  static bool is_enabled();

 private:
  bool prev_inference_;
  bool prev_grad_;
};

inline bool is_inference_mode_enabled() { return InferenceMode::is_enabled(); }

}  // namespace ember
