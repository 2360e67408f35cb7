// Adaptive's rmspropTFVariant (TensorFlow's RMSProp as PopART has it: eps inside the square root,
// the mean square starting at 1) against a naive reference of those equations, on a loss whose
// gradient is known exactly: L = sum(W * c), so dL/dW = c, the step's input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "testing/error_testing.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"

namespace xtrain::testing {
namespace {

constexpr int64_t kN = 16;
constexpr float kLr = 0.05f, kAlpha = 0.9f, kEps = 0.01f, kMomentum = 0.5f;

struct LinearLoss {
  std::string proto;
  TensorId c, loss;
};

LinearLoss buildLinearLoss(const std::vector<float>& w0) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  LinearLoss m;
  const TensorId w = b->addInitializedInputTensor(ConstVoidData::fromVector<float>({kN}, w0), "W");
  m.c = b->addInputTensor(TensorInfo(DataType::FLOAT, {kN}), "c");
  m.loss = onnx.reducesum({onnx.mul({w, m.c})}, {}, 0);
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

Adaptive tfRmsProp(AdaptiveMode mode, float momentum, float wd = 0) {
  return Adaptive({{"defaultLearningRate", {kLr, false}},
                   {"defaultAlpha", {kAlpha, true}},
                   {"defaultEps", {kEps, true}},
                   {"defaultWeightDecay", {wd, true}},
                   {"defaultMomentum", {momentum, true}}},
                  mode, WeightDecayMode::Decay, DataType::UNDEFINED, DataType::FLOAT,
                  DataType::FLOAT, DataType::FLOAT, /*rmspropTFVariant=*/true);
}

// The step's gradient c: drawn from the step number.
std::vector<float> gradientOf(int step) {
  std::mt19937 rng(static_cast<unsigned>(100 + step));
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> c(kN);
  for (auto& x : c) x = u(rng);
  return c;
}

// PopART's TF-variant RMSProp (and the centered one), element by element in float.
struct Reference {
  std::vector<float> w, v1 = std::vector<float>(kN, 1.0f), v2 = std::vector<float>(kN, 0.0f),
                        v3 = std::vector<float>(kN, 0.0f);
  void step(const std::vector<float>& g, bool centered, float momentum, float wd = 0) {
    for (int64_t i = 0; i < kN; ++i) {
      v1[i] = kAlpha * v1[i] + (1 - kAlpha) * g[i] * g[i];
      float meanSquare = v1[i];
      if (centered) {
        v2[i] = kAlpha * v2[i] + (1 - kAlpha) * g[i];
        meanSquare -= v2[i] * v2[i];
      }
      const float x = g[i] / std::sqrt(meanSquare + kEps);
      if (momentum != 0) {
        // TensorFlow's momentum holds lr * x; the decay is not scaled by lr.
        v3[i] = momentum * v3[i] + kLr * x;
        w[i] = w[i] * (1 - wd) - v3[i];
      } else {
        w[i] -= kLr * (x + wd * w[i]);
      }
    }
  }
};

std::unique_ptr<TrainingSession> session(const LinearLoss& m, const Optimizer& o,
                                         const SessionOptions& options = {},
                                         std::shared_ptr<DeviceInfo> device = nullptr) {
  if (!device) device = DeviceManager::createDeviceManager().createCpuDevice();
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1, {m.loss}), m.loss, o, device,
                                                {}, options);
  s->prepareDevice();
  s->weightsFromHost();
  return s;
}

void train(TrainingSession& s, const LinearLoss& m, int steps) {
  for (int k = 0; k < steps; ++k) {
    std::vector<float> c = gradientOf(k), loss(1);
    NDArrayWrapper<float> cArray(c.data(), {kN});
    NDArrayWrapper<float> lossArray(loss.data(), Shape{});
    std::map<TensorId, IArray&> in{{m.c, cArray}}, out{{m.loss, lossArray}};
    StepIO io(in, out);
    s.run(io);
  }
}

void expectNear(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5f * std::max(1.0f, std::abs(want[i])))
        << what << "[" << i << "]";
  }
}

class RmspropTFVariant : public ::testing::TestWithParam<std::tuple<AdaptiveMode, float, float>> {};

// Mode x momentum (none; 0.5, where the learning rate moves into it) x weight decay (Decay mode).
INSTANTIATE_TEST_SUITE_P(
    Modes, RmspropTFVariant,
    ::testing::Combine(::testing::Values(AdaptiveMode::RMSProp, AdaptiveMode::CenteredRMSProp),
                       ::testing::Values(0.0f, kMomentum), ::testing::Values(0.0f, 0.02f)));

