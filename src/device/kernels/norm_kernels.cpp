// Kernels for LayerNormalization, LayerNormGrad, BatchNormalization and BatchNormGrad. FLOAT only;
// statistics and parameter-gradient sums accumulate in double (LayerNorm: float within chunks of a
// row or blocks of rows, double across them). Canonical forms:
// src/ir/ops/norm_ops.cpp.
#include <algorithm>
#include <cmath>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/broadcast.hpp"

namespace xtrain::device {
namespace {

void requireFloat(const KernelSpec& spec, const std::vector<size_t>& inputs) {
  for (size_t i : inputs) {
    if (spec.hasInput(i) && spec.inputs[i].dataType() != DataType::FLOAT) {
      spec.fail("input {} is {}; only FLOAT is supported", i, spec.inputs[i].toString());
    }
  }
}

// A parameter (LayerNorm's Scale or B) seen at the full normalised shape. When its shape only
// differs from the normalised shape by leading size-1 dimensions the buffer is used as it is;
// otherwise it is expanded into a buffer allocated once, through an index table computed at prepare
// time.
class ExpandedParam {
 public:
  ExpandedParam() = default;
  ExpandedParam(const Shape& from, const Shape& to) {
    const int64_t n = shapeNelms(to);
    if (shapeNelms(from) == n) return;  // same layout
    index_.resize(static_cast<size_t>(n));
    buffer_.resize(static_cast<size_t>(n));
    forEachBroadcast2(to, broadcastStrides(from, to), std::vector<int64_t>(to.size(), 0),
                      [&](int64_t o, int64_t i, int64_t) { index_[static_cast<size_t>(o)] = i; });
  }
  const float* get(const HostTensor& t) {
    const float* p = t.data<float>();
    if (index_.empty()) return p;
    for (size_t j = 0; j < index_.size(); ++j) buffer_[j] = p[index_[j]];
    return buffer_.data();
  }

 private:
  std::vector<int64_t> index_;
  std::vector<float> buffer_;
};

struct RowGeometry {
  int64_t rows = 0;  // product of X.shape[:axis]
  int64_t n = 0;     // product of X.shape[axis:]
  Shape norm;        // X.shape[axis:]
};

RowGeometry rowGeometry(const KernelSpec& spec, const TensorInfo& x) {
  const int64_t axis = spec.attrs.getInt("axis");
  if (axis < 0 || axis >= x.rank()) spec.fail("axis {} out of range for X {}", axis, x.toString());
  RowGeometry g;
  g.norm = Shape(x.shape().begin() + axis, x.shape().end());
  g.n = shapeNelms(g.norm);
  g.rows = shapeNelms(Shape(x.shape().begin(), x.shape().begin() + axis));
  return g;
}

// LayerNorm rows are summed in chunks of kRowChunk elements: float sums within a chunk (so the
// loops vectorise fully: double sums would halve the vector width and convert every element), the
// chunks' sums added in double, so long rows keep double's accuracy.
constexpr int64_t kRowChunk = 512;

// sum over j < n of f(j), chunked as above.
template <typename F>
double chunkedSum(int64_t n, F&& f) {
  double total = 0;
  for (int64_t j0 = 0; j0 < n; j0 += kRowChunk) {
    const int64_t je = std::min(n, j0 + kRowChunk);
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t j = j0; j < je; ++j) s += f(j);
    total += s;
  }
  return total;
}

// Mean and population variance of a LayerNorm row of n floats, two passes.
void rowMeanVar(const float* __restrict p, int64_t n, double& mean, double& var) {
  if (n <= 0) {
    mean = var = 0.0;
    return;
  }
  mean = chunkedSum(n, [p](int64_t j) { return p[j]; }) / static_cast<double>(n);
  const auto mu = static_cast<float>(mean);
  var = chunkedSum(n,
                   [p, mu](int64_t j) {
                     const float d = p[j] - mu;
                     return d * d;
                   }) /
        static_cast<double>(n);
}

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
float invStd(double var, float eps) {
  return static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
}

// The factory of kernel K(spec), after checking that the inputs `floats` (where present) are
// FLOAT.
template <typename K>
KernelFactory floatKernel(std::vector<size_t> floats) {
  return [floats](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    requireFloat(spec, floats);
    return std::make_unique<K>(spec);
  };
}

// LayerNorm rows are independent: both kernels spread them over the kernel threads when X is
// large. The vectorised loops take about 0.5 ns per element on one core, so a transformer's
// LayerNorm ([tokens, d_model], 100K-300K elements) takes 0.1-0.3 ms, and there a parallel
// region's wake-up, and its stalls when the cores are shared, cost more than they save: in the
// training step under load the threaded kernels took 2-3x the time of the single-threaded ones.
bool rowsParallelWorth(const RowGeometry& g) {
  return g.rows > 1 && g.rows * g.n >= (int64_t{1} << 20);
}

class LayerNormKernel final : public Kernel {
 public:
  explicit LayerNormKernel(const KernelSpec& spec)
      : geo_(rowGeometry(spec, spec.inputs.at(0))),
        eps_(spec.attrs.getFloat("epsilon")),
        scale_(spec.inputs.at(1).shape(), geo_.norm),
        hasBias_(spec.hasInput(2)) {
    if (hasBias_) bias_ = ExpandedParam(spec.inputs[2].shape(), geo_.norm);
  }

