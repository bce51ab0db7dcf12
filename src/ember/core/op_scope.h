#pragma once
// Note [One way in]: every public op opens an OpScope before doing anything else. It is
// the single place where cross-cutting features observe op calls (the profiler, the
// graph tracer, anomaly checks), so adding one never means touching each op. With no
// observer installed it costs one relaxed atomic load and a predictable branch, plus a
// thread-local pointer read and write: the outermost scope on a thread records its name
// there, which is the op the user called (Note [Errors name the op the user called]).

#include <atomic>
#include <cstdint>
#include <functional>

namespace ember {

// What an observer sees: the op's name (a string literal), and for exits, whether the
// op threw.
struct OpEvent {
  const char* name;
  bool entering;
  bool threw;
};

using OpObserver = std::function<void(const OpEvent&)>;

// Installs an observer for every op call on every thread; returns an id for removal.
int add_op_observer(OpObserver observer);
void remove_op_observer(int id);

namespace detail {
extern std::atomic<int> g_op_observer_count;
// The name of the outermost OpScope alive on this thread, or null outside every op.
extern constinit thread_local const char* tl_outermost_op;
void notify_op(const OpEvent& event);
}  // namespace detail

class OpScope {
 public:
  explicit OpScope(const char* name) noexcept : name_(name), outermost_(detail::tl_outermost_op == nullptr) {
    if (outermost_) detail::tl_outermost_op = name;
    if (__builtin_expect(detail::g_op_observer_count.load(std::memory_order_relaxed) != 0, 0)) {
      observed_ = true;
      exceptions_ = std::uncaught_exceptions();  // only observed scopes report a throw
      detail::notify_op({name_, true, false});
    }
  }
  ~OpScope() {
    if (outermost_) detail::tl_outermost_op = nullptr;
    if (observed_) detail::notify_op({name_, false, std::uncaught_exceptions() > exceptions_});
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;
  const char* name() const { return name_; }
  // The outermost op on this thread (the one the user called), or null outside every op.
  static const char* outermost() noexcept { return detail::tl_outermost_op; }

 private:
  const char* name_;
  bool outermost_;
  bool observed_ = false;
  int exceptions_ = 0;
};

}  // namespace ember
