// SessionOptions: every member of PopART's API reference is in xtrain's option table (its tables
// in docs/session-options.md: session_options_doc_test.cpp), refused members and bad values are
// errors at session creation naming the member, members with no effect are logged once at debug
// level, and the members that take effect do: enableFloatingPointChecks, compileEngine,
// compilationProgressLogger, partialsTypeMatMuls, ensureFp32LossScaleTensor, enableExplicitIR.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "session/option_table.hpp"
#include "testing/error_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/session_log.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/session.hpp"
#include "xtrain/stepio.hpp"

namespace xtrain::testing {
namespace {

using session::OptionState;
using session::sessionOptionTable;

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SessionOptionsTable, HasEveryMemberOfTheApiReference) {
  // class popart.SessionOptions of popart-python-api.txt: its 81 properties and enableExplicitIR.
  const std::vector<std::string> reference = {"accumulateOuterFragmentSettings",
                                              "accumulationAndReplicationReductionType",
                                              "accumulationFactor",
                                              "accumulatorTensorLocationSettings",
                                              "activationTensorLocationSettings",
                                              "aliasZeroCopy",
                                              "autoRecomputation",
                                              "batchSerializationSettings",
                                              "cachePath",
                                              "compileEngine",
                                              "constantWeights",
                                              "createImplicitPipeliningFwdOnlyProgram",
                                              "customCodeletCompileFlags",
                                              "customCodelets",
                                              "decomposeGradSum",
                                              "delayVarUpdates",
                                              "disableGradAccumulationTensorStreams",
                                              "disableOptimizerStateTensorStreams",
                                              "dotChecks",
                                              "dotOpNames",
                                              "enableConstantFoldingOfMultipleConsumers",
                                              "enableDistributedReplicatedGraphs",
                                              "enableEfficientOverlapIOTopoCons",
                                              "enableEngineCaching",
                                              "enableExplicitMainLoops",
                                              "enableFloatingPointChecks",
                                              "enableFullyConnectedPass",
                                              "enableGradientAccumulation",
                                              "enableLoadAndOffloadRNGState",
                                              "enableMergeExchange",
                                              "enableNonStableSoftmax",
                                              "enableOutlining",
                                              "enableOutliningCopyCostPruning",
                                              "enablePipelining",
                                              "enableReplicatedGraphs",
                                              "enableStableNorm",
                                              "enableStochasticRounding",
                                              "enableSupportedDataTypeCasting",
                                              "enableVariablesCaching",
                                              "ensureFp32LossScaleTensor",
                                              "executionPhaseSettings",
                                              "explicitRecomputation",
                                              "exportPoplarComputationGraph",
                                              "exportPoplarVertexGraph",
                                              "finalDotOp",
                                              "firstDotOp",
                                              "globalReplicaOffset",
                                              "globalReplicationFactor",
                                              "groupHostSync",
                                              "instrumentWithHardwareCycleCounter",
                                              "kahnTieBreaker",
                                              "logDir",
                                              "meanAccumulationAndReplicationReductionStrategy",
                                              "mergeVarUpdate",
                                              "mergeVarUpdateMemThreshold",
                                              "numIOTiles",
                                              "optimizerStateTensorLocationSettings",
                                              "opxAliasChecking",
                                              "opxModifyChecking",
                                              "outlineSequenceBreakCost",
                                              "outlineThreshold",
                                              "partialsTypeMatMuls",
                                              "rearrangeAnchorsOnHost",
                                              "rearrangeStreamsOnHost",
                                              "replicatedGraphCount",
                                              "separateCallOpPdfs",
                                              "serializedPoprithmsAnnealGraphsDir",
                                              "serializedPoprithmsShiftGraphsDir",
                                              "stashAllTensorsInferencePipeline",
                                              "strictOpVersions",
                                              "subgraphCopyingStrategy",
                                              "swapLimitScheduler",
                                              "syntheticDataMode",
                                              "throwIfLog2ScaleTensorNotInRange",
                                              "timeLimitScheduler",
                                              "updatableNamedBuffers",
                                              "useHostCopyOps",
                                              "useLoopCandidateCreator",
                                              "virtualGraphMode",
                                              "virtualGraphSplitRatios",
                                              "weightTensorLocationSettings",
                                              "enableExplicitIR"};
  std::set<std::string> table;
  for (const auto& e : sessionOptionTable()) {
    EXPECT_TRUE(table.insert(e.name).second) << e.name << " is in the table twice";
    EXPECT_FALSE(e.reason.empty()) << e.name;
  }
  EXPECT_EQ(reference.size(), 82u);
  for (const auto& name : reference) EXPECT_TRUE(table.count(name)) << name;
}

TEST(SessionOptionsTable, DefaultOptionsHoldEveryDefault) {
  const SessionOptions defaults;
  for (const auto& e : sessionOptionTable()) EXPECT_TRUE(e.isDefault(defaults)) << e.name;
  SessionOptions changed;
  changed.outlineThreshold = 2.0f;
  changed.batchSerializationSettings.factor = 4;
  for (const auto& e : sessionOptionTable()) {
    const bool expectChanged =
        e.name == "outlineThreshold" || e.name == "batchSerializationSettings";
    EXPECT_EQ(e.isDefault(changed), !expectChanged) << e.name;
  }
}

// x [2, 3] -> y = log(x) -> out = y * 2 (an inference model; a zero in x makes -inf).
struct LogModel {
  std::string proto;
  TensorId x, y, out;
};

LogModel buildLogModel() {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  LogModel m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2, 3}), "x");
  m.y = onnx.log({m.x}, "logOfX");
  auto two = b->addInitializedInputTensor(ConstVoidData::fromVector<float>({1}, {2.0f}), "two");
  m.out = onnx.mul({m.y, two}, "twice");
  b->addOutputTensor(m.out);
  m.proto = b->getModelProto();
  return m;
}

