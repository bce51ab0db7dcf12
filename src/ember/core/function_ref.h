#pragma once
// FunctionRef: a non-owning reference to a callable, cheaper than std::function (no
// allocation, one indirect call). Only valid while the callable it refers to lives.

#include <type_traits>
#include <utility>

namespace ember {

template <typename Fn>
class FunctionRef;

template <typename Ret, typename... Args>
class FunctionRef<Ret(Args...)> {
 public:
  template <typename F,
            std::enable_if_t<!std::is_same_v<std::remove_cvref_t<F>, FunctionRef>, int> = 0>
  FunctionRef(F&& f) noexcept
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* obj, Args... args) -> Ret {
          return (*static_cast<std::remove_reference_t<F>*>(obj))(std::forward<Args>(args)...);
        }) {}
  Ret operator()(Args... args) const { return call_(obj_, std::forward<Args>(args)...); }

 private:
  void* obj_;
  Ret (*call_)(void*, Args...);
};

}  // namespace ember
