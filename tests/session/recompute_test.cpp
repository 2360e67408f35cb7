// SessionOptions::autoRecomputation (src/ir/recompute): each mode trains a small CNN with
// BatchNorm, Relu, LayerNorm, Gelu and Dropout to the same weights, bit for bit, as no
// recomputation (one replica, and two replicas with accumulation); the recomputing modes lower the
// peak of live activations; the ops each mode recomputes; Pipeline is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.hpp"
#include "testing/error_testing.hpp"
#include "testing/op_testing.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/devicemanager.hpp"

namespace xtrain::testing {
namespace {

constexpr int64_t kBatch = 4, kChannels = 3, kSide = 8, kClasses = 5;

struct CnnModel {
  std::string proto;
  TensorId x, labels, loss;
  std::vector<TensorId> weights;  // every Variable: trained weights and BatchNorm's statistics
};

// conv-BN-Relu twice, global average pool, MatMul-LayerNorm-Gelu-Dropout, MatMul, softmax
// cross-entropy.
CnnModel buildCnn() {
  CnnModel m;
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset17();
  auto gc = b->aiGraphcoreOpset1();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-0.4f, 0.4f);
  auto tensor = [&](Shape s, const std::string& name, float fill, bool random) {
    std::vector<float> v(static_cast<size_t>(shapeNelms(s)), fill);
    if (random) {
      for (auto& e : v) e = u(rng);
    }
    m.weights.push_back(name);
    return b->addInitializedInputTensor(ConstVoidData::fromVector<float>(s, v), name);
  };
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {kBatch, kChannels, kSide, kSide}), "x");
  m.labels = b->addInputTensor(TensorInfo(DataType::INT32, {kBatch}), "labels");
  TensorId h = m.x;
  int64_t in = kChannels;
  for (int layer = 1; layer <= 2; ++layer) {
    const std::string n = std::to_string(layer);
    h = onnx.conv({h, tensor({8, in, 3, 3}, "conv" + n, 0, true)}, {}, 1, {3, 3}, {1, 1, 1, 1});
    h = onnx.batchnormalization(
        {h, tensor({8}, "scale" + n, 1, false), tensor({8}, "bias" + n, 0, false),
         tensor({8}, "mean" + n, 0, false), tensor({8}, "var" + n, 1, false)},
        3)[0];
    h = onnx.relu({h});
    in = 8;
  }
  h = onnx.flatten({onnx.globalaveragepool({h})});
  h = onnx.add({onnx.matmul({h, tensor({8, 16}, "W3", 0, true)}), tensor({16}, "b3", 0, true)});
  h = onnx.layernormalization(
      {h, tensor({16}, "lnScale", 1, false), tensor({16}, "lnBias", 0, false)})[0];
  h = gc.gelu({h});
  h = onnx.dropout({h}, 1, 0.25f)[0];
  auto logits = onnx.add(
      {onnx.matmul({h, tensor({16, kClasses}, "W4", 0, true)}), tensor({kClasses}, "b4", 0, true)});
  m.loss = onnx.softmaxcrossentropyloss({logits, m.labels}, 1, std::nullopt, "mean")[0];
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

std::unique_ptr<TrainingSession> makeSession(const CnnModel& m, RecomputationType mode,
                                             int64_t replicas, int64_t af) {
  SessionOptions o;
  o.autoRecomputation = mode;
  o.enableReplicatedGraphs = replicas > 1;
  o.replicatedGraphCount = replicas;
  o.enableGradientAccumulation = af > 1;
  o.accumulationFactor = af;
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(replicas)}});
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss,
                                                ConstSGD(0.05f, 0, 0.9f), device, {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  return s;
}

// Trains `steps` steps on data drawn from the step number; returns every weight and velocity.
std::vector<float> train(RecomputationType mode, int64_t replicas, int64_t af, int steps) {
  const CnnModel m = buildCnn();
  auto s = makeSession(m, mode, replicas, af);
  const int64_t sample = kChannels * kSide * kSide;
  for (int step = 0; step < steps; ++step) {
    std::mt19937 rng(static_cast<unsigned>(100 + step));
    std::normal_distribution<float> normal;
    std::vector<float> x(static_cast<size_t>(af * replicas * kBatch * sample));
    std::vector<int32_t> y(static_cast<size_t>(af * replicas * kBatch));
    for (auto& v : x) v = normal(rng);
    for (auto& v : y) v = static_cast<int32_t>(rng() % kClasses);
    NDArrayWrapper<float> xa(x.data(), s->expectedInputBufferShape(m.x));
    NDArrayWrapper<int32_t> ya(y.data(), s->expectedInputBufferShape(m.labels));
    StepIO io({{m.x, xa}, {m.labels, ya}}, {});
    s->run(io);
  }
  std::vector<TensorId> ids = m.weights;
  for (const auto& w : m.weights) {
    if (w.rfind("mean", 0) != 0 && w.rfind("var", 0) != 0) ids.push_back("Accl___" + w);
  }
  return readTensors(*s, ids);
}

nlohmann::json report(RecomputationType mode) {
  const CnnModel m = buildCnn();
  auto s = makeSession(m, mode, 1, 1);
  return nlohmann::json::parse(s->getReport());
}

uint64_t peakActivations(RecomputationType mode) {
  return report(mode)["memory"]["ipus"][0]["classes"]["Activations"].get<uint64_t>();
}

