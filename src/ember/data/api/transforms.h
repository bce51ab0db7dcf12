#pragma once
// libtorch-style transforms (torch::data::transforms): what Dataset::map() applies to each
// batch. A BatchTransform maps a whole batch; a Transform maps each example of a vector
// batch; a Collation reduces a vector of examples to one batch (Stack stacks tensors).

#include <functional>
#include <utility>
#include <vector>

#include "ember/data/api/types.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"

namespace ember::data::api::transforms {

template <typename InputBatch, typename OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;
  virtual ~BatchTransform() = default;
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

// Applies apply() to every example of a std::vector batch.
template <typename Input, typename Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;
  virtual Output apply(Input input) = 0;
  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> out;
    out.reserve(input_batch.size());
    for (auto& x : input_batch) out.push_back(apply(std::move(x)));
    return out;
  }
};

// A BatchTransform from a function.
template <typename Input, typename Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit BatchLambda(FunctionType function) : function_(std::move(function)) {}
  Output apply_batch(Input input_batch) override { return function_(std::move(input_batch)); }

 private:
  FunctionType function_;
};

// A per-example Transform from a function.
template <typename Input, typename Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit Lambda(FunctionType function) : function_(std::move(function)) {}
  Output apply(Input input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

// Reduces a batch of examples (RawBatch, a vector by default) to one Batch.
template <typename Batch, typename RawBatch = std::vector<Batch>>
using Collation = BatchTransform<RawBatch, Batch>;

// A Collation from a function.
template <typename Batch, typename RawBatch = std::vector<Batch>>
using Collate = BatchLambda<RawBatch, Batch>;

// Transforms the data tensor of each Example<Tensor, Target>, leaving the target alone.
template <typename Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  virtual Tensor operator()(Tensor input) = 0;
  E apply(E input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

// A TensorTransform from a function.
template <typename Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;
  explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}
  Tensor operator()(Tensor input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

// (data - mean[c]) / stddev[c] over the channels c of a [C, ...] data tensor; one value
// applies to every channel, and a tensor without a channel dim counts as one channel.
template <typename Target = Tensor>
class Normalize : public TensorTransform<Target> {
 public:
  Normalize(ArrayRef<double> mean, ArrayRef<double> stddev) : mean_(mean.vec()), stddev_(stddev.vec()) {
    detail::check(!mean_.empty() && !stddev_.empty(), "[Normalize] mean and stddev must not be empty");
  }
  Tensor operator()(Tensor input) override {
    // [C, 1, ..., 1] with as many dims as the input (a per-channel value broadcasts over
    // the rest); a single value stays [1, ..., 1] so that it keeps the input's shape.
    std::vector<int64_t> shape(static_cast<size_t>(std::max<int64_t>(input.dim(), 1)), 1);
    auto as_tensor = [&](const std::vector<double>& v) {
      Tensor t = ember::tensor(v, TensorOptions().dtype(input.is_floating_point() ? input.dtype() : kFloat32));
      if (v.size() == 1) return t.reshape(shape);
      std::vector<int64_t> s = shape;
      s[0] = static_cast<int64_t>(v.size());
      return t.reshape(s);
    };
    return (input - as_tensor(mean_)) / as_tensor(stddev_);
  }
  const std::vector<double>& mean() const { return mean_; }
  const std::vector<double>& stddev() const { return stddev_; }

 private:
  std::vector<double> mean_, stddev_;
};

// Stacks a vector of examples into one example of stacked tensors (dim 0).
template <typename E = Example<>>
struct Stack;

template <>
struct Stack<Example<>> : public Collation<Example<>> {
  Example<> apply_batch(std::vector<Example<>> examples) override {
    std::vector<Tensor> data, targets;
    data.reserve(examples.size());
    targets.reserve(examples.size());
    for (auto& e : examples) {
      data.push_back(std::move(e.data));
      targets.push_back(std::move(e.target));
    }
    return {ember::stack(data), ember::stack(targets)};
  }
};

template <>
struct Stack<TensorExample> : public Collation<TensorExample> {
  TensorExample apply_batch(std::vector<TensorExample> examples) override {
    std::vector<Tensor> data;
    data.reserve(examples.size());
    for (auto& e : examples) data.push_back(std::move(e.data));
    return TensorExample(ember::stack(data));
  }
};

}  // namespace ember::data::api::transforms
