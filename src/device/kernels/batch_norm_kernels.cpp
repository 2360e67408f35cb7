// Kernels for BatchNormalization and BatchNormGrad. FLOAT only; statistics and parameter-gradient
// sums accumulate in double. Canonical forms: src/ir/ops/norm_ops.cpp.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/norm_common.hpp"

namespace xtrain::device {
namespace {

using norm::floatKernel;
using norm::invStd;

// meanVar in one pass: sums of d = x - x[0] and of d^2 in double (a float difference is exact in
// double, and shifting by a sample keeps the cancellation in sum(d^2) - sum(d)^2 / m small), so a
// BatchNorm channel is read once instead of twice.
void channelMeanVar(const float* p, int64_t runs, int64_t len, int64_t stride, double& mean,
                    double& var) {
  const double m = static_cast<double>(runs * len);
  if (m <= 0) {
    mean = var = 0.0;
    return;
  }
  const double shift = p[0];
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < runs; ++i) {
    const float* q = p + i * stride;
#pragma omp simd reduction(+ : sum, sq)
    for (int64_t k = 0; k < len; ++k) {
      const double d = q[k] - shift;
      sum += d;
      sq += d * d;
    }
  }
  const double dm = sum / m;
  mean = shift + dm;
  var = std::max(0.0, sq / m - dm * dm);
}

// 1 / sqrt(var + eps), in double, as a float.

// X viewed as [N, C, S] with S the product of the spatial dimensions (1 for [N, C]).
struct ChannelGeometry {
  int64_t n = 0, c = 0, s = 1;
  int64_t perChannel() const { return n * s; }
};

// Whether a kernel over X is large enough for its channels to be spread over the kernel threads
// (a parallel region costs a few microseconds).
bool parallelWorth(const ChannelGeometry& g) {
  return g.c > 1 && g.n * g.c * g.s >= 32768;
}

ChannelGeometry channelGeometry(const KernelSpec& spec, const TensorInfo& x) {
  if (x.rank() < 2) spec.fail("X is {}; expected rank >= 2", x.toString());
  ChannelGeometry g;
  g.n = x.dim(0);
  g.c = x.dim(1);
  for (int64_t d = 2; d < x.rank(); ++d) g.s *= x.dim(d);
  return g;
}

// Training mode as the IR defines it (ir/ops/norm_ops.cpp, batchNormTraining): the attribute when
// set, else more than one output.
bool batchNormTraining(const KernelSpec& spec) {
  if (spec.attrs.has("training_mode")) return spec.attrs.getInt("training_mode") != 0;
  int present = 0;
  for (size_t i = 0; i < spec.outputs.size(); ++i) present += spec.hasOutput(i) ? 1 : 0;
  return present > 1;
}

// What running_var gets of the batch's population variance: 1 (ONNX, running_variance =
// "population"), or M / (M - 1) with M values per channel (PyTorch's unbiased estimator,
// "unbiased"; the IR refuses M = 1 in training, this repeats the check for a kernel built
// directly).
double runningVarianceFactor(const KernelSpec& spec, const ChannelGeometry& g, bool training) {
  const std::string estimator = spec.attrs.getString("running_variance", "population");
  if (estimator == "population" || !training) return 1.0;
  if (estimator != "unbiased") {
    spec.fail("running_variance is \"{}\"; expected \"population\" or \"unbiased\"", estimator);
  }
  const int64_t m = g.perChannel();
  if (m < 2) {
    spec.fail("the unbiased running variance needs more than one value per channel, got {}", m);
  }
  return static_cast<double>(m) / static_cast<double>(m - 1);
}

// What BatchNormalization and its gradient share: the geometry of X, the attributes, and each
// channel's statistics (the batch's in training, else the running ones).
struct BatchNormConfig {
  ChannelGeometry geo;
  float eps;
  float momentum;
  bool training = false;
  double runningVarFactor = 1.0;  // runningVarianceFactor, set with `training`

  BatchNormConfig(const KernelSpec& spec, const TensorInfo& x)
      : geo(channelGeometry(spec, x)),
        eps(spec.attrs.getFloat("epsilon")),
        momentum(spec.attrs.getFloat("momentum")) {}

  void setTraining(const KernelSpec& spec, bool on) {
    training = on;
    runningVarFactor = runningVarianceFactor(spec, geo, on);
  }

