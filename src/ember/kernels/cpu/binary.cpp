// Binary element-wise kernels. Both inputs arrive in the compute dtype; rounding
// division, remainder and integer pow follow PyTorch's formulas so results match bit
// for bit, and integer division by zero is an error instead of a crash.

#include <cmath>
#include <limits>
#include <utility>

#include "ember/kernels/cpu/gelu_math.h"
#include "ember/kernels/cpu/loops.h"
#include "ember/kernels/cpu/pointwise.h"
#include "ember/kernels/cpu/vec.h"

namespace ember::kernels::cpu::EMBER_CPU_NS {  // compiled per ISA level (kernels/cpu/isa.h)

namespace {

template <typename C>
constexpr bool is_fp = std::is_floating_point_v<C>;

[[noreturn]] void zero_division(const char* op) {
  EMBER_ERROR("[", op, "] integer division by zero (ZeroDivisionError); use a floating-point dtype "
              "for IEEE results (inf/nan)");
}

template <typename C>
C div_floor(C a, C b) {
  if constexpr (is_fp<C>) {
    if (b == 0) return a / b;
    C mod = std::fmod(a, b);
    C div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= C(1);
    if (div != 0) {
      C fl = std::floor(div);
      if (div - fl > C(0.5)) fl += C(1);
      return fl;
    }
    return std::copysign(C(0), a / b);
  } else {
    if (b == 0) zero_division("div");
    if constexpr (std::is_signed_v<C>) {
      if (b == C(-1)) return static_cast<C>(C(0) - a);  // avoids INT_MIN / -1 overflow trap
      C q = a / b, r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) --q;
      return q;
    } else {
      return a / b;
    }
  }
}

template <typename C>
C remainder(C a, C b) {
  if constexpr (is_fp<C>) {
    C mod = std::fmod(a, b);
    if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
    return mod;
  } else {
    if (b == 0) zero_division("remainder");
    if constexpr (std::is_signed_v<C>) {
      if (b == C(-1)) return C(0);
      C r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    } else {
      return a % b;
    }
  }
}

template <typename C>
C int_pow(C base, C exp) {
  if constexpr (std::is_signed_v<C>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp % 2 == 0) ? 1 : -1;
      return 0;
    }
  }
  C result = 1;
  using U = std::make_unsigned_t<C>;
  U ubase = static_cast<U>(base);
  U r = 1;
  for (auto e = static_cast<U>(exp); e; e >>= 1) {
    if (e & 1) r = static_cast<U>(r * ubase);
    ubase = static_cast<U>(ubase * ubase);
  }
  result = static_cast<C>(r);
  return result;
}

template <typename F>
void numeric(const ElementwiseIter& it, DType dt, const char* op, F f) {
  dispatch_all(dt, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map2<T, T>(it, [&](acc_t<T> a, acc_t<T> b) { return f(a, b); });
  });
}

template <typename F>
void floating(const ElementwiseIter& it, DType dt, const char* op, F f) {
  dispatch_floating(dt, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map2<T, T>(it, [&](acc_t<T> a, acc_t<T> b) { return f(a, b); });
  });
}

template <typename F>
void compare(const ElementwiseIter& it, DType dt, F f) {
  dispatch_all(dt, "compare", [&](auto tag) {
    using T = typename decltype(tag)::type;
    map2<bool, T>(it, [&](acc_t<T> a, acc_t<T> b) -> bool { return f(a, b); });
  });
}

#if EMBER_HAVE_VEC
constexpr int64_t kBlock = 256;

