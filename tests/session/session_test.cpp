// TrainingSession behaviour: gradient accumulation and local replicas give the same training as one
// big batch; memory checks; errors for bad options and bad input.
#include "xtrain/session.hpp"

#include <gtest/gtest.h>

#include <random>

#include "testing/op_testing.hpp"
#include "xtrain/builder.hpp"

namespace xtrain::testing {
namespace {

struct Mlp {
  std::string proto;
  TensorId x, labels, loss;
};

// 6 -> 5 -> 3 MLP with a mean softmax cross-entropy over a micro-batch of `batch` samples.
Mlp buildMlp(int64_t batch, int64_t hidden = 5) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  auto weight = [&](Shape s, const std::string& name) {
    std::vector<float> v(static_cast<size_t>(shapeNelms(s)));
    for (auto& e : v) e = u(rng);
    return b->addInitializedInputTensor(ConstVoidData::fromVector<float>(s, v), name);
  };
  Mlp m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {batch, 6}), "x");
  m.labels = b->addInputTensor(TensorInfo(DataType::INT32, {batch}), "labels");
  auto h = onnx.relu(
      {onnx.add({onnx.matmul({m.x, weight({6, hidden}, "W1")}), weight({hidden}, "b1")})});
  auto logits = onnx.add({onnx.matmul({h, weight({hidden, 3}, "W2")}), weight({3}, "b2")});
  m.loss = onnx.softmaxcrossentropyloss({logits, m.labels}, 1, std::nullopt, "mean")[0];
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

struct Layout {
  int64_t microBatch, af, replicas;
  ReductionType reduction = ReductionType::Mean;
  MeanReductionStrategy strategy = MeanReductionStrategy::Post;
  float lr = 0.1f;
  float weightDecay = 0.01f;
  bool sharded = false;  // optimizer state and weights sharded over all replicas
  float momentum = 0.9f;
};

