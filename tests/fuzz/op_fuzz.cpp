// ember_fuzz: calls every public op with hostile arguments (random shapes including 0-size
// and huge, out-of-range and negative dims, every dtype, transposed / expanded / stepped
// layouts, extreme scalars), forward and backward. The contract (docs/errors.md): each call
// returns or throws ember::Error. Anything else -- a signal, another exception type, a call
// that runs longer than 5 s, a sanitizer report -- fails the run, printing the seed and the
// call so that `ember_fuzz --seed S --first N --count 1` replays exactly that call.
//
//   ember_fuzz [--seed S] [--seconds T] [--count N] [--first N] [--list] [--check-coverage SRC_DIR]
//   ember_fuzz --files [--seed S] [--seconds T] [--count N]: the checkpoint / IDX / token-file readers
//   and model artifacts (jit::load, and hostile graphs through jit::graph_from_value + run)
//   env: EMBER_FUZZ_SEED, EMBER_FUZZ_SECONDS, EMBER_FUZZ_COUNT
//
// Adding an op: add one OP(...) line to the table below. `--check-coverage` (a CTest test)
// fails when a public op declared in the op headers has no line here.

#include "ember/serialize/json.h"
#include <ember/ember.h>
#include <ember/quant/fake_quant.h>
#include <ember/quant/qlinear.h>
#include <ember/quant/quantized_ops.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

extern "C" void __sanitizer_set_death_callback(void (*)(void)) __attribute__((weak));

namespace ember::fuzz {
namespace {

namespace F = nn::functional;

// ---- argument generators ----

struct Ctx {
  std::mt19937_64 rng;
  uint64_t u() { return rng(); }
  bool coin(int one_in = 2) { return u() % static_cast<uint64_t>(one_in) == 0; }
  int64_t pick(std::initializer_list<int64_t> v) { return v.begin()[u() % v.size()]; }

  // Small values mostly; extremes that are either tiny or far beyond any memory, so a
  // run never allocates more than a few hundred MB.
  int64_t integer() {
    switch (u() % 10) {
      case 0: return pick({std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
                           int64_t{1} << 40, -(int64_t{1} << 40), int64_t{1} << 62});
      case 1: return -static_cast<int64_t>(u() % 5);
      default: return static_cast<int64_t>(u() % 6);
    }
  }
  int64_t dim() { return coin(8) ? integer() : static_cast<int64_t>(u() % 7) - 3; }
  int64_t size() { return coin(20) ? integer() : static_cast<int64_t>(u() % 5); }
  std::vector<int64_t> sizes(int max_rank = 4) {
    std::vector<int64_t> s(u() % static_cast<uint64_t>(max_rank + 1));
    for (auto& v : s) v = size();
    return s;
  }
  std::vector<int64_t> ints(int max_len = 4) {
    std::vector<int64_t> s(u() % static_cast<uint64_t>(max_len + 1));
    for (auto& v : s) v = coin(3) ? dim() : integer();
    return s;
  }
  double real() {
    switch (u() % 8) {
      case 0: return pick({0, 1}) ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
      case 1: return std::numeric_limits<double>::quiet_NaN();
      case 2: return pick({0, 1}) ? 1e300 : -1e-300;
      default: return static_cast<double>(static_cast<int64_t>(u() % 21) - 10) / 4.0;
    }
  }
  Scalar scalar() {
    switch (u() % 4) {
      case 0: return Scalar(integer());
      case 1: return Scalar(coin());
      default: return Scalar(real());
    }
  }
  DType dtype() {
    static const DType all[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt16, kInt32, kInt64, kBool};
    return coin(3) ? kFloat32 : all[u() % 10];
  }
  TensorOptions options() { return TensorOptions(dtype()).requires_grad(false); }