std::unique_ptr<InferenceSession> logSession(const LogModel& m, const SessionOptions& options) {
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", "1"}});
  return InferenceSession::createFromOnnxModel(m.proto, DataFlow(1, std::vector<TensorId>{m.out}),
                                               device, {}, options);
}

// Runs one step on x and returns the anchor.
std::vector<float> runLog(InferenceSession& s, const LogModel& m, std::vector<float> x) {
  std::vector<float> out(6, 0.0f);
  NDArrayWrapper<float> xa(x.data(), Shape{2, 3});
  NDArrayWrapper<float> oa(out.data(), Shape{2, 3});
  StepIO io({{m.x, xa}}, {{m.out, oa}});
  s.run(io);
  return out;
}

TEST(SessionOptionsEffect, FloatingPointChecksNameTheOpAndTheTensor) {
  const LogModel m = buildLogModel();
  {
    // Off (the default): -inf flows through.
    auto s = logSession(m, {});
    s->prepareDevice();
    const auto out = runLog(*s, m, {1, 1, 0, 1, 1, 1});
    EXPECT_TRUE(std::isinf(out[2]) && out[2] < 0);
  }
  SessionOptions o;
  o.enableFloatingPointChecks = true;
  auto s = logSession(m, o);
  s->prepareDevice();
  const auto fine = runLog(*s, m, {1, 1, 1, 1, 1, 1});
  EXPECT_EQ(fine[0], 0.0f);
  try {
    runLog(*s, m, {1, 1, 0, 1, 1, 1});
    ADD_FAILURE() << "expected a runtime_error";
  } catch (const runtime_error& e) {
    const std::string what = e.what();
    EXPECT_CONTAINS(what, "Log");
    EXPECT_CONTAINS(what, "'" + m.y + "'");
    EXPECT_CONTAINS(what, "inf at element 2");
    EXPECT_CONTAINS(what, "enableFloatingPointChecks");
  }
  try {
    runLog(*s, m, {1, -1, 1, 1, 1, 1});
    ADD_FAILURE() << "expected a runtime_error";
  } catch (const runtime_error& e) {
    EXPECT_CONTAINS(std::string(e.what()), "nan at element 1");
  }
}

TEST(SessionOptionsEffect, CompileEngineFalsePreparesButDoesNotRun) {
  const LogModel m = buildLogModel();
  SessionOptions o;
  o.compileEngine = false;
  auto s = logSession(m, o);
  s->prepareDevice();
  expectError([&] { runLog(*s, m, {1, 1, 1, 1, 1, 1}); }, {"compileEngine = false", "run"});
}

TEST(SessionOptionsEffect, CompilationProgressLoggerSeesTheStartAndTheEnd) {
  const LogModel m = buildLogModel();
  SessionOptions o;
  std::vector<std::pair<int, int>> calls;
  o.compilationProgressLogger = [&calls](int progress, int total) {
    calls.emplace_back(progress, total);
  };
  o.compilationProgressTotal = 7;
  auto s = logSession(m, o);
  EXPECT_TRUE(calls.empty());
  s->prepareDevice();
  EXPECT_EQ(calls, (std::vector<std::pair<int, int>>{{0, 7}, {7, 7}}));
  o.compilationProgressTotal = 0;
  expectError([&] { logSession(m, o); }, {"compilationProgressTotal = 0", ">= 1"});
}

