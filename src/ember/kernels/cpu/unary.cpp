// Unary element-wise kernels. Float math runs through Sleef's vectorised functions on
// blocks of floats (16-bit types are widened into a float block first, strided inputs
// gathered), so a value gives the same result whatever its position or layout.

#include <cmath>

#include "ember/kernels/cpu/loops.h"
#include "ember/kernels/cpu/pointwise.h"
#include "ember/kernels/cpu/vec.h"

namespace ember::kernels::cpu::EMBER_CPU_NS {  // compiled per ISA level (kernels/cpu/isa.h)

namespace {

constexpr int64_t kBlock = 256;
constexpr float kSqrt1_2 = 0.70710678118654752440f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f;

// Inverse error function: a rational first guess refined by two Newton steps on erf.
template <typename C>
C erfinv_scalar(C y) {
  if (y <= C(-1)) return y == C(-1) ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::quiet_NaN();
  if (y >= C(1)) return y == C(1) ? std::numeric_limits<C>::infinity() : std::numeric_limits<C>::quiet_NaN();
  if (y != y) return y;
  const double yd = static_cast<double>(y);
  double x;
  const double w = -std::log((1.0 - yd) * (1.0 + yd));
  if (w < 5.0) {  // Giles' single-precision approximation, central region
    double ww = w - 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * ww;
    p = -3.5233877e-06 + p * ww;
    p = -4.39150654e-06 + p * ww;
    p = 0.00021858087 + p * ww;
    p = -0.00125372503 + p * ww;
    p = -0.00417768164 + p * ww;
    p = 0.246640727 + p * ww;
    p = 1.50140941 + p * ww;
    x = p * yd;
  } else {  // tail region
    double ww = std::sqrt(w) - 3.0;
    double p = -0.000200214257;
    p = 0.000100950558 + p * ww;
    p = 0.00134934322 + p * ww;
    p = -0.00367342844 + p * ww;
    p = 0.00573950773 + p * ww;
    p = -0.0076224613 + p * ww;
    p = 0.00943887047 + p * ww;
    p = 1.00167406 + p * ww;
    p = 2.83297682 + p * ww;
    x = p * yd;
  }
  constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
  for (int i = 0; i < 2; ++i) {
    const double err = std::erf(x) - yd;
    x -= err / (kTwoOverSqrtPi * std::exp(-x * x));
  }
  return static_cast<C>(x);
}

// Applies a float-math op: sf is the scalar form (generic: float and double), vf the
// vector form on float lanes (or nullptr to use sf on float blocks too).
template <typename SF, typename VF>
void float_math(const ElementwiseIter& it, DType dtype, SF sf, [[maybe_unused]] VF vf) {
  if (dtype == kFloat64) {
    map1<double, double>(it, sf, 8192);
    return;
  }
  // Applies the op to n floats from src into dst (which may be src).
  auto apply_block = [&](const float* src, float* dst, int64_t n) {
#if EMBER_HAVE_VEC
    if constexpr (!std::is_same_v<VF, std::nullptr_t>) {
      int64_t i = 0;
      for (; i + vec::kLanes <= n; i += vec::kLanes) vec::store(dst + i, vf(vec::load(src + i)));
      if (i < n) {  // the tail goes through the same vector code, padded
        alignas(64) float pad[vec::kLanes] = {};
        std::memcpy(pad, src + i, static_cast<size_t>(n - i) * sizeof(float));
        vec::store(pad, vf(vec::load(pad)));
        std::memcpy(dst + i, pad, static_cast<size_t>(n - i) * sizeof(float));
      }
      return;
    }
#endif
    for (int64_t i = 0; i < n; ++i) dst[i] = sf(src[i]);
  };
  dispatch_floating(dtype, "unary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.for_each(
        [&](char** d, const int64_t* s, int64_t n) {
          if constexpr (std::is_same_v<T, float>) {
            if (s[0] == sizeof(float) && s[1] == sizeof(float)) {
              apply_block(reinterpret_cast<const float*>(d[1]), reinterpret_cast<float*>(d[0]), n);
              return;
            }
          }
          alignas(64) float buf[kBlock];
          for (int64_t b = 0; b < n; b += kBlock) {
            const int64_t m = std::min(kBlock, n - b);
            for (int64_t i = 0; i < m; ++i) buf[i] = static_cast<float>(at<T>(d[1], s[1], b + i));
            apply_block(buf, buf, m);
            for (int64_t i = 0; i < m; ++i) at<T>(d[0], s[0], b + i) = static_cast<T>(buf[i]);
          }
        },
        8192);
  });
}

