// oneDNN convolution kernels (float32, and bfloat16 with float32 accumulation).
//
// Note [oneDNN convolution]: oneDNN's direct convolution kernels want activations in a
// channel-blocked layout (nChw16c), and its own threading splits the weight-gradient
// reduction over however many threads there are, so its results would change with the
// thread count. ember therefore
//   - cuts the batch into chunks whose size depends only on the batch size (kChunks),
//   - creates every primitive while OpenMP is limited to one thread, so oneDNN plans a
//     single-threaded kernel whatever the user's thread count,
//   - runs each chunk on one thread (reorder NCHW -> blocked, convolve, reorder back), and
//   - for the weight gradient, adds the chunks' partial sums in chunk order afterwards.
// A chunk's result depends only on its images and the plan, never on which thread ran it,
// so 1 and N threads give the same bits. Primitives are cached per geometry, chunk size and
// dtype.
//
// Note [bf16 convolution]: with bfloat16 activations and weights, oneDNN's AVX512-BF16 / AMX
// kernels multiply bf16 pairs exactly and accumulate in float32; the forward and input-
// gradient maps round their result to bf16 once, like the float32 fallback (convert, convolve
// in float32, round). The weight gradient's chunks write float32 partial sums, added in chunk
// order as above and rounded once at the end. The bias stays float32 (exact conversion). The
// path runs only where oneDNN has native bf16 instructions and ember's CPU level is avx512
// (the same choice as Note [Low-precision GEMM]); elsewhere the ops use the fallback.

#include "ember/kernels/cpu/conv_dnnl.h"

#include <dnnl.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/kernels/cpu/gemm_lowp.h"
#include "ember/kernels/cpu/one_thread.h"
#include "ember/kernels/cpu/plane_sum.h"
#include "ember/kernels/cpu/pool.h"

namespace ember::kernels::cpu {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using DT = memory::data_type;

// At most this many chunks per batch: enough to keep a few threads busy, few enough that
// each chunk holds several images (oneDNN's kernels are faster on more than one) and the
// weight gradient has few partial sums to add.
constexpr int64_t kChunks = 8;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Whether oneDNN's blocked kernels are worth it: with few channels the blocked layout is
// mostly padding and im2col + GEMM is as fast.
bool eligible(const ConvGeometry& g) {
  return g.groups == 1 && g.in_channels >= 16 && g.out_channels >= 16 && g.batch >= 1 && g.out_h > 0 &&
         g.out_w > 0;
}

// EMBER_CONV_IMPL: "im2col" turns the oneDNN path off; "direct" keeps oneDNN but never
// Winograd (Note [Winograd convolution]).
bool env_impl_is(const char* name) {
  const char* v = std::getenv("EMBER_CONV_IMPL");
  return v && std::strcmp(v, name) == 0;
}
bool env_enabled() { return !env_impl_is("im2col"); }
bool env_winograd() { return env_enabled() && !env_impl_is("direct"); }

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> flag{env_enabled()};
  return flag;
}

std::atomic<bool>& winograd_flag() {
  static std::atomic<bool> flag{env_winograd()};
  return flag;
}

