#include "ember/core/warning.h"

#include <cstdio>
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

WarningHandler set_warning_handler(WarningHandler h) {
  std::lock_guard<std::mutex> lock(g_mutex);
  WarningHandler old = std::move(handler());
  handler() = std::move(h);
  return old;
}

}  // namespace ember