  // A tensor of <= 4096 elements in a random dtype and layout.
  Tensor tensor(std::optional<DType> want = std::nullopt) {
    std::vector<int64_t> s(u() % 5);
    int64_t n = 1;
    for (auto& v : s) {
      v = coin(12) ? 0 : static_cast<int64_t>(u() % 5) + 1;
      n *= v;
    }
    if (n > 4096) s.assign({4});
    const DType dt = want ? *want : dtype();
    Tensor t = randn(s, TensorOptions(kFloat64)).mul(pick({1, 3, 100})).to(dt);
    if (coin(10) && dt == kFloat32) t = t.masked_fill(t.gt(1.5), real());
    switch (u() % 6) {  // layouts
      case 0:
        if (t.dim() >= 2) t = t.transpose(0, t.dim() - 1);
        break;
      case 1:
        if (t.dim() >= 1 && t.size(0) == 1) t = t.expand_as(t.repeat({1}));  // same shape, stride 0 on dim 0
        else if (t.dim() >= 1) t = t.select(0, 0).unsqueeze(0).expand(t.sizes());
        break;
      case 2:
        if (t.dim() >= 1) t = t.repeat_interleave(2, 0).slice(0, 0, std::nullopt, 2);  // stepped view
        break;
      default: break;
    }
    if (is_floating_point(dt) && coin(3)) t = t.detach().requires_grad_();
    return t;
  }
  Tensor index(int64_t bound) {  // int64 indices, mostly valid
    std::vector<int64_t> s{static_cast<int64_t>(u() % 4)};
    Tensor i = randint(-1, std::max<int64_t>(bound, 1) + 1, s, TensorOptions(kInt64));
    return coin(4) ? i.to(pick({0, 1}) ? kInt32 : kFloat32) : i;
  }
  Tensor maybe(Tensor t) { return coin(4) ? Tensor() : t; }
  std::optional<int64_t> opt_dim() { return coin(3) ? std::nullopt : std::optional<int64_t>(dim()); }
  nn::Reduction reduction() {
    return static_cast<nn::Reduction>(u() % 4);
  }
};

using Body = std::function<void(Ctx&, std::vector<Tensor>&)>;

struct OpEntry {
  const char* name;
  Body body;
};

// Each body calls the op (one or several overloads) and pushes differentiable outputs
// onto `outs` for the backward pass.
#define OP(name, ...) {#name, [](Ctx& c, std::vector<Tensor>& o) { (void)c; (void)o; __VA_ARGS__; }}
#define UNARY(name) OP(name, { Tensor t = c.tensor(); o.push_back(ember::name(t)); o.push_back(t.name()); })
#define UNARY_(name) OP(name, { Tensor t = c.tensor().detach().clone(); t.name(); })
#define BINARY(name) \
  OP(name, { Tensor a = c.tensor(); o.push_back(ember::name(a, c.coin() ? c.tensor() : a)); o.push_back(a.name(c.tensor())); })
#define BINARY_S(name)                                                      \
  OP(name, {                                                                \
    Tensor a = c.tensor();                                                  \
    o.push_back(ember::name(a, c.tensor()));                                \
    o.push_back(ember::name(a, c.scalar()));                                \
    o.push_back(a.name(c.scalar()));                                        \
  })
#define BINARY_(name) OP(name, { Tensor a = c.tensor().detach().clone(); a.name(c.tensor()); })

std::vector<Tensor> tensors(Ctx& c) {
  std::vector<Tensor> v(c.u() % 4);
  const Tensor first = c.tensor();
  for (auto& t : v) t = c.coin() ? first.clone() : c.tensor();
  return v;
}

const std::vector<OpEntry>& op_table() {
  static const std::vector<OpEntry> table = {
      // creation
      OP(empty, empty(c.sizes(), c.options())), OP(empty_strided, empty_strided(c.sizes(), c.ints(), c.options())),
      OP(zeros, zeros(c.sizes(), c.options())), OP(ones, ones(c.sizes(), c.options())),
      OP(full, full(c.sizes(), c.scalar(), c.coin() ? TensorOptions() : c.options())),
      OP(scalar_tensor, scalar_tensor(c.scalar(), c.options())),
      OP(empty_like, empty_like(c.tensor(), c.options())), OP(zeros_like, zeros_like(c.tensor())),
      OP(ones_like, ones_like(c.tensor())), OP(full_like, full_like(c.tensor(), c.scalar())),
      OP(arange, {
        arange(c.scalar());
        arange(c.scalar(), c.scalar(), c.coin() ? TensorOptions() : c.options());
        arange(c.scalar(), c.scalar(), c.scalar());
      }),
      OP(linspace, linspace(c.scalar(), c.scalar(), c.size(), c.options())),
      OP(eye, {
        eye(c.size());
        eye(c.size(), c.size(), c.options());
      }),
      OP(tensor, {
        tensor({c.real(), c.real()}, c.options());
        tensor(std::vector<int64_t>{c.integer()}, c.options());
        tensor(c.integer());
      }),
      OP(from_blob, {
        static double buf[16] = {};
        from_blob(buf, {4, 4}, TensorOptions(kFloat64)).sum();
        from_blob(buf, {2, 2}, {c.pick({0, 1, 4}), 1}, TensorOptions(kFloat64)).sum();
      }),
      OP(rand, rand(c.sizes(), c.options())), OP(randn, randn(c.sizes(), c.options())),
      OP(randint, randint(c.integer(), c.integer(), c.sizes(), c.options())),
      OP(randperm, randperm(c.coin() ? c.integer() : c.size(), c.options())),
      OP(normal, normal(c.real(), c.real(), c.sizes())),
      OP(uniform_, c.tensor().detach().uniform_(c.real(), c.real())),
      OP(normal_, c.tensor().detach().normal_(c.real(), c.real())),
      OP(bernoulli_, c.tensor().detach().bernoulli_(c.real())),
      OP(random_, {
        c.tensor().detach().random_(c.integer(), c.integer());
        c.tensor().detach().random_(c.integer());
        c.tensor().detach().random_();
      }),
      OP(resize_, c.tensor().detach().clone().resize_(c.ints())),
      OP(resize_as_, c.tensor().detach().clone().resize_as_(c.tensor())),
      // pointwise
      UNARY(neg), UNARY(abs), UNARY(sign), UNARY(exp), UNARY(exp2), UNARY(expm1), UNARY(log), UNARY(log2),
      UNARY(log10), UNARY(log1p), UNARY(sqrt), UNARY(rsqrt), UNARY(reciprocal), UNARY(sin), UNARY(cos),
      UNARY(tan), UNARY(asin), UNARY(acos), UNARY(atan), UNARY(sinh), UNARY(cosh), UNARY(tanh), UNARY(sigmoid),
      UNARY(relu), UNARY(silu), UNARY(erf), UNARY(erfinv), UNARY(floor), UNARY(ceil), UNARY(round), UNARY(trunc),
      UNARY(frac), UNARY(logical_not), UNARY(isnan), UNARY(isinf), UNARY(isfinite),
      OP(gelu, o.push_back(gelu(c.tensor(), c.coin() ? "tanh" : (c.coin() ? "none" : "bogus")))),
      OP(softplus, o.push_back(softplus(c.tensor(), c.scalar(), c.scalar()))),
      OP(logit, o.push_back(logit(c.tensor(), c.coin() ? std::optional<double>() : c.real()))),
      OP(clamp, {
        Tensor t = c.tensor();
        o.push_back(clamp(t, c.coin() ? std::optional<Scalar>() : c.scalar(), c.scalar()));
        o.push_back(clamp(t, c.tensor(), c.tensor()));
      }),
      OP(clamp_min, o.push_back(c.tensor().clamp_min(c.scalar()))),
      OP(clamp_max, o.push_back(c.tensor().clamp_max(c.scalar()))),
      OP(nan_to_num, o.push_back(nan_to_num(c.tensor(), c.real(), c.real(), c.real()))),
      UNARY_(neg_), UNARY_(abs_), UNARY_(sign_), UNARY_(exp_), UNARY_(exp2_), UNARY_(expm1_), UNARY_(log_),
      UNARY_(log2_), UNARY_(log10_), UNARY_(log1p_), UNARY_(sqrt_), UNARY_(rsqrt_), UNARY_(reciprocal_),
      UNARY_(sin_), UNARY_(cos_), UNARY_(tan_), UNARY_(asin_), UNARY_(acos_), UNARY_(atan_), UNARY_(sinh_),
      UNARY_(cosh_), UNARY_(tanh_), UNARY_(sigmoid_), UNARY_(relu_), UNARY_(erf_), UNARY_(erfinv_),
      UNARY_(floor_), UNARY_(ceil_), UNARY_(round_), UNARY_(trunc_), UNARY_(frac_),
      OP(clamp_, c.tensor().detach().clone().clamp_(c.scalar(), c.scalar())),
      OP(clamp_min_, c.tensor().detach().clone().clamp_min_(c.scalar())),
      OP(clamp_max_, c.tensor().detach().clone().clamp_max_(c.scalar())),
      OP(nan_to_num_, c.tensor().detach().clone().nan_to_num_(c.real())),
      OP(add, {
        Tensor a = c.tensor();
        o.push_back(add(a, c.tensor(), c.scalar()));
        o.push_back(add(a, c.scalar(), c.scalar()));
        o.push_back(a + c.tensor());
      }),
      OP(sub, {
        Tensor a = c.tensor();
        o.push_back(sub(a, c.tensor(), c.scalar()));
        o.push_back(c.scalar() - a);
      }),
      OP(div, {
        Tensor a = c.tensor();
        const char* modes[] = {"trunc", "floor", "bogus"};
        o.push_back(div(a, c.tensor()));
        o.push_back(div(a, c.scalar(), std::string_view(modes[c.u() % 3])));
        o.push_back(c.scalar() / a);
      }),
      BINARY_S(mul), BINARY_S(remainder), BINARY_S(fmod), BINARY_S(eq), BINARY_S(ne), BINARY_S(lt), BINARY_S(le),
      BINARY_S(gt), BINARY_S(ge),
      OP(pow, {
        Tensor a = c.tensor();
        o.push_back(pow(a, c.tensor()));
        o.push_back(pow(a, c.scalar()));
        o.push_back(pow(c.scalar(), a));
      }),
      BINARY(maximum), BINARY(minimum), BINARY(atan2), BINARY(logical_and), BINARY(logical_or),
      BINARY(logical_xor),
      OP(lerp, {
        Tensor a = c.tensor();
        o.push_back(lerp(a, c.tensor(), c.scalar()));
        o.push_back(lerp(a, c.tensor(), c.tensor()));
      }),
      OP(add_, c.tensor().detach().clone().add_(c.tensor(), c.scalar())),
      OP(sub_, c.tensor().detach().clone().sub_(c.scalar(), c.scalar())),
      OP(mul_, c.tensor().detach().clone().mul_(c.tensor())),
      OP(div_, c.tensor().detach().clone().div_(c.scalar(), std::string_view("floor"))),
      OP(remainder_, c.tensor().detach().clone().remainder_(c.tensor())),
      OP(fmod_, c.tensor().detach().clone().fmod_(c.scalar())),
      OP(pow_, c.tensor().detach().clone().pow_(c.tensor())),
      BINARY_(atan2_),
      OP(lerp_, c.tensor().detach().clone().lerp_(c.tensor(), c.scalar())),
      OP(where, {
        Tensor cond = c.tensor(c.coin(4) ? kFloat32 : kBool);
        o.push_back(where(cond, c.tensor(), c.tensor()));
        o.push_back(where(cond, c.tensor(), c.scalar()));
        o.push_back(where(cond, c.scalar(), c.tensor()));
        o.push_back(c.tensor().where(cond, c.tensor()));
      }),
      OP(isclose, isclose(c.tensor(), c.tensor(), c.real(), c.real(), c.coin())),
      OP(allclose, allclose(c.tensor(), c.tensor())), OP(equal, equal(c.tensor(), c.tensor())),
      OP(can_cast, can_cast(c.dtype(), c.dtype())),
      // reductions
      OP(sum, {
        Tensor t = c.tensor();
        o.push_back(sum(t, c.ints(), c.coin(), c.coin() ? std::optional<DType>() : c.dtype()));
        o.push_back(t.sum());
      }),
      OP(mean, o.push_back(mean(c.tensor(), c.ints(), c.coin()))),
      OP(prod, {
        Tensor t = c.tensor();
        o.push_back(t.prod());
        o.push_back(t.prod(c.dim(), c.coin()));
      }),
      OP(max, {
        Tensor t = c.tensor();
        o.push_back(t.max());
        o.push_back(std::get<0>(t.max(c.dim(), c.coin())));
      }),
      OP(min, {
        Tensor t = c.tensor();
        o.push_back(t.min());
        o.push_back(std::get<0>(t.min(c.dim())));
      }),
      OP(amax, o.push_back(amax(c.tensor(), c.ints(), c.coin()))),
      OP(amin, o.push_back(amin(c.tensor(), c.ints(), c.coin()))),
      OP(argmax, c.tensor().argmax(c.opt_dim(), c.coin())), OP(argmin, c.tensor().argmin(c.opt_dim())),
      OP(var, o.push_back(var(c.tensor(), c.ints(), c.integer(), c.coin()))),
      OP(std, o.push_back(ember::std(c.tensor(), c.ints(), c.pick({0, 1, 2}), c.coin()))),
      OP(var_mean, o.push_back(std::get<0>(c.tensor().var_mean(c.ints(), c.pick({0, 1, 5}))))),
      OP(std_mean, o.push_back(std::get<1>(c.tensor().std_mean(c.ints())))),
      OP(norm, o.push_back(norm(c.tensor(), c.scalar(), c.ints(), c.coin()))),
      OP(logsumexp, o.push_back(logsumexp(c.tensor(), c.ints(), c.coin()))),
      OP(all, {
        Tensor t = c.tensor();
        t.all();
        t.all(c.dim(), c.coin());
      }),
      OP(any, {
        Tensor t = c.tensor();
        t.any();
        t.any(c.dim());
      }),
      OP(count_nonzero, c.tensor().count_nonzero(c.ints())),
      OP(cumsum, o.push_back(cumsum(c.tensor(), c.dim(), c.coin() ? std::optional<DType>() : c.dtype()))),
      OP(cumprod, o.push_back(cumprod(c.tensor(), c.dim()))),
      OP(softmax, {
        o.push_back(softmax(c.tensor(), c.dim(), c.coin() ? std::optional<DType>() : c.dtype()));
        o.push_back(F::softmax(c.tensor(), c.dim()));
      }),
      OP(log_softmax, {
        o.push_back(log_softmax(c.tensor(), c.dim()));
        o.push_back(F::log_softmax(c.tensor(), c.dim()));
      }),
      // linalg
      BINARY(matmul), BINARY(mm), BINARY(bmm), BINARY(dot), BINARY(outer),
      OP(addmm, o.push_back(addmm(c.tensor(), c.tensor(), c.tensor(), c.scalar(), c.scalar()))),
      OP(baddbmm, o.push_back(baddbmm(c.tensor(), c.tensor(), c.tensor(), c.scalar(), c.scalar()))),
      OP(linear, {
        o.push_back(linear(c.tensor(), c.tensor(), c.maybe(c.tensor())));
        o.push_back(F::linear(c.tensor(), c.tensor()));
      }),
      // views
      OP(view, o.push_back(c.tensor().view(c.ints()))), OP(view_as, o.push_back(c.tensor().view_as(c.tensor()))),
      OP(as_strided, o.push_back(as_strided(c.tensor(), c.ints(), c.ints(), c.coin() ? std::nullopt : std::optional<int64_t>(c.integer())))),
      OP(t, o.push_back(c.tensor().t())), OP(transpose, o.push_back(transpose(c.tensor(), c.dim(), c.dim()))),
      OP(permute, o.push_back(permute(c.tensor(), c.ints()))),
      OP(movedim, o.push_back(movedim(c.tensor(), c.dim(), c.dim()))),
      OP(expand, o.push_back(c.tensor().expand(c.ints()))), OP(expand_as, o.push_back(c.tensor().expand_as(c.tensor()))),
      OP(type_as, o.push_back(c.tensor().type_as(c.tensor()))),
      OP(broadcast_to, o.push_back(broadcast_to(c.tensor(), c.ints()))),
      OP(squeeze, {
        o.push_back(squeeze(c.tensor()));
        o.push_back(squeeze(c.tensor(), c.dim()));
      }),
      OP(unsqueeze, o.push_back(unsqueeze(c.tensor(), c.dim()))),
      OP(flatten, o.push_back(flatten(c.tensor(), c.dim(), c.dim()))),
      OP(unflatten, o.push_back(c.tensor().unflatten(c.dim(), c.ints()))),
      OP(narrow, o.push_back(narrow(c.tensor(), c.dim(), c.integer(), c.integer()))),
      OP(slice, o.push_back(c.tensor().slice(c.dim(), c.integer(), c.integer(), c.integer()))),
      OP(select, o.push_back(select(c.tensor(), c.dim(), c.integer()))),
      OP(unfold, o.push_back(c.tensor().unfold(c.dim(), c.integer(), c.integer()))),
      OP(diagonal, o.push_back(diagonal(c.tensor(), c.integer(), c.dim(), c.dim()))),
      OP(split, for (auto& t : split(c.tensor(), c.integer(), c.dim())) o.push_back(t)),
      OP(split_with_sizes, for (auto& t : c.tensor().split_with_sizes(c.ints(), c.dim())) o.push_back(t)),
      OP(chunk, for (auto& t : chunk(c.tensor(), c.integer(), c.dim())) o.push_back(t)),
      OP(unbind, for (auto& t : unbind(c.tensor(), c.dim())) o.push_back(t)),
      OP(detach, c.tensor().detach()), OP(detach_, c.tensor().detach().detach_()), OP(alias, o.push_back(c.tensor().alias())),
      OP(reshape, o.push_back(reshape(c.tensor(), c.ints()))),
      OP(reshape_as, o.push_back(c.tensor().reshape_as(c.tensor()))),
      OP(contiguous, o.push_back(c.tensor().contiguous())), OP(clone, o.push_back(c.tensor().clone())),
      OP(to, {
        o.push_back(c.tensor().to(c.dtype(), c.coin()));
        c.tensor().to(c.options());
      }),
      OP(copy_, c.tensor().detach().clone().copy_(c.tensor())), OP(fill_, c.tensor().detach().clone().fill_(c.scalar())),
      OP(zero_, c.tensor().detach().clone().zero_()),
      OP(requires_grad_, c.tensor().detach().requires_grad_(c.coin())),
      OP(broadcast_shapes, broadcast_shapes(c.ints(), c.ints())),
      OP(broadcast_tensors, for (auto& t : broadcast_tensors(tensors(c))) o.push_back(t)),
      OP(infer_size, infer_size(c.ints(), c.integer(), "infer_size")),
      OP(compute_view_strides, {
        DimVector out;
        Tensor t = c.tensor();
        compute_view_strides(t.sizes(), t.strides(), c.ints(), out);
      }),
      // joining and shaping
      OP(cat, o.push_back(cat(tensors(c), c.dim()))), OP(concat, o.push_back(concat(tensors(c), c.dim()))),
      OP(stack, o.push_back(stack(tensors(c), c.dim()))), OP(hstack, o.push_back(hstack(tensors(c)))),
      OP(vstack, o.push_back(vstack(tensors(c)))), OP(flip, o.push_back(flip(c.tensor(), c.ints()))),
      OP(roll, o.push_back(roll(c.tensor(), c.ints(), c.ints()))), OP(tile, o.push_back(tile(c.tensor(), c.ints()))),
      OP(repeat, o.push_back(c.tensor().repeat(c.ints()))),
      OP(repeat_interleave, {
        o.push_back(repeat_interleave(c.tensor(), c.integer(), c.opt_dim()));
        o.push_back(c.tensor().repeat_interleave(c.index(4), c.opt_dim()));
      }),
      OP(tril, o.push_back(tril(c.tensor(), c.integer()))), OP(triu, o.push_back(triu(c.tensor(), c.integer()))),
      OP(pad, {
        const char* modes[] = {"constant", "reflect", "replicate", "circular"};
        o.push_back(pad(c.tensor(), c.ints(6), modes[c.u() % 4], c.real()));
      }),
      OP(one_hot, one_hot(c.tensor(kInt64), c.integer())),
      // indexing
      OP(index_select, {
        Tensor t = c.tensor();
        o.push_back(index_select(t, c.dim(), c.index(4)));
      }),
      OP(gather, o.push_back(gather(c.tensor(), c.dim(), c.tensor(kInt64).abs()))),
      OP(scatter, {
        o.push_back(scatter(c.tensor(), c.dim(), c.tensor(kInt64).abs(), c.tensor()));
        c.tensor().scatter(c.dim(), c.tensor(kInt64), c.scalar());
      }),
      OP(scatter_add, o.push_back(scatter_add(c.tensor(), c.dim(), c.tensor(kInt64).abs(), c.tensor()))),
      OP(scatter_reduce, {
        const char* r[] = {"sum", "prod", "mean", "amax", "amin", "bogus"};
        o.push_back(c.tensor().scatter_reduce(c.dim(), c.tensor(kInt64).abs(), c.tensor(), r[c.u() % 6], c.coin()));
      }),
      OP(index_add, o.push_back(c.tensor().index_add(c.dim(), c.index(4), c.tensor(), c.scalar()))),
      OP(index_copy, o.push_back(c.tensor().index_copy(c.dim(), c.index(4), c.tensor()))),
      OP(index_fill, {
        o.push_back(index_fill(c.tensor(), c.dim(), c.index(4), c.tensor()));
        c.tensor().index_fill(c.dim(), c.index(4), c.scalar());
      }),
      OP(masked_fill, {
        o.push_back(masked_fill(c.tensor(), c.tensor(kBool), c.scalar()));
        o.push_back(masked_fill(c.tensor(), c.tensor(kBool), c.tensor()));
      }),
      OP(masked_select, o.push_back(masked_select(c.tensor(), c.tensor(kBool)))),
      OP(masked_scatter, o.push_back(c.tensor().masked_scatter(c.tensor(kBool), c.tensor()))),
      OP(index, {
        std::vector<Tensor> idx(c.u() % 3);
        for (auto& i : idx) i = c.coin(4) ? Tensor() : (c.coin(3) ? c.tensor(kBool) : c.index(3));
        o.push_back(c.tensor().index(idx));
        // libtorch-style index lists: ints, slices, None, ..., bools and tensors mixed.
        std::vector<indexing::TensorIndex> items;
        for (int k = static_cast<int>(c.u() % 4); k >= 0; --k) {
          switch (c.u() % 6) {
            case 0: items.emplace_back(c.integer()); break;
            case 1: items.emplace_back(indexing::Slice(c.integer(), c.integer(), c.coin() ? 1 : c.integer())); break;
            case 2: items.emplace_back(indexing::None); break;
            case 3: items.emplace_back(indexing::Ellipsis); break;
            case 4: items.emplace_back(c.coin()); break;
            default: items.emplace_back(c.coin(3) ? c.tensor(kBool) : c.index(3)); break;
          }
        }
        o.push_back(c.tensor().index(items));
      }),
      OP(index_put_, {
        std::vector<Tensor> idx(c.u() % 3);
        for (auto& i : idx) i = c.coin(3) ? c.tensor(kBool) : c.index(3);
        c.tensor().detach().clone().index_put_(idx, c.tensor(), c.coin());
        std::vector<indexing::TensorIndex> items = {c.integer(), indexing::Slice(c.integer(), c.integer())};
        c.tensor().detach().clone().index_put_(items, c.scalar());
        c.tensor().detach().clone().index_put_(items, c.tensor());
      }),
      OP(nonzero, nonzero(c.tensor())),
      OP(bincount, bincount(c.tensor(c.coin() ? kInt64 : c.dtype()), c.maybe(c.tensor()), c.integer())),
      OP(searchsorted, searchsorted(c.tensor(), c.tensor(), c.coin(), c.coin())),
      OP(scatter_, c.tensor().detach().clone().scatter_(c.dim(), c.tensor(kInt64).abs(), c.tensor())),
      OP(scatter_add_, c.tensor().detach().clone().scatter_add_(c.dim(), c.tensor(kInt64).abs(), c.tensor())),
      OP(scatter_reduce_, c.tensor().detach().clone().scatter_reduce_(c.dim(), c.tensor(kInt64).abs(), c.tensor(), "amax")),
      OP(index_add_, c.tensor().detach().clone().index_add_(c.dim(), c.index(4), c.tensor())),
      OP(index_copy_, c.tensor().detach().clone().index_copy_(c.dim(), c.index(4), c.tensor())),
      OP(index_fill_, {
        Tensor t = c.tensor().detach().clone();
        t.index_fill_(c.dim(), c.index(4), c.scalar());
        index_fill_(t, c.dim(), c.index(4), c.tensor());
      }),
      OP(masked_fill_, {
        Tensor t = c.tensor().detach().clone();
        t.masked_fill_(c.tensor(kBool), c.scalar());
        masked_fill_(t, c.tensor(kBool), c.tensor());
      }),
      OP(masked_scatter_, c.tensor().detach().clone().masked_scatter_(c.tensor(kBool), c.tensor())),
      // sorting
      OP(sort, o.push_back(std::get<0>(sort(c.tensor(), c.dim(), c.coin(), c.coin())))),
      OP(argsort, argsort(c.tensor(), c.dim(), c.coin())),
      OP(topk, o.push_back(std::get<0>(topk(c.tensor(), c.integer(), c.dim(), c.coin(), c.coin())))),
      OP(kthvalue, o.push_back(std::get<0>(kthvalue(c.tensor(), c.integer(), c.dim(), c.coin())))),
      OP(unique, unique(c.tensor(), c.coin(), c.coin(), c.coin())),
      // convolution and pooling
      OP(conv1d, {
        o.push_back(conv1d(c.tensor(), c.tensor(), c.maybe(c.tensor()), c.ints(2), c.ints(2), c.ints(2), c.integer()));
        o.push_back(conv1d(c.tensor(), c.tensor(), {}, 1, c.coin() ? "same" : "valid"));
      }),
      OP(conv2d, {
        o.push_back(conv2d(c.tensor(), c.tensor(), c.maybe(c.tensor()), c.ints(2), c.ints(2), c.ints(2), c.integer()));
        o.push_back(conv2d(c.tensor(), c.tensor(), {}, 1, c.coin() ? "same" : "bogus"));
      }),
      OP(conv_transpose1d, o.push_back(conv_transpose1d(c.tensor(), c.tensor(), c.maybe(c.tensor()), c.ints(2), c.ints(2), c.ints(2), c.integer(), c.ints(2)))),
      OP(conv_transpose2d, o.push_back(conv_transpose2d(c.tensor(), c.tensor(), c.maybe(c.tensor()), c.ints(2), c.ints(2), c.ints(2), c.integer(), c.ints(2)))),
      OP(max_pool2d, o.push_back(max_pool2d(c.tensor(), c.ints(2), c.ints(2), c.ints(2), c.ints(2), c.coin()))),
      OP(max_pool2d_with_indices, o.push_back(std::get<0>(max_pool2d_with_indices(c.tensor(), c.ints(2), c.ints(2), c.ints(2), c.ints(2), c.coin())))),
      OP(avg_pool2d, o.push_back(avg_pool2d(c.tensor(), c.ints(2), c.ints(2), c.ints(2), c.coin(), c.coin(), c.coin() ? std::nullopt : std::optional<int64_t>(c.integer())))),
      OP(adaptive_avg_pool2d, o.push_back(adaptive_avg_pool2d(c.tensor(), c.ints(2)))),
      OP(max_pool1d, o.push_back(max_pool1d(c.tensor(), c.ints(1), c.ints(1), c.ints(1), c.ints(1), c.coin()))),
      OP(avg_pool1d, o.push_back(avg_pool1d(c.tensor(), c.ints(1), c.ints(1), c.ints(1), c.coin(), c.coin()))),
      // int8 quantization (quant/fake_quant.h, quant/quantized_ops.h): hostile arguments, and
      // now and then a consistent case that reaches the kernels.
      OP(fake_quantize_per_tensor_affine, {
        const bool sane = c.coin();
        o.push_back(quant::fake_quantize_per_tensor_affine(c.tensor(), sane ? 0.1 : c.real(), sane ? 3 : c.integer(),
                                                           sane ? 0 : c.integer(), sane ? 127 : c.integer()));
      }),
      OP(fake_quantize_per_channel_affine, {
        Tensor x = c.tensor();
        const int64_t axis = c.coin() && x.dim() > 0 ? static_cast<int64_t>(c.u() % static_cast<uint64_t>(x.dim())) : c.dim();
        const int64_t n = axis >= 0 && axis < x.dim() && c.coin() ? x.size(axis) : c.size();
        const Tensor scale = c.coin() ? rand({n}) + 0.01 : c.tensor();
        const Tensor zp = c.coin() ? randint(0, 10, {n}).to(c.coin() ? kInt32 : kInt64) : c.tensor();
        o.push_back(quant::fake_quantize_per_channel_affine(x, scale, zp, axis, c.coin() ? 0 : c.integer(),
                                                            c.coin() ? 127 : c.integer()));
      }),
      OP(quantize_per_tensor, quant::quantize_per_tensor(c.tensor(), c.coin() ? 0.05 : c.real(), c.integer(),
                                                         c.coin() ? 0 : c.integer(), c.coin() ? 127 : c.integer())),
      OP(dequantize_per_tensor, quant::dequantize_per_tensor(c.tensor(c.coin() ? std::optional<DType>(kUInt8) : std::nullopt),
                                                             c.coin() ? 0.05 : c.real(), c.integer())),
      OP(quantized_conv2d, {
        Tensor x = c.tensor(), w = c.tensor(kInt8), s = c.tensor(kFloat32), b = c.maybe(c.tensor(kFloat32));
        if (c.coin()) {  // consistent shapes
          const int64_t C = 1 + static_cast<int64_t>(c.u() % 3), OC = 1 + static_cast<int64_t>(c.u() % 4);
          x = randn({static_cast<int64_t>(c.u() % 3), C, 1 + static_cast<int64_t>(c.u() % 7), 1 + static_cast<int64_t>(c.u() % 7)});
          if (c.coin()) x = quant::quantize_per_tensor(x, 0.05, 60);
          w = randint(-128, 128, {OC, C, 1 + static_cast<int64_t>(c.u() % 3), 1 + static_cast<int64_t>(c.u() % 3)}).to(kInt8);
          s = rand({OC}) + 0.01;
          b = c.maybe(randn({OC}));
        }
        const double sc = c.coin() ? 0.05 : c.real();
        quant::quantized_conv2d(x, w, s, b, c.coin() ? c.ints(2) : std::vector<int64_t>{1}, c.ints(2),
                                c.coin() ? c.ints(2) : std::vector<int64_t>{1}, c.coin() ? 1 : c.integer(), sc, c.integer(),
                                c.coin() ? 0.1 : c.real(), c.integer(), c.coin(), c.coin() ? kUInt8 : c.dtype());
      }),
      OP(quantized_linear, {
        Tensor x = c.tensor(), w = c.tensor(kInt8), s = c.tensor(kFloat32), b = c.maybe(c.tensor(kFloat32));
        if (c.coin()) {
          const int64_t K = static_cast<int64_t>(c.u() % 5), N = 1 + static_cast<int64_t>(c.u() % 5);
          x = randn({static_cast<int64_t>(c.u() % 3), K});
          w = randint(-128, 128, {N, K}).to(kInt8);
          s = rand({N}) + 0.01;
          b = c.maybe(randn({N}));
        }
        quant::quantized_linear(x, w, s, b, c.coin() ? 0.05 : c.real(), c.integer(), c.coin() ? 0.1 : c.real(),
                                c.integer(), c.coin(), c.coin() ? kFloat32 : c.dtype());
      }),
      OP(quantized_max_pool2d, quant::quantized_max_pool2d(
                                   c.coin() ? quant::quantize_per_tensor(randn({2, 3, 5, 4}), 0.1, 64) : c.tensor(kUInt8),
                                   c.ints(2), c.ints(2), c.ints(2), c.ints(2), c.coin())),
      OP(quantized_add, {
        Tensor a = c.tensor(), b = c.tensor();
        if (c.coin()) {  // consistent: conv-like channels-last codes, a broadcast, or float values
          a = quant::quantize_per_tensor(randn({2, 3, 4, 5}), 0.05, 60);
          b = c.coin() ? quant::quantize_per_tensor(randn({2, 3, 4, 5}), 0.07, 30).permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2})
                       : (c.coin() ? randn({1, 3, 1, 5}) : quant::quantize_per_tensor(randn({5}), 0.1, 64));
        }
        quant::quantized_add(a, c.coin() ? 0.05 : c.real(), c.coin() ? 60 : c.integer(), b, c.coin() ? 0.07 : c.real(),
                             c.coin() ? 30 : c.integer(), c.coin() ? 0.1 : c.real(), c.coin() ? 50 : c.integer(), c.coin(),
                             c.coin() ? kUInt8 : c.dtype());
      }),
      OP(quantized_cat, {
        std::vector<Tensor> xs = tensors(c);
        if (c.coin()) xs = {quant::quantize_per_tensor(randn({2, 3, 4}), 0.05, 60), randn({2, 1, 4}),
                            quant::quantize_per_tensor(randn({2, 2, 4}), 0.05, 60)};
        std::vector<double> sc(c.coin() ? xs.size() : c.u() % 4, c.coin() ? 0.05 : c.real());
        std::vector<int64_t> zp(c.coin() ? xs.size() : c.u() % 4, c.coin() ? 60 : c.integer());
        quant::quantized_cat(xs, sc, zp, c.coin() ? 1 : c.dim(), c.coin() ? 0.1 : c.real(), c.coin() ? 40 : c.integer(),
                             c.coin() ? kUInt8 : c.dtype());
      }),
      OP(quantized_avg_pool2d, quant::quantized_avg_pool2d(
                                   c.coin() ? quant::quantize_per_tensor(randn({2, 3, 5, 4}), 0.1, 64) : c.tensor(kUInt8),
                                   c.coin() ? 64 : c.integer(), c.ints(2), c.ints(2), c.ints(2), c.coin(), c.coin(),
                                   c.coin() ? std::nullopt : std::optional<int64_t>(c.integer()))),
      OP(quantized_adaptive_avg_pool2d, quant::quantized_adaptive_avg_pool2d(
                                            c.coin() ? quant::quantize_per_tensor(randn({2, 3, 5, 4}), 0.1, 64) : c.tensor(kUInt8),
                                            c.coin() ? 64 : c.integer(), c.ints(2))),
      // ONNX's int8 operators (quant/qlinear.h): grids as tensors, hostile or consistent.
      OP(quantize_linear, quant::quantize_linear(c.tensor(), c.coin() ? full({}, 0.1) : c.tensor(),
                                                 c.coin() ? Tensor() : c.tensor(c.coin() ? kUInt8 : kInt8), c.integer())),
      OP(dequantize_linear, quant::dequantize_linear(c.tensor(c.coin() ? std::optional<DType>(kUInt8) : std::nullopt),
                                                     c.coin() ? full({}, 0.1) : c.tensor(),
                                                     c.coin() ? Tensor() : c.tensor(kUInt8), c.integer())),
      OP(qlinear_conv2d, {
        Tensor x = c.tensor(kUInt8), w = c.tensor(kInt8), ws = c.tensor(kFloat32), wz = c.maybe(c.tensor(kInt8)),
               b = c.maybe(c.tensor(kInt32));
        if (c.coin()) {  // consistent shapes, codes over the whole range
          const int64_t C = 1 + static_cast<int64_t>(c.u() % 3), OC = 1 + static_cast<int64_t>(c.u() % 4);
          x = randint(0, 256, {static_cast<int64_t>(c.u() % 3), C, 1 + static_cast<int64_t>(c.u() % 7),
                               1 + static_cast<int64_t>(c.u() % 7)}).to(kUInt8);
          w = randint(-128, 128, {OC, C, 1 + static_cast<int64_t>(c.u() % 3), 1 + static_cast<int64_t>(c.u() % 3)}).to(kInt8);
          ws = rand({OC}) + 0.01;
          wz = zeros({OC}, TensorOptions(kInt8));
          b = c.maybe(randint(-100, 100, {OC}).to(kInt32));
        }
        const Tensor s = c.coin() ? full({}, 0.05) : c.tensor(), z = c.coin() ? zeros({}, TensorOptions(kUInt8)) : c.tensor();
        quant::qlinear_conv2d(x, s, z, w, ws, wz, c.coin() ? full({}, 0.1) : c.tensor(), z, b,
                              c.coin() ? c.ints(2) : std::vector<int64_t>{1}, c.ints(2),
                              c.coin() ? c.ints(2) : std::vector<int64_t>{1}, c.coin() ? 1 : c.integer());
      }),
      OP(qlinear_matmul, {
        Tensor a = c.tensor(kUInt8), b = c.tensor(kInt8), bs = c.tensor(kFloat32);
        if (c.coin()) {
          const int64_t K = static_cast<int64_t>(c.u() % 5), N = 1 + static_cast<int64_t>(c.u() % 5);
          a = randint(0, 256, {static_cast<int64_t>(c.u() % 3), K}).to(kUInt8);
          b = randint(-128, 128, {K, N}).to(kInt8);
          bs = c.coin() ? rand({N}) + 0.01 : full({}, 0.02);
        }
        const Tensor s = full({}, c.coin() ? 0.05 : c.real()), z = zeros({}, TensorOptions(kUInt8));
        quant::qlinear_matmul(a, s, c.coin() ? z : c.tensor(), b, bs, c.maybe(c.tensor(kInt8)), s, z);
      }),
      OP(qlinear_add, {
        const Tensor s = c.coin() ? full({}, 0.05) : c.tensor(), z = c.coin() ? Tensor() : c.tensor(kUInt8);
        quant::qlinear_add(c.tensor(kUInt8), s, z, c.tensor(kUInt8), s, z, c.coin() ? full({}, 0.1) : c.tensor(), z);
      }),
      OP(qlinear_concat, {
        std::vector<Tensor> xs = tensors(c);
        const Tensor s = c.coin() ? full({}, 0.05) : c.tensor(), z = c.coin() ? zeros({}, TensorOptions(kUInt8)) : c.tensor();
        std::vector<Tensor> scales(c.coin() ? xs.size() : c.u() % 4, s), zps(c.coin() ? xs.size() : c.u() % 4, z);
        if (c.coin()) {
          for (Tensor& x : xs) x = x.to(kUInt8);
        }
        quant::qlinear_concat(xs, scales, zps, s, z, c.coin() ? 0 : c.dim());
      }),
      OP(qlinear_avg_pool2d, {
        const Tensor s = c.coin() ? full({}, 0.05) : c.tensor(), z = c.coin() ? zeros({}, TensorOptions(kUInt8)) : c.tensor();
        quant::qlinear_avg_pool2d(c.coin() ? randint(0, 256, {2, 3, 5, 4}).to(kUInt8) : c.tensor(kUInt8), s, z, s, z,
                                  c.ints(2), c.ints(2), c.ints(2), c.coin(), c.coin());
      }),
      OP(qlinear_global_avg_pool2d, {
        const Tensor s = c.coin() ? full({}, 0.05) : c.tensor(), z = c.coin() ? zeros({}, TensorOptions(kUInt8)) : c.tensor();
        quant::qlinear_global_avg_pool2d(c.coin() ? randint(0, 256, {2, 3, 5, 4}).to(kUInt8) : c.tensor(kUInt8), s, z,
                                         full({}, 0.1), z);
      }),
      // nn::functional
      OP(leaky_relu, o.push_back(F::leaky_relu(c.tensor(), c.real()))),
      OP(dropout, o.push_back(F::dropout(c.tensor(), c.real(), c.coin()))),
      OP(batch_norm, o.push_back(F::batch_norm(c.tensor(), c.maybe(c.tensor()), c.maybe(c.tensor()), c.maybe(c.tensor()), c.maybe(c.tensor()), c.coin(), c.real(), c.real()))),
      OP(layer_norm, o.push_back(F::layer_norm(c.tensor(), c.ints(2), c.maybe(c.tensor()), c.maybe(c.tensor()), c.real()))),
      OP(group_norm, o.push_back(F::group_norm(c.tensor(), c.integer(), c.maybe(c.tensor()), c.maybe(c.tensor()), c.real()))),
      OP(embedding, o.push_back(F::embedding(c.tensor(kInt64), c.tensor(), c.coin() ? std::nullopt : std::optional<int64_t>(c.integer()), c.coin() ? std::nullopt : std::optional<double>(c.real()), c.real()))),
      OP(bilinear, o.push_back(F::bilinear(c.tensor(), c.tensor(), c.tensor(), c.maybe(c.tensor())))),
      OP(scaled_dot_product_attention, o.push_back(F::scaled_dot_product_attention(c.tensor(), c.tensor(), c.tensor(), c.maybe(c.tensor()), c.coin() ? 0.0 : c.real(), c.coin()))),
      OP(mse_loss, o.push_back(F::mse_loss(c.tensor(), c.tensor(), c.reduction()))),
      OP(l1_loss, o.push_back(F::l1_loss(c.tensor(), c.tensor(), c.reduction()))),
      OP(smooth_l1_loss, o.push_back(F::smooth_l1_loss(c.tensor(), c.tensor(), c.reduction(), c.real()))),
      OP(huber_loss, o.push_back(F::huber_loss(c.tensor(), c.tensor(), c.reduction(), c.real()))),
      OP(nll_loss, o.push_back(F::nll_loss(c.tensor(), c.tensor(kInt64), c.maybe(c.tensor()), c.integer(), c.reduction()))),
      OP(cross_entropy, o.push_back(F::cross_entropy(c.tensor(), c.coin() ? c.tensor(kInt64) : c.tensor(), c.maybe(c.tensor()), c.integer(), c.reduction(), c.real()))),
      OP(binary_cross_entropy, o.push_back(F::binary_cross_entropy(c.tensor().sigmoid(), c.tensor(), c.maybe(c.tensor()), c.reduction()))),
      OP(binary_cross_entropy_with_logits, o.push_back(F::binary_cross_entropy_with_logits(c.tensor(), c.tensor(), c.maybe(c.tensor()), c.maybe(c.tensor()), c.reduction()))),
      OP(kl_div, o.push_back(F::kl_div(c.tensor(), c.tensor(), c.reduction(), c.coin()))),
      // autograd surface
      OP(backward, {
        Tensor t = c.tensor();
        Tensor y = t.mul(2);
        y.backward(c.coin() ? Tensor() : c.tensor());
      }),
      OP(grad, (void)c.tensor().grad()),
      OP(set_grad, c.tensor().detach().requires_grad_().set_grad(c.tensor())),
      OP(retain_grad, c.tensor().mul(1).retain_grad()),
  };
  return table;
}

