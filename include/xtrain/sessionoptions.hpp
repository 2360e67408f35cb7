// SessionOptions: every member of PopART's SessionOptions, with PopART's names, types and defaults.
// Each one is honoured, accepted with no effect on a simulated IPU (a debug line at session
// creation says so when it is set), or refused at session creation with an error saying it is not
// implemented; docs/session-options.md lists which, member by member, with the reason.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/names.hpp"
#include "xtrain/reductiontype.hpp"
#include "xtrain/sessionoptions_settings.hpp"

namespace xtrain {

enum class CommGroupType { All = 0, Consecutive, Orthogonal, Ungrouped };

// A group of replicas (docs/replication-semantics.md section 3). replicaGroupSize is ignored for
// All and Ungrouped.
struct XTRAIN_API CommGroup {
  CommGroup() = default;
  CommGroup(CommGroupType t, unsigned size) : type(t), replicaGroupSize(size) {}
  CommGroupType type = CommGroupType::All;
  unsigned replicaGroupSize = 0;
  bool operator==(const CommGroup&) const = default;
};

// Automatic loss scaling (docs/optimizers.md section 6.2). The default method is PopART's: every
// updatePeriod steps a 2-bin histogram of |gradient| of the tracked FLOAT16 gradients (bin edge at
// binEdgeLocation x 65504), summed over the step's micro-batches and all replicas, halves the loss
// scale when upper / (upper + lower) > thresholdUpperCountProportion and doubles it otherwise;
// steps are never skipped. Which gradients: gradientTensorTrackingMethod, and toTrackTensors (the
// forward tensors whose gradients GradientsOfUserSpecifiedTensors tracks; unset otherwise). The
// scale is the optimizer's lossScaling (non-constant) times the factor lossScaleUpdateFactor; the
// anchorable tensor finalLossScale is their product.
// method = GradScaler is xtrain's extension, dynamic loss scaling (PyTorch's GradScaler): a step
// with an inf or nan gradient is skipped and the scale multiplied by backoffFactor; after
// growthInterval finite steps in a row it is multiplied by growthFactor (up to 2^15 with FLOAT16
// weights or loss). The histogram fields have no effect under it.
enum class AutomaticLossScalingMethod { Histogram = 0, GradScaler };

struct XTRAIN_API AutomaticLossScalingSettings {
  bool enabled = false;
  std::optional<std::vector<std::string>> toTrackTensors;
  float binEdgeLocation = 0.125f;
  float thresholdUpperCountProportion = 1e-7f;
  int updatePeriod = 1;
  GradientTensorTrackingMethod gradientTensorTrackingMethod =
      GradientTensorTrackingMethod::AllNonViewChangingGradientTensors;
  // xtrain: which rule (above); the three fields below are GradScaler's.
  AutomaticLossScalingMethod method = AutomaticLossScalingMethod::Histogram;
  int64_t growthInterval = 2000;
  float growthFactor = 2.0f;
  float backoffFactor = 0.5f;
  bool operator==(const AutomaticLossScalingSettings&) const = default;
};

enum class TensorStorage { OnChip = 0, OffChip };
enum class ReplicatedTensorSharding { Off = 0, On };

struct XTRAIN_API TensorLocation {
  TensorStorage storage = TensorStorage::OnChip;
  ReplicatedTensorSharding replicatedTensorSharding = ReplicatedTensorSharding::Off;
  CommGroup shardingDomain;
  TileSet loadTileSet = TileSet::Compute;     // accepted, no effect (no IO tiles)
  TileSet storageTileSet = TileSet::Compute;  // accepted, no effect (no IO tiles)
  bool operator==(const TensorLocation&) const = default;
};

struct XTRAIN_API TensorLocationSettings {
  TensorLocation location;
  int minElementsForOffChip = 2;
  int minElementsForReplicatedTensorSharding = 8192;
  bool operator==(const TensorLocationSettings&) const = default;
};

// Where inputs come from when no host data is given (benchmarks).
enum class SyntheticDataMode { Off = 0, Zeros, RandomUniform, RandomNormal };

enum class VirtualGraphMode { Off = 0, Manual, Auto, ExecutionPhases };

struct XTRAIN_API SessionOptions {
  // PopART names the nested settings types SessionOptions::ExperimentalSettings, ...
  using ExperimentalSettings = ::xtrain::ExperimentalSettings;
  using DeveloperSettings = ::xtrain::DeveloperSettings;

  // Replication (docs/replication-semantics.md section 1).
  bool enableReplicatedGraphs = false;
  int64_t replicatedGraphCount = 1;
  bool enableDistributedReplicatedGraphs = false;
  int64_t globalReplicationFactor = 1;
  int64_t globalReplicaOffset = 0;