  void run(const KernelIO& io) override {
    const float* x = io.in(0).data<float>();
    const float* __restrict s = scale_.get(io.in(1));
    const float* __restrict b = hasBias_ ? bias_.get(io.in(2)) : nullptr;
    float* y = io.out(0).data<float>();
    float* meanOut = io.hasOut(1) ? io.out(1).data<float>() : nullptr;
    float* invOut = io.hasOut(2) ? io.out(2).data<float>() : nullptr;
    const int64_t n = geo_.n;
#pragma omp parallel for schedule(static) if (rowsParallelWorth(geo_))
    for (int64_t r = 0; r < geo_.rows; ++r) {
      const float* __restrict xr = x + r * n;
      float* __restrict yr = y + r * n;
      double mean, var;
      rowMeanVar(xr, n, mean, var);
      const float mu = static_cast<float>(mean);
      const float inv = invStd(var, eps_);
      if (b != nullptr) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - mu) * inv * s[j] + b[j];
      } else {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - mu) * inv * s[j];
      }
      if (meanOut != nullptr) meanOut[r] = mu;
      if (invOut != nullptr) invOut[r] = inv;
    }
  }

 private:
  RowGeometry geo_;
  float eps_;
  ExpandedParam scale_;
  ExpandedParam bias_;
  bool hasBias_;
};

// dX_j = inv * (g_j - mean(g) - xhat_j * mean(g * xhat)) + dMean / n - dInv * inv^2 * xhat_j / n,
// with g = dY * Scale; dScale = sum over rows of dY * xhat, dB = sum over rows of dY.
//
// Rows are split into fixed blocks of kRowsPerBlock; each block sums its rows' contributions to
// dScale and dB in order into its own partial row, and the partial rows are added in block order
// at the end. The blocks are spread over the threads, so the sums (and every bit of the result) do
// not depend on the thread count.
class LayerNormGradKernel final : public Kernel {
 public:
  static constexpr int64_t kRowsPerBlock = 16;

  explicit LayerNormGradKernel(const KernelSpec& spec)
      : geo_(rowGeometry(spec, spec.inputs.at(1))),
        eps_(spec.attrs.getFloat("epsilon")),
        scale_(spec.inputs.at(2).shape(), geo_.norm),
        blocks_((geo_.rows + kRowsPerBlock - 1) / kRowsPerBlock),
        partialScale_(static_cast<size_t>(blocks_ * geo_.n)),
        partialBias_(partialScale_.size()),
        sums_(static_cast<size_t>(2 * geo_.n)) {}