// Ops whose output dtype is the input's, for every dtype (16-bit floats via float).
template <typename F>
void same_type(const ElementwiseIter& it, DType dtype, F f) {
  dispatch_all(dtype, "unary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    map1<T, T>(it, [&](acc_t<T> x) { return f(x); });
  });
}

template <typename F>
void to_bool(const ElementwiseIter& it, DType dtype, F f) {
  dispatch_all(dtype, "unary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    map1<bool, T>(it, [&](acc_t<T> x) -> bool { return f(x); });
  });
}

template <typename C>
constexpr bool is_fp = std::is_floating_point_v<C>;

}  // namespace

void unary(UnaryOp op, const Tensor& out, const Tensor& in) {
  if (out.numel() == 0) return;
  ElementwiseIter it(out.sizes());
  it.add(out);
  it.add(in);
  it.build();
  const DType dt = in.dtype();
#if EMBER_HAVE_VEC
  using vec::set1;
  using vec::VecF;
#endif
  switch (op) {
#if EMBER_HAVE_VEC
#define EMBER_VF(expr) [&](VecF v) { return expr; }
#else
#define EMBER_VF(expr) nullptr
#endif
    case UnaryOp::Exp: return float_math(it, dt, [](auto x) { return std::exp(x); }, EMBER_VF(vec::exp(v)));
    case UnaryOp::Exp2: return float_math(it, dt, [](auto x) { return std::exp2(x); }, EMBER_VF(vec::exp2(v)));
    case UnaryOp::Expm1: return float_math(it, dt, [](auto x) { return std::expm1(x); }, EMBER_VF(vec::expm1(v)));
    case UnaryOp::Log: return float_math(it, dt, [](auto x) { return std::log(x); }, EMBER_VF(vec::log(v)));
    case UnaryOp::Log2: return float_math(it, dt, [](auto x) { return std::log2(x); }, EMBER_VF(vec::log2(v)));
    case UnaryOp::Log10: return float_math(it, dt, [](auto x) { return std::log10(x); }, EMBER_VF(vec::log10(v)));
    case UnaryOp::Log1p: return float_math(it, dt, [](auto x) { return std::log1p(x); }, EMBER_VF(vec::log1p(v)));
    case UnaryOp::Sqrt: return float_math(it, dt, [](auto x) { return std::sqrt(x); }, EMBER_VF(vec::sqrt(v)));
    case UnaryOp::Rsqrt:
      return float_math(it, dt, [](auto x) { return decltype(x)(1) / std::sqrt(x); },
                        EMBER_VF(vec::div(set1(1.0f), vec::sqrt(v))));
    case UnaryOp::Reciprocal:
      return float_math(it, dt, [](auto x) { return decltype(x)(1) / x; }, EMBER_VF(vec::div(set1(1.0f), v)));
    case UnaryOp::Sin: return float_math(it, dt, [](auto x) { return std::sin(x); }, EMBER_VF(vec::sin(v)));
    case UnaryOp::Cos: return float_math(it, dt, [](auto x) { return std::cos(x); }, EMBER_VF(vec::cos(v)));
    case UnaryOp::Tan: return float_math(it, dt, [](auto x) { return std::tan(x); }, EMBER_VF(vec::tan(v)));
    case UnaryOp::Asin: return float_math(it, dt, [](auto x) { return std::asin(x); }, EMBER_VF(vec::asin(v)));
    case UnaryOp::Acos: return float_math(it, dt, [](auto x) { return std::acos(x); }, EMBER_VF(vec::acos(v)));
    case UnaryOp::Atan: return float_math(it, dt, [](auto x) { return std::atan(x); }, EMBER_VF(vec::atan(v)));
    case UnaryOp::Sinh: return float_math(it, dt, [](auto x) { return std::sinh(x); }, EMBER_VF(vec::sinh(v)));
    case UnaryOp::Cosh: return float_math(it, dt, [](auto x) { return std::cosh(x); }, EMBER_VF(vec::cosh(v)));
    case UnaryOp::Tanh: return float_math(it, dt, [](auto x) { return std::tanh(x); }, EMBER_VF(vec::tanh(v)));
    case UnaryOp::Erf: return float_math(it, dt, [](auto x) { return std::erf(x); }, EMBER_VF(vec::erf(v)));
    case UnaryOp::Erfinv: return float_math(it, dt, [](auto x) { return erfinv_scalar(x); }, nullptr);
    case UnaryOp::Sigmoid:
      return float_math(it, dt, [](auto x) { return decltype(x)(1) / (decltype(x)(1) + std::exp(-x)); },
                        EMBER_VF(vec::div(set1(1.0f), vec::add(set1(1.0f), vec::exp(vec::sub(set1(0.0f), v))))));
    case UnaryOp::Silu:
      return float_math(it, dt, [](auto x) { return x / (decltype(x)(1) + std::exp(-x)); },
                        EMBER_VF(vec::div(v, vec::add(set1(1.0f), vec::exp(vec::sub(set1(0.0f), v))))));
    case UnaryOp::GeluErf:
      return float_math(
          it, dt,
          [](auto x) {
            using C = decltype(x);
            return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)));
          },
          EMBER_VF(vec::mul(vec::mul(set1(0.5f), v), vec::add(set1(1.0f), vec::erf(vec::mul(v, set1(kSqrt1_2)))))));
    case UnaryOp::GeluTanh:
      return float_math(
          it, dt,
          [](auto x) {
            using C = decltype(x);
            const C inner = C(0.79788456080286535588) * (x + C(0.044715) * x * x * x);
            return C(0.5) * x * (C(1) + std::tanh(inner));
          },
          EMBER_VF(vec::mul(vec::mul(set1(0.5f), v),
                            vec::add(set1(1.0f), vec::tanh(vec::mul(set1(kSqrt2OverPi),
                                                                    vec::fmadd(vec::mul(set1(0.044715f), v),
                                                                               vec::mul(v, v), v)))))));
    case UnaryOp::Frac:
      return float_math(it, dt, [](auto x) { return x - std::trunc(x); }, nullptr);