  // Gradient accumulation and the reduction of accumulated / replicated gradients (section 2).
  bool enableGradientAccumulation = false;
  int64_t accumulationFactor = 1;
  ReductionType accumulationAndReplicationReductionType = ReductionType::Sum;
  MeanReductionStrategy meanAccumulationAndReplicationReductionStrategy =
      MeanReductionStrategy::Post;

  // Tensor locations and replicated tensor sharding (section 5).
  TensorLocationSettings activationTensorLocationSettings;
  TensorLocationSettings weightTensorLocationSettings;
  TensorLocationSettings optimizerStateTensorLocationSettings;
  TensorLocationSettings accumulatorTensorLocationSettings;
  std::map<TensorId, TensorLocation> tensorLocationSettingsOverride;  // per tensor

  // Inputs, numerics and the optimizer.
  SyntheticDataMode syntheticDataMode = SyntheticDataMode::Off;  // inputs without host data
  // FLOAT16 weights and optimizer state are rounded stochastically when the optimizer stores them
  // (docs/optimizers.md section 7): the same on every replica, reproducible from the seed.
  bool enableStochasticRounding = false;
  AutomaticLossScalingSettings automaticLossScalingSettings;
  bool enableFloatingPointChecks = false;  // an inf or nan output of any op is a runtime_error
  bool enableStableNorm = false;           // the norms' variance as mean((x - mean)^2)
  bool enableNonStableSoftmax = false;     // softmax without subtracting the maximum
  std::string partialsTypeMatMuls;         // "", "float" or "half": matmuls' partials type
  bool ensureFp32LossScaleTensor = false;  // the loss scale stays FLOAT with FLOAT16 activations
  bool throwIfLog2ScaleTensorNotInRange = true;  // FLOAT8 ops' log2 scale in [-32, 32)
  bool enableSupportedDataTypeCasting = true;    // INT64 -> INT32 when lowering
  bool groupNormStridedChannelGrouping = false;  // Poplar's fast group norm
  bool strictOpVersions = true;  // an op version the model's opset does not define is an error
  bool enableFullyConnectedPass = true;  // poplin's fullyConnectedPass option for matmuls
  bool enableSerializedMatmuls = true;   // the serialization attributes of matmuls
  bool decomposeGradSum = false;         // sums of partial gradients as a tree of additions
  bool enableConstantFoldingOfMultipleConsumers = true;
  // xtrain's own, not PopART's: the running variance BatchNormalization keeps in training
  // (docs/onnx-import.md): "onnx" (the population variance, as the ONNX operator defines it),
  // "pytorch" (the unbiased variance, as PyTorch keeps it) or "auto" (PyTorch's when the model's
  // producer_name is "pytorch", else ONNX's). Anything else is an error at session creation.
  std::string batchNormRunningVariance = "onnx";

  // Recomputation and explicit IR.
  RecomputationType autoRecomputation = RecomputationType::None;
  bool explicitRecomputation = false;
  bool enableExplicitMainLoops = false;  // the main loops as IR ops
  bool useHostCopyOps = false;           // host copies as IR ops
  // enableExplicitIR(b) sets useHostCopyOps, enableExplicitMainLoops and explicitRecomputation.
  void enableExplicitIR(bool enable) {
    useHostCopyOps = enable;
    enableExplicitMainLoops = enable;
    explicitRecomputation = enable;
  }

  // Model parallelism: virtual graphs, pipelining, execution phases, batch serialization.
  VirtualGraphMode virtualGraphMode = VirtualGraphMode::Off;
  std::vector<float> virtualGraphSplitRatios;  // VirtualGraphMode::Auto's split
  bool enablePipelining = false;
  ExecutionPhaseSettings executionPhaseSettings;
  AccumulateOuterFragmentSettings accumulateOuterFragmentSettings;
  BatchSerializationSettings batchSerializationSettings;
  bool createImplicitPipeliningFwdOnlyProgram = false;  // deprecated
  bool stashAllTensorsInferencePipeline = false;

  // Variable updates.
  MergeVarUpdateType mergeVarUpdate = MergeVarUpdateType::None;
  int64_t mergeVarUpdateMemThreshold = 1000000;  // bytes, AutoLoose / AutoTight
  int64_t looseThresholdAtPeak = 8000;           // bytes, AutoLoose
  bool delayVarUpdates = true;                   // schedule VarUpdates as late as possible
  bool scheduleNonWeightUpdateGradientConsumersEarly = false;