// The types of the ops recomputed in the backward pass.
std::multiset<std::string> recomputedTypes(RecomputationType mode) {
  std::multiset<std::string> types;
  const nlohmann::json r = report(mode);
  for (const auto& op : r["execution"]["ops"]) {
    const std::string name = op["name"].get<std::string>();
    if (name.rfind("recompute/", 0) == 0) {
      EXPECT_EQ(op["phase"], "Backward") << name;
      types.insert(op["type"].get<std::string>());
    }
  }
  return types;
}

const std::vector<std::pair<RecomputationType, const char*>> kModes = {
    {RecomputationType::Standard, "Standard"},
    {RecomputationType::NormOnly, "NormOnly"},
    {RecomputationType::RecomputeAll, "RecomputeAll"}};

void expectBitIdentical(int64_t replicas, int64_t af) {
  const std::vector<float> none = train(RecomputationType::None, replicas, af, 3);
  const CnnModel m = buildCnn();
  const std::vector<float> initial = [&] {
    auto s = makeSession(m, RecomputationType::None, replicas, af);
    std::vector<TensorId> ids = m.weights;
    return readTensors(*s, ids);
  }();
  size_t changed = 0;
  for (size_t i = 0; i < initial.size(); ++i) changed += initial[i] != none[i] ? 1 : 0;
  EXPECT_GT(changed, initial.size() / 2) << "training changed the weights";
  for (const auto& [mode, name] : kModes) {
    const std::vector<float> got = train(mode, replicas, af, 3);
    ASSERT_EQ(got.size(), none.size()) << name;
    EXPECT_EQ(std::memcmp(got.data(), none.data(), got.size() * sizeof(float)), 0)
        << name << ": the weights differ from training without recomputation";
  }
}

TEST(AutoRecomputation, EachModeTrainsToTheSameWeightsBitForBit) {
  expectBitIdentical(1, 1);
}

TEST(AutoRecomputation, BitForBitWithTwoReplicasAndAccumulation) {
  expectBitIdentical(2, 2);
}

// Standard and NormOnly keep fewer activations from the forward pass to the backward pass.
// RecomputeAll recomputes the whole chain when the backward pass starts (one clone per op, each
// kept until its last backward reader), so on a chain its peak is None's: never higher.
TEST(AutoRecomputation, RecomputingLowersThePeakOfLiveActivations) {
  const uint64_t none = peakActivations(RecomputationType::None);
  EXPECT_LT(peakActivations(RecomputationType::Standard), none);
  EXPECT_LT(peakActivations(RecomputationType::NormOnly), none);
  EXPECT_LE(peakActivations(RecomputationType::RecomputeAll), none);
}

TEST(AutoRecomputation, EachModeRecomputesItsOps) {
  EXPECT_TRUE(recomputedTypes(RecomputationType::None).empty());
  // NormOnly: the two BatchNorms with their Relus and the LayerNorm. The Gelu after it is chosen
  // too, but no backward op reads its output (GeluGrad reads its input, DropoutGrad the mask), so
  // it is not cloned.
  const std::multiset<std::string> norms = {"BatchNormalization", "BatchNormalization", "Relu",
                                            "Relu", "LayerNormalization"};
  EXPECT_EQ(recomputedTypes(RecomputationType::NormOnly), norms);
  // RecomputeAll: the convolutions and the Dropout too; the Dropout draws its forward mask again
  // (the bit-identical training above).
  const auto all = recomputedTypes(RecomputationType::RecomputeAll);
  for (const char* type :
       {"Conv", "BatchNormalization", "Relu", "LayerNormalization", "Gelu", "Dropout", "MatMul"}) {
    EXPECT_GE(all.count(type), 1u) << type;
  }
  // Standard keeps checkpoints: fewer ops than RecomputeAll, but some.
  const auto standard = recomputedTypes(RecomputationType::Standard);
  EXPECT_GT(standard.size(), 0u);
  EXPECT_LT(standard.size(), all.size());
}

TEST(AutoRecomputation, PipelineNeedsPipelining) {
  const CnnModel m = buildCnn();
  expectError([&] { makeSession(m, RecomputationType::Pipeline, 1, 1); },
              {"SessionOptions.autoRecomputation = Pipeline", "enablePipelining is false"});
}

// A clone runs where its first reader would, not as soon as its forward inputs allow: its memory is
// live from there on only.
TEST(AutoRecomputation, ACloneIsScheduledJustBeforeItsFirstReader) {
  ir::Graph g;
  const HostTensor v = randomTensor({4}, 3);
  g.addTensor("x", v.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(v));
  const TensorId a = addOp(g, "Relu", {"x"})[0];
  ir::OpSpec spec;
  spec.type = "Relu";
  spec.inputs = {"x"};
  spec.phase = ir::Phase::Backward;
  ir::Op& clone = g.addOp(spec);  // made before the backward ops, so its id is smaller
  const OpId cloneId = clone.id;
  const TensorId a2 = clone.outputs[0];
  auto backward = [&](const std::string& type, std::vector<TensorId> in) {
    spec.type = type;
    spec.inputs = std::move(in);
    return g.addOp(spec).outputs[0];
  };
  const TensorId g1 = backward("Neg", {"x"});
  const TensorId g2 = backward("Neg", {g1});
  backward("Add", {g2, a2});
  const auto position = [&](OpId id) {
    const std::vector<OpId> order = g.schedule();
    return std::find(order.begin(), order.end(), id) - order.begin();
  };
  EXPECT_EQ(position(cloneId), 1) << "an op of its own is ordered by its id";
  g.op(cloneId).recomputes = g.tensor(a).producer;
  EXPECT_EQ(position(cloneId), 3) << "after both Negs, just before the Add that reads it";
}

}  // namespace
}  // namespace xtrain::testing
