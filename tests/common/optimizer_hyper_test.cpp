// The named layout of the optimizer hyper tensors (src/common/optimizer_hyper.hpp): sizes, the
// shared prefix, building a tensor by name and the size checks of a view.
#include "common/optimizer_hyper.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "testing/error_testing.hpp"

namespace xtrain::testing {
namespace {

TEST(OptimizerHyper, EachFamilyHasItsCountAndLayout) {
  EXPECT_EQ(kHyperSize<CommonHyper>, 2u);
  EXPECT_EQ(kHyperSize<SgdHyper>, 7u);
  EXPECT_EQ(kHyperSize<AdamHyper>, 8u);
  EXPECT_EQ(kHyperSize<AdaptiveHyper>, 7u);
  EXPECT_EQ(hyperTensorInfo<AdamHyper>(), TensorInfo(DataType::FLOAT, {8}));
  EXPECT_EQ(hyperLayoutText<SgdHyper>(), "{gradScale, clip, lr, wd, mm, dm, vs}");
  EXPECT_EQ(hyperLayoutText<AdamHyper>(),
            "{gradScale, clip, lr, wd, beta1, beta2, eps, maxWeightNorm}");
  EXPECT_EQ(hyperLayoutText<AdaptiveHyper>(), "{gradScale, clip, lr, wd, alpha, momentum, eps}");
}

TEST(OptimizerHyper, ValuesAreBuiltByName) {
  HyperValues<AdaptiveHyper> h;
  // In an order unlike the layout's: the names, not the calls, place the values.
  h.set(AdaptiveHyper::Eps, 7);
  h.set(AdaptiveHyper::Momentum, 6);
  h.set(AdaptiveHyper::Alpha, 5);
  h.set(AdaptiveHyper::WeightDecay, 4);
  h.set(AdaptiveHyper::LearningRate, 3);
  h.set(AdaptiveHyper::ClipFactor, 2);
  h.set(AdaptiveHyper::GradScale, 1);
  EXPECT_EQ(h.values(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7}));
  const std::vector<float> values = h.values();
  const HyperView<AdaptiveHyper> view{values};
  EXPECT_EQ(view[AdaptiveHyper::Alpha], 5.0f);
  EXPECT_EQ(view[AdaptiveHyper::Eps], 7.0f);
}

TEST(OptimizerHyper, AnEntryLeftUnsetIsRefused) {
  HyperValues<SgdHyper> h;
  h.set(SgdHyper::GradScale, 1);
  h.set(SgdHyper::ClipFactor, 1);
  h.set(SgdHyper::LearningRate, 0.1f);
  h.set(SgdHyper::WeightDecay, 0);
  h.set(SgdHyper::Momentum, 0.9f);
  h.set(SgdHyper::VelocityScaling, 1);
  EXPECT_THROW(h.values(), internal_error);
  EXPECT_CONTAINS(errorOf([&] { h.values(); }), "'dm'");
  h.set(SgdHyper::Dampening, 0);
  EXPECT_EQ(h.values().size(), kHyperSize<SgdHyper>);
}

TEST(OptimizerHyper, AViewChecksTheElementCount) {
  const std::vector<float> seven(7, 0.0f), eight(8, 0.0f);
  EXPECT_NO_THROW(HyperView<AdamHyper>{eight});
  EXPECT_THROW(HyperView<AdamHyper>{seven}, internal_error);
  EXPECT_THROW(HyperView<SgdHyper>{eight}, internal_error);
  // The shared entries are read from any family's tensor, but not from a shorter one.
  EXPECT_NO_THROW(HyperView<CommonHyper>{seven});
  const std::vector<float> one(1, 0.0f);
  EXPECT_THROW(HyperView<CommonHyper>{one}, internal_error);
}

TEST(OptimizerHyper, TheSharedEntriesAreWrittenThroughAnyFamilysTensor) {
  std::vector<float> adam(kHyperSize<AdamHyper>, 0.5f);
  const HyperView<CommonHyper, float> common{adam};
  common[CommonHyper::ClipFactor] = 0.25f;
  const HyperView<AdamHyper> view{adam};
  EXPECT_EQ(view[AdamHyper::ClipFactor], 0.25f);
  EXPECT_EQ(view[AdamHyper::GradScale], 0.5f);
  EXPECT_EQ(view[AdamHyper::LearningRate], 0.5f);
}

}  // namespace
}  // namespace xtrain::testing
