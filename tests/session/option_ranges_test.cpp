// The ranges of SessionOptions' numeric members (docs/session-options.md, "Ranges"): a value
// outside its member's range is an xtrain::error at session creation naming the member, the value
// and the range, whether the member takes effect or not (issue 27: globalReplicaOffset = -1,
// numIOTiles = -1 and negative minElementsFor* were accepted). The ends of each range are accepted.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "testing/error_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

// x [2, 3] -> exp(x) -> out: a training session needs more than the options give here.
std::string expModel(TensorId& out) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2, 3}), "x");
  out = onnx.exp({x});
  b->addOutputTensor(out);
  return b->getModelProto();
}

// An inference session on an IPU model of 1472 tiles per IPU.
void makeSession(const SessionOptions& options) {
  TensorId out;
  const std::string model = expModel(out);
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", "1"}});
  InferenceSession::createFromOnnxModel(model, DataFlow(1, std::vector<TensorId>{out}), device, {},
                                        options);
}

struct Case {
  std::function<void(SessionOptions&)> set;
  std::string member, value, expected;
};

// Each case alone on default options: the session is refused with
// "SessionOptions.<member> = <value> is out of range: expected <expected>".
void expectRefused(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.member + " = " + c.value);
    SessionOptions o;
    c.set(o);
    expectError([&] { makeSession(o); }, {"SessionOptions." + c.member + " = " + c.value +
                                          " is out of range: expected " + c.expected});
  }
}

const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(OptionRanges, Replication) {
  expectRefused({
      {[](auto& o) { o.replicatedGraphCount = 0; }, "replicatedGraphCount", "0", ">= 1"},
      {[](auto& o) { o.replicatedGraphCount = -2; }, "replicatedGraphCount", "-2", ">= 1"},
      {[](auto& o) { o.globalReplicationFactor = 0; }, "globalReplicationFactor", "0", ">= 1"},
      {[](auto& o) { o.globalReplicaOffset = -1; }, "globalReplicaOffset", "-1",
       "0 <= globalReplicaOffset < globalReplicationFactor (1)"},
      {[](auto& o) { o.globalReplicaOffset = 1; }, "globalReplicaOffset", "1",
       "0 <= globalReplicaOffset < globalReplicationFactor (1)"},
      {[](auto& o) { o.accumulationFactor = 0; }, "accumulationFactor", "0", ">= 1"},
      {[](auto& o) { o.accumulationFactor = -4; }, "accumulationFactor", "-4", ">= 1"},
  });
}

TEST(OptionRanges, TensorLocationSettings) {
  std::vector<Case> cases;
  for (const auto& [kind, member] :
       std::vector<std::pair<std::string, TensorLocationSettings SessionOptions::*>>{
           {"activationTensorLocationSettings", &SessionOptions::activationTensorLocationSettings},
           {"weightTensorLocationSettings", &SessionOptions::weightTensorLocationSettings},
           {"optimizerStateTensorLocationSettings",
            &SessionOptions::optimizerStateTensorLocationSettings},
           {"accumulatorTensorLocationSettings",
            &SessionOptions::accumulatorTensorLocationSettings}}) {
    const auto m = member;
    cases.push_back({[m](auto& o) { (o.*m).minElementsForOffChip = -1; },
                     kind + ".minElementsForOffChip", "-1", ">= 0"});
    cases.push_back({[m](auto& o) { (o.*m).minElementsForReplicatedTensorSharding = -8192; },
                     kind + ".minElementsForReplicatedTensorSharding", "-8192", ">= 0"});
  }
  expectRefused(cases);
}

// binEdgeLocation and thresholdUpperCountProportion are checked, with PopART's messages, when
// automatic loss scaling is on (tests/session/histogram_loss_scaling_test.cpp).
TEST(OptionRanges, AutomaticLossScalingSettings) {
  const std::string als = "automaticLossScalingSettings.";
  expectRefused({
      {[](auto& o) { o.automaticLossScalingSettings.updatePeriod = 0; }, als + "updatePeriod", "0",
       ">= 1"},
      {[](auto& o) { o.automaticLossScalingSettings.growthInterval = -1; }, als + "growthInterval",
       "-1", ">= 1"},
      {[](auto& o) { o.automaticLossScalingSettings.growthFactor = 0.5f; }, als + "growthFactor",
       "0.5", ">= 1"},
      {[](auto& o) { o.automaticLossScalingSettings.backoffFactor = 1.0f; }, als + "backoffFactor",
       "1", "a factor in (0, 1)"},
      {[](auto& o) { o.automaticLossScalingSettings.backoffFactor = 0.0f; }, als + "backoffFactor",
       "0", "a factor in (0, 1)"},
  });
}

