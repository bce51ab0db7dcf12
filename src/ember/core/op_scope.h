#pragma once
// Note [One way in]: every public op opens an OpScope before doing anything else. It is
// the single place where cross-cutting features observe op calls (the profiler, the
// graph tracer, anomaly checks), so adding one never means touching each op. With no
// observer installed it costs one relaxed atomic load and a predictable branch, plus a
// thread-local pointer read and write: the outermost scope on a thread records its name
// there, which is the op the user called (Note [Errors name the op the user called]).
// An op also names its tensor inputs to the scope (`OpScope scope("add", {&a, &b})`):
// only the addresses are passed, and only an observer reads the tensors (the profiler's
// input shapes and dtypes, docs/profiler.md).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>

namespace ember {

class Tensor;

// The tensors an op was called with, valid only while the observer runs: the listed
// pointers (null for an absent optional input), then the tensors of one tensor list (cat's
// inputs, index's indices), each an input of its own.
class OpInputs {
 public:
  OpInputs() = default;
  OpInputs(const Tensor* const* single, size_t num_single, const Tensor* list, size_t list_size) noexcept
      : single_(single), num_single_(num_single), list_(list), list_size_(list_size) {}
  size_t size() const { return num_single_ + list_size_; }
  // The i-th input, or null for an absent one.
  const Tensor* operator[](size_t i) const;

 private:
  const Tensor* const* single_ = nullptr;
  size_t num_single_ = 0;
  const Tensor* list_ = nullptr;
  size_t list_size_ = 0;
};

// What an observer sees: the op's name (a string literal) and, when entering, its inputs;
// for exits, whether the op threw.
struct OpEvent {
  const char* name;
  bool entering;
  bool threw;
  OpInputs inputs = {};
};

using OpObserver = std::function<void(const OpEvent&)>;

// Installs an observer for every op call on every thread; returns an id for removal.
int add_op_observer(OpObserver observer);
void remove_op_observer(int id);

namespace detail {
extern std::atomic<int> g_op_observer_count;
// The name of the outermost OpScope alive on this thread, or null outside every op.
[[gnu::tls_model("initial-exec")]] extern constinit thread_local const char* tl_outermost_op;
void notify_op(const OpEvent& event);
}  // namespace detail

class OpScope {
 public:
  explicit OpScope(const char* name) noexcept : OpScope(name, {}, nullptr, 0) {}
  // An op with tensor inputs: `OpScope scope("add", {&a, &b})`. They are read only when an
  // observer is installed, during this constructor.
  OpScope(const char* name, std::initializer_list<const Tensor*> inputs) noexcept : OpScope(name, inputs, nullptr, 0) {}
  // Listed inputs, then a tensor list's tensors (a std::vector<Tensor>'s data() and size()):
  // `OpScope scope("cat", {}, tensors.data(), tensors.size())`.
  OpScope(const char* name, std::initializer_list<const Tensor*> inputs, const Tensor* list, size_t list_size) noexcept
      : name_(name), outermost_(detail::tl_outermost_op == nullptr) {
    if (outermost_) detail::tl_outermost_op = name;
    if (__builtin_expect(detail::g_op_observer_count.load(std::memory_order_relaxed) != 0, 0)) {
      enter_observed(OpInputs(inputs.begin(), inputs.size(), list, list_size));
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
  // Out of line, so that the constructor stays small enough to inline: with no observer
  // it is the thread-local write and the atomic load only.
  void enter_observed(const OpInputs& inputs) noexcept;

  const char* name_;
  bool outermost_;
  bool observed_ = false;
  int exceptions_ = 0;
};

}  // namespace ember
