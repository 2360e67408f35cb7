// SessionOptions::enablePipelining (docs/pipelining.md): pipelined training reaches the weights,
// optimizer state and per-micro-batch losses of the same model trained unpipelined on the same
// global batch, bit for bit: 2 and 3 stages, accumulation factors 4 and 8, SGD with momentum and
// Adam, local replicas, replicated tensor sharding of the optimizer state, grouped weights,
// RecomputationType::Pipeline, stages from __pipeline_stage, from the
// virtual graphs or from VirtualGraphMode::Auto; a checkpoint of a pipelined job loads into an
// unpipelined one, and into jobs of other stage and replica counts. Then the stashes in the memory
// report and the IR, a stage failing on its thread, and each bad input's error.
#include <gtest/gtest.h>

#include <cmath>
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

constexpr int64_t kBatch = 2, kIn = 6, kHidden = 8, kOut = 4;

struct Model {
  std::string proto;
  TensorId x, labels, loss;
};

// How the three layers are placed: each layer's virtual graph (-1: none), and whether its pipeline
// stage is written too (__pipeline_stage = the virtual graph), else taken from the virtual graph.
struct Placing {
  std::vector<int64_t> layers{-1, -1, -1};
  bool stageAttributes = false;
  // h1 goes through a training-mode BatchNormalization in layer 0: its running statistics are
  // weights the forward pass reads and an update after it writes, every micro-batch.
  bool batchNorm = false;
  // W2 is grouped: each group of `groupedW2` consecutive replicas has its own value (0: not
  // grouped; the model is then for `groupedW2 * 2` replicas, two groups).
  int64_t groupedW2 = 0;
  // h1 W2 goes through a ReplicatedAllReduce (Mean) of the model's own, in layer 1; with
  // allReduceH1, h1 through another (Add), in layer 0.
  bool allReduce = false;
  bool allReduceH1 = false;
};

// x -> [layer 0] h1 = relu(x W1 + b1) -> [layer 1] h2 = dropout(sigmoid(h1 W2 + b2)) ->
// [layer 2] softmax cross-entropy of (h2 + h1) W3 + b3. h1 is read two layers on (a stash across
// more than one slot), and dropout draws per micro-batch.
Model buildModel(const Placing& p) {
  Model m;
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-0.6f, 0.6f);
  auto weight = [&](Shape s, const std::string& name) {
    std::vector<float> v(static_cast<size_t>(shapeNelms(s)));
    for (auto& e : v) e = u(rng);
    return b->addInitializedInputTensor(ConstVoidData::fromVector<float>(s, v), name);
  };
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {kBatch, kIn}), "x");
  m.labels = b->addInputTensor(TensorInfo(DataType::INT32, {kBatch}), "labels");
  const TensorId w1 = weight({kIn, kHidden}, "W1"), b1 = weight({kHidden}, "b1");
  TensorId w2;
  if (p.groupedW2 > 0) {
    std::vector<float> v(static_cast<size_t>(2 * kHidden * kHidden));
    for (auto& e : v) e = u(rng);
    w2 = b->addInitializedInputTensor(
        ConstVoidData::fromVector<float>({2, kHidden, kHidden}, v),
        VariableSettings(CommGroup(CommGroupType::Consecutive, p.groupedW2)), "W2");
  } else {
    w2 = weight({kHidden, kHidden}, "W2");
  }
  const TensorId b2 = weight({kHidden}, "b2");
  const TensorId w3 = weight({kHidden, kOut}, "W3"), b3 = weight({kOut}, "b3");
  auto unplace = [&] {
    if (b->hasAttribute("__ipu_number")) b->clearAttribute("__ipu_number");
    if (b->hasAttribute("__pipeline_stage")) b->clearAttribute("__pipeline_stage");
  };
  auto place = [&](size_t layer) {
    unplace();
    if (p.layers[layer] < 0) return;
    b->setAttribute("__ipu_number", p.layers[layer]);
    if (p.stageAttributes) b->setAttribute("__pipeline_stage", p.layers[layer]);
  };
  place(0);
  TensorId h1 = onnx.relu({onnx.add({onnx.matmul({m.x, w1}), b1})});
  if (p.batchNorm) {
    const TensorId scale = weight({kHidden}, "bn_scale"), bias = weight({kHidden}, "bn_bias");
    const TensorId mean = weight({kHidden}, "bn_mean");
    const TensorId var = b->addInitializedInputTensor(
        ConstVoidData::fromVector<float>({kHidden}, std::vector<float>(kHidden, 1.0f)), "bn_var");
    h1 = onnx.batchnormalization({h1, scale, bias, mean, var}, 5, 1e-5f, 0.7f)[0];
  }
  if (p.allReduceH1) h1 = b->aiGraphcoreOpset1().replicatedallreduce({h1});
  place(1);
  TensorId z2 = onnx.matmul({h1, w2});
  if (p.allReduce) z2 = b->aiGraphcoreOpset1().replicatedallreduce({z2}, CollectiveOperator::Mean);
  const TensorId h2 = onnx.dropout({onnx.sigmoid({onnx.add({z2, b2})})}, 1, 0.2f)[0];
  place(2);
  const TensorId logits = onnx.add({onnx.matmul({onnx.add({h2, h1}), w3}), b3});
  m.loss = onnx.softmaxcrossentropyloss({logits, m.labels}, 1, std::nullopt, "mean")[0];
  unplace();
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

