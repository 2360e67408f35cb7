// The optimizer update kernels split large tensors into chunks over the kernel threads
// (src/device/kernels/parallel_elements.hpp). An element's new value must not depend on the thread
// count nor on where the chunk boundaries fall: each kernel is run on a tensor of several chunks
// with 1 and with 2 threads (bit-identical), and its elements compared with the same kernel run on
// a one-chunk tensor holding the same values (bit-identical, except Lamb, whose trust ratio sums
// the whole tensor: there the sums are compared with a double-precision reference).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/optimizer_hyper.hpp"
#include "device/kernel.hpp"
#include "device/kernels/kernel_threads.hpp"
#include "device/kernels/parallel_elements.hpp"

namespace xtrain {
namespace {

constexpr int64_t kLarge = 3 * device::kParallelChunk + 17;  // three full chunks and a tail
constexpr int64_t kSmall = 1000;                             // one chunk

struct UpdateCase {
  std::string type;
  Attributes attrs;
  std::vector<float> hyper;
  size_t stateTensors = 0;  // per-element state inputs after the hyper tensor
  bool stepScalar = false;  // Adam's step count, a scalar after the state
};

// Runs the kernel once on inputs filled from `seed` (w, g and the state drawn alike for every size,
// so element i has the same inputs in the small and the large run); returns every input after.
std::vector<std::vector<float>> runUpdate(const UpdateCase& c, int64_t n, int threads) {
  const TensorInfo elems(DataType::FLOAT, {n});
  device::KernelSpec spec;
  spec.type = c.type;
  spec.domain = "ai.xtrain";
  spec.description = c.type;
  spec.attrs = c.attrs;
  spec.inputs = {elems, elems, TensorInfo(DataType::FLOAT, {static_cast<int64_t>(c.hyper.size())})};
  for (size_t k = 0; k < c.stateTensors; ++k) spec.inputs.push_back(elems);
  if (c.stepScalar) spec.inputs.push_back(TensorInfo(DataType::FLOAT, {}));
  auto kernel = device::KernelRegistry::instance().create(spec);

  std::vector<HostTensor> tensors;
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    tensors.emplace_back(spec.inputs[k]);
    float* p = tensors.back().data<float>();
    if (k == 2) {
      std::memcpy(p, c.hyper.data(), c.hyper.size() * sizeof(float));
      continue;
    }
    std::mt19937 gen(static_cast<unsigned>(17 + k));
    // Positive state keeps the square roots defined; the first state tensor in [1, 2) keeps
    // CenteredRMSProp's v1 - v2^2 positive.
    std::uniform_real_distribution<float> dist(k <= 1 ? -1.0f : (k == 3 ? 1.0f : 0.01f),
                                               k == 3 ? 2.0f : 1.0f);
    for (int64_t i = 0; i < spec.inputs[k].nelms(); ++i) p[i] = dist(gen);
    if (c.stepScalar && k + 1 == spec.inputs.size()) p[0] = 3.0f;
  }
  std::vector<HostTensor*> ptrs;
  for (auto& t : tensors) ptrs.push_back(&t);
  device::KernelIO io;
  io.inputs = ptrs;
  const int before = device::kernelThreadsForThisThread();
  device::setKernelThreadsForThisThread(threads);
  kernel->run(io);
  device::setKernelThreadsForThisThread(before);
  std::vector<std::vector<float>> out;
  for (auto& t : tensors) out.emplace_back(t.data<float>(), t.data<float>() + t.nelms());
  return out;
}

Attributes modeAttrs(const std::string& mode, const std::string& decay = "decay") {
  Attributes a;
  a.set("mode", mode);
  a.set("weightDecayMode", decay);
  return a;
}

std::vector<UpdateCase> cases() {
  Attributes nesterov;
  nesterov.set("nesterov", int64_t{1});
  nesterov.set("zeroGrad", int64_t{1});
  // {gradScale, clip, lr, wd, mm, dm, vs}
  const std::vector<float> sgd{0.5f, 1.0f, 0.1f, 0.01f, 0.9f, 0.1f, 2.0f};
  // {gradScale, clip, lr, wd, beta1, beta2, eps, maxWeightNorm}
  const std::vector<float> adam{0.5f, 1.0f, 0.01f, 0.01f, 0.9f, 0.999f, 1e-6f, 10.0f};
  // {gradScale, clip, lr, wd, alpha, momentum, eps}
  const std::vector<float> adaptive{0.5f, 1.0f, 0.01f, 0.01f, 0.9f, 0.5f, 1e-6f};
  return {
      {"SGDUpdate", {}, sgd, 0},
      {"SGDUpdate", nesterov, sgd, 1},
      {"AdamUpdate", modeAttrs("Adam"), adam, 2, true},
      {"AdamUpdate", modeAttrs("AdaMax", "l2"), adam, 2, true},
      {"AdamUpdate", modeAttrs("Lamb"), adam, 2, true},
      {"AdaptiveUpdate", modeAttrs("AdaGrad"), adaptive, 1},
      {"AdaptiveUpdate", modeAttrs("CenteredRMSProp"), adaptive, 3},
      {"AdaptiveUpdate", modeAttrs("AdaDelta", "l2"), adaptive, 2},
  };
}

std::string nameOf(const UpdateCase& c) {
  return c.type + " " + (c.attrs.has("mode") ? c.attrs.getString("mode") : "") +
         (c.stateTensors > 0 ? " with state" : "");
}

TEST(OptimizerKernelChunks, SameBitsWithOneOrTwoThreads) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(nameOf(c));
    EXPECT_EQ(runUpdate(c, kLarge, 1), runUpdate(c, kLarge, 2));
  }
}

