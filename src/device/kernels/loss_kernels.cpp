// Kernels for SoftmaxCrossEntropyLoss, SoftmaxCrossEntropyGrad, NegativeLogLikelihoodLoss(Grad),
// Nll, NllGrad, L1, L1Grad and IdentityLoss. FLOAT values, integer labels (SoftmaxCrossEntropyLoss:
// INT32/INT64, as ONNX; Nll: any integer type but UINT16, which HostTensor cannot tell from FLOAT16
// storage); sums accumulate in double. The softmax is computed as x - logsumexp(x) with the maximum
// subtracted first, so large scores do not overflow. Canonical forms: src/ir/ops/loss_ops.cpp.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/dnnl_engine.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/reductiontype.hpp"

namespace xtrain::device {
namespace {

// PopART clamps probabilities before log and 1/p; without it a 0 probability gives inf.
constexpr float kMinProb = 1e-7f;

ReductionType onnxReduction(const KernelSpec& spec) {
  const std::string& r = spec.attrs.getString("reduction");
  if (r == "mean") return ReductionType::Mean;
  if (r == "sum") return ReductionType::Sum;
  if (r == "none") return ReductionType::NoReduction;
  spec.fail("reduction '{}' is not one of mean, sum, none", r);
}

ReductionType graphcoreReduction(const KernelSpec& spec) {
  const int64_t r = spec.attrs.getInt("reduction");
  if (r < 0 || r > 2) spec.fail("reduction {} is not 0 (Sum), 1 (Mean) or 2 (NoReduction)", r);
  return static_cast<ReductionType>(r);
}

void requireFloat(const KernelSpec& spec, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs) {
    if (spec.hasInput(i) && spec.inputs[i].dataType() != DataType::FLOAT) {
      spec.fail("input {} is {}; only FLOAT is supported", i, spec.inputs[i].toString());
    }
  }
}

// Labels and the ignore index, validated as they are read.
struct LabelRule {
  std::string description;  // the op, for runtime errors
  bool hasIgnore = false;
  int64_t ignore = 0;
  int64_t classes = 0;
  // PopART's Nll: a label outside [0, classes) selects no class (PopLibs' one-hot encoding gives
  // an all-zero row) instead of being an error; check() returns kNoClass for it.
  bool outOfRangeSelectsNoClass = false;