  void stats(const float* x, const float* inMean, const float* inVar, int64_t c, double& mean,
             double& var) const {
    if (training) {
      channelMeanVar(x + c * geo.s, geo.n, geo.s, geo.c * geo.s, mean, var);
    } else {
      mean = inMean[c];
      var = inVar[c];
    }
  }
};

// Channels-last (NHWC) X, seen as [R, C] with R = N * S rows: statistics are per-chunk partial
// sums over kChunkRows rows, vectorised across the channels of a row, added up chunk by chunk in
// order. The chunks do not depend on the thread count, so neither does the result.
constexpr int64_t kChunkRows = 256;

int64_t chunkCount(const ChannelGeometry& g) {
  return (g.perChannel() + kChunkRows - 1) / kChunkRows;
}

// The channels-last loops are built for AVX-512, AVX2 and the baseline, chosen at load time: the
// library is compiled for the baseline (SSE2), where these loops run at a quarter of the speed.
// By CPU feature, not model ("arch=..."): a virtual machine may hide the model.
#define XT_BN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

// Channels per block in the channels-last sums: the accumulators of a block stay in registers.
constexpr int64_t kBlock = 16;

// Over rows [r0, r1) of channels-last x [rows, C]: sum[c] and sq[c] of d = x - shift[c] and d^2.
// Each channel is summed row by row, whichever block it falls in.
XT_BN_CLONES void chunkStats(const float* x, int64_t C, int64_t r0, int64_t r1, const double* shift,
                             double* sum, double* sq) {
  int64_t c0 = 0;
  for (; c0 + kBlock <= C; c0 += kBlock) {
    double sh[kBlock], s[kBlock] = {}, q[kBlock] = {};
    for (int64_t j = 0; j < kBlock; ++j) sh[j] = shift[c0 + j];
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = x + r * C + c0;
#pragma omp simd
      for (int64_t j = 0; j < kBlock; ++j) {
        const double d = static_cast<double>(row[j]) - sh[j];
        s[j] += d;
        q[j] += d * d;
      }
    }
    for (int64_t j = 0; j < kBlock; ++j) sum[c0 + j] = s[j], sq[c0 + j] = q[j];
  }
  for (; c0 < C; ++c0) {
    double s = 0, q = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const double d = static_cast<double>(x[r * C + c0]) - shift[c0];
      s += d;
      q += d * d;
    }
    sum[c0] = s, sq[c0] = q;
  }
}

// y = (x - mu[c]) * a[c] + b[c] over rows [r0, r1).
XT_BN_CLONES void normaliseRows(const float* x, float* y, int64_t C, int64_t r0, int64_t r1,
                                const float* mu, const float* a, const float* b) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* p = x + r * C;
    float* q = y + r * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) q[c] = (p[c] - mu[c]) * a[c] + b[c];
  }
}

// Over rows [r0, r1), with d = x - shift[c] and g = dY: sums of d, d^2, g and g*d per channel,
// into out[0..C), out[C..2C), out[2C..3C), out[3C..4C).
XT_BN_CLONES void chunkGradSums(const float* x, const float* dy, int64_t C, int64_t r0, int64_t r1,
                                const double* shift, double* out) {
  int64_t c0 = 0;
  for (; c0 + kBlock <= C; c0 += kBlock) {
    double sh[kBlock], sd[kBlock] = {}, sd2[kBlock] = {}, sg[kBlock] = {}, sgd[kBlock] = {};
    for (int64_t j = 0; j < kBlock; ++j) sh[j] = shift[c0 + j];
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * C + c0;
      const float* gr = dy + r * C + c0;
#pragma omp simd
      for (int64_t j = 0; j < kBlock; ++j) {
        const double d = static_cast<double>(xr[j]) - sh[j];
        const double g = gr[j];
        sd[j] += d;
        sd2[j] += d * d;
        sg[j] += g;
        sgd[j] += g * d;
      }
    }
    for (int64_t j = 0; j < kBlock; ++j) {
      out[c0 + j] = sd[j], out[C + c0 + j] = sd2[j];
      out[2 * C + c0 + j] = sg[j], out[3 * C + c0 + j] = sgd[j];
    }
  }
  for (; c0 < C; ++c0) {
    double sd = 0, sd2 = 0, sg = 0, sgd = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const double d = static_cast<double>(x[r * C + c0]) - shift[c0];
      const double g = dy[r * C + c0];
      sd += d;
      sd2 += d * d;
      sg += g;
      sgd += g * d;
    }
    out[c0] = sd, out[C + c0] = sd2, out[2 * C + c0] = sg, out[3 * C + c0] = sgd;
  }
}