TEST_P(RmspropTFVariant, EightStepsMatchTheReference) {
  const auto [mode, momentum, wd] = GetParam();
  const bool centered = mode == AdaptiveMode::CenteredRMSProp;
  Reference ref;
  for (int64_t i = 0; i < kN; ++i) ref.w.push_back(0.1f * static_cast<float>(i) - 0.7f);
  const LinearLoss m = buildLinearLoss(ref.w);
  auto s = session(m, tfRmsProp(mode, momentum, wd));
  // Before any step the mean square is 1 (TensorFlow's start), not 0.
  expectNear(readTensors(*s, {"Accl1___W"}), std::vector<float>(kN, 1.0f), "v1 before training");
  train(*s, m, 8);
  for (int k = 0; k < 8; ++k) ref.step(gradientOf(k), centered, momentum, wd);
  expectNear(readTensors(*s, {"W"}), ref.w, "W");
  expectNear(readTensors(*s, {"Accl1___W"}), ref.v1, "v1");
  if (centered) expectNear(readTensors(*s, {"Accl2___W"}), ref.v2, "v2");
  if (momentum != 0) expectNear(readTensors(*s, {"Accl3___W"}), ref.v3, "v3");
}

TEST(RmspropTFVariantRules, OnlyTheRmspropModesHaveIt) {
  for (AdaptiveMode mode : {AdaptiveMode::AdaGrad, AdaptiveMode::AdaDelta}) {
    EXPECT_EQ(errorOf([&] { tfRmsProp(mode, 0); }),
              "The rmspropTFVariant parameter is only valid with the RMSProp and CenteredRMSProp "
              "optimizers.");
  }
}

TEST(RmspropTFVariantRules, TheVariantIsFixedWhenTheSessionIsBuilt) {
  const LinearLoss m = buildLinearLoss(std::vector<float>(kN, 0.5f));
  auto s = session(m, tfRmsProp(AdaptiveMode::RMSProp, 0));
  const Adaptive plain({{"defaultLearningRate", {kLr, false}}}, AdaptiveMode::RMSProp,
                       WeightDecayMode::Decay);
  const std::string e = errorOf([&] { s->updateOptimizerFromHost(&plain); });
  EXPECT_CONTAINS(e, "Adaptive(RMSProp TF variant, Decay)");
  EXPECT_CONTAINS(e, "Adaptive(RMSProp, Decay)");
}

// Replicated tensor sharding: the whole host view of the sharded mean square starts at 1 too, and
// two replicas (each fed the same gradient) train as one.
TEST(RmspropTFVariantRules, ShardedStateStartsAtOneAndTrainsAsUnsharded) {
  std::vector<float> w0(kN, 0.25f);
  const LinearLoss m = buildLinearLoss(w0);
  SessionOptions o;
  o.enableReplicatedGraphs = true;
  o.replicatedGraphCount = 2;
  o.accumulationAndReplicationReductionType = ReductionType::Mean;
  o.optimizerStateTensorLocationSettings.location.replicatedTensorSharding =
      ReplicatedTensorSharding::On;
  o.optimizerStateTensorLocationSettings.minElementsForReplicatedTensorSharding = 4;
  auto sharded =
      session(m, tfRmsProp(AdaptiveMode::RMSProp, 0), o,
              DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", "2"}}));
  expectNear(readTensors(*sharded, {"Accl1___W"}), std::vector<float>(kN, 1.0f), "sharded v1");
  // One step, both replicas fed the same c (a batch of 2 replicas x 1).
  std::vector<float> c = gradientOf(0), twice(c), loss(2);
  twice.insert(twice.end(), c.begin(), c.end());
  NDArrayWrapper<float> cArray(twice.data(), {2, kN});
  NDArrayWrapper<float> lossArray(loss.data(), {2});
  std::map<TensorId, IArray&> in{{m.c, cArray}}, out{{m.loss, lossArray}};
  StepIO io(in, out);
  sharded->run(io);
  Reference ref;
  ref.w = w0;
  ref.step(c, false, 0);
  expectNear(readTensors(*sharded, {"W"}), ref.w, "W");
  expectNear(readTensors(*sharded, {"Accl1___W"}), ref.v1, "sharded v1 after a step");
}

}  // namespace
}  // namespace xtrain::testing
