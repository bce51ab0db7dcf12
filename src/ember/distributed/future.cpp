// Future: a tensor that becomes available later (future.h).

#include "ember/distributed/future.h"

#include "ember/core/check.h"

namespace ember::distributed {

FuturePtr Future::completed(Tensor value) {
  FuturePtr f(new Future());
  f->value_ = std::move(value);
  f->done_ = true;
  return f;
}

FuturePtr Future::from_work(WorkPtr work, Tensor value) {
  EMBER_CHECK(work != nullptr,
              "[Future::from_work] the work is null; pass the Work an async_op=true collective returned");
  FuturePtr f(new Future());
  f->work_ = std::move(work);
  f->value_ = std::move(value);
  return f;
}

FuturePtr Future::then(std::function<Tensor(const Tensor&)> fn) {
  EMBER_CHECK(fn != nullptr, "[Future::then] the callback is empty; pass a function of the value");
  FuturePtr f(new Future());
  f->parent_ = shared_from_this();
  f->fn_ = std::move(fn);
  return f;
}

Tensor Future::wait() {
  // One waiter at a time runs the work's wait and the callbacks; later waiters get the result.
  std::lock_guard<std::mutex> lock(mu_);
  if (!done_) {
    try {
      if (work_) {
        work_->wait();
      } else if (parent_) {
        value_ = fn_(parent_->wait());
      }
    } catch (...) {
      error_ = std::current_exception();
    }
    done_ = true;
    work_.reset();
    parent_.reset();
    fn_ = nullptr;
  }
  if (error_) std::rethrow_exception(error_);
  return value_;
}

bool Future::is_completed() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_) return true;
  if (work_) return work_->is_completed();
  return parent_->is_completed();
}

}  // namespace ember::distributed
