// Automatic loss scaling with PopART's histogram method (docs/optimizers.md section 6.2): the loss
// scale sequence of a model whose tracked gradients we choose, update periods 1 and 2, statistics
// summed over micro-batches and replicas, FLOAT16's clip, weights equal to a run without it,
// anchors (finalLossScale, lossScaleUpdateFactor, Accum___autoLossScaleStats), checkpoints,
// updateOptimizerFromHost, and PopART's errors.
#include <gtest/gtest.h>

#include "testing/error_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

constexpr int64_t kN = 4;

// PopART's tests compare the end of its messages.
bool endsWith(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}
#define EXPECT_ENDS_WITH(text, end) EXPECT_PRED2(endsWith, text, end)

struct Model {
  std::string proto;
  TensorId x, w, y, loss;
};

// loss = ReduceSum(x * W), x and W [4] of `type`. The only tracked gradient is dW = ls * x (the
// ReduceSum makes the loss: its gradient reads the loss scale, which PopART does not track), so
// the histogram counts the elements of ls * x at or above the bin edge.
Model mulModel(DataType type = DataType::FLOAT16) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  Model m;
  m.x = b->addInputTensor(TensorInfo(type, {kN}), "x");
  const std::vector<float> w = {0.5f, 0.25f, 1.0f, 2.0f};
  std::vector<uint16_t> half;
  for (float v : w) half.push_back(floatToHalf(v));
  m.w = b->addInitializedInputTensor(type == DataType::FLOAT16
                                         ? ConstVoidData::fromVector<uint16_t>({kN}, half)
                                         : ConstVoidData::fromVector<float>({kN}, w),
                                     "W");
  m.y = onnx.mul({m.x, m.w}, "y");
  m.loss = onnx.reducesum({m.y}, {}, 0);
  m.proto = b->getModelProto();
  return m;
}

SGD sgd(float lossScaling, float lr = 0.0f) {
  return SGD({{"defaultLearningRate", {lr, false}}, {"lossScaling", {lossScaling, false}}});
}

// Edge 0.5 x 65504 = 32752; the scale halves when more than a fifth of the elements reach it.
SessionOptions histogram(int updatePeriod = 1) {
  SessionOptions o;
  o.automaticLossScalingSettings.enabled = true;
  o.automaticLossScalingSettings.binEdgeLocation = 0.5f;
  o.automaticLossScalingSettings.thresholdUpperCountProportion = 0.2f;
  o.automaticLossScalingSettings.updatePeriod = updatePeriod;
  return o;
}

