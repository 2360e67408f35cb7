// SessionOptions::virtualGraphMode (docs/model-parallelism.md): placement read from the Builder's
// node attributes and written back; Manual's errors; each IPU of a replica charged its own tensors;
// IpuCopy ops in the report; and training on 2 IPUs per replica (Manual and Auto) reaching the same
// weights and optimizer state, bit for bit, as on one IPU, with every optimizer family, local
// replicas, gradient accumulation, recomputation and checkpoints.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "testing/error_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/devicemanager.hpp"

namespace xtrain::testing {
namespace {

constexpr int64_t kBatch = 4, kIn = 8, kHidden = 12, kOut = 5;

struct Model {
  std::string proto;
  TensorId x, labels, loss;
  TensorId h1, h2, logits;  // outputs placed by the test (relu, residual add, last add)
};

// x -> [IPU 0] relu(x W1 + b1) = h1 -> [IPU 1] dropout(sigmoid(h1 W2 + b2)) + h1 + b1 = h2 ->
// h2 W3 + b3 -> softmax cross-entropy. b1 is read on both IPUs (its gradient is summed across
// them), h1 crosses to IPU 1. `place`: annotate every node (scopes and per-node calls).
Model buildModel(bool place) {
  Model m;
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  auto weight = [&](Shape s, const std::string& name) {
    std::vector<float> v(static_cast<size_t>(shapeNelms(s)));
    for (auto& e : v) e = u(rng);
    return b->addInitializedInputTensor(ConstVoidData::fromVector<float>(s, v), name);
  };
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {kBatch, kIn}), "x");
  m.labels = b->addInputTensor(TensorInfo(DataType::INT32, {kBatch}), "labels");
  const TensorId w1 = weight({kIn, kHidden}, "W1"), b1 = weight({kHidden}, "b1");
  const TensorId w2 = weight({kHidden, kHidden}, "W2"), b2 = weight({kHidden}, "b2");
  const TensorId w3 = weight({kHidden, kOut}, "W3"), b3 = weight({kOut}, "b3");
  if (place) b->setAttribute("__ipu_number", int64_t{0});
  m.h1 = onnx.relu({onnx.add({onnx.matmul({m.x, w1}), b1})});
  if (place) b->clearAttribute("__ipu_number");
  if (place) b->setAttribute("__ipu_number", int64_t{1});
  const TensorId s = onnx.sigmoid({onnx.add({onnx.matmul({m.h1, w2}), b2})});
  const TensorId d = onnx.dropout({s}, 1, 0.25f)[0];
  m.h2 = onnx.add({onnx.add({d, m.h1}), b1});
  if (place) b->clearAttribute("__ipu_number");
  // The last layer placed node by node: by an output, or by the set of a node's outputs.
  const TensorId mm = onnx.matmul({m.h2, w3});
  m.logits = onnx.add({mm, b3});
  m.loss = onnx.softmaxcrossentropyloss({m.logits, m.labels}, 1, std::nullopt, "mean")[0];
  if (place) {
    b->virtualGraph(mm, 1);
    b->virtualGraph(std::set<TensorId>{m.logits}, 1);
    b->virtualGraph(m.loss, 1);
  }
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

struct Layout {
  int64_t replicas = 1;
  int64_t af = 1;
  VirtualGraphMode mode = VirtualGraphMode::Off;
  int64_t ipusPerReplica = 1;
  RecomputationType recompute = RecomputationType::None;
  bool shardAcrossReplicas = false;  // replicated tensor sharding of weights and optimizer state
};

SessionOptions optionsOf(const Layout& l) {
  SessionOptions o;
  o.enableReplicatedGraphs = l.replicas > 1;
  o.replicatedGraphCount = l.replicas;
  o.enableGradientAccumulation = l.af > 1;
  o.accumulationFactor = l.af;
  o.virtualGraphMode = l.mode;
  o.autoRecomputation = l.recompute;
  if (l.shardAcrossReplicas) {
    for (auto* settings :
         {&o.weightTensorLocationSettings, &o.optimizerStateTensorLocationSettings}) {
      settings->location.replicatedTensorSharding = ReplicatedTensorSharding::On;
      settings->minElementsForReplicatedTensorSharding = 10;
    }
  }
  return o;
}

std::shared_ptr<DeviceInfo> ipuModel(int64_t ipus) {
  return DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(ipus)}});
}