// dX over rows [r0, r1) from the coefficient arrays co (mu, inv, a, k1, k2, fromMean, fromVar,
// C each; see GradCoeffs); inference: dX = dY * a.
XT_BN_CLONES void gradRows(const float* x, const float* dy, float* dx, int64_t C, int64_t r0,
                           int64_t r1, const float* co, bool training) {
  const float *mu = co, *inv = co + C, *a = co + 2 * C, *k1 = co + 3 * C, *k2 = co + 4 * C,
              *fromMean = co + 5 * C, *fromVar = co + 6 * C;
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * C;
    const float* gr = dy + r * C;
    float* out = dx + r * C;
    if (!training) {
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) out[c] = gr[c] * a[c];
      continue;
    }
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) {
      const float d = xr[c] - mu[c];
      out[c] = a[c] * (gr[c] - k1[c] - d * inv[c] * k2[c]) + fromMean[c] + fromVar[c] * d;
    }
  }
}

// Per-thread scratch of the BatchNorm kernels (partial sums, buffers converted between layouts):
// grows, never shrinks, so steady-state steps allocate nothing; a kernel runs on one thread at a
// time, and replicas run on their own threads.
struct BatchNormScratch {
  std::vector<double> partial;
  std::vector<float> coeff;  // per-channel coefficients, one array per kind
  std::vector<float> a, b;   // activations converted between layouts
  static BatchNormScratch& get() {
    thread_local BatchNormScratch scratch;
    return scratch;
  }
};

float* grown(std::vector<float>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  return v.data();
}

// Copies [N, C, S] (plain) to [N, S, C] (channels-last), or back when `toPlain`.
void convertLayout(const float* from, float* to, const ChannelGeometry& g, bool toPlain) {
#pragma omp parallel for schedule(static) if (parallelWorth(g))
  for (int64_t i = 0; i < g.n; ++i) {
    const int64_t base = i * g.c * g.s;
    for (int64_t c = 0; c < g.c; ++c) {
      for (int64_t k = 0; k < g.s; ++k) {
        const int64_t plain = base + c * g.s + k, last = base + k * g.c + c;
        if (toPlain) {
          to[plain] = from[last];
        } else {
          to[last] = from[plain];
        }
      }
    }
  }
}

// An activation argument of a BatchNorm kernel in the kernel's working layout (X's): the buffer
// itself when its layout is that, else a converted copy in scratch.
const float* inWorkingLayout(const float* p, Layout layout, Layout working, std::vector<float>& tmp,
                             const ChannelGeometry& g) {
  if (layout == working) return p;
  float* q = grown(tmp, g.n * g.c * g.s);
  convertLayout(p, q, g, working == Layout::Plain);
  return q;
}

// The per-channel results of BatchNormalization's statistics.
struct BatchNormForward {
  float mu, a, b;  // y = (x - mu) * a + b
};

class BatchNormKernel final : public Kernel {
 public:
  explicit BatchNormKernel(const KernelSpec& spec)
      : cfg_(spec, spec.inputs.at(0)),
        xLayout_(spec.inputLayout(0)),
        yLayout_(spec.outputLayout(0)) {
    cfg_.setTraining(spec, batchNormTraining(spec));
  }

  void run(const KernelIO& io) override {
    const ChannelGeometry& geo = cfg_.geo;
    const float* x = io.in(0).data<float>();
    float* y = io.out(0).data<float>();
    BatchNormScratch& scratch = BatchNormScratch::get();
    // Y in X's layout: the output buffer, or scratch converted after.
    float* yWork = yLayout_ == xLayout_ ? y : grown(scratch.b, geo.n * geo.c * geo.s);
    if (xLayout_ == Layout::ChannelsLast) {
      runChannelsLast(io, x, yWork, scratch);
    } else {
      runPlain(io, x, yWork);
    }
    if (yWork != y) convertLayout(yWork, y, geo, yLayout_ == Layout::Plain);
  }