std::unique_ptr<TrainingSession> makeSession(const Model& m, const Optimizer& opt,
                                             const SessionOptions& o, const DataFlow& flow) {
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(o.getLocalReplicationFactor())}});
  auto s = TrainingSession::createFromOnnxModel(m.proto, flow, m.loss, opt, device, {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  return s;
}

// One run: `x` holds every batch's, micro-batch's and replica's x (FLOAT16 from float); returns
// the anchors as floats.
std::map<TensorId, std::vector<float>> run(TrainingSession& s, const Model& m,
                                           const std::vector<float>& x) {
  std::vector<uint16_t> half;
  for (float v : x) half.push_back(floatToHalf(v));
  NDArrayWrapper<uint16_t> xa(half.data(), {static_cast<int64_t>(x.size())});
  auto arrays = s.initAnchorArrays();
  std::map<TensorId, IArray&> inputs{{m.x, xa}}, outputs;
  for (auto& [id, a] : arrays) outputs.emplace(id, *a);
  StepIO io(inputs, outputs);
  s.run(io);
  std::map<TensorId, std::vector<float>> out;
  for (auto& [id, a] : arrays) {
    const auto* p = static_cast<const float*>(a->data());
    out[id] = std::vector<float>(p, p + a->nelms());
  }
  return out;
}

// x repeated for `batches` batches.
std::vector<float> repeat(const std::vector<float>& x, int batches) {
  std::vector<float> all;
  for (int k = 0; k < batches; ++k) all.insert(all.end(), x.begin(), x.end());
  return all;
}

const std::vector<float> kTwoLarge = {8192, 8192, 1, 1};  // at 3: all below; at 6: half above
const std::vector<float> kSmall = {1, 1, 1, 1};

TEST(HistogramLossScaling, TheScaleHalvesAboveTheThresholdAndDoublesBelowIt) {
  const Model m = mulModel();
  auto s =
      makeSession(m, sgd(3.0f), histogram(),
                  DataFlow(4, std::vector<TensorId>{"finalLossScale", "lossScaleUpdateFactor"}));
  auto out = run(*s, m, repeat(kTwoLarge, 4));
  // ls 3: dW = {24576, 24576, 3, 3}, none at 32752: x2. ls 6: dW = {49152, ...}: 2/4 > 0.2: /2.
  EXPECT_EQ(out.at("finalLossScale"), (std::vector<float>{3, 6, 3, 6}));
  EXPECT_EQ(out.at("lossScaleUpdateFactor"), (std::vector<float>{1, 2, 1, 2}));
  EXPECT_EQ(s->getLossScaling(), 3.0f);  // after the fourth batch's update
}

// updatePeriod 2: the scale changes on batches 0, 2, 4, ... from the histograms of that batch
// (PopART runs the histograms and the update on the first step of each period only).
TEST(HistogramLossScaling, UpdatePeriodTwoUsesTheFirstStepOfEachPeriod) {
  const Model m = mulModel();
  auto s =
      makeSession(m, sgd(3.0f), histogram(2), DataFlow(6, std::vector<TensorId>{"finalLossScale"}));
  std::vector<float> x = repeat(kTwoLarge, 2);        // batches 0, 1 (1: at 6, would halve)
  const std::vector<float> rest = repeat(kSmall, 4);  // batches 2..5
  x.insert(x.end(), rest.begin(), rest.end());
  // Batch 0 doubles; batch 1 is not counted; batch 2 (small) doubles; batch 4 doubles.
  EXPECT_EQ(run(*s, m, x).at("finalLossScale"), (std::vector<float>{3, 6, 6, 12, 12, 24}));
}

// Gradient accumulation (2) and 2 replicas: the statistics are summed over both before the
// decision. One element of 16 at the edge (1/16 < 0.1) doubles though one micro-batch alone
// (1/4) would halve; two (2/16 > 0.1) halve.
TEST(HistogramLossScaling, StatisticsAreSummedOverMicroBatchesAndReplicas) {
  const Model m = mulModel();
  SessionOptions o = histogram();
  o.automaticLossScalingSettings.thresholdUpperCountProportion = 0.1f;
  o.enableGradientAccumulation = true;
  o.accumulationFactor = 2;
  o.enableReplicatedGraphs = true;
  o.replicatedGraphCount = 2;
  auto s = makeSession(
      m, sgd(3.0f), o,
      DataFlow(2, std::vector<TensorId>{"finalLossScale", "Accum___autoLossScaleStats"}));
  // [batch][micro-batch][replica][4]: batch 0 one x of 16384 (micro-batch 1, replica 1); batch 1
  // (ls 6) one in (0, 0) and one in (1, 1).
  std::vector<float> x(2 * 2 * 2 * kN, 1.0f);
  x[(0 * 4 + 1 * 2 + 1) * kN] = 16384;
  x[(1 * 4 + 0 * 2 + 0) * kN] = 16384;
  x[(1 * 4 + 1 * 2 + 1) * kN + 3] = 16384;
  auto out = run(*s, m, x);
  EXPECT_EQ(out.at("finalLossScale"), (std::vector<float>{3, 3, 3, 3, 6, 6, 6, 6}));
  // Each replica's running sum {lower, upper} after each micro-batch; restarted every step.
  EXPECT_EQ(out.at("Accum___autoLossScaleStats"),
            (std::vector<float>{4, 0, 4, 0, 8, 0, 7, 1, 3, 1, 4, 0, 7, 1, 7, 1}));
  EXPECT_EQ(s->getLossScaling(), 3.0f);
}

// A FLOAT16 loss scale doubles up to 2^15 and stays there.
TEST(HistogramLossScaling, AFloat16ScaleStopsAtTwoToTheFifteen) {
  const Model m = mulModel();
  auto s = makeSession(m, sgd(8192.0f), histogram(),
                       DataFlow(4, std::vector<TensorId>{"finalLossScale"}));
  EXPECT_EQ(run(*s, m, repeat({0.001f, 0.001f, 0.001f, 0.001f}, 4)).at("finalLossScale"),
            (std::vector<float>{8192, 16384, 32768, 32768}));
}

// Scales are powers of two times the optimizer's: with gradients that are exact at every scale,
// the weights are bit for bit those of a run without automatic loss scaling.
TEST(HistogramLossScaling, WeightsEqualARunWithoutItWhenGradientsAreExact) {
  const Model m = mulModel();
  auto with = makeSession(m, sgd(3.0f, 1.0f / 1024), histogram(), DataFlow(1));
  auto without = makeSession(m, sgd(3.0f, 1.0f / 1024), SessionOptions(), DataFlow(1));
  for (int k = 0; k < 5; ++k) {
    run(*with, m, kTwoLarge);
    run(*without, m, kTwoLarge);
  }
  EXPECT_EQ(with->getLossScaling(), 6.0f);
  EXPECT_EQ(readTensors(*with, {"W"}), readTensors(*without, {"W"}));
  EXPECT_NE(readTensors(*with, {"W"}), (std::vector<float>{0.5f, 0.25f, 1.0f, 2.0f}));
}

// Tracking the gradient of y (GradientsOfUserSpecifiedTensors) counts {ls, ls, ls, ls}: always
// below the edge, so the scale doubles where tracking dW halves it.
TEST(HistogramLossScaling, UserSpecifiedTensorsAreTheOnesCounted) {
  const Model m = mulModel();
  SessionOptions o = histogram();
  o.automaticLossScalingSettings.toTrackTensors = std::vector<std::string>{m.y};
  o.automaticLossScalingSettings.gradientTensorTrackingMethod =
      GradientTensorTrackingMethod::GradientsOfUserSpecifiedTensors;
  auto s = makeSession(m, sgd(3.0f), o, DataFlow(4, std::vector<TensorId>{"finalLossScale"}));
  EXPECT_EQ(run(*s, m, repeat(kTwoLarge, 4)).at("finalLossScale"),
            (std::vector<float>{3, 6, 12, 24}));
}

// A new optimizer replaces lossScaling and keeps the factor (PopART's updateOptimizerFromHost).
TEST(HistogramLossScaling, UpdateOptimizerFromHostKeepsTheFactor) {
  const Model m = mulModel();
  auto s =
      makeSession(m, sgd(3.0f), histogram(), DataFlow(1, std::vector<TensorId>{"finalLossScale"}));
  run(*s, m, kSmall);
  EXPECT_EQ(s->getLossScaling(), 6.0f);
  const SGD next = sgd(5.0f);
  s->updateOptimizerFromHost(&next);
  EXPECT_EQ(s->getLossScaling(), 10.0f);
  EXPECT_EQ(run(*s, m, kSmall).at("finalLossScale"), std::vector<float>{10});
}

using HistogramLossScalingCheckpoint = ScratchDirTest;

// A job resumed from a checkpoint scales as an uninterrupted one: the factor and PopART's
// counters are in the checkpoint's hyperparameters.
TEST_F(HistogramLossScalingCheckpoint, ResumeIsBitExact) {
  const Model m = mulModel();
  const std::vector<std::vector<float>> data = {kTwoLarge, kSmall, kTwoLarge,
                                                kTwoLarge, kSmall, kTwoLarge};
  auto straight = makeSession(m, sgd(3.0f, 1.0f / 1024), histogram(2), DataFlow(1));
  for (const auto& x : data) run(*straight, m, x);
  auto first = makeSession(m, sgd(3.0f, 1.0f / 1024), histogram(2), DataFlow(1));
  for (int k = 0; k < 3; ++k) run(*first, m, data[static_cast<size_t>(k)]);
  first->saveCheckpoint(path("ckpt"));
  auto second = makeSession(m, sgd(3.0f, 1.0f / 1024), histogram(2), DataFlow(1));
  second->loadCheckpoint(path("ckpt"));
  EXPECT_EQ(second->getLossScaling(), first->getLossScaling());
  for (int k = 3; k < 6; ++k) run(*second, m, data[static_cast<size_t>(k)]);
  EXPECT_EQ(second->getLossScaling(), straight->getLossScaling());
  EXPECT_EQ(readTensors(*second, {"W"}), readTensors(*straight, {"W"}));
}

TEST(HistogramLossScaling, PopartsErrors) {
  const Model m = mulModel();
  const SGD constant({{"lossScaling", {3.0f, true}}});
  EXPECT_ENDS_WITH(errorOf([&] { makeSession(m, constant, histogram(), DataFlow(1)); }),
                   "The optimizer must have non-const loss scaling");
  EXPECT_ENDS_WITH(errorOf([&] {
                     auto d = DeviceManager::createDeviceManager().createCpuDevice();
                     InferenceSession::createFromOnnxModel(
                         m.proto, DataFlow(1, std::vector<TensorId>{m.y}), d, {}, histogram());
                   }),
                   "Only compatible when doing training");
  const Model single = mulModel(DataType::FLOAT);
  EXPECT_ENDS_WITH(errorOf([&] { makeSession(single, sgd(3.0f), histogram(), DataFlow(1)); }),
                   "[AutomaticLossScale transform] No tracked gradient tensors of type fp16 were "
                   "found.");
  SessionOptions o = histogram();
  o.automaticLossScalingSettings.binEdgeLocation = 1.5f;
  EXPECT_CONTAINS(errorOf([&] { makeSession(m, sgd(3.0f), o, DataFlow(1)); }),
                  "[AutomaticLossScale transform] Out of range value for 'binEdgeLocation'.");
  o = histogram();
  o.automaticLossScalingSettings.thresholdUpperCountProportion = -0.1f;
  EXPECT_CONTAINS(errorOf([&] { makeSession(m, sgd(3.0f), o, DataFlow(1)); }),
                  "Out of range value for 'thresholdUpperCountProportion'.");
  o = histogram();
  o.automaticLossScalingSettings.toTrackTensors = std::vector<std::string>{m.y};
  EXPECT_CONTAINS(errorOf([&] { makeSession(m, sgd(3.0f), o, DataFlow(1)); }),
                  "toTrackTensors has been set, but gradientTensorTrackingMethod has not been set");
  o.automaticLossScalingSettings.gradientTensorTrackingMethod =
      GradientTensorTrackingMethod::GradientsOfUserSpecifiedTensors;
  o.automaticLossScalingSettings.toTrackTensors = std::vector<std::string>{"nope"};
  EXPECT_CONTAINS(errorOf([&] { makeSession(m, sgd(3.0f), o, DataFlow(1)); }),
                  "list do not exist in the model");
}

}  // namespace
}  // namespace xtrain::testing