#undef EMBER_VF
    case UnaryOp::Neg:
      return same_type(it, dt, [](auto x) { return static_cast<decltype(x)>(-x); });
    case UnaryOp::Abs:
      return same_type(it, dt, [](auto x) {
        using C = decltype(x);
        if constexpr (std::is_unsigned_v<C>) return x;
        else if constexpr (is_fp<C>) return std::fabs(x);
        else return static_cast<C>(x < 0 ? -x : x);
      });
    case UnaryOp::Sign:
      return same_type(it, dt, [](auto x) {
        using C = decltype(x);
        if constexpr (std::is_same_v<C, bool>) return x;
        else return static_cast<C>((C(0) < x) - (x < C(0)));
      });
    case UnaryOp::Relu:
      return same_type(it, dt, [](auto x) {
        using C = decltype(x);
        if constexpr (is_fp<C>) return std::isnan(x) ? x : (x > C(0) ? x : C(0));
        else return x > C(0) ? x : C(0);
      });
    case UnaryOp::Floor:
      return same_type(it, dt, [](auto x) {
        if constexpr (is_fp<decltype(x)>) return std::floor(x);
        else return x;
      });
    case UnaryOp::Ceil:
      return same_type(it, dt, [](auto x) {
        if constexpr (is_fp<decltype(x)>) return std::ceil(x);
        else return x;
      });
    case UnaryOp::Round:
      return same_type(it, dt, [](auto x) {
        if constexpr (is_fp<decltype(x)>) return std::nearbyint(x);  // half to even
        else return x;
      });
    case UnaryOp::Trunc:
      return same_type(it, dt, [](auto x) {
        if constexpr (is_fp<decltype(x)>) return std::trunc(x);
        else return x;
      });
    case UnaryOp::IsNan:
      return to_bool(it, dt, [](auto x) {
        if constexpr (is_fp<decltype(x)>) return std::isnan(x);
        else return false;
      });
    case UnaryOp::IsInf:
      return to_bool(it, dt, [](auto x) {
        if constexpr (is_fp<decltype(x)>) return std::isinf(x);
        else return false;
      });
    case UnaryOp::IsFinite:
      return to_bool(it, dt, [](auto x) {
        if constexpr (is_fp<decltype(x)>) return std::isfinite(x);
        else return true;
      });
    case UnaryOp::LogicalNot:
      return to_bool(it, dt, [](auto x) { return x == decltype(x)(0); });
    case UnaryOp::Count: break;
  }
  EMBER_ERROR("[unary] unknown op");
}

