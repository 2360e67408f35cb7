// Training numerics of issue 7 beyond the optimizer rules: automatic loss scaling (skip and back
// off on inf/nan, grow after finite steps), FLOAT16 models end to end (gradients underflow without
// loss scaling and train with it), FLOAT16 optimizer state, and stochastic rounding of FLOAT16
// weights.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "testing/error_testing.hpp"
#include "testing/reference_data.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

std::vector<uint16_t> toHalf(const std::vector<float>& v) {
  std::vector<uint16_t> h;
  for (float x : v) h.push_back(floatToHalf(x));
  return h;
}

struct Model {
  std::string proto;
  TensorId x, y, loss;
  int64_t rows = 0;
};

// pred = x W + b, loss = mean((pred - y)^2): the linear model of tests/data/optimizer_reference, in
// `type` (FLOAT or FLOAT16: weights, inputs and loss).
Model linearModel(const ReferenceData& ref, int64_t rows, DataType type) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  Model m;
  m.rows = rows;
  m.x = b->addInputTensor(TensorInfo(type, {rows, 4}), "x");
  m.y = b->addInputTensor(TensorInfo(type, {rows, 3}), "y");
  auto init = [&](const std::string& name) {
    const HostTensor& t = ref.at(name);
    std::vector<float> v(t.span<float>().begin(), t.span<float>().end());
    return type == DataType::FLOAT ? ConstVoidData::fromVector<float>(t.shape(), v)
                                   : ConstVoidData::fromVector<uint16_t>(t.shape(), toHalf(v));
  };
  auto w = b->addInitializedInputTensor(init("W"), "W");
  auto bias = b->addInitializedInputTensor(init("b"), "b");
  auto d = onnx.sub({onnx.add({onnx.matmul({m.x, w}), bias}), m.y});
  m.loss = b->aiGraphcoreOpset1().identityloss({onnx.mul({d, d})}, ReductionType::Mean);
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

const std::string kReference = std::string(XTRAIN_TEST_DATA_DIR) + "/optimizer_reference/adam.txt";

SessionOptions replicated(int64_t replicas) {
  SessionOptions o;
  o.enableReplicatedGraphs = replicas > 1;
  o.replicatedGraphCount = replicas;
  o.accumulationAndReplicationReductionType = ReductionType::Mean;
  return o;
}

std::unique_ptr<TrainingSession> makeSession(const Model& m, const Optimizer& opt,
                                             const SessionOptions& o) {
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(o.getLocalReplicationFactor())}});
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, opt, device, {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  return s;
}

// One step on the reference's batch k (FLOAT inputs), split over the session's replicas.
void stepFloat(TrainingSession& s, const Model& m, const ReferenceData& ref, int k,
               float poison = 0.0f) {
  HostTensor x = ref.at("x/step" + std::to_string(k));
  HostTensor y = ref.at("y/step" + std::to_string(k));
  if (poison != 0.0f) x.data<float>()[x.nelms() - 1] = poison;  // the last replica's last row
  const int64_t R = s.getSessionOptions().getLocalReplicationFactor();
  NDArrayWrapper<float> xa(x.data<float>(), {R, m.rows, 4});
  NDArrayWrapper<float> ya(y.data<float>(), {R, m.rows, 3});
  StepIO io({{m.x, xa}, {m.y, ya}}, {});
  s.run(io);
}

// One step on the reference's batch k converted to FLOAT16, fed as x `xShape` and y `yShape`.
void stepHalf(TrainingSession& s, const Model& m, const ReferenceData& ref, int k,
              const Shape& xShape, const Shape& yShape) {
  std::vector<uint16_t> x, y;
  for (float v : ref.at("x/step" + std::to_string(k)).span<float>()) x.push_back(floatToHalf(v));
  for (float v : ref.at("y/step" + std::to_string(k)).span<float>()) y.push_back(floatToHalf(v));
  NDArrayWrapper<uint16_t> xa(x.data(), xShape);
  NDArrayWrapper<uint16_t> ya(y.data(), yShape);
  StepIO io({{m.x, xa}, {m.y, ya}}, {});
  s.run(io);
}

