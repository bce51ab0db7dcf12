#include "ember/core/op_scope.h"

#include <exception>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "ember/core/tensor.h"

namespace ember {

const Tensor* OpInputs::operator[](size_t i) const { return i < num_single_ ? single_[i] : list_ + (i - num_single_); }

void OpScope::enter_observed(const OpInputs& inputs) noexcept {
  observed_ = true;
  exceptions_ = std::uncaught_exceptions();  // only observed scopes report a throw
  detail::notify_op({name_, true, false, inputs});
}

namespace detail {
std::atomic<int> g_op_observer_count{0};
// Note [Initial-exec thread-locals]: a thread_local of a shared library is reached through
// __tls_get_addr by default (the library might be dlopen'ed after the threads started); it
// was 7% of a 10-element add. The small flags and pointers every op reads (this one, grad
// mode, autocast, the tracer hook, the allocator's small-block cache, the autograd engine's
// state) use the initial-exec model instead: one %fs-relative load. They take a few dozen
// bytes of the static TLS block glibc reserves for libraries loaded later (Python's import of
// ember._C loads libember.so that way); the large thread-local buffers keep the default.
[[gnu::tls_model("initial-exec")]] constinit thread_local const char* tl_outermost_op = nullptr;
}

namespace {
// Observers are added and removed rarely (a trace, a profile) and called on every op, on
// every thread: notify_op reads an immutable list through one atomic pointer, with no
// lock. add/remove publish a new list; the old ones are kept (a few bytes per change) so
// a thread still walking one is never left with freed memory.
std::mutex g_mutex;
std::vector<std::pair<int, OpObserver>> g_entries;  // guarded by g_mutex
std::atomic<const std::vector<OpObserver>*> g_current{nullptr};
std::vector<std::unique_ptr<const std::vector<OpObserver>>>& retired() {
  static std::vector<std::unique_ptr<const std::vector<OpObserver>>> lists;
  return lists;
}
int g_next_id = 1;

void publish_locked() {
  auto list = std::make_unique<std::vector<OpObserver>>();
  for (auto& [id, obs] : g_entries) list->push_back(obs);
  g_current.store(list.get(), std::memory_order_release);
  retired().push_back(std::move(list));
  detail::g_op_observer_count.store(static_cast<int>(g_entries.size()));
}
}  // namespace

int add_op_observer(OpObserver observer) {
  std::lock_guard<std::mutex> lock(g_mutex);
  int id = g_next_id++;
  g_entries.emplace_back(id, std::move(observer));
  publish_locked();
  return id;
}

void remove_op_observer(int id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto it = g_entries.begin(); it != g_entries.end(); ++it) {
    if (it->first == id) {
      g_entries.erase(it);
      break;
    }
  }
  publish_locked();
}

void detail::notify_op(const OpEvent& event) {
  const std::vector<OpObserver>* list = g_current.load(std::memory_order_acquire);
  if (list == nullptr) return;
  for (const OpObserver& obs : *list) {
    try {
      obs(event);
    } catch (...) {
      // An observer must never change what the op does.
    }
  }
}

}  // namespace ember
