#include "session/option_table.hpp"

#include <utility>

#include "session/option_values.hpp"

namespace xtrain::session {

namespace {

const SessionOptions& defaults() {
  static const SessionOptions d;
  return d;
}

template <class T>
OptionEntry member(std::string name, T SessionOptions::*m, OptionState state,
                   std::string defaultText, std::string reason) {
  return {std::move(name),
          state,
          std::move(reason),
          std::move(defaultText),
          [m](const SessionOptions& o) { return o.*m == defaults().*m; },
          [m](const SessionOptions& o) { return showValue(o.*m); }};
}

constexpr OptionState H = OptionState::Honoured;
constexpr OptionState N = OptionState::NoEffect;
constexpr OptionState R = OptionState::Refused;

// Reasons shared by several members.
const char* const kPoplarSchedule =
    "it steers Poplar's scheduler; xtrain runs a session's ops in one fixed order";
const char* const kOutlining =
    "outlining shares Poplar code between repeated subgraphs; xtrain's programs are straight "
    "lists of kernels";
const char* const kHostStreams =
    "a simulated IPU shares the host's memory: inputs and anchors are copied straight from and to "
    "the StepIO, with no device stream to buffer, group or rearrange";
const char* const kPipelined = "used only by pipelined models, and enablePipelining is refused";
const char* const kDot = "xtrain's graphs have no call subgraphs to draw apart";
// Measured, not assumed: the session module's debug lines "session created in" and "prepareDevice
// in" (PhaseTimes) on bench/models/make_models.py's models; docs/performance.md, Session creation.
const char* const kEngineCache =
    "not implemented, as not worth it: on the bench models (mlp, cnn, gpt, bert) session creation "
    "and prepareDevice take 30-120 ms, of which what a cache could skip (building the graph, "
    "fusion, autodiff, the memory check, the buffer plan) is 2.6-8.4 ms (6-28% of it, under one "
    "training step); reading the weights, making the oneDNN kernels (oneDNN stores none on a CPU) "
    "and filling the buffers are done either way (docs/performance.md, Session creation)";
const char* const kEngineCacheUser =
    "used only by enableEngineCaching, which has no effect: nothing is read from or written to "
    "cachePath";
const char* const kMergeVarUpdate =
    "merging VarUpdate ops changes Poplar's schedule and memory, not the result; xtrain's "
    "optimizer "
    "kernels update every weight in its own pass";

std::vector<OptionEntry> makeTable() {
  using S = SessionOptions;
  std::vector<OptionEntry> t = {
      // Replication.
      member("enableReplicatedGraphs", &S::enableReplicatedGraphs, H, "false",
             "L local replicas, each with its own buffers on its own simulated IPU(s) and its own "
             "thread; the device must have a multiple of L IPUs"),
      member("replicatedGraphCount", &S::replicatedGraphCount, H, "1",
             "the number of local replicas L when enableReplicatedGraphs is set"),
      member("enableDistributedReplicatedGraphs", &S::enableDistributedReplicatedGraphs, H, "false",
             "the instances of a job (started by xrun, mpirun or srun) reduce their gradients "
             "through the comm layer; dist::configureSessionOptions sets it from the launcher"),
      member("globalReplicationFactor", &S::globalReplicationFactor, H, "1",
             "G >= 1, at least L and a multiple of L (uniform instances), else an error"),
      member("globalReplicaOffset", &S::globalReplicaOffset, H, "0",
             "0 <= offset < G and a multiple of L, else an error"),
      // Gradient accumulation.
      member("enableGradientAccumulation", &S::enableGradientAccumulation, H, "false",
             "a factor > 1 without it is an error, as is accumulation in an inference session"),
      member("accumulationFactor", &S::accumulationFactor, H, "1",
             "micro-batches per weight update"),
      member("accumulationAndReplicationReductionType", &S::accumulationAndReplicationReductionType,
             H, "Sum", "Sum and Mean; NoReduction is an error for gradients"),
      member("meanAccumulationAndReplicationReductionStrategy",
             &S::meanAccumulationAndReplicationReductionStrategy, H, "Post",
             "Post: sums, divided once by af·G in the optimizer; Running: a running mean"),
      // Tensor locations.
      member("activationTensorLocationSettings", &S::activationTensorLocationSettings, H,
             "OnChip, sharding Off",
             "OnChip only: OffChip storage and sharded activations are refused"),
      member("weightTensorLocationSettings", &S::weightTensorLocationSettings, H,
             "OnChip, sharding Off, min 8192",
             "replicated tensor sharding over any shardingDomain in training sessions "
             "(docs/replication.md); OffChip storage and sharding in inference sessions are "
             "refused; minElementsForOffChip and the tile sets have no effect"),
      member("optimizerStateTensorLocationSettings", &S::optimizerStateTensorLocationSettings, H,
             "OnChip, sharding Off, min 8192", "as weightTensorLocationSettings"),
      member("accumulatorTensorLocationSettings", &S::accumulatorTensorLocationSettings, H,
             "OnChip, sharding Off, min 8192",
             "as weightTensorLocationSettings; sharded accumulators with an accumulation factor "
             "> 1 are refused"),
      member("tensorLocationSettingsOverride", &S::tensorLocationSettingsOverride, R, "{}",
             "locations per tensor are not implemented; set the settings of the tensor's kind"),
      // Inputs, numerics and the optimizer.
      member("syntheticDataMode", &S::syntheticDataMode, H, "Off",
             "Zeros, RandomUniform and RandomNormal fill the inputs without host data"),
      member("enableStochasticRounding", &S::enableStochasticRounding, H, "false",
             "FLOAT16 weights and optimizer state are rounded stochastically when the optimizer "
             "stores them, the same on every replica (docs/optimizers.md section 7)"),
      member("automaticLossScalingSettings", &S::automaticLossScalingSettings, H, "enabled false",
             "xtrain's dynamic rule (docs/optimizers.md section 6.2): a step with an inf or nan "
             "gradient is skipped and the scale backs off; PopART's histogram fields "
             "(toTrackTensors, binEdgeLocation, thresholdUpperCountProportion, updatePeriod, "
             "gradientTensorTrackingMethod) have no effect and a warning says so"),
      member("enableFloatingPointChecks", &S::enableFloatingPointChecks, H, "false",
             "after every op, an inf or nan in a floating-point output is a runtime_error naming "
             "the op and the tensor (a step automatic loss scaling would skip throws instead); "
             "costs nothing when off"),
      member("enableStableNorm", &S::enableStableNorm, N, "false",
             "the norm kernels always compute the variance stably (two passes, or shifted sums "
             "in double), which is what true asks for"),
      member("enableNonStableSoftmax", &S::enableNonStableSoftmax, N, "false",
             "softmax always subtracts the row's maximum; the non-stable kernel is only faster on "
             "an IPU"),
      member("partialsTypeMatMuls", &S::partialsTypeMatMuls, H, "\"\"",
             "\"\" and \"float\": matmuls accumulate in FLOAT, as xtrain's kernels do; \"half\" "
             "is refused (not implemented); any other value is an error"),
      member("ensureFp32LossScaleTensor", &S::ensureFp32LossScaleTensor, H, "false",
             "with a FLOAT loss the loss scale is already FLOAT; with a FLOAT16 loss true is "
             "refused (not implemented: the scale has the loss's type)"),
      member("throwIfLog2ScaleTensorNotInRange", &S::throwIfLog2ScaleTensorNotInRange, N, "true",
             "it concerns Poplar's fused FLOAT8 ops, which xtrain does not have"),
      member("enableSupportedDataTypeCasting", &S::enableSupportedDataTypeCasting, N, "true",
             "xtrain's kernels compute INT64 and UINT64 in 64 bits: nothing needs casting"),
      member("groupNormStridedChannelGrouping", &S::groupNormStridedChannelGrouping, N, "false",
             "the group norm kernel always groups channels the standard way, so trained weights "
             "stay portable"),
      member("strictOpVersions", &S::strictOpVersions, N, "true",
             "the importer always checks each op's type, domain and opset against the kernels "
             "it has and names every one it lacks; false, a fallback to another version, changes "
             "nothing"),
      member("enableFullyConnectedPass", &S::enableFullyConnectedPass, N, "true",
             "a planning option of Poplar's matmuls"),
      member("enableSerializedMatmuls", &S::enableSerializedMatmuls, N, "true",
             "xtrain's matmul kernel does not serialize matmuls"),
      member("decomposeGradSum", &S::decomposeGradSum, N, "false",
             "it lowers the liveness of partial gradients on an IPU; autodiff's sums are computed "
             "as they are made"),
      member("enableConstantFoldingOfMultipleConsumers",
             &S::enableConstantFoldingOfMultipleConsumers, N, "true",
             "folding gives the same values either way; xtrain folds every foldable op"),
      member("batchNormRunningVariance", &S::batchNormRunningVariance, H, "\"onnx\"",
             "xtrain's own, not PopART's: the running variance BatchNormalization keeps in "
             "training, \"onnx\" (population, as ONNX defines it), \"pytorch\" (unbiased, as "
             "PyTorch keeps it) or \"auto\" (PyTorch's for a model whose producer is pytorch); "
             "any other value is an error (docs/onnx-import.md)"),
      // Recomputation and explicit IR.
      member("autoRecomputation", &S::autoRecomputation, H, "None",
             "training sessions recompute forward ops in the backward pass instead of keeping "
             "their outputs: Standard everything but checkpoints chosen as PopART does, NormOnly "
             "the norms and a non-linearity after one, RecomputeAll every forward op; Pipeline is "
             "an error (pipelining is refused)"),
      member("explicitRecomputation", &S::explicitRecomputation, N, "false",
             "no op can be marked for recomputation (the Builder has no "
             "recomputeOutputInBackwardPass), so there is nothing to recompute"),
      member("enableExplicitMainLoops", &S::enableExplicitMainLoops, N, "false",
             "xtrain's loops over batches and accumulation steps are not IR ops; the results are "
             "the same"),
      member("useHostCopyOps", &S::useHostCopyOps, N, "false",
             "host transfers are not IR ops in xtrain; the results are the same"),
      {"enableExplicitIR", H,
       "a method: enableExplicitIR(b) sets useHostCopyOps, enableExplicitMainLoops and "
       "explicitRecomputation to b",
       "(method)", [](const S&) { return true; }, [](const S&) { return std::string(); }},
      // Model parallelism.
      member("virtualGraphMode", &S::virtualGraphMode, R, "Off",
             "model parallelism over IPUs is not implemented; a replica runs on one IPU"),
      member("virtualGraphSplitRatios", &S::virtualGraphSplitRatios, N, "[]",
             "used only by VirtualGraphMode::Auto, and virtualGraphMode is refused"),
      member("enablePipelining", &S::enablePipelining, R, "false", "pipelining is not implemented"),
      member("executionPhaseSettings", &S::executionPhaseSettings, N, "phases 0, stages 2",
             "used only by VirtualGraphMode::ExecutionPhases, and virtualGraphMode is refused"),
      member("accumulateOuterFragmentSettings", &S::accumulateOuterFragmentSettings, N, "Serial",
             kPipelined),
      {"batchSerializationSettings", R,
       "batch serialization (factor > 1) is not implemented; with factor 0 or 1 the other fields "
       "have no effect, as in PopART",
       "factor 0", [](const S& o) { return o.batchSerializationSettings.factor <= 1; },
       [](const S& o) { return showValue(o.batchSerializationSettings); }},
      member("createImplicitPipeliningFwdOnlyProgram", &S::createImplicitPipeliningFwdOnlyProgram,
             N, "false", kPipelined),
      member("stashAllTensorsInferencePipeline", &S::stashAllTensorsInferencePipeline, N, "false",
             kPipelined),
      // Variable updates.
      member("mergeVarUpdate", &S::mergeVarUpdate, N, "None", kMergeVarUpdate),
      member("mergeVarUpdateMemThreshold", &S::mergeVarUpdateMemThreshold, N, "1000000",
             kMergeVarUpdate),
      member("looseThresholdAtPeak", &S::looseThresholdAtPeak, N, "8000", kMergeVarUpdate),
      member("delayVarUpdates", &S::delayVarUpdates, N, "true",
             "weights are updated after the backward pass and the gradient reduction either way"),
      member("scheduleNonWeightUpdateGradientConsumersEarly",
             &S::scheduleNonWeightUpdateGradientConsumersEarly, N, "false", kPoplarSchedule),
      // The engine.
      member("compileEngine", &S::compileEngine, H, "true",
             "false: prepareDevice builds the session (memory check, kernels) but run() refuses "
             "to run"),
      member("constantWeights", &S::constantWeights, N, "true",
             "xtrain never folds an inference session's weights into constants, so "
             "weightsFromHost and writeWeights always reach them (as PopART's false)"),
      member("enableEngineCaching", &S::enableEngineCaching, N, "false", kEngineCache),
      member("enableVariablesCaching", &S::enableVariablesCaching, N, "true", kEngineCacheUser),
      member("cachePath", &S::cachePath, N, "\"session_cache\"", kEngineCacheUser),
      member("engineOptions", &S::engineOptions, H, "{}",
             "autoReport.* (docs/reports.md) and trace.* (docs/trace.md); an unknown key is an "
             "error"),
      member("reportOptions", &S::reportOptions, H, "{}",
             "the options of getSummaryReport() and getReport() (docs/reports.md); an unknown key "
             "is an error"),
      member("convolutionOptions", &S::convolutionOptions, N, "{}",
             "options of Poplar's convolutions; xtrain's convolutions are oneDNN's"),
      member("lstmOptions", &S::lstmOptions, N, "{}",
             "options of Poplar's LSTM; xtrain's LSTM is its own kernel"),
      member("matmulOptions", &S::matmulOptions, N, "{}",
             "options of Poplar's matmuls; xtrain's matmuls are its own kernels"),
      member("gclOptions", &S::gclOptions, N, "{}",
             "options of Graphcore's collectives library; xtrain's collectives are its comm layer"),
      member("instrumentWithHardwareCycleCounter", &S::instrumentWithHardwareCycleCounter, H,
             "false", "getCycleCount() counts the simulated clock's cycles (docs/reports.md)"),
      {"hardwareInstrumentations", R,
       "per-IPU cycle counts (Inner) are not implemented; the count is of the whole program "
       "(Outer)",
       "{Outer}",
       [](const S& o) { return o.hardwareInstrumentations.count(Instrumentation::Inner) == 0; },
       [](const S& o) { return showValue(o.hardwareInstrumentations); }},
      member("customCodelets", &S::customCodelets, R, "[]",
             "Poplar codelets cannot run on a simulated IPU; a custom op is a C++ kernel "
             "(Builder::customOp)"),
      member("customCodeletCompileFlags", &S::customCodeletCompileFlags, N, "\"\"",
             "flags for customCodelets, which is refused"),
      member("enableLoadAndOffloadRNGState", &S::enableLoadAndOffloadRNGState, N, "false",
             "getRNGState() and setRNGState() work whether it is set or not: xtrain's random "
             "numbers are a function of the session's seed and its execution count"),
      member("opxAliasChecking", &S::opxAliasChecking, N, "false",
             "it checks PopART's lowering to Poplar, which xtrain does not have"),
      member("opxModifyChecking", &S::opxModifyChecking, N, "false",
             "it checks PopART's lowering to Poplar, which xtrain does not have"),
      member("enableInplaceAmbiguityChecking", &S::enableInplaceAmbiguityChecking, N, "false",
             "it checks PopART's inplacing transforms, which xtrain does not run"),
      {"compilationProgressLogger", H,
       "called with (0, total) when prepareDevice starts building and (total, total) when it is "
       "done",
       "unset", [](const S& o) { return !o.compilationProgressLogger; },
       [](const S& o) { return showValue(o.compilationProgressLogger); }},
      member("compilationProgressTotal", &S::compilationProgressTotal, H, "100",
             "the total passed to compilationProgressLogger; it must be >= 1"),
      // Host transfers.
      member("disableGradAccumulationTensorStreams", &S::disableGradAccumulationTensorStreams, N,
             "false", kHostStreams),
      member("disableOptimizerStateTensorStreams", &S::disableOptimizerStateTensorStreams, N,
             "false", kHostStreams),
      member("rearrangeAnchorsOnHost", &S::rearrangeAnchorsOnHost, N, "true", kHostStreams),
      member("rearrangeStreamsOnHost", &S::rearrangeStreamsOnHost, N, "false", kHostStreams),
      member("enablePrefetchDatastreams", &S::enablePrefetchDatastreams, N, "true", kHostStreams),
      member("defaultBufferingDepth", &S::defaultBufferingDepth, N, "1", kHostStreams),
      member("defaultPrefetchBufferingDepth", &S::defaultPrefetchBufferingDepth, N, "1",
             kHostStreams),
      member("bufferingDepthMap", &S::bufferingDepthMap, N, "{}", kHostStreams),
      member("prefetchBufferingDepthMap", &S::prefetchBufferingDepthMap, N, "{}", kHostStreams),
      member("groupHostSync", &S::groupHostSync, N, "false", kHostStreams),
      member("enableMergeExchange", &S::enableMergeExchange, N, "true", kHostStreams),
      member("enableEfficientOverlapIOTopoCons", &S::enableEfficientOverlapIOTopoCons, N, "false",
             kPoplarSchedule),
      member("numIOTiles", &S::numIOTiles, N, "0",
             "a simulated IPU has no tiles to set aside for IO"),
      member("updatableNamedBuffers", &S::updatableNamedBuffers, N, "[]",
             "weightsFromHost copies every weight; there is no buffersFromHost"),
      // Outlining and subgraphs.
      member("enableOutlining", &S::enableOutlining, N, "true", kOutlining),
      member("enableOutliningCopyCostPruning", &S::enableOutliningCopyCostPruning, N, "true",
             kOutlining),
      member("outlineThreshold", &S::outlineThreshold, N, "1.0", kOutlining),
      member("outlineSequenceBreakCost", &S::outlineSequenceBreakCost, N, "10000.0", kOutlining),
      member("subgraphCopyingStrategy", &S::subgraphCopyingStrategy, N, "OnEnterAndExit",
             kOutlining),
      member("aliasZeroCopy", &S::aliasZeroCopy, N, "false", kOutlining),
      member("autodiffSettings", &S::autodiffSettings, N, "RecomputeAllNonInputs",
             "it stitches the autodiff of subgraphs; xtrain's graphs have no subgraphs"),
      member("replicatedCollectivesSettings", &S::replicatedCollectivesSettings, N, "all false",
             "xtrain's gradient reducer already merges gradients into buckets for its all-reduces"),
      member("useLoopCandidateCreator", &S::useLoopCandidateCreator, N, "false",
             "it chooses how Poplar lays out a constant used by a loop; xtrain has no loop ops"),
      // The scheduler.
      member("kahnTieBreaker", &S::kahnTieBreaker, N, "\"greedy\"", kPoplarSchedule),
      member("timeLimitScheduler", &S::timeLimitScheduler, N, "1e9", kPoplarSchedule),
      member("swapLimitScheduler", &S::swapLimitScheduler, N, "1e9", kPoplarSchedule),
      member("transitiveClosureOptimizationThreshold", &S::transitiveClosureOptimizationThreshold,
             N, "100000", kPoplarSchedule),
      member("serializedPoprithmsShiftGraphsDir", &S::serializedPoprithmsShiftGraphsDir, N, "\"\"",
             kPoplarSchedule),
      member("serializedPoprithmsAnnealGraphsDir", &S::serializedPoprithmsAnnealGraphsDir, N,
             "\"\"", kPoplarSchedule),
      // Reports and IR dumps.
      member("logDir", &S::logDir, H, "\"\"",
             "prepareDevice writes memory-report.txt there, and the session its dotChecks files"),
      member("dotChecks", &S::dotChecks, H, "{}",
             "the IR graph as Graphviz files <logDir>/<check>.dot at the checks Fwd0 (imported), "
             "Fwd1 (fused), Bwd0 (with the backward pass), PreAlias and Final (built), or All; an "
             "unknown check, or an empty logDir, is an error"),
      member("firstDotOp", &S::firstDotOp, H, "0",
             "the .dot files hold ops [firstDotOp, finalDotOp) of the schedule"),
      member("finalDotOp", &S::finalDotOp, H, "10000",
             "the .dot files hold ops [firstDotOp, finalDotOp) of the schedule"),
      member("dotOpNames", &S::dotOpNames, H, "false",
             "the .dot files label each op with its name too"),
      member("separateCallOpPdfs", &S::separateCallOpPdfs, N, "true", kDot),
      member("exportPoplarComputationGraph", &S::exportPoplarComputationGraph, R, "false",
             "there is no Poplar graph to export (not implemented)"),
      member("exportPoplarVertexGraph", &S::exportPoplarVertexGraph, R, "false",
             "there is no Poplar graph to export (not implemented)"),
      member("experimentalSettings", &S::experimentalSettings, N, "{}",
             "PopART's custom transforms and the tile mapping of host tensors; xtrain has "
             "neither"),
      member("developerSettings", &S::developerSettings, N, "{}",
             "the threshold of PopART's compile-time logger"),
  };
  return t;
}

}  // namespace

const char* toString(OptionState state) {
  switch (state) {
    case OptionState::Honoured: return "honoured";
    case OptionState::NoEffect: return "accepted, no effect";
    case OptionState::Refused: return "refused when set";
  }
  return "?";
}

const std::vector<OptionEntry>& sessionOptionTable() {
  static const std::vector<OptionEntry> table = makeTable();
  return table;
}

}  // namespace xtrain::session