Adam adamWithScaling(float lossScaling) {
  return Adam({{"defaultLearningRate", {0.02f, true}}, {"lossScaling", {lossScaling, false}}},
              AdamMode::Adam, WeightDecayMode::Decay);
}

// An inf in one replica's batch skips exactly that step on every replica and halves the scale: the
// weights and state equal those of a run that never saw that batch (power-of-two scales are exact).
TEST(AutomaticLossScaling, AnInjectedInfSkipsExactlyThatStep) {
  const ReferenceData ref = loadReferenceData(kReference);
  const Model m = linearModel(ref, 4, DataType::FLOAT);
  SessionOptions o = replicated(2);
  o.automaticLossScalingSettings.enabled = true;
  o.automaticLossScalingSettings.method = AutomaticLossScalingMethod::GradScaler;
  auto poisoned = makeSession(m, adamWithScaling(1024.0f), o);
  auto clean = makeSession(m, adamWithScaling(1024.0f), o);
  for (int k = 1; k <= 6; ++k) {
    stepFloat(*poisoned, m, ref, k, k == 3 ? std::numeric_limits<float>::infinity() : 0.0f);
    if (k != 3) stepFloat(*clean, m, ref, k);
  }
  EXPECT_EQ(poisoned->getSkippedSteps(), 1);
  EXPECT_EQ(poisoned->getLossScaling(), 512.0f);
  EXPECT_EQ(clean->getSkippedSteps(), 0);
  EXPECT_EQ(clean->getLossScaling(), 1024.0f);
  const std::vector<TensorId> ids = {"W", "b", "Accl1___W", "Accl2___W", "Step___W"};
  EXPECT_EQ(readTensors(*poisoned, ids), readTensors(*clean, ids));
  EXPECT_EQ(readTensors(*poisoned, {"Step___W"}), std::vector<float>{5.0f});
  // A nan skips too.
  stepFloat(*poisoned, m, ref, 7, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(poisoned->getSkippedSteps(), 2);
  EXPECT_EQ(poisoned->getLossScaling(), 256.0f);
}

// A checkpoint holds the scale and the run of finite steps: a resumed job skips, grows and trains
// as an uninterrupted one.
using AutomaticLossScalingCheckpoint = ScratchDirTest;

TEST_F(AutomaticLossScalingCheckpoint, ResumeFromACheckpointIsExact) {
  const ReferenceData ref = loadReferenceData(kReference);
  const Model m = linearModel(ref, 8, DataType::FLOAT);
  SessionOptions o;
  o.automaticLossScalingSettings.enabled = true;
  o.automaticLossScalingSettings.method = AutomaticLossScalingMethod::GradScaler;
  o.automaticLossScalingSettings.growthInterval = 3;
  const float inf = std::numeric_limits<float>::infinity();
  auto poison = [&](int k) { return k == 2 ? inf : 0.0f; };
  auto straight = makeSession(m, adamWithScaling(64.0f), o);
  for (int k = 1; k <= 8; ++k) stepFloat(*straight, m, ref, k, poison(k));
  const std::string dir = path("ckpt");
  auto first = makeSession(m, adamWithScaling(64.0f), o);
  for (int k = 1; k <= 4; ++k) stepFloat(*first, m, ref, k, poison(k));
  first->saveCheckpoint(dir);
  auto second = makeSession(m, adamWithScaling(64.0f), o);
  second->loadCheckpoint(dir);
  EXPECT_EQ(second->getLossScaling(), first->getLossScaling());
  for (int k = 5; k <= 8; ++k) stepFloat(*second, m, ref, k, poison(k));
  EXPECT_EQ(second->getLossScaling(), straight->getLossScaling());
  EXPECT_EQ(second->getSkippedSteps(), 1);
  const std::vector<TensorId> ids = {"W", "b", "Accl1___W", "Accl2___b", "Step___W"};
  EXPECT_EQ(readTensors(*second, ids), readTensors(*straight, ids));
}

TEST(AutomaticLossScaling, TheScaleGrowsAfterARunOfFiniteSteps) {
  const ReferenceData ref = loadReferenceData(kReference);
  const Model m = linearModel(ref, 8, DataType::FLOAT);
  SessionOptions o;
  o.automaticLossScalingSettings.enabled = true;
  o.automaticLossScalingSettings.method = AutomaticLossScalingMethod::GradScaler;
  o.automaticLossScalingSettings.growthInterval = 3;
  auto s = makeSession(m, adamWithScaling(8.0f), o);
  for (int k = 1; k <= 7; ++k) stepFloat(*s, m, ref, k);
  EXPECT_EQ(s->getLossScaling(), 32.0f);  // grew after steps 3 and 6
  // Without automatic loss scaling the factor stays the optimizer's.
  auto fixed = makeSession(m, adamWithScaling(8.0f), SessionOptions());
  for (int k = 1; k <= 4; ++k) stepFloat(*fixed, m, ref, k);
  EXPECT_EQ(fixed->getLossScaling(), 8.0f);
}

// A new optimizer (a learning-rate schedule) keeps the session's scale and its run of finite steps,
// unless it gives another lossScaling value.
TEST(AutomaticLossScaling, UpdateOptimizerFromHostKeepsTheScale) {
  const ReferenceData ref = loadReferenceData(kReference);
  const Model m = linearModel(ref, 8, DataType::FLOAT);
  SessionOptions o;
  o.automaticLossScalingSettings.enabled = true;
  o.automaticLossScalingSettings.method = AutomaticLossScalingMethod::GradScaler;
  o.automaticLossScalingSettings.growthInterval = 2;
  auto opt = [](float lr, float ls) {
    return Adam({{"defaultLearningRate", {lr, false}}, {"lossScaling", {ls, false}}},
                AdamMode::Adam, WeightDecayMode::Decay);
  };
  auto s = makeSession(m, opt(0.02f, 8.0f), o);
  for (int k = 1; k <= 4; ++k) {
    const Adam next = opt(0.02f / static_cast<float>(k), 8.0f);
    s->updateOptimizerFromHost(&next);
    stepFloat(*s, m, ref, k);
  }
  EXPECT_EQ(s->getLossScaling(), 32.0f);  // grew after steps 2 and 4, whatever the learning rate
  const Adam restart = opt(0.01f, 4.0f);
  s->updateOptimizerFromHost(&restart);
  EXPECT_EQ(s->getLossScaling(), 4.0f);
}

TEST(AutomaticLossScaling, BadSettingsAreRefused) {
  const ReferenceData ref = loadReferenceData(kReference);
  const Model m = linearModel(ref, 8, DataType::FLOAT);
  SessionOptions o;
  o.automaticLossScalingSettings.enabled = true;
  o.automaticLossScalingSettings.method = AutomaticLossScalingMethod::GradScaler;
  const Adam constant({{"lossScaling", {128.0f, true}}}, AdamMode::Adam);
  EXPECT_CONTAINS(errorOf([&] { makeSession(m, constant, o); }), "lossScaling (128) is constant");
  // A FLOAT16 loss cannot hold a scale above 65504.
  const Model half = linearModel(ref, 8, DataType::FLOAT16);
  EXPECT_CONTAINS(errorOf([&] { makeSession(half, adamWithScaling(65536.0f), SessionOptions()); }),
                  "largest value is 65504");
  o.automaticLossScalingSettings.backoffFactor = 2.0f;
  EXPECT_CONTAINS(errorOf([&] { makeSession(m, adamWithScaling(8.0f), o); }),
                  "SessionOptions.automaticLossScalingSettings.backoffFactor = 2 is out of range: "
                  "expected a factor in (0, 1)");
}

// loss = sum(W * x) * c with x = c = 1e-4: the gradient 1e-8 is below FLOAT16's smallest subnormal.
struct TinyGradientModel {
  std::string proto;
  TensorId x, loss;
};

TinyGradientModel tinyGradientModel() {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  TinyGradientModel m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT16, {16}), "x");
  auto w = b->addInitializedInputTensor(
      ConstVoidData::fromVector<uint16_t>({16}, std::vector<uint16_t>(16, floatToHalf(0.0f))), "W");
  auto c = onnx.constant(ConstVoidData::fromVector<uint16_t>({}, {floatToHalf(1e-4f)}));
  auto sum = onnx.reducesum({onnx.mul({w, m.x})}, {}, 0);
  m.loss = b->aiGraphcoreOpset1().identityloss({onnx.mul({sum, c})}, ReductionType::Sum);
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

