// Kernel of the Adaptive family's op, AdaptiveUpdate (contract in
// src/ir/optimizers/optimizer_ops.cpp; the rule in include/xtrain/optimizer.hpp). Arithmetic in
// float32 like PopART's.
#include <cmath>
#include <type_traits>

#include "common/optimizer_hyper.hpp"
#include "device/kernel.hpp"
#include "device/kernels/optimizer_hyper_input.hpp"
#include "device/kernels/parallel_elements.hpp"

namespace xtrain::device {
namespace {

enum class AdaptiveKind { AdaGrad, RMSProp, CenteredRMSProp, AdaDelta };

AdaptiveKind adaptiveKind(const KernelSpec& spec) {
  const std::string m = spec.attrs.getString("mode");
  if (m == "AdaGrad") return AdaptiveKind::AdaGrad;
  if (m == "RMSProp") return AdaptiveKind::RMSProp;
  if (m == "CenteredRMSProp") return AdaptiveKind::CenteredRMSProp;
  if (m == "AdaDelta") return AdaptiveKind::AdaDelta;
  spec.fail("unknown Adaptive mode '{}'", m);
}

struct AdaptiveConstants {
  float gs, l2wd, a, oneMinusA, mm, eps, decay, lr;
  bool tfVariant;  // RMSProp's eps inside the square root (TensorFlow's)
};

// The accumulators and the update of n elements (the rule in include/xtrain/optimizer.hpp).
template <AdaptiveKind Kind, bool Momentum>
void adaptiveElements(int64_t n, float* w, const float* g, float* v1, float* v2, float* v3,
                      const AdaptiveConstants& c) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * c.gs + c.l2wd * w[i];
    float x = 0.0f;
    if constexpr (Kind == AdaptiveKind::AdaGrad) {
      v1[i] += gi * gi;
      x = gi / (std::sqrt(v1[i]) + c.eps);
    } else if constexpr (Kind == AdaptiveKind::RMSProp) {
      v1[i] = c.a * v1[i] + c.oneMinusA * gi * gi;
      x = c.tfVariant ? gi / std::sqrt(v1[i] + c.eps) : gi / (std::sqrt(v1[i]) + c.eps);
    } else if constexpr (Kind == AdaptiveKind::CenteredRMSProp) {
      v1[i] = c.a * v1[i] + c.oneMinusA * gi * gi;
      v2[i] = c.a * v2[i] + c.oneMinusA * gi;
      const float meanSquare = v1[i] - v2[i] * v2[i];
      x = c.tfVariant ? gi / std::sqrt(meanSquare + c.eps) : gi / (std::sqrt(meanSquare) + c.eps);
    } else {
      v1[i] = c.a * v1[i] + c.oneMinusA * gi * gi;
      x = gi * std::sqrt(v2[i] + c.eps) / std::sqrt(v1[i] + c.eps);
      v2[i] = c.a * v2[i] + c.oneMinusA * x * x;
    }
    if constexpr (Momentum) {
      if (c.tfVariant) {
        // TensorFlow's momentum holds lr * x, and the decay is not scaled by lr (PopART's
        // ScaledVarUpdate with the learning rate in the updater).
        v3[i] = c.mm * v3[i] + c.lr * x;
        w[i] = w[i] * (1.0f - c.decay) - v3[i];
        continue;
      }
      v3[i] = c.mm * v3[i] + x;
      x = v3[i];
    }
    w[i] -= c.lr * (x + c.decay * w[i]);
  }
}

XT_REGISTER_KERNEL(
    "ai.xtrain", "AdaptiveUpdate", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
      spec.requireFloatInputs();  // FLOAT16 tensors run promoted
      requireHyperInput<AdaptiveHyper>(spec);
      const AdaptiveKind kind = adaptiveKind(spec);
      const bool l2 = spec.attrs.getString("weightDecayMode") == "l2";
      const bool zeroGrad = spec.attrs.getInt("zeroGrad", 0) != 0;
      const bool momentum = spec.hasInput(5);
      const bool tfVariant = spec.attrs.getInt("tfVariant", 0) != 0;
      return makeKernel([=](const KernelIO& io) {
        float* w = io.in(0).data<float>();
        float* g = io.in(1).data<float>();
        const HyperView<AdaptiveHyper> h(io.in(2).span<float>());
        float* v1 = io.in(3).data<float>();
        float* v2 = kind == AdaptiveKind::CenteredRMSProp || kind == AdaptiveKind::AdaDelta
                        ? io.in(4).data<float>()
                        : nullptr;
        float* v3 = momentum ? io.in(5).data<float>() : nullptr;
        using H = AdaptiveHyper;
        const float gs = h[H::GradScale] * h[H::ClipFactor];
        const float lr = h[H::LearningRate], wd = h[H::WeightDecay];
        const float a = h[H::Alpha], mm = h[H::Momentum], eps = h[H::Eps];
        const float oneMinusA = 1.0f - a;
        const float decay = l2 ? 0.0f : wd;
        const float l2wd = l2 ? wd : 0.0f;
        const int64_t n = io.in(0).nelms();
        const AdaptiveConstants c{gs, l2wd, a, oneMinusA, mm, eps, decay, lr, tfVariant};
        // One loop per (mode, momentum) pair, so that each is a straight,
        // vectorizable loop.
        auto run = [&](auto mode) {
          constexpr AdaptiveKind k = decltype(mode)::value;
          forEachChunk(n, [&](int64_t, int64_t b, int64_t e) {
            float* v2c = v2 != nullptr ? v2 + b : nullptr;
            float* v3c = v3 != nullptr ? v3 + b : nullptr;
            momentum ? adaptiveElements<k, true>(e - b, w + b, g + b, v1 + b, v2c, v3c, c)
                     : adaptiveElements<k, false>(e - b, w + b, g + b, v1 + b, v2c, v3c, c);
          });
        };
        using K = AdaptiveKind;
        switch (kind) {
          case K::AdaGrad: run(std::integral_constant<K, K::AdaGrad>()); break;
          case K::RMSProp: run(std::integral_constant<K, K::RMSProp>()); break;
          case K::CenteredRMSProp: run(std::integral_constant<K, K::CenteredRMSProp>()); break;
          case K::AdaDelta: run(std::integral_constant<K, K::AdaDelta>()); break;
        }
        if (zeroGrad) io.in(1).fillZero();
      });
    });

}  // namespace
}  // namespace xtrain::device
