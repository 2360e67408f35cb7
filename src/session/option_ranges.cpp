#include "session/option_ranges.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "xtrain/error.hpp"
#include "xtrain/format.hpp"

namespace xtrain::session {

namespace {

// Member names as a user writes them: "weightTensorLocationSettings.minElementsForOffChip".
[[noreturn]] void outOfRange(const std::string& member, const std::string& value,
                             const std::string& expected) {
  throw error("SessionOptions.{} = {} is out of range: expected {}", member, value, expected);
}

// A count or size: at least `min`.
void atLeast(const std::string& member, int64_t value, int64_t min) {
  if (value < min) outOfRange(member, std::to_string(value), format(">= {}", min));
}

// A real number; NaN is in no range.
void real(const std::string& member, double value, bool inRange, const char* expected) {
  if (std::isnan(value) || !inRange) outOfRange(member, format("{}", value), expected);
}

void checkLocation(const std::string& kind, const TensorLocationSettings& s) {
  atLeast(kind + ".minElementsForOffChip", s.minElementsForOffChip, 0);
  atLeast(kind + ".minElementsForReplicatedTensorSharding",
          s.minElementsForReplicatedTensorSharding, 0);
}

void checkLossScaling(const AutomaticLossScalingSettings& a) {
  const std::string m = "automaticLossScalingSettings.";
  // binEdgeLocation and thresholdUpperCountProportion are checked where PopART checks them, with
  // its messages, when automatic loss scaling builds its histograms (session/update_control.cpp).
  atLeast(m + "updatePeriod", a.updatePeriod, 1);
  // xtrain's GradScaler method (docs/optimizers.md 6.2).
  atLeast(m + "growthInterval", a.growthInterval, 1);
  real(m + "growthFactor", a.growthFactor, a.growthFactor >= 1, ">= 1");
  real(m + "backoffFactor", a.backoffFactor, a.backoffFactor > 0 && a.backoffFactor < 1,
       "a factor in (0, 1)");
}

void checkReplication(const SessionOptions& o) {
  atLeast("replicatedGraphCount", o.replicatedGraphCount, 1);
  atLeast("globalReplicationFactor", o.globalReplicationFactor, 1);
  // PopART: the first replica of this instance, in [0, globalReplicationFactor), which is 1 (so the
  // offset 0) unless replication is distributed.
  if (o.globalReplicaOffset < 0 || o.globalReplicaOffset >= o.globalReplicationFactor) {
    outOfRange("globalReplicaOffset", std::to_string(o.globalReplicaOffset),
               format("0 <= globalReplicaOffset < globalReplicationFactor ({})",
                      o.globalReplicationFactor));
  }
  atLeast("accumulationFactor", o.accumulationFactor, 1);
}

// PopART's rule for IO tiles: none, or an even number of at least 32 that leaves compute tiles.
void checkIoTiles(int numIOTiles, const DeviceInfo& device) {
  if (numIOTiles == 0) return;
  const int tiles = device.getTilesPerIPU();
  if (numIOTiles < 32 || numIOTiles % 2 != 0 || numIOTiles >= tiles) {
    outOfRange("numIOTiles", std::to_string(numIOTiles),
               format("0 (no IO tiles) or an even number >= 32 and below the device's {} tiles "
                      "per IPU",
                      tiles));
  }
}

void checkBufferingDepths(const SessionOptions& o) {
  // Unsigned: a negative number cannot be given in C++, and Python refuses it (ValueError); 0 can.
  atLeast("defaultBufferingDepth", o.defaultBufferingDepth, 1);
  atLeast("defaultPrefetchBufferingDepth", o.defaultPrefetchBufferingDepth, 1);
  for (const auto& [id, depth] : o.bufferingDepthMap) {
    atLeast("bufferingDepthMap[\"" + id + "\"]", depth, 1);
  }
  for (const auto& [id, depth] : o.prefetchBufferingDepthMap) {
    atLeast("prefetchBufferingDepthMap[\"" + id + "\"]", depth, 1);
  }
}

void checkModelParallelism(const SessionOptions& o) {
  for (size_t i = 0; i < o.virtualGraphSplitRatios.size(); ++i) {
    const float r = o.virtualGraphSplitRatios[i];
    real("virtualGraphSplitRatios[" + std::to_string(i) + "]", r, r > 0 && r < 1,
         "a ratio in (0, 1)");
  }
  atLeast("executionPhaseSettings.phases", o.executionPhaseSettings.phases, 0);
  const int stages = o.executionPhaseSettings.stages;
  if (stages != 1 && stages != 2) {
    outOfRange("executionPhaseSettings.stages", std::to_string(stages),
               "1 (parallel streaming memory) or 2 (ping-pong between 2 IPUs)");
  }
  const auto& excluded = o.accumulateOuterFragmentSettings.excludedVirtualGraphs;
  for (size_t i = 0; i < excluded.size(); ++i) {
    atLeast("accumulateOuterFragmentSettings.excludedVirtualGraphs[" + std::to_string(i) + "]",
            excluded[i], 0);
  }
  atLeast("batchSerializationSettings.factor", o.batchSerializationSettings.factor, 0);
}

void checkSchedulerAndOutlining(const SessionOptions& o) {
  // PopART: negative thresholds outline everything, +inf nothing; only NaN means nothing.
  real("outlineThreshold", o.outlineThreshold, true, "a number (not NaN)");
  real("outlineSequenceBreakCost", o.outlineSequenceBreakCost, true, "a number (not NaN)");
  atLeast("mergeVarUpdateMemThreshold", o.mergeVarUpdateMemThreshold, 0);
  atLeast("looseThresholdAtPeak", o.looseThresholdAtPeak, 0);
  real("timeLimitScheduler", o.timeLimitScheduler, o.timeLimitScheduler >= 0,
       ">= 0 (seconds; inf for no limit)");
  // swapLimitScheduler: any value (PopART hands it to its scheduler, where <= 0 means no swaps).
  const double p = o.developerSettings.timePartitionLoggerThresholdPercentage;
  real("developerSettings.timePartitionLoggerThresholdPercentage", p, p >= 0 && p <= 100,
       "a percentage in [0, 100]");
}

}  // namespace

void checkOptionRanges(const SessionOptions& o, const DeviceInfo& device) {
  checkReplication(o);
  checkLocation("activationTensorLocationSettings", o.activationTensorLocationSettings);
  checkLocation("weightTensorLocationSettings", o.weightTensorLocationSettings);
  checkLocation("optimizerStateTensorLocationSettings", o.optimizerStateTensorLocationSettings);
  checkLocation("accumulatorTensorLocationSettings", o.accumulatorTensorLocationSettings);
  checkLossScaling(o.automaticLossScalingSettings);
  checkModelParallelism(o);
  checkSchedulerAndOutlining(o);
  checkBufferingDepths(o);
  checkIoTiles(o.numIOTiles, device);
  atLeast("compilationProgressTotal", o.compilationProgressTotal, 1);
}

}  // namespace xtrain::session