 private:
  // Channel c's coefficients from its statistics; in training, also the running and saved
  // statistics (outputs 1-4).
  BatchNormForward finish(const KernelIO& io, int64_t c, double mean, double var) const {
    const float* scale = io.in(1).data<float>();
    const float* bias = io.in(2).data<float>();
    BatchNormForward f;
    f.mu = static_cast<float>(mean);
    f.a = static_cast<float>(scale[c] / std::sqrt(var + static_cast<double>(cfg_.eps)));
    f.b = bias[c];
    if (cfg_.training) {
      const float* inMean = io.in(3).data<float>();
      const float* inVar = io.in(4).data<float>();
      const double m = cfg_.momentum;
      if (io.hasOut(1))
        io.out(1).data<float>()[c] = static_cast<float>(m * inMean[c] + (1 - m) * mean);
      if (io.hasOut(2))
        io.out(2).data<float>()[c] =
            static_cast<float>(m * inVar[c] + (1 - m) * cfg_.runningVarFactor * var);
      if (io.hasOut(3)) io.out(3).data<float>()[c] = f.mu;
      if (io.hasOut(4)) io.out(4).data<float>()[c] = static_cast<float>(var);
    }
    return f;
  }

  void runPlain(const KernelIO& io, const float* x, float* y) const {
    const ChannelGeometry& geo = cfg_.geo;
    const float* inMean = io.in(3).data<float>();
    const float* inVar = io.in(4).data<float>();
    // Channels are independent: each thread takes whole channels, so the result does not depend
    // on the thread count.
#pragma omp parallel for schedule(static) if (parallelWorth(geo))
    for (int64_t c = 0; c < geo.c; ++c) {
      double mean, var;
      cfg_.stats(x, inMean, inVar, c, mean, var);
      const BatchNormForward f = finish(io, c, mean, var);
      for (int64_t i = 0; i < geo.n; ++i) {
        const int64_t off = (i * geo.c + c) * geo.s;
        const float* p = x + off;
        float* q = y + off;
        for (int64_t k = 0; k < geo.s; ++k) q[k] = (p[k] - f.mu) * f.a + f.b;
      }
    }
  }

  void runChannelsLast(const KernelIO& io, const float* x, float* y,
                       BatchNormScratch& scratch) const {
    const ChannelGeometry& geo = cfg_.geo;
    const int64_t C = geo.c, rows = geo.perChannel();
    float* coeff = grown(scratch.coeff, 3 * C);  // mu, a, b per channel
    if (cfg_.training) {
      // One pass, shifted by the first row (as channelMeanVar): per chunk sum(d) and sum(d^2).
      const int64_t chunks = chunkCount(geo);
      const size_t need = static_cast<size_t>((2 * chunks + 1) * C);
      if (scratch.partial.size() < need) scratch.partial.resize(need);
      double* partial = scratch.partial.data();
      double* shifts = partial + 2 * chunks * C;
      for (int64_t c = 0; c < C; ++c) shifts[c] = rows > 0 ? x[c] : 0.0;
#pragma omp parallel for schedule(static) if (parallelWorth(geo))
      for (int64_t k = 0; k < chunks; ++k) {
        double* sum = partial + 2 * k * C;
        chunkStats(x, C, k * kChunkRows, std::min(rows, (k + 1) * kChunkRows), shifts, sum,
                   sum + C);
      }
      const double m = static_cast<double>(rows);
      for (int64_t c = 0; c < C; ++c) {
        double sum = 0, sq = 0;
        for (int64_t k = 0; k < chunks; ++k) {
          sum += partial[2 * k * C + c];
          sq += partial[(2 * k + 1) * C + c];
        }
        double mean = 0, var = 0;
        if (m > 0) {
          const double dm = sum / m;
          mean = x[c] + dm;
          var = std::max(0.0, sq / m - dm * dm);
        }
        const BatchNormForward f = finish(io, c, mean, var);
        coeff[c] = f.mu, coeff[C + c] = f.a, coeff[2 * C + c] = f.b;
      }
    } else {
      const float* inMean = io.in(3).data<float>();
      const float* inVar = io.in(4).data<float>();
      for (int64_t c = 0; c < C; ++c) {
        const BatchNormForward f = finish(io, c, inMean[c], inVar[c]);
        coeff[c] = f.mu, coeff[C + c] = f.a, coeff[2 * C + c] = f.b;
      }
    }
    const float* mu = coeff;
    const float* a = mu + C;
    const float* b = a + C;
#pragma omp parallel for schedule(static) if (parallelWorth(geo))
    for (int64_t k = 0; k < chunkCount(geo); ++k) {
      normaliseRows(x, y, C, k * kChunkRows, std::min(rows, (k + 1) * kChunkRows), mu, a, b);
    }
  }

  BatchNormConfig cfg_;
  Layout xLayout_, yLayout_;
};

// Sums over one channel that BatchNormGrad needs, with d = x - shift.
struct GradSums {
  double sumD = 0, sumD2 = 0, sumDy = 0, sumDyD = 0;
};