// Trains `steps` steps (SGD with momentum) on the same global batches (16 samples per step) and
// returns W1 after training.
// `losses`, when given, receives each step's mean loss over its micro-batches and replicas.
HostTensor train(const Layout& l, int steps = 5, std::vector<double>* losses = nullptr) {
  const Mlp m = buildMlp(l.microBatch);
  SessionOptions o;
  if (l.af > 1) {
    o.enableGradientAccumulation = true;
    o.accumulationFactor = l.af;
  }
  if (l.replicas > 1) {
    o.enableReplicatedGraphs = true;
    o.replicatedGraphCount = l.replicas;
  }
  o.accumulationAndReplicationReductionType = l.reduction;
  o.meanAccumulationAndReplicationReductionStrategy = l.strategy;
  if (l.sharded) {
    for (auto* settings :
         {&o.weightTensorLocationSettings, &o.optimizerStateTensorLocationSettings}) {
      settings->location.replicatedTensorSharding = ReplicatedTensorSharding::On;
      settings->minElementsForReplicatedTensorSharding = 1;
    }
  }
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(l.replicas)}});
  auto s = TrainingSession::createFromOnnxModel(
      m.proto, DataFlow(1, {{m.loss, AnchorReturnType("ALL")}}), m.loss,
      ConstSGD(l.lr, l.weightDecay, l.momentum), device, {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  for (int step = 0; step < steps; ++step) {
    // Global batch of 16 samples in order; [af, replicas, microBatch] order of the buffers matches
    // micro-batches going to replicas in turn.
    std::vector<float> x(16 * 6);
    std::vector<int32_t> y(16);
    for (auto& v : x) v = normal(rng);
    for (auto& v : y) v = static_cast<int32_t>(rng() % 3);
    std::vector<float> loss(static_cast<size_t>(l.af * l.replicas));
    NDArrayWrapper<float> xa(x.data(), s->expectedInputBufferShape(m.x));
    NDArrayWrapper<int32_t> ya(y.data(), s->expectedInputBufferShape(m.labels));
    NDArrayWrapper<float> la(loss.data(), s->expectedAnchorBufferShape(m.loss));
    StepIO io({{m.x, xa}, {m.labels, ya}}, {{m.loss, la}});
    s->run(io);
    if (losses != nullptr) {
      double sum = 0;
      for (float v : loss) sum += v;
      losses->push_back(sum / static_cast<double>(loss.size()));
    }
  }
  s->weightsToHost();
  HostTensor w(TensorInfo(DataType::FLOAT, {6, 5}));
  WeightsIO wio;
  wio.insert("W1", {w.raw(), w.info()});
  s->readWeights(wio);
  return w;
}

TEST(Session, AccumulationAndLocalReplicasMatchOneBigBatch) {
  const HostTensor reference = train({16, 1, 1});
  Layout sharded{4, 1, 4};
  sharded.sharded = true;
  for (const Layout& l : {Layout{4, 1, 4}, sharded, Layout{4, 4, 1}, Layout{8, 2, 1},
                          Layout{8, 1, 2}, Layout{4, 2, 2}, Layout{2, 2, 4},
                          Layout{4, 4, 1, ReductionType::Mean, MeanReductionStrategy::Running},
                          Layout{4, 2, 2, ReductionType::Mean, MeanReductionStrategy::Running}}) {
    EXPECT_TRUE(allClose(train(l), reference, 1e-5, 1e-6))
        << "micro-batch " << l.microBatch << " af " << l.af << " replicas " << l.replicas
        << " strategy " << (l.strategy == MeanReductionStrategy::Post ? "Post" : "Running")
        << (l.sharded ? " sharded" : "");
  }
}

// Section 9 case 3 (SGD and momentum SGD; Adam comes with issue 7): (micro-batch, af, replicas) =
// (16,1,1) vs (4,1,4), (4,4,1), (4,2,2), (2,2,4) with Mean-Post, Mean-Running and Sum (whose
// gradient is af x replicas times the mean's, so lr / (af x replicas) trains the same) give the
// same weights and losses within 1e-5.
TEST(Session, GlobalBatchInvarianceForEveryReduction) {
  for (float momentum : {0.0f, 0.9f}) {
    Layout big{16, 1, 1};
    big.momentum = momentum;
    big.weightDecay = 0;
    std::vector<double> wantLoss;
    const HostTensor want = train(big, 4, &wantLoss);
    for (const auto& shape : {Layout{4, 1, 4}, Layout{4, 4, 1}, Layout{4, 2, 2}, Layout{2, 2, 4}}) {
      for (int reduction = 0; reduction < 3; ++reduction) {
        Layout l = shape;
        l.momentum = momentum;
        l.weightDecay = 0;
        l.strategy = reduction == 1 ? MeanReductionStrategy::Running : MeanReductionStrategy::Post;
        if (reduction == 2) {
          l.reduction = ReductionType::Sum;
          l.lr = 0.1f / static_cast<float>(l.af * l.replicas);
        }
        const std::string what = "momentum " + std::to_string(momentum) + " micro-batch " +
                                 std::to_string(l.microBatch) + " af " + std::to_string(l.af) +
                                 " replicas " + std::to_string(l.replicas) + " " +
                                 (reduction == 0   ? "Mean-Post"
                                  : reduction == 1 ? "Mean-Running"
                                                   : "Sum");
        std::vector<double> gotLoss;
        EXPECT_TRUE(allClose(train(l, 4, &gotLoss), want, 1e-5, 1e-6)) << what;
        ASSERT_EQ(gotLoss.size(), wantLoss.size());
        for (size_t k = 0; k < gotLoss.size(); ++k) {
          EXPECT_NEAR(gotLoss[k], wantLoss[k], 1e-5 * std::max(1.0, std::abs(wantLoss[k])))
              << what << " step " << k;
        }
      }
    }
  }
}

TEST(Session, SumReductionScalesTheGradientByMicroBatches) {
  // Sum over 4 micro-batches of mean losses = 4 x the mean gradient: lr / 4 gives the same training
  // (without weight decay, which the reduction does not scale).
  Layout big{16, 1, 1};
  big.weightDecay = 0;
  const HostTensor reference = train(big);
  Layout l{4, 4, 1, ReductionType::Sum};
  l.lr = 0.1f / 4;
  l.weightDecay = 0;
  EXPECT_TRUE(allClose(train(l), reference, 1e-5, 1e-6));
}

TEST(Session, OverflowingIpuThrowsOutOfMemoryWithReport) {
  const Mlp m = buildMlp(4, 4096);  // ~100 KB of weights
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"tilesPerIPU", "4"}, {"memoryPerTile", "16KiB"}});
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss,
                                                ConstSGD(0.1f, 0, 0.9f), device);
  try {
    s->prepareDevice();
    FAIL() << "expected OutOfMemoryException";
  } catch (const OutOfMemoryException& e) {
    const std::string report = e.getSummaryReport();
    EXPECT_NE(report.find("Weights"), std::string::npos) << report;
    EXPECT_NE(report.find("OptimizerState"), std::string::npos) << report;
    EXPECT_NE(report.find("Activations"), std::string::npos) << report;
  }
}

TEST(Session, SummaryReportShowsMemoryByClassWithoutOverflow) {
  const Mlp m = buildMlp(4);
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss,
                                                ConstSGD(0.1f, 0, 0.9f), device);
  s->prepareDevice();
  const std::string report = s->getSummaryReport();
  EXPECT_NE(report.find("Weights"), std::string::npos) << report;
  EXPECT_NE(report.find("OptimizerState"), std::string::npos) << report;
}

