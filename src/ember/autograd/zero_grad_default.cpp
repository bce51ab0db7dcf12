#include "ember/autograd/zero_grad_default.h"

#include <atomic>

namespace ember {
namespace {
std::atomic<bool> g_set_to_none{true};
}  // namespace

void set_zero_grad_sets_to_none(bool set_to_none) { g_set_to_none.store(set_to_none, std::memory_order_relaxed); }
bool zero_grad_sets_to_none() { return g_set_to_none.load(std::memory_order_relaxed); }

}  // namespace ember