// Note [Winograd convolution]: for float32 3x3 convolutions with stride 1 and no dilation,
// oneDNN has Winograd F(4x4, 3x3) kernels for AVX-512 (jit_wino_4x3) for the forward, input-
// gradient and weight-gradient maps. They multiply 2.25x fewer times than the direct kernels;
// measured on one Zen 4 core for chunks of 8 images, the three maps take 0.6-0.9x the direct
// kernels' time on 7x7 and 14x14 maps of 16-128 channels and 0.4-0.85x on 28x28 maps (the
// main job's 32->64 layer: 0.67 / 0.71-0.85 / 0.62), and never more in the layers tried,
// so they are the default where oneDNN offers them (elsewhere, and on CPUs without AVX-512,
// the plan falls back to the direct kernels). Each chunk still runs single-threaded with a
// plan fixed by the shapes, so results stay bit-identical for any thread count. The
// transforms round differently from a direct sum: against a float64 reference the error is
// 0.6-2e-6 of the largest output, 2-6x the direct kernels' (ConvDeterminism.
// WinogradAgainstDirectAndFloat64 holds it under 2e-5 and 16x the direct error). EMBER_CONV_IMPL=direct, or set_dnnl_winograd_enabled(false), keeps the
// direct kernels; bfloat16 always uses them (oneDNN has no bf16 Winograd).
bool winograd_shape(const ConvGeometry& g) {
  return g.kernel_h == 3 && g.kernel_w == 3 && g.stride_h == 1 && g.stride_w == 1 && g.dil_h == 1 && g.dil_w == 1 &&
         g.groups == 1;
}

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// 64-byte aligned scratch that only grows (one per thread and purpose).
class Buffer {
 public:
  void* get(size_t bytes) {
    if (bytes > size_) {
      data_.reset(static_cast<std::byte*>(::operator new(bytes, std::align_val_t{64})));
      size_ = bytes;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(std::byte* p) const { ::operator delete(p, std::align_val_t{64}); }
  };
  std::unique_ptr<std::byte, Free> data_;
  size_t size_ = 0;
};

struct ThreadState {
  std::optional<dnnl::stream> stream;
  Buffer in1, in2, out, scratch;
  // One chunk's whole convolution output, or its gradient, in the user's layout, where a
  // max-pool reads it (Note [Convolution, then a max-pool] in conv.cpp).
  Buffer unpooled;
  dnnl::stream& get_stream() {
    if (!stream) stream.emplace(cpu_engine());
    return *stream;
  }
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

enum class Kind { Forward, Input, Weight };

// A reorder between a user layout and the layout a convolution asked for; `identity` when
// they are the same and the user buffer is used directly.
struct Reorder {
  bool identity = true;
  dnnl::reorder prim;
  void make(const memory::desc& from, const memory::desc& to, const dnnl::primitive_attr& attr,
            size_t& scratch_bytes) {
    identity = from == to;
    if (identity) return;
    dnnl::reorder::primitive_desc pd(cpu_engine(), from, cpu_engine(), to, attr);
    scratch_bytes = std::max(scratch_bytes, pd.scratchpad_desc().get_size());
    prim = dnnl::reorder(pd);
  }
};

// Everything one kind of convolution needs for chunks of `mb` images.
//   Forward: in1 = x, w = weight, out = y.     Input: in1 = dy, w = weight, out = dx.
//   Weight:  in1 = x, in2 = dy, out = dw.
struct Plan {
  dnnl::primitive conv;
  int arg_in1 = 0, arg_in2 = 0, arg_out = 0;
  memory::desc in1_user, in1_conv, in2_user, in2_conv, out_conv, out_user, w_user, w_conv;
  Reorder r_in1, r_in2, r_out, r_w;
  size_t scratch_bytes = 0;
  memory::desc scratch_md;
};

using Key = std::array<int64_t, 20>;

Key make_key(Kind kind, const ConvGeometry& g, int64_t mb, bool bias, DT dt, bool winograd) {
  return {static_cast<int64_t>(kind), mb, g.in_channels, g.in_h, g.in_w, g.out_channels, g.out_h, g.out_w,
          g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.dil_h, g.dil_w, g.groups,
          bias ? 1 : 0, static_cast<int64_t>(dt), winograd ? 1 : 0};
}

// dt: the activations' and weights' type (f32 or bf16). The bias and a weight gradient are
// float32 either way (Note [bf16 convolution]).
std::shared_ptr<const Plan> build_plan(Kind kind, const ConvGeometry& g, int64_t mb, bool bias, DT dt,
                                       dnnl::algorithm alg) {
  const memory::dims x_dims{mb, g.in_channels, g.in_h, g.in_w};
  const memory::dims y_dims{mb, g.out_channels, g.out_h, g.out_w};
  const memory::dims w_dims{g.out_channels, g.in_channels, g.kernel_h, g.kernel_w};
  const memory::dims strides{g.stride_h, g.stride_w};
  const memory::dims dilates{g.dil_h - 1, g.dil_w - 1};
  const memory::dims pad_l{g.pad_h, g.pad_w};
  // The right/bottom padding that makes oneDNN's size formula give PyTorch's output size.
  const memory::dims pad_r{(g.out_h - 1) * g.stride_h + (g.kernel_h - 1) * g.dil_h + 1 - g.in_h - g.pad_h,
                           (g.out_w - 1) * g.stride_w + (g.kernel_w - 1) * g.dil_w + 1 - g.in_w - g.pad_w};
  if (pad_r[0] < 0 || pad_r[1] < 0) return nullptr;

  const memory::desc x_user(x_dims, dt, Tag::nchw), y_user(y_dims, dt, Tag::nchw), w_user(w_dims, dt, Tag::oihw),
      b_user({g.out_channels}, DT::f32, Tag::x);
  const memory::desc x_any(x_dims, dt, Tag::any), y_any(y_dims, dt, Tag::any), w_any(w_dims, dt, Tag::any);
  const memory::desc dw_user(w_dims, DT::f32, Tag::oihw), dw_any(w_dims, DT::f32, Tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);

  const auto fwd_desc =
      bias && kind == Kind::Forward
          ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, x_any, w_any, b_user, y_any,
                                            strides, dilates, pad_l, pad_r)
          : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, x_any, w_any, y_any, strides,
                                            dilates, pad_l, pad_r);
  const dnnl::convolution_forward::primitive_desc fwd_pd(fwd_desc, attr, cpu_engine());