struct PipelineRun {
  int64_t replicas = 1;
  int64_t af = 4;
  int64_t stages = 0;  // 0: unpipelined reference (virtualGraphMode Off)
  RecomputationType recompute = RecomputationType::None;
  bool shardOptimizerState = false;  // replicated tensor sharding of the optimizer state
};

std::shared_ptr<DeviceInfo> ipuModel(int64_t ipus) {
  return DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(ipus)}});
}

SessionOptions optionsOf(const PipelineRun& r) {
  SessionOptions o;
  o.enableReplicatedGraphs = r.replicas > 1;
  o.replicatedGraphCount = r.replicas;
  o.enableGradientAccumulation = true;
  o.accumulationFactor = r.af;
  o.autoRecomputation = r.recompute;
  if (r.shardOptimizerState) {
    o.optimizerStateTensorLocationSettings.location.replicatedTensorSharding =
        ReplicatedTensorSharding::On;
    o.optimizerStateTensorLocationSettings.minElementsForReplicatedTensorSharding = 10;
  }
  if (r.stages > 0) {
    o.virtualGraphMode = VirtualGraphMode::Manual;
    o.enablePipelining = true;
  }
  return o;
}

std::unique_ptr<TrainingSession> makeSession(const Model& m, const PipelineRun& r,
                                             const Optimizer& opt) {
  auto s = TrainingSession::createFromOnnxModel(
      m.proto, DataFlow(1, {m.loss}), m.loss, opt,
      ipuModel(r.replicas * std::max<int64_t>(1, r.stages)), {}, optionsOf(r));
  s->prepareDevice();
  s->weightsFromHost();
  return s;
}

// One step on data drawn from `seed`; returns each micro-batch's loss.
std::vector<float> runStep(TrainingSession& s, const Model& m, const PipelineRun& r,
                           unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(r.af * r.replicas * kBatch * kIn));
  std::vector<int32_t> y(static_cast<size_t>(r.af * r.replicas * kBatch));
  for (auto& v : x) v = normal(rng);
  for (auto& v : y) v = static_cast<int32_t>(rng() % kOut);
  std::vector<float> loss(static_cast<size_t>(r.af * r.replicas));
  NDArrayWrapper<float> xa(x.data(), s.expectedInputBufferShape(m.x));
  NDArrayWrapper<int32_t> ya(y.data(), s.expectedInputBufferShape(m.labels));
  NDArrayWrapper<float> la(loss.data(), {r.af, r.replicas});
  StepIO io({{m.x, xa}, {m.labels, ya}}, {{m.loss, la}});
  s.run(io);
  return loss;
}

// Trains `steps` steps (step k's data drawn from k); returns every micro-batch's loss and writes
// the model with its optimizer state to `path`.
std::vector<float> trainSession(TrainingSession& s, const Model& m, const PipelineRun& r,
                                const std::string& path, int steps = 3) {
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    const std::vector<float> loss = runStep(s, m, r, static_cast<unsigned>(500 + step));
    losses.insert(losses.end(), loss.begin(), loss.end());
  }
  s.modelToHost(path);
  return losses;
}

