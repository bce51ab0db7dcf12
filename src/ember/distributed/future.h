#pragma once
// Future: a tensor that becomes available later -- torch.futures.Future reduced to what
// DDP communication hooks need (comm_hooks.h). A future is completed from the start, or
// completes when a collective's Work does, or derives its value from another future with
// then():
//
//   auto work = dist::all_reduce(t, dist::ReduceOp::SUM, group, /*async_op=*/true);
//   FuturePtr f = Future::from_work(work, t)->then([](const Tensor& v) { return v.div_(2); });
//   Tensor mean = f->wait();
//
// Unlike torch, a then() callback runs on the thread that first waits for its future (not
// on the thread that completes the work): the communication overlaps whatever runs
// meanwhile, the callback's computation happens in wait(), once.

#include <exception>
#include <functional>
#include <memory>
#include <mutex>

#include "ember/core/tensor.h"
#include "ember/distributed/process_group.h"

namespace ember::distributed {

class Future;
using FuturePtr = std::shared_ptr<Future>;

class Future : public std::enable_shared_from_this<Future> {
 public:
  // A future that already holds `value`.
  static FuturePtr completed(Tensor value);
  // Completes when `work` does; its value is `value` (the tensor the work fills in place).
  static FuturePtr from_work(WorkPtr work, Tensor value);

  // A future whose value is fn(this future's value); fn runs once, in the first wait() of
  // the returned future. Errors of this future, or thrown by fn, surface from that wait().
  FuturePtr then(std::function<Tensor(const Tensor&)> fn);

  // Waits for the value (running pending then() callbacks) and returns it; rethrows the
  // error the work or a callback ended with.
  Tensor wait();
  // True when wait() would not block on communication (callbacks may still be pending).
  bool is_completed() const;

 private:
  Future() = default;

  mutable std::mutex mu_;
  bool done_ = false;
  Tensor value_;
  std::exception_ptr error_;
  // Not done yet: what produces the value.
  WorkPtr work_;
  FuturePtr parent_;
  std::function<Tensor(const Tensor&)> fn_;
};

}  // namespace ember::distributed