  void setIgnore(int64_t v) {
    hasIgnore = true;
    ignore = v;
  }
  static constexpr int64_t kIgnored = -1;
  static constexpr int64_t kNoClass = -2;
  // The label at flat position i of the labels tensor, or kIgnored when it is the ignore index.
  // Out of range: kNoClass when outOfRangeSelectsNoClass, else throws xtrain::runtime_error
  // naming the op and the label. Compared and printed in its own type L: a uint64 label of
  // 2^63 + 5 is that number, not a negative int64.
  template <typename L>
  int64_t check(L label, int64_t i) const {
    if (hasIgnore && std::cmp_equal(label, ignore)) return kIgnored;
    if (std::cmp_less(label, 0) || std::cmp_greater_equal(label, classes)) {
      if (outOfRangeSelectsNoClass) return kNoClass;
      throw xtrain::runtime_error(
          "{}: label {} at position {} of the labels is out of range [0, {}){}", description, label,
          i, classes, hasIgnore ? format(" and is not the ignore index {}", ignore) : "");
    }
    return static_cast<int64_t>(label);
  }
};

// Calls f(L{}) with L the C++ element type of the label type `type`.
template <typename F>
auto withLabelType(const KernelSpec& spec, DataType type, F&& f) {
  switch (type) {
    case DataType::INT32: return f(int32_t{});
    case DataType::INT64: return f(int64_t{});
    case DataType::UINT32: return f(uint32_t{});
    case DataType::UINT64: return f(uint64_t{});
    case DataType::INT16: return f(int16_t{});
    case DataType::INT8: return f(int8_t{});
    case DataType::UINT8: return f(uint8_t{});
    default:
      spec.fail("labels are {}; expected an integer type other than UINT16", dataTypeName(type));
  }
}

// scores viewed as [N, C, S], S the product of the dimensions after the class dimension.
struct ScoreGeometry {
  int64_t n = 0, c = 0, s = 1;
};

// logsumexp over the classes for each of the S positions of one sample: lse[k] for x[., k].
class LogSumExp {
 public:
  explicit LogSumExp(const ScoreGeometry& g)
      : g_(g), max_(static_cast<size_t>(g.s)), sum_(static_cast<size_t>(g.s)) {}
  // x points at sample n's [C, S] block; fills lse (S values).
  void compute(const float* x, float* lse) {
    const int64_t c = g_.c, s = g_.s;
    if (s == 1) {
      float m = x[0];
      for (int64_t j = 1; j < c; ++j) m = std::max(m, x[j]);
      double sum = 0;
      for (int64_t j = 0; j < c; ++j) sum += std::exp(x[j] - m);
      lse[0] = m + static_cast<float>(std::log(sum));
      return;
    }
    float* mx = max_.data();
    double* sum = sum_.data();
    std::copy(x, x + s, mx);
    for (int64_t j = 1; j < c; ++j) {
      const float* row = x + j * s;
      for (int64_t k = 0; k < s; ++k) mx[k] = std::max(mx[k], row[k]);
    }
    std::fill(sum, sum + s, 0.0);
    for (int64_t j = 0; j < c; ++j) {
      const float* row = x + j * s;
      for (int64_t k = 0; k < s; ++k) sum[k] += std::exp(row[k] - mx[k]);
    }
    for (int64_t k = 0; k < s; ++k) lse[k] = mx[k] + static_cast<float>(std::log(sum[k]));
  }

 private:
  ScoreGeometry g_;
  std::vector<float> max_;
  std::vector<double> sum_;
};

struct SceConfig {
  ScoreGeometry geo;
  ReductionType reduction;
  LabelRule rule;
};

SceConfig sceConfig(const KernelSpec& spec, const TensorInfo& scores) {
  if (scores.rank() < 2) spec.fail("scores is {}; expected rank >= 2", scores.toString());
  SceConfig c;
  c.geo.n = scores.dim(0);
  c.geo.c = scores.dim(1);
  for (int64_t d = 2; d < scores.rank(); ++d) c.geo.s *= scores.dim(d);
  c.reduction = onnxReduction(spec);
  c.rule.description = spec.description;
  c.rule.classes = c.geo.c;
  if (spec.attrs.has("ignore_index")) c.rule.setIgnore(spec.attrs.getInt("ignore_index"));
  return c;
}

template <typename L>
class SoftmaxCrossEntropyKernel final : public Kernel {
 public:
  explicit SoftmaxCrossEntropyKernel(SceConfig cfg)
      : cfg_(std::move(cfg)), lse_(cfg_.geo), lseBuf_(static_cast<size_t>(cfg_.geo.s)) {}

  void run(const KernelIO& io) override {
    const ScoreGeometry& g = cfg_.geo;
    const float* x = io.in(0).data<float>();
    const L* labels = io.in(1).data<L>();
    const float* weights = io.hasIn(2) ? io.in(2).data<float>() : nullptr;
    float* loss = io.out(0).data<float>();
    float* logProb = io.hasOut(1) ? io.out(1).data<float>() : nullptr;
    const bool none = cfg_.reduction == ReductionType::NoReduction;
    double total = 0, weightSum = 0;
    const int64_t block = g.c * g.s;
    float* lse = lseBuf_.data();
    for (int64_t n = 0; n < g.n; ++n) {
      const float* xn = x + n * block;
      lse_.compute(xn, lse);
      if (logProb != nullptr) {
        float* lp = logProb + n * block;
        for (int64_t j = 0; j < g.c; ++j) {
          for (int64_t k = 0; k < g.s; ++k) lp[j * g.s + k] = xn[j * g.s + k] - lse[k];
        }
      }
      for (int64_t k = 0; k < g.s; ++k) {
        const int64_t i = n * g.s + k;
        const int64_t label = cfg_.rule.check(labels[i], i);
        if (label < 0) {
          if (none) loss[i] = 0.0f;
          continue;
        }
        const float w = weights != nullptr ? weights[label] : 1.0f;
        const float l = w * (lse[k] - xn[label * g.s + k]);
        if (none) {
          loss[i] = l;
        } else {
          total += l;
          weightSum += w;
        }
      }
    }
    if (cfg_.reduction == ReductionType::Sum) loss[0] = static_cast<float>(total);
    if (cfg_.reduction == ReductionType::Mean) {
      loss[0] = weightSum != 0 ? static_cast<float>(total / weightSum) : 0.0f;
    }
  }

