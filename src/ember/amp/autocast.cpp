#include "ember/amp/autocast.h"

#include <unordered_map>
#include <utility>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/kernels/cpu/gemm_lowp.h"

namespace ember::amp {

namespace detail {
[[gnu::tls_model("initial-exec")]] constinit thread_local AutocastState tl_autocast{};
}  // namespace detail

namespace {

// Note [Autocast cache]: a float32 parameter (a leaf that requires grad) used by several
// low-precision ops in one autocast region is cast once; every use shares the cast copy
// and so one ToCopy node, whose backward returns the gradient in float32. The cache lives
// until the outermost guard on the thread exits, as torch's does. It holds the leaf too,
// so a key never names a freed and reused TensorImpl. Unlike torch's, an entry is
// dropped when the parameter changed in place since its cast (an optimizer step inside
// the region), so a stale copy is never used.
struct CacheKey {
  const TensorImpl* impl;
  DType dtype;
  bool operator==(const CacheKey&) const = default;
};
struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const noexcept {
    return std::hash<const void*>()(k.impl) ^ static_cast<size_t>(k.dtype);
  }
};
struct CacheEntry {
  Tensor leaf;
  Tensor cast;
  uint32_t version;  // the leaf's version when cast: an in-place update (a step) recasts
};
using Cache = std::unordered_map<CacheKey, CacheEntry, CacheKeyHash>;

Cache& cache() {
  static thread_local Cache c;
  return c;
}

bool is_reduced(DType dt) { return dt == kBFloat16 || dt == kFloat16; }

}  // namespace

void clear_autocast_cache() { cache().clear(); }

std::string low_precision_gemm_path(DType dt) {
  const std::string isa = kernels::cpu::onednn_isa_name();
  const char* name = dt == kFloat16 ? "fp16" : "bf16";
  if (kernels::cpu::lowp_gemm_impl(dt) == kernels::cpu::LowpGemmImpl::OneDnn) {
    if (kernels::cpu::onednn_has_native(dt)) return std::string("oneDNN ") + name + " (" + isa + ")";
    // Forced (EMBER_LOWP_GEMM=onednn): oneDNN is asked first and falls back when it refuses.
    return std::string("oneDNN ") + name + " requested (oneDNN ISA " + isa +
           " is not native; where oneDNN refuses the dtype, float32 fallback)";
  }
  return std::string("float32 fallback (oneDNN ISA ") + isa +
         (kernels::cpu::onednn_has_native(dt) ? "; ember's CPU level is below avx512)" : std::string(" has no native ") +
                                                                                                name + ")");
}

AutocastGuard::AutocastGuard(DType dtype, bool enabled, bool cache_enabled) : prev_(detail::tl_autocast) {
  EMBER_CHECK(!enabled || is_reduced(dtype), "[autocast] the autocast dtype must be bfloat16 or float16, got ", dtype,
              "; use AutocastGuard(kBFloat16) or AutocastGuard(kFloat16)");
  detail::AutocastState& s = detail::tl_autocast;
  s.enabled = enabled;
  if (enabled) s.dtype = dtype;
  s.cache_enabled = cache_enabled;
  ++s.nesting;
}

AutocastGuard::~AutocastGuard() {
  detail::AutocastState& s = detail::tl_autocast;
  const int nesting = s.nesting - 1;
  s = prev_;
  s.nesting = nesting;
  if (nesting == 0) clear_autocast_cache();
}

namespace detail {

bool needs_cast(CastPolicy policy, const Tensor& t) {
  if (!t.defined()) return false;
  const DType dt = t.dtype();
  if (policy == CastPolicy::Float32) return is_reduced(dt);
  return (dt == kFloat32 || is_reduced(dt)) && dt != tl_autocast.dtype;
}

Tensor cast(CastPolicy policy, const Tensor& t) {
  if (!needs_cast(policy, t)) return t;
  if (policy == CastPolicy::Float32) return t.to(kFloat32);
  const DType to = tl_autocast.dtype;
  const bool cacheable = tl_autocast.cache_enabled && t.dtype() == kFloat32 && t.requires_grad() && t.is_leaf() &&
                         t.impl()->view_base() == nullptr && !InferenceMode::is_enabled();
  if (!cacheable) return t.to(to);
  Cache& c = cache();
  const CacheKey key{t.impl(), to};
  if (auto it = c.find(key); it != c.end() && it->second.version == t._version()) return it->second.cast;
  Tensor out = t.to(to);
  c.insert_or_assign(key, CacheEntry{t, out, t._version()});
  return out;
}

}  // namespace detail

}  // namespace ember::amp