TEST(Session, BadOptionsAndNamesAreRefusedClearly) {
  const Mlp m = buildMlp(4);
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  auto make = [&](const SessionOptions& o, const TensorId& loss = "") {
    TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), loss.empty() ? m.loss : loss,
                                         ConstSGD(0.1f), device, {}, o);
  };
  expectError([&] { make({}, "nope"); }, {"loss 'nope'"});
  SessionOptions offChip;
  offChip.activationTensorLocationSettings.location.storage = TensorStorage::OffChip;
  expectError([&] { make(offChip); },
              {"activationTensorLocationSettings", "OffChip", "execution phases"});
  SessionOptions pipelined;
  pipelined.enablePipelining = true;
  expectError([&] { make(pipelined); },
              {"Pipelining requires more than 1 IPU", "'virtualGraphMode'", "enablePipelining"});
  SessionOptions af;
  af.accumulationFactor = 4;
  expectError([&] { make(af); }, {"enableGradientAccumulation"});
  SessionOptions replicas;
  replicas.enableReplicatedGraphs = true;
  replicas.replicatedGraphCount = 2;
  expectError([&] { make(replicas); }, {"1 IPUs", "2 local replicas"});
  expectError(
      [&] {
        TrainingSession::createFromOnnxModel(m.proto,
                                             DataFlow(1, {{"missing", AnchorReturnType("ALL")}}),
                                             m.loss, ConstSGD(0.1f), device);
      },
      {"anchor 'missing'"});
  // PopART's sentence, the whole message: an inference session must anchor something.
  try {
    InferenceSession::createFromOnnxModel(m.proto, DataFlow(1), device);
    FAIL() << "an inference session without anchors was accepted";
  } catch (const error& e) {
    EXPECT_STREQ(e.what(), "User must specify an anchor tensor when doing inference.");
  }
}

TEST(Session, OfflineDeviceChecksMemoryButCannotRun) {
  const Mlp m = buildMlp(4);
  auto device = DeviceManager::createDeviceManager().createOfflineIPUDevice({});
  auto s =
      TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, ConstSGD(0.1f), device);
  expectError([&] { s->prepareDevice(); }, {"offline"});
  EXPECT_NE(s->getSummaryReport().find("Weights"), std::string::npos);
}

TEST(Session, UpdateOptimizerFromHostChangesOnlyNonConstantValues) {
  const Mlp m = buildMlp(4);
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  SGD sgd({{"defaultLearningRate", {0.1f, false}}, {"defaultMomentum", {0.9f, true}}});
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, sgd, device);
  s->prepareDevice();
  SGD lower({{"defaultLearningRate", {0.01f, false}}, {"defaultMomentum", {0.9f, true}}});
  s->updateOptimizerFromHost(&lower);
  SGD momentum({{"defaultLearningRate", {0.01f, false}}, {"defaultMomentum", {0.5f, true}}});
  expectError([&] { s->updateOptimizerFromHost(&momentum); }, {"momentum", "constant"});
}

TEST(Session, ModelToHostWritesTrainedWeightsThatReload) {
  const Mlp m = buildMlp(4);
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  auto s =
      TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, ConstSGD(0.5f), device);
  s->prepareDevice();
  s->weightsFromHost();
  std::vector<float> x(24, 0.5f);
  std::vector<int32_t> y{0, 1, 2, 0};
  NDArrayWrapper<float> xa(x.data(), Shape{4, 6});
  NDArrayWrapper<int32_t> ya(y.data(), Shape{4});
  StepIO io({{m.x, xa}, {m.labels, ya}}, {});
  s->run(io);
  const std::string path = ::testing::TempDir() + "/xtrain_model_to_host.onnx";
  s->modelToHost(path);
  HostTensor trained(TensorInfo(DataType::FLOAT, {6, 5}));
  WeightsIO wio;
  wio.insert("W1", {trained.raw(), trained.info()});
  s->readWeights(wio);

  // (An inference session needs an anchor, as PopART's does.)
  auto s2 = InferenceSession::createFromOnnxModel(path, DataFlow(1, std::vector<TensorId>{m.loss}),
                                                  device);
  s2->prepareDevice();
  HostTensor reloaded(trained.info());
  WeightsIO wio2;
  wio2.insert("W1", {reloaded.raw(), reloaded.info()});
  s2->readWeights(wio2);
  EXPECT_TRUE(allClose(reloaded, trained, 0, 0));
  HostTensor original = reloaded;
  s->resetHostWeights(m.proto);
  s->readWeights(wio2);
  EXPECT_FALSE(allClose(reloaded, trained, 0, 0))
      << "resetHostWeights should restore the initial values";
}

}  // namespace
}  // namespace xtrain::testing
