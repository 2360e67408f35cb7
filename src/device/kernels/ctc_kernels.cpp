// Kernels of the CTC ops (src/ir/ops/ctc_ops.cpp): Ctc (loss and per-element gradient, by the
// alpha-beta recursions in log space), CtcGrad (that gradient scaled by the loss's gradient and the
// reduction) and CtcBeamSearchDecoder (prefix beam search). FLOAT values (FLOAT16 runs promoted),
// UINT32/INT32 targets and lengths; the recursions run in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/log_space.hpp"
#include "xtrain/reductiontype.hpp"

namespace xtrain::device {
namespace {

void requireFloatValues(const KernelSpec& spec, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs) {
    if (spec.inputs.at(i).dataType() != DataType::FLOAT) {
      spec.fail("input {} is {}; only FLOAT is supported", i, spec.inputs[i].toString());
    }
  }
  for (size_t i = 0; i < spec.outputs.size(); ++i) {
    if (spec.hasOutput(i) && spec.outputs[i].dataType() == DataType::FLOAT16) {
      spec.fail("output {} is {}; only FLOAT is supported", i, spec.outputs[i].toString());
    }
  }
}

// The integer at flat position i of a UINT32/INT32 tensor.
int64_t indexAt(const HostTensor& t, int64_t i) {
  return t.dataType() == DataType::UINT32 ? int64_t{t.data<uint32_t>()[i]}
                                          : int64_t{t.data<int32_t>()[i]};
}

struct CtcShape {
  int64_t t = 0, n = 0, c = 0, s = 0;
  int64_t blank = 0;
};

// One batch element's CTC: the alpha and beta tables over (time, extended label), the extended
// label (blanks around and between the targets) and the log-likelihood.
class CtcSample {
 public:
  CtcSample(const CtcShape& shape, const float* logProbs) : sh_(shape), lp_(logProbs) {}

  // Sets up element n with input length tn and target labels; returns log p(labels).
  double forward(int64_t n, int64_t tn, const std::vector<int64_t>& labels) {
    n_ = n;
    tn_ = tn;
    ext_.assign(2 * labels.size() + 1, sh_.blank);
    for (size_t i = 0; i < labels.size(); ++i) ext_[2 * i + 1] = labels[i];
    const auto l = static_cast<int64_t>(ext_.size());
    if (tn == 0) return labels.empty() ? 0.0 : kLogZero;
    alpha_.assign(static_cast<size_t>(tn * l), kLogZero);
    alpha_[0] = lp(0, ext_[0]);
    if (l > 1) alpha_[1] = lp(0, ext_[1]);
    for (int64_t t = 1; t < tn; ++t) {
      const double* prev = &alpha_[(t - 1) * l];
      double* cur = &alpha_[t * l];
      for (int64_t s = 0; s < l; ++s) {
        double a = prev[s];
        if (s > 0) a = logAdd(a, prev[s - 1]);
        if (s > 1 && ext_[s] != sh_.blank && ext_[s] != ext_[s - 2]) a = logAdd(a, prev[s - 2]);
        cur[s] = a == kLogZero ? kLogZero : a + lp(t, ext_[s]);
      }
    }
    const double* last = &alpha_[(tn - 1) * l];
    return l > 1 ? logAdd(last[l - 1], last[l - 2]) : last[l - 1];
  }

  // Writes d(-log p)/d logProbs[t, n, c] for t < tn into grad ([T, N, C]); logLik from forward.
  void gradient(double logLik, float* grad) {
    const auto l = static_cast<int64_t>(ext_.size());
    beta_.assign(static_cast<size_t>(tn_ * l), kLogZero);
    double* end = &beta_[(tn_ - 1) * l];
    end[l - 1] = lp(tn_ - 1, ext_[l - 1]);
    if (l > 1) end[l - 2] = lp(tn_ - 1, ext_[l - 2]);
    for (int64_t t = tn_ - 2; t >= 0; --t) {
      const double* next = &beta_[(t + 1) * l];
      double* cur = &beta_[t * l];
      for (int64_t s = 0; s < l; ++s) {
        double b = next[s];
        if (s + 1 < l) b = logAdd(b, next[s + 1]);
        if (s + 2 < l && ext_[s] != sh_.blank && ext_[s] != ext_[s + 2]) b = logAdd(b, next[s + 2]);
        cur[s] = b == kLogZero ? kLogZero : b + lp(t, ext_[s]);
      }
    }
    std::vector<double> acc(static_cast<size_t>(sh_.c));
    for (int64_t t = 0; t < tn_; ++t) {
      std::fill(acc.begin(), acc.end(), kLogZero);
      for (int64_t s = 0; s < l; ++s) {
        acc[ext_[s]] = logAdd(acc[ext_[s]], alpha_[t * l + s] + beta_[t * l + s]);
      }
      float* g = grad + (t * sh_.n + n_) * sh_.c;
      for (int64_t c = 0; c < sh_.c; ++c) {
        // sum over the paths through class c at time t of p(path) / p(labels) / y[t, c].
        g[c] = acc[c] == kLogZero ? 0.0f : static_cast<float>(-std::exp(acc[c] - lp(t, c) - logLik));
      }
    }
  }

 private:
  double lp(int64_t t, int64_t c) const { return lp_[(t * sh_.n + n_) * sh_.c + c]; }