// Float math with a vector form vf on float lanes (float32, and 16-bit floats widened to
// float): blocks of floats go through vf, the tail padded through the same code, so a
// value's result does not depend on its position or layout. float64 uses the scalar sf.
template <typename SF, typename VF>
void float_math2(const ElementwiseIter& it, DType dt, const char* op, SF sf, VF vf) {
  if (dt == kFloat64) {
    map2<double, double>(it, sf, 8192);
    return;
  }
  auto apply_block = [&](const float* a, const float* b, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + vec::kLanes <= n; i += vec::kLanes) vec::store(dst + i, vf(vec::load(a + i), vec::load(b + i)));
    if (i < n) {
      alignas(64) float pa[vec::kLanes] = {}, pb[vec::kLanes] = {};
      std::memcpy(pa, a + i, static_cast<size_t>(n - i) * sizeof(float));
      std::memcpy(pb, b + i, static_cast<size_t>(n - i) * sizeof(float));
      vec::store(pa, vf(vec::load(pa), vec::load(pb)));
      std::memcpy(dst + i, pa, static_cast<size_t>(n - i) * sizeof(float));
    }
  };
  dispatch_floating(dt, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.for_each(
        [&](char** d, const int64_t* s, int64_t n) {
          if constexpr (std::is_same_v<T, float>) {
            if (s[0] == sizeof(float) && s[1] == sizeof(float) && s[2] == sizeof(float)) {
              apply_block(reinterpret_cast<const float*>(d[1]), reinterpret_cast<const float*>(d[2]),
                          reinterpret_cast<float*>(d[0]), n);
              return;
            }
          }
          alignas(64) float ba[kBlock], bb[kBlock];
          for (int64_t k = 0; k < n; k += kBlock) {
            const int64_t m = std::min(kBlock, n - k);
            for (int64_t i = 0; i < m; ++i) ba[i] = static_cast<float>(at<T>(d[1], s[1], k + i));
            for (int64_t i = 0; i < m; ++i) bb[i] = static_cast<float>(at<T>(d[2], s[2], k + i));
            apply_block(ba, bb, ba, m);
            for (int64_t i = 0; i < m; ++i) at<T>(d[0], s[0], k + i) = static_cast<T>(ba[i]);
          }
        },
        8192);
  });
}
#endif

// ---- the kernels, one struct per BinaryOp (named after it) ----
// scalar(a, b): a and b in the compute type (acc_t of the dtype; the floating types only
// for Float ops). Optional: vec(a, b) on float lanes (float math, at the avx2/avx512
// levels), or run(it, dtype, alpha) for an op that needs its own loop.
#if EMBER_HAVE_VEC
using vec::VecF;
#define EMBER_VEC2(expr) \
  static VecF vec([[maybe_unused]] VecF a, [[maybe_unused]] VecF b) { return expr; }
#else
#define EMBER_VEC2(expr)
#endif

