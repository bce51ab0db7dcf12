#pragma once
// Autocast: mixed precision for the forward pass, as torch.autocast("cpu"). Inside an
// AutocastGuard the ops of the table below change the dtype of their floating-point
// inputs before they run: matrix products and convolutions in the low precision (bf16 or
// fp16), numerically sensitive ops (losses, softmax, norms, reductions, exp/log/pow) in
// float32. Every other op runs in the dtype it is given; mixed-dtype element-wise ops
// promote to the widest as they always do. docs/amp.md has the table as prose.
//
// Only the .cpp files of the ops in the table include this header; nothing in core does.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ember/core/dtype.h"
#include "ember/core/tensor.h"

namespace ember::amp {

// What an op does to its floating-point inputs under autocast.
enum class CastPolicy : uint8_t {
  LowerPrecision,  // float32/float16/bfloat16 inputs become the autocast dtype
  Float32,         // float16/bfloat16 inputs become float32
};

// Where a row comes from: torch 1.13's CPU autocast lists it (its output dtype is checked
// against torch's in tests/amp), or ember adds it (torch 1.13 leaves the op in the input's
// dtype on the CPU; ember follows torch's CUDA list and the numerics there).
enum class Origin : uint8_t { Torch, Ember };

// Note [Autocast op table]: the one list of the ops autocast touches. An op consults it
// with policy_of("name"), evaluated at compile time, so an op that asks for a row the
// table lacks fails to build. Double-precision inputs are never changed (as in torch).
#define EMBER_AUTOCAST_OPS(X)                                  \
  /* low precision: the products and convolutions */          \
  X(matmul, LowerPrecision, Torch)                             \
  X(mm, LowerPrecision, Torch)                                 \
  X(bmm, LowerPrecision, Torch)                                \
  X(addmm, LowerPrecision, Torch)                              \
  X(baddbmm, LowerPrecision, Torch)                            \
  X(linear, LowerPrecision, Torch)                             \
  X(conv1d, LowerPrecision, Torch)                             \
  X(conv2d, LowerPrecision, Torch)                             \
  X(scaled_dot_product_attention, LowerPrecision, Ember)       \
  /* float32: torch 1.13's CPU list */                         \
  X(conv_transpose1d, Float32, Torch)                          \
  X(conv_transpose2d, Float32, Torch)                          \
  X(mse_loss, Float32, Torch)                                  \
  X(l1_loss, Float32, Torch)                                   \
  X(smooth_l1_loss, Float32, Torch)                            \
  X(huber_loss, Float32, Torch)                                \
  X(kl_div, Float32, Torch)                                    \
  X(binary_cross_entropy, Float32, Torch)                      \
  X(binary_cross_entropy_with_logits, Float32, Torch)          \
  X(nll_loss, Float32, Torch)                                  \
  X(cross_entropy, Float32, Torch)                             \
  X(prod, Float32, Torch)                                      \
  /* float32: ember's additions (torch 1.13 CPU passes these through) */ \
  X(softmax, Float32, Ember)                                   \
  X(log_softmax, Float32, Ember)                               \
  X(layer_norm, Float32, Ember)                                \
  X(group_norm, Float32, Ember)                                \
  X(batch_norm, Float32, Ember)                                \
  X(sum, Float32, Ember)                                       \
  X(mean, Float32, Ember)                                      \
  X(norm, Float32, Ember)                                      \
  X(cumsum, Float32, Ember)                                    \
  X(logsumexp, Float32, Ember)                                 \
  X(exp, Float32, Ember)                                       \
  X(log, Float32, Ember)                                       \
  X(pow, Float32, Ember)

struct OpRow {
  std::string_view name;
  CastPolicy policy;
  Origin origin;
};

inline constexpr OpRow kAutocastOps[] = {
#define EMBER_AUTOCAST_ROW(name, policy, origin) {#name, CastPolicy::policy, Origin::origin},
    EMBER_AUTOCAST_OPS(EMBER_AUTOCAST_ROW)
#undef EMBER_AUTOCAST_ROW
};

// The table, for tests and docs.
inline std::span<const OpRow> autocast_ops() { return kAutocastOps; }

// The policy of a listed op. Used in constant expressions: a name missing from the table
// makes the call non-constant, which fails the build at the op that asked.
consteval CastPolicy policy_of(std::string_view op) {
  for (const OpRow& row : kAutocastOps) {
    if (row.name == op) return row.policy;
  }
  throw "op missing from EMBER_AUTOCAST_OPS (src/ember/amp/autocast.h)";
}

namespace detail {
struct AutocastState {
  bool enabled = false;
  bool cache_enabled = true;
  DType dtype = kBFloat16;
  int nesting = 0;  // guards alive on this thread, enabled or not
};
[[gnu::tls_model("initial-exec")]] extern constinit thread_local AutocastState tl_autocast;
}  // namespace detail

inline bool is_autocast_enabled() { return detail::tl_autocast.enabled; }
// The low-precision dtype autocast uses now (bfloat16 unless a guard chose float16).
inline DType get_autocast_dtype() { return detail::tl_autocast.dtype; }
inline bool is_autocast_cache_enabled() { return detail::tl_autocast.cache_enabled; }
// Drops the cast copies of parameters kept for the current autocast region.
void clear_autocast_cache();

// Where bf16/fp16 matrix products run on this machine, in words: "oneDNN bf16
// (avx512_core_amx)" or "float32 fallback (oneDNN ISA avx2 has no native bf16)"
// (Note [Low-precision GEMM], kernels/cpu/gemm_lowp.cpp). Benchmarks and examples print it.
std::string low_precision_gemm_path(DType dt);

// Turns autocast on (or off, with enabled = false) on this thread for the guard's lifetime
// and restores the previous state on exit; guards nest. dtype is kBFloat16 or kFloat16.
// When the outermost guard exits, the cache of cast parameters is cleared.
class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype = kBFloat16, bool enabled = true, bool cache_enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  detail::AutocastState prev_;
};

// The inputs an op should run with under `policy`, or nullopt when none changes (then the
// op runs on what it was given). Undefined tensors stay undefined. Ops call it only while
// is_autocast_enabled(), then call themselves again with the result.
template <typename... Ts>
std::optional<std::array<Tensor, sizeof...(Ts)>> cast_inputs(CastPolicy policy, const Ts&... inputs);

namespace detail {
// Whether autocast would change t's dtype under policy, and the cast (cached for leaves).
bool needs_cast(CastPolicy policy, const Tensor& t);
Tensor cast(CastPolicy policy, const Tensor& t);

// Autocast off for the guard's lifetime without touching the nesting count: the backward
// pass runs with it (gradients follow the dtypes of the forward).
class AutocastSuspend {
 public:
  AutocastSuspend() : prev_(tl_autocast.enabled) { tl_autocast.enabled = false; }
  ~AutocastSuspend() { tl_autocast.enabled = prev_; }
  AutocastSuspend(const AutocastSuspend&) = delete;
  AutocastSuspend& operator=(const AutocastSuspend&) = delete;

 private:
  bool prev_;
};
}  // namespace detail

template <typename... Ts>
std::optional<std::array<Tensor, sizeof...(Ts)>> cast_inputs(CastPolicy policy, const Ts&... inputs) {
  if (!(detail::needs_cast(policy, inputs) || ...)) return std::nullopt;
  return std::array<Tensor, sizeof...(Ts)>{detail::cast(policy, inputs)...};
}

}  // namespace ember::amp
