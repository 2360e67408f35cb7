// The Adam and Adaptive families in a session beyond the reference numbers
// (optimizer_reference_test): exact resume from checkpoints (moments and step counts included,
// sharded too), changing values with updateOptimizerFromHost, and what the optimizers and sessions
// refuse.
#include <gtest/gtest.h>

#include <cmath>

#include "testing/error_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"

namespace xtrain::testing {
namespace {

SessionOptions layout(int64_t replicas, bool sharded = false) {
  SessionOptions o;
  o.enableReplicatedGraphs = replicas > 1;
  o.replicatedGraphCount = replicas;
  o.accumulationAndReplicationReductionType = ReductionType::Mean;
  if (sharded) {
    for (auto* s : {&o.weightTensorLocationSettings, &o.optimizerStateTensorLocationSettings}) {
      s->location.replicatedTensorSharding = ReplicatedTensorSharding::On;
      s->minElementsForReplicatedTensorSharding = 10;
    }
  }
  return o;
}

Adam lamb(float lr = 0.01f) {
  return Adam({{"defaultLearningRate", {lr, false}}, {"defaultWeightDecay", {0.01f, true}}},
              AdamMode::Lamb, WeightDecayMode::Decay);
}

Adaptive centeredRmsProp(float lr = 0.01f) {
  return Adaptive({{"defaultLearningRate", {lr, false}}, {"defaultMomentum", {0.5f, true}}},
                  AdaptiveMode::CenteredRMSProp, WeightDecayMode::L2Regularization);
}

// `message` contains every one of `parts`.
void expectMentions(const std::string& message, const std::vector<std::string>& parts) {
  for (const auto& part : parts) EXPECT_CONTAINS(message, part);
}

const std::vector<TensorId> kWeights = {"W1", "b1", "W2", "b2"};

std::vector<TensorId> withState(const std::vector<std::string>& prefixes) {
  std::vector<TensorId> ids = kWeights;
  for (const auto& p : prefixes) {
    for (const auto& w : kWeights) ids.push_back(p + "___" + w);
  }
  return ids;
}

using OptimizerCheckpoint = ScratchDirTest;

// 6 steps straight against 3 steps, save, a new session, load, 3 more: bit-identical weights and
// state (moments, Adam's step counts, Adaptive's three accumulators), whole and sharded.
TEST_F(OptimizerCheckpoint, ResumeIsExact) {
  const MlpModel m = buildMlpModel();
  struct Case {
    std::string name;
    std::unique_ptr<Optimizer> optimizer;
    std::vector<std::string> state;
  };
  std::vector<Case> cases;
  cases.push_back({"lamb", lamb().clone(), {"Accl1", "Accl2", "Step"}});
  cases.push_back({"centered-rmsprop", centeredRmsProp().clone(), {"Accl1", "Accl2", "Accl3"}});
  for (const auto& c : cases) {
    for (bool sharded : {false, true}) {
      const std::string what = c.name + (sharded ? " sharded" : " whole");
      const auto ids = withState(c.state);
      auto straight = makeMlpSession(m, layout(4, sharded), *c.optimizer);
      trainMlpSteps(*straight, m, 4, 0, 1, 0, 6);
      const auto want = readTensors(*straight, ids);

      auto first = makeMlpSession(m, layout(4, sharded), *c.optimizer);
      trainMlpSteps(*first, m, 4, 0, 1, 0, 3);
      first->saveCheckpoint(path("c-" + c.name + std::to_string(sharded)));
      auto second = makeMlpSession(m, layout(4, sharded), *c.optimizer);
      second->loadCheckpoint(path("c-" + c.name + std::to_string(sharded)));
      trainMlpSteps(*second, m, 4, 0, 1, 3, 3);
      EXPECT_EQ(readTensors(*second, ids), want) << what;
    }
  }
  // Adam's step count is the number of updates.
  auto s = makeMlpSession(m, layout(2), lamb());
  trainMlpSteps(*s, m, 2, 0, 1, 0, 4);
  EXPECT_EQ(readTensors(*s, {"Step___W1"}), std::vector<float>{4.0f});
}

// A checkpoint of one optimizer does not load into a session of another: the missing slots are
// named.
TEST_F(OptimizerCheckpoint, AnotherOptimizerIsRefused) {
  const MlpModel m = buildMlpModel();
  auto adam = makeMlpSession(m, layout(1), lamb());
  trainMlpSteps(*adam, m, 1, 0, 1, 0, 1);
  adam->saveCheckpoint(path("adam"));
  auto sgd = makeMlpSession(m, layout(1), ConstSGD(0.1f, 0.0f, 0.9f));
  EXPECT_CONTAINS(errorOf([&] { sgd->loadCheckpoint(path("adam")); }), "velocity");
}

// The same slots under another mode mean something else: a Lamb checkpoint does not load into
// AdaMax.
TEST_F(OptimizerCheckpoint, AnotherModeIsRefused) {
  const MlpModel m = buildMlpModel();
  auto lambSession = makeMlpSession(m, layout(1), lamb());
  trainMlpSteps(*lambSession, m, 1, 0, 1, 0, 1);
  lambSession->saveCheckpoint(path("lamb"));
  auto adamax = makeMlpSession(m, layout(1),
                               Adam({{"defaultLearningRate", {0.01f, false}}}, AdamMode::AdaMax));
  expectMentions(errorOf([&] { adamax->loadCheckpoint(path("lamb")); }),
                 {"Adam(Lamb, Decay)", "Adam(AdaMax, Decay)"});
}

// ONNX with optimizer state records whose state it is: the same mode continues bit for bit, another
// mode is refused.
TEST_F(OptimizerCheckpoint, OnnxStateRecordsItsOptimizer) {
  MlpModel m = buildMlpModel();
  auto first = makeMlpSession(m, layout(1), lamb());
  trainMlpSteps(*first, m, 1, 0, 1, 0, 2);
  first->modelToHost(path("lamb.onnx"), true);
  trainMlpSteps(*first, m, 1, 0, 1, 2, 2);
  const auto ids = withState({"Accl1", "Accl2", "Step"});
  const auto want = readTensors(*first, ids);

  MlpModel saved = m;
  saved.proto = path("lamb.onnx");
  auto second = makeMlpSession(saved, layout(1), lamb());
  trainMlpSteps(*second, saved, 1, 0, 1, 2, 2);
  EXPECT_EQ(readTensors(*second, ids), want);
  expectMentions(errorOf([&] {
                   makeMlpSession(
                       saved, layout(1),
                       Adam({{"defaultLearningRate", {0.01f, false}}}, AdamMode::AdaMax));
                 }),
                 {"Adam(Lamb, Decay)", "Adam(AdaMax, Decay)", "optimizer state initializers"});
}

// Changing the learning rate between runs equals building the session with the new value: 3 steps
// at lr 0.01, then 3 at 0.004 by updateOptimizerFromHost, against 3 steps, a checkpoint, and a
// session built with 0.004 that loads it.
using OptimizerUpdate = ScratchDirTest;

TEST_F(OptimizerUpdate, ChangingTheLearningRateEqualsStartingWithIt) {
  const MlpModel m = buildMlpModel();
  for (int family = 0; family < 2; ++family) {
    auto opt = [&](float lr) -> std::unique_ptr<Optimizer> {
      return family == 0 ? lamb(lr).clone() : centeredRmsProp(lr).clone();
    };
    auto changed = makeMlpSession(m, layout(2), *opt(0.01f));
    trainMlpSteps(*changed, m, 2, 0, 1, 0, 3);
    changed->updateOptimizerFromHost(opt(0.004f).get());
    trainMlpSteps(*changed, m, 2, 0, 1, 3, 3);

    auto first = makeMlpSession(m, layout(2), *opt(0.01f));
    trainMlpSteps(*first, m, 2, 0, 1, 0, 3);
    first->saveCheckpoint(path(family == 0 ? "c0" : "c1"));
    auto second = makeMlpSession(m, layout(2), *opt(0.004f));
    second->loadCheckpoint(path(family == 0 ? "c0" : "c1"));
    trainMlpSteps(*second, m, 2, 0, 1, 3, 3);
    EXPECT_EQ(readTensors(*changed, kWeights), readTensors(*second, kWeights)) << family;

    // And the change did something: the weights differ from keeping lr 0.01.
    auto kept = makeMlpSession(m, layout(2), *opt(0.01f));
    trainMlpSteps(*kept, m, 2, 0, 1, 0, 6);
    EXPECT_NE(readTensors(*kept, kWeights), readTensors(*changed, kWeights)) << family;
  }
}

TEST_F(OptimizerUpdate, FixedPartsCannotChange) {
  const MlpModel m = buildMlpModel();
  auto s = makeMlpSession(m, layout(1), lamb());
  const Adam adamMode({{"defaultLearningRate", {0.01f, false}}}, AdamMode::Adam);
  EXPECT_CONTAINS(errorOf([&] { s->updateOptimizerFromHost(&adamMode); }), "mode");
  const Adam constantChanged(
      {{"defaultLearningRate", {0.01f, false}}, {"defaultWeightDecay", {0.02f, true}}},
      AdamMode::Lamb);
  expectMentions(errorOf([&] { s->updateOptimizerFromHost(&constantChanged); }),
                 {"weightDecay", "constant"});
  const ConstSGD sgd(0.1f);
  expectMentions(errorOf([&] { s->updateOptimizerFromHost(&sgd); }), {"Adam", "SGD"});

  auto r = makeMlpSession(
      m, layout(1), Adaptive({{"defaultLearningRate", {0.01f, false}}}, AdaptiveMode::RMSProp));
  const Adaptive withMomentum(
      {{"defaultLearningRate", {0.01f, false}}, {"defaultMomentum", {0.9f, false}}},
      AdaptiveMode::RMSProp);
  EXPECT_CONTAINS(errorOf([&] { r->updateOptimizerFromHost(&withMomentum); }), "momentum");
}

TEST(OptimizerValues, BadValuesAreRefused) {
  using M = std::map<std::string, std::pair<float, bool>>;
  expectMentions(errorOf([] {
                   Adam(M{{"defaultBeta1", {1.5f, true}}}, AdamMode::Adam);
                 }),
                 {"beta1", "1.5"});
  EXPECT_CONTAINS(errorOf([] { Adam(M{{"defaultEps", {0.0f, true}}}, AdamMode::Adam); }), "eps");
  expectMentions(errorOf([] {
                   Adam(M{{"defaultBeta1", {1.0f, true}}}, AdamMode::AdaMax);
                 }),
                 {"beta1 1", "AdaMax", "divides by zero"});
  Adam(M{{"defaultBeta1", {1.0f, true}}, {"defaultBeta2", {1.0f, true}}}, AdamMode::AdamNoBias);
  EXPECT_CONTAINS(errorOf([] {
                    Adam(M{{"defaultLearningRate", {-1.0f, true}}}, AdamMode::Adam);
                  }),
                  "learning rate");
  EXPECT_CONTAINS(errorOf([] {
                    Adam(M{{"defaultLearningRate", {0.0f, true}}}, AdamMode::Adam);
                  }),
                  "constant learning rate of 0");
  expectMentions(errorOf([] {
                   Adam(M{{"defaultMomentum", {0.9f, true}}}, AdamMode::Adam);
                 }),
                 {"unknown hyperparameter 'defaultMomentum'", "defaultBeta1"});
  EXPECT_CONTAINS(errorOf([] {
                    Adam(M{{"maxWeightNorm", {-1.0f, true}}}, AdamMode::Lamb);
                  }),
                  "maxWeightNorm");
  EXPECT_CONTAINS(errorOf([] {
                    Adaptive(M{{"defaultAlpha", {2.0f, true}}}, AdaptiveMode::RMSProp);
                  }),
                  "alpha");
  expectMentions(errorOf([] {
                   Adaptive a(M{}, AdaptiveMode::AdaGrad);
                   a.insertSpecific("W1", {{"beta1", {0.9f, true}}});
                 }),
                 {"insertSpecific('W1')", "unknown hyperparameter 'beta1'"});
  EXPECT_CONTAINS(errorOf([] {
                    Adam(M{}, AdamMode::Adam, WeightDecayMode::Decay, DataType::UNDEFINED,
                         DataType::FLOAT, DataType::FLOAT, {}, true);
                  }),
                  "scaledOptimizerState");
  EXPECT_CONTAINS(errorOf([] {
                    Adaptive(M{}, AdaptiveMode::AdaGrad, WeightDecayMode::Decay,
                             DataType::UNDEFINED, DataType::FLOAT, DataType::FLOAT, DataType::FLOAT,
                             true);
                  }),
                  "rmspropTFVariant parameter is only valid with the RMSProp");
  expectMentions(errorOf([] {
                   Adam(M{}, AdamMode::Adam, WeightDecayMode::Decay, DataType::UNDEFINED,
                        DataType::INT32, DataType::FLOAT);
                 }),
                 {"accl1Type", "INT32"});
}

TEST(ClipNorm, BadSettingsAreRefused) {
  using M = std::map<std::string, std::pair<float, bool>>;
  expectMentions(errorOf([] {
                   SGD(M{}, {ClipNormSettings::clipAllWeights(1.0f),
                             ClipNormSettings::clipWeights({"W1"}, 1.0f)});
                 }),
                 {"clipAllWeights", "only group"});
  expectMentions(errorOf([] {
                   SGD(M{}, {ClipNormSettings::clipWeights({"W1"}, 1.0f),
                             ClipNormSettings::clipWeights({"W1", "b1"}, 2.0f)});
                 }),
                 {"'W1'", "more than one clip group"});
  EXPECT_CONTAINS(errorOf([] { SGD(M{}, {ClipNormSettings::clipAllWeights(-1.0f)}); }),
                  "maximum norm -1");
  const MlpModel m = buildMlpModel();
  expectMentions(errorOf([&] {
                   makeMlpSession(m, layout(1),
                                  SGD(M{}, {ClipNormSettings::clipWeights({"W9"}, 1.0f)}));
                 }),
                 {"'W9'", "not a trained weight"});
}

// SGD without velocity dampens like PopART's: dampening 0.5 moves the weights half as far.
TEST(SgdDampening, WithoutMomentumTheStepIsDampened) {
  const MlpModel m = buildMlpModel();
  auto moved = [&](float dampening) {
    auto s = makeMlpSession(m, layout(1), ConstSGD(0.1f, 0.0f, 0.0f, dampening));
    const auto before = readTensors(*s, kWeights);
    trainMlpSteps(*s, m, 1, 0, 1, 0, 1);
    const auto after = readTensors(*s, kWeights);
    std::vector<double> d;
    for (size_t i = 0; i < before.size(); ++i) d.push_back(after[i] - before[i]);
    return d;
  };
  const auto full = moved(0.0f);
  const auto half = moved(0.5f);
  for (size_t i = 0; i < full.size(); ++i) EXPECT_NEAR(half[i], 0.5 * full[i], 1e-6) << i;
}

// The clipping factor applies: with a tiny maximum norm the weights move by at most lr · maxNorm
// per step in total (plain SGD), and clipping every weight equals clipping each alone only when
// each group's norm is below its maximum.
TEST(ClipNorm, TheGlobalNormIsBounded) {
  const MlpModel m = buildMlpModel();
  const float lr = 0.1f, maxNorm = 1e-3f;
  // PopART's positional form: the clip groups right after the loss scaling.
  auto s = makeMlpSession(m, layout(2),
                          SGD(OptimizerValue(lr, true), 0.0f, 0.0f, 0.0f, 1.0f, 1.0f,
                              {ClipNormSettings::clipAllWeights(maxNorm)}));
  const auto before = readTensors(*s, kWeights);
  trainMlpSteps(*s, m, 2, 0, 1, 0, 1);
  const auto after = readTensors(*s, kWeights);
  double moved = 0;
  for (size_t i = 0; i < before.size(); ++i)
    moved += (after[i] - before[i]) * (after[i] - before[i]);
  EXPECT_NEAR(std::sqrt(moved), lr * maxNorm, 1e-6);  // the raw gradient norm is far above maxNorm
}

}  // namespace
}  // namespace xtrain::testing