std::vector<float> trainTiny(const TinyGradientModel& m, const SGD& sgd, const SessionOptions& o,
                             int steps) {
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, sgd, device, {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  std::vector<uint16_t> x(16, floatToHalf(1e-4f));
  for (int k = 0; k < steps; ++k) {
    NDArrayWrapper<uint16_t> xa(x.data(), {16});
    StepIO io({{m.x, xa}}, {});
    s->run(io);
  }
  return readTensors(*s, {"W"});
}

TEST(Float16, GradientsThatUnderflowTrainWithAutomaticLossScaling) {
  const TinyGradientModel m = tinyGradientModel();
  const float lr = 1000.0f;
  const SGD unscaled({{"defaultLearningRate", {lr, true}}});
  for (float w : trainTiny(m, unscaled, SessionOptions(), 5)) EXPECT_EQ(w, 0.0f);

  SessionOptions o;
  o.automaticLossScalingSettings.enabled = true;
  o.automaticLossScalingSettings.method = AutomaticLossScalingMethod::GradScaler;
  const SGD scaled({{"defaultLearningRate", {lr, true}}, {"lossScaling", {32768.0f, false}}});
  // Each step moves W by lr * 1e-8 (within FLOAT16's rounding of the scaled gradient).
  for (float w : trainTiny(m, scaled, o, 5))
    EXPECT_NEAR(w, -5 * lr * 1e-8f, 5 * lr * 1e-8f * 0.02f);
}

// A FLOAT16 linear model trains like the FLOAT32 reference, within FLOAT16's precision, with FLOAT
// moments and with FLOAT16 moments, on one replica and on two (Mean).
TEST(Float16, ALinearModelTrainsLikeTheFloat32Reference) {
  const ReferenceData ref = loadReferenceData(kReference);
  for (int64_t replicas : {1, 2}) {
    const Model m = linearModel(ref, 8 / replicas, DataType::FLOAT16);
    for (DataType state : {DataType::FLOAT, DataType::FLOAT16}) {
      const Adam adam({{"defaultLearningRate", {0.02f, true}},
                       {"defaultBeta2", {0.99f, true}},
                       {"defaultEps", {1e-3f, true}}},
                      AdamMode::Adam, WeightDecayMode::L2Regularization, DataType::FLOAT, state,
                      state);
      auto s = makeSession(m, adam, replicated(replicas));
      EXPECT_EQ(s->getInfo("Accl1___W").dataType(), state);
      for (int k = 1; k <= 10; ++k) {
        stepHalf(*s, m, ref, k, {replicas, 8 / replicas, 4}, {replicas, 8 / replicas, 3});
      }
      const auto got = readTensors(*s, {"W"});
      const HostTensor& want = ref.at("W/step10");
      for (int64_t i = 0; i < want.nelms(); ++i) {
        EXPECT_NEAR(got[static_cast<size_t>(i)], want.data<float>()[i], 5e-3)
            << "W element " << i << ", " << replicas << " replicas, state " << dataTypeName(state);
      }
    }
  }
}

// FLOAT16 weights with FLOAT16 or FLOAT state, sharded over 4 replicas, train exactly as unsharded
// ones (round-to-nearest: the same arithmetic per element; Lamb's norms summed over shards agree
// closely).
TEST(Float16, ShardedWeightsAndStateTrainLikeWholeOnes) {
  const ReferenceData ref = loadReferenceData(kReference);
  const Model m = linearModel(ref, 2, DataType::FLOAT16);
  for (AdamMode mode : {AdamMode::Adam, AdamMode::Lamb}) {
    for (DataType state : {DataType::FLOAT, DataType::FLOAT16}) {
      const Adam adam({{"defaultLearningRate", {0.02f, true}}, {"defaultEps", {1e-3f, true}}}, mode,
                      WeightDecayMode::Decay, DataType::FLOAT, state, state);
      std::vector<std::vector<float>> results;
      for (bool sharded : {false, true}) {
        SessionOptions o = replicated(4);
        for (auto* settings :
             {&o.weightTensorLocationSettings, &o.optimizerStateTensorLocationSettings}) {
          settings->location.replicatedTensorSharding =
              sharded ? ReplicatedTensorSharding::On : ReplicatedTensorSharding::Off;
          settings->minElementsForReplicatedTensorSharding = 1;
        }
        auto s = makeSession(m, adam, o);
        for (int k = 1; k <= 6; ++k) {
          stepHalf(*s, m, ref, k, {4, 2, 4}, {4, 2, 3});
        }
        results.push_back(readTensors(*s, {"W", "b", "Accl1___W", "Accl2___b"}));
      }
      const std::string what = std::string(toString(mode)) + " state " + dataTypeName(state);
      if (mode == AdamMode::Adam) {
        EXPECT_EQ(results[0], results[1]) << what;
      } else {
        ASSERT_EQ(results[0].size(), results[1].size());
        for (size_t i = 0; i < results[0].size(); ++i) {
          EXPECT_NEAR(results[0][i], results[1][i], 2e-3 * (1 + std::fabs(results[0][i]))) << what;
        }
      }
    }
  }
}

// A FLOAT16 MLP (MatMul, Add, Relu, Sigmoid, softmax cross-entropy) trains end to end: its loss
// falls.
TEST(Float16, AnMlpTrainsEndToEnd) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  const int64_t batch = 16, in = 8, hidden = 16, out = 4;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  auto weight = [&](Shape shape, float scale) {
    std::vector<uint16_t> v(static_cast<size_t>(shapeNelms(shape)));
    for (auto& e : v) e = floatToHalf(normal(rng) * scale);
    return ConstVoidData::fromVector<uint16_t>(shape, v);
  };
  auto x = b->addInputTensor(TensorInfo(DataType::FLOAT16, {batch, in}), "x");
  auto labels = b->addInputTensor(TensorInfo(DataType::INT32, {batch}), "labels");
  auto w1 = b->addInitializedInputTensor(weight({in, hidden}, 0.3f), "W1");
  auto b1 = b->addInitializedInputTensor(weight({hidden}, 0.0f), "b1");
  auto w2 = b->addInitializedInputTensor(weight({hidden, out}, 0.3f), "W2");
  auto h = onnx.sigmoid({onnx.relu({onnx.add({onnx.matmul({x, w1}), b1})})});
  auto logits = onnx.matmul({h, w2});
  auto loss = onnx.softmaxcrossentropyloss({logits, labels}, 1, std::nullopt, "mean")[0];
  b->addOutputTensor(loss);
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  SessionOptions o;
  o.automaticLossScalingSettings.enabled = true;
  o.automaticLossScalingSettings.method = AutomaticLossScalingMethod::GradScaler;
  const Adam adam({{"defaultLearningRate", {0.01f, true}}, {"lossScaling", {1024.0f, false}}},
                  AdamMode::Adam, WeightDecayMode::Decay);
  auto s = TrainingSession::createFromOnnxModel(b->getModelProto(),
                                                DataFlow(1, {{loss, AnchorReturnType("ALL")}}),
                                                loss, adam, device, {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  // A fixed batch whose label is the argmax of the first 4 inputs: learnable.
  std::vector<uint16_t> xs;
  std::vector<int32_t> ys;
  for (int64_t i = 0; i < batch; ++i) {
    int32_t best = 0;
    std::vector<float> row(in);
    for (auto& v : row) v = normal(rng);
    for (int32_t k = 1; k < out; ++k) best = row[k] > row[best] ? k : best;
    for (float v : row) xs.push_back(floatToHalf(v));
    ys.push_back(best);
  }
  std::vector<float> losses;
  for (int k = 0; k < 40; ++k) {
    uint16_t l = 0;
    NDArrayWrapper<uint16_t> xa(xs.data(), {batch, in});
    NDArrayWrapper<int32_t> ya(ys.data(), {batch});
    NDArrayWrapper<uint16_t> la(&l, Shape{});
    StepIO io({{x, xa}, {labels, ya}}, {{loss, la}});
    s->run(io);
    losses.push_back(halfToFloat(l));
  }
  EXPECT_TRUE(std::isfinite(losses.back()));
  EXPECT_LT(losses.back(), 0.75f * losses.front())
      << "first " << losses.front() << ", last " << losses.back();
  EXPECT_EQ(s->getSkippedSteps(), 0);
}

// A FLOAT16 CNN (Conv, BatchNormalization in training, Relu, MaxPool, AveragePool, Flatten, MatMul)
// trains end to end on two replicas: every op and its gradient runs on FLOAT16 tensors.
TEST(Float16, ACnnTrainsEndToEnd) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset15();
  const int64_t batch = 8, channels = 4, classes = 3;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  auto halfs = [&](Shape shape, float scale, float offset = 0.0f) {
    std::vector<uint16_t> v(static_cast<size_t>(shapeNelms(shape)));
    for (auto& e : v) e = floatToHalf(offset + normal(rng) * scale);
    return ConstVoidData::fromVector<uint16_t>(shape, v);
  };
  auto x = b->addInputTensor(TensorInfo(DataType::FLOAT16, {batch, 1, 8, 8}), "x");
  auto labels = b->addInputTensor(TensorInfo(DataType::INT32, {batch}), "labels");
  auto wc = b->addInitializedInputTensor(halfs({channels, 1, 3, 3}, 0.3f), "Wc");
  auto scale = b->addInitializedInputTensor(halfs({channels}, 0.0f, 1.0f), "scale");
  auto bias = b->addInitializedInputTensor(halfs({channels}, 0.0f), "bias");
  auto mean = b->addInitializedInputTensor(halfs({channels}, 0.0f), "mean");
  auto var = b->addInitializedInputTensor(halfs({channels}, 0.0f, 1.0f), "var");
  auto w = b->addInitializedInputTensor(halfs({channels * 2 * 2, classes}, 0.3f), "W");
  auto c = onnx.conv({x, wc}, {1, 1}, 1, {3, 3}, {1, 1, 1, 1}, {1, 1});
  auto bn = onnx.batchnormalization({c, scale, bias, mean, var}, 3)[0];
  auto p = onnx.maxpool({onnx.relu({bn})}, 1, {2, 2}, 0, {}, {}, 0, {2, 2})[0];
  auto q = onnx.averagepool({p}, {2, 2}, 0, 0, {}, {2, 2});
  auto logits = onnx.matmul({onnx.flatten({q}, 1), w});
  auto loss = onnx.softmaxcrossentropyloss({logits, labels}, 1, std::nullopt, "mean")[0];
  b->addOutputTensor(loss);
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", "2"}});
  SessionOptions o = replicated(2);
  o.automaticLossScalingSettings.enabled = true;
  o.automaticLossScalingSettings.method = AutomaticLossScalingMethod::GradScaler;
  const Adam adam({{"defaultLearningRate", {0.02f, true}}, {"lossScaling", {256.0f, false}}},
                  AdamMode::Adam, WeightDecayMode::Decay);
  auto s = TrainingSession::createFromOnnxModel(b->getModelProto(),
                                                DataFlow(1, {{loss, AnchorReturnType("ALL")}}),
                                                loss, adam, device, {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  // Class k: a bright square in quadrant k of the image.
  std::vector<uint16_t> xs;
  std::vector<int32_t> ys;
  for (int64_t i = 0; i < 2 * batch; ++i) {
    const int32_t k = static_cast<int32_t>(i % classes);
    ys.push_back(k);
    for (int64_t r = 0; r < 8; ++r) {
      for (int64_t col = 0; col < 8; ++col) {
        const bool on = (r / 4) == (k / 2) && (col / 4) == (k % 2);
        xs.push_back(floatToHalf((on ? 1.0f : 0.0f) + 0.1f * normal(rng)));
      }
    }
  }
  std::vector<float> losses;
  for (int k = 0; k < 30; ++k) {
    std::vector<uint16_t> l(2);
    NDArrayWrapper<uint16_t> xa(xs.data(), {2, batch, 1, 8, 8});
    NDArrayWrapper<int32_t> ya(ys.data(), {2, batch});
    NDArrayWrapper<uint16_t> la(l.data(), {2});
    StepIO io({{x, xa}, {labels, ya}}, {{loss, la}});
    s->run(io);
    losses.push_back(0.5f * (halfToFloat(l[0]) + halfToFloat(l[1])));
  }
  EXPECT_TRUE(std::isfinite(losses.back()));
  EXPECT_LT(losses.back(), 0.75f * losses.front())
      << "first " << losses.front() << ", last " << losses.back();
}

// Gradient accumulation into FLOAT16 and into FLOAT accumulators (af 2, micro-batches of 4) tracks
// the FLOAT32 reference of batches of 8.
TEST(Float16, AccumulatorsOfEitherTypeTrackTheReference) {
  const ReferenceData ref = loadReferenceData(kReference);
  const Model m = linearModel(ref, 4, DataType::FLOAT16);
  for (DataType accum : {DataType::FLOAT, DataType::FLOAT16}) {
    const Adam adam({{"defaultLearningRate", {0.02f, true}},
                     {"defaultBeta2", {0.99f, true}},
                     {"defaultEps", {1e-3f, true}}},
                    AdamMode::Adam, WeightDecayMode::L2Regularization, accum, DataType::FLOAT,
                    DataType::FLOAT);
    SessionOptions o;
    o.enableGradientAccumulation = true;
    o.accumulationFactor = 2;
    o.accumulationAndReplicationReductionType = ReductionType::Mean;
    auto s = makeSession(m, adam, o);
    EXPECT_EQ(s->getInfo("Accum___W").dataType(), accum);
    for (int k = 1; k <= 10; ++k) {
      stepHalf(*s, m, ref, k, {2, 4, 4}, {2, 4, 3});
    }
    const auto got = readTensors(*s, {"W", "Accum___W"});
    const HostTensor& want = ref.at("W/step10");
    for (int64_t i = 0; i < want.nelms(); ++i) {
      EXPECT_NEAR(got[static_cast<size_t>(i)], want.data<float>()[i], 5e-3)
          << "W element " << i << ", accumulator " << dataTypeName(accum);
    }
    for (size_t i = static_cast<size_t>(want.nelms()); i < got.size(); ++i) {
      EXPECT_EQ(got[i], 0.0f) << "the accumulator is cleared after each update";
    }
  }
}

// A FLOAT16 weight at 1 with updates of 1e-4 (below half its ulp, 4.9e-4): round-to-nearest never
// moves it; stochastic rounding moves it by 1e-4 per step on average, reproducibly.
TEST(StochasticRounding, SmallUpdatesAccumulateOnAverage) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  const int64_t n = 2000;
  auto x = b->addInputTensor(TensorInfo(DataType::FLOAT16, {n}), "x");
  auto w = b->addInitializedInputTensor(
      ConstVoidData::fromVector<uint16_t>({n}, std::vector<uint16_t>(n, floatToHalf(1.0f))), "W");
  auto loss = b->aiGraphcoreOpset1().identityloss({onnx.mul({w, x})}, ReductionType::Sum);
  b->addOutputTensor(loss);
  const std::string proto = b->getModelProto();
  auto train = [&](bool stochastic, uint64_t seed) {
    SessionOptions o;
    o.enableStochasticRounding = stochastic;
    auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
    const SGD sgd({{"defaultLearningRate", {1e-4f, true}}});
    auto s = TrainingSession::createFromOnnxModel(proto, DataFlow(1), loss, sgd, device, {}, o);
    s->prepareDevice();
    s->setRandomSeed(seed);
    s->weightsFromHost();
    std::vector<uint16_t> ones(static_cast<size_t>(n), floatToHalf(1.0f));
    for (int k = 0; k < 100; ++k) {
      NDArrayWrapper<uint16_t> xa(ones.data(), {n});
      StepIO io({{x, xa}}, {});
      s->run(io);
    }
    return readTensors(*s, {"W"});
  };
  for (float v : train(false, 1)) EXPECT_EQ(v, 1.0f);
  const auto sr = train(true, 1);
  const double mean = std::accumulate(sr.begin(), sr.end(), 0.0) / static_cast<double>(n);
  EXPECT_NEAR(mean, 1.0 - 100 * 1e-4, 1e-3);
  EXPECT_EQ(train(true, 1), sr);  // reproducible from the seed
  EXPECT_NE(train(true, 2), sr);
}

}  // namespace
}  // namespace xtrain::testing