  auto plan = std::make_shared<Plan>();
  Plan& p = *plan;
  size_t scratch = 0;
  // Takes the primitive and the layouts it chose for each operand.
  auto adopt = [&](const auto& pd, dnnl::primitive conv) {
    p.conv = std::move(conv);
    scratch = pd.scratchpad_desc().get_size();
    auto layout = [&](int arg) { return pd.query_md(dnnl::query::exec_arg_md, arg); };
    p.in1_conv = layout(p.arg_in1);
    if (p.arg_in2) p.in2_conv = layout(p.arg_in2);
    p.out_conv = layout(p.arg_out);
    if (kind != Kind::Weight) p.w_conv = layout(DNNL_ARG_WEIGHTS);
  };
  p.w_user = kind == Kind::Weight ? dw_user : w_user;
  switch (kind) {
    case Kind::Forward:
      p.arg_in1 = DNNL_ARG_SRC, p.in1_user = x_user;
      p.arg_out = DNNL_ARG_DST, p.out_user = y_user;
      adopt(fwd_pd, dnnl::convolution_forward(fwd_pd));
      break;
    case Kind::Input: {
      p.arg_in1 = DNNL_ARG_DIFF_DST, p.in1_user = y_user;
      p.arg_out = DNNL_ARG_DIFF_SRC, p.out_user = x_user;
      const dnnl::convolution_backward_data::desc d(alg, x_any, w_any, y_any, strides, dilates, pad_l, pad_r);
      const dnnl::convolution_backward_data::primitive_desc pd(d, attr, cpu_engine(), fwd_pd);
      adopt(pd, dnnl::convolution_backward_data(pd));
      break;
    }
    case Kind::Weight: {
      p.arg_in1 = DNNL_ARG_SRC, p.in1_user = x_user;
      p.arg_in2 = DNNL_ARG_DIFF_DST, p.in2_user = y_user;
      p.arg_out = DNNL_ARG_DIFF_WEIGHTS, p.out_user = dw_user;
      const dnnl::convolution_backward_weights::desc d(alg, x_any, dw_any, y_any, strides, dilates, pad_l, pad_r);
      const dnnl::convolution_backward_weights::primitive_desc pd(d, attr, cpu_engine(), fwd_pd);
      adopt(pd, dnnl::convolution_backward_weights(pd));
      break;
    }
  }
  p.r_in1.make(p.in1_user, p.in1_conv, attr, scratch);
  if (kind == Kind::Weight) p.r_in2.make(p.in2_user, p.in2_conv, attr, scratch);
  p.r_out.make(p.out_conv, p.out_user, attr, scratch);
  if (kind != Kind::Weight) p.r_w.make(p.w_user, p.w_conv, attr, scratch);
  p.scratch_bytes = scratch;
  p.scratch_md = memory::desc({static_cast<memory::dim>(std::max<size_t>(scratch, 1))}, DT::u8, Tag::x);
  return plan;
}