std::vector<float> train(const Model& m, const PipelineRun& r, const Optimizer& opt,
                         const std::string& path, int steps = 3) {
  auto s = makeSession(m, r, opt);
  return trainSession(*s, m, r, path, steps);
}

Placing stagesOf(int64_t stages, bool attributes = false) {
  Placing p;
  p.layers = stages == 2 ? std::vector<int64_t>{0, 1, 1} : std::vector<int64_t>{0, 1, 2};
  p.stageAttributes = attributes;
  return p;
}

std::shared_ptr<Optimizer> sgdMomentum() {
  return std::make_shared<ConstSGD>(0.05f, 0.01f, 0.9f);
}

std::shared_ptr<Optimizer> adam() {
  return std::make_shared<Adam>(
      std::map<std::string, std::pair<float, bool>>{{"defaultLearningRate", {0.01f, false}},
                                                    {"defaultWeightDecay", {0.01f, true}}},
      AdamMode::Adam);
}

using PipelineTraining = ScratchDirTest;

// Reference and pipelined run of one configuration: the same weights, optimizer state and losses.
void expectSameAsUnpipelined(const std::string& dir, const PipelineRun& pipelined,
                             const Placing& placing, const Optimizer& opt) {
  PipelineRun reference = pipelined;
  reference.stages = 0;
  reference.recompute = RecomputationType::None;
  const std::string a = dir + "-reference.onnx", b = dir + "-pipelined.onnx";
  Placing unplaced;
  unplaced.batchNorm = placing.batchNorm;
  unplaced.groupedW2 = placing.groupedW2;
  unplaced.allReduce = placing.allReduce;
  unplaced.allReduceH1 = placing.allReduceH1;
  const std::vector<float> expected = train(buildModel(unplaced), reference, opt, a);
  const std::vector<float> got = train(buildModel(placing), pipelined, opt, b);
  EXPECT_EQ(got, expected) << "the per-micro-batch losses differ";
  expectSameInitializers(a, b, 0);
}

TEST_F(PipelineTraining, TwoAndThreeStagesTrainToTheUnpipelinedWeightsBitForBit) {
  for (const auto& [name, opt] :
       {std::pair{std::string("sgd"), sgdMomentum()}, std::pair{std::string("adam"), adam()}}) {
    for (const auto& [stages, af] : {std::pair<int64_t, int64_t>{2, 4}, {2, 8}, {3, 8}}) {
      SCOPED_TRACE(name + ": " + std::to_string(stages) + " stages, af " + std::to_string(af));
      expectSameAsUnpipelined(path("run"), PipelineRun{1, af, stages}, stagesOf(stages), *opt);
    }
  }
}

TEST_F(PipelineTraining, StageAttributesLocalReplicasAndRecomputation) {
  {
    // The running statistics' update runs in its BatchNormalization's slot, so that the next
    // micro-batch reads it (in a later slot it was an internal error).
    SCOPED_TRACE("BatchNormalization's running statistics, 2 stages");
    Placing bn = stagesOf(2);
    bn.batchNorm = true;
    expectSameAsUnpipelined(path("run"), PipelineRun{1, 4, 2}, bn, *sgdMomentum());
  }
  {
    SCOPED_TRACE("__pipeline_stage, 2 local replicas");
    expectSameAsUnpipelined(path("run"), PipelineRun{2, 4, 2}, stagesOf(2, true), *sgdMomentum());
  }
  {
    SCOPED_TRACE("RecomputationType::Pipeline, 3 stages, 2 local replicas");
    expectSameAsUnpipelined(path("run"), PipelineRun{2, 8, 3, RecomputationType::Pipeline},
                            stagesOf(3), *adam());
  }
  {
    SCOPED_TRACE("replicated tensor sharding of Adam's state over 2 local replicas");
    PipelineRun sharded{2, 4, 2};
    sharded.shardOptimizerState = true;
    expectSameAsUnpipelined(path("run"), sharded, stagesOf(2), *adam());
  }
  {
    // The groups' gradients are reduced over their own replicas, after the flush.
    SCOPED_TRACE("W2 grouped over 2 groups of 2 of 4 local replicas, 2 stages");
    Placing grouped = stagesOf(2);
    grouped.groupedW2 = 2;
    expectSameAsUnpipelined(path("run"), PipelineRun{4, 4, 2}, grouped, *adam());
  }
  {
    // A collective of the model meets the other replicas' in its stage's slot.
    SCOPED_TRACE("a ReplicatedAllReduce in stage 1, 2 local replicas");
    Placing reduced = stagesOf(2);
    reduced.allReduce = true;
    expectSameAsUnpipelined(path("run"), PipelineRun{2, 4, 2}, reduced, *sgdMomentum());
    // Collectives on both IPUs: the stages of each replica then run in turn.
    reduced.allReduceH1 = true;
    expectSameAsUnpipelined(path("run"), PipelineRun{2, 4, 2}, reduced, *sgdMomentum());
  }
  {
    SCOPED_TRACE("RecomputationType::Pipeline, 2 stages");
    expectSameAsUnpipelined(path("run"), PipelineRun{1, 4, 2, RecomputationType::Pipeline},
                            stagesOf(2), *sgdMomentum());
  }
}