struct AddSub {
  static void run(bool sub, const ElementwiseIter& it, DType dt, const Scalar& alpha) {
    const bool unit_alpha = alpha.to_double() == 1.0;
    dispatch_all(dt, sub ? "sub" : "add", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = acc_t<T>;
      if (unit_alpha && !sub) {
        map2<T, T>(it, [](C x, C y) { return wrapping_add(x, y); });
      } else if (unit_alpha) {
        map2<T, T>(it, [](C x, C y) { return wrapping_sub(x, y); });
      } else {
        const C al = alpha.to<C>();
        // 16-bit floats round alpha * y to T before adding, as PyTorch's kernel does.
        auto scaled = [al](C y) { return static_cast<C>(static_cast<T>(wrapping_mul(al, y))); };
        if (sub) map2<T, T>(it, [scaled](C x, C y) { return wrapping_sub(x, scaled(y)); });
        else map2<T, T>(it, [scaled](C x, C y) { return wrapping_add(x, scaled(y)); });
      }
    });
  }
};
struct Add {
  static void run(const ElementwiseIter& it, DType dt, const Scalar& alpha) { AddSub::run(false, it, dt, alpha); }
};
struct Sub {
  static void run(const ElementwiseIter& it, DType dt, const Scalar& alpha) { AddSub::run(true, it, dt, alpha); }
};
struct Mul {
  static auto scalar(auto x, auto y) { return wrapping_mul(x, y); }
};
struct Div {
  static auto scalar(auto x, auto y) { return x / y; }
};
struct DivTrunc {
  static auto scalar(auto x, auto y) {
    using C = decltype(x);
    if constexpr (is_fp<C>) {
      return std::trunc(x / y);
    } else {
      if (y == 0) zero_division("div");
      if constexpr (std::is_signed_v<C>) {
        if (y == C(-1)) return static_cast<C>(C(0) - x);
      }
      return static_cast<C>(x / y);
    }
  }
  static void run(const ElementwiseIter& it, DType dt, const Scalar&) {
    if (dt == kFloat16 || dt == kBFloat16) {
      // PyTorch rounds the quotient to the 16-bit type before truncating it.
      return dispatch_floating(dt, "div", [&](auto tag) {
        using T = typename decltype(tag)::type;
        map2<T, T>(it, [](float x, float y) { return std::trunc(static_cast<float>(static_cast<T>(x / y))); });
      });
    }
    numeric(it, dt, "div", [](auto x, auto y) { return scalar(x, y); });
  }
};
struct DivFloor {
  static auto scalar(auto x, auto y) { return div_floor(x, y); }
};
struct Remainder {
  static auto scalar(auto x, auto y) { return remainder(x, y); }
};
struct Fmod {
  static auto scalar(auto x, auto y) {
    using C = decltype(x);
    if constexpr (is_fp<C>) {
      return std::fmod(x, y);
    } else {
      if (y == 0) zero_division("fmod");
      if constexpr (std::is_signed_v<C>) {
        if (y == C(-1)) return C(0);
      }
      return static_cast<C>(x % y);
    }
  }
  EMBER_VEC2(vec::fmod(a, b))
};
struct Pow {
  static auto scalar(auto x, auto y) {
    using C = decltype(x);
    if constexpr (is_fp<C>) return std::pow(x, y);
    else if constexpr (std::is_same_v<C, bool>) return static_cast<bool>(x || !y);
    else return int_pow(x, y);
  }
  EMBER_VEC2(vec::pow(a, b))
};
struct Maximum {
  static auto scalar(auto x, auto y) {
    using C = decltype(x);
    if constexpr (is_fp<C>) {
      if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<C>::quiet_NaN();
    }
    return x > y ? x : y;
  }
};
struct Minimum {
  static auto scalar(auto x, auto y) {
    using C = decltype(x);
    if constexpr (is_fp<C>) {
      if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<C>::quiet_NaN();
    }
    return x < y ? x : y;
  }
};
struct Atan2 {
  static auto scalar(auto x, auto y) { return std::atan2(x, y); }
  EMBER_VEC2(vec::atan2(a, b))
};
struct Eq { static bool scalar(auto x, auto y) { return x == y; } };
struct Ne { static bool scalar(auto x, auto y) { return x != y; } };
struct Lt { static bool scalar(auto x, auto y) { return x < y; } };
struct Le { static bool scalar(auto x, auto y) { return x <= y; } };
struct Gt { static bool scalar(auto x, auto y) { return x > y; } };
struct Ge { static bool scalar(auto x, auto y) { return x >= y; } };
struct LogicalAnd { static bool scalar(auto x, auto y) { return bool(x) && bool(y); } };
struct LogicalOr { static bool scalar(auto x, auto y) { return bool(x) || bool(y); } };
struct LogicalXor { static bool scalar(auto x, auto y) { return bool(x) != bool(y); } };
#undef EMBER_VEC2

// Runs kernel K with the loop its kind calls for.
template <BinaryKind kind, typename K>
void run(const ElementwiseIter& it, DType dt, const char* name, const Scalar& alpha) {
  if constexpr (requires { K::run(it, dt, alpha); }) {
    K::run(it, dt, alpha);
    return;
  } else {
    auto sf = [](auto x, auto y) { return K::scalar(x, y); };
#if EMBER_HAVE_VEC
    if constexpr (requires { K::vec(std::declval<VecF>(), std::declval<VecF>()); }) {
      if (is_floating_point(dt)) {
        float_math2(it, dt, name, sf, [](VecF a, VecF b) { return K::vec(a, b); });
        return;
      }
    }
#endif
    if constexpr (kind == BinaryKind::Float) floating(it, dt, name, sf);
    else if constexpr (kind == BinaryKind::Same) numeric(it, dt, name, sf);
    else compare(it, dt, sf);
  }
}