 private:
  SceConfig cfg_;
  LogSumExp lse_;
  std::vector<float> lseBuf_;
};

// dScores[n, j, k] = coef[n, k] * (softmax[n, j, k] - [j == label[n, k]])
//                    + dLogProb[n, j, k] - softmax[n, j, k] * sum_j dLogProb[n, j, k]
// with coef = weight[label] * dLoss (per element for "none", dLoss / sum of weights for "mean") and
// 0 for ignored labels.
//
// Without dLogProb and saved log probabilities (a language model's loss: [tokens, vocabulary]
// scores), the softmax comes from oneDNN's softmax primitive (vectorised, threaded over samples,
// each sample on one thread) and the rest is one threaded pass; results do not depend on the thread
// count. Otherwise one sample after another, with libm's exp.
template <typename L>
class SoftmaxCrossEntropyGradKernel final : public Kernel {
 public:
  SoftmaxCrossEntropyGradKernel(const KernelSpec& spec, SceConfig cfg)
      : cfg_(std::move(cfg)),
        lse_(cfg_.geo),
        lseBuf_(static_cast<size_t>(cfg_.geo.s)),
        coef_(static_cast<size_t>(cfg_.geo.n * cfg_.geo.s)),
        label_(coef_.size()),
        dlpSum_(static_cast<size_t>(cfg_.geo.s)) {
    const ScoreGeometry& g = cfg_.geo;
    if (!spec.hasInput(4) && !spec.hasInput(5) && g.n * g.c * g.s > 0) {
      softmaxMd_ = dnnl_util::plainDesc(g.s == 1 ? Shape{g.n, g.c} : Shape{g.n, g.c, g.s});
      softmax_ = dnnl_util::create(spec, "softmax", [&] {
        return dnnl_util::makePrimitive<dnnl::softmax_v2_forward>(
            dnnl::softmax_v2_forward::primitive_desc(
                dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference,
                                               dnnl::algorithm::softmax_accurate, softmaxMd_,
                                               softmaxMd_, 1),
                dnnl_util::userScratchpadAttr(), dnnl_util::engine()));
      });
    }
  }

