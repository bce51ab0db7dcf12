#pragma once
// Light hooks the library's own code uses to report to the profiler (docs/profiler.md):
// user ranges, and annotations of the op being run. With no profile active each is one
// relaxed atomic load.
//
//   { EMBER_RECORD("data: next batch"); batch = loader.next(); }

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace ember {
class Tensor;
}

namespace ember::profiler {

// "[[2, 3], [3, 4]]": the shapes of the given tensors (undefined ones as []).
std::string shapes_of(std::initializer_list<const Tensor*> tensors);

// What produced an event; the Chrome trace's category.
enum class EventKind : uint8_t { Op, Backward, User, DataLoader, Optimizer };
const char* kind_name(EventKind k);

namespace detail {
extern std::atomic<int> g_active;  // profiles recording now
bool range_begin(const char* name, std::string owned_name, EventKind kind);  // false: not recorded
void range_end();
void annotate(std::initializer_list<const Tensor*> inputs, int64_t flops);
}  // namespace detail

// True while a Profile is recording (any thread).
inline bool is_enabled() { return detail::g_active.load(std::memory_order_relaxed) != 0; }

// A named range on this thread, recorded while a profile is active (torch's
// record_function). `name` must outlive the profile (a string literal) unless it is given
// as a std::string.
class RecordFunction {
 public:
  explicit RecordFunction(const char* name, EventKind kind = EventKind::User) {
    if (is_enabled()) open_ = detail::range_begin(name, {}, kind);
  }
  RecordFunction(std::string name, EventKind kind) {
    if (is_enabled()) open_ = detail::range_begin(nullptr, std::move(name), kind);
  }
  ~RecordFunction() {
    if (open_) detail::range_end();
  }
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;

 private:
  bool open_ = false;
};

// Attaches a FLOP count to the innermost open event on this thread (the op being run), and
// the inputs' shapes and dtypes when the profile records them and that op's OpScope did
// not (an OpScope given its inputs already did: docs/profiler.md).
inline void annotate(std::initializer_list<const Tensor*> inputs, int64_t flops) {
  if (is_enabled()) detail::annotate(inputs, flops);
}

}  // namespace ember::profiler

#define EMBER_RECORD_CONCAT2(a, b) a##b
#define EMBER_RECORD_CONCAT(a, b) EMBER_RECORD_CONCAT2(a, b)
#define EMBER_RECORD(name) ::ember::profiler::RecordFunction EMBER_RECORD_CONCAT(ember_record_, __LINE__)(name)
