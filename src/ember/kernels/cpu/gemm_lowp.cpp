// Note [Low-precision GEMM]: a bf16 product can run two ways.
//   - oneDNN's matmul on the bf16 operands with a float32 destination: the hardware does
//     bf16 x bf16 -> fp32 multiply-adds (AVX512-BF16's vdpbf16ps, AMX tiles), reading half
//     the bytes of a float32 GEMM. Worth it only with those instructions: without them
//     oneDNN 2.6 refuses bf16 (or would emulate it more slowly than float32).
//   - float32: convert both operands, OpenBLAS's sgemm, round the result once. Exact
//     products of bf16 values (8-bit significands) summed in float32: the same arithmetic
//     up to summation order, on any x86-64.
// Auto picks oneDNN when oneDNN reports a native ISA for the dtype and ember's own CPU
// dispatch runs at avx512 (so EMBER_CPU_CAPABILITY=avx2 also turns it off, and the tests
// at every level cover both paths where the CPU has them).
//
// Determinism (DESIGN.md decision 5): as in Note [Deterministic gemm], the result is cut
// into row blocks whose size depends only on (m, n, k); each block is one oneDNN call
// planned and run on one thread, so results do not depend on the thread count.

#include "ember/kernels/cpu/gemm_lowp.h"

#include <dnnl.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "ember/core/cpu_capability.h"
#include "ember/core/parallel.h"
#include "ember/kernels/cpu/one_thread.h"

namespace ember::kernels::cpu {

namespace {

using dnnl::memory;
using DT = memory::data_type;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

LowpGemmImpl env_impl() {
  const char* v = std::getenv("EMBER_LOWP_GEMM");
  if (v && std::strcmp(v, "onednn") == 0) return LowpGemmImpl::OneDnn;
  if (v && std::strcmp(v, "float32") == 0) return LowpGemmImpl::Float32;
  return LowpGemmImpl::Auto;
}

std::atomic<int>& impl_flag() {
  static std::atomic<int> flag{static_cast<int>(env_impl())};
  return flag;
}

// One planned product: a (rows x k) block of a times b into rows x n of out.
struct PlanKey {
  DT dt;
  int64_t rows, k, n, as0, as1, bs0, bs1;
  float alpha, beta;
  auto tie() const { return std::tie(dt, rows, k, n, as0, as1, bs0, bs1, alpha, beta); }
  bool operator<(const PlanKey& o) const { return tie() < o.tie(); }
};
struct Plan {
  memory::desc a, b, c, scratch;
  dnnl::matmul prim;
};

constexpr size_t kMaxPlans = 256;

// Null when oneDNN has no implementation for the case (bf16 on a CPU without AVX-512).
std::shared_ptr<const Plan> plan_for(const PlanKey& key) {
  static std::mutex mu;
  static std::map<PlanKey, std::shared_ptr<const Plan>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= kMaxPlans) cache.clear();
  std::shared_ptr<Plan> p;
  try {
    OneOmpThread single_thread;  // plan a single-threaded kernel (Note above)
    auto plan = std::make_shared<Plan>();
    plan->a = memory::desc({key.rows, key.k}, key.dt, memory::dims{key.as0, key.as1});
    plan->b = memory::desc({key.k, key.n}, key.dt, memory::dims{key.bs0, key.bs1});
    plan->c = memory::desc({key.rows, key.n}, DT::f32, memory::dims{key.n, 1});
    // A scratchpad of the caller's (thread-local, in gemm_lowp), not the library's: oneDNN
    // shares its own between primitives unless built with ONEDNN_ENABLE_CONCURRENT_EXEC, and
    // two row blocks run at once on two threads (found on a Zen 4 with AVX512-BF16: the
    // blocks wrote into each other's packed panels; the same fix as qgemm.cpp's).
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (key.alpha != 1.0f) attr.set_output_scales(0, {key.alpha});
    if (key.beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(key.beta);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(plan->a, plan->b, plan->c), attr, cpu_engine());
    plan->scratch = pd.scratchpad_desc();
    plan->prim = dnnl::matmul(pd);
    p = std::move(plan);
  } catch (const dnnl::error&) {
    p = nullptr;
  }
  cache[key] = p;
  return p;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Rows per block: at least 16 (a multiple of 16) and at least a 1/kBlocks share of m, and
// blocks of at least about 2^21 multiply-adds. oneDNN packs b again for every call, so a
// block of few rows against a large b spends its time packing: 16-row blocks of a 1024^3
// product ran at 85 GFLOP/s on one Zen 4 core, 128-row blocks (8 per matrix) at 110-130.
int64_t block_rows(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kWork = int64_t{1} << 21;
  constexpr int64_t kBlocks = 8;
  const int64_t per_row = std::max<int64_t>(1, n * k);
  const int64_t rows = std::max({int64_t{16}, kWork / per_row / 16 * 16, ceil_div(ceil_div(m, kBlocks), 16) * 16});
  return std::min(m, rows);
}

}  // namespace

LowpGemmImpl lowp_gemm_impl(DType dt) {
  const auto forced = static_cast<LowpGemmImpl>(impl_flag().load(std::memory_order_relaxed));
  if (forced != LowpGemmImpl::Auto) return forced;
  return onednn_has_native(dt) && cpu_capability() == CpuCapability::AVX512 ? LowpGemmImpl::OneDnn
                                                                             : LowpGemmImpl::Float32;
}

void set_lowp_gemm_impl(LowpGemmImpl impl) {
  impl_flag().store(static_cast<int>(impl == LowpGemmImpl::Auto ? env_impl() : impl), std::memory_order_relaxed);
}

std::string onednn_isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

bool onednn_has_native(DType dt) {
  if (dt != kBFloat16) return false;  // oneDNN 2.6 has no float16 CPU kernels
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;
}

bool gemm_lowp(const Tensor& out, const Tensor& a, const Tensor& b, float alpha, float beta) {
  const DType dt = a.dtype();
  if ((dt != kBFloat16 && dt != kFloat16) || b.dtype() != dt || out.dtype() != kFloat32) return false;
  if (lowp_gemm_impl(dt) != LowpGemmImpl::OneDnn) return false;
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  if (m == 0 || n == 0 || k == 0) return false;
  const DT ddt = dt == kBFloat16 ? DT::bf16 : DT::f16;
  const int64_t rows = block_rows(m, n, k);
  const int64_t blocks = ceil_div(m, rows);
  const PlanKey full{ddt, rows, k, n, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1), alpha, beta};
  PlanKey tail = full;
  tail.rows = m - (blocks - 1) * rows;
  const std::shared_ptr<const Plan> full_plan = plan_for(full);
  const std::shared_ptr<const Plan> tail_plan = tail.rows == rows ? full_plan : plan_for(tail);
  if (!full_plan || !tail_plan) return false;