// The cached plan for a geometry, or null when oneDNN cannot take it. Plans are built with
// OpenMP limited to one thread (Note [oneDNN convolution]).
std::shared_ptr<const Plan> get_plan(Kind kind, const ConvGeometry& g, int64_t mb, bool bias, DT dt) {
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const Plan>> cache;
  // Note [Winograd convolution]
  const bool winograd = dt == DT::f32 && winograd_shape(g) && winograd_flag().load(std::memory_order_relaxed);
  const Key key = make_key(kind, g, mb, bias, dt, winograd);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::shared_ptr<const Plan> plan;
  OneOmpThread one_thread;
  if (winograd) {
    try {
      plan = build_plan(kind, g, mb, bias, dt, dnnl::algorithm::convolution_winograd);
    } catch (const dnnl::error&) {
      plan = nullptr;  // no Winograd kernel for this CPU or shape: the direct kernels below
    }
  }
  if (!plan) {
    try {
      plan = build_plan(kind, g, mb, bias, dt, dnnl::algorithm::convolution_direct);
    } catch (const dnnl::error&) {
      plan = nullptr;  // not supported here (ISA, shape): the im2col path takes it
    }
  }
  if (cache.size() >= 256) cache.clear();  // many distinct shapes: start over
  cache.emplace(key, plan);
  return plan;
}

void run_reorder(const Reorder& r, dnnl::stream& s, const memory& from, const memory& to, const memory& scratch) {
  r.prim.execute(s, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, scratch}});
}

// The weight (OIHW) in the layout plan p's map wants: w itself, or a copy reordered once per
// call into a per-thread buffer (valid until the calling thread's next call).
const void* weight_in_plan_layout(const Plan& p, const void* w) {
  if (p.r_w.identity) return w;
  thread_local Buffer weight_storage;
  OneOmpThread one_thread;
  ThreadState& ts = thread_state();
  dnnl::engine& eng = cpu_engine();
  const memory from(p.w_user, eng, const_cast<void*>(w));
  const memory to(p.w_conv, eng, weight_storage.get(p.w_conv.get_size()));
  const memory scratch(p.scratch_md, eng, ts.scratch.get(std::max<size_t>(p.scratch_bytes, 1)));
  run_reorder(p.r_w, ts.get_stream(), from, to, scratch);
  ts.get_stream().wait();
  return to.get_data_handle();
}

// The partial results of a float32 weight gradient cut into `chunks` batch chunks (Note
// [oneDNN convolution]): chunk c writes its dw partial into row(c) (dw itself when there is
// one chunk) and, where the bias gradient is wanted, takes its bias sums with add_bias();
// finish() adds both in chunk order.
class WeightGradParts {
 public:
  WeightGradParts(float* dw, float* dbias, int64_t chunks, const ConvGeometry& g)
      : dw_(dw), dbias_(dbias), chunks_(chunks), wsize_(g.out_channels * g.in_channels * g.kernel_h * g.kernel_w),
        g_(g), bias_(dbias ? static_cast<size_t>(chunks * g.out_channels) : 0) {
    // Not value-initialised: every chunk writes its whole row (zeroing 590 KB of partials per
    // call of a 64x32x3x3 layer's weight gradient was serial time on the calling thread).
    if (chunks > 1) all_.reset(new float[static_cast<size_t>(chunks * wsize_)]);
  }
  float* row(int64_t c) { return chunks_ > 1 ? all_.get() + c * wsize_ : dw_; }
  int64_t row_size() const { return wsize_; }
  // Chunk c's bias sums over its `images` images of dy (before dy's reorder, which then finds
  // the chunk in cache); nothing when the bias gradient is not wanted.
  void add_bias(int64_t c, const float* dy, int64_t images) {
    if (!dbias_) return;
    const int64_t ohw = g_.out_h * g_.out_w, image = g_.out_channels * ohw;
    double* part = bias_.data() + c * g_.out_channels;
    std::fill(part, part + g_.out_channels, 0.0);
    for (int64_t i = 0; i < images; ++i) add_plane_sums(part, dy + i * image, g_.out_channels, ohw);
  }
  void finish() {
    if (dbias_) sum_chunk_partials(bias_.data(), chunks_, g_.out_channels, dbias_);
    if (chunks_ == 1) return;
    // Each element's partials added in chunk order, the elements split between threads.
    const float* parts = all_.get();
    parallel_for(0, wsize_, 4096, [&](int64_t b, int64_t e) {
      std::copy(parts + b, parts + e, dw_ + b);
      for (int64_t c = 1; c < chunks_; ++c) {
        const float* p = parts + c * wsize_;
        for (int64_t i = b; i < e; ++i) dw_[i] += p[i];
      }
    });
  }