TEST(SessionOptionsEffect, PartialsTypeMatMuls) {
  const LogModel m = buildLogModel();
  SessionOptions o;
  // "half" is honoured by FLOAT16 matmuls (tests/ops/matmul_half_partials_test.cpp); this FLOAT
  // model ignores it, as Poplar does.
  for (const char* ok : {"", "float", "FLOAT", "half", "Half"}) {
    o.partialsTypeMatMuls = ok;
    logSession(m, o);
  }
  o.partialsTypeMatMuls = "double";
  expectError([&] { logSession(m, o); },
              {"partialsTypeMatMuls = \"double\"", "expected \"float\" or \"half\""});
}

// x [2, 4] -> logits = x W -> loss = mean(logits), cast to lossType unless FLOAT.
std::unique_ptr<TrainingSession> linearSession(const std::string& lossType,
                                               const SessionOptions& o) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  auto x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2, 4}), "x");
  auto w = b->addInitializedInputTensor(
      ConstVoidData::fromVector<float>({4, 2}, std::vector<float>(8, 0.5f)), "W");
  auto loss = onnx.reducemean({onnx.matmul({x, w})}, {}, 0);
  if (lossType != "FLOAT") loss = onnx.cast({loss}, lossType, "loss16");
  b->addOutputTensor(loss);
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", "1"}});
  return TrainingSession::createFromOnnxModel(
      b->getModelProto(), DataFlow(1, std::vector<TensorId>{loss}), loss, SGD(), device, {}, o);
}

TEST(SessionOptionsEffect, EnsureFp32LossScaleTensor) {
  SessionOptions o;
  o.ensureFp32LossScaleTensor = true;
  linearSession("FLOAT", o);  // the scale is FLOAT already
  expectError([&] { linearSession("FLOAT16", o); },
              {"ensureFp32LossScaleTensor = true", "not implemented", "FLOAT16 loss"});
  o.ensureFp32LossScaleTensor = false;
  linearSession("FLOAT16", o);
}

TEST(SessionOptionsEffect, EnableExplicitIRSetsItsThreeMembers) {
  SessionOptions o;
  o.enableExplicitIR(true);
  EXPECT_TRUE(o.useHostCopyOps && o.enableExplicitMainLoops && o.explicitRecomputation);
  // All three have no effect, so the session builds.
  logSession(buildLogModel(), o);
  o.enableExplicitIR(false);
  EXPECT_FALSE(o.useHostCopyOps || o.enableExplicitMainLoops || o.explicitRecomputation);
}

TEST(SessionOptionsRefused, ANonDefaultValueOfARefusedMemberIsAnError) {
  const LogModel m = buildLogModel();
  struct Case {
    std::function<void(SessionOptions&)> set;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {[](SessionOptions& o) { o.autoRecomputation = RecomputationType::Pipeline; },
       {"SessionOptions.autoRecomputation = Pipeline", "enablePipelining is false"}},
      {[](SessionOptions& o) { o.customCodelets = {"codelet.cpp"}; },
       {"SessionOptions.customCodelets = [\"codelet.cpp\"]", "Builder::customOp"}},
      {[](SessionOptions& o) { o.exportPoplarComputationGraph = true; },
       {"SessionOptions.exportPoplarComputationGraph = true", "no Poplar graph"}},
  };
  for (const auto& c : cases) {
    SessionOptions o;
    c.set(o);
    expectError([&] { logSession(m, o); }, c.parts);
  }
  // Batch serialization with a factor of 1 serializes nothing: accepted.
  SessionOptions one;
  one.batchSerializationSettings.factor = 1;
  one.batchSerializationSettings.method = BatchSerializationMethod::Loop;
  logSession(m, one);
}

using DotChecks = ScratchDirTest;