  // Element offsets of every batch matrix of a and b (their batch dims broadcast to out's).
  const int64_t batch_dims = out.dim() - 2;
  const int64_t batches = out.numel() / (m * n);
  std::vector<int64_t> a_off(static_cast<size_t>(batches)), b_off(static_cast<size_t>(batches));
  for (int64_t i = 0; i < batches; ++i) {
    int64_t rest = i, ao = 0, bo = 0;
    for (int64_t d = batch_dims - 1; d >= 0; --d) {
      const int64_t size = out.size(d), idx = rest % size;
      rest /= size;
      ao += idx * a.stride(d);
      bo += idx * b.stride(d);
    }
    a_off[static_cast<size_t>(i)] = ao;
    b_off[static_cast<size_t>(i)] = bo;
  }
  const size_t elem = 2;  // bf16 and fp16
  auto* ap = static_cast<std::byte*>(const_cast<void*>(a.data_ptr()));
  auto* bp = static_cast<std::byte*>(const_cast<void*>(b.data_ptr()));
  float* cp = out.data_ptr<float>();
  parallel_for(0, batches * blocks, 1, [&](int64_t begin, int64_t end) {
    OneOmpThread single_thread;
    dnnl::stream stream(cpu_engine());
    thread_local std::vector<std::byte> scratch_buffer;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bi = task / blocks, blk = task % blocks;
      const Plan& p = blk == blocks - 1 ? *tail_plan : *full_plan;
      const int64_t r0 = blk * rows;
      memory am(p.a, cpu_engine(), ap + (a_off[static_cast<size_t>(bi)] + r0 * a.stride(-2)) * elem);
      memory bm(p.b, cpu_engine(), bp + b_off[static_cast<size_t>(bi)] * elem);
      memory cm(p.c, cpu_engine(), cp + (bi * m + r0) * n);
      scratch_buffer.resize(std::max<size_t>(p.scratch.get_size(), 1));
      memory sm(p.scratch, cpu_engine(), scratch_buffer.data());
      p.prim.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}, {DNNL_ARG_SCRATCHPAD, sm}});
      stream.wait();  // the next block reuses this thread's scratchpad
    }
    stream.wait();
  });
  return true;
}

}  // namespace ember::kernels::cpu