TEST(OptimizerKernelChunks, ElementsDoNotDependOnTheChunkTheyFallIn) {
  for (const auto& c : cases()) {
    if (c.attrs.has("mode") && c.attrs.getString("mode") == "Lamb") continue;  // below
    SCOPED_TRACE(nameOf(c));
    const auto large = runUpdate(c, kLarge, 2);
    const auto small = runUpdate(c, kSmall, 1);
    for (size_t k = 0; k < large.size(); ++k) {
      if (k == 2) continue;  // the hyper tensor
      const size_t n = std::min<size_t>(small[k].size(), kSmall);
      ASSERT_TRUE(std::equal(small[k].begin(), small[k].begin() + n, large[k].begin()))
          << "input " << k;
    }
  }
}

// Lamb moves every element by lr * trustRatio * u, the ratio from the sums of squares over the
// whole tensor, taken per chunk: compared with the ratio summed in double from the kernel's own u
// (which Lamb leaves in the gradient input).
TEST(OptimizerKernelChunks, LambSumsEveryChunk) {
  const UpdateCase lamb = cases()[4];
  ASSERT_EQ(lamb.attrs.getString("mode"), "Lamb");
  // The weights before: the same draw as runUpdate's.
  std::vector<float> w0(kLarge);
  std::mt19937 gen(17);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& x : w0) x = dist(gen);
  const auto after = runUpdate(lamb, kLarge, 2);
  const std::vector<float>& w = after[0];
  const std::vector<float>& u = after[1];
  double w2 = 0, u2 = 0;
  for (int64_t i = 0; i < kLarge; ++i) {
    w2 += static_cast<double>(w0[i]) * w0[i];
    u2 += static_cast<double>(u[i]) * u[i];
  }
  const double ratio = std::min(std::sqrt(w2), 10.0) / std::sqrt(u2);
  const double lr = lamb.hyper[2];
  for (int64_t i : {int64_t{0}, device::kParallelChunk - 1, device::kParallelChunk,
                    2 * device::kParallelChunk + 5, kLarge - 1}) {
    EXPECT_NEAR(w[i], w0[i] - lr * ratio * u[i], 1e-6) << "element " << i;
  }
}

}  // namespace
}  // namespace xtrain
