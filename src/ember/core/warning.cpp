#include "ember/core/warning.h"

#include <cstdio>
#include <atomic>
#include <mutex>

namespace ember {
namespace {
std::mutex g_mutex;
WarningHandler& handler() {
  static WarningHandler h;
  return h;
}
}  // namespace

void warn(const std::string& message) {
  WarningHandler h;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    h = handler();
  }
  if (h) {
    h(message);
    return;
  }
  std::fprintf(stderr, "[ember warning] %s\n", message.c_str());
}

namespace {
std::atomic<bool> g_warn_always{false};
}  // namespace

void set_warn_always(bool always) { g_warn_always.store(always, std::memory_order_relaxed); }
bool warn_always() { return g_warn_always.load(std::memory_order_relaxed); }

void warn_once(bool& flag, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (flag && !warn_always()) return;
    flag = true;
  }
  warn(message);
}

WarningHandler set_warning_handler(WarningHandler h) {
  std::lock_guard<std::mutex> lock(g_mutex);
  WarningHandler old = std::move(handler());
  handler() = std::move(h);
  return old;
}

}  // namespace ember