// Channel c's part of BatchNormGrad: dScale, dB, and the coefficients of dX.
struct GradCoeffs {
  float mu, inv, a, k1, k2, fromMean, fromVar;
};

// Training: dX = scale*inv*(dY - mean(dY) - xhat*mean(dY*xhat)) + dMeanTotal/M +
// dVarTotal*2*(x-mean)/M, where M = N*S, dMeanTotal = (1-momentum)*dRunningMean + dSavedMean and
// dVarTotal = (1-momentum)*factor*dRunningVar + dSavedVar (factor: runningVarianceFactor).
// Inference: dX = dY*scale*inv. Both: dScale = sum(dY*xhat), dB = sum(dY).
class BatchNormGradKernel final : public Kernel {
 public:
  explicit BatchNormGradKernel(const KernelSpec& spec)
      : cfg_(spec, spec.inputs.at(1)),
        dyLayout_(spec.inputLayout(0)),
        xLayout_(spec.inputLayout(1)),
        dxLayout_(spec.outputLayout(0)) {
    cfg_.setTraining(spec, spec.attrs.getInt("training_mode") != 0);
  }

  void run(const KernelIO& io) override {
    const ChannelGeometry& geo = cfg_.geo;
    BatchNormScratch& scratch = BatchNormScratch::get();
    // dY and dX in X's layout: the buffers, or converted copies in scratch.
    const float* dy = inWorkingLayout(io.in(0).data<float>(), dyLayout_, xLayout_, scratch.a, geo);
    float* dx = io.out(0).data<float>();
    float* dxWork = dxLayout_ == xLayout_ ? dx : grown(scratch.b, geo.n * geo.c * geo.s);
    if (xLayout_ == Layout::ChannelsLast) {
      runChannelsLast(io, dy, io.in(1).data<float>(), dxWork, scratch);
    } else {
      runPlain(io, dy, io.in(1).data<float>(), dxWork);
    }
    if (dxWork != dx) convertLayout(dxWork, dx, geo, dxLayout_ == Layout::Plain);
  }

 private:
  // The shift of channel c's sums: the first sample in training, else the running mean.
  double shift(const KernelIO& io, const float* x, int64_t c, int64_t firstStride) const {
    if (cfg_.training) return cfg_.geo.perChannel() > 0 ? x[c * firstStride] : 0.0;
    return io.hasIn(3) ? io.in(3).data<float>()[c] : 0.0;
  }

  // Writes dScale[c] and dB[c]; returns the coefficients of dX.
  GradCoeffs finish(const KernelIO& io, int64_t c, double shift, const GradSums& s) const {
    const double m = static_cast<double>(cfg_.geo.perChannel());
    double mean = io.hasIn(3) ? io.in(3).data<float>()[c] : 0.0;
    double var = io.hasIn(4) ? io.in(4).data<float>()[c] : 0.0;
    if (cfg_.training) {
      const double dm = m > 0 ? s.sumD / m : 0.0;
      mean = shift + dm;
      var = m > 0 ? std::max(0.0, s.sumD2 / m - dm * dm) : 0.0;
    }
    GradCoeffs g{};
    g.mu = static_cast<float>(mean);
    g.inv = invStd(var, cfg_.eps);
    // sum(dY * xhat) = inv * (sum(dY * d) - (mean - shift) * sum(dY)).
    const double sumDyX = g.inv * (s.sumDyD - (mean - shift) * s.sumDy);
    io.out(1).data<float>()[c] = static_cast<float>(sumDyX);
    io.out(2).data<float>()[c] = static_cast<float>(s.sumDy);
    g.a = io.in(2).data<float>()[c] * g.inv;
    if (!cfg_.training) return g;
    const double keep = 1.0 - cfg_.momentum;
    double dMeanTotal = 0, dVarTotal = 0;
    if (io.hasIn(5)) dMeanTotal += keep * io.in(5).data<float>()[c];
    if (io.hasIn(6)) dVarTotal += keep * cfg_.runningVarFactor * io.in(6).data<float>()[c];
    if (io.hasIn(7)) dMeanTotal += io.in(7).data<float>()[c];
    if (io.hasIn(8)) dVarTotal += io.in(8).data<float>()[c];
    g.k1 = static_cast<float>(s.sumDy / m);
    g.k2 = static_cast<float>(sumDyX / m);
    g.fromMean = static_cast<float>(dMeanTotal / m);
    g.fromVar = static_cast<float>(2.0 * dVarTotal / m);
    return g;
  }