  void run(const KernelIO& io) override {
    const ScoreGeometry& g = cfg_.geo;
    const float* dLoss = io.in(0).data<float>();
    const float* x = io.in(1).data<float>();
    const L* labels = io.in(2).data<L>();
    const float* weights = io.hasIn(3) ? io.in(3).data<float>() : nullptr;
    const float* dlp = io.hasIn(4) ? io.in(4).data<float>() : nullptr;
    const float* savedLp = io.hasIn(5) ? io.in(5).data<float>() : nullptr;
    float* dx = io.out(0).data<float>();
    const bool none = cfg_.reduction == ReductionType::NoReduction;
    // Labels first, on this thread (check() throws on a bad one, which must not happen inside a
    // parallel region), and the coefficient of every position.
    int64_t* lab = label_.data();
    float* coef = coef_.data();
    double weightSum = 0;
    for (int64_t i = 0; i < g.n * g.s; ++i) {
      lab[i] = cfg_.rule.check(labels[i], i);
      if (lab[i] >= 0) weightSum += weights != nullptr ? weights[lab[i]] : 1.0f;
    }
    float scalarCoef = none ? 0.0f : dLoss[0];
    if (cfg_.reduction == ReductionType::Mean) {
      scalarCoef = weightSum != 0 ? static_cast<float>(dLoss[0] / weightSum) : 0.0f;
    }
    for (int64_t i = 0; i < g.n * g.s; ++i) {
      const float w = lab[i] < 0 ? 0.0f : (weights != nullptr ? weights[lab[i]] : 1.0f);
      coef[i] = w * (none ? dLoss[i] : scalarCoef);
    }
    if (softmax_.prim) {
      runWithSoftmaxPrimitive(x, dx);
      return;
    }
    const int64_t block = g.c * g.s;
    float* lse = lseBuf_.data();
    double* dlpSum = dlpSum_.data();
    for (int64_t n = 0; n < g.n; ++n) {
      const float* xn = x + n * block;
      float* dxn = dx + n * block;
      const float* cn = coef + n * g.s;
      const int64_t* ln = lab + n * g.s;
      if (savedLp == nullptr) lse_.compute(xn, lse);
      // The softmax of every class, written into dx first.
      for (int64_t j = 0; j < g.c; ++j) {
        const int64_t off = j * g.s;
        if (savedLp != nullptr) {
          const float* lp = savedLp + n * block + off;
          for (int64_t k = 0; k < g.s; ++k) dxn[off + k] = std::exp(lp[k]);
        } else {
          for (int64_t k = 0; k < g.s; ++k) dxn[off + k] = std::exp(xn[off + k] - lse[k]);
        }
      }
      if (dlp != nullptr) {
        const float* dlpn = dlp + n * block;
        std::fill(dlpSum, dlpSum + g.s, 0.0);
        for (int64_t j = 0; j < g.c; ++j) {
          for (int64_t k = 0; k < g.s; ++k) dlpSum[k] += dlpn[j * g.s + k];
        }
        for (int64_t j = 0; j < g.c; ++j) {
          const int64_t off = j * g.s;
          for (int64_t k = 0; k < g.s; ++k) {
            const float p = dxn[off + k];
            dxn[off + k] = p * (cn[k] - static_cast<float>(dlpSum[k])) + dlpn[off + k];
          }
        }
      } else {
        for (int64_t j = 0; j < g.c; ++j) {
          const int64_t off = j * g.s;
          for (int64_t k = 0; k < g.s; ++k) dxn[off + k] *= cn[k];
        }
      }
      for (int64_t k = 0; k < g.s; ++k) {
        if (ln[k] >= 0) dxn[ln[k] * g.s + k] -= cn[k];
      }
    }
  }

 private:
  // dx = softmax(x) by the primitive, then per sample dx *= coef and dx[label] -= coef.
  void runWithSoftmaxPrimitive(const float* x, float* dx) const {
    const ScoreGeometry& g = cfg_.geo;
    const size_t bytes = softmax_.scratchpadBytes();
    dnnl_util::execute(softmax_,
                       {{DNNL_ARG_SRC, dnnl_util::wrap(softmaxMd_, x)},
                        {DNNL_ARG_DST, dnnl_util::wrap(softmaxMd_, dx)}},
                       bytes > 0 ? dnnl_util::threadScratch(bytes) : nullptr);
    const float* coef = coef_.data();
    const int64_t* lab = label_.data();
    const int64_t block = g.c * g.s;
#pragma omp parallel for schedule(static) if (g.n > 1 && g.n * block >= 32768)
    for (int64_t n = 0; n < g.n; ++n) {
      float* __restrict dxn = dx + n * block;
      const float* __restrict cn = coef + n * g.s;
      for (int64_t j = 0; j < g.c; ++j) {
#pragma omp simd
        for (int64_t k = 0; k < g.s; ++k) dxn[j * g.s + k] *= cn[k];
      }
      for (int64_t k = 0; k < g.s; ++k) {
        const int64_t label = lab[n * g.s + k];
        if (label >= 0) dxn[label * g.s + k] -= cn[k];
      }
    }
  }