std::unique_ptr<TrainingSession> makeSession(const Model& m, const Layout& l,
                                             const Optimizer& opt) {
  auto s = TrainingSession::createFromOnnxModel(
      m.proto, DataFlow(1), m.loss, opt, ipuModel(l.replicas * l.ipusPerReplica), {}, optionsOf(l));
  s->prepareDevice();
  s->weightsFromHost();
  return s;
}

// Steps [first, first + steps): step k's data is drawn from k, whatever the placement.
void train(TrainingSession& s, const Model& m, const Layout& l, int first, int steps) {
  for (int step = first; step < first + steps; ++step) {
    std::mt19937 rng(static_cast<unsigned>(200 + step));
    std::normal_distribution<float> normal;
    std::vector<float> x(static_cast<size_t>(l.af * l.replicas * kBatch * kIn));
    std::vector<int32_t> y(static_cast<size_t>(l.af * l.replicas * kBatch));
    for (auto& v : x) v = normal(rng);
    for (auto& v : y) v = static_cast<int32_t>(rng() % kOut);
    NDArrayWrapper<float> xa(x.data(), s.expectedInputBufferShape(m.x));
    NDArrayWrapper<int32_t> ya(y.data(), s.expectedInputBufferShape(m.labels));
    StepIO io({{m.x, xa}, {m.labels, ya}}, {});
    s.run(io);
  }
}

// Trains 3 steps; the model with the optimizer state, written to `path`.
std::string trained(const Model& m, const Layout& l, const Optimizer& opt,
                    const std::string& path) {
  auto s = makeSession(m, l, opt);
  train(*s, m, l, 0, 3);
  s->modelToHost(path);
  return path;
}

const Layout kSharded{1, 1, VirtualGraphMode::Manual, 2};

using VirtualGraphTraining = ScratchDirTest;

TEST_F(VirtualGraphTraining, TwoIpusPerReplicaTrainToTheWeightsOfOneBitForBit) {
  const Model plain = buildModel(false), placed = buildModel(true);
  const std::vector<std::pair<std::string, std::shared_ptr<Optimizer>>> optimizers = {
      {"sgd", std::make_shared<ConstSGD>(0.05f, 0.01f, 0.9f)},
      {"adam",
       std::make_shared<Adam>(
           std::map<std::string, std::pair<float, bool>>{{"defaultLearningRate", {0.01f, false}},
                                                         {"defaultWeightDecay", {0.01f, true}}},
           AdamMode::Adam)},
      {"rmsprop",
       std::make_shared<Adaptive>(
           std::map<std::string, std::pair<float, bool>>{{"defaultLearningRate", {0.01f, false}},
                                                         {"defaultMomentum", {0.5f, true}}},
           AdaptiveMode::RMSProp)}};
  for (const auto& [name, opt] : optimizers) {
    for (const auto& [replicas, af] : {std::pair<int64_t, int64_t>{1, 1}, {2, 3}}) {
      SCOPED_TRACE(name + " replicas " + std::to_string(replicas) + " af " + std::to_string(af));
      const std::string tag = name + std::to_string(replicas) + std::to_string(af);
      const std::string one = trained(plain, Layout{replicas, af}, *opt, path(tag + "-one.onnx"));
      const std::string two = trained(placed, Layout{replicas, af, VirtualGraphMode::Manual, 2},
                                      *opt, path(tag + "-two.onnx"));
      expectSameInitializers(one, two, 0);
    }
  }
}