  CtcShape sh_;
  const float* lp_;
  int64_t n_ = 0, tn_ = 0;
  std::vector<int64_t> ext_;
  std::vector<double> alpha_, beta_;
};

struct CtcConfig {
  CtcShape shape;
  ReductionType reduction = ReductionType::Mean;
  bool zeroInfinity = false;
  std::string description;
};

// Element n's targets within its length, validated.
std::vector<int64_t> ctcLabels(const CtcConfig& cfg, const KernelIO& io, int64_t n, int64_t tn) {
  const CtcShape& sh = cfg.shape;
  const int64_t len = indexAt(io.in(3), n);
  if (tn < 0 || tn > sh.t) {
    throw runtime_error("{}: inputLengths[{}] = {} is outside [0, {}] (T of logProbs)",
                        cfg.description, n, tn, sh.t);
  }
  if (len < 0 || len > sh.s) {
    throw runtime_error("{}: targetLengths[{}] = {} is outside [0, {}] (S of targets)",
                        cfg.description, n, len, sh.s);
  }
  std::vector<int64_t> labels(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i) {
    const int64_t v = indexAt(io.in(1), n * sh.s + i);
    if (v < 0 || v >= sh.c || v == sh.blank) {
      throw runtime_error(
          "{}: targets[{}, {}] = {} is not a class of [0, {}) other than the blank {}",
          cfg.description, n, i, v, sh.c, sh.blank);
    }
    labels[static_cast<size_t>(i)] = v;
  }
  return labels;
}

void runCtc(const CtcConfig& cfg, const KernelIO& io) {
  const CtcShape& sh = cfg.shape;
  CtcSample sample(sh, io.in(0).data<float>());
  float* grad = io.hasOut(1) ? io.out(1).data<float>() : nullptr;
  if (grad != nullptr) io.out(1).fillZero();
  float* loss = io.out(0).data<float>();
  double total = 0;
  for (int64_t n = 0; n < sh.n; ++n) {
    const int64_t tn = indexAt(io.in(2), n);
    const std::vector<int64_t> labels = ctcLabels(cfg, io, n, tn);
    const double logLik = sample.forward(n, tn, labels);
    double l = -logLik;
    const bool zeroed = cfg.zeroInfinity && std::isinf(l);
    if (zeroed) l = 0;
    if (grad != nullptr && tn > 0 && !zeroed) sample.gradient(logLik, grad);
    if (cfg.reduction == ReductionType::NoReduction) {
      loss[n] = static_cast<float>(l);
    } else if (cfg.reduction == ReductionType::Mean) {
      total += l / static_cast<double>(std::max<int64_t>(static_cast<int64_t>(labels.size()), 1));
    } else {
      total += l;
    }
  }
  if (cfg.reduction == ReductionType::Sum) loss[0] = static_cast<float>(total);
  if (cfg.reduction == ReductionType::Mean) {
    loss[0] = sh.n > 0 ? static_cast<float>(total / static_cast<double>(sh.n)) : 0.0f;
  }
}

ReductionType reductionOf(const KernelSpec& spec) {
  const int64_t r = spec.attrs.getInt("reduction");
  if (r < 0 || r > 2) spec.fail("reduction {} is not 0 (Sum), 1 (Mean) or 2 (NoReduction)", r);
  return static_cast<ReductionType>(r);
}

XT_REGISTER_KERNEL("ai.graphcore", "Ctc", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  requireFloatValues(spec, {0});
  CtcConfig cfg;
  const Shape& lp = spec.inputs.at(0).shape();
  cfg.shape = {lp.at(0), lp.at(1), lp.at(2), spec.inputs.at(1).shape().at(1),
               spec.attrs.getInt("blank")};
  cfg.reduction = reductionOf(spec);
  cfg.zeroInfinity = spec.attrs.getInt("zeroInfinity") != 0;
  cfg.description = spec.description;
  return makeKernel([cfg](const KernelIO& io) { runCtc(cfg, io); });
});

XT_REGISTER_KERNEL("ai.xtrain", "CtcGrad", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  requireFloatValues(spec, {0, 2});
  const ReductionType reduction = reductionOf(spec);
  const Shape& sh = spec.inputs.at(0).shape();
  const int64_t t = sh.at(0), n = sh.at(1), c = sh.at(2);
  return makeKernel([reduction, t, n, c](const KernelIO& io) {
    const float* g = io.in(0).data<float>();
    const float* dLoss = io.in(2).data<float>();
    float* out = io.out(0).data<float>();
    std::vector<float> coef(static_cast<size_t>(n));
    for (int64_t b = 0; b < n; ++b) {
      if (reduction == ReductionType::NoReduction) {
        coef[b] = dLoss[b];
      } else if (reduction == ReductionType::Sum) {
        coef[b] = dLoss[0];
      } else {
        const auto len = static_cast<double>(std::max<int64_t>(indexAt(io.in(1), b), 1));
        coef[b] = static_cast<float>(dLoss[0] / (len * static_cast<double>(n)));
      }
    }
    for (int64_t i = 0; i < t; ++i) {
      for (int64_t b = 0; b < n; ++b) {
        const int64_t off = (i * n + b) * c;
        for (int64_t k = 0; k < c; ++k) out[off + k] = g[off + k] * coef[b];
      }
    }
  });
});

}  // namespace
}  // namespace xtrain::device
