// The enums and nested settings structs of SessionOptions, with PopART's names, members and
// defaults (popart-python-api.txt, "class popart.SessionOptions" and the classes after it). Which
// of them take effect on a simulated IPU is docs/session-options.md; most of them steer Poplar's
// compiler, scheduler or the layout of work across IPUs, which a simulated IPU does not have.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "xtrain/api.hpp"

namespace xtrain {

// Which ops auto-recomputation recomputes in the backward pass. Python: NoRecompute for None.
enum class RecomputationType { None = 0, Standard, NormOnly, Pipeline, RecomputeAll };

// One op's recomputation, set by the Builder (recomputeOutputInBackwardPass, checkpointOutput,
// the recomputeOutput scope) as the node attribute __recompute_output_in_backward_pass, PopART's
// values: Checkpoint keeps the op's outputs from the forward pass whatever the automatic mode
// chooses; Recompute recomputes it in the backward pass (manual recomputation, which excludes an
// automatic mode). Recomputed marks PopART's clones and is not accepted on a model's node.
enum class RecomputeType { Undefined = 0, Checkpoint, Recompute, Recomputed };

// Which VarUpdate ops are merged into groups. Python: Off for None.
enum class MergeVarUpdateType { None = 0, All, AutoLoose, AutoTight };

// How the inputs and outputs of a subgraph are copied.
enum class SubgraphCopyingStrategy { OnEnterAndExit = 0, JustInTime };

// What instrumentWithHardwareCycleCounter counts: the whole program or each IPU.
enum class Instrumentation { Outer = 0, Inner };

// The format a serialized IR is written in.
enum class IrSerializationFormat { JSON = 0 };

// Which gradients automatic loss scaling tracks (PopART's histogram method).
enum class GradientTensorTrackingMethod {
  AllNonViewChangingGradientTensors = 0,
  ConvAndMatmulGradients,
  GradientsOfUserSpecifiedTensors
};

// A set of tiles: compute tiles, or the tiles dedicated to IO (numIOTiles).
enum class TileSet { Compute = 0, IO };

// Batch serialization: how the serialized subgraphs are scheduled, when and how the batch is split.
enum class BatchSerializationBatchSchedule {
  Scheduler = 0,
  Isomorphic,
  OverlapOnIo,
  OverlapOnCompute
};
enum class BatchSerializationTransformContext { Fwd = 0, Bwd };
enum class BatchSerializationMethod { UnrollDynamic = 0, UnrollStatic, Loop };

struct XTRAIN_API BatchSerializationSettings {
  int factor = 0;  // compute batches to split operations into; 0 and 1: no serialization
  bool concatOnVirtualGraphChange = true;
  bool concatOnExecutionPhaseChange = true;
  bool concatOnPipelineStageChange = true;
  BatchSerializationTransformContext transformContext = BatchSerializationTransformContext::Fwd;
  BatchSerializationMethod method = BatchSerializationMethod::UnrollDynamic;
  BatchSerializationBatchSchedule batchSchedule = BatchSerializationBatchSchedule::Isomorphic;
  bool operator==(const BatchSerializationSettings&) const = default;
};

// Execution phases (VirtualGraphMode::ExecutionPhases): when tensors are loaded, in what order
// optimizer steps of one phase run.
enum class ExecutionPhaseIOSchedule { Preload = 0, OnDemand };
enum class ExecutionPhaseSchedule { Interleaving = 0, Batch, BatchClusteredIO };

struct XTRAIN_API ExecutionPhaseSettings {
  int phases = 0;  // execution phases of the whole model
  int stages = 2;  // overlapping stages
  ExecutionPhaseIOSchedule weightIOSchedule = ExecutionPhaseIOSchedule::Preload;
  ExecutionPhaseIOSchedule activationIOSchedule = ExecutionPhaseIOSchedule::Preload;
  ExecutionPhaseIOSchedule optimizerStateIOSchedule = ExecutionPhaseIOSchedule::OnDemand;
  ExecutionPhaseIOSchedule accumulatorIOSchedule = ExecutionPhaseIOSchedule::Preload;
  ExecutionPhaseSchedule schedule = ExecutionPhaseSchedule::Interleaving;
  bool operator==(const ExecutionPhaseSettings&) const = default;
};

// The accumulate outer fragment (pipelining): how its ops are scheduled across virtual graphs.
enum class AccumulateOuterFragmentSchedule {
  Scheduler = 0,
  Serial,
  OverlapCycleOptimized,
  OverlapMemoryOptimized
};

struct XTRAIN_API AccumulateOuterFragmentSettings {
  AccumulateOuterFragmentSchedule schedule = AccumulateOuterFragmentSchedule::Serial;
  std::vector<int> excludedVirtualGraphs;
  bool operator==(const AccumulateOuterFragmentSettings&) const = default;
};

// How autodiff stitches the forward and backward graphs of a subgraph.
enum class AutodiffStitchStrategy {
  RecomputeMinimal = 0,
  RecomputeAllNonInputs,
  AddFwdOutputs,
  SafeAddFwdOutputs
};

struct XTRAIN_API AutodiffSettings {
  AutodiffStitchStrategy stitchStrategy = AutodiffStitchStrategy::RecomputeAllNonInputs;
  bool operator==(const AutodiffSettings&) const = default;
};

// Merging of replicated collectives into larger ones.
struct XTRAIN_API ReplicatedCollectivesSettings {
  bool prepareScheduleForMergingCollectives = false;
  bool mergeAllReduceCollectives = false;
  bool mergeReduceScatterCollectives = false;
  bool mergeAllGatherCollectives = false;
  bool operator==(const ReplicatedCollectivesSettings&) const = default;
};

// PopART's experimental settings (SessionOptions::ExperimentalSettings).
struct XTRAIN_API ExperimentalSettings {
  std::map<std::string, std::vector<std::string>> customTransformApplierSettings;
  bool createHostTransferableTensorWithOffset = false;
  bool operator==(const ExperimentalSettings&) const = default;
};

// PopART's developer settings.
struct XTRAIN_API DeveloperSettings {
  double timePartitionLoggerThresholdPercentage = 1.0;
  bool operator==(const DeveloperSettings&) const = default;
};

}  // namespace xtrain
