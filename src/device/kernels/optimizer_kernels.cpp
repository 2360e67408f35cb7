// Kernels of the optimizer ops (see src/ir/optimizers/optimizer_ops.cpp for their contracts).
#include <algorithm>
#include <cstring>

#include "common/optimizer_hyper.hpp"
#include "device/kernel.hpp"
#include "device/kernels/optimizer_hyper_input.hpp"
#include "device/kernels/parallel_elements.hpp"

namespace xtrain::device {
namespace {

XT_REGISTER_KERNEL("ai.xtrain", "SGDUpdate", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  spec.requireFloatInputs();
  requireHyperInput<SgdHyper>(spec);
  const bool nesterov = spec.attrs.getInt("nesterov", 0) != 0;
  const bool zeroGrad = spec.attrs.getInt("zeroGrad", 0) != 0;
  const bool hasVelocity = spec.hasInput(3);
  // A FLOAT16 velocity (accl1Type) is stored rounded, and the weight moves by the stored value, as
  // where the velocity's update and the weight's are separate steps. With stochastic rounding the
  // store rounds (stochastically) after the kernel, and the step uses the float value.
  const bool roundVelocity = hasVelocity && spec.attrs.getInt("halfVelocity", 0) != 0 &&
                             spec.attrs.getInt("stochasticRounding", 0) == 0;
  return makeKernel([=](const KernelIO& io) {
    float* w = io.in(0).data<float>();
    float* g = io.in(1).data<float>();
    const HyperView<SgdHyper> h(io.in(2).span<float>());
    const float gs = h[SgdHyper::GradScale] * h[SgdHyper::ClipFactor];
    const float lr = h[SgdHyper::LearningRate], wd = h[SgdHyper::WeightDecay];
    const float mm = h[SgdHyper::Momentum], dm = h[SgdHyper::Dampening];
    const float vs = h[SgdHyper::VelocityScaling];
    const int64_t n = io.in(0).nelms();
    float* v = hasVelocity ? io.in(3).data<float>() : nullptr;
    forEachChunk(n, [&](int64_t, int64_t begin, int64_t end) {
      if (v != nullptr) {
        const float gain = (1.0f - dm) * vs;
        const float step = lr / vs;
        for (int64_t i = begin; i < end; ++i) {
          const float gi = g[i] * gs + wd * w[i];
          float vi = mm * v[i] + gain * gi;
          if (roundVelocity) vi = halfToFloat(floatToHalf(vi));
          v[i] = vi;
          w[i] -= nesterov ? step * (vs * gi + mm * vi) : step * vi;
        }
      } else {
        // PopART's SGD without velocity dampens too: w <- w - lr (1 - dm) (g + wd w).
        const float step = lr * (1.0f - dm);
        for (int64_t i = begin; i < end; ++i) w[i] -= step * (g[i] * gs + wd * w[i]);
      }
      // Zeroed here, while the chunk is in cache, rather than in a second pass.
      if (zeroGrad) std::fill(g + begin, g + end, 0.0f);
    });
  });
});

XT_REGISTER_KERNEL("ai.xtrain", "AccumulateGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     spec.requireFloatInputs();
                     const bool running = spec.attrs.getString("mode") == "running";
                     return makeKernel([=](const KernelIO& io) {
                       float* a = io.in(0).data<float>();
                       const float* g = io.in(1).data<float>();
                       const int64_t n = io.in(0).nelms();
                       const float k = running ? 1.0f / (io.in(2).data<float>()[0] + 1.0f) : 0.0f;
                       forEachChunk(n, [&](int64_t, int64_t begin, int64_t end) {
                         if (running) {
                           for (int64_t i = begin; i < end; ++i) a[i] += (g[i] - a[i]) * k;
                         } else {
                           for (int64_t i = begin; i < end; ++i) a[i] += g[i];
                         }
                       });
                     });
                   });

}  // namespace
}  // namespace xtrain::device

namespace xtrain::device {
namespace {

XT_REGISTER_KERNEL("ai.xtrain", "CopyVarUpdate", [](const KernelSpec&) -> std::unique_ptr<Kernel> {
  return makeKernel(
      [](const KernelIO& io) { std::memcpy(io.in(0).raw(), io.in(1).raw(), io.in(0).nbytes()); });
});

}  // namespace
}  // namespace xtrain::device