  void run(const KernelIO& io) override {
    const float* dy = io.in(0).data<float>();
    const float* x = io.in(1).data<float>();
    const float* s = scale_.get(io.in(2));
    const float* savedMean = io.hasIn(3) ? io.in(3).data<float>() : nullptr;
    const float* savedInv = io.hasIn(4) ? io.in(4).data<float>() : nullptr;
    const float* dMean = io.hasIn(5) ? io.in(5).data<float>() : nullptr;
    const float* dInv = io.hasIn(6) ? io.in(6).data<float>() : nullptr;
    float* dx = io.out(0).data<float>();
    const int64_t n = geo_.n;
    const float invN = n > 0 ? 1.0f / static_cast<float>(n) : 0.0f;
#pragma omp parallel for schedule(static) if (rowsParallelWorth(geo_))
    for (int64_t blk = 0; blk < blocks_; ++blk) {
      float* __restrict ps = partialScale_.data() + blk * n;
      float* __restrict pb = partialBias_.data() + blk * n;
      std::fill(ps, ps + n, 0.0f);
      std::fill(pb, pb + n, 0.0f);
      const int64_t end = std::min(geo_.rows, (blk + 1) * kRowsPerBlock);
      for (int64_t r = blk * kRowsPerBlock; r < end; ++r) {
        const float* __restrict xr = x + r * n;
        const float* __restrict dyr = dy + r * n;
        float* __restrict dxr = dx + r * n;
        float mu, inv;
        if (savedMean != nullptr && savedInv != nullptr) {
          mu = savedMean[r];
          inv = savedInv[r];
        } else {
          double mean, var;
          rowMeanVar(xr, n, mean, var);
          mu = static_cast<float>(mean);
          inv = invStd(var, eps_);
        }
        const float* __restrict sv = s;
        const double sumG = chunkedSum(n, [=](int64_t j) { return dyr[j] * sv[j]; });
        const double sumGx =
            chunkedSum(n, [=](int64_t j) { return dyr[j] * sv[j] * ((xr[j] - mu) * inv); });
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) {
          ps[j] += dyr[j] * ((xr[j] - mu) * inv);
          pb[j] += dyr[j];
        }
        const float a = static_cast<float>(sumG) * invN;
        const float c = static_cast<float>(sumGx) * invN;
        const float fromMean = dMean != nullptr ? dMean[r] * invN : 0.0f;
        const float fromInv = dInv != nullptr ? -dInv[r] * inv * inv * invN : 0.0f;
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) {
          const float xhat = (xr[j] - mu) * inv;
          dxr[j] = inv * (dyr[j] * s[j] - a - xhat * c) + fromMean + fromInv * xhat;
        }
      }
    }
    float* ds = io.out(1).data<float>();
    float* db = io.out(2).data<float>();
    double* __restrict sumS = sums_.data();
    double* __restrict sumB = sums_.data() + n;
    std::fill(sums_.begin(), sums_.end(), 0.0);
    for (int64_t blk = 0; blk < blocks_; ++blk) {
      const float* __restrict ps = partialScale_.data() + blk * n;
      const float* __restrict pb = partialBias_.data() + blk * n;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) {
        sumS[j] += ps[j];
        sumB[j] += pb[j];
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      ds[j] = static_cast<float>(sumS[j]);
      db[j] = static_cast<float>(sumB[j]);
    }
  }

 private:
  RowGeometry geo_;
  float eps_;
  ExpandedParam scale_;
  int64_t blocks_;
  // [blocks_, n]: each row block's dScale and dB contributions (float: 16 rows; the blocks are
  // added in double).
  std::vector<float> partialScale_;
  std::vector<float> partialBias_;
  std::vector<double> sums_;  // [2, n]: dScale's and dB's sums over the blocks, in block order
};

XT_REGISTER_KERNEL("ai.onnx", "LayerNormalization", floatKernel<LayerNormKernel>({0, 1, 2}));
XT_REGISTER_KERNEL("ai.xtrain", "LayerNormGrad",
                   floatKernel<LayerNormGradKernel>({0, 1, 2, 3, 4, 5, 6}));

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