  SceConfig cfg_;
  LogSumExp lse_;
  std::vector<float> lseBuf_;
  std::vector<float> coef_;     // [N, S]: coef of every position
  std::vector<int64_t> label_;  // [N, S]: checked labels, -1 where ignored
  std::vector<double> dlpSum_;
  dnnl::memory::desc softmaxMd_;
  dnnl_util::Primitive softmax_;  // set when the grad has neither dLogProb nor saved log-probs
};

XT_REGISTER_KERNEL("ai.onnx", "SoftmaxCrossEntropyLoss",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireFloat(spec, {0, 2});
                     SceConfig cfg = sceConfig(spec, spec.inputs.at(0));
                     return withLabelType(
                         spec, spec.inputs.at(1).dataType(),
                         [&](auto tag) -> std::unique_ptr<Kernel> {
                           using L = decltype(tag);
                           return std::make_unique<SoftmaxCrossEntropyKernel<L>>(cfg);
                         });
                   });

XT_REGISTER_KERNEL("ai.xtrain", "SoftmaxCrossEntropyGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireFloat(spec, {0, 1, 3, 4, 5});
                     SceConfig cfg = sceConfig(spec, spec.inputs.at(1));
                     return withLabelType(
                         spec, spec.inputs.at(2).dataType(),
                         [&](auto tag) -> std::unique_ptr<Kernel> {
                           using L = decltype(tag);
                           return std::make_unique<SoftmaxCrossEntropyGradKernel<L>>(spec, cfg);
                         });
                   });

// NegativeLogLikelihoodLoss: input viewed as [N, C, S] like the scores above, target as [N, S].
// loss[n, k] = -weight[t] * input[n, t, k]; the weight sum of the non-ignored targets (for "mean")
// is the same sum in the forward and the gradient.
template <typename L>
double nllWeightSum(const SceConfig& cfg, const L* target, const float* weight) {
  double sum = 0;
  const int64_t count = cfg.geo.n * cfg.geo.s;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t t = cfg.rule.check(target[i], i);
    if (t >= 0) sum += weight != nullptr ? weight[t] : 1.0f;
  }
  return sum;
}

template <typename L>
std::unique_ptr<Kernel> makeOnnxNll(const SceConfig& cfg) {
  return makeKernel([cfg](const KernelIO& io) {
    const ScoreGeometry& g = cfg.geo;
    const float* x = io.in(0).data<float>();
    const L* target = io.in(1).data<L>();
    const float* weight = io.hasIn(2) ? io.in(2).data<float>() : nullptr;
    float* loss = io.out(0).data<float>();
    const bool none = cfg.reduction == ReductionType::NoReduction;
    double total = 0, weightSum = 0;
    for (int64_t n = 0; n < g.n; ++n) {
      const float* xn = x + n * g.c * g.s;
      for (int64_t k = 0; k < g.s; ++k) {
        const int64_t i = n * g.s + k;
        const int64_t t = cfg.rule.check(target[i], i);
        float l = 0.0f;
        if (t >= 0) {
          const float w = weight != nullptr ? weight[t] : 1.0f;
          l = -w * xn[t * g.s + k];
          weightSum += w;
        }
        if (none) {
          loss[i] = l;
        } else {
          total += l;
        }
      }
    }
    if (cfg.reduction == ReductionType::Sum) loss[0] = static_cast<float>(total);
    if (cfg.reduction == ReductionType::Mean) {
      loss[0] = weightSum != 0 ? static_cast<float>(total / weightSum) : 0.0f;
    }
  });
}

