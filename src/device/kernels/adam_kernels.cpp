// Kernels of the Adam family's ops, AdamUpdate and LambApply (contracts in
// src/ir/optimizers/optimizer_ops.cpp; the rule in include/xtrain/optimizer.hpp). Arithmetic is in
// float32 like PopART's: derived constants such as 1 - beta2 and 1 - beta1^t come from the float32
// values (docs/optimizers.md section 1).
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "common/optimizer_hyper.hpp"
#include "device/kernel.hpp"
#include "device/kernels/optimizer_hyper_input.hpp"
#include "device/kernels/parallel_elements.hpp"

namespace xtrain::device {
namespace {

enum class AdamKind { Adam, AdamNoBias, AdaMax, Lamb, LambNoBias };

AdamKind adamKind(const KernelSpec& spec) {
  const std::string m = spec.attrs.getString("mode");
  if (m == "Adam") return AdamKind::Adam;
  if (m == "AdamNoBias") return AdamKind::AdamNoBias;
  if (m == "AdaMax") return AdamKind::AdaMax;
  if (m == "Lamb") return AdamKind::Lamb;
  if (m == "LambNoBias") return AdamKind::LambNoBias;
  spec.fail("unknown Adam mode '{}'", m);
}

struct AdamConstants {
  float gs, l2wd, b1, oneMinusB1, b2, oneMinusB2, mScale, vScale, eps, decay, lr;
};

// The moments and the update of n elements (the rule in include/xtrain/optimizer.hpp). Lamb keeps u
// in g (the weight moves once the norms over the whole tensor are known) and sums the squares of w
// and u.
template <bool AdaMax, bool Lamb>
void adamElements(int64_t n, float* w, float* g, float* m, float* v, const AdamConstants& c,
                  double& sumW2, double& sumU2) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * c.gs + c.l2wd * w[i];
    m[i] = c.b1 * m[i] + c.oneMinusB1 * gi;
    if constexpr (AdaMax) {
      v[i] = std::max(c.b2 * v[i], std::fabs(gi));
    } else {
      v[i] = c.b2 * v[i] + c.oneMinusB2 * gi * gi;
    }
    const float mh = m[i] * c.mScale;
    const float vh = v[i] * c.vScale;
    float u = 0;
    if constexpr (AdaMax) {
      u = mh / (vh + c.eps);
    } else {
      u = mh / (std::sqrt(vh) + c.eps);
    }
    u += c.decay * w[i];
    if constexpr (Lamb) {
      g[i] = u;
    } else {
      w[i] -= c.lr * u;
    }
  }
  if constexpr (Lamb) {
    // Four partial sums break the chain of dependent additions (the loop above stays vectorized).
    double w2[4] = {0, 0, 0, 0}, u2[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      for (int k = 0; k < 4; ++k) {
        w2[k] += static_cast<double>(w[i + k]) * w[i + k];
        u2[k] += static_cast<double>(g[i + k]) * g[i + k];
      }
    }
    for (; i < n; ++i) {
      w2[0] += static_cast<double>(w[i]) * w[i];
      u2[0] += static_cast<double>(g[i]) * g[i];
    }
    sumW2 = (w2[0] + w2[1]) + (w2[2] + w2[3]);
    sumU2 = (u2[0] + u2[1]) + (u2[2] + u2[3]);
  }
}

// Lamb's trust ratio from the sums of squares of the weight and of its update.
float trustRatio(double sumW2, double sumU2, float maxWeightNorm) {
  if (sumW2 == 0.0 || sumU2 == 0.0 || maxWeightNorm == 0.0f) return 1.0f;
  const float r1 = std::min(std::sqrt(static_cast<float>(sumW2)), maxWeightNorm);
  return r1 / std::sqrt(static_cast<float>(sumU2));
}