// What BatchNormalization and its gradient share: the geometry of X, the attributes, and each
// channel's statistics (the batch's in training, else the running ones).
struct BatchNormConfig {
  ChannelGeometry geo;
  float eps;
  float momentum;
  bool training = false;

  BatchNormConfig(const KernelSpec& spec, const TensorInfo& x)
      : geo(channelGeometry(spec, x)),
        eps(spec.attrs.getFloat("epsilon")),
        momentum(spec.attrs.getFloat("momentum")) {}

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

class BatchNormKernel final : public Kernel {
 public:
  explicit BatchNormKernel(const KernelSpec& spec) : cfg_(spec, spec.inputs.at(0)) {
    cfg_.training = batchNormTraining(spec);
  }

  void run(const KernelIO& io) override {
    const ChannelGeometry& geo = cfg_.geo;
    const float* x = io.in(0).data<float>();
    const float* scale = io.in(1).data<float>();
    const float* bias = io.in(2).data<float>();
    const float* inMean = io.in(3).data<float>();
    const float* inVar = io.in(4).data<float>();
    float* y = io.out(0).data<float>();
    float* outs[4] = {};
    for (size_t i = 0; i < 4; ++i)
      outs[i] = io.hasOut(i + 1) ? io.out(i + 1).data<float>() : nullptr;
      // Channels are independent: each thread takes whole channels, so the result does not depend
      // on the thread count.
#pragma omp parallel for schedule(static) if (parallelWorth(geo))
    for (int64_t c = 0; c < geo.c; ++c) {
      double mean, var;
      cfg_.stats(x, inMean, inVar, c, mean, var);
      const float mu = static_cast<float>(mean);
      const float a = static_cast<float>(scale[c] / std::sqrt(var + static_cast<double>(cfg_.eps)));
      const float b = bias[c];
      for (int64_t i = 0; i < geo.n; ++i) {
        const int64_t off = (i * geo.c + c) * geo.s;
        const float* p = x + off;
        float* q = y + off;
        for (int64_t k = 0; k < geo.s; ++k) q[k] = (p[k] - mu) * a + b;
      }
      if (cfg_.training) {
        const double m = cfg_.momentum;
        if (outs[0] != nullptr) outs[0][c] = static_cast<float>(m * inMean[c] + (1 - m) * mean);
        if (outs[1] != nullptr) outs[1][c] = static_cast<float>(m * inVar[c] + (1 - m) * var);
        if (outs[2] != nullptr) outs[2][c] = mu;
        if (outs[3] != nullptr) outs[3][c] = static_cast<float>(var);
      }
    }
  }

 private:
  BatchNormConfig cfg_;
};

// Training: dX = scale*inv*(dY - mean(dY) - xhat*mean(dY*xhat)) + dMeanTotal/M +
// dVarTotal*2*(x-mean)/M, where M = N*S and dMeanTotal = (1-momentum)*dRunningMean + dSavedMean
// (likewise for the variance). Inference: dX = dY*scale*inv. Both: dScale = sum(dY*xhat), dB =
// sum(dY).
class BatchNormGradKernel final : public Kernel {
 public:
  explicit BatchNormGradKernel(const KernelSpec& spec) : cfg_(spec, spec.inputs.at(1)) {
    cfg_.training = spec.attrs.getInt("training_mode") != 0;
  }

