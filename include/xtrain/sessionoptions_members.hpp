// Every member of SessionOptions described once, next to the struct: its name and where it is, its
// default as the docs show it, the values session creation accepts, what xtrain does with it on a
// simulated IPU (honoured, accepted with no effect, or refused when set) and why, and its Python
// docstring. The session's option table (src/session/option_table.cpp: the refusals and the debug
// lines of members with no effect), the Python bindings (python/src/options.cpp) and the member and
// range tables of docs/session-options.md (scripts/update-session-options-doc;
// tests/session/session_options_doc_test.cpp fails when they are stale) are all made from this
// list, so a new member of SessionOptions is one entry here, in the header's order.
#pragma once

#include <functional>
#include <set>
#include <tuple>
#include <type_traits>

#include "xtrain/api.hpp"
#include "xtrain/sessionoptions.hpp"

namespace xtrain {

enum class SessionOptionState {
  Honoured,  // takes effect (some values may still be refused; the reason says which)
  NoEffect,  // accepted; a value other than the default is logged once per session at debug level
  Refused,   // a value other than the default is an error at session creation (not implemented)
};

// One data member of SessionOptions, of type T.
template <class T>
struct XTRAIN_API SessionOptionMember {
  using Type = T;
  const char* name;  // PopART's name, e.g. "outlineThreshold"
  T SessionOptions::*member;
  SessionOptionState state;
  const char* defaultText;  // the default as docs/session-options.md shows it
  // The values session creation accepts (src/session/option_ranges.cpp checks them), "" when any
  // value of the type is in range.
  const char* range;
  const char* reason;  // why, in a phrase: the doc, the debug line and the refusal say it
  const char* doc = "See docs/session-options.md.";  // the Python docstring
  // Whether a value counts as the default (for a refused member: there is nothing to refuse);
  // nullptr: it equals the value of SessionOptions{}.
  bool (*isDefault)(const T&) = nullptr;
};

// A method of SessionOptions that sets members from one bool (enableExplicitIR).
struct XTRAIN_API SessionOptionMethod {
  const char* name;
  void (SessionOptions::*method)(bool);
  const char* argName;  // the argument's Python keyword
  SessionOptionState state;
  const char* defaultText;
  const char* reason;
  const char* doc;
};

namespace sessionoptions_list {

using S = SessionOptions;
inline constexpr SessionOptionState H = SessionOptionState::Honoured;
inline constexpr SessionOptionState N = SessionOptionState::NoEffect;
inline constexpr SessionOptionState R = SessionOptionState::Refused;

// Texts shared by several members.
inline constexpr const char* kPoplarSchedule =
    "it steers Poplar's scheduler; xtrain runs a session's ops in one fixed order";
inline constexpr const char* kOutlining =
    "outlining shares Poplar code between repeated subgraphs; xtrain's programs are straight "
    "lists of kernels";
inline constexpr const char* kHostStreams =
    "a simulated IPU shares the host's memory: inputs and anchors are copied straight from and to "
    "the StepIO, with no device stream to buffer, group or rearrange";
inline constexpr const char* kPipelined =
    "it steers how PopART lays a pipelined program out in Poplar; xtrain's pipeline has one "
    "schedule and stashes what each stage needs (docs/pipelining.md)";
inline constexpr const char* kDot = "xtrain's graphs have no call subgraphs to draw apart";
// Measured, not assumed: the session module's debug lines "session created in" and "prepareDevice
// in" (PhaseTimes) on bench/models/make_models.py's models; docs/performance.md, Session creation.
inline constexpr const char* kEngineCache =
    "not implemented, as not worth it: on the bench models (mlp, cnn, gpt, bert) session creation "
    "and prepareDevice take 30-120 ms, of which what a cache could skip (building the graph, "
    "fusion, autodiff, the memory check, the buffer plan) is 2.6-8.4 ms (6-28% of it, under one "
    "training step); reading the weights, making the oneDNN kernels (oneDNN stores none on a CPU) "
    "and filling the buffers are done either way (docs/performance.md, Session creation)";
inline constexpr const char* kEngineCacheUser =
    "used only by enableEngineCaching, which has no effect: nothing is read from or written to "
    "cachePath";
inline constexpr const char* kMergeVarUpdate =
    "merging VarUpdate ops changes Poplar's schedule and memory, not the result; xtrain's "
    "optimizer kernels update every weight in its own pass";
inline constexpr const char* kElementCounts =
    "minElementsForOffChip and minElementsForReplicatedTensorSharding: >= 0 (element counts)";
inline constexpr const char* kDotOps =
    "any int: the .dot files hold ops [max(0, first), min(ops, final)), as in PopART";

// name, member, state, default, range, reason[, Python docstring[, isDefault]]
inline constexpr auto kMembers = std::tuple{
    // Replication.
    SessionOptionMember{
        "enableReplicatedGraphs", &S::enableReplicatedGraphs, H, "false", "",
        "L local replicas, each with its own buffers on its own simulated IPU(s) and its own "
        "thread; the device must have a multiple of L IPUs",
        "Enable replication of graphs. Default: False."},
    SessionOptionMember{"replicatedGraphCount", &S::replicatedGraphCount, H, "1",
                        ">= 1, whether replication is enabled or not",
                        "the number of local replicas L when enableReplicatedGraphs is set",
                        "The number of model replications of this instance."},
    SessionOptionMember{
        "enableDistributedReplicatedGraphs", &S::enableDistributedReplicatedGraphs, H, "false", "",
        "the instances of a job (started by xrun, mpirun or srun) reduce their gradients "
        "through the comm layer; dist::configureSessionOptions sets it from the launcher",
        "Enable training with replicated graphs across multiple instances. Default: False."},
    SessionOptionMember{"globalReplicationFactor", &S::globalReplicationFactor, H, "1",
                        ">= 1, whether replication is distributed or not",
                        "G >= 1, at least L and a multiple of L (uniform instances), else an error",
                        "The total number of replicas in a multi-instance session."},
    SessionOptionMember{
        "globalReplicaOffset", &S::globalReplicaOffset, H, "0",
        "0 <= offset < globalReplicationFactor (which is 1 unless replication is distributed)",
        "0 <= offset < G and a multiple of L, else an error",
        "The first replica index that this instance is running."},
    // Gradient accumulation.
    SessionOptionMember{
        "enableGradientAccumulation", &S::enableGradientAccumulation, H, "false", "",
        "a factor > 1 without it is an error, as is accumulation in an inference session",
        "Enable gradient accumulation. Default: False."},
    SessionOptionMember{"accumulationFactor", &S::accumulationFactor, H, "1",
                        ">= 1, whether accumulation is enabled or not",
                        "micro-batches per weight update",
                        "The number of micro-batches to accumulate before applying the varUpdate."},
    SessionOptionMember{
        "accumulationAndReplicationReductionType", &S::accumulationAndReplicationReductionType, H,
        "Sum", "", "Sum and Mean; NoReduction is an error for gradients",
        "How gradients are reduced over accumulation and replication. Default: Sum."},
    SessionOptionMember{
        "meanAccumulationAndReplicationReductionStrategy",
        &S::meanAccumulationAndReplicationReductionStrategy, H, "Post", "",
        "Post: sums, divided once by af·G in the optimizer; Running: a running mean",
        "When to divide by the mean reduction factor. Default: Post."},
    // Tensor locations.
    SessionOptionMember{"activationTensorLocationSettings", &S::activationTensorLocationSettings, H,
                        "OnChip, sharding Off", kElementCounts,
                        "OnChip only: OffChip activations need execution phases and sharded "
                        "activations are refused",
                        "Tensor location settings for activation/gradient tensors."},
    SessionOptionMember{
        "weightTensorLocationSettings", &S::weightTensorLocationSettings, H,
        "OnChip, sharding Off, min 8192", kElementCounts,
        "OffChip storage for tensors of at least minElementsForOffChip elements, in "
        "streaming memory (docs/model-parallelism.md); replicated tensor sharding over any "
        "shardingDomain in training sessions (docs/replication.md); sharding in inference "
        "sessions is refused; the tile sets have no effect",
        "Tensor location for weight tensors."},
    SessionOptionMember{
        "optimizerStateTensorLocationSettings", &S::optimizerStateTensorLocationSettings, H,
        "OnChip, sharding Off, min 8192", kElementCounts, "as weightTensorLocationSettings",
        "Tensor location for optimizer state tensors."},
    SessionOptionMember{
        "accumulatorTensorLocationSettings", &S::accumulatorTensorLocationSettings, H,
        "OnChip, sharding Off, min 8192", kElementCounts,
        "as weightTensorLocationSettings; sharded accumulators with an accumulation factor "
        "> 1 are refused",
        "Tensor location for gradient accumulator tensors."},
    SessionOptionMember{
        "tensorLocationSettingsOverride", &S::tensorLocationSettingsOverride, H, "{}", "",
        "the storage of single weights, optimizer state and accumulators (it wins over the "
        "kind's settings and minimum); sharding follows the kind's settings",
        "Tensor locations of single tensors."},
    // Inputs, numerics and the optimizer.
    SessionOptionMember{"syntheticDataMode", &S::syntheticDataMode, H, "Off", "",
                        "Zeros, RandomUniform (floats in [-1, 1), integers over their type's "
                        "range, BOOL 0/1) and RandomNormal (N(0, 1); integers truncated) fill the "
                        "inputs without host data",
                        "Whether to use real or synthetic data for inputs. Default: Off."},
    SessionOptionMember{
        "enableStochasticRounding", &S::enableStochasticRounding, H, "false", "",
        "FLOAT16 weights and optimizer state are rounded stochastically when the optimizer "
        "stores them, the same on every replica (docs/optimizers.md section 7)",
        "Enable stochastic rounding. Default: False."},
    SessionOptionMember{
        "automaticLossScalingSettings", &S::automaticLossScalingSettings, H, "enabled false",
        "updatePeriod, growthInterval and growthFactor: >= 1; backoffFactor: in (0, 1); with "
        "automatic loss scaling on, binEdgeLocation and thresholdUpperCountProportion in [0, 1] "
        "(PopART's messages, at session creation)",
        "PopART's histogram rule (docs/optimizers.md section 6.2): every updatePeriod steps the "
        "2-bin histogram of the tracked FLOAT16 gradients (gradientTensorTrackingMethod, "
        "toTrackTensors; bin edge binEdgeLocation x 65504), summed over micro-batches and "
        "replicas, halves lossScaleUpdateFactor when the upper proportion exceeds "
        "thresholdUpperCountProportion, else doubles it; finalLossScale anchorable. xtrain's "
        "`method = GradScaler` instead skips a step with an inf or nan gradient and backs off "
        "(growthInterval, growthFactor, backoffFactor)",
        "Automatic loss scaling settings."},
    SessionOptionMember{
        "enableFloatingPointChecks", &S::enableFloatingPointChecks, H, "false", "",
        "after every op, an inf or nan in a floating-point output is a runtime_error naming "
        "the op and the tensor (a step automatic loss scaling would skip throws instead); "
        "costs nothing when off"},
    SessionOptionMember{
        "enableStableNorm", &S::enableStableNorm, N, "false", "",
        "the norm kernels always compute the variance stably (two passes, or shifted sums "
        "in double), which is what true asks for"},
    SessionOptionMember{
        "enableNonStableSoftmax", &S::enableNonStableSoftmax, N, "false", "",
        "softmax always subtracts the row's maximum; the non-stable kernel is only faster on "
        "an IPU"},
    SessionOptionMember{
        "partialsTypeMatMuls", &S::partialsTypeMatMuls, H, "\"\"", "",
        "\"\" and \"float\": matmuls accumulate in FLOAT; \"half\": FLOAT16 matmuls (and "
        "their gradients) without their own partials type keep their sums in FLOAT16 (FLOAT "
        "matmuls ignore it, as Poplar does); any other value is an error",
        "The partials type of matmuls: \"\", \"float\" or \"half\"."},
    SessionOptionMember{
        "ensureFp32LossScaleTensor", &S::ensureFp32LossScaleTensor, H, "false", "",
        "with a FLOAT loss the loss scale is already FLOAT; with a FLOAT16 loss true is "
        "refused (not implemented: the scale has the loss's type)"},
    SessionOptionMember{"throwIfLog2ScaleTensorNotInRange", &S::throwIfLog2ScaleTensorNotInRange, N,
                        "true", "",
                        "it concerns Poplar's fused FLOAT8 ops, which xtrain does not have"},
    SessionOptionMember{
        "enableSupportedDataTypeCasting", &S::enableSupportedDataTypeCasting, N, "true", "",
        "xtrain's kernels compute INT64 and UINT64 in 64 bits: nothing needs casting"},
    SessionOptionMember{
        "groupNormStridedChannelGrouping", &S::groupNormStridedChannelGrouping, H, "false", "",
        "GroupNormalization's group g holds channels g, g + G, g + 2G, ... (Poplar's strided "
        "grouping) instead of G consecutive blocks of channels"},
    SessionOptionMember{
        "strictOpVersions", &S::strictOpVersions, N, "true", "",
        "the importer always checks each op's type, domain and opset against the kernels "
        "it has and names every one it lacks; false, a fallback to another version, changes "
        "nothing"},
    SessionOptionMember{"enableFullyConnectedPass", &S::enableFullyConnectedPass, N, "true", "",
                        "a planning option of Poplar's matmuls"},
    SessionOptionMember{"enableSerializedMatmuls", &S::enableSerializedMatmuls, N, "true", "",
                        "xtrain's matmul kernel does not serialize matmuls"},
    SessionOptionMember{
        "decomposeGradSum", &S::decomposeGradSum, N, "false", "",
        "it lowers the liveness of partial gradients on an IPU; autodiff's sums are computed "
        "as they are made"},
    SessionOptionMember{"enableConstantFoldingOfMultipleConsumers",
                        &S::enableConstantFoldingOfMultipleConsumers, N, "true", "",
                        "folding gives the same values either way; xtrain folds every foldable op"},
    SessionOptionMember{
        "batchNormRunningVariance", &S::batchNormRunningVariance, H, "\"onnx\"", "",
        "xtrain's own, not PopART's: the running variance BatchNormalization keeps in "
        "training, \"onnx\" (population, as ONNX defines it), \"pytorch\" (unbiased, as "
        "PyTorch keeps it) or \"auto\" (PyTorch's for a model whose producer is pytorch); "
        "any other value is an error (docs/onnx-import.md)",
        "xtrain's own: the running variance of BatchNormalization in training, \"onnx\" "
        "(population, the default), \"pytorch\" (unbiased) or \"auto\" (PyTorch's when the "
        "model's producer is pytorch)."},
    // Recomputation and explicit IR.
    SessionOptionMember{
        "autoRecomputation", &S::autoRecomputation, H, "None", "",
        "training sessions recompute forward ops in the backward pass instead of keeping "
        "their outputs: Standard everything but checkpoints chosen as PopART does, NormOnly "
        "the norms and a non-linearity after one, RecomputeAll every forward op; Pipeline "
        "(with enablePipelining) every forward op of each stage, from the stage's stashed inputs",
        "Recomputation of ops in the backward pass. Default: NoRecompute."},
    SessionOptionMember{"explicitRecomputation", &S::explicitRecomputation, N, "false", "",
                        "the recomputation of ops marked Recompute (Builder::"
                        "recomputeOutputInBackwardPass) is made of clones in xtrain's graph "
                        "either way; the results are the same"},
    SessionOptionMember{
        "enableExplicitMainLoops", &S::enableExplicitMainLoops, N, "false", "",
        "xtrain's loops over batches and accumulation steps are not IR ops; the results are "
        "the same"},
    SessionOptionMember{"useHostCopyOps", &S::useHostCopyOps, N, "false", "",
                        "host transfers are not IR ops in xtrain; the results are the same"},
    SessionOptionMethod{
        "enableExplicitIR", &S::enableExplicitIR, "enable", H, "(method)",
        "a method: enableExplicitIR(b) sets useHostCopyOps, enableExplicitMainLoops and "
        "explicitRecomputation to b",
        "Sets useHostCopyOps, enableExplicitMainLoops and explicitRecomputation."},
    // Model parallelism.
    SessionOptionMember{
        "virtualGraphMode", &S::virtualGraphMode, H, "Off", "",
        "Off ignores placement annotations; Manual runs each op on the IPU of its replica that "
        "its virtual graph (__ipu_number) names, Auto splits the model over the replica's IPUs "
        "(the device's IPUs over the local replicas), with IpuCopy ops between them "
        "(docs/model-parallelism.md); ExecutionPhases (phased execution) is refused",
        "How ops are placed on virtual graphs (IPUs of a replica): Off, Manual or Auto."},
    SessionOptionMember{"virtualGraphSplitRatios", &S::virtualGraphSplitRatios, H, "[]",
                        "each in (0, 1)",
                        "VirtualGraphMode::Auto's share of the model's cost per IPU: one ratio per "
                        "IPU of a replica, summing to 1; empty: equal shares",
                        "Split ratios of VirtualGraphMode.Auto."},
    SessionOptionMember{"enablePipelining", &S::enablePipelining, H, "false", "",
                        "the stages (__pipeline_stage, else the virtual graph) run pipelined over "
                        "the accumulation factor's micro-batches (fill, steady state, flush) with "
                        "activation stashes, and the weights update after the flush; needs "
                        "virtualGraphMode Manual or Auto and, training, gradient accumulation "
                        "with accumulationFactor >= 2 x stages - 1 (docs/pipelining.md)"},
    SessionOptionMember{"executionPhaseSettings", &S::executionPhaseSettings, N,
                        "phases 0, stages 2", "phases: >= 0; stages: 1 or 2",
                        "used only by VirtualGraphMode::ExecutionPhases, which is refused",
                        "Configuration settings for execution phases."},
    SessionOptionMember{"accumulateOuterFragmentSettings", &S::accumulateOuterFragmentSettings, N,
                        "Serial", "excludedVirtualGraphs: each >= 0", kPipelined,
                        "Configuration setting for operations in the accumulate outer fragment."},
    SessionOptionMember<BatchSerializationSettings>{
        "batchSerializationSettings", &S::batchSerializationSettings, H, "factor 0",
        "factor: >= 0; a factor > 1 must divide each streamed input's batch axis",
        "factor > 1: the ops that carry the batch (transformContext Fwd: the forward pass; Bwd: "
        "and the backward pass) are charged to the memory model one slice at a time and to the "
        "cycle model as factor launches on one slice each; the host computes the whole batch, so "
        "the numbers are an unserialized run's; method and batchSchedule change nothing more; "
        "Loop with Fwd in training is refused as in PopART, with pipelining or a training "
        "BatchNormalization as not implemented (docs/batch-serialization.md); factor 0 or 1: "
        "the other fields have no effect, as in PopART",
        "Configuration setting for batch serialization.",
        [](const BatchSerializationSettings& b) { return b.factor <= 1; }},
    SessionOptionMember{"createImplicitPipeliningFwdOnlyProgram",
                        &S::createImplicitPipeliningFwdOnlyProgram, N, "false", "", kPipelined},
    SessionOptionMember{"stashAllTensorsInferencePipeline", &S::stashAllTensorsInferencePipeline, N,
                        "false", "", kPipelined},
    // Variable updates.
    SessionOptionMember{"mergeVarUpdate", &S::mergeVarUpdate, N, "None", "", kMergeVarUpdate,
                        "Merging of VarUpdate ops. Default: Off."},
    SessionOptionMember{"mergeVarUpdateMemThreshold", &S::mergeVarUpdateMemThreshold, N, "1000000",
                        ">= 0", kMergeVarUpdate,
                        "The memory threshold of VarUpdate merging, in bytes."},
    SessionOptionMember{"looseThresholdAtPeak", &S::looseThresholdAtPeak, N, "8000", ">= 0",
                        kMergeVarUpdate,
                        "The threshold of AutoLoose VarUpdate merging at peak liveness, in bytes."},
    SessionOptionMember{
        "delayVarUpdates", &S::delayVarUpdates, N, "true", "",
        "weights are updated after the backward pass and the gradient reduction either way"},
    SessionOptionMember{"scheduleNonWeightUpdateGradientConsumersEarly",
                        &S::scheduleNonWeightUpdateGradientConsumersEarly, N, "false", "",
                        kPoplarSchedule},
    // The engine.
    SessionOptionMember{
        "compileEngine", &S::compileEngine, H, "true", "",
        "false: prepareDevice builds the session (memory check, kernels) but run() refuses "
        "to run"},
    SessionOptionMember{"constantWeights", &S::constantWeights, N, "true", "",
                        "xtrain never folds an inference session's weights into constants, so "
                        "weightsFromHost and writeWeights always reach them (as PopART's false)"},
    SessionOptionMember{"enableEngineCaching", &S::enableEngineCaching, N, "false", "",
                        kEngineCache},
    SessionOptionMember{"enableVariablesCaching", &S::enableVariablesCaching, N, "true", "",
                        kEngineCacheUser},
    SessionOptionMember{"cachePath", &S::cachePath, N, "\"session_cache\"", "", kEngineCacheUser,
                        "Folder to save the executable to."},
    SessionOptionMember{
        "engineOptions", &S::engineOptions, H, "{}", "",
        "autoReport.* (docs/reports.md), trace.* (docs/trace.md) and debug.allowOutOfMemory; "
        "an unknown key is an error",
        "Engine options: autoReport.*, trace.* (docs/session-options.md)."},
    SessionOptionMember{
        "reportOptions", &S::reportOptions, H, "{}", "",
        "the options of getSummaryReport() and getReport() (docs/reports.md); an unknown key "
        "is an error",
        "Options of the reports (reports.md)."},
    SessionOptionMember{"convolutionOptions", &S::convolutionOptions, N, "{}", "",
                        "options of Poplar's convolutions; xtrain's convolutions are oneDNN's",
                        "Poplar's convolution options."},
    SessionOptionMember{"lstmOptions", &S::lstmOptions, N, "{}", "",
                        "options of Poplar's LSTM; xtrain's LSTM is its own kernel",
                        "Poplar's LSTM options."},
    SessionOptionMember{"matmulOptions", &S::matmulOptions, N, "{}", "",
                        "options of Poplar's matmuls; xtrain's matmuls are its own kernels",
                        "Poplar's matmul options."},
    SessionOptionMember{
        "gclOptions", &S::gclOptions, N, "{}", "",
        "options of Graphcore's collectives library; xtrain's collectives are its comm layer",
        "GCL's options."},
    SessionOptionMember{"instrumentWithHardwareCycleCounter",
                        &S::instrumentWithHardwareCycleCounter, H, "false", "",
                        "getCycleCount() counts the simulated clock's cycles (docs/reports.md)"},
    SessionOptionMember<std::set<Instrumentation>>{
        "hardwareInstrumentations", &S::hardwareInstrumentations, H, "{Outer}", "",
        "the cycle counters getCycleCount(id) reads: Outer the whole run (id \"\"), Inner the "
        "last batch on each IPU of a replica (\"inner_ipu_N\"; docs/reports.md)",
        "What the cycle counter counts. Default: {Instrumentation.Outer}."},
    SessionOptionMember{
        "customCodelets", &S::customCodelets, R, "[]", "",
        "Poplar codelets cannot run on a simulated IPU; a custom op is a C++ kernel "
        "(Builder::customOp)",
        "Poplar codelet files (refused)."},
    SessionOptionMember{"customCodeletCompileFlags", &S::customCodeletCompileFlags, N, "\"\"", "",
                        "flags for customCodelets, which is refused",
                        "Compile flags for the custom codelets."},
    SessionOptionMember{
        "enableLoadAndOffloadRNGState", &S::enableLoadAndOffloadRNGState, N, "false", "",
        "getRNGState() and setRNGState() work whether it is set or not: xtrain's random "
        "numbers are a function of the session's seed and its execution count"},
    SessionOptionMember{"opxAliasChecking", &S::opxAliasChecking, N, "false", "",
                        "it checks PopART's lowering to Poplar, which xtrain does not have"},
    SessionOptionMember{"opxModifyChecking", &S::opxModifyChecking, N, "false", "",
                        "it checks PopART's lowering to Poplar, which xtrain does not have"},
    SessionOptionMember{"enableInplaceAmbiguityChecking", &S::enableInplaceAmbiguityChecking, N,
                        "false", "",
                        "it checks PopART's inplacing transforms, which xtrain does not run"},
    SessionOptionMember<std::function<void(int, int)>>{
        "compilationProgressLogger", &S::compilationProgressLogger, H, "unset", "",
        "called with (0, total) when prepareDevice starts building and (total, total) when it is "
        "done",
        "Called with (progress, total) as prepareDevice builds the session.",
        [](const std::function<void(int, int)>& f) { return !f; }},
    SessionOptionMember{"compilationProgressTotal", &S::compilationProgressTotal, H, "100", ">= 1",
                        "the total passed to compilationProgressLogger; it must be >= 1",
                        "The total given to compilationProgressLogger. Default: 100."},
    // Host transfers.
    SessionOptionMember{"disableGradAccumulationTensorStreams",
                        &S::disableGradAccumulationTensorStreams, N, "false", "", kHostStreams},
    SessionOptionMember{"disableOptimizerStateTensorStreams",
                        &S::disableOptimizerStateTensorStreams, N, "false", "", kHostStreams},
    SessionOptionMember{"rearrangeAnchorsOnHost", &S::rearrangeAnchorsOnHost, N, "true", "",
                        kHostStreams},
    SessionOptionMember{"rearrangeStreamsOnHost", &S::rearrangeStreamsOnHost, N, "false", "",
                        kHostStreams},
    SessionOptionMember{"enablePrefetchDatastreams", &S::enablePrefetchDatastreams, N, "true", "",
                        kHostStreams},
    SessionOptionMember{"defaultBufferingDepth", &S::defaultBufferingDepth, N, "1", ">= 1",
                        kHostStreams, "Default buffering depth."},
    SessionOptionMember{"defaultPrefetchBufferingDepth", &S::defaultPrefetchBufferingDepth, N, "1",
                        ">= 1", kHostStreams, "Deprecated alias of defaultBufferingDepth."},
    SessionOptionMember{"bufferingDepthMap", &S::bufferingDepthMap, N, "{}", "each value >= 1",
                        kHostStreams, "Buffering depth of single streams."},
    SessionOptionMember{"prefetchBufferingDepthMap", &S::prefetchBufferingDepthMap, N, "{}",
                        "each value >= 1", kHostStreams, "Deprecated alias of bufferingDepthMap."},
    SessionOptionMember{"groupHostSync", &S::groupHostSync, N, "false", "", kHostStreams},
    SessionOptionMember{"enableMergeExchange", &S::enableMergeExchange, N, "true", "",
                        kHostStreams},
    SessionOptionMember{"enableEfficientOverlapIOTopoCons", &S::enableEfficientOverlapIOTopoCons, N,
                        "false", "", kPoplarSchedule},
    SessionOptionMember{"numIOTiles", &S::numIOTiles, N, "0",
                        "0 (no IO tiles), or an even number >= 32 below the device's tiles per IPU",
                        "a simulated IPU has no tiles to set aside for IO",
                        "Number of IPU tiles dedicated to IO."},
    SessionOptionMember{"updatableNamedBuffers", &S::updatableNamedBuffers, N, "[]", "",
                        "weightsFromHost copies every weight; there is no buffersFromHost",
                        "Named buffers that buffersFromHost() updates."},
    // Outlining and subgraphs.
    SessionOptionMember{"enableOutlining", &S::enableOutlining, N, "true", "", kOutlining},
    SessionOptionMember{"enableOutliningCopyCostPruning", &S::enableOutliningCopyCostPruning, N,
                        "true", "", kOutlining},
    SessionOptionMember{
        "outlineThreshold", &S::outlineThreshold, N, "1.0",
        "any number but NaN (a negative threshold outlines everything, as in PopART; +inf nothing)",
        kOutlining, "The outlining threshold. Default: 1.0."},
    SessionOptionMember{"outlineSequenceBreakCost", &S::outlineSequenceBreakCost, N, "10000.0",
                        "any number but NaN", kOutlining,
                        "The penalty of breaking a sequence when outlining. Default: 10000.0."},
    SessionOptionMember{"subgraphCopyingStrategy", &S::subgraphCopyingStrategy, N, "OnEnterAndExit",
                        "", kOutlining,
                        "How subgraph inputs and outputs are copied. Default: OnEnterAndExit."},
    SessionOptionMember{"aliasZeroCopy", &S::aliasZeroCopy, N, "false", "", kOutlining},
    SessionOptionMember{"autodiffSettings", &S::autodiffSettings, N, "RecomputeAllNonInputs", "",
                        "it stitches the autodiff of subgraphs; xtrain's graphs have no subgraphs",
                        "Autodiff settings."},
    SessionOptionMember{
        "replicatedCollectivesSettings", &S::replicatedCollectivesSettings, N, "all false", "",
        "xtrain's gradient reducer already merges gradients into buckets for its all-reduces",
        "Merging of replicated collectives."},
    SessionOptionMember{
        "useLoopCandidateCreator", &S::useLoopCandidateCreator, N, "false", "",
        "it chooses how Poplar lays out a constant used by a loop; xtrain has no loop ops"},
    // The scheduler.
    SessionOptionMember{"kahnTieBreaker", &S::kahnTieBreaker, N, "\"greedy\"", "", kPoplarSchedule,
                        "The scheduler's tie breaker."},
    SessionOptionMember{"timeLimitScheduler", &S::timeLimitScheduler, N, "1e9",
                        ">= 0 seconds (inf: no limit; NaN refused)", kPoplarSchedule,
                        "The scheduler's time limit, in seconds."},
    SessionOptionMember{"swapLimitScheduler", &S::swapLimitScheduler, N, "1e9",
                        "any (PopART: <= 0 means no swaps)", kPoplarSchedule,
                        "The scheduler's limit of improving steps."},
    SessionOptionMember{"transitiveClosureOptimizationThreshold",
                        &S::transitiveClosureOptimizationThreshold, N, "100000", "any (a size)",
                        kPoplarSchedule,
                        "The scheduler's transitive closure optimization threshold."},
    SessionOptionMember{"serializedPoprithmsShiftGraphsDir", &S::serializedPoprithmsShiftGraphsDir,
                        N, "\"\"", "", kPoplarSchedule,
                        "The directory to serialize Poprithms graphs to."},
    SessionOptionMember{"serializedPoprithmsAnnealGraphsDir",
                        &S::serializedPoprithmsAnnealGraphsDir, N, "\"\"", "", kPoplarSchedule,
                        "The directory to serialize Poprithms graphs to (older name)."},
    // Reports and IR dumps.
    SessionOptionMember{
        "logDir", &S::logDir, H, "\"\"", "",
        "prepareDevice writes memory-report.txt there, and the session its dotChecks files",
        "A directory for reports to be written into."},
    SessionOptionMember{
        "dotChecks", &S::dotChecks, H, "{}", "",
        "the IR graph as Graphviz files <logDir>/<check>.dot at the checks Fwd0 (imported), "
        "Fwd1 (fused), Bwd0 (with the backward pass), PreAlias and Final (built), or All; an "
        "unknown check, or an empty logDir, is an error",
        "When to write .dot files of the IR (refused)."},
    SessionOptionMember{"firstDotOp", &S::firstDotOp, H, "0", kDotOps,
                        "the .dot files hold ops [firstDotOp, finalDotOp) of the schedule",
                        "The first op written to .dot files."},
    SessionOptionMember{"finalDotOp", &S::finalDotOp, H, "10000", kDotOps,
                        "the .dot files hold ops [firstDotOp, finalDotOp) of the schedule",
                        "The op after the last written to .dot files."},
    SessionOptionMember{"dotOpNames", &S::dotOpNames, H, "false", "",
                        "the .dot files label each op with its name too"},
    SessionOptionMember{"separateCallOpPdfs", &S::separateCallOpPdfs, N, "true", "", kDot},
    SessionOptionMember{"exportPoplarComputationGraph", &S::exportPoplarComputationGraph, R,
                        "false", "", "there is no Poplar graph to export (not implemented)"},
    SessionOptionMember{"exportPoplarVertexGraph", &S::exportPoplarVertexGraph, R, "false", "",
                        "there is no Poplar graph to export (not implemented)"},
    SessionOptionMember{
        "experimentalSettings", &S::experimentalSettings, N, "{}", "",
        "PopART's custom transforms and the tile mapping of host tensors; xtrain has "
        "neither",
        "Experimental settings."},
    SessionOptionMember{"developerSettings", &S::developerSettings, N, "{}",
                        "timePartitionLoggerThresholdPercentage: in [0, 100]",
                        "the threshold of PopART's compile-time logger", "Developer settings."}};

}  // namespace sessionoptions_list

// Calls visit(m) with each SessionOptionMember<T> and the SessionOptionMethod, in the header's
// order.
template <class Visit>
constexpr void forEachSessionOptionMember(Visit&& visit) {
  std::apply([&visit](const auto&... m) { (visit(m), ...); }, sessionoptions_list::kMembers);
}

}  // namespace xtrain
