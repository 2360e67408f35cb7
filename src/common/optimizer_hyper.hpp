// The layout of an optimizer update's hyperparameter tensor, named. Every weight's update op reads
// a small FLOAT tensor of hyperparameters (docs/architecture.md, "Hyperparameters as tensors"): the
// IR writes it (ir::hyperValues), the kernels of SGDUpdate, AdamUpdate, LambApply and
// AdaptiveUpdate read it, and the session writes the clipping factor into it between phases. All of
// them name its elements with the enums below instead of positions, so the writer and the readers
// cannot drift apart. The header sits in common because both ir and device (and session) use it.
//
// One enum per family: SgdHyper (SGDUpdate), AdamHyper (AdamUpdate and LambApply in every Adam
// mode: Adam, AdamNoBias, AdaMax, Lamb, LambNoBias) and AdaptiveHyper (AdaptiveUpdate). Each begins
// with the entries every family shares (CommonHyper: the gradient scale and the clipping factor,
// which the session reads and writes without knowing the family), and ends with Count, the
// tensor's element count. HyperValues builds a tensor (every entry must be written), HyperView
// reads or writes one and checks its size.
#pragma once
#pragma GCC visibility push(default)

#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/check.hpp"
#include "xtrain/tensorinfo.hpp"

namespace xtrain {

// The entries at the start of every family's tensor: g = grad · GradScale · ClipFactor, with
// GradScale = 1/lossScaling (times 1/(af·G) for a Mean reduction with the Post strategy) and
// ClipFactor = 1 unless gradient clipping sets it for the step.
enum class CommonHyper : uint8_t { GradScale, ClipFactor, Count };

// SGDUpdate: {gradScale, clip, lr, wd, mm, dm, vs}.
enum class SgdHyper : uint8_t {
  GradScale,
  ClipFactor,
  LearningRate,
  WeightDecay,
  Momentum,
  Dampening,
  VelocityScaling,
  Count
};

// AdamUpdate and LambApply: {gradScale, clip, lr, wd, beta1, beta2, eps, maxWeightNorm}.
enum class AdamHyper : uint8_t {
  GradScale,
  ClipFactor,
  LearningRate,
  WeightDecay,
  Beta1,
  Beta2,
  Eps,
  MaxWeightNorm,
  Count
};

// AdaptiveUpdate: {gradScale, clip, lr, wd, alpha, momentum, eps}.
enum class AdaptiveHyper : uint8_t {
  GradScale,
  ClipFactor,
  LearningRate,
  WeightDecay,
  Alpha,
  Momentum,
  Eps,
  Count
};

// Per layout: the short name of each entry (for messages), in enum order.
template <class Slot>
struct HyperLayout;

template <>
struct HyperLayout<CommonHyper> {
  static constexpr auto kNames = std::to_array<std::string_view>({"gradScale", "clip"});
};
template <>
struct HyperLayout<SgdHyper> {
  static constexpr auto kNames =
      std::to_array<std::string_view>({"gradScale", "clip", "lr", "wd", "mm", "dm", "vs"});
};
template <>
struct HyperLayout<AdamHyper> {
  static constexpr auto kNames = std::to_array<std::string_view>(
      {"gradScale", "clip", "lr", "wd", "beta1", "beta2", "eps", "maxWeightNorm"});
};
template <>
struct HyperLayout<AdaptiveHyper> {
  static constexpr auto kNames = std::to_array<std::string_view>(
      {"gradScale", "clip", "lr", "wd", "alpha", "momentum", "eps"});
};

template <class Slot>
constexpr size_t hyperIndex(Slot slot) {
  return static_cast<size_t>(slot);
}

// The element count of a family's tensor (of the shared prefix, for CommonHyper).
template <class Slot>
inline constexpr size_t kHyperSize = hyperIndex(Slot::Count);

// Every family begins with the shared entries, and names each of its entries.
template <class Slot>
constexpr bool hyperLayoutIsConsistent() {
  return hyperIndex(Slot::GradScale) == hyperIndex(CommonHyper::GradScale) &&
         hyperIndex(Slot::ClipFactor) == hyperIndex(CommonHyper::ClipFactor) &&
         HyperLayout<Slot>::kNames.size() == kHyperSize<Slot>;
}
static_assert(HyperLayout<CommonHyper>::kNames.size() == kHyperSize<CommonHyper>);
static_assert(hyperLayoutIsConsistent<SgdHyper>());
static_assert(hyperLayoutIsConsistent<AdamHyper>());
static_assert(hyperLayoutIsConsistent<AdaptiveHyper>());
static_assert(kHyperSize<SgdHyper> == 7 && kHyperSize<AdamHyper> == 8 &&
              kHyperSize<AdaptiveHyper> == 7);

// The TensorInfo of a family's hyper tensor: FLOAT[Count].
template <class Slot>
TensorInfo hyperTensorInfo() {
  return TensorInfo(DataType::FLOAT, {static_cast<int64_t>(kHyperSize<Slot>)});
}

// "{gradScale, clip, lr, ...}": the layout, for messages.
template <class Slot>
std::string hyperLayoutText() {
  std::string out = "{";
  for (size_t k = 0; k < kHyperSize<Slot>; ++k) {
    if (k > 0) out += ", ";
    out += HyperLayout<Slot>::kNames[k];
  }
  return out + "}";
}

// The contents of a family's hyper tensor, built by name. values() refuses (internal_error) a
// tensor with an entry that was never set.
template <class Slot>
class HyperValues {
 public:
  void set(Slot slot, float value) {
    values_[hyperIndex(slot)] = value;
    set_.set(hyperIndex(slot));
  }
  std::vector<float> values() const {
    for (size_t k = 0; k < kHyperSize<Slot>; ++k) {
      XT_CHECK(set_.test(k), "hyperparameter '{}' of the layout {} was not set",
               HyperLayout<Slot>::kNames[k], hyperLayoutText<Slot>());
    }
    return {values_.begin(), values_.end()};
  }

 private:
  std::array<float, kHyperSize<Slot>> values_{};
  std::bitset<kHyperSize<Slot>> set_;
};

// Named access to a hyper tensor's elements: HyperView<AdamHyper> reads, HyperView<CommonHyper,
// float> writes the shared entries of any family's tensor. The elements must be exactly the
// family's Count (at least the shared prefix for CommonHyper); internal_error otherwise.
template <class Slot, class T = const float>
class HyperView {
  static_assert(std::is_same_v<std::remove_const_t<T>, float>);

 public:
  explicit HyperView(std::span<T> elements) : data_(elements.data()) {
    if constexpr (std::is_same_v<Slot, CommonHyper>) {
      XT_CHECK_GE(elements.size(), kHyperSize<Slot>, "hyperparameter tensor {}",
                  hyperLayoutText<Slot>());
    } else {
      XT_CHECK_EQ(elements.size(), kHyperSize<Slot>, "hyperparameter tensor {}",
                  hyperLayoutText<Slot>());
    }
  }
  // A view does not own its elements: not of a temporary vector (which would leave it dangling).
  HyperView(std::vector<float>&&) = delete;
  HyperView(const std::vector<float>&&) = delete;
  T& operator[](Slot slot) const { return data_[hyperIndex(slot)]; }

 private:
  T* data_;
};

}  // namespace xtrain

#pragma GCC visibility pop