// Note [Small flat float32 operands]: float32 operands that are contiguous and of the
// output's shape, too few for more than one parallel chunk (small_flat_float32 in iter.h),
// need none of the iterator's work (dims reordered and merged, a run per chunk): a plain loop
// over the elements does the same arithmetic (one IEEE operation per element, so the same
// bits) for a fraction of a tiny op's fixed cost. Returns false, having done nothing, for
// everything else.
bool small_flat_float(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  const bool unit_add_sub = (op == BinaryOp::Add || op == BinaryOp::Sub) && alpha.to_double() == 1.0;
  if (!unit_add_sub && op != BinaryOp::Mul && op != BinaryOp::Div) return false;
  if (!small_flat_float32(out, {&a, &b})) return false;
  float* o = static_cast<float*>(out.data_ptr());
  const float* x = static_cast<const float*>(a.data_ptr());
  const float* y = static_cast<const float*>(b.data_ptr());
  const int64_t n = out.numel();
  auto each = [&](auto f) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
  };
  switch (op) {
    case BinaryOp::Add: each([](float u, float v) { return u + v; }); break;
    case BinaryOp::Sub: each([](float u, float v) { return u - v; }); break;
    case BinaryOp::Mul: each([](float u, float v) { return u * v; }); break;
    default: each([](float u, float v) { return u / v; }); break;
  }
  return true;
}

}  // namespace

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (out.numel() == 0) return;
  if (small_flat_float(op, out, a, b, alpha)) return;
  ElementwiseIter it(out.sizes());
  it.add(out);
  it.add(a);
  it.add(b);
  it.build();
  const DType dt = a.dtype();
  switch (op) {
#define EMBER_BINARY(Id, name, kind, ...) \
  case BinaryOp::Id: return run<BinaryKind::kind, Id>(it, dt, #name, alpha);
#include "ember/ops/pointwise_ops.h"
    case BinaryOp::Count: break;
  }
  EMBER_ERROR("[binary] unknown op");
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0) return;
  ElementwiseIter it(out.sizes());
  it.add(out);
  it.add(cond);
  it.add(a);
  it.add(b);
  it.build();
  dispatch_all(a.dtype(), "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.for_each([](char** d, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        at<T>(d[0], s[0], i) = at<bool>(d[1], s[1], i) ? at<T>(d[2], s[2], i) : at<T>(d[3], s[3], i);
      }
    });
  });
}

void threshold_backward(const Tensor& out, const Tensor& grad, const Tensor& self, const Scalar& threshold) {
  if (out.numel() == 0) return;
  ElementwiseIter it(out.sizes());
  it.add(out);
  it.add(grad);
  it.add(self);
  it.build();
  dispatch_all(out.dtype(), "threshold_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    const C th = threshold.to<C>();
    // A select rather than a multiply: an infinite or NaN gradient at a cut element stays 0.
    map2<T, T>(it, [=](C g, C y) { return y <= th ? C(0) : g; });
  });
}