// VirtualGraphMode::Auto splits an unannotated model over the IPUs; each IPU is then a stage.
TEST_F(PipelineTraining, AutoSplitStagesTrainToTheSameWeights) {
  PipelineRun run{1, 4, 2};
  const Model plain = buildModel(Placing{});
  SessionOptions o = optionsOf(run);
  o.virtualGraphMode = VirtualGraphMode::Auto;
  auto s = TrainingSession::createFromOnnxModel(plain.proto, DataFlow(1, {plain.loss}), plain.loss,
                                                *sgdMomentum(), ipuModel(2), {}, o);
  s->prepareDevice();
  const auto report = nlohmann::json::parse(s->getReport());
  EXPECT_EQ(report["pipeline"]["stages"], 2);
  s.reset();
  // Trained end to end: the same weights and losses as unpipelined.
  PipelineRun reference = run;
  reference.stages = 0;
  const std::vector<float> expected = train(plain, reference, *sgdMomentum(), path("ref.onnx"));
  auto pipelined = TrainingSession::createFromOnnxModel(
      plain.proto, DataFlow(1, {plain.loss}), plain.loss, *sgdMomentum(), ipuModel(2), {}, o);
  pipelined->prepareDevice();
  pipelined->weightsFromHost();
  EXPECT_EQ(trainSession(*pipelined, plain, run, path("auto.onnx")), expected);
  expectSameInitializers(path("ref.onnx"), path("auto.onnx"), 0);
}

// A checkpoint of a pipelined job holds host tensors: it loads into an unpipelined job, and both
// train on to the same weights.
TEST_F(PipelineTraining, ACheckpointLoadsIntoAnUnpipelinedJob) {
  const PipelineRun pipelinedRun{1, 4, 2}, plainRun{1, 4, 0};
  const Model placed = buildModel(stagesOf(2)), plain = buildModel(Placing{});
  auto pipelined = makeSession(placed, pipelinedRun, *adam());
  runStep(*pipelined, placed, pipelinedRun, 900);
  runStep(*pipelined, placed, pipelinedRun, 901);
  pipelined->saveCheckpoint(path("ckpt"));
  auto unpipelined = makeSession(plain, plainRun, *adam());
  unpipelined->loadCheckpoint(path("ckpt"));
  for (unsigned k = 902; k < 904; ++k) {
    EXPECT_EQ(runStep(*pipelined, placed, pipelinedRun, k),
              runStep(*unpipelined, plain, plainRun, k));
  }
  pipelined->modelToHost(path("pipelined.onnx"));
  unpipelined->modelToHost(path("unpipelined.onnx"));
  expectSameInitializers(path("pipelined.onnx"), path("unpipelined.onnx"), 0);
}

