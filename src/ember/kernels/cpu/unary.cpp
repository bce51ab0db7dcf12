// Unary element-wise kernels. Float math runs through Sleef's vectorised functions on
// blocks of floats (16-bit types are widened into a float block first, strided inputs
// gathered), so a value gives the same result whatever its position or layout.

#include <cmath>
#include <limits>
#include <utility>

#include "ember/kernels/cpu/gelu_math.h"
#include "ember/kernels/cpu/loops.h"
#include "ember/kernels/cpu/pointwise.h"
#include "ember/kernels/cpu/vec.h"

namespace ember::kernels::cpu::EMBER_CPU_NS {  // compiled per ISA level (kernels/cpu/isa.h)

namespace {

constexpr int64_t kBlock = 256;
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

// ---- the kernels, one struct per UnaryOp (named after it) ----
// scalar(x, p): x is the compute type (float or double for Float/FloatOnly ops, which get
// 16-bit floats widened to float; any acc type for Same and Bool ops); p the op's
// parameters. Float ops may add vec(v, p) on float lanes, written with EMBER_VEC: at the
// avx2/avx512 levels float32 (and widened 16-bit) blocks then go through it, tail included.
#if EMBER_HAVE_VEC
using vec::set1;
using vec::VecF;
#define EMBER_VEC(expr) \
  static VecF vec([[maybe_unused]] VecF v, [[maybe_unused]] const UnaryParams& p) { return expr; }
#else
#define EMBER_VEC(expr)
#endif
#define EMBER_SCALAR(expr) \
  static auto scalar(auto x, [[maybe_unused]] const UnaryParams& p) { return expr; }

struct Exp { EMBER_SCALAR(std::exp(x)) EMBER_VEC(vec::exp(v)) };
struct Exp2 { EMBER_SCALAR(std::exp2(x)) EMBER_VEC(vec::exp2(v)) };
struct Expm1 { EMBER_SCALAR(std::expm1(x)) EMBER_VEC(vec::expm1(v)) };
struct Log { EMBER_SCALAR(std::log(x)) EMBER_VEC(vec::log(v)) };
struct Log2 { EMBER_SCALAR(std::log2(x)) EMBER_VEC(vec::log2(v)) };
struct Log10 { EMBER_SCALAR(std::log10(x)) EMBER_VEC(vec::log10(v)) };
struct Log1p { EMBER_SCALAR(std::log1p(x)) EMBER_VEC(vec::log1p(v)) };
struct Sqrt { EMBER_SCALAR(std::sqrt(x)) EMBER_VEC(vec::sqrt(v)) };
struct Rsqrt { EMBER_SCALAR(decltype(x)(1) / std::sqrt(x)) EMBER_VEC(vec::div(set1(1.0f), vec::sqrt(v))) };
struct Reciprocal { EMBER_SCALAR(decltype(x)(1) / x) EMBER_VEC(vec::div(set1(1.0f), v)) };
struct Sin { EMBER_SCALAR(std::sin(x)) EMBER_VEC(vec::sin(v)) };
struct Cos { EMBER_SCALAR(std::cos(x)) EMBER_VEC(vec::cos(v)) };
struct Tan { EMBER_SCALAR(std::tan(x)) EMBER_VEC(vec::tan(v)) };
struct Asin { EMBER_SCALAR(std::asin(x)) EMBER_VEC(vec::asin(v)) };
struct Acos { EMBER_SCALAR(std::acos(x)) EMBER_VEC(vec::acos(v)) };
struct Atan { EMBER_SCALAR(std::atan(x)) EMBER_VEC(vec::atan(v)) };
struct Sinh { EMBER_SCALAR(std::sinh(x)) EMBER_VEC(vec::sinh(v)) };
struct Cosh { EMBER_SCALAR(std::cosh(x)) EMBER_VEC(vec::cosh(v)) };
struct Tanh { EMBER_SCALAR(std::tanh(x)) EMBER_VEC(vec::tanh(v)) };
struct Erf { EMBER_SCALAR(std::erf(x)) EMBER_VEC(vec::erf(v)) };
struct Erfinv { EMBER_SCALAR(erfinv_scalar(x)) };
struct Sigmoid {
  EMBER_SCALAR(decltype(x)(1) / (decltype(x)(1) + std::exp(-x)))
  EMBER_VEC(vec::div(set1(1.0f), vec::add(set1(1.0f), vec::exp(vec::sub(set1(0.0f), v)))))
};
struct Silu {
  EMBER_SCALAR(x / (decltype(x)(1) + std::exp(-x)))
  EMBER_VEC(vec::div(v, vec::add(set1(1.0f), vec::exp(vec::sub(set1(0.0f), v)))))
};
struct GeluErf {
  static auto scalar(auto x, const UnaryParams&) {
    using C = decltype(x);
    return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)));
  }
  EMBER_VEC(vec::mul(v, vec::gelu_cdf(v)))  // Note [Fast GELU]
};
struct GeluTanh {
  static auto scalar(auto x, const UnaryParams&) {
    using C = decltype(x);
    const C inner = C(0.79788456080286535588) * (x + C(0.044715) * x * x * x);
    return C(0.5) * x * (C(1) + std::tanh(inner));
  }
  EMBER_VEC(vec::mul(vec::mul(set1(0.5f), v),
                     vec::add(set1(1.0f), vec::tanh(vec::mul(set1(kSqrt2OverPi),
                                                             vec::fmadd(vec::mul(set1(0.044715f), v),
                                                                        vec::mul(v, v), v))))))
};
struct Frac { EMBER_SCALAR(x - std::trunc(x)) };
struct Softplus {  // p0 = beta, p1 = threshold
  static auto scalar(auto x, const UnaryParams& p) {
    using C = decltype(x);
    const C b = static_cast<C>(p.p0), th = static_cast<C>(p.p1);
    return x * b > th ? x : std::log1p(std::exp(x * b)) / b;
  }
};
struct LeakyRelu {  // p0 = negative_slope
  static auto scalar(auto x, const UnaryParams& p) {
    using C = decltype(x);
    return x > C(0) ? x : x * static_cast<C>(p.p0);
  }
};
struct Logit {  // p0 = eps, negative when absent (no clamp), as PyTorch's kernel
  static auto scalar(auto x, const UnaryParams& p) {
    using C = decltype(x);
    const C lo = static_cast<C>(p.p0), hi = C(1) - lo;
    if (!(lo < C(0))) x = x < lo ? lo : (x > hi ? hi : x);
    return x == C(1) ? std::numeric_limits<C>::infinity() : std::log(x / (C(1) - x));
  }
};
struct Neg { EMBER_SCALAR(static_cast<decltype(x)>(-x)) };
struct Abs {
  static auto scalar(auto x, const UnaryParams&) {
    using C = decltype(x);
    if constexpr (std::is_unsigned_v<C>) return x;
    else if constexpr (is_fp<C>) return std::fabs(x);
    else return static_cast<C>(x < 0 ? -x : x);
  }
};
struct Sign {
  static auto scalar(auto x, const UnaryParams&) {
    using C = decltype(x);
    if constexpr (std::is_same_v<C, bool>) return x;
    else return static_cast<C>((C(0) < x) - (x < C(0)));
  }
};
struct Relu {
  static auto scalar(auto x, const UnaryParams&) {
    using C = decltype(x);
    if constexpr (is_fp<C>) return std::isnan(x) ? x : (x > C(0) ? x : C(0));
    else return x > C(0) ? x : C(0);
  }
};
// Rounding is the identity on integers.
#define EMBER_ROUNDING(Name, fn)                              \
  struct Name {                                               \
    static auto scalar(auto x, const UnaryParams&) {          \
      if constexpr (is_fp<decltype(x)>) return fn(x);         \
      else return x;                                          \
    }                                                         \
  };