XT_REGISTER_KERNEL(
    "ai.xtrain", "AdamUpdate", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
      spec.requireFloatInputs();  // FLOAT16 tensors run promoted
      requireHyperInput<AdamHyper>(spec);
      const AdamKind kind = adamKind(spec);
      const bool l2 = spec.attrs.getString("weightDecayMode") == "l2";
      const bool zeroGrad = spec.attrs.getInt("zeroGrad", 0) != 0;
      const bool lamb = kind == AdamKind::Lamb || kind == AdamKind::LambNoBias;
      const bool deferApply = spec.hasInput(6);  // Lamb on a shard: LambApply moves the weight
      const bool correctM =
          kind == AdamKind::Adam || kind == AdamKind::Lamb || kind == AdamKind::AdaMax;
      const bool correctV = kind == AdamKind::Adam || kind == AdamKind::Lamb;
      const bool adamax = kind == AdamKind::AdaMax;
      return makeKernel([=](const KernelIO& io) {
        float* w = io.in(0).data<float>();
        float* g = io.in(1).data<float>();
        const HyperView<AdamHyper> h(io.in(2).span<float>());
        float* m = io.in(3).data<float>();
        float* v = io.in(4).data<float>();
        float* step = io.in(5).data<float>();
        const float gs = h[AdamHyper::GradScale] * h[AdamHyper::ClipFactor];
        const float lr = h[AdamHyper::LearningRate], wd = h[AdamHyper::WeightDecay];
        const float b1 = h[AdamHyper::Beta1], b2 = h[AdamHyper::Beta2], eps = h[AdamHyper::Eps];
        const float mwn = h[AdamHyper::MaxWeightNorm];
        const float t = step[0] + 1.0f;
        step[0] = t;
        const float mScale = correctM ? 1.0f / (1.0f - std::pow(b1, t)) : 1.0f;
        const float vScale = correctV ? 1.0f / (1.0f - std::pow(b2, t)) : 1.0f;
        const float oneMinusB1 = 1.0f - b1, oneMinusB2 = 1.0f - b2;
        const float decay = l2 ? 0.0f : wd;  // Decay: added to the normalised update
        const float l2wd = l2 ? wd : 0.0f;   // L2Regularization: added to the gradient
        const int64_t n = io.in(0).nelms();
        // One loop per (AdaMax, Lamb) pair, so that each is a straight, vectorizable loop. Lamb's
        // sums of squares are taken per chunk and added in chunk order: the same whatever the
        // thread count.
        const AdamConstants c{gs,     l2wd,   b1,  oneMinusB1, b2, oneMinusB2,
                              mScale, vScale, eps, decay,      lr};
        std::vector<std::pair<double, double>> chunkSums(lamb ? chunkCount(n) : 0);
        forEachChunk(n, [&](int64_t chunk, int64_t begin, int64_t end) {
          double w2 = 0.0, u2 = 0.0;
          const int64_t k = end - begin;
          float *wc = w + begin, *gc = g + begin, *mc = m + begin, *vc = v + begin;
          if (adamax) {
            lamb ? adamElements<true, true>(k, wc, gc, mc, vc, c, w2, u2)
                 : adamElements<true, false>(k, wc, gc, mc, vc, c, w2, u2);
          } else {
            lamb ? adamElements<false, true>(k, wc, gc, mc, vc, c, w2, u2)
                 : adamElements<false, false>(k, wc, gc, mc, vc, c, w2, u2);
          }
          if (lamb) chunkSums[chunk] = {w2, u2};
        });
        double sumW2 = 0.0, sumU2 = 0.0;
        for (const auto& [w2, u2] : chunkSums) {
          sumW2 += w2;
          sumU2 += u2;
        }
        if (lamb && deferApply) {
          float* norms = io.in(6).data<float>();
          norms[0] = static_cast<float>(sumW2);
          norms[1] = static_cast<float>(sumU2);
          return;  // the session zeroes a sharded accumulator
        }
        if (lamb) {
          const float step_ = lr * trustRatio(sumW2, sumU2, mwn);
          forEachChunk(n, [&](int64_t, int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) w[i] -= step_ * g[i];
          });
        }
        if (zeroGrad) io.in(1).fillZero();
      });
    });

XT_REGISTER_KERNEL("ai.xtrain", "LambApply", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  spec.requireFloatInputs();  // FLOAT16 weights run promoted
  requireHyperInput<AdamHyper>(spec);
  return makeKernel([](const KernelIO& io) {
    float* w = io.in(0).data<float>();
    const float* u = io.in(1).data<float>();
    const HyperView<AdamHyper> h(io.in(2).span<float>());
    const float* norms = io.in(3).data<float>();
    const float step =
        h[AdamHyper::LearningRate] * trustRatio(norms[0], norms[1], h[AdamHyper::MaxWeightNorm]);
    forEachChunk(io.in(0).nelms(), [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) w[i] -= step * u[i];
    });
  });
});

}  // namespace
}  // namespace xtrain::device