// A checkpoint is independent of placement (issue 30, item 6): one written by a 2-stage pipelined
// job of one replica loads, to the same weights and optimizer state, into a 3-stage job of 2
// replicas and back; a 3-stage job of one replica resumed from it trains on as the 2-stage job.
TEST_F(PipelineTraining, ACheckpointMovesAcrossStageAndReplicaCounts) {
  const PipelineRun twoStages{1, 8, 2}, threeStages{1, 8, 3}, threeByTwo{2, 8, 3};
  const Model two = buildModel(stagesOf(2)), three = buildModel(stagesOf(3));
  auto a = makeSession(two, twoStages, *adam());
  runStep(*a, two, twoStages, 910);
  runStep(*a, two, twoStages, 911);
  a->saveCheckpoint(path("a"));
  a->modelToHost(path("a.onnx"));
  auto b = makeSession(three, threeByTwo, *adam());
  b->loadCheckpoint(path("a"));
  b->modelToHost(path("b.onnx"));
  expectSameInitializers(path("a.onnx"), path("b.onnx"), 0);
  runStep(*b, three, threeByTwo, 912);
  b->saveCheckpoint(path("b"));
  b->modelToHost(path("b2.onnx"));
  a->loadCheckpoint(path("b"));
  a->modelToHost(path("a2.onnx"));
  expectSameInitializers(path("b2.onnx"), path("a2.onnx"), 0);
  auto c = makeSession(three, threeStages, *adam());
  c->loadCheckpoint(path("b"));
  for (unsigned k = 913; k < 915; ++k) {
    EXPECT_EQ(runStep(*a, two, twoStages, k), runStep(*c, three, threeStages, k));
  }
  a->modelToHost(path("a3.onnx"));
  c->modelToHost(path("c3.onnx"));
  expectSameInitializers(path("a3.onnx"), path("c3.onnx"), 0);
}

