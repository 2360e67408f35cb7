// The hyper tensors the optimizer transform writes (ir::hyperValues) hold each value in the entry
// of common/optimizer_hyper.hpp that names it, and the update kernels refuse a tensor of another
// family's size.
#include <gtest/gtest.h>

#include "common/optimizer_hyper.hpp"
#include "device/kernel.hpp"
#include "ir/optimizers/optimizer_transform.hpp"
#include "testing/error_testing.hpp"
#include "xtrain/optimizer.hpp"

namespace xtrain::testing {
namespace {

OptimizerValue nonConst(float v) {
  return OptimizerValue(v, false);
}

// Mean with the Post strategy: gradScale = 1 / (lossScaling · af · G).
ir::OptimizerTransformOptions meanPost() {
  ir::OptimizerTransformOptions o;
  o.accumulationFactor = 2;
  o.globalReplicationFactor = 4;
  o.reduction = ReductionType::Mean;
  o.strategy = MeanReductionStrategy::Post;
  return o;
}

TEST(OptimizerHyperLayout, SgdValuesAreInTheirNamedEntries) {
  SGD sgd(nonConst(0.5f), nonConst(0.125f), nonConst(0.75f), nonConst(0.25f), nonConst(2.0f),
          nonConst(4.0f));
  sgd.insertSpecific("W", {{"learningRate", {0.0625f, false}}});
  const std::vector<float> hv = ir::hyperValues(sgd, "W", meanPost(), 4.0f);
  const HyperView<SgdHyper> h{hv};
  EXPECT_EQ(h[SgdHyper::GradScale], 1.0f / 32);
  EXPECT_EQ(h[SgdHyper::ClipFactor], 1.0f);
  EXPECT_EQ(h[SgdHyper::LearningRate], 0.0625f);
  EXPECT_EQ(h[SgdHyper::WeightDecay], 0.125f);  // insertSpecific starts from the defaults
  EXPECT_EQ(h[SgdHyper::Momentum], 0.75f);
  const std::vector<float> defaults = ir::hyperValues(sgd, "other", meanPost(), 4.0f);
  const HyperView<SgdHyper> d{defaults};
  EXPECT_EQ(d[SgdHyper::LearningRate], 0.5f);
  EXPECT_EQ(d[SgdHyper::WeightDecay], 0.125f);
  EXPECT_EQ(d[SgdHyper::Momentum], 0.75f);
  EXPECT_EQ(d[SgdHyper::Dampening], 0.25f);
  EXPECT_EQ(d[SgdHyper::VelocityScaling], 2.0f);
}

TEST(OptimizerHyperLayout, AdamValuesAreInTheirNamedEntries) {
  Adam adam(nonConst(0.5f), nonConst(0.125f), nonConst(0.75f), nonConst(0.875f), nonConst(0.25f),
            nonConst(2.0f), nonConst(3.0f), AdamMode::Lamb, WeightDecayMode::Decay, DataType::FLOAT,
            DataType::FLOAT, DataType::FLOAT);
  adam.insertSpecific("W", {{"beta2", {0.5f, false}}});
  ir::OptimizerTransformOptions sum;
  const std::vector<float> hv = ir::hyperValues(adam, "W", sum, 2.0f);
  const HyperView<AdamHyper> h{hv};
  EXPECT_EQ(h[AdamHyper::GradScale], 0.5f);
  EXPECT_EQ(h[AdamHyper::ClipFactor], 1.0f);
  EXPECT_EQ(h[AdamHyper::LearningRate], 0.5f);
  EXPECT_EQ(h[AdamHyper::WeightDecay], 0.125f);
  EXPECT_EQ(h[AdamHyper::Beta1], 0.75f);
  EXPECT_EQ(h[AdamHyper::Beta2], 0.5f);
  EXPECT_EQ(h[AdamHyper::Eps], 0.25f);
  EXPECT_EQ(h[AdamHyper::MaxWeightNorm], 3.0f);
}

TEST(OptimizerHyperLayout, AdaptiveValuesAreInTheirNamedEntries) {
  Adaptive ad(nonConst(0.5f), nonConst(0.125f), nonConst(0.75f), nonConst(0.25f), nonConst(0.0625f),
              nonConst(1.0f), AdaptiveMode::RMSProp, WeightDecayMode::L2Regularization,
              DataType::FLOAT, DataType::FLOAT, DataType::FLOAT, DataType::FLOAT);
  const std::vector<float> hv = ir::hyperValues(ad, "W", meanPost(), 1.0f);
  const HyperView<AdaptiveHyper> h{hv};
  EXPECT_EQ(h[AdaptiveHyper::GradScale], 1.0f / 8);
  EXPECT_EQ(h[AdaptiveHyper::ClipFactor], 1.0f);
  EXPECT_EQ(h[AdaptiveHyper::LearningRate], 0.5f);
  EXPECT_EQ(h[AdaptiveHyper::WeightDecay], 0.125f);
  EXPECT_EQ(h[AdaptiveHyper::Alpha], 0.75f);
  EXPECT_EQ(h[AdaptiveHyper::Momentum], 0.25f);
  EXPECT_EQ(h[AdaptiveHyper::Eps], 0.0625f);
}

// An update kernel built for a hyper tensor of the wrong size.
std::string kernelError(const std::string& type, int64_t hyperElements,
                        std::vector<TensorInfo> state, const Attributes& attrs = {}) {
  device::KernelSpec spec;
  spec.type = type;
  spec.domain = "ai.xtrain";
  spec.description = type;
  spec.attrs = attrs;
  const TensorInfo w(DataType::FLOAT, {3});
  spec.inputs = {w, w, TensorInfo(DataType::FLOAT, {hyperElements})};
  for (auto& s : state) spec.inputs.push_back(std::move(s));
  return errorOf([&] { device::KernelRegistry::instance().create(spec); });
}

TEST(OptimizerHyperLayout, KernelsRefuseAnotherFamilysHyperTensor) {
  const TensorInfo w(DataType::FLOAT, {3});
  EXPECT_CONTAINS(kernelError("SGDUpdate", 8, {}), "expected FLOAT[7] = {gradScale, clip, lr");
  Attributes adam;
  adam.set("mode", std::string("Adam"));
  adam.set("weightDecayMode", std::string("decay"));
  EXPECT_CONTAINS(kernelError("AdamUpdate", 7, {w, w, TensorInfo(DataType::FLOAT, {})}, adam),
                  "expected FLOAT[8] = {gradScale, clip, lr, wd, beta1");
  EXPECT_CONTAINS(kernelError("LambApply", 7, {TensorInfo(DataType::FLOAT, {2})}),
                  "expected FLOAT[8]");
  Attributes adaptive;
  adaptive.set("mode", std::string("AdaGrad"));
  adaptive.set("weightDecayMode", std::string("l2"));
  EXPECT_CONTAINS(kernelError("AdaptiveUpdate", 8, {w}, adaptive),
                  "expected FLOAT[7] = {gradScale, clip, lr, wd, alpha");
}

}  // namespace
}  // namespace xtrain::testing
