#pragma once
// Internal: OpNameScope marks a public op for error messages only (Note [Errors name the
// op the user called]) without reporting it to op observers. Used by factories and views
// (empty, randn, reshape, chunk ...) that other ops call internally all the time, so the
// profiler's view of an op stays the op itself, not its allocations.

#include "ember/core/op_scope.h"

namespace ember::detail {

class OpNameScope {
 public:
  explicit OpNameScope(const char* name) noexcept : outermost_(tl_outermost_op == nullptr) {
    if (outermost_) tl_outermost_op = name;
  }
  ~OpNameScope() {
    if (outermost_) tl_outermost_op = nullptr;
  }
  OpNameScope(const OpNameScope&) = delete;
  OpNameScope& operator=(const OpNameScope&) = delete;

 private:
  bool outermost_;
};

}  // namespace ember::detail
