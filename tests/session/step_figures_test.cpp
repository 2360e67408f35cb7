// What a training session tells about its steps (`xtrain --metrics` writes them): the global
// gradient norm that clipping computed (getGlobalGradientNorms) and the time of run() and of the
// gradient reduction within it (getStepTimes).
#include <gtest/gtest.h>

#include <cmath>

#include "testing/training_testing.hpp"

namespace xtrain::testing {
namespace {

const std::vector<TensorId> kWeights = {"W1", "b1", "W2", "b2"};

SessionOptions twoReplicas() {
  SessionOptions o;
  o.enableReplicatedGraphs = true;
  o.replicatedGraphCount = 2;
  o.accumulationAndReplicationReductionType = ReductionType::Mean;
  return o;
}

SGD clippingSgd(float lr, float maxNorm) {
  return SGD(OptimizerValue(lr, true), 0.0f, 0.0f, 0.0f, 1.0f, 1.0f,
             {ClipNormSettings::clipAllWeights(maxNorm)});
}

// Plain SGD that does not clip (a maximum far above the norm) moves the weights by lr times the
// reduced gradient: the norm of the move over lr is the global gradient norm the session reports.
TEST(GlobalGradientNorm, IsTheNormOfTheReducedGradients) {
  const MlpModel m = buildMlpModel();
  const float lr = 0.1f;
  auto s = makeMlpSession(m, twoReplicas(), clippingSgd(lr, 1e6f));
  EXPECT_TRUE(s->getGlobalGradientNorms().empty());  // no update yet
  const auto before = readTensors(*s, kWeights);
  trainMlpSteps(*s, m, 2, 0, 1, 0, 1);
  const auto after = readTensors(*s, kWeights);
  double moved = 0;
  for (size_t i = 0; i < before.size(); ++i)
    moved += (after[i] - before[i]) * (after[i] - before[i]);
  const std::vector<float> norms = s->getGlobalGradientNorms();
  ASSERT_EQ(norms.size(), 1u);
  EXPECT_GT(norms[0], 0.0f);
  EXPECT_NEAR(norms[0], std::sqrt(moved) / lr, 1e-4 * norms[0]);
}

// The norm is the one before clipping: a tiny maximum clips the step but not the reported norm.
TEST(GlobalGradientNorm, IsReportedBeforeClipping) {
  const MlpModel m = buildMlpModel();
  auto loose = makeMlpSession(m, twoReplicas(), clippingSgd(0.1f, 1e6f));
  auto tight = makeMlpSession(m, twoReplicas(), clippingSgd(0.1f, 1e-3f));
  trainMlpSteps(*loose, m, 2, 0, 1, 0, 1);
  trainMlpSteps(*tight, m, 2, 0, 1, 0, 1);
  ASSERT_EQ(tight->getGlobalGradientNorms().size(), 1u);
  EXPECT_FLOAT_EQ(tight->getGlobalGradientNorms()[0], loose->getGlobalGradientNorms()[0]);
  EXPECT_GT(tight->getGlobalGradientNorms()[0], 1e-3f);
}

TEST(GlobalGradientNorm, IsEmptyWithoutClipping) {
  const MlpModel m = buildMlpModel();
  auto s = makeMlpSession(m, twoReplicas(), ConstSGD(0.1f));
  trainMlpSteps(*s, m, 2, 0, 1, 0, 1);
  EXPECT_TRUE(s->getGlobalGradientNorms().empty());
}

// The counters add up over the steps, and the reduction is a part of run().
TEST(StepTimes, CountTheStepsAndTheReductionWithinThem) {
  const MlpModel m = buildMlpModel();
  auto s = makeMlpSession(m, twoReplicas(), ConstSGD(0.1f));
  const TrainingSession::StepTimes none = s->getStepTimes();
  EXPECT_EQ(none.steps, 0);
  EXPECT_EQ(none.runSeconds, 0.0);
  EXPECT_EQ(none.reductionSeconds, 0.0);
  trainMlpSteps(*s, m, 2, 0, 1, 0, 1);
  const TrainingSession::StepTimes one = s->getStepTimes();
  trainMlpSteps(*s, m, 2, 0, 1, 1, 2);
  const TrainingSession::StepTimes three = s->getStepTimes();
  EXPECT_EQ(one.steps, 1);
  EXPECT_EQ(three.steps, 3);
  EXPECT_GT(one.runSeconds, 0.0);
  EXPECT_GT(three.runSeconds, one.runSeconds);
  EXPECT_GT(one.reductionSeconds, 0.0);
  EXPECT_LE(one.reductionSeconds, one.runSeconds);
  EXPECT_GE(three.reductionSeconds, one.reductionSeconds);
  EXPECT_LE(three.reductionSeconds, three.runSeconds);
}

}  // namespace
}  // namespace xtrain::testing
