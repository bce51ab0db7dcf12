#pragma once
// Custom autograd functions, as libtorch's torch::autograd::Function<T>:
//
//   struct MyReLU : ember::autograd::Function<MyReLU> {
//     static Tensor forward(AutogradContext* ctx, Tensor x) {
//       ctx->save_for_backward({x});
//       return x.clamp_min(0);
//     }
//     static variable_list backward(AutogradContext* ctx, variable_list grads) {
//       Tensor x = ctx->get_saved_variables()[0];
//       return {grads[0] * (x > 0)};
//     }
//   };
//   Tensor y = MyReLU::apply(x);
//
// forward runs with grad mode off and returns a Tensor or a variable_list; backward gets
// one gradient per forward output (zeros for outputs that received none, unless
// set_materialize_grads(false)) and returns one gradient per forward argument (an
// undefined Tensor for arguments that are not tensors or get no gradient).

#include <functional>
#include <memory>
#include <ranges>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/autograd/node.h"

namespace ember::autograd {

// A non-tensor value kept in AutogradContext::saved_data (libtorch keeps IValues there).
class SavedValue {
 public:
  SavedValue() = default;
  SavedValue(bool v) : v_(v) {}
  SavedValue(int v) : v_(static_cast<int64_t>(v)) {}
  SavedValue(int64_t v) : v_(v) {}
  SavedValue(double v) : v_(v) {}
  SavedValue(const char* v) : v_(std::string(v)) {}
  SavedValue(std::string v) : v_(std::move(v)) {}
  SavedValue(Tensor v) : v_(std::move(v)) {}
  SavedValue(std::vector<int64_t> v) : v_(std::move(v)) {}

  bool isNone() const { return v_.index() == 0; }
  bool toBool() const { return get<bool>("bool"); }
  int64_t toInt() const { return get<int64_t>("int"); }
  // Integers convert to double, as a Python number would.
  double toDouble() const;
  const std::string& toStringRef() const { return get<std::string>("string"); }
  const Tensor& toTensor() const { return get<Tensor>("Tensor"); }
  const std::vector<int64_t>& toIntVector() const { return get<std::vector<int64_t>>("int list"); }

 private:
  template <typename V>
  const V& get(const char* what) const {
    if (const V* p = std::get_if<V>(&v_)) return *p;
    type_error(what);
  }
  [[noreturn]] void type_error(const char* wanted) const;
  std::variant<std::monostate, bool, int64_t, double, std::string, Tensor, std::vector<int64_t>> v_;
};

class AutogradContext {
 public:
  AutogradContext() = default;
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  // Tensors for backward; checked against later in-place changes like ember's own ops.
  void save_for_backward(variable_list to_save);
  variable_list get_saved_variables() const;
  // Whether the i-th tensor argument of forward needs a gradient.
  bool needs_input_grad(size_t index) const;
  // Whether any argument in the [begin, end) ranges needs a gradient.
  bool needs_input_grad(std::initializer_list<std::pair<size_t, size_t>> ranges) const;
  // Inputs that forward modified in place (they become outputs of this function).
  void mark_dirty(const variable_list& inputs);
  // Outputs that get no gradient (e.g. indices).
  void mark_non_differentiable(const variable_list& outputs);
  // When false, backward sees undefined tensors for outputs that got no gradient.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }

  std::unordered_map<std::string, SavedValue> saved_data;

 private:
  friend class CustomNode;
  variable_list to_save_;
  std::vector<SavedVariable> saved_;
  std::vector<const TensorImpl*> dirty_;
  std::vector<const TensorImpl*> non_differentiable_;
  bool materialize_grads_ = true;
  bool has_freed_buffers_ = false;
  std::weak_ptr<Node> grad_fn_;
};

// The backward node of a custom function (non-template part).
class CustomNode final : public Node {
 public:
  // A plain function for Function<T>; the Python binding passes a callable that calls the
  // Python class's backward.
  using BackwardFn = std::function<variable_list(AutogradContext*, variable_list)>;
  CustomNode(std::string name, BackwardFn backward, std::vector<bool> is_tensor_arg)
      : name_(std::move(name)), backward_(backward), is_tensor_arg_(std::move(is_tensor_arg)) {}
  std::string name() const override { return name_; }
  variable_list apply(variable_list&& grads) override;
  void release_variables() override;
  AutogradContext& ctx() { return ctx_; }

  // Before forward: the node when a graph is recorded (grad mode on, some tensor
  // argument requires grad), else null.
  static std::shared_ptr<CustomNode> make(const char* mangled_name, BackwardFn backward,
                                          const variable_list& inputs, std::vector<bool> is_tensor_arg);
  // The same with the node's name given as is (Python functions: "MyFnBackward").
  static std::shared_ptr<CustomNode> make_named(std::string name, BackwardFn backward,
                                                const variable_list& inputs, std::vector<bool> is_tensor_arg);
  // After forward: gives the outputs their history and saves ctx's tensors.
  void finish(const variable_list& inputs, variable_list& outputs);

 private:
  std::string name_;
  BackwardFn backward_;
  std::vector<bool> is_tensor_arg_;
  AutogradContext ctx_;
};

namespace detail {
// A list of tensors passed as one argument (variable_list, libtorch's TensorList).
template <typename A>
concept TensorRange = std::ranges::range<const A> && std::is_same_v<std::ranges::range_value_t<const A>, Tensor>;

template <typename A>
void collect_arg(variable_list& tensors, std::vector<bool>& is_tensor, const A& arg) {
  if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) {
    tensors.push_back(arg);
    is_tensor.push_back(true);
  } else if constexpr (TensorRange<A>) {
    // A list of tensors (variable_list, libtorch's TensorList): each is an input of its
    // own, with its own gradient from backward, as libtorch flattens them.
    for (const Tensor& t : arg) {
      tensors.push_back(t);
      is_tensor.push_back(true);
    }
  } else {
    is_tensor.push_back(false);
  }
}
}  // namespace detail

template <class T>
struct Function {
  template <typename... Args>
  static auto apply(Args&&... args) {
    variable_list inputs;
    std::vector<bool> is_tensor;
    (detail::collect_arg(inputs, is_tensor, args), ...);
    std::shared_ptr<CustomNode> node =
        CustomNode::make(typeid(T).name(), &T::backward, inputs, std::move(is_tensor));
    AutogradContext local;
    AutogradContext* ctx = node ? &node->ctx() : &local;
    using Result = decltype(T::forward(ctx, std::forward<Args>(args)...));
    static_assert(std::is_same_v<Result, Tensor> || std::is_same_v<Result, variable_list>,
                  "Function<T>::forward must return a Tensor or a variable_list");
    Result result;
    {
      AutoGradMode no_grad(false);
      result = T::forward(ctx, std::forward<Args>(args)...);
    }
    if (!node) return result;
    if constexpr (std::is_same_v<Result, Tensor>) {
      variable_list outs{result};
      node->finish(inputs, outs);
      return outs[0];
    } else {
      node->finish(inputs, result);
      return result;
    }
  }
};

}  // namespace ember::autograd