TEST_F(DotChecks, TheGraphIsWrittenAtEachCheckAsked) {
  const LogModel m = buildLogModel();
  SessionOptions o;
  o.logDir = path("dots");
  o.dotChecks = {"Fwd0", "Final"};
  logSession(m, o);
  EXPECT_EQ(readFile(o.logDir + "/Final.dot").find("logOfX\\n"), std::string::npos);
  const std::string fwd0 = readFile(o.logDir + "/Fwd0.dot");
  EXPECT_CONTAINS(fwd0, "digraph \"Fwd0\" {");
  EXPECT_CONTAINS(fwd0, "[shape=box, label=\"0 Log\"]");
  EXPECT_CONTAINS(fwd0, "[shape=box, label=\"1 Mul\"]");
  EXPECT_CONTAINS(fwd0, "\"" + m.x + "\" -> op");
  EXPECT_TRUE(std::filesystem::exists(o.logDir + "/Final.dot"));
  EXPECT_FALSE(std::filesystem::exists(o.logDir + "/Fwd1.dot"));

  // Ops [1, 2) of the schedule only; "All" writes every check.
  o.logDir = path("range");
  o.dotChecks = {"All"};
  o.firstDotOp = 1;
  o.finalDotOp = 2;
  o.dotOpNames = true;
  logSession(m, o);
  const std::string final = readFile(o.logDir + "/Final.dot");
  EXPECT_CONTAINS(final, "label=\"1 Mul\\ntwice\"");
  EXPECT_EQ(final.find(" Log\""), std::string::npos) << final;
  for (const char* check : {"Fwd0", "Fwd1", "PreAlias"}) {
    EXPECT_TRUE(std::filesystem::exists(o.logDir + "/" + check + ".dot")) << check;
  }
  // Bwd0 is the training graph's.
  EXPECT_FALSE(std::filesystem::exists(o.logDir + "/Bwd0.dot"));
  SessionOptions t;
  t.logDir = path("training");
  t.dotChecks = {"Fwd1", "Bwd0"};
  linearSession("FLOAT", t);
  const std::string fwd1 = readFile(t.logDir + "/Fwd1.dot");
  const std::string bwd0 = readFile(t.logDir + "/Bwd0.dot");
  auto ops = [](const std::string& dot) {
    size_t n = 0;
    for (auto p = dot.find("shape=box"); p != std::string::npos; p = dot.find("shape=box", p + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(ops(fwd1), 2u) << fwd1;         // MatMul, ReduceMean
  EXPECT_GT(ops(bwd0), ops(fwd1)) << bwd0;  // with the backward pass and the update
  EXPECT_CONTAINS(bwd0, "MatMul");
}

TEST_F(DotChecks, BadChecksAreErrors) {
  const LogModel m = buildLogModel();
  SessionOptions o;
  o.logDir = path("dots");
  o.dotChecks = {"Fwd2"};
  expectError([&] { logSession(m, o); }, {"dotChecks", "unknown check \"Fwd2\"", "Final"});
  o.dotChecks = {"Final"};
  o.logDir = "";
  expectError([&] { logSession(m, o); }, {"dotChecks", "logDir is empty"});
  const std::string file = path("a-file");
  std::ofstream(file) << "x";
  o.logDir = file + "/sub";
  expectError([&] { logSession(m, o); }, {"cannot write", "Final.dot"});
}

// Debug lines of the session module go to a file of this test while it runs.
class SessionOptionsLog : public SessionLogTest {
 protected:
  static size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
  }
};

TEST_F(SessionOptionsLog, AMemberWithNoEffectIsLoggedOncePerSession) {
  const LogModel m = buildLogModel();
  SessionOptions o;
  o.outlineThreshold = 2.5f;
  o.kahnTieBreaker = "fifo";
  o.enableStableNorm = true;
  auto s = logSession(m, o);
  s->prepareDevice();
  runLog(*s, m, {1, 1, 1, 1, 1, 1});
  runLog(*s, m, {1, 1, 1, 1, 1, 1});
  const std::string text = logText();
  EXPECT_EQ(count(text,
                  "SessionOptions.outlineThreshold = 2.5 has no effect on a simulated IPU: "
                  "outlining shares Poplar code"),
            1u)
      << text;
  EXPECT_EQ(count(text,
                  "SessionOptions.kahnTieBreaker = \"fifo\" has no effect on a simulated "
                  "IPU: it steers Poplar's scheduler"),
            1u)
      << text;
  EXPECT_EQ(count(text, "SessionOptions.enableStableNorm = true has no effect"), 1u) << text;
  // Members left at their defaults, and honoured ones, are not logged.
  EXPECT_EQ(count(text, "SessionOptions.enableOutlining"), 0u) << text;
  EXPECT_EQ(count(text, "has no effect"), 3u) << text;
  // A second session logs its own.
  logSession(m, o);
  EXPECT_EQ(count(logText(), "SessionOptions.outlineThreshold = 2.5 has no effect"), 2u);
}

}  // namespace
}  // namespace xtrain::testing
