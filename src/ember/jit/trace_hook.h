#pragma once
// Internal: how ops report themselves to jit::trace (Note [Trace recording]).
//
// Note [Trace recording]: an op that the tracer knows opens a TraceOp guard at its entry
// and, once it has its result, calls record() with its tensor inputs, its non-tensor
// arguments (attrs) and its outputs. Only the outermost TraceOp on the thread records:
// linear's inner matmul and add never appear, linear does. An op without a guard (a
// composite such as cross_entropy or nn.MultiheadAttention's forward) is transparent: the
// guarded ops it calls record themselves, so the graph holds its pieces. With no trace
// active a guard costs one thread-local load and a predictable branch.
//
// In-place ops record as their out-of-place form; the tracer then rebinds the mutated
// tensor to the new graph value. Reading a traced tensor's value (item, to_vector,
// data-dependent shapes) calls value_read(), which refuses it: a traced graph cannot
// follow a branch taken on data.

#include <optional>
#include <utility>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/serialize/value.h"

namespace ember::jit::detail {

class Recorder;
[[gnu::tls_model("initial-exec")]] extern constinit thread_local Recorder* tl_recorder;
[[gnu::tls_model("initial-exec")]] extern constinit thread_local int tl_trace_depth;

// Attributes by name. Build them only inside `if (trace.recording())`: they cost an
// allocation.
using Attrs = std::vector<std::pair<const char*, Value>>;

// Records one node on the active trace (called only by a recording TraceOp).
void record_node(const char* op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                 const std::vector<Tensor>& outputs, bool inplace);
// A traced tensor's value was read by `op` (item, to_vector, nonzero ...): throws unless
// the tensor is not traced or was marked constant.
void value_read_slow(const char* op, const Tensor& t);

// Attribute values of common argument types.
inline Value ints(IntArrayRef a) { return Value(std::vector<int64_t>(a.begin(), a.end())); }
inline Value opt_int(std::optional<int64_t> v) { return v ? Value(*v) : Value(); }
Value dtype_value(DType dt);
inline Value opt_dtype(std::optional<DType> dt) { return dt ? dtype_value(*dt) : Value(); }

inline void value_read(const char* op, const Tensor& t) {
  if (tl_recorder != nullptr) [[unlikely]]
    value_read_slow(op, t);
}

class TraceOp {
 public:
  explicit TraceOp(const char* name) noexcept : name_(name) {
    if (tl_recorder != nullptr) [[unlikely]] {
      active_ = true;
      owner_ = tl_trace_depth++ == 0;
    }
  }
  ~TraceOp() {
    if (active_) --tl_trace_depth;
  }
  TraceOp(const TraceOp&) = delete;
  TraceOp& operator=(const TraceOp&) = delete;

  // True when this op is the one the trace records (the outermost known op).
  bool recording() const noexcept { return owner_; }
  void record(const std::vector<Tensor>& inputs, const Attrs& attrs, const std::vector<Tensor>& outputs) const {
    if (owner_) record_node(name_, inputs, attrs, outputs, false);
  }
  void record(const std::vector<Tensor>& inputs, const Attrs& attrs, const Tensor& output) const {
    if (owner_) record_node(name_, inputs, attrs, {output}, false);
  }

 private:
  const char* name_;
  bool active_ = false;
  bool owner_ = false;
};

}  // namespace ember::jit::detail
