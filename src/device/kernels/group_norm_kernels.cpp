// Kernels of InstanceNormalization (ai.onnx), GroupNormalization (ai.graphcore) and GroupNormGrad
// (ai.xtrain). FLOAT (FLOAT16 runs promoted). X is viewed as [N, C, S]; group g of sample n holds
// the rows of channels g*C/G .. (g+1)*C/G - 1, or with attribute strided_channel_grouping = 1 the
// channels g, g+G, g+2G, ... (Poplar's strided grouping). Each group's M = C/G * S elements have
// their mean and population variance taken in double (two passes: the mean, then the squared
// deviations). Per channel the forward is y = x * a + b and the gradient dx = dy * a' + x * b' +
// d', tight loops over contiguous rows of S elements.
#include <algorithm>
#include <cmath>
#include <vector>

#include "device/kernel.hpp"

namespace xtrain::device {
namespace {

struct GroupGeometry {
  int64_t n = 0, c = 0, groups = 1, s = 1;
  bool strided = false;
  int64_t perGroup() const { return c / groups; }  // channels per group
  int64_t m() const { return perGroup() * s; }     // elements per (n, g)
  // The k-th channel of group g.
  int64_t channel(int64_t g, int64_t k) const { return strided ? k * groups + g : g * perGroup() + k; }
};

GroupGeometry groupGeometry(const KernelSpec& spec, const TensorInfo& x, int64_t groups) {
  if (x.rank() < 2) spec.fail("X is {}; expected rank >= 2", x.toString());
  GroupGeometry g;
  g.n = x.dim(0);
  g.c = x.dim(1);
  g.groups = groups;
  if (groups < 1 || g.c % groups != 0) {
    spec.fail("num_groups {} does not divide the {} channels of X {}", groups, g.c, x.toString());
  }
  for (int64_t d = 2; d < x.rank(); ++d) g.s *= x.dim(d);
  return g;
}

float checkedEpsilon(const KernelSpec& spec) {
  const float eps = spec.attrs.getFloat("epsilon");
  if (!(eps >= 0.0f)) spec.fail("epsilon is {}; expected a value >= 0", eps);
  return eps;
}

// Mean and 1/sqrt(var + eps) of group g of the sample whose channels start at xn.
void groupStats(const float* xn, const GroupGeometry& geo, int64_t g, float eps, float& mean,
                float& inv) {
  const int64_t m = geo.m(), s = geo.s, cpg = geo.perGroup();
  double sum = 0;
  for (int64_t k = 0; k < cpg; ++k) {
    const float* xr = xn + geo.channel(g, k) * s;
    for (int64_t i = 0; i < s; ++i) sum += xr[i];
  }
  const double mu = m > 0 ? sum / static_cast<double>(m) : 0.0;
  const auto muf = static_cast<float>(mu);
  double sq = 0;
  for (int64_t k = 0; k < cpg; ++k) {
    const float* xr = xn + geo.channel(g, k) * s;
    for (int64_t i = 0; i < s; ++i) {
      const float dev = xr[i] - muf;
      sq += static_cast<double>(dev) * dev;
    }
  }
  const double var = m > 0 ? sq / static_cast<double>(m) : 0.0;
  mean = muf;
  inv = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
}

class GroupNormKernel final : public Kernel {
 public:
  GroupNormKernel(GroupGeometry geo, float eps) : geo_(geo), eps_(eps) {}

  void run(const KernelIO& io) override {
    const float* x = io.in(0).data<float>();
    const float* scale = io.in(1).data<float>();
    const float* bias = io.in(2).data<float>();
    float* y = io.out(0).data<float>();
    float* meanOut = io.hasOut(1) ? io.out(1).data<float>() : nullptr;
    float* invOut = io.hasOut(2) ? io.out(2).data<float>() : nullptr;
    const int64_t cpg = geo_.perGroup(), s = geo_.s;
    for (int64_t n = 0; n < geo_.n; ++n) {
      const int64_t base = n * geo_.c * s;
      for (int64_t g = 0; g < geo_.groups; ++g) {
        float mean = 0, inv = 0;
        groupStats(x + base, geo_, g, eps_, mean, inv);
        if (meanOut != nullptr) meanOut[n * geo_.groups + g] = mean;
        if (invOut != nullptr) invOut[n * geo_.groups + g] = inv;
        for (int64_t k = 0; k < cpg; ++k) {
          const int64_t c = geo_.channel(g, k);
          const float a = inv * scale[c];
          const float b = bias[c] - mean * a;
          const float* __restrict xr = x + base + c * s;
          float* __restrict yr = y + base + c * s;
          for (int64_t i = 0; i < s; ++i) yr[i] = xr[i] * a + b;
        }
      }
    }
  }

 private:
  GroupGeometry geo_;
  float eps_;
};

// With xhat = (x - mean) * inv, dxhat = dy * scale[c] and the sums over the group
//   A = sum dxhat, B = sum dxhat * xhat,
// dx = inv * (dxhat - A/M - xhat * B/M) + dMean/M - dInv * inv^3 * (x - mean) / M,
// dScale[c] = sum dy * xhat, dBias[c] = sum dy (over n and the channel's S positions).
class GroupNormGradKernel final : public Kernel {
 public:
  GroupNormGradKernel(GroupGeometry geo, float eps)
      : geo_(geo),
        eps_(eps),
        dScale_(static_cast<size_t>(geo.c)),
        dBias_(static_cast<size_t>(geo.c)) {}