 private:
  float* dw_;
  float* dbias_;
  int64_t chunks_, wsize_;
  const ConvGeometry& g_;
  std::unique_ptr<float[]> all_;
  std::vector<double> bias_;
};

// Runs fn(c, thread state, stream) for the chunks c < chunks, each chunk on one thread with
// OpenMP limited to it (Note [oneDNN convolution]); each thread waits for its stream.
template <typename F>
void for_each_chunk(int64_t chunks, F&& fn) {
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    OneOmpThread one_thread;
    ThreadState& ts = thread_state();
    dnnl::stream& s = ts.get_stream();
    for (int64_t c = c0; c < c1; ++c) {
      fn(c, ts, s);
      s.wait();
    }
  });
}

// A 2x2 / stride-2 max-pool of a convolution's output (Note [Convolution, then a max-pool]
// in conv.cpp): pooled [batch, out_channels, g.out_h / 2, g.out_w / 2] and the window
// offsets (uint8, may be null) of the forward, or the pooled gradient and those offsets
// in the backward. pg: the pool on one plane.
struct PooledOut {
  float* pooled;
  uint8_t* offsets;
  const PoolGeometry& pg;
};
struct PooledGrad {
  const float* grad;
  const uint8_t* offsets;
  const PoolGeometry& pg;
};

// Runs `kind` over the batch in chunks. in1/in2 point at the batch's first image; out is
// written per chunk (Forward/Input: the chunk's images; Weight: row c of [chunks, weight]).
// w: the weight in OIHW (Forward/Input). Sizes count elements of dt (Weight's out: floats).
struct ChunkRun {
  Kind kind;
  const ConvGeometry& g;
  DT dt;
  const void* in1;
  int64_t in1_image;  // elements per image of in1
  const void* in2;
  int64_t in2_image;
  const void* w;
  const float* bias;
  void* out;
  int64_t out_image;  // elements per image of out (Forward/Input); per chunk for Weight
  WeightGradParts* parts = nullptr;  // Weight, float32: takes each chunk's bias sums
  // Forward, float32: where set, each chunk's output goes to a per-thread buffer and is
  // max-pooled from there into pooled (and the window offsets, unless null); out unused.
  const PooledOut* pool = nullptr;
};

size_t elem_size(DT dt) { return dt == DT::f32 ? 4 : 2; }

// p + i elements of type dt, as oneDNN's void* handle.
void* at(const void* p, int64_t i, DT dt) {
  return static_cast<std::byte*>(const_cast<void*>(p)) + static_cast<size_t>(i) * elem_size(dt);
}