// d gelu(x) / dx = Phi(x) + x phi(x) (erf form) or the derivative of the tanh form, times g.
namespace gelu_grad {
struct Erf {
  static auto scalar(auto g, auto xc) {  // in double: float's 1 - t^2 cancels
    const double x = static_cast<double>(xc);
    const double cdf = 0.5 * (1.0 + std::erf(x * 0.70710678118654752440));
    const double pdf = std::exp(-0.5 * x * x) * 0.39894228040143267794;
    return static_cast<decltype(xc)>(static_cast<double>(g) * (cdf + x * pdf));
  }
#if EMBER_HAVE_VEC
  static VecF vec(VecF g, VecF x) {  // Note [Fast GELU]
    VecF pdf;
    const VecF cdf = vec::gelu_cdf(x, &pdf);
    return vec::mul(g, vec::fmadd(x, pdf, cdf));
  }
#endif
};
struct Tanh {
  static auto scalar(auto g, auto xc) {
    const double x = static_cast<double>(xc), k = 0.79788456080286535588, c = 0.044715;
    const double x2 = x * x;
    const double t = std::tanh(k * (x + c * x2 * x));
    const double d = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * c * x2);
    return static_cast<decltype(xc)>(static_cast<double>(g) * d);
  }
#if EMBER_HAVE_VEC
  static VecF vec(VecF g, VecF x) {
    const VecF k = vec::set1(0.79788456f), half = vec::set1(0.5f), one = vec::set1(1.0f);
    const VecF x2 = vec::mul(x, x);
    const VecF t = vec::tanh(vec::mul(k, vec::fmadd(vec::mul(vec::set1(0.044715f), x2), x, x)));
    const VecF left = vec::mul(half, vec::add(one, t));
    const VecF dinner = vec::mul(k, vec::fmadd(vec::set1(3 * 0.044715f), x2, one));
    const VecF right = vec::mul(vec::mul(vec::mul(half, x), vec::sub(one, vec::mul(t, t))), dinner);
    return vec::mul(g, vec::add(left, right));
  }
#endif
};
}  // namespace gelu_grad

void gelu_backward(const Tensor& out, const Tensor& grad, const Tensor& self, bool tanh) {
  if (out.numel() == 0) return;
  ElementwiseIter it(out.sizes());
  it.add(out);
  it.add(grad);
  it.add(self);
  it.build();
  auto go = [&](auto kernel) {
    using K = decltype(kernel);
    auto sf = [](auto g, auto x) { return K::scalar(g, x); };
#if EMBER_HAVE_VEC
    float_math2(it, out.dtype(), "gelu_backward", sf, [](VecF g, VecF x) { return K::vec(g, x); });
#else
    floating(it, out.dtype(), "gelu_backward", sf);
#endif
  };
  if (tanh) {
    go(gelu_grad::Tanh{});
  } else {
    go(gelu_grad::Erf{});
  }
}

void lerp(const Tensor& out, const Tensor& start, const Tensor& end, const Tensor& weight) {
  if (out.numel() == 0) return;
  ElementwiseIter it(out.sizes());
  it.add(out);
  it.add(start);
  it.add(end);
  it.add(weight);
  it.build();
  dispatch_floating(start.dtype(), "lerp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    map3<T, T, T, T>(it, [](C s, C e, C w) {
      // Exact at both ends, as PyTorch's lerp.
      return std::abs(w) < C(0.5) ? s + w * (e - s) : e - (e - s) * (C(1) - w);
    });
  });
}

void isclose(const Tensor& out, const Tensor& a, const Tensor& b, double rtol, double atol,
             bool equal_nan) {
  if (out.numel() == 0) return;
  ElementwiseIter it(out.sizes());
  it.add(out);
  it.add(a);
  it.add(b);
  it.build();
  dispatch_all(a.dtype(), "isclose", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    map2<bool, T>(it, [=](C x, C y) -> bool {
      if (x == y) return true;
      // PyTorch's rule, in the tensor's own precision: |x - y| <= atol + |rtol * y|, with
      // integers compared against a float32 tolerance.
      if constexpr (is_fp<C>) {
        if (std::isnan(x) || std::isnan(y)) return equal_nan && std::isnan(x) && std::isnan(y);
        if (std::isinf(x) || std::isinf(y)) return false;
        const C allowed = static_cast<C>(atol) + std::fabs(static_cast<C>(rtol) * y);
        return std::fabs(x - y) <= allowed;
      } else if constexpr (std::is_same_v<C, bool>) {
        return false;
      } else {
        const float allowed = static_cast<float>(atol) + std::fabs(static_cast<float>(rtol) * static_cast<float>(y));
        const int64_t diff = static_cast<int64_t>(x) - static_cast<int64_t>(y);
        return static_cast<float>(diff < 0 ? -diff : diff) <= allowed;
      }
    });
  });
}

}  // namespace ember::kernels::cpu::EMBER_CPU_NS