EMBER_ROUNDING(Floor, std::floor)
EMBER_ROUNDING(Ceil, std::ceil)
EMBER_ROUNDING(Round, std::nearbyint)  // half to even
EMBER_ROUNDING(Trunc, std::trunc)
#undef EMBER_ROUNDING
struct IsNan {
  static bool scalar(auto x, const UnaryParams&) {
    if constexpr (is_fp<decltype(x)>) return std::isnan(x);
    else return false;
  }
};
struct IsInf {
  static bool scalar(auto x, const UnaryParams&) {
    if constexpr (is_fp<decltype(x)>) return std::isinf(x);
    else return false;
  }
};
struct IsFinite {
  static bool scalar(auto x, const UnaryParams&) {
    if constexpr (is_fp<decltype(x)>) return std::isfinite(x);
    else return true;
  }
};
struct LogicalNot { EMBER_SCALAR(x == decltype(x)(0)) };
#undef EMBER_SCALAR
#undef EMBER_VEC

// Runs kernel K with the loop its kind calls for.
template <UnaryKind kind, typename K>
void run(const ElementwiseIter& it, DType dt, const UnaryParams& p) {
  auto sf = [&p](auto x) { return K::scalar(x, p); };
  if constexpr (kind == UnaryKind::Float || kind == UnaryKind::FloatOnly) {
#if EMBER_HAVE_VEC
    if constexpr (requires { K::vec(std::declval<VecF>(), std::declval<const UnaryParams&>()); }) {
      float_math(it, dt, sf, [&p](VecF v) { return K::vec(v, p); });
      return;
    }
#endif
    float_math(it, dt, sf, nullptr);
  } else if constexpr (kind == UnaryKind::Same) {
    same_type(it, dt, sf);
  } else {
    to_bool(it, dt, sf);
  }
}

// ReLU of a small contiguous float32 tensor into one of its shape: one loop, no iterator
// (as Note [Small flat float32 operands] in binary.cpp); the scalar rule Relu::scalar.
bool small_flat_relu(const Tensor& out, const Tensor& in) {
  if (!small_flat_float32(out, {&in})) return false;
  const int64_t n = out.numel();
  float* o = static_cast<float*>(out.data_ptr());
  const float* x = static_cast<const float*>(in.data_ptr());
  for (int64_t i = 0; i < n; ++i) o[i] = Relu::scalar(x[i], UnaryParams{});
  return true;
}

}  // namespace

void unary(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryParams& p) {
  if (out.numel() == 0) return;
  if (op == UnaryOp::Relu && small_flat_relu(out, in)) return;
  ElementwiseIter it(out.sizes());
  it.add(out);
  it.add(in);
  it.build();
  const DType dt = in.dtype();
  switch (op) {
#define EMBER_UNARY_ROW(Id, kind) \
  case UnaryOp::Id: return run<UnaryKind::kind, Id>(it, dt, p);
#define EMBER_UNARY(Id, name, kind, ...) EMBER_UNARY_ROW(Id, kind)
#define EMBER_UNARY_P1(Id, name, kind, ...) EMBER_UNARY_ROW(Id, kind)
#define EMBER_UNARY_P2(Id, name, kind, ...) EMBER_UNARY_ROW(Id, kind)
#include "ember/ops/pointwise_ops.h"
#undef EMBER_UNARY_ROW
    case UnaryOp::Count: break;
  }
  EMBER_ERROR("[unary] unknown op");
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