bool run_chunks(const ChunkRun& r) {
  const ConvGeometry& g = r.g;
  const int64_t mb = ceil_div(g.batch, kChunks);
  const int64_t chunks = ceil_div(g.batch, mb);
  const int64_t tail = g.batch - (chunks - 1) * mb;
  const bool bias = r.bias != nullptr;
  const auto full_plan = get_plan(r.kind, g, mb, bias, r.dt);
  const auto tail_plan = tail == mb ? full_plan : get_plan(r.kind, g, tail, bias, r.dt);
  if (!full_plan || !tail_plan) return false;
  dnnl::engine& eng = cpu_engine();
  // Forward/Input: the weight in the layout the plans chose (oneDNN picks it from the shapes
  // and ISA, so the full and tail plans normally agree), reordered once per call.
  const void* w_conv = r.w;
  if (r.kind != Kind::Weight) {
    if (!(tail_plan->w_conv == full_plan->w_conv)) return false;
    w_conv = weight_in_plan_layout(*full_plan, r.w);
  }
  for_each_chunk(chunks, [&](int64_t c, ThreadState& ts, dnnl::stream& s) {
    const Plan& p = c == chunks - 1 ? *tail_plan : *full_plan;
    const int64_t n0 = c * mb;
    const memory scratch(p.scratch_md, eng, ts.scratch.get(std::max<size_t>(p.scratch_bytes, 1)));
    const memory in1_user(p.in1_user, eng, at(r.in1, n0 * r.in1_image, r.dt));
    memory in1 = in1_user;
    if (!p.r_in1.identity) {
      in1 = memory(p.in1_conv, eng, ts.in1.get(p.in1_conv.get_size()));
      run_reorder(p.r_in1, s, in1_user, in1, scratch);
    }
    const int64_t images = c == chunks - 1 ? g.batch - n0 : mb;
    void* out_ptr = r.kind == Kind::Weight ? at(r.out, c * r.out_image, DT::f32)
                    : r.pool ? ts.unpooled.get(static_cast<size_t>(images * r.out_image) * sizeof(float))
                             : at(r.out, n0 * r.out_image, r.dt);
    const memory out_user(p.out_user, eng, out_ptr);
    const memory out = p.r_out.identity ? out_user : memory(p.out_conv, eng, ts.out.get(p.out_conv.get_size()));
    std::unordered_map<int, memory> args{{p.arg_in1, in1}, {p.arg_out, out}, {DNNL_ARG_SCRATCHPAD, scratch}};
    if (r.kind == Kind::Weight) {
      if (r.parts) r.parts->add_bias(c, static_cast<const float*>(r.in2) + n0 * r.in2_image, images);
      const memory in2_user(p.in2_user, eng, at(r.in2, n0 * r.in2_image, r.dt));
      memory in2 = in2_user;
      if (!p.r_in2.identity) {
        in2 = memory(p.in2_conv, eng, ts.in2.get(p.in2_conv.get_size()));
        run_reorder(p.r_in2, s, in2_user, in2, scratch);
      }
      args.emplace(p.arg_in2, in2);
    } else {
      args.emplace(DNNL_ARG_WEIGHTS, memory(p.w_conv, eng, const_cast<void*>(w_conv)));
      if (bias) {
        args.emplace(DNNL_ARG_BIAS,
                     memory(memory::desc({g.out_channels}, DT::f32, Tag::x), eng, const_cast<float*>(r.bias)));
      }
    }
    p.conv.execute(s, args);
    if (!p.r_out.identity) run_reorder(p.r_out, s, out, out_user, scratch);
    if (r.pool) {  // Note [Convolution, then a max-pool] (conv.cpp)
      s.wait();
      const int64_t pooled_image = g.out_channels * r.pool->pg.out_h * r.pool->pg.out_w;
      max_pool2d_planes(r.pool->pooled + n0 * pooled_image,
                        r.pool->offsets ? r.pool->offsets + n0 * pooled_image : nullptr,
                        static_cast<const float*>(out_ptr), r.pool->pg, images * g.out_channels);
    }
  });
  return true;
}

}  // namespace

bool dnnl_conv_enabled() { return enabled_flag().load(std::memory_order_relaxed); }
bool dnnl_conv_eligible(const ConvGeometry& g) { return dnnl_conv_enabled() && eligible(g); }
void set_dnnl_conv_enabled(bool enabled) { enabled_flag().store(enabled, std::memory_order_relaxed); }
bool dnnl_winograd_enabled() { return winograd_flag().load(std::memory_order_relaxed); }
void set_dnnl_winograd_enabled(bool enabled) { winograd_flag().store(enabled, std::memory_order_relaxed); }