void softplus(const Tensor& out, const Tensor& in, double beta, double threshold) {
  ElementwiseIter it(out.sizes());
  it.add(out);
  it.add(in);
  it.build();
  dispatch_floating(in.dtype(), "softplus", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    const C b = static_cast<C>(beta), th = static_cast<C>(threshold);
    map1<T, T>(it, [=](C x) { return x * b > th ? x : std::log1p(std::exp(x * b)) / b; });
  });
}

void clamp(const Tensor& out, const Tensor& in, const Scalar* lo, const Scalar* hi) {
  ElementwiseIter it(out.sizes());
  it.add(out);
  it.add(in);
  it.build();
  dispatch_all(in.dtype(), "clamp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    const bool has_lo = lo != nullptr, has_hi = hi != nullptr;
    const C l = has_lo ? lo->to<C>() : C(0), h = has_hi ? hi->to<C>() : C(0);
    // PyTorch: min(max(x, lo), hi), so hi wins when lo > hi. Both comparisons are false
    // for NaN, so NaN passes through; one branch-free lambda per case keeps the
    // contiguous loop vectorised.
    if (has_lo && has_hi) {
      map1<T, T>(it, [=](C x) {
        const C y = x < l ? l : x;
        return y > h ? h : y;
      });
    } else if (has_lo) {
      map1<T, T>(it, [=](C x) { return x < l ? l : x; });
    } else {
      map1<T, T>(it, [=](C x) { return x > h ? h : x; });
    }
  });
}

void clamp_tensor(const Tensor& out, const Tensor& in, const Tensor& lo, const Tensor& hi) {
  ElementwiseIter it(out.sizes());
  it.add(out);
  it.add(in);
  it.add(lo.defined() ? lo : in);
  it.add(hi.defined() ? hi : in);
  it.build();
  const bool has_lo = lo.defined(), has_hi = hi.defined();
  dispatch_all(in.dtype(), "clamp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    map3<T, T, T, T>(it, [=](C x, C l, C h) {
      if constexpr (is_fp<C>) {
        if (std::isnan(x)) return x;
        if (has_lo && std::isnan(l)) return l;
        if (has_hi && std::isnan(h)) return h;
      }
      if (has_lo && x < l) x = l;
      if (has_hi && x > h) x = h;
      return x;
    });
  });
}

void nan_to_num(const Tensor& out, const Tensor& in, double nan, double posinf, double neginf) {
  ElementwiseIter it(out.sizes());
  it.add(out);
  it.add(in);
  it.build();
  dispatch_all(in.dtype(), "nan_to_num", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    if constexpr (is_fp<C>) {
      // Replacement values saturate to the dtype's range (T's max for +inf, e.g. float16's 65504).
      const C n = static_cast<C>(static_cast<T>(nan));
      const C p = static_cast<C>(static_cast<T>(posinf)), m = static_cast<C>(static_cast<T>(neginf));
      map1<T, T>(it, [=](C x) { return std::isnan(x) ? n : (x == INFINITY ? p : (x == -INFINITY ? m : x)); });
    } else {
      map1<T, T>(it, [](C x) { return x; });
    }
  });
}

}  // namespace ember::kernels::cpu::EMBER_CPU_NS