TEST_F(VirtualGraphTraining, AutoAndRecomputationTrainToTheSameWeights) {
  const Model plain = buildModel(false), placed = buildModel(true);
  const ConstSGD sgd(0.05f, 0.0f, 0.9f);
  const std::string one = trained(plain, Layout{2, 2}, sgd, path("one.onnx"));
  expectSameInitializers(
      one, trained(plain, Layout{2, 2, VirtualGraphMode::Auto, 2}, sgd, path("auto.onnx")), 0);
  expectSameInitializers(
      one,
      trained(placed, Layout{2, 2, VirtualGraphMode::Manual, 2, RecomputationType::RecomputeAll},
              sgd, path("recompute.onnx")),
      0);
  // Annotations are ignored with virtualGraphMode Off (as in PopART).
  expectSameInitializers(one, trained(placed, Layout{2, 2}, sgd, path("off.onnx")), 0);
}

TEST_F(VirtualGraphTraining, ReplicatedTensorShardingWithLambToo) {
  const Model plain = buildModel(false), placed = buildModel(true);
  const Adam lamb({{"defaultLearningRate", {0.01f, false}}, {"defaultWeightDecay", {0.01f, true}}},
                  AdamMode::Lamb);
  Layout one{2, 1};
  one.shardAcrossReplicas = true;
  Layout two{2, 1, VirtualGraphMode::Manual, 2};
  two.shardAcrossReplicas = true;
  expectSameInitializers(trained(plain, one, lamb, path("one.onnx")),
                         trained(placed, two, lamb, path("two.onnx")), 0);
}

TEST_F(VirtualGraphTraining, ACheckpointIsIndependentOfThePlacement) {
  const Model plain = buildModel(false), placed = buildModel(true);
  const ConstSGD sgd(0.05f, 0.0f, 0.9f);
  auto sharded = makeSession(placed, kSharded, sgd);
  train(*sharded, placed, kSharded, 0, 2);
  sharded->saveCheckpoint(path("ckpt"));
  auto single = makeSession(plain, Layout{}, sgd);
  single->loadCheckpoint(path("ckpt"));
  train(*sharded, placed, kSharded, 2, 2);
  train(*single, plain, Layout{}, 2, 2);
  sharded->modelToHost(path("sharded.onnx"));
  single->modelToHost(path("single.onnx"));
  expectSameInitializers(path("sharded.onnx"), path("single.onnx"), 0);
}

TEST_F(VirtualGraphTraining, PlacementRoundTripsThroughTheModelAndModelToHost) {
  const Model m = buildModel(true);
  auto reread = Builder::createFromOnnxModel(m.proto);
  EXPECT_EQ(reread->getVirtualGraph(m.h1), 0);
  EXPECT_EQ(reread->getVirtualGraph(m.h2), 1);
  EXPECT_EQ(reread->getVirtualGraph(std::set<TensorId>{m.logits}), 1);
  auto s = makeSession(m, kSharded, ConstSGD(0.05f));
  train(*s, m, kSharded, 0, 1);
  s->modelToHost(path("out.onnx"));
  auto written = Builder::createFromOnnxModel(path("out.onnx"));
  EXPECT_EQ(written->getVirtualGraph(m.h1), 0);
  EXPECT_EQ(written->getVirtualGraph(m.loss), 1);
  // The session's IR: every op placed, h1 copied to IPU 1 once.
  const auto ir = nlohmann::json::parse(s->serializeIr(IrSerializationFormat::JSON));
  int copies = 0;
  for (const auto& op : ir["maingraph"]) {
    ASSERT_TRUE(op["attributes"].contains("__ipu_number")) << op.dump();
    if (op["type"] == "IpuCopy") {
      ++copies;
      if (op["inputs"][0]["name"] == m.h1) {
        EXPECT_EQ(op["attributes"]["destIpu"], "1");
        EXPECT_EQ(op["outputs"][0]["name"], m.h1 + "_c1");
      }
    }
  }
  EXPECT_GE(copies, 3);  // h1, b1, and the gradients flowing back to IPU 0
}