namespace {

DT dnnl_type(DType dt) { return dt == kBFloat16 ? DT::bf16 : DT::f32; }

bool run_forward(DT dt, void* y, const void* x, const void* w, const float* bias, const ConvGeometry& g) {
  return run_chunks({Kind::Forward, g, dt, x, g.in_channels * g.in_h * g.in_w, nullptr, 0, w, bias, y,
                     g.out_channels * g.out_h * g.out_w});
}

bool run_input_grad(DT dt, void* dx, const void* dy, const void* w, const ConvGeometry& g) {
  return run_chunks({Kind::Input, g, dt, dy, g.out_channels * g.out_h * g.out_w, nullptr, 0, w, nullptr, dx,
                     g.in_channels * g.in_h * g.in_w});
}

bool run_weight_grad(DT dt, float* dw, const void* x, const void* dy, const ConvGeometry& g, float* dbias) {
  // Each chunk writes its partial sum into its row of `parts` (Note [oneDNN convolution]);
  // the bias gradient only on the float32 path (the bf16 one passes dbias = nullptr).
  WeightGradParts parts(dw, dbias, ceil_div(g.batch, ceil_div(g.batch, kChunks)), g);
  if (!run_chunks({Kind::Weight, g, dt, x, g.in_channels * g.in_h * g.in_w, dy, g.out_channels * g.out_h * g.out_w,
                   nullptr, nullptr, parts.row(0), parts.row_size(), dbias ? &parts : nullptr})) {
    return false;
  }
  parts.finish();
  return true;
}

// Note [One pass of the backward]: with both the input and the weight gradient wanted (the
// usual training step), each chunk's dy is reordered to the blocked layout once and used by
// both maps while it is in cache, and its bias-gradient sums are taken just before. Run as
// two calls, the batch's dy was reordered twice (a sixth of the 32->64 layer's reorder time)
// and read from memory three times. Chunks, plans and the chunk-order sums of dw and the bias
// are those of the separate calls, so the results are the same bits. Returns false, having
// done nothing, where the two maps want dy in different layouts or oneDNN does not take them.
//
// With `pool`, dy is not given: each chunk's dy is the pool's backward of its images' pooled
// gradient, made in a per-thread buffer (Note [Convolution, then a max-pool] in conv.cpp).
bool run_backward(float* dx, float* dw, float* dbias, const float* x, const float* w, const float* dy,
                  const ConvGeometry& g, const PooledGrad* pool = nullptr) {
  const DT dt = DT::f32;
  const int64_t mb = ceil_div(g.batch, kChunks);
  const int64_t chunks = ceil_div(g.batch, mb);
  const int64_t tail = g.batch - (chunks - 1) * mb;
  const auto in_full = get_plan(Kind::Input, g, mb, false, dt);
  const auto in_tail = tail == mb ? in_full : get_plan(Kind::Input, g, tail, false, dt);
  const auto w_full = get_plan(Kind::Weight, g, mb, false, dt);
  const auto w_tail = tail == mb ? w_full : get_plan(Kind::Weight, g, tail, false, dt);
  if (!in_full || !in_tail || !w_full || !w_tail) return false;
  if (!(in_tail->w_conv == in_full->w_conv)) return false;
  if (!(in_full->in1_conv == w_full->in2_conv) || !(in_tail->in1_conv == w_tail->in2_conv)) return false;
  dnnl::engine& eng = cpu_engine();
  const void* w_conv = weight_in_plan_layout(*in_full, w);
  const int64_t x_image = g.in_channels * g.in_h * g.in_w, y_image = g.out_channels * g.out_h * g.out_w;
  WeightGradParts parts(dw, dbias, chunks, g);
  for_each_chunk(chunks, [&](int64_t c, ThreadState& ts, dnnl::stream& s) {
    const Plan& pi = c == chunks - 1 ? *in_tail : *in_full;
    const Plan& pw = c == chunks - 1 ? *w_tail : *w_full;
    const int64_t n0 = c * mb, images = c == chunks - 1 ? g.batch - n0 : mb;
    const float* dy_c = dy ? dy + n0 * y_image : nullptr;
    if (pool) {
      float* unpooled = static_cast<float*>(ts.unpooled.get(static_cast<size_t>(images * y_image) * sizeof(float)));
      const int64_t pooled_image = g.out_channels * pool->pg.out_h * pool->pg.out_w;
      max_pool2d_backward_planes(unpooled, pool->grad + n0 * pooled_image, pool->offsets + n0 * pooled_image,
                                 pool->pg, images * g.out_channels);
      dy_c = unpooled;
    }
    parts.add_bias(c, dy_c, images);
    void* scratch_ptr = ts.scratch.get(std::max<size_t>({pi.scratch_bytes, pw.scratch_bytes, 1}));
    const memory scratch_i(pi.scratch_md, eng, scratch_ptr), scratch_w(pw.scratch_md, eng, scratch_ptr);
    // An operand in the layout a map wants (reordered into buf unless it is the user's).
    auto operand = [&](const memory::desc& user, const memory::desc& conv, const Reorder& r, const float* data,
                       Buffer& buf, const memory& scratch) {
      const memory m(user, eng, const_cast<float*>(data));
      if (r.identity) return m;
      memory blk(conv, eng, buf.get(conv.get_size()));
      run_reorder(r, s, m, blk, scratch);
      return blk;
    };
    // A map's result: computed in the plan's layout, then reordered to the user's.
    auto result = [&](const Plan& p, float* data, std::unordered_map<int, memory> args, const memory& scratch) {
      const memory user(p.out_user, eng, data);
      const memory out = p.r_out.identity ? user : memory(p.out_conv, eng, ts.out.get(p.out_conv.get_size()));
      args.emplace(p.arg_out, out);
      args.emplace(DNNL_ARG_SCRATCHPAD, scratch);
      p.conv.execute(s, args);
      if (!p.r_out.identity) run_reorder(p.r_out, s, out, user, scratch);
    };
    const memory dy_blk = operand(pi.in1_user, pi.in1_conv, pi.r_in1, dy_c, ts.in2, scratch_i);
    // The input gradient of the chunk, then its weight-gradient partial from the same dy.
    result(pi, dx + n0 * x_image,
           {{DNNL_ARG_DIFF_DST, dy_blk}, {DNNL_ARG_WEIGHTS, memory(pi.w_conv, eng, const_cast<void*>(w_conv))}},
           scratch_i);
    const memory x_blk = operand(pw.in1_user, pw.in1_conv, pw.r_in1, x + n0 * x_image, ts.in1, scratch_w);
    result(pw, parts.row(c), {{DNNL_ARG_SRC, x_blk}, {DNNL_ARG_DIFF_DST, dy_blk}}, scratch_w);
  });
  parts.finish();
  return true;
}

}  // namespace