  float dxOf(const GradCoeffs& g, float x, float dy) const {
    if (!cfg_.training) return dy * g.a;
    const float d = x - g.mu;
    return g.a * (dy - g.k1 - d * g.inv * g.k2) + g.fromMean + g.fromVar * d;
  }

  void runPlain(const KernelIO& io, const float* dy, const float* x, float* dx) const {
    const ChannelGeometry& geo = cfg_.geo;
    // Channels are independent (see BatchNormKernel::runPlain).
#pragma omp parallel for schedule(static) if (parallelWorth(geo))
    for (int64_t c = 0; c < geo.c; ++c) {
      // One pass over the channel: sum(d), sum(d^2) (training: the batch statistics, as in
      // channelMeanVar), sum(dY) and sum(dY * d).
      const double sh = shift(io, x, c, geo.s);
      double sumD = 0, sumD2 = 0, sumDy = 0, sumDyD = 0;
      for (int64_t i = 0; i < geo.n; ++i) {
        const int64_t off = (i * geo.c + c) * geo.s;
#pragma omp simd reduction(+ : sumD, sumD2, sumDy, sumDyD)
        for (int64_t k = 0; k < geo.s; ++k) {
          const double d = x[off + k] - sh;
          const double g = dy[off + k];
          sumD += d;
          sumD2 += d * d;
          sumDy += g;
          sumDyD += g * d;
        }
      }
      const GradCoeffs g = finish(io, c, sh, GradSums{sumD, sumD2, sumDy, sumDyD});
      for (int64_t i = 0; i < geo.n; ++i) {
        const int64_t off = (i * geo.c + c) * geo.s;
        for (int64_t k = 0; k < geo.s; ++k) dx[off + k] = dxOf(g, x[off + k], dy[off + k]);
      }
    }
  }

  void runChannelsLast(const KernelIO& io, const float* dy, const float* x, float* dx,
                       BatchNormScratch& scratch) const {
    const ChannelGeometry& geo = cfg_.geo;
    const int64_t C = geo.c, rows = geo.perChannel();
    const int64_t chunks = chunkCount(geo);
    // Per chunk: sum(d), sum(d^2), sum(dY), sum(dY * d) of each channel; then the channel shifts.
    const size_t need = static_cast<size_t>((4 * chunks + 1) * C);
    if (scratch.partial.size() < need) scratch.partial.resize(need);
    double* partial = scratch.partial.data();
    double* shifts = partial + 4 * chunks * C;
    for (int64_t c = 0; c < C; ++c) shifts[c] = shift(io, x, c, 1);
#pragma omp parallel for schedule(static) if (parallelWorth(geo))
    for (int64_t k = 0; k < chunks; ++k) {
      chunkGradSums(x, dy, C, k * kChunkRows, std::min(rows, (k + 1) * kChunkRows), shifts,
                    partial + 4 * k * C);
    }
    // The coefficients as a structure of arrays, for the vectorised dX pass.
    float* co = grown(scratch.coeff, 7 * C);
    for (int64_t c = 0; c < C; ++c) {
      GradSums s;
      for (int64_t k = 0; k < chunks; ++k) {
        const double* p = partial + 4 * k * C + c;
        s.sumD += p[0];
        s.sumD2 += p[C];
        s.sumDy += p[2 * C];
        s.sumDyD += p[3 * C];
      }
      const GradCoeffs g = finish(io, c, shifts[c], s);
      co[c] = g.mu, co[C + c] = g.inv, co[2 * C + c] = g.a, co[3 * C + c] = g.k1;
      co[4 * C + c] = g.k2, co[5 * C + c] = g.fromMean, co[6 * C + c] = g.fromVar;
    }
#pragma omp parallel for schedule(static) if (parallelWorth(geo))
    for (int64_t k = 0; k < chunks; ++k) {
      gradRows(x, dy, dx, C, k * kChunkRows, std::min(rows, (k + 1) * kChunkRows), co,
               cfg_.training);
    }
  }

  BatchNormConfig cfg_;
  Layout dyLayout_, xLayout_, dxLayout_;
};

XT_REGISTER_KERNEL("ai.onnx", "BatchNormalization", floatKernel<BatchNormKernel>({0, 1, 2, 3, 4}));
XT_REGISTER_KERNEL("ai.xtrain", "BatchNormGrad",
                   floatKernel<BatchNormGradKernel>({0, 1, 2, 3, 4, 5, 6, 7, 8}));

}  // namespace
}  // namespace xtrain::device