  void run(const KernelIO& io) override {
    const ChannelGeometry& geo = cfg_.geo;
    const float* dy = io.in(0).data<float>();
    const float* x = io.in(1).data<float>();
    const float* scale = io.in(2).data<float>();
    const float* inMean = io.hasIn(3) ? io.in(3).data<float>() : nullptr;
    const float* inVar = io.hasIn(4) ? io.in(4).data<float>() : nullptr;
    const float* dStat[4] = {};
    for (size_t i = 0; i < 4; ++i)
      dStat[i] = io.hasIn(i + 5) ? io.in(i + 5).data<float>() : nullptr;
    float* dx = io.out(0).data<float>();
    float* dScale = io.out(1).data<float>();
    float* dBias = io.out(2).data<float>();
    const double m = static_cast<double>(geo.perChannel());
    // Channels are independent (see BatchNormKernel::run).
#pragma omp parallel for schedule(static) if (parallelWorth(geo))
    for (int64_t c = 0; c < geo.c; ++c) {
      // One pass over the channel: with d = x - shift, sum(d), sum(d^2) (training: the batch
      // statistics, as in channelMeanVar), sum(dY) and sum(dY * d); then
      // sum(dY * xhat) = inv * (sum(dY * d) - (mean - shift) * sum(dY)).
      const double shift =
          cfg_.training ? (m > 0 ? x[c * geo.s] : 0.0) : (inMean != nullptr ? inMean[c] : 0.0);
      double sumD = 0, sumD2 = 0, sumDy = 0, sumDyD = 0;
      for (int64_t i = 0; i < geo.n; ++i) {
        const int64_t off = (i * geo.c + c) * geo.s;
#pragma omp simd reduction(+ : sumD, sumD2, sumDy, sumDyD)
        for (int64_t k = 0; k < geo.s; ++k) {
          const double d = x[off + k] - shift;
          const double g = dy[off + k];
          sumD += d;
          sumD2 += d * d;
          sumDy += g;
          sumDyD += g * d;
        }
      }
      double mean = inMean != nullptr ? inMean[c] : 0.0;
      double var = inVar != nullptr ? inVar[c] : 0.0;
      if (cfg_.training) {
        const double dm = m > 0 ? sumD / m : 0.0;
        mean = shift + dm;
        var = m > 0 ? std::max(0.0, sumD2 / m - dm * dm) : 0.0;
      }
      const float mu = static_cast<float>(mean);
      const float inv = invStd(var, cfg_.eps);
      const double sumDyX = inv * (sumDyD - (mean - shift) * sumDy);
      dScale[c] = static_cast<float>(sumDyX);
      dBias[c] = static_cast<float>(sumDy);
      const float a = scale[c] * inv;
      if (!cfg_.training) {
        for (int64_t i = 0; i < geo.n; ++i) {
          const int64_t off = (i * geo.c + c) * geo.s;
          for (int64_t k = 0; k < geo.s; ++k) dx[off + k] = dy[off + k] * a;
        }
        continue;
      }
      const double keep = 1.0 - cfg_.momentum;
      double dMeanTotal = 0, dVarTotal = 0;
      if (dStat[0] != nullptr) dMeanTotal += keep * dStat[0][c];
      if (dStat[1] != nullptr) dVarTotal += keep * dStat[1][c];
      if (dStat[2] != nullptr) dMeanTotal += dStat[2][c];
      if (dStat[3] != nullptr) dVarTotal += dStat[3][c];
      const float k1 = static_cast<float>(sumDy / m);
      const float k2 = static_cast<float>(sumDyX / m);
      const float fromMean = static_cast<float>(dMeanTotal / m);
      const float fromVar = static_cast<float>(2.0 * dVarTotal / m);
      for (int64_t i = 0; i < geo.n; ++i) {
        const int64_t off = (i * geo.c + c) * geo.s;
        for (int64_t k = 0; k < geo.s; ++k) {
          const float d = x[off + k] - mu;
          dx[off + k] = a * (dy[off + k] - k1 - d * inv * k2) + fromMean + fromVar * d;
        }
      }
    }
  }

 private:
  BatchNormConfig cfg_;
};

XT_REGISTER_KERNEL("ai.onnx", "BatchNormalization", floatKernel<BatchNormKernel>({0, 1, 2, 3, 4}));
XT_REGISTER_KERNEL("ai.xtrain", "BatchNormGrad",
                   floatKernel<BatchNormGradKernel>({0, 1, 2, 3, 4, 5, 6, 7, 8}));

}  // namespace
}  // namespace xtrain::device