TEST(OptionRanges, ModelParallelismSettings) {
  expectRefused({
      {[](auto& o) {
         o.virtualGraphSplitRatios = {0.5f, 1.0f};
       },
       "virtualGraphSplitRatios[1]", "1", "a ratio in (0, 1)"},
      {[](auto& o) { o.executionPhaseSettings.phases = -1; }, "executionPhaseSettings.phases", "-1",
       ">= 0"},
      {[](auto& o) { o.executionPhaseSettings.stages = 0; }, "executionPhaseSettings.stages", "0",
       "1 (parallel streaming memory) or 2"},
      {[](auto& o) { o.executionPhaseSettings.stages = 3; }, "executionPhaseSettings.stages", "3",
       "1 (parallel streaming memory) or 2"},
      {[](auto& o) {
         o.accumulateOuterFragmentSettings.excludedVirtualGraphs = {0, -1};
       },
       "accumulateOuterFragmentSettings.excludedVirtualGraphs[1]", "-1", ">= 0"},
      {[](auto& o) { o.batchSerializationSettings.factor = -1; },
       "batchSerializationSettings.factor", "-1", ">= 0"},
  });
}

TEST(OptionRanges, SchedulerOutliningAndVarUpdates) {
  expectRefused({
      {[](auto& o) { o.outlineThreshold = kNan; }, "outlineThreshold", "nan", "a number (not NaN)"},
      {[](auto& o) { o.outlineSequenceBreakCost = kNan; }, "outlineSequenceBreakCost", "nan",
       "a number (not NaN)"},
      {[](auto& o) { o.mergeVarUpdateMemThreshold = -1; }, "mergeVarUpdateMemThreshold", "-1",
       ">= 0"},
      {[](auto& o) { o.looseThresholdAtPeak = -8000; }, "looseThresholdAtPeak", "-8000", ">= 0"},
      {[](auto& o) { o.timeLimitScheduler = -1.0; }, "timeLimitScheduler", "-1", ">= 0"},
      {[](auto& o) { o.timeLimitScheduler = std::nan(""); }, "timeLimitScheduler", "nan", ">= 0"},
      {[](auto& o) { o.developerSettings.timePartitionLoggerThresholdPercentage = 101.0; },
       "developerSettings.timePartitionLoggerThresholdPercentage", "101",
       "a percentage in [0, 100]"},
      {[](auto& o) { o.compilationProgressTotal = 0; }, "compilationProgressTotal", "0", ">= 1"},
  });
}

TEST(OptionRanges, BufferingDepthsAndIoTiles) {
  const std::string ioTiles =
      "0 (no IO tiles) or an even number >= 32 and below the device's 1472 tiles per IPU";
  expectRefused({
      {[](auto& o) { o.defaultBufferingDepth = 0; }, "defaultBufferingDepth", "0", ">= 1"},
      {[](auto& o) { o.defaultPrefetchBufferingDepth = 0; }, "defaultPrefetchBufferingDepth", "0",
       ">= 1"},
      {[](auto& o) {
         o.bufferingDepthMap = {{"x", 2}, {"y", 0}};
       },
       "bufferingDepthMap[\"y\"]", "0", ">= 1"},
      {[](auto& o) {
         o.prefetchBufferingDepthMap = {{"x", 0}};
       },
       "prefetchBufferingDepthMap[\"x\"]", "0", ">= 1"},
      {[](auto& o) { o.numIOTiles = -1; }, "numIOTiles", "-1", ioTiles},
      {[](auto& o) { o.numIOTiles = 16; }, "numIOTiles", "16", ioTiles},
      {[](auto& o) { o.numIOTiles = 33; }, "numIOTiles", "33", ioTiles},
      {[](auto& o) { o.numIOTiles = 1472; }, "numIOTiles", "1472", ioTiles},
  });
}

TEST(OptionRanges, TheEndsOfEachRangeAreAccepted) {
  SessionOptions o;
  o.globalReplicationFactor = 1;
  o.globalReplicaOffset = 0;
  for (auto* s : {&o.activationTensorLocationSettings, &o.weightTensorLocationSettings,
                  &o.optimizerStateTensorLocationSettings, &o.accumulatorTensorLocationSettings}) {
    s->minElementsForOffChip = 0;
    s->minElementsForReplicatedTensorSharding = 0;
  }
  auto& als = o.automaticLossScalingSettings;
  als.binEdgeLocation = 1.0f;
  als.thresholdUpperCountProportion = 0.0f;
  als.updatePeriod = 1;
  als.growthInterval = 1;
  als.growthFactor = 1.0f;
  als.backoffFactor = 0.01f;
  o.virtualGraphSplitRatios = {0.25f, 0.75f};
  o.executionPhaseSettings.phases = 0;
  o.executionPhaseSettings.stages = 1;
  o.accumulateOuterFragmentSettings.excludedVirtualGraphs = {0};
  o.outlineThreshold = -kInf;  // PopART: negative outlines everything
  o.outlineSequenceBreakCost = 0.0f;
  o.mergeVarUpdateMemThreshold = 0;
  o.looseThresholdAtPeak = 0;
  o.timeLimitScheduler = std::numeric_limits<double>::infinity();
  o.swapLimitScheduler = -1;  // PopART's programs use it: no swaps
  o.developerSettings.timePartitionLoggerThresholdPercentage = 100.0;
  o.defaultBufferingDepth = 1;
  o.bufferingDepthMap = {{"x", 1}};
  o.numIOTiles = 1470;
  o.compilationProgressTotal = 1;
  makeSession(o);
  o.numIOTiles = 32;
  o.firstDotOp = -5;  // PopART clamps the .dot range: any int
  o.finalDotOp = -1;
  makeSession(o);
}

}  // namespace
}  // namespace xtrain::testing
