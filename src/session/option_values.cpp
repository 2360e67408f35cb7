#include "session/option_values.hpp"

#include "xtrain/replicagrouping.hpp"

namespace xtrain::session {

namespace {

// The name of enumerator `v` in `names` (listed in declaration order), or its number when the
// value is out of range (a cast from a bad integer).
template <class E, size_t N>
const char* nameIn(E v, const char* const (&names)[N]) {
  const auto i = static_cast<size_t>(v);
  return i < N ? names[i] : "(out of range)";
}

}  // namespace

const char* enumName(RecomputationType v) {
  static const char* const n[] = {"None", "Standard", "NormOnly", "Pipeline", "RecomputeAll"};
  return nameIn(v, n);
}
const char* enumName(MergeVarUpdateType v) {
  static const char* const n[] = {"None", "All", "AutoLoose", "AutoTight"};
  return nameIn(v, n);
}
const char* enumName(SubgraphCopyingStrategy v) {
  static const char* const n[] = {"OnEnterAndExit", "JustInTime"};
  return nameIn(v, n);
}
const char* enumName(Instrumentation v) {
  static const char* const n[] = {"Outer", "Inner"};
  return nameIn(v, n);
}
const char* enumName(GradientTensorTrackingMethod v) {
  static const char* const n[] = {"AllNonViewChangingGradientTensors", "ConvAndMatmulGradients",
                                  "GradientsOfUserSpecifiedTensors"};
  return nameIn(v, n);
}
const char* enumName(TileSet v) {
  static const char* const n[] = {"Compute", "IO"};
  return nameIn(v, n);
}
const char* enumName(BatchSerializationBatchSchedule v) {
  static const char* const n[] = {"Scheduler", "Isomorphic", "OverlapOnIo", "OverlapOnCompute"};
  return nameIn(v, n);
}
const char* enumName(BatchSerializationTransformContext v) {
  static const char* const n[] = {"Fwd", "Bwd"};
  return nameIn(v, n);
}
const char* enumName(BatchSerializationMethod v) {
  static const char* const n[] = {"UnrollDynamic", "UnrollStatic", "Loop"};
  return nameIn(v, n);
}
const char* enumName(ExecutionPhaseIOSchedule v) {
  static const char* const n[] = {"Preload", "OnDemand"};
  return nameIn(v, n);
}
const char* enumName(ExecutionPhaseSchedule v) {
  static const char* const n[] = {"Interleaving", "Batch", "BatchClusteredIO"};
  return nameIn(v, n);
}
const char* enumName(AccumulateOuterFragmentSchedule v) {
  static const char* const n[] = {"Scheduler", "Serial", "OverlapCycleOptimized",
                                  "OverlapMemoryOptimized"};
  return nameIn(v, n);
}
const char* enumName(AutodiffStitchStrategy v) {
  static const char* const n[] = {"RecomputeMinimal", "RecomputeAllNonInputs", "AddFwdOutputs",
                                  "SafeAddFwdOutputs"};
  return nameIn(v, n);
}
const char* enumName(VirtualGraphMode v) {
  static const char* const n[] = {"Off", "Manual", "Auto", "ExecutionPhases"};
  return nameIn(v, n);
}
const char* enumName(SyntheticDataMode v) {
  static const char* const n[] = {"Off", "Zeros", "RandomUniform", "RandomNormal"};
  return nameIn(v, n);
}
const char* enumName(TensorStorage v) {
  static const char* const n[] = {"OnChip", "OffChip"};
  return nameIn(v, n);
}
const char* enumName(ReplicatedTensorSharding v) {
  static const char* const n[] = {"Off", "On"};
  return nameIn(v, n);
}

const char* enumName(ReductionType v) {
  static const char* const n[] = {"Sum", "Mean", "NoReduction"};
  return nameIn(v, n);
}
const char* enumName(MeanReductionStrategy v) {
  static const char* const n[] = {"Running", "Post"};
  return nameIn(v, n);
}

std::string showValue(const std::string& v) {
  return "\"" + v + "\"";
}

std::string showValue(const std::function<void(int, int)>& v) {
  return v ? "(set)" : "(unset)";
}

std::string showValue(const BatchSerializationSettings& v) {
  return format(
      "{{factor: {}, concatOnVirtualGraphChange: {}, concatOnExecutionPhaseChange: {}, "
      "concatOnPipelineStageChange: {}, transformContext: {}, method: {}, batchSchedule: {}}}",
      v.factor, showValue(v.concatOnVirtualGraphChange), showValue(v.concatOnExecutionPhaseChange),
      showValue(v.concatOnPipelineStageChange), enumName(v.transformContext), enumName(v.method),
      enumName(v.batchSchedule));
}

std::string showValue(const ExecutionPhaseSettings& v) {
  return format(
      "{{phases: {}, stages: {}, weightIOSchedule: {}, activationIOSchedule: {}, "
      "optimizerStateIOSchedule: {}, accumulatorIOSchedule: {}, schedule: {}}}",
      v.phases, v.stages, enumName(v.weightIOSchedule), enumName(v.activationIOSchedule),
      enumName(v.optimizerStateIOSchedule), enumName(v.accumulatorIOSchedule),
      enumName(v.schedule));
}

std::string showValue(const AccumulateOuterFragmentSettings& v) {
  return format("{{schedule: {}, excludedVirtualGraphs: {}}}", enumName(v.schedule),
                showValue(v.excludedVirtualGraphs));
}

std::string showValue(const AutodiffSettings& v) {
  return format("{{stitchStrategy: {}}}", enumName(v.stitchStrategy));
}

std::string showValue(const ReplicatedCollectivesSettings& v) {
  return format(
      "{{prepareScheduleForMergingCollectives: {}, mergeAllReduceCollectives: {}, "
      "mergeReduceScatterCollectives: {}, mergeAllGatherCollectives: {}}}",
      showValue(v.prepareScheduleForMergingCollectives), showValue(v.mergeAllReduceCollectives),
      showValue(v.mergeReduceScatterCollectives), showValue(v.mergeAllGatherCollectives));
}

std::string showValue(const ExperimentalSettings& v) {
  return format(
      "{{customTransformApplierSettings: {}, createHostTransferableTensorWithOffset: {}}}",
      showValue(v.customTransformApplierSettings),
      showValue(v.createHostTransferableTensorWithOffset));
}

std::string showValue(const DeveloperSettings& v) {
  return format("{{timePartitionLoggerThresholdPercentage: {}}}",
                v.timePartitionLoggerThresholdPercentage);
}

std::string showValue(const TensorLocation& v) {
  return format(
      "{{storage: {}, replicatedTensorSharding: {}, shardingDomain: {}, loadTileSet: {}, "
      "storageTileSet: {}}}",
      enumName(v.storage), enumName(v.replicatedTensorSharding), toString(v.shardingDomain),
      enumName(v.loadTileSet), enumName(v.storageTileSet));
}

std::string showValue(const TensorLocationSettings& v) {
  return format(
      "{{location: {}, minElementsForOffChip: {}, minElementsForReplicatedTensorSharding: {}}}",
      showValue(v.location), v.minElementsForOffChip, v.minElementsForReplicatedTensorSharding);
}

std::string showValue(const AutomaticLossScalingSettings& v) {
  if (v.method == AutomaticLossScalingMethod::GradScaler) {
    return format(
        "{{enabled: {}, method: GradScaler, growthInterval: {}, growthFactor: {}, backoffFactor: "
        "{}}}",
        showValue(v.enabled), v.growthInterval, v.growthFactor, v.backoffFactor);
  }
  std::string tracked = "unset";
  if (v.toTrackTensors) {
    tracked = "[";
    for (const auto& id : *v.toTrackTensors) tracked += (tracked.size() > 1 ? ", " : "") + id;
    tracked += "]";
  }
  return format(
      "{{enabled: {}, binEdgeLocation: {}, thresholdUpperCountProportion: {}, updatePeriod: {}, "
      "gradientTensorTrackingMethod: {}, toTrackTensors: {}}}",
      showValue(v.enabled), v.binEdgeLocation, v.thresholdUpperCountProportion, v.updatePeriod,
      enumName(v.gradientTensorTrackingMethod), tracked);
}

}  // namespace xtrain::session
