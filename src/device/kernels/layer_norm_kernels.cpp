// Kernels for LayerNormalization and LayerNormGrad. FLOAT only; statistics and parameter-gradient
// sums accumulate in float within chunks of a row or blocks of rows and in double across them.
// Canonical forms: src/ir/ops/norm_ops.cpp.
#include <algorithm>
#include <cmath>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/broadcast.hpp"
#include "device/kernels/norm_common.hpp"

namespace xtrain::device {
namespace {

using norm::floatKernel;
using norm::invStd;

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

}  // namespace
}  // namespace xtrain::device
