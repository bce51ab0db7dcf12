// The int8 GEMM entry point: ember's own kernel for few rows, oneDNN's int8 matmul for more
// (Note [int8 GEMM] in qgemm.h).

#include "ember/kernels/cpu/qgemm.h"

#include <algorithm>
#include <array>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <omp.h>
#include <vector>

#include "ember/core/parallel.h"

namespace ember::kernels::cpu {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using DT = memory::data_type;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

struct Plan {
  memory::desc a, b, c, scratch;
  dnnl::matmul prim;
};

// Primitives by (M, N, K) and by whether the caller is inside an OpenMP parallel region (the
// quantized convolution's chunks): oneDNN sizes a primitive's scratchpad for the threads it
// may use when it is created -- one inside a parallel region, all of them outside -- so a
// primitive made inside one must not run outside it. Creating one costs tens of microseconds; a
// model sees few shapes. A server with many batch sizes could see many, so the cache starts
// over past kMaxPlans (plans in use stay alive through their shared_ptr).
constexpr size_t kMaxPlans = 256;

std::shared_ptr<const Plan> plan_for(int64_t M, int64_t N, int64_t K) {
  static std::mutex mu;
  static std::map<std::array<int64_t, 4>, std::shared_ptr<const Plan>> cache;
  const std::array<int64_t, 4> key{M, N, K, omp_in_parallel() ? 1 : 0};
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= kMaxPlans && cache.find(key) == cache.end()) cache.clear();
  auto& slot = cache[key];
  if (!slot) {
    auto p = std::make_shared<Plan>();
    p->a = memory::desc({M, K}, DT::u8, Tag::ab);
    p->b = memory::desc({K, N}, DT::s8, Tag::ba);  // b^T: [K, N] read from b's [N, K] rows
    p->c = memory::desc({M, N}, DT::s32, Tag::ab);
    // A scratchpad of the caller's (thread-local, below), not the library's: oneDNN shares its
    // own between primitives unless built with ONEDNN_ENABLE_CONCURRENT_EXEC, so two threads
    // running products at once (the quantized convolution's chunks, two requests in a server)
    // would write into each other's buffers.
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p->a, p->b, p->c), attr, cpu_engine());
    p->scratch = pd.scratchpad_desc();
    p->prim = dnnl::matmul(pd);
    slot = std::move(p);
  }
  return slot;
}

}  // namespace

void gemm_u8s8s32(int64_t M, int64_t N, int64_t K, const uint8_t* a, const int8_t* b, int32_t* c) {
  if (M < kQGemvMaxRows) {
    // oneDNN's GEMM repacks the weights on every call, which costs more than the product
    // itself for a few rows; one pass over them in place is memory-bound instead.
    const int64_t grain = std::max<int64_t>(4, (int64_t{1} << 16) / std::max<int64_t>(K * M, 1)) / 4 * 4;
    parallel_for(0, N, grain, [&](int64_t n0, int64_t n1) { qgemv_u8s8s32(M, n0, n1, N, K, a, b, c); });
    return;
  }
  const std::shared_ptr<const Plan> plan = plan_for(M, N, K);
  const Plan& p = *plan;
  dnnl::stream stream(cpu_engine());
  memory am(p.a, cpu_engine(), const_cast<uint8_t*>(a));
  memory bm(p.b, cpu_engine(), const_cast<int8_t*>(b));
  memory cm(p.c, cpu_engine(), c);
  thread_local std::vector<uint8_t> scratch_buffer;
  scratch_buffer.resize(std::max<size_t>(p.scratch.get_size(), 1));
  memory sm(p.scratch, cpu_engine(), scratch_buffer.data());
  p.prim.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}, {DNNL_ARG_SCRATCHPAD, sm}});
  stream.wait();
}

}  // namespace ember::kernels::cpu