TEST(VirtualGraphMemory, EachIpuIsChargedItsOwnTensors) {
  const Model placed = buildModel(true);
  auto s = makeSession(placed, Layout{2, 1, VirtualGraphMode::Manual, 2}, ConstSGD(0.05f, 0, 0.9f));
  const auto r = nlohmann::json::parse(s->getReport());
  const auto& ipus = r["memory"]["ipus"];
  ASSERT_EQ(ipus.size(), 4u);
  const uint64_t first = (kIn * kHidden + kHidden) * 4;                               // W1, b1
  const uint64_t second = (kHidden * kHidden + kHidden + kHidden * kOut + kOut) * 4;  // W2..b3
  for (int replica = 0; replica < 2; ++replica) {
    const auto& a = ipus[static_cast<size_t>(2 * replica)]["classes"];
    const auto& b = ipus[static_cast<size_t>(2 * replica + 1)]["classes"];
    EXPECT_EQ(a["Weights"].get<uint64_t>(), first);
    EXPECT_EQ(b["Weights"].get<uint64_t>(), second);
    // The velocities, and a hyperparameter tensor per weight (2 weights on IPU 0, 4 on IPU 1).
    const uint64_t hyperA = a["OptimizerState"].get<uint64_t>() - first;
    const uint64_t hyperB = b["OptimizerState"].get<uint64_t>() - second;
    EXPECT_GT(hyperA, 0u);
    EXPECT_EQ(hyperB, 2 * hyperA);
    EXPECT_GT(b["Activations"].get<uint64_t>(), 0u);
  }
  // Unplaced, a replica's first IPU holds everything.
  auto one = makeSession(buildModel(false), Layout{1}, ConstSGD(0.05f, 0, 0.9f));
  const auto r1 = nlohmann::json::parse(one->getReport());
  EXPECT_EQ(r1["memory"]["ipus"][0]["classes"]["Weights"].get<uint64_t>(), first + second);
}

TEST(VirtualGraphReport, CopiesAreOpsOfTheProfileAndTheSummary) {
  const Model placed = buildModel(true);
  SessionOptions o = optionsOf(kSharded);
  o.instrumentWithHardwareCycleCounter = true;
  auto s = TrainingSession::createFromOnnxModel(placed.proto, DataFlow(1), placed.loss,
                                                ConstSGD(0.05f), ipuModel(2), {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  train(*s, placed, kSharded, 0, 1);
  const auto r = nlohmann::json::parse(s->getReport());
  int copies = 0;
  for (const auto& op : r["execution"]["ops"]) copies += op["type"] == "IpuCopy" ? 1 : 0;
  EXPECT_GE(copies, 3);
  const std::string summary = s->getSummaryReport();
  EXPECT_NE(summary.find("inter-IPU copies (IpuCopy): " + std::to_string(copies) + " op(s)"),
            std::string::npos)
      << summary;
}

// ---- bad input

std::string twoAdds(bool placeBoth, std::string* second = nullptr) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "x");
  const TensorId a = onnx.add({x, x}, "first");
  const TensorId c = onnx.add({a, x}, "second");
  b->virtualGraph(a, 0);
  if (placeBoth) b->virtualGraph(c, 1);
  b->addOutputTensor(c);
  if (second) *second = c;
  return b->getModelProto();
}

std::unique_ptr<InferenceSession> inference(const std::string& proto, const TensorId& out,
                                            VirtualGraphMode mode, int64_t ipus,
                                            int64_t replicas = 1) {
  SessionOptions o;
  o.virtualGraphMode = mode;
  o.enableReplicatedGraphs = replicas > 1;
  o.replicatedGraphCount = replicas;
  return InferenceSession::createFromOnnxModel(proto, DataFlow(1, {out}), ipuModel(ipus), {}, o);
}