#undef OP

// ---- the run: watchdog, crash reporting ----

std::atomic<int64_t> g_call_start_ms{0};
std::atomic<int64_t> g_call{-1};
std::atomic<const char*> g_op{""};
uint64_t g_seed = 0;
int64_t g_returned = 0;  // calls whose op returned (the rest threw ember::Error)

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void print_current(const char* why) {
  char buf[512];
  const int n = std::snprintf(buf, sizeof(buf),
                              "\n[ember_fuzz] FAILED (%s) at call %lld, op %s\n[ember_fuzz] reproduce: ember_fuzz "
                              "--seed %llu --first %lld --count 1\n",
                              why, static_cast<long long>(g_call.load()), g_op.load(),
                              static_cast<unsigned long long>(g_seed), static_cast<long long>(g_call.load()));
  if (n > 0) (void)!::write(2, buf, static_cast<size_t>(std::min<int>(n, sizeof(buf) - 1)));
}

void on_signal(int sig) {
  print_current(sig == SIGSEGV ? "SIGSEGV" : sig == SIGABRT ? "SIGABRT" : sig == SIGFPE ? "SIGFPE" : "signal");
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void on_sanitizer_death() { print_current("sanitizer report"); }

// Runs one call; returns false on a contract violation.
bool run_call(const OpEntry& op, uint64_t seed, int64_t index, bool backward) {
  Ctx c{std::mt19937_64(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(index))};
  manual_seed(seed * 31 + static_cast<uint64_t>(index));  // tensor values too depend only on (seed, index)
  g_op = op.name;
  g_call = index;
  g_call_start_ms = now_ms();
  try {
    std::vector<Tensor> outs;
    try {
      op.body(c, outs);
      ++g_returned;
    } catch (const Error&) {
    }
    if (backward) {
      for (const Tensor& t : outs) {
        if (!t.defined() || !t.requires_grad()) continue;
        try {
          t.sum().backward();
        } catch (const Error&) {
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\n[ember_fuzz] op %s threw %s (not ember::Error): %s\n", op.name, typeid(e).name(), e.what());
    print_current("wrong exception type");
    return false;
  } catch (...) {
    print_current("unknown exception");
    return false;
  }
  g_call_start_ms = 0;
  return true;
}

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

// ---- coverage: the public op names declared in the op headers ----

std::set<std::string> declared_ops(const std::string& src) {
  const char* headers[] = {"ops/creation.h", "ops/pointwise.h", "ops/reduce.h", "ops/linalg.h", "ops/view.h",
                           "ops/join.h",     "ops/index.h",     "ops/sort.h",   "ops/conv.h",   "ops/pool.h",
                           "nn/functional.h", "nn/loss.h",      "core/tensor.h",
                           "quant/fake_quant.h", "quant/quantized_ops.h", "quant/qlinear.h"};
  // A declaration that returns tensors: `Tensor name(`, `Tensor& name(`, `std::vector<Tensor> name(`,
  // `std::tuple<...> name(`, `bool name(` (allclose, equal, can_cast), `DimVector name(`.
  const std::regex decl(
      R"(^\s*(?:inline\s+)?(?:Tensor&?|std::vector<Tensor>|std::tuple<[^>]*>|DimVector|bool)\s+([a-z_][a-z0-9_]*)\()");
  // Accessors and autograd plumbing that are not ops.
  const std::set<std::string> not_ops = {"defined", "is_contiguous", "is_floating_point", "is_cpu", "is_alias_of",
                                         "is_same_storage", "is_same", "requires_grad", "is_leaf", "retains_grad",
                                         "is_inference", "is_view", "_base", "self_mut", "mutable_grad", "register_hook_impl", "get", "set_requires_grad", "forward",
                                         "operator", "is_signed", "cpu", "data", "variable_data", "tensor_data",
                                         // TensorDataContainer (creation.h) accessors
                                         "convert", "is_init_list", "is_scalar", "is_tensor"};
  std::set<std::string> out;
  for (const char* h : headers) {
    std::ifstream in(src + "/src/ember/" + h);
    if (!in) {
      std::fprintf(stderr, "[ember_fuzz] cannot read %s/src/ember/%s\n", src.c_str(), h);
      std::exit(2);
    }
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (std::regex_search(line, m, decl) && !not_ops.count(m[1].str())) out.insert(m[1].str());
    }
  }
  // The element-wise ops declared by the op table (Note [Element-wise op table]): their
  // declarations are generated, so no header line names them.
#define EMBER_UNARY(Id, name, ...) out.insert(#name);
#define EMBER_UNARY_P1(Id, name, ...) out.insert(#name);
#define EMBER_UNARY_P2(Id, name, ...) out.insert(#name);
#define EMBER_BINARY(Id, name, ...) out.insert(#name);
#include "ember/ops/pointwise_ops.h"
#undef EMBER_UNARY
#undef EMBER_UNARY_P1
#undef EMBER_UNARY_P2
#undef EMBER_BINARY
  return out;
}

int check_coverage(const std::string& src) {
  std::set<std::string> fuzzed;
  for (const OpEntry& e : op_table()) fuzzed.insert(e.name);
  int missing = 0;
  const std::set<std::string> declared = declared_ops(src);
  for (const std::string& name : declared) {
    if (!fuzzed.count(name)) {
      std::fprintf(stderr, "[ember_fuzz] public op '%s' is declared but has no OP(...) line in tests/fuzz/op_fuzz.cpp\n",
                   name.c_str());
      ++missing;
    }
  }
  std::printf("[ember_fuzz] %zu public op names declared, %zu fuzzed, %d missing\n", declared.size(), fuzzed.size(),
              missing);
  return missing == 0 ? 0 : 1;
}


// ---- file readers: checkpoints, IDX files, token files ----
// Each iteration mutates a valid file (bit flips, byte overwrites, truncation, insertion,
// crafted header lengths) and reads it back. A checkpoint that still loads must equal the
// original (no silent load of changed data: ember checkpoints carry a checksum).

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spill(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string mutate(Ctx& c, std::string b) {
  if (c.coin(64)) {  // a JSON bomb: a header of up to 4 MB of two-byte values (Note [Load memory bound])
    const size_t n = 1 + c.u() % (2u << 20);
    std::string h = R"({"a":[0)";
    h.reserve(n * 2 + 16);
    for (size_t k = 1; k < n; ++k) h += c.coin(4) ? ",[]" : ",0";
    h += "]}";
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((h.size() >> (8 * i)) & 0xFF);
    return out + h;
  }
  const int edits = 1 + static_cast<int>(c.u() % 3);
  for (int k = 0; k < edits && !b.empty(); ++k) {
    const size_t at = c.coin(3) ? c.u() % std::min<size_t>(b.size(), 256) : c.u() % b.size();
    switch (c.u() % 6) {
      case 0: b[at] = static_cast<char>(b[at] ^ (1 << (c.u() % 8))); break;
      case 1: b[at] = static_cast<char>(c.u()); break;
      case 2: b.resize(c.u() % b.size()); break;
      case 3: b.insert(at, std::string(1 + c.u() % 8, static_cast<char>(c.u()))); break;
      case 4:  // a crafted 8-byte length field
        if (b.size() >= 8) {
          const uint64_t v = c.coin() ? c.u() : c.u() % (b.size() * 2);
          for (int i = 0; i < 8; ++i) b[static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
        }
        break;
      default: {  // a digit in the JSON header becomes a huge number
        const size_t d = b.find_first_of("0123456789", std::min<size_t>(8, b.size()));
        if (d != std::string::npos && d < 4096) b.insert(d, c.coin() ? "99999999999999999999" : "1e999");
      }
    }
  }
  return b;
}

// A Value with a few of its numbers, strings and list lengths changed (graph fuzzing).
Value mutate_value(Ctx& c, const Value& v, int depth = 0) {
  const bool hit = c.coin(depth < 2 ? 6 : 12);
  switch (v.kind()) {
    case Value::Kind::Int:
      if (!hit) return v;
      return Value(c.coin() ? v.to_int() + static_cast<int64_t>(c.u() % 7) - 3 : c.integer());
    case Value::Kind::Double: return hit ? Value(c.coin() ? -v.to_double() : 1e308) : v;
    case Value::Kind::String:
      if (!hit) return v;
      return Value(c.coin() ? std::string("frobnicate") : c.coin() ? std::string("f64") : std::string());
    case Value::Kind::Bool: return hit ? Value(!v.to_bool()) : v;
    case Value::Kind::List: {
      Value::List out;
      for (const Value& e : v.to_list()) {
        if (hit && c.coin(4)) continue;  // drop an element
        out.push_back(mutate_value(c, e, depth + 1));
      }
      if (hit && c.coin(4) && !out.empty()) out.push_back(out.front());
      return Value(out);
    }
    case Value::Kind::Dict: {
      Value::Dict out;
      for (const auto& it : v.to_dict()) {
        if (hit && c.coin(8)) continue;  // drop a key
        out.insert(it.key(), mutate_value(c, it.value(), depth + 1));
      }
      return Value(out);
    }
    default: return v;
  }
}

// An ember-serve request body (KServe v2 JSON) for the JSON reader's differential check.
constexpr const char* kServeBody =
    R"({"id": "r1", "inputs": [{"name": "x", "shape": [2, 3], "datatype": "FP32", )"
    R"("data": [[1, -2.5, 3e2], [0, 7, -0.125]]}, {"name": "ids", "shape": [3], "datatype": "INT64", )"
    R"("data": [9007199254740993, -1, 42]}], "outputs": [{"name": "y", "parameters": {"binary_data": true}}]})";

// The leaves of a JSON document in order, compact number arrays expanded: equal strings for
// equal documents however they were read.
std::string json_leaves(const json::Json& j) {
  using T = json::Json::Type;
  switch (j.type) {
    case T::Null: return "n;";
    case T::Bool: return j.b ? "t;" : "f;";
    case T::Int: return "d" + std::to_string(static_cast<double>(j.i)) + ";";
    case T::Double: return "d" + std::to_string(j.d) + ";";
    case T::String: return "s" + j.s + ";";
    case T::Array: {
      std::string out = "[";
      if (j.compact) {
        for (double d : j.numbers) out += "d" + std::to_string(d) + ";";
      } else {
        for (const json::Json& e : j.array) out += json_leaves(e);
      }
      return out + "]";
    }
    case T::Object: {
      std::string out = "{";
      for (const auto& [k, v] : j.object) out += k + ":" + json_leaves(v);
      return out + "}";
    }
  }
  return "?";
}

int fuzz_files(uint64_t seed, int64_t count, double seconds) {
  char dir_tmpl[] = "/tmp/ember_fuzz_files_XXXXXX";
  const char* dir = mkdtemp(dir_tmpl);
  if (!dir) return 2;
  const std::string ckpt = std::string(dir) + "/valid.safetensors", mutated = std::string(dir) + "/m.safetensors";
  const std::string idx = std::string(dir) + "/valid.idx", tok = std::string(dir) + "/valid.bin";
  manual_seed(seed);
  Value original = Value::dict();
  original["w"] = randn({3, 4});
  original["step"] = int64_t{7};
  original["name"] = "fuzz";
  original["flags"] = tensor({true, false});
  original["nested"] = Value(Value::List{Value(1.5), Value(arange(6).reshape({2, 3}))});
  save(original, ckpt);
  data::write_idx(arange(24, TensorOptions(kUInt8)).reshape({2, 3, 4}), idx);
  spill(tok, std::string(64, '\x01'));
  // A model artifact (jit::save): a small traced graph with a dynamic batch dim.
  const std::string art = std::string(dir) + "/valid.ember";
  auto mlp = nn::Sequential(nn::Linear(4, 3), nn::ReLU(), nn::Linear(3, 2));
  mlp->eval();
  jit::TraceOptions topt;
  topt.dynamic_batch = true;
  const jit::GraphModule traced = jit::freeze(jit::trace(*mlp, randn({2, 4}), topt));
  jit::save(traced, art);
  const Value graph_value = jit::graph_to_value(traced.graph());
  const std::string valid[4] = {slurp(ckpt), slurp(idx), slurp(tok), slurp(art)};
  int64_t files = 0, loaded = 0, refused = 0;
  const int64_t t0 = now_ms();
  g_seed = seed;
  bool ok = true;
  for (int64_t i = 0; ok; ++i) {
    if (count >= 0 && i >= count) break;
    if (count < 0 && static_cast<double>(now_ms() - t0) > seconds * 1000.0) break;
    Ctx c{std::mt19937_64(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(i))};
    const int kind = static_cast<int>(i % 6);
    if (kind < 4) spill(mutated, mutate(c, valid[kind]));
    else spill(mutated, "");  // kind 4 writes a well-formed file of a hostile graph below
    g_op = kind == 0 ? "load" : kind == 1 ? "read_idx" : kind == 2 ? "TokenDataset" : kind == 3 ? "jit::load"
         : kind == 4 ? "jit::graph" : "json::parse";
    g_call = i;
    g_call_start_ms = now_ms();
    try {
      if (kind == 0) {
        const Value v = load(mutated);
        ++loaded;
        if (!(v == original)) {
          std::fprintf(stderr, "\n[ember_fuzz] a mutated checkpoint loaded with changed data\n");
          print_current("silent load of changed data");
          ok = false;
        }
      } else if (kind == 1) {
        data::read_idx(mutated).sum();
        ++loaded;
      } else if (kind == 3) {
        // A damaged artifact is refused (checksum) or, if it loads, is the original.
        const jit::GraphModule m = jit::load(mutated);
        ++loaded;
        if (m.graph().str() != traced.graph().str()) {
          std::fprintf(stderr, "\n[ember_fuzz] a mutated artifact loaded with a changed graph\n");
          print_current("silent load of a changed graph");
          ok = false;
        }
      } else if (kind == 5) {
        // A mutated inference request (ember-serve's JSON): the compact-number reading and the
        // general one agree on every document, refused or read (the same numbers, in order).
        const std::string text = mutate(c, kServeBody);
        std::string general, compact;
        bool general_ok = true, compact_ok = true;
        try {
          general = json_leaves(json::parse(text, 64, text.size() + 16));
        } catch (const json::ParseError&) {
          general_ok = false;
        }
        try {
          compact = json_leaves(json::parse(text, 64, text.size() + 16, nullptr, /*compact_numbers=*/true));
        } catch (const json::ParseError&) {
          compact_ok = false;
        }
        if (general_ok != compact_ok || general != compact) {
          std::fprintf(stderr, "\n[ember_fuzz] compact and general JSON readings differ on: %s\n", text.c_str());
          print_current("json compact_numbers mismatch");
          ok = false;
        }
        general_ok ? ++loaded : ++refused;
      } else if (kind == 4) {
        // A checksummed file whose graph is hostile (ids, shapes, attributes, ops changed):
        // refused with ember::Error or run; never a crash.
        Value hostile = mutate_value(c, graph_value);
        jit::Graph g = jit::graph_from_value(hostile);
        for (const auto& [id, t] : traced.graph().values) {
          if (id < static_cast<int>(g.vars.size())) g.values[id] = t;
        }
        jit::GraphModule m(std::move(g));
        m.run({randn({1 + static_cast<int64_t>(c.u() % 3), 4})});
        ++loaded;
      } else {
        data::TokenDataset ds(mutated, 1 + static_cast<int64_t>(c.u() % 80),
                              c.coin() ? data::TokenDType::UInt16 : data::TokenDType::UInt32);
        for (int64_t k = 0; k < std::min<int64_t>(ds.size(), 4); ++k) ds.get(k);
        ++loaded;
      }
    } catch (const Error&) {
      ++refused;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "\n[ember_fuzz] %s threw %s: %s\n", g_op.load(), typeid(e).name(), e.what());
      print_current("wrong exception type");
      ok = false;
    }
    g_call_start_ms = 0;
    ++files;
  }
  std::filesystem::remove_all(dir);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("[ember_fuzz] files: %lld mutated files (%lld read, %lld refused) in %.1f s, seed %llu, "
              "peak RSS %.0f MB: %s\n",
              static_cast<long long>(files), static_cast<long long>(loaded), static_cast<long long>(refused),
              static_cast<double>(now_ms() - t0) / 1000.0, static_cast<unsigned long long>(seed),
              static_cast<double>(usage.ru_maxrss) / 1024.0, ok ? "no failures" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace ember::fuzz

int main(int argc, char** argv) {
  using namespace ember::fuzz;
  uint64_t seed = static_cast<uint64_t>(env_int("EMBER_FUZZ_SEED", static_cast<int64_t>(std::random_device{}() & 0x7fffffff)));
  double seconds = static_cast<double>(env_int("EMBER_FUZZ_SECONDS", 60));
  int64_t count = env_int("EMBER_FUZZ_COUNT", -1);
  int64_t first = 0;
  bool files = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--seed") seed = std::strtoull(next(), nullptr, 10);
    else if (a == "--seconds") seconds = std::strtod(next(), nullptr);
    else if (a == "--count") count = std::strtoll(next(), nullptr, 10);
    else if (a == "--first") first = std::strtoll(next(), nullptr, 10);
    else if (a == "--check-coverage") return check_coverage(next());
    else if (a == "--files") files = true;
    else if (a == "--list") {
      for (const OpEntry& e : op_table()) std::printf("%s\n", e.name);
      return 0;
    } else {
      std::fprintf(stderr, "usage: ember_fuzz [--seed S] [--seconds T] [--count N] [--first N] [--list] "
                           "[--check-coverage SRC_DIR] [--files]\n");
      return 2;
    }
  }
  g_seed = seed;
  std::printf("[ember_fuzz] seed %llu (reproduce: ember_fuzz --seed %llu)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL}) std::signal(sig, on_signal);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_sanitizer_death);
  ember::manual_seed(seed);

  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const int64_t start = g_call_start_ms.load();
      if (start != 0 && now_ms() - start > 5000) {
        print_current("hang: one call ran longer than 5 s");
        std::_Exit(1);
      }
    }
  });

  if (files) {
    const int rc = fuzz_files(seed, count, seconds);
    done = true;
    watchdog.join();
    return rc;
  }
  const auto& table = op_table();
  std::map<std::string, int64_t> reached;
  const int64_t t0 = now_ms();
  int64_t calls = 0;
  bool ok = true;
  for (int64_t i = first; ok; ++i) {
    if (count >= 0 && i - first >= count) break;
    if (count < 0 && static_cast<double>(now_ms() - t0) > seconds * 1000.0) break;
    const OpEntry& op = table[static_cast<size_t>(i % static_cast<int64_t>(table.size()))];
    ok = run_call(op, seed, i, i % 3 != 2);
    ++reached[op.name];
    ++calls;
  }
  done = true;
  watchdog.join();
  std::printf("[ember_fuzz] %lld calls (%lld returned, the rest threw ember::Error) in %.1f s, %zu of %zu ops "
              "reached, seed %llu: %s\n",
              static_cast<long long>(calls), static_cast<long long>(g_returned), static_cast<double>(now_ms() - t0) / 1000.0, reached.size(), table.size(),
              static_cast<unsigned long long>(seed), ok ? "no failures" : "FAILED");
  return ok ? 0 : 1;
}