template <typename L>
std::unique_ptr<Kernel> makeOnnxNllGrad(const SceConfig& cfg) {
  return makeKernel([cfg](const KernelIO& io) {
    const ScoreGeometry& g = cfg.geo;
    const float* dLoss = io.in(0).data<float>();
    const L* target = io.in(2).data<L>();
    const float* weight = io.hasIn(3) ? io.in(3).data<float>() : nullptr;
    HostTensor& out = io.out(0);
    out.fillZero();
    float* dx = out.data<float>();
    const bool none = cfg.reduction == ReductionType::NoReduction;
    float scalarCoef = none ? 0.0f : dLoss[0];
    if (cfg.reduction == ReductionType::Mean) {
      const double sum = nllWeightSum(cfg, target, weight);
      scalarCoef = sum != 0 ? static_cast<float>(dLoss[0] / sum) : 0.0f;
    }
    for (int64_t n = 0; n < g.n; ++n) {
      float* dxn = dx + n * g.c * g.s;
      for (int64_t k = 0; k < g.s; ++k) {
        const int64_t i = n * g.s + k;
        const int64_t t = cfg.rule.check(target[i], i);
        if (t < 0) continue;
        const float w = weight != nullptr ? weight[t] : 1.0f;
        dxn[t * g.s + k] = -w * (none ? dLoss[i] : scalarCoef);
      }
    }
  });
}

XT_REGISTER_KERNEL("ai.onnx", "NegativeLogLikelihoodLoss",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireFloat(spec, {0, 2});
                     const SceConfig cfg = sceConfig(spec, spec.inputs.at(0));
                     const DataType t = spec.inputs.at(1).dataType();
                     if (t != DataType::INT32 && t != DataType::INT64) {
                       spec.fail("target is {}; expected INT32 or INT64", dataTypeName(t));
                     }
                     return withLabelType(
                         spec, t, [&](auto tag) { return makeOnnxNll<decltype(tag)>(cfg); });
                   });

XT_REGISTER_KERNEL("ai.xtrain", "NegativeLogLikelihoodLossGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireFloat(spec, {0, 1, 3});
                     const SceConfig cfg = sceConfig(spec, spec.inputs.at(1));
                     const DataType t = spec.inputs.at(2).dataType();
                     if (t != DataType::INT32 && t != DataType::INT64) {
                       spec.fail("target is {}; expected INT32 or INT64", dataTypeName(t));
                     }
                     return withLabelType(
                         spec, t, [&](auto tag) { return makeOnnxNllGrad<decltype(tag)>(cfg); });
                   });

// Nll: probs viewed as [R, C] (classes last), labels as [R].
//
// A label outside [0, C) that is not the ignore index is PopART's, not an error: PopART one-hot
// encodes the labels with PopLibs, which gives such a label an all-zero row, so the row's
// probability is 0, its loss term -log(max(0, 1e-7)) = 16.118 (0 for log-probability input), it
// counts in a mean's denominator like any label, and its gradient is zero (the term does not
// depend on the probabilities). PopART programs and tests draw labels past the class count and
// train; xtrain does the same, and warns once per op naming the first such label, since a real
// program that does this has a bug. The ONNX losses (SoftmaxCrossEntropyLoss,
// NegativeLogLikelihoodLoss) keep refusing such labels, as ONNX and PyTorch do.
struct NllConfig {
  int64_t rows = 0;
  ReductionType reduction = ReductionType::Mean;
  bool logProb = false;
  LabelRule rule;
  std::shared_ptr<std::atomic<bool>> warned = std::make_shared<std::atomic<bool>>(false);
};

// The loss term of a label that selects no class.
float noClassLoss(const NllConfig& cfg) {
  return cfg.logProb ? 0.0f : -std::log(kMinProb);
}

template <typename L>
void warnNoClassOnce(const NllConfig& cfg, L label, int64_t i) {
  if (cfg.warned->exchange(true)) return;
  logging::devicex::warn(
      "{}: label {} at position {} of the labels is outside [0, {}){}; as in PopART it selects no "
      "class: its loss term is {} and it has no gradient (further such labels are not reported)",
      cfg.rule.description, label, i, cfg.rule.classes,
      cfg.rule.hasIgnore ? format(" and is not the ignore index {}", cfg.rule.ignore) : "",
      noClassLoss(cfg));
}

