// Kernels of ai.onnx RandomNormal and RandomUniform (FLOAT; FLOAT16 runs promoted: drawn in FLOAT,
// stored rounded) and ai.graphcore ShapedDropout (FLOAT). Semantics: src/ir/ops/random_ops.cpp.
//
// Every number comes from a counter-based hash of (KernelIO::seed, element index), so the draws are
// reproducible from the seed and do not depend on how loops are split.
#include <cmath>
#include <cstring>
#include <numbers>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/copy_util.hpp"

namespace xtrain::device {
namespace {

// SplitMix64's output number `counter` from state `seed`.
inline uint64_t randomBits(uint64_t seed, uint64_t counter) {
  uint64_t x = seed + (counter + 1) * 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// 32 random bits -> a float in [0, 1) with 24 significant bits (every value exactly representable).
inline float unitFloat(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

void requireFloatOutput(const KernelSpec& spec) {
  // FLOAT16 is refused here so that the kernel runs promoted.
  if (spec.outputs.at(0).dataType() != DataType::FLOAT) {
    spec.fail("output {} must be FLOAT", spec.outputs[0].toString());
  }
}

// RandomUniform: low + (high - low) * u, u uniform in [0, 1); two draws per 64-bit hash.
XT_REGISTER_KERNEL("ai.onnx", "RandomUniform",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireFloatOutput(spec);
                     const float low = spec.attrs.getFloat("low");
                     const float range = spec.attrs.getFloat("high") - low;
                     return makeKernel([low, range](const KernelIO& io) {
                       float* y = io.out(0).data<float>();
                       const int64_t n = io.out(0).nelms();
                       for (int64_t i = 0; i < n; i += 2) {
                         const uint64_t h = randomBits(io.seed, static_cast<uint64_t>(i / 2));
                         y[i] = low + range * unitFloat(static_cast<uint32_t>(h));
                         if (i + 1 < n) {
                           y[i + 1] = low + range * unitFloat(static_cast<uint32_t>(h >> 32));
                         }
                       }
                     });
                   });

// RandomNormal: mean + scale * z with z standard normal, two per 64-bit hash (Box-Muller).
XT_REGISTER_KERNEL("ai.onnx", "RandomNormal",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireFloatOutput(spec);
                     const float mean = spec.attrs.getFloat("mean");
                     const float scale = spec.attrs.getFloat("scale");
                     return makeKernel([mean, scale](const KernelIO& io) {
                       float* y = io.out(0).data<float>();
                       const int64_t n = io.out(0).nelms();
                       constexpr double kTwoPi = 2.0 * std::numbers::pi;
                       for (int64_t i = 0; i < n; i += 2) {
                         const uint64_t h = randomBits(io.seed, static_cast<uint64_t>(i / 2));
                         // u1 in (0, 1], so the logarithm is finite.
                         const double u1 = 1.0 - unitFloat(static_cast<uint32_t>(h));
                         const double u2 = unitFloat(static_cast<uint32_t>(h >> 32));
                         const double r = std::sqrt(-2.0 * std::log(u1));
                         y[i] = mean + scale * static_cast<float>(r * std::cos(kTwoPi * u2));
                         if (i + 1 < n) {
                           y[i + 1] = mean + scale * static_cast<float>(r * std::sin(kTwoPi * u2));
                         }
                       }
                     });
                   });

// ShapedDropout: a keep mask of the attribute's shape (each element kept when its 32 random bits
// reach the threshold: probability 1 - ratio), broadcast over the data.
class ShapedDropoutKernel final : public Kernel {
 public:
  explicit ShapedDropoutKernel(const KernelSpec& spec) {
    const float ratio = spec.attrs.getFloat("ratio");
    if (!(ratio >= 0.0f && ratio < 1.0f)) spec.fail("ratio {} is not in [0, 1)", ratio);
    active_ = spec.attrs.getInt("training_mode") != 0 && ratio > 0.0f;
    scale_ = 1.0f / (1.0f - ratio);
    const double t = std::round(static_cast<double>(ratio) * 4294967296.0);
    threshold_ = static_cast<uint32_t>(std::min(t, 4294967295.0));
    const Shape& x = spec.inputs.at(0).shape();
    const Shape& m = spec.attrs.getInts("shape");
    if (m.size() > x.size()) spec.fail("shape has a higher rank than the data");
    // The mask's strides aligned to the data's axes, 0 where the mask broadcasts.
    const std::vector<int64_t> ms = copyutil::stridesOf(m);
    dims_ = x;
    maskStrides_.assign(x.size(), 0);
    for (size_t i = 0; i < m.size(); ++i) {
      const size_t d = x.size() - m.size() + i;
      if (m[i] != 1 && m[i] != x[d]) spec.fail("shape does not broadcast to the data");
      if (m[i] != 1) maskStrides_[d] = ms[i];
    }
    maskN_ = shapeNelms(m);
    keep_.resize(static_cast<size_t>(maskN_));
  }

  void run(const KernelIO& io) override {
    const float* x = io.in(0).data<float>();
    float* y = io.out(0).data<float>();
    const int64_t n = io.out(0).nelms();
    for (int64_t j = 0; j < maskN_; ++j) {
      const bool keep = !active_ || static_cast<uint32_t>(randomBits(
                                        io.seed, static_cast<uint64_t>(j))) >= threshold_;
      keep_[static_cast<size_t>(j)] = keep ? 1 : 0;
    }
    if (io.hasOut(1) && maskN_ != 0) {
      std::memcpy(io.out(1).raw(), keep_.data(), static_cast<size_t>(maskN_));
    }
    if (!active_) {
      if (n != 0) std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
      return;
    }
    if (n == 0) return;
    // Walk the data row-major, the mask index following with its strides.
    const size_t rank = dims_.size();
    std::vector<int64_t> idx(rank, 0);
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
      y[i] = keep_[static_cast<size_t>(at)] != 0 ? x[i] * scale_ : 0.0f;
      for (size_t d = rank; d-- > 0;) {
        at += maskStrides_[d];
        if (++idx[d] < dims_[d]) break;
        at -= maskStrides_[d] * dims_[d];
        idx[d] = 0;
      }
    }
  }

 private:
  bool active_ = false;
  float scale_ = 1.0f;
  uint32_t threshold_ = 0;
  Shape dims_;
  std::vector<int64_t> maskStrides_;
  int64_t maskN_ = 0;
  std::vector<uint8_t> keep_;
};

XT_REGISTER_KERNEL("ai.graphcore", "ShapedDropout",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     if (spec.inputs.at(0).dataType() != DataType::FLOAT) {
                       spec.fail("input {} must be FLOAT", spec.inputs[0].toString());
                     }
                     return std::make_unique<ShapedDropoutKernel>(spec);
                   });

}  // namespace
}  // namespace xtrain::device
