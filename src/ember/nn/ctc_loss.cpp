// Connectionist temporal classification loss (Graves et al. 2006): the negative log of the
// probability, summed over every alignment, that log_probs spell the target with blanks
// between and around its labels and repeated labels merged.
//
// Note [CTC in double]: the forward (alpha) and backward (beta) recursions run in log space
// in double whatever the input dtype, one batch element at a time, and the gradient with
// respect to log_probs is formed in the forward whenever a graph is recorded (it costs one
// more array the size of log_probs, and spares keeping alpha for the backward). The
// gradient is PyTorch's: exp(lp) - exp(log(sum of alpha * beta over the label's
// positions) + nll - lp), i.e. the gradient seen by the logits under log_softmax, which
// is what training code back-propagates through.

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/parallel.h"
#include "ember/nn/functional_extra.h"
#include "ember/nn/modules/extra.h"
#include "ember/ops/creation.h"

namespace ember::nn {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double log_add(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

// The backward of the per-sequence losses: the gradient formed in the forward, scaled by
// each sequence's incoming gradient.
class CtcLossBackward0 final : public autograd::Node {
 public:
  CtcLossBackward0(Tensor grad, bool batched, DType dtype)
      : grad_(std::move(grad)), batched_(batched), dtype_(dtype) {}
  autograd::variable_list apply(autograd::variable_list&& grads) override {
    autograd::variable_list out(num_outputs());
    if (!grads[0].defined() || !should_compute_output(0)) return out;
    Tensor g = grads[0].to(kFloat64);
    g = batched_ ? g.view({1, -1, 1}) : g.view({1, 1});
    out[0] = (grad_ * g).to(dtype_);
    return out;
  }
  std::string name() const override { return "CtcLossBackward0"; }
  void release_variables() override { grad_ = Tensor(); }

 private:
  Tensor grad_;
  bool batched_;
  DType dtype_;
};

std::vector<int64_t> lengths_of(const Tensor& t, const char* what, int64_t N) {
  EMBER_CHECK(t.defined(), "[ctc_loss] ", what, " must be defined");
  EMBER_CHECK(!is_floating_point(t.dtype()) && t.dtype() != kBool, "[ctc_loss] ", what,
              " must be integral, got dtype ", t.dtype(), " (pass int64 lengths)");
  EMBER_CHECK(t.dim() <= 1 && t.numel() == N, "[ctc_loss] ", what, " must have one entry per sequence (", N,
              "), got sizes ", t.sizes());
  Tensor c = t.to(kInt64).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + N);
}

// Per-sequence negative log-likelihoods [N] (or a scalar for unbatched input).
Tensor ctc_nll(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
               const Tensor& target_lengths, int64_t blank, bool zero_infinity) {
  EMBER_CHECK(log_probs.defined() && targets.defined(), "[ctc_loss] log_probs and targets must be defined");
  EMBER_CHECK(log_probs.dim() == 3 || log_probs.dim() == 2, "[ctc_loss] log_probs must be [T, N, C] or [T, C], got ",
              log_probs.sizes());
  EMBER_CHECK(is_floating_point(log_probs.dtype()), "[ctc_loss] log_probs must be floating point, got ",
              log_probs.dtype());
  const bool batched = log_probs.dim() == 3;
  const int64_t T = log_probs.size(0), N = batched ? log_probs.size(1) : 1, C = log_probs.size(-1);
  EMBER_CHECK(blank >= 0 && blank < C, "[ctc_loss] blank must be in [0, ", C, "), got ", blank);
  EMBER_CHECK(!is_floating_point(targets.dtype()) && targets.dtype() != kBool,
              "[ctc_loss] targets must be integral class indices, got dtype ", targets.dtype());
  const std::vector<int64_t> in_len = lengths_of(input_lengths, "input_lengths", N);
  const std::vector<int64_t> tg_len = lengths_of(target_lengths, "target_lengths", N);
  Tensor tg = targets.to(kInt64).contiguous();
  const int64_t* tp = tg.data_ptr<int64_t>();
  // Where each target sequence starts in tg: rows of a padded [N, S] tensor, or runs of a
  // concatenated 1-D tensor.
  const bool padded = batched ? targets.dim() == 2 : targets.dim() == 1 && !batched;
  std::vector<int64_t> start(static_cast<size_t>(N));
  int64_t offset = 0;
  for (int64_t n = 0; n < N; ++n) {
    const auto un = static_cast<size_t>(n);
    EMBER_CHECK(in_len[un] >= 0 && in_len[un] <= T, "[ctc_loss] Expected input_lengths to have value at most ", T,
                ", but got value ", in_len[un], " for sequence ", n);
    EMBER_CHECK(tg_len[un] >= 0, "[ctc_loss] target_lengths must be non-negative, got ", tg_len[un]);
    if (padded) {
      const int64_t S = targets.size(-1);
      EMBER_CHECK(tg_len[un] <= S, "[ctc_loss] Expected tensor to have size at least ", tg_len[un],
                  " at dimension 1, but got size ", S, " for argument #2 'targets' (target_lengths[", n, "] = ",
                  tg_len[un], ")");
      start[un] = batched ? n * S : 0;
    } else {
      start[un] = offset;
      offset += tg_len[un];
    }
  }
  if (!padded) {
    EMBER_CHECK(targets.dim() == 1 && offset <= targets.numel(), "[ctc_loss] targets must be [N, S] padded or 1-D with ",
                "sum(target_lengths) = ", offset, " labels, got sizes ", targets.sizes());
  }
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t i = 0; i < tg_len[static_cast<size_t>(n)]; ++i) {
      const int64_t c = tp[start[static_cast<size_t>(n)] + i];
      EMBER_CHECK(c >= 0 && c < C && c != blank, "[ctc_loss] target labels must be in [0, ", C, ") and not blank (",
                  blank, "), got ", c, " in sequence ", n);
    }
  }

  const bool want_grad = autograd::needs_grad(log_probs);
  Tensor lp = log_probs.detach().to(kFloat64).contiguous();
  const double* L = lp.data_ptr<double>();
  Tensor nll = empty({N}, TensorOptions(kFloat64));
  double* out = nll.data_ptr<double>();
  Tensor grad = want_grad ? zeros(lp.sizes(), TensorOptions(kFloat64)) : Tensor();
  double* G = want_grad ? grad.data_ptr<double>() : nullptr;
  // lp[t, n, c] lives at (t * N + n) * C + c.
  parallel_for(0, N, 1, [&](int64_t b, int64_t e) {
    std::vector<double> alpha, beta, lcab;
    std::vector<int64_t> ext;
    for (int64_t n = b; n < e; ++n) {
      const auto un = static_cast<size_t>(n);
      const int64_t Tn = in_len[un], S = tg_len[un], Lx = 2 * S + 1;
      ext.assign(static_cast<size_t>(Lx), blank);
      for (int64_t s = 0; s < S; ++s) ext[static_cast<size_t>(2 * s + 1)] = tp[start[un] + s];
      auto at = [&](int64_t t, int64_t c) { return L[(t * N + n) * C + c]; };
      // Whether position s may be reached from s - 2 (a label differing from the previous one).
      auto skip = [&](int64_t s) {
        return s >= 2 && ext[static_cast<size_t>(s)] != blank &&
               ext[static_cast<size_t>(s)] != ext[static_cast<size_t>(s - 2)];
      };
      if (Tn == 0) {
        out[n] = S == 0 ? 0.0 : std::numeric_limits<double>::infinity();
        if (zero_infinity && std::isinf(out[n])) out[n] = 0.0;
        continue;
      }
      alpha.assign(static_cast<size_t>(Tn * Lx), kNegInf);
      auto A = [&](int64_t t, int64_t s) -> double& { return alpha[static_cast<size_t>(t * Lx + s)]; };
      A(0, 0) = at(0, blank);
      if (Lx > 1) A(0, 1) = at(0, ext[1]);
      for (int64_t t = 1; t < Tn; ++t) {
        for (int64_t s = 0; s < Lx; ++s) {
          double v = A(t - 1, s);
          if (s >= 1) v = log_add(v, A(t - 1, s - 1));
          if (skip(s)) v = log_add(v, A(t - 1, s - 2));
          A(t, s) = v == kNegInf ? kNegInf : v + at(t, ext[static_cast<size_t>(s)]);
        }
      }
      double ll = A(Tn - 1, Lx - 1);
      if (Lx > 1) ll = log_add(ll, A(Tn - 1, Lx - 2));
      const double loss = -ll;
      const bool inf = std::isinf(loss);
      out[n] = inf && zero_infinity ? 0.0 : loss;
      if (!want_grad) continue;
      if (inf) {
        // PyTorch: an infinite loss has a NaN-free gradient only under zero_infinity (zeros);
        // otherwise the formula's inf/NaN propagates, which the guards report.
        if (zero_infinity) continue;
      }
      beta.assign(static_cast<size_t>(Tn * Lx), kNegInf);
      auto B = [&](int64_t t, int64_t s) -> double& { return beta[static_cast<size_t>(t * Lx + s)]; };
      B(Tn - 1, Lx - 1) = at(Tn - 1, blank);
      if (Lx > 1) B(Tn - 1, Lx - 2) = at(Tn - 1, ext[static_cast<size_t>(Lx - 2)]);
      for (int64_t t = Tn - 2; t >= 0; --t) {
        for (int64_t s = 0; s < Lx; ++s) {
          double v = B(t + 1, s);
          if (s + 1 < Lx) v = log_add(v, B(t + 1, s + 1));
          if (s + 2 < Lx && skip(s + 2)) v = log_add(v, B(t + 1, s + 2));
          B(t, s) = v == kNegInf ? kNegInf : v + at(t, ext[static_cast<size_t>(s)]);
        }
      }
      lcab.assign(static_cast<size_t>(C), kNegInf);
      for (int64_t t = 0; t < Tn; ++t) {
        std::fill(lcab.begin(), lcab.end(), kNegInf);
        for (int64_t s = 0; s < Lx; ++s) {
          const auto c = static_cast<size_t>(ext[static_cast<size_t>(s)]);
          lcab[c] = log_add(lcab[c], A(t, s) + B(t, s));
        }
        double* g = G + (t * N + n) * C;
        for (int64_t c = 0; c < C; ++c) {
          const double l = at(t, c);
          g[c] = std::exp(l) - std::exp(lcab[static_cast<size_t>(c)] + loss - l);
        }
      }
    }
  });
  Tensor result = nll.to(log_probs.dtype());
  if (!batched) result = result.view({});
  if (want_grad) {
    auto node = std::make_shared<CtcLossBackward0>(grad, batched, log_probs.dtype());
    autograd::collect_next_edges(*node, {&log_probs});
    autograd::maybe_record_anomaly(*node);
    autograd::set_history(result, node);
  }
  return result;
}

}  // namespace

namespace functional {

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossFuncOptions& options) {
  OpScope scope("ctc_loss", {&log_probs, &targets, &input_lengths, &target_lengths});
  Tensor nll = ctc_nll(log_probs, targets, input_lengths, target_lengths, options.blank(), options.zero_infinity());
  switch (options.reduction()) {
    case Reduction::None:
      return nll;
    case Reduction::Sum:
      return nll.sum();
    default: {
      // Each loss over its target length (at least 1), then the batch mean.
      Tensor len = target_lengths.to(nll.dtype()).clamp_min(1.0);
      return (nll / (nll.dim() == 0 ? len.view({}) : len)).mean();
    }
  }
}

}  // namespace functional

Tensor CTCLossImpl::forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                            const Tensor& target_lengths) {
  return functional::ctc_loss(log_probs, targets, input_lengths, target_lengths, options);
}

void CTCLossImpl::pretty_print(std::ostream& stream) const { stream << "torch::nn::CTCLoss()"; }

}  // namespace ember::nn