NllConfig nllConfig(const KernelSpec& spec, const TensorInfo& probs) {
  if (probs.rank() < 1) spec.fail("probs is {}; expected rank >= 1", probs.toString());
  NllConfig c;
  c.rule.classes = probs.dim(-1);
  c.rows = c.rule.classes == 0 ? 0 : probs.nelms() / c.rule.classes;
  c.reduction = graphcoreReduction(spec);
  c.logProb = spec.attrs.getInt("inputIsLogProbability", 0) != 0;
  c.rule.description = spec.description;
  c.rule.outOfRangeSelectsNoClass = true;
  if (spec.attrs.has("ignoreIndex")) c.rule.setIgnore(spec.attrs.getInt("ignoreIndex"));
  return c;
}

template <typename L>
std::unique_ptr<Kernel> makeNll(const NllConfig& cfg) {
  return makeKernel([cfg](const KernelIO& io) {
    const float* p = io.in(0).data<float>();
    const L* labels = io.in(1).data<L>();
    float* loss = io.out(0).data<float>();
    const int64_t c = cfg.rule.classes;
    const bool none = cfg.reduction == ReductionType::NoReduction;
    double total = 0;
    int64_t count = 0;
    for (int64_t r = 0; r < cfg.rows; ++r) {
      const int64_t label = cfg.rule.check(labels[r], r);
      float l = 0.0f;
      if (label >= 0) {
        const float v = p[r * c + label];
        l = cfg.logProb ? -v : -std::log(std::max(v, kMinProb));
        ++count;
      } else if (label == LabelRule::kNoClass) {
        warnNoClassOnce(cfg, labels[r], r);
        l = noClassLoss(cfg);
        ++count;
      }
      if (none) {
        loss[r] = l;
      } else {
        total += l;
      }
    }
    if (cfg.reduction == ReductionType::Sum) loss[0] = static_cast<float>(total);
    if (cfg.reduction == ReductionType::Mean) {
      loss[0] = count > 0 ? static_cast<float>(total / static_cast<double>(count)) : 0.0f;
    }
  });
}

template <typename L>
std::unique_ptr<Kernel> makeNllGrad(const NllConfig& cfg) {
  return makeKernel([cfg](const KernelIO& io) {
    const float* dLoss = io.in(0).data<float>();
    const float* p = io.in(1).data<float>();
    const L* labels = io.in(2).data<L>();
    HostTensor& out = io.out(0);
    out.fillZero();
    float* dp = out.data<float>();
    const int64_t c = cfg.rule.classes;
    const bool none = cfg.reduction == ReductionType::NoReduction;
    float scalarCoef = none ? 0.0f : dLoss[0];
    if (cfg.reduction == ReductionType::Mean) {
      int64_t count = 0;
      for (int64_t r = 0; r < cfg.rows; ++r) {
        count += cfg.rule.check(labels[r], r) != LabelRule::kIgnored ? 1 : 0;
      }
      scalarCoef = count > 0 ? dLoss[0] / static_cast<float>(count) : 0.0f;
    }
    for (int64_t r = 0; r < cfg.rows; ++r) {
      const int64_t label = cfg.rule.check(labels[r], r);
      if (label < 0) continue;
      const float coef = none ? dLoss[r] : scalarCoef;
      const int64_t at = r * c + label;
      dp[at] = cfg.logProb ? -coef : -coef / std::max(p[at], kMinProb);
    }
  });
}

XT_REGISTER_KERNEL("ai.graphcore", "Nll", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  requireFloat(spec, {0});
  const NllConfig cfg = nllConfig(spec, spec.inputs.at(0));
  return withLabelType(spec, spec.inputs.at(1).dataType(),
                       [&](auto tag) { return makeNll<decltype(tag)>(cfg); });
});

