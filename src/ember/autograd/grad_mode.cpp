#include "ember/autograd/grad_mode.h"

namespace ember {

namespace {
[[gnu::tls_model("initial-exec")]] thread_local bool t_grad_enabled = true;
[[gnu::tls_model("initial-exec")]] thread_local bool t_inference = false;
}  // namespace

bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) { t_grad_enabled = enabled; }

InferenceMode::InferenceMode(bool enabled) : prev_inference_(t_inference), prev_grad_(t_grad_enabled) {
  t_inference = enabled;
  if (enabled) t_grad_enabled = false;
}
InferenceMode::~InferenceMode() {
  t_inference = prev_inference_;
  t_grad_enabled = prev_grad_;
}
bool InferenceMode::is_enabled() { return t_inference; }

}  // namespace ember