bool dnnl_conv_backward(float* dx, float* dw, float* dbias, const float* x, const float* w, const float* dy,
                        const ConvGeometry& g) {
  if (!dnnl_conv_enabled() || !eligible(g)) return false;
  return run_backward(dx, dw, dbias, x, w, dy, g);
}

bool dnnl_conv_max_pool_forward(float* pooled, uint8_t* offsets, const float* x, const float* w, const float* bias,
                                const ConvGeometry& g, const PoolGeometry& pg) {
  if (!dnnl_conv_eligible(g)) return false;
  const PooledOut pool{pooled, offsets, pg};
  ChunkRun r{Kind::Forward, g, DT::f32, x, g.in_channels * g.in_h * g.in_w, nullptr, 0, w, bias, nullptr,
             g.out_channels * g.out_h * g.out_w};
  r.pool = &pool;
  return run_chunks(r);
}

bool dnnl_conv_max_pool_backward(float* dx, float* dw, float* dbias, const float* x, const float* w,
                                 const float* grad_pooled, const uint8_t* offsets, const ConvGeometry& g,
                                 const PoolGeometry& pg) {
  if (!dnnl_conv_eligible(g)) return false;
  const PooledGrad pool{grad_pooled, offsets, pg};
  return run_backward(dx, dw, dbias, x, w, nullptr, g, &pool);
}

bool dnnl_conv_forward(float* y, const float* x, const float* w, const float* bias, const ConvGeometry& g) {
  if (!dnnl_conv_enabled() || !eligible(g)) return false;
  return run_forward(DT::f32, y, x, w, bias, g);
}

bool dnnl_conv_input_grad(float* dx, const float* dy, const float* w, const ConvGeometry& g) {
  if (!dnnl_conv_enabled() || !eligible(g)) return false;
  return run_input_grad(DT::f32, dx, dy, w, g);
}

bool dnnl_conv_weight_grad(float* dw, const float* x, const float* dy, const ConvGeometry& g, float* dbias) {
  if (!dnnl_conv_enabled() || !eligible(g)) return false;
  return run_weight_grad(DT::f32, dw, x, dy, g, dbias);
}

bool dnnl_conv_lowp_eligible(DType dt, const ConvGeometry& g) {
  return dt == kBFloat16 && dnnl_conv_enabled() && eligible(g) && lowp_gemm_impl(dt) == LowpGemmImpl::OneDnn;
}

bool dnnl_conv_lowp_forward(DType dt, void* y, const void* x, const void* w, const float* bias,
                            const ConvGeometry& g) {
  if (!dnnl_conv_lowp_eligible(dt, g)) return false;
  return run_forward(dnnl_type(dt), y, x, w, bias, g);
}

bool dnnl_conv_lowp_input_grad(DType dt, void* dx, const void* dy, const void* w, const ConvGeometry& g) {
  if (!dnnl_conv_lowp_eligible(dt, g)) return false;
  return run_input_grad(dnnl_type(dt), dx, dy, w, g);
}

bool dnnl_conv_lowp_weight_grad(DType dt, float* dw, const void* x, const void* dy, const ConvGeometry& g) {
  if (!dnnl_conv_lowp_eligible(dt, g)) return false;
  return run_weight_grad(dnnl_type(dt), dw, x, dy, g, nullptr);
}

}  // namespace ember::kernels::cpu
