#include "ember/kernels/cpu/optim.h"

#include <cmath>
#include <type_traits>

#include "ember/core/parallel.h"
#include "ember/kernels/cpu/vec.h"
#include "ember/kernels/cpu/dispatch.h"

namespace ember::kernels::cpu::EMBER_CPU_NS {  // compiled per ISA level (kernels/cpu/isa.h)
namespace {

// Elements per parallel chunk: fixed, so chunking never depends on the thread count
// (each element's update is independent anyway).
constexpr int64_t kGrain = 32768;

template <typename T>
T* ptr(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

// Dispatches float32/float64 and runs body(T*, ..., begin, end) over fixed chunks.
template <typename F>
void run(const Tensor& param, const char* op, F&& body) {
  const DType dt = param.dtype();
  EMBER_CHECK(dt == kFloat32 || dt == kFloat64, "[", op, "] parameters must be float32 or float64, got ", dt);
  if (dt == kFloat32) {
    parallel_for(0, param.numel(), kGrain, [&](int64_t b, int64_t e) { body(TypeTag<float>{}, b, e); });
  } else {
    parallel_for(0, param.numel(), kGrain, [&](int64_t b, int64_t e) { body(TypeTag<double>{}, b, e); });
  }
}

}  // namespace

void adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
               const Tensor& max_exp_avg_sq, const AdamStep& s) {
  const double bc1 = 1 - std::pow(s.beta1, static_cast<double>(s.step));
  const double bc2 = 1 - std::pow(s.beta2, static_cast<double>(s.step));
  const double step_size = s.lr / bc1;
  const double bc2_sqrt = std::sqrt(bc2);
  run(param, "adam_step", [&](auto tag, int64_t b, int64_t e) {
    using T = typename decltype(tag)::type;
    T* p = ptr<T>(param);
    const T* g = ptr<T>(grad);
    T* m = ptr<T>(exp_avg);
    T* v = ptr<T>(exp_avg_sq);
    T* vmax = ptr<T>(max_exp_avg_sq);
    const T beta1 = T(s.beta1), one_m_beta1 = T(1 - s.beta1);
    const T beta2 = T(s.beta2), one_m_beta2 = T(1 - s.beta2);
    const T wd = T(s.weight_decay), decay = T(1 - s.lr * s.weight_decay);
    const T bc2s = T(bc2_sqrt), eps = T(s.eps), neg_step = T(-step_size);
    const bool l2 = !s.decoupled && s.weight_decay != 0;
    int64_t i = b;
#if EMBER_HAVE_VEC
    // std::sqrt keeps GCC from vectorising (errno), so float32, the hot case, is written
    // with intrinsics; the operation order is the same as in the scalar loop below.
    if constexpr (std::is_same_v<T, float>) {
      using namespace vec;
      const VecF vbeta1 = set1(beta1), v1mb1 = set1(one_m_beta1), vbeta2 = set1(beta2);
      const VecF v1mb2 = set1(one_m_beta2), vwd = set1(wd), vdecay = set1(decay), vbc2s = set1(bc2s);
      const VecF veps = set1(eps), vneg_step = set1(neg_step), vneg1 = set1(-1.0f);
      for (; i + kLanes <= e; i += kLanes) {
        VecF gi = load(g + i);
        if (s.maximize) gi = mul(gi, vneg1);
        VecF pi = load(p + i);
        if (s.decoupled) pi = mul(pi, vdecay);
        if (l2) gi = fmadd(vwd, pi, gi);
        const VecF mi = fmadd(v1mb1, gi, mul(load(m + i), vbeta1));
        const VecF vi = add(mul(load(v + i), vbeta2), mul(mul(v1mb2, gi), gi));
        store(m + i, mi);
        store(v + i, vi);
        VecF denom_base = vi;
        if (s.amsgrad) {
          denom_base = max(load(vmax + i), vi);
          store(vmax + i, denom_base);
        }
        const VecF denom = add(div(vec::sqrt(denom_base), vbc2s), veps);
        store(p + i, add(pi, div(mul(vneg_step, mi), denom)));
      }
    }
#endif
    for (; i < e; ++i) {
      T gi = s.maximize ? -g[i] : g[i];
      T pi = p[i];
      if (s.decoupled) pi = pi * decay;
      if (l2) gi = std::fma(wd, pi, gi);
      const T mi = std::fma(one_m_beta1, gi, m[i] * beta1);
      const T vi = v[i] * beta2 + (one_m_beta2 * gi) * gi;
      m[i] = mi;
      v[i] = vi;
      T denom_base = vi;
      if (s.amsgrad) {
        denom_base = vmax[i] > vi ? vmax[i] : vi;  // as _mm*_max_ps: NaN in vi propagates
        vmax[i] = denom_base;
      }
      const T denom = std::sqrt(denom_base) / bc2s + eps;
      p[i] = pi + (neg_step * mi) / denom;
    }
  });
}

void sgd_step(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const SgdStep& s) {
  run(param, "sgd_step", [&](auto tag, int64_t b, int64_t e) {
    using T = typename decltype(tag)::type;
    T* p = ptr<T>(param);
    const T* g = ptr<T>(grad);
    T* buf = ptr<T>(momentum_buffer);
    const T wd = T(s.weight_decay), mom = T(s.momentum), one_m_damp = T(1 - s.dampening);
    const T neg_lr = T(-s.lr);
    // The options are read into locals (and the loop instantiated per combination) so that
    // no flag is reloaded inside the loop and each variant vectorises.
    const bool use_wd = s.weight_decay != 0, use_mom = s.momentum != 0;
    auto loop = [&](auto maximize, auto wd_on, auto mom_on, auto init, auto nesterov) {
      for (int64_t i = b; i < e; ++i) {
        T d = maximize ? -g[i] : g[i];
        if constexpr (decltype(wd_on)::value) d = std::fma(wd, p[i], d);
        if constexpr (decltype(mom_on)::value) {
          const T bi = init ? d : std::fma(one_m_damp, d, buf[i] * mom);
          buf[i] = bi;
          d = nesterov ? std::fma(mom, bi, d) : bi;
        }
        p[i] = std::fma(neg_lr, d, p[i]);
      }
    };
    using Yes = std::true_type;
    using No = std::false_type;
    const bool maximize = s.maximize, init = s.init_buffer, nesterov = s.nesterov;
    if (use_mom && !use_wd) loop(maximize, No{}, Yes{}, init, nesterov);
    else if (use_mom) loop(maximize, Yes{}, Yes{}, init, nesterov);
    else if (use_wd) loop(maximize, Yes{}, No{}, false, false);
    else loop(maximize, No{}, No{}, false, false);
  });
}

void rmsprop_step(const Tensor& param, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
                  const Tensor& momentum_buffer, const RmspropStep& s) {
  run(param, "rmsprop_step", [&](auto tag, int64_t b, int64_t e) {
    using T = typename decltype(tag)::type;
    T* p = ptr<T>(param);
    const T* g = ptr<T>(grad);
    T* sq = ptr<T>(square_avg);
    T* ga = ptr<T>(grad_avg);
    T* buf = ptr<T>(momentum_buffer);
    const T wd = T(s.weight_decay), alpha = T(s.alpha), one_m_alpha = T(1 - s.alpha);
    const T eps = T(s.eps), mom = T(s.momentum), neg_lr = T(-s.lr);
    const bool use_wd = s.weight_decay != 0, use_mom = s.momentum > 0;
    const bool maximize = s.maximize, centered = s.centered;  // locals: not reloaded per element
    for (int64_t i = b; i < e; ++i) {
      T gi = maximize ? -g[i] : g[i];
      if (use_wd) gi = std::fma(wd, p[i], gi);
      const T si = sq[i] * alpha + (one_m_alpha * gi) * gi;
      sq[i] = si;
      T avg;
      if (centered) {
        const T gai = std::fma(one_m_alpha, gi, ga[i] * alpha);
        ga[i] = gai;
        avg = std::sqrt(si + (T(-1) * gai) * gai);
      } else {
        avg = std::sqrt(si);
      }
      avg = avg + eps;
      if (use_mom) {
        const T bi = buf[i] * mom + gi / avg;
        buf[i] = bi;
        p[i] = std::fma(neg_lr, bi, p[i]);
      } else {
        p[i] = p[i] + (neg_lr * gi) / avg;
      }
    }
  });
}

void adagrad_step(const Tensor& param, const Tensor& grad, const Tensor& sum, const AdagradStep& s) {
  run(param, "adagrad_step", [&](auto tag, int64_t b, int64_t e) {
    using T = typename decltype(tag)::type;
    T* p = ptr<T>(param);
    const T* g = ptr<T>(grad);
    T* acc = ptr<T>(sum);
    const T wd = T(s.weight_decay), eps = T(s.eps), neg_clr = T(-s.clr);
    const bool use_wd = s.weight_decay != 0, maximize = s.maximize;  // locals: not reloaded per element
    for (int64_t i = b; i < e; ++i) {
      T gi = maximize ? -g[i] : g[i];
      if (use_wd) gi = std::fma(wd, p[i], gi);
      const T si = acc[i] + gi * gi;
      acc[i] = si;
      const T std_i = std::sqrt(si) + eps;
      p[i] = p[i] + (neg_clr * gi) / std_i;
    }
  });
}

}  // namespace ember::kernels::cpu::EMBER_CPU_NS