  // The engine: compilation, caching, weights, Poplar's option maps, instrumentation.
  bool compileEngine = true;    // false: prepareDevice builds the session but it cannot run
  bool constantWeights = true;  // inference: weights may be folded as constants
  bool enableEngineCaching = false;
  bool enableVariablesCaching = true;
  std::string cachePath = "session_cache";
  // Options of the (simulated) engine, Poplar's names: "autoReport.all", "autoReport.directory",
  // ... and xtrain's "trace.file", "trace.steps". An unknown key is an error at session creation
  // that names it and lists the known ones (src/session/engine_options.hpp,
  // docs/session-options.md).
  std::map<std::string, std::string> engineOptions;
  // Options of the reports getSummaryReport() / getReport() write; unknown keys are an error too.
  std::map<std::string, std::string> reportOptions;
  std::map<std::string, std::string> convolutionOptions;  // poplin's convolution options
  std::map<std::string, std::string> lstmOptions;         // popnn's LSTM options
  std::map<std::string, std::string> matmulOptions;       // poplin's matmul options
  std::map<std::string, std::string> gclOptions;          // GCL's collective options
  // Counts the simulated clock's cycles of each run() (TrainingSession::getCycleCount()).
  bool instrumentWithHardwareCycleCounter = false;
  std::set<Instrumentation> hardwareInstrumentations = {Instrumentation::Outer};
  std::vector<std::string> customCodelets;  // Poplar codelet source files
  std::string customCodeletCompileFlags;
  bool enableLoadAndOffloadRNGState = false;  // device RNG state from and to the host
  bool opxAliasChecking = false;
  bool opxModifyChecking = false;
  bool enableInplaceAmbiguityChecking = false;
  // Called with (progress, compilationProgressTotal) as prepareDevice builds the session.
  std::function<void(int, int)> compilationProgressLogger;
  int compilationProgressTotal = 100;

  // Host transfers and IO.
  bool disableGradAccumulationTensorStreams = false;  // no gradient accumulators to the host
  bool disableOptimizerStateTensorStreams = false;    // no optimizer state to the host
  bool rearrangeAnchorsOnHost = true;
  bool rearrangeStreamsOnHost = false;
  bool enablePrefetchDatastreams = true;
  unsigned defaultBufferingDepth = 1;
  unsigned defaultPrefetchBufferingDepth = 1;  // deprecated alias of defaultBufferingDepth
  std::map<TensorId, unsigned> bufferingDepthMap;
  std::map<TensorId, unsigned> prefetchBufferingDepthMap;  // deprecated alias
  bool groupHostSync = false;
  bool enableMergeExchange = true;
  bool enableEfficientOverlapIOTopoCons = false;
  int numIOTiles = 0;  // tiles dedicated to IO
  std::vector<TensorId> updatableNamedBuffers;

  // Outlining and subgraphs.
  bool enableOutlining = true;
  bool enableOutliningCopyCostPruning = true;
  float outlineThreshold = 1.0f;
  float outlineSequenceBreakCost = 10000.0f;
  SubgraphCopyingStrategy subgraphCopyingStrategy = SubgraphCopyingStrategy::OnEnterAndExit;
  bool aliasZeroCopy = false;
  AutodiffSettings autodiffSettings;
  ReplicatedCollectivesSettings replicatedCollectivesSettings;
  bool useLoopCandidateCreator = false;

  // The scheduler (Poprithms).
  std::string kahnTieBreaker = "greedy";
  double timeLimitScheduler = 1e9;  // seconds
  int64_t swapLimitScheduler = static_cast<int64_t>(1e9);
  size_t transitiveClosureOptimizationThreshold = 100000;
  std::string serializedPoprithmsShiftGraphsDir;
  std::string serializedPoprithmsAnnealGraphsDir;  // older name of the same

  // Reports and IR dumps.
  std::string logDir;  // where the session writes its memory report and .dot files; "": nowhere
  std::set<std::string> dotChecks;  // when to write .dot files of the IR
  int firstDotOp = 0;
  int finalDotOp = 10000;
  bool dotOpNames = false;
  bool separateCallOpPdfs = true;
  bool exportPoplarComputationGraph = false;
  bool exportPoplarVertexGraph = false;

  ExperimentalSettings experimentalSettings;
  DeveloperSettings developerSettings;

  // Local replicas (L) of this instance: replicatedGraphCount when replication is on, else 1.
  int64_t getLocalReplicationFactor() const {
    return enableReplicatedGraphs ? replicatedGraphCount : 1;
  }
  // G: globalReplicationFactor when distributed, else L (section 1).
  int64_t getGlobalReplicationFactor() const {
    return enableDistributedReplicatedGraphs ? globalReplicationFactor
                                             : getLocalReplicationFactor();
  }
  int64_t getAccumulationFactor() const {
    return enableGradientAccumulation ? accumulationFactor : 1;
  }
  bool autoRecomputationEnabled() const { return autoRecomputation != RecomputationType::None; }
  bool explicitPipeliningEnabled() const {
    return enablePipelining && useHostCopyOps && enableExplicitMainLoops;
  }
  bool implicitPipeliningEnabled() const {
    return enablePipelining && !(useHostCopyOps && enableExplicitMainLoops);
  }
  bool shouldDelayVarUpdates() const { return delayVarUpdates; }
};

}  // namespace xtrain
