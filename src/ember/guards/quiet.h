#pragma once
// Internal: keeps the EvalMode guard quiet on this thread for a scope. For library code that
// runs a model in training mode under NoGradGuard on purpose and reports that itself (the
// tracer warns that it traced a model in training mode).

namespace ember::guards::detail {

class EvalModeQuiet {
 public:
  EvalModeQuiet();
  ~EvalModeQuiet();
  EvalModeQuiet(const EvalModeQuiet&) = delete;
  EvalModeQuiet& operator=(const EvalModeQuiet&) = delete;

 private:
  bool prev_;
};

}  // namespace ember::guards::detail