TEST(VirtualGraphErrors, ManualNeedsEveryOpPlaced) {
  std::string out;
  const std::string mixed = twoAdds(false, &out);
  expectError([&] { inference(mixed, out, VirtualGraphMode::Manual, 2); },
              {"Either all Ops must have their virtual graph ids set, or none must", "Add 'second'",
               "inputs=[first:0, x]"});
  auto b = Builder::create();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "x");
  const TensorId y = b->aiOnnxOpset13().relu({x});
  expectError([&] { inference(b->getModelProto(), y, VirtualGraphMode::Manual, 1); },
              {"virtualGraphMode is Manual, but no Ops have been annotated"});
  // Off ignores the annotations, whatever they are.
  inference(mixed, out, VirtualGraphMode::Off, 1)->prepareDevice();
}

TEST(VirtualGraphErrors, AVirtualGraphBeyondTheReplicasIpusIsAnErrorAtPrepareDevice) {
  std::string out;
  const std::string proto = twoAdds(true, &out);
  auto s = inference(proto, out, VirtualGraphMode::Manual, 1);  // created: PopART checks later
  expectError([&] { s->prepareDevice(); },
              {"outputs=[" + out + "]) has been assigned to an invalid virtual graph 1",
               "numIPUs = 1", "acquire a device of 2 IPUs"});
  auto r = inference(proto, out, VirtualGraphMode::Manual, 2, 2);
  expectError([&] { r->prepareDevice(); },
              {"invalid virtual graph 1", "the device's 2 IPUs over 2 local replicas",
               "acquire a device of 4 IPUs (2 x 2)"});
  inference(proto, out, VirtualGraphMode::Manual, 4, 2)->prepareDevice();
}

TEST(VirtualGraphErrors, AutoAndExecutionPhases) {
  std::string out;
  const std::string proto = twoAdds(false, &out);
  SessionOptions o;
  o.virtualGraphMode = VirtualGraphMode::Auto;
  o.virtualGraphSplitRatios = {0.5f, 0.25f, 0.25f};
  expectError(
      [&] { InferenceSession::createFromOnnxModel(proto, DataFlow(1, {out}), ipuModel(2), {}, o); },
      {"virtualGraphSplitRatios has 3 ratios", "over 2 IPUs"});
  expectError([&] { inference(proto, out, VirtualGraphMode::Auto, 4); },
              {"[AutoVirtualGraph] Couldn't find enough splits for 4 IPUs"});
  expectError([&] { inference(proto, out, VirtualGraphMode::ExecutionPhases, 2); },
              {"virtualGraphMode = ExecutionPhases is not supported yet"});
}

TEST(VirtualGraphErrors, BuilderAndImportRefuseBadPlacement) {
  auto b = Builder::create();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "x");
  const TensorId y = b->aiOnnxOpset13().relu({x});
  expectError([&] { b->virtualGraph(y, -1); }, {"Builder::virtualGraph", "negative"});
  expectError([&] { b->getVirtualGraph(y); }, {"Builder::getVirtualGraph", "no __ipu_number"});
  expectError([&] { b->virtualGraph(x, 0); }, {"no node has all of {'x'} as outputs"});
  expectError([&] { b->virtualGraph("nope", 0); }, {"'nope' is not a tensor of this model"});
  expectError([&] { b->getVirtualGraph(); }, {"no virtualGraph scope is set"});
  b->setAttribute("__ipu_number", std::string("one"));
  expectError([&] { b->setAttribute("__ipu_number", int64_t{1}); }, {"is set already"});
  const TensorId z = b->aiOnnxOpset13().relu({y});
  b->clearAttribute("__ipu_number");
  EXPECT_FALSE(b->hasVirtualGraph());
  b->addOutputTensor(z);
  expectError([&] { inference(b->getModelProto(), z, VirtualGraphMode::Manual, 2); },
              {"attribute '__ipu_number' must be an INT"});
}

}  // namespace
}  // namespace xtrain::testing