  void run(const KernelIO& io) override {
    const float* dy = io.in(0).data<float>();
    const float* x = io.in(1).data<float>();
    const float* scale = io.in(2).data<float>();
    const float* savedMean = io.hasIn(3) ? io.in(3).data<float>() : nullptr;
    const float* savedInv = io.hasIn(4) ? io.in(4).data<float>() : nullptr;
    const float* dMean = io.hasIn(5) ? io.in(5).data<float>() : nullptr;
    const float* dInv = io.hasIn(6) ? io.in(6).data<float>() : nullptr;
    float* dx = io.out(0).data<float>();
    const int64_t cpg = geo_.perGroup(), s = geo_.s, m = geo_.m();
    const double invM = m > 0 ? 1.0 / static_cast<double>(m) : 0.0;
    std::fill(dScale_.begin(), dScale_.end(), 0.0);
    std::fill(dBias_.begin(), dBias_.end(), 0.0);
    for (int64_t n = 0; n < geo_.n; ++n) {
      const int64_t base = n * geo_.c * s;
      for (int64_t g = 0; g < geo_.groups; ++g) {
        const int64_t stat = n * geo_.groups + g;
        float mean = 0, inv = 0;
        if (savedMean != nullptr) {
          mean = savedMean[stat];
          inv = savedInv[stat];
        } else {
          groupStats(x + base, geo_, g, eps_, mean, inv);
        }
        double a = 0, b = 0;
        for (int64_t k = 0; k < cpg; ++k) {
          const int64_t c = geo_.channel(g, k);
          const float* __restrict xr = x + base + c * s;
          const float* __restrict dr = dy + base + c * s;
          double sdy = 0, sdyx = 0;
          for (int64_t i = 0; i < s; ++i) {
            sdy += dr[i];
            sdyx += static_cast<double>(dr[i]) * (xr[i] - mean);
          }
          dBias_[static_cast<size_t>(c)] += sdy;
          dScale_[static_cast<size_t>(c)] += sdyx * inv;
          a += scale[c] * sdy;
          b += scale[c] * sdyx * inv;
        }
        // dx = dy * (inv * scale[c]) + (x - mean) * kx + k0
        const double dm = dMean != nullptr ? dMean[stat] : 0.0;
        const double di = dInv != nullptr ? dInv[stat] : 0.0;
        const double invd = inv;
        const double kxd = -(invd * invd * b + di * invd * invd * invd) * invM;
        const double k0d = -invd * a * invM + dm * invM;
        const auto kx = static_cast<float>(kxd);
        const float k0 = static_cast<float>(k0d) - mean * kx;
        for (int64_t k = 0; k < cpg; ++k) {
          const int64_t c = geo_.channel(g, k);
          const float ac = inv * scale[c];
          const float* __restrict xr = x + base + c * s;
          const float* __restrict dr = dy + base + c * s;
          float* __restrict out = dx + base + c * s;
          for (int64_t i = 0; i < s; ++i) out[i] = dr[i] * ac + xr[i] * kx + k0;
        }
      }
    }
    float* dScale = io.hasOut(1) ? io.out(1).data<float>() : nullptr;
    float* dBias = io.hasOut(2) ? io.out(2).data<float>() : nullptr;
    for (int64_t c = 0; c < geo_.c; ++c) {
      if (dScale != nullptr) dScale[c] = static_cast<float>(dScale_[static_cast<size_t>(c)]);
      if (dBias != nullptr) dBias[c] = static_cast<float>(dBias_[static_cast<size_t>(c)]);
    }
  }

 private:
  GroupGeometry geo_;
  float eps_;
  std::vector<double> dScale_, dBias_;
};

XT_REGISTER_KERNEL("ai.onnx", "InstanceNormalization",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     spec.requireFloatInputs();
                     const TensorInfo& x = spec.inputs.at(0);
                     const int64_t c = x.rank() >= 2 ? x.dim(1) : 0;
                     return std::make_unique<GroupNormKernel>(groupGeometry(spec, x, c),
                                                              checkedEpsilon(spec));
                   });

// The geometry of a GroupNormalization or GroupNormGrad whose X is input `xIndex`.
GroupGeometry groupAttrGeometry(const KernelSpec& spec, size_t xIndex) {
  GroupGeometry g =
      groupGeometry(spec, spec.inputs.at(xIndex), spec.attrs.getInt("num_groups"));
  g.strided = spec.attrs.getInt("strided_channel_grouping", 0) != 0;
  return g;
}

XT_REGISTER_KERNEL("ai.graphcore", "GroupNormalization",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     spec.requireFloatInputs();
                     return std::make_unique<GroupNormKernel>(groupAttrGeometry(spec, 0),
                                                              checkedEpsilon(spec));
                   });

XT_REGISTER_KERNEL("ai.xtrain", "GroupNormGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     spec.requireFloatInputs();
                     return std::make_unique<GroupNormGradKernel>(groupAttrGeometry(spec, 1),
                                                                  checkedEpsilon(spec));
                   });

}  // namespace
}  // namespace xtrain::device
