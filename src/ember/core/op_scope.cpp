#include "ember/core/op_scope.h"

#include <exception>
#include <mutex>
#include <utility>
#include <vector>

namespace ember {

namespace detail {
std::atomic<int> g_op_observer_count{0};
constinit thread_local const char* tl_outermost_op = nullptr;
}

namespace {
std::mutex g_mutex;
std::vector<std::pair<int, OpObserver>>& observers() {
  static std::vector<std::pair<int, OpObserver>> list;
  return list;
}
int g_next_id = 1;
}  // namespace

int add_op_observer(OpObserver observer) {
  std::lock_guard<std::mutex> lock(g_mutex);
  int id = g_next_id++;
  observers().emplace_back(id, std::move(observer));
  detail::g_op_observer_count.store(static_cast<int>(observers().size()));
  return id;
}

void remove_op_observer(int id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto& list = observers();
  for (auto it = list.begin(); it != list.end(); ++it) {
    if (it->first == id) {
      list.erase(it);
      break;
    }
  }
  detail::g_op_observer_count.store(static_cast<int>(list.size()));
}

void detail::notify_op(const OpEvent& event) {
  std::vector<OpObserver> copy;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (auto& [id, obs] : observers()) copy.push_back(obs);
  }
  for (auto& obs : copy) {
    try {
      obs(event);
    } catch (...) {
      // An observer must never change what the op does.
    }
  }
}

}  // namespace ember