XT_REGISTER_KERNEL("ai.xtrain", "NllGrad", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  requireFloat(spec, {0, 1});
  const NllConfig cfg = nllConfig(spec, spec.inputs.at(1));
  return withLabelType(spec, spec.inputs.at(2).dataType(),
                       [&](auto tag) { return makeNllGrad<decltype(tag)>(cfg); });
});

// Sum and sum of |x| in double.
double sumOf(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}
double sumAbs(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::abs(x[i]);
  return s;
}

// The factor Mean divides by: 1/n (0 for an empty input).
double meanFactor(int64_t n) {
  return n > 0 ? 1.0 / static_cast<double>(n) : 0.0;
}

XT_REGISTER_KERNEL("ai.graphcore", "L1", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  requireFloat(spec, {0});
  const ReductionType r = graphcoreReduction(spec);
  const float lambda = spec.attrs.getFloat("lambda");
  return makeKernel([r, lambda](const KernelIO& io) {
    const HostTensor& xt = io.in(0);
    const float* x = xt.data<float>();
    float* y = io.out(0).data<float>();
    const int64_t n = xt.nelms();
    if (r == ReductionType::NoReduction) {
      for (int64_t i = 0; i < n; ++i) y[i] = lambda * std::abs(x[i]);
    } else {
      const double s = lambda * sumAbs(x, n);
      y[0] = static_cast<float>(r == ReductionType::Mean ? s * meanFactor(n) : s);
    }
  });
});

XT_REGISTER_KERNEL("ai.xtrain", "L1Grad", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  requireFloat(spec, {0, 1});
  const ReductionType r = graphcoreReduction(spec);
  const float lambda = spec.attrs.getFloat("lambda");
  const int64_t n = spec.inputs.at(1).nelms();
  const float scale = lambda * static_cast<float>(r == ReductionType::Mean ? meanFactor(n) : 1.0);
  return makeKernel([r, scale](const KernelIO& io) {
    const float* g = io.in(0).data<float>();
    const HostTensor& xt = io.in(1);
    const float* x = xt.data<float>();
    float* dx = io.out(0).data<float>();
    const int64_t count = xt.nelms();
    auto sign = [](float v) { return static_cast<float>((v > 0.0f) - (v < 0.0f)); };
    if (r == ReductionType::NoReduction) {
      for (int64_t i = 0; i < count; ++i) dx[i] = scale * g[i] * sign(x[i]);
    } else {
      const float c = scale * g[0];
      for (int64_t i = 0; i < count; ++i) dx[i] = c * sign(x[i]);
    }
  });
});

// IdentityLoss on FLOAT (sums in double) or INT32 (sums in int64; Mean divides as integers, as
// PopART's division of an integer tensor does).
template <typename T>
void identityLoss(ReductionType r, const KernelIO& io) {
  const HostTensor& xt = io.in(0);
  const T* x = xt.data<T>();
  T* y = io.out(0).data<T>();
  const int64_t n = xt.nelms();
  if (r == ReductionType::NoReduction) {
    std::copy(x, x + n, y);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    const double s = sumOf(x, n);
    y[0] = static_cast<float>(r == ReductionType::Mean ? s * meanFactor(n) : s);
  } else {
    int64_t s = 0;
    for (int64_t i = 0; i < n; ++i) s += x[i];
    if (r == ReductionType::Mean) s = n > 0 ? s / n : 0;
    y[0] = static_cast<T>(s);
  }
}

XT_REGISTER_KERNEL("ai.graphcore", "IdentityLoss",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     const ReductionType r = graphcoreReduction(spec);
                     if (spec.inputs.at(0).dataType() == DataType::INT32) {
                       return makeKernel([r](const KernelIO& io) { identityLoss<int32_t>(r, io); });
                     }
                     requireFloat(spec, {0});
                     return makeKernel([r](const KernelIO& io) { identityLoss<float>(r, io); });
                   });

}  // namespace
}  // namespace xtrain::device