TEST(PipelineMemory, EachIpuIsChargedItsStashes) {
  const Model m = buildModel(stagesOf(3));
  auto s = makeSession(m, PipelineRun{1, 8, 3}, *sgdMomentum());
  const auto r = nlohmann::json::parse(s->getReport());
  const auto& p = r["pipeline"];
  EXPECT_EQ(p["stages"], 3);
  EXPECT_EQ(p["slots"], 5);
  const auto stash = p["stashBytesPerIpu"].get<std::vector<uint64_t>>();
  ASSERT_EQ(stash.size(), 3u);
  // Stage 0's activations wait 4 slots for its backward, stage 1's 2; the last stage runs its
  // forward and backward in one slot: it stashes only what earlier stages hand it (h1 and the
  // dropout's output, copied to it: names ending _c2), and the labels stream straight to it.
  EXPECT_GT(stash[0], stash[1]);
  EXPECT_GT(stash[1], stash[2]);
  EXPECT_GT(stash[2], 0u);
  for (const auto& t : p["stashes"]) {
    if (t["virtualGraph"] == 2) {
      EXPECT_TRUE(t["tensor"].get<std::string>().ends_with("_c2")) << t.dump();
    }
  }
  // x is read by stage 0's forward (slot 0) and its backward (the gradient of W1, slot 4): a ring
  // of 4 - 0 + 1 (PopART's 2 x (IPUs to the end) + 1).
  std::map<std::string, int64_t> depth;
  for (const auto& t : p["stashes"]) depth[t["tensor"].get<std::string>()] = t["depth"];
  EXPECT_EQ(depth[m.x], 5) << p.dump();
  EXPECT_EQ(depth.count(m.labels), 0u) << p.dump();
  // serializeIr shows them as PopART's Stash and RestoreInplace ops (rings deeper than a handoff).
  const auto ir = nlohmann::json::parse(s->serializeIr(IrSerializationFormat::JSON));
  std::map<std::string, int> stashOps, restoreOps;
  for (const auto& op : ir["maingraph"]) {
    if (op["type"] == "Stash") ++stashOps[op["inputs"][0]["name"].get<std::string>()];
    if (op["type"] == "RestoreInplace") ++restoreOps[op["inputs"][0]["name"].get<std::string>()];
  }
  EXPECT_EQ(stashOps[m.x], 1);
  EXPECT_EQ(restoreOps[m.x], 1);  // slot 4 restores it; slot 0 reads it as streamed
  // The stashes are charged to the IPUs' activations.
  const auto& ipus = r["memory"]["ipus"];
  EXPECT_GE(ipus[0]["classes"]["Activations"].get<uint64_t>(), stash[0]);
  // The summary says so, and the simulated step overlaps the stages.
  std::vector<float> x(static_cast<size_t>(8 * kBatch * kIn), 0.5f);
  std::vector<int32_t> y(static_cast<size_t>(8 * kBatch), 1);
  NDArrayWrapper<float> xa(x.data(), s->expectedInputBufferShape(m.x));
  NDArrayWrapper<int32_t> ya(y.data(), s->expectedInputBufferShape(m.labels));
  std::vector<float> loss(8);
  NDArrayWrapper<float> la(loss.data(), {8});
  StepIO io({{m.x, xa}, {m.labels, ya}}, {{m.loss, la}});
  s->run(io);
  const auto after = nlohmann::json::parse(s->getReport())["pipeline"];
  EXPECT_LT(after["pipelinedCycles"].get<uint64_t>(), after["sequentialCycles"].get<uint64_t>());
  EXPECT_EQ(after["microBatches"], 8);
  const std::string summary = s->getSummaryReport();
  EXPECT_NE(summary.find("pipeline: 3 stages in 5 slots over 8 micro-batches a step (12 cycles"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("stash and restore traffic"), std::string::npos) << summary;
}

// A kernel failing on a stage's thread (a NaN caught by enableFloatingPointChecks, in micro-batch 2
// while the other stage runs micro-batch 1) ends run() with the op's error on the caller's thread,
// once the other stage finished its cycle; the session goes away without waiting on anything.
TEST(PipelineThreads, AStageThatFailsEndsTheRunWithItsError) {
  const Model m = buildModel(stagesOf(2));
  SessionOptions o = optionsOf(PipelineRun{1, 4, 2});
  o.enableFloatingPointChecks = true;
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, *sgdMomentum(),
                                                ipuModel(2), {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  std::vector<float> x(static_cast<size_t>(4 * kBatch * kIn), 0.5f);
  x[static_cast<size_t>(2 * kBatch * kIn)] = std::nanf("");
  std::vector<int32_t> y(static_cast<size_t>(4 * kBatch), 1);
  NDArrayWrapper<float> xa(x.data(), s->expectedInputBufferShape(m.x));
  NDArrayWrapper<int32_t> ya(y.data(), s->expectedInputBufferShape(m.labels));
  StepIO io({{m.x, xa}, {m.labels, ya}}, {});
  const std::string what = errorOf([&] { s->run(io); });
  EXPECT_NE(what.find("MatMul"), std::string::npos) << what;
  EXPECT_NE(what.find("nan at element"), std::string::npos) << what;
  s.reset();
}

// ---- bad input

std::string errorCreating(const Model& m, const SessionOptions& o, int64_t ipus = 2) {
  return errorOf([&] {
    auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, ConstSGD(0.1f),
                                                  ipuModel(ipus), {}, o);
    s->prepareDevice();
  });
}

TEST(PipelineErrors, OptionsThatCannotPipeline) {
  const Model m = buildModel(stagesOf(2));
  SessionOptions o = optionsOf(PipelineRun{1, 4, 2});
  o.enableGradientAccumulation = false;
  o.accumulationFactor = 1;
  EXPECT_NE(errorCreating(m, o).find("enablePipelining in a training session requires "
                                     "enableGradientAccumulation = true"),
            std::string::npos);
  o = optionsOf(PipelineRun{1, 2, 2});
  const std::string depth = errorCreating(m, o);
  EXPECT_NE(depth.find("For pipelining, depth (gradient accumulation factor) must equal at least "
                       "the number of pipeline stages (3)"),
            std::string::npos)
      << depth;
  EXPECT_NE(depth.find("set accumulationFactor >= 3"), std::string::npos) << depth;
  o = optionsOf(PipelineRun{1, 4, 2});
  o.virtualGraphMode = VirtualGraphMode::Off;
  EXPECT_NE(errorCreating(m, o).find("Pipelining requires more than 1 IPU (currently 1) and the "
                                     "'virtualGraphMode' session option to not be "
                                     "VirtualGraphMode::Off (currently Off)"),
            std::string::npos);
  o = optionsOf(PipelineRun{1, 4, 2});
  o.enableGradientAccumulation = false;
  o.accumulationFactor = 1;
  o.automaticLossScalingSettings.enabled = true;
  const std::string als = errorCreating(m, o);
  EXPECT_NE(als.find("Automatic loss scaling is not currently supported when the "
                     "'enablePipelining' SessionOption is set to 'true', but the "
                     "'enableGradientAccumulation' SessionOption is set to 'false'"),
            std::string::npos)
      << als;
  o = optionsOf(PipelineRun{1, 4, 2});
  o.enablePipelining = false;
  o.autoRecomputation = RecomputationType::Pipeline;
  EXPECT_NE(errorCreating(m, o).find("autoRecomputation = Pipeline recomputes each pipeline "
                                     "stage's forward pass, but enablePipelining is false"),
            std::string::npos);
  // createImplicitPipeliningFwdOnlyProgram: PopART's three refusals, in its order.
  const std::string fwdOnly = "Implicit pipelining forward-only program is not supported ";
  o = optionsOf(PipelineRun{1, 4, 2});
  o.createImplicitPipeliningFwdOnlyProgram = true;
  o.enableExplicitIR(true);
  EXPECT_EQ(errorCreating(m, o).rfind(fwdOnly + "with explicit pipelining.", 0), 0u);
  o.enableExplicitIR(false);
  o.enablePipelining = false;
  EXPECT_EQ(errorCreating(m, o).rfind(fwdOnly + "without implicit pipelining.", 0), 0u);
  o.enablePipelining = true;
  o.enableGradientAccumulation = false;
  o.accumulationFactor = 1;
  EXPECT_EQ(errorCreating(m, o).rfind(fwdOnly + "without gradient accumulation.", 0), 0u);
}

TEST(PipelineErrors, StagesAgainstTheDataFlowOrMixed) {
  Placing backwards = stagesOf(2, true);
  backwards.layers = {1, 0, 0};  // layer 0 in stage 1 feeds layers 1 and 2 in stage 0
  const std::string against = errorCreating(buildModel(backwards), optionsOf(PipelineRun{1, 4, 2}));
  EXPECT_NE(against.find("in the later pipeline stage 1"), std::string::npos) << against;
  EXPECT_NE(against.find("a later stage feeding an earlier one"), std::string::npos) << against;

  // Stages on some ops only: every op placed on a virtual graph, a stage on the first layer's.
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "x");
  b->setAttribute("__ipu_number", int64_t{0});
  b->setAttribute("__pipeline_stage", int64_t{0});
  const TensorId a = onnx.relu({x}, "staged");
  b->clearAttribute("__pipeline_stage");
  b->clearAttribute("__ipu_number");
  b->setAttribute("__ipu_number", int64_t{1});
  const TensorId c = onnx.sigmoid({a}, "unstaged");
  b->clearAttribute("__ipu_number");
  b->addOutputTensor(c);
  SessionOptions o;
  o.virtualGraphMode = VirtualGraphMode::Manual;
  o.enablePipelining = true;
  const std::string mixed = errorOf([&] {
    InferenceSession::createFromOnnxModel(b->getModelProto(), DataFlow(4, {c}), ipuModel(2), {}, o);
  });
  EXPECT_NE(mixed.find("Only some ops have had their pipeline stage set. Ops missing the pipeline "
                       "stage:"),
            std::string::npos)
      << mixed;
  EXPECT_NE(mixed.find("Sigmoid 'unstaged'"), std::string::npos) << mixed;

  // One stage over two virtual graphs.
  auto spread = Builder::create();
  auto ops = spread->aiOnnxOpset13();
  const TensorId in = spread->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "in");
  spread->setAttribute("__pipeline_stage", int64_t{0});
  spread->setAttribute("__ipu_number", int64_t{0});
  const TensorId r = ops.relu({in}, "first");
  spread->clearAttribute("__ipu_number");
  spread->setAttribute("__ipu_number", int64_t{1});
  const TensorId t = ops.sigmoid({r}, "second");
  spread->clearAttribute("__ipu_number");
  spread->clearAttribute("__pipeline_stage");
  spread->addOutputTensor(t);
  const std::string split = errorOf([&] {
    InferenceSession::createFromOnnxModel(spread->getModelProto(), DataFlow(4, {t}), ipuModel(2),
                                          {}, o);
  });
  EXPECT_NE(split.find("have the same pipeline stage 0, but different virtual graph ids [0, 1]"),
            std::string::npos)
      << split;
  EXPECT_NE(split.find("Sigmoid 'second' (ai.onnx opset 13) on virtual graph 1"), std::string::npos)
      << split;
}

}  // namespace
}  // namespace xtrain::testing
