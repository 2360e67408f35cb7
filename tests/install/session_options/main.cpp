// Sets every member of xtrain::SessionOptions as a ported PopART C++ program would, against the
// installed headers. Prints the number of members set; exits 1 when a value does not read back.
#include <iostream>
#include <string>

#include "xtrain/sessionoptions.hpp"

int main() {
  using namespace xtrain;
  SessionOptions o;
  int set = 0;
  auto check = [&set](bool ok, const char* name) {
    ++set;
    if (!ok) std::cerr << "SessionOptions." << name << " did not read back\n";
    return ok;
  };
  bool ok = true;
#define SET(member, value) \
  o.member = value;        \
  ok = check(o.member == value, #member) && ok;

  SET(enableReplicatedGraphs, true)
  SET(replicatedGraphCount, 2)
  SET(enableDistributedReplicatedGraphs, true)
  SET(globalReplicationFactor, 4)
  SET(globalReplicaOffset, 2)
  SET(enableGradientAccumulation, true)
  SET(accumulationFactor, 4)
  SET(accumulationAndReplicationReductionType, ReductionType::Mean)
  SET(meanAccumulationAndReplicationReductionStrategy, MeanReductionStrategy::Running)
  o.activationTensorLocationSettings.minElementsForOffChip = 4;
  o.weightTensorLocationSettings.location.replicatedTensorSharding = ReplicatedTensorSharding::On;
  o.optimizerStateTensorLocationSettings = TensorLocationSettings{TensorLocation{}, 2, 16};
  o.accumulatorTensorLocationSettings.location.storage = TensorStorage::OnChip;
  o.tensorLocationSettingsOverride["w"] = TensorLocation{};
  o.tensorLocationSettingsOverride["w"].loadTileSet = TileSet::IO;
  set += 5;
  SET(syntheticDataMode, SyntheticDataMode::RandomNormal)
  SET(enableStochasticRounding, true)
  o.automaticLossScalingSettings.enabled = true;
  o.automaticLossScalingSettings.gradientTensorTrackingMethod =
      GradientTensorTrackingMethod::ConvAndMatmulGradients;
  ++set;
  SET(enableFloatingPointChecks, true)
  SET(enableStableNorm, true)
  SET(enableNonStableSoftmax, true)
  SET(partialsTypeMatMuls, std::string("float"))
  SET(ensureFp32LossScaleTensor, true)
  SET(throwIfLog2ScaleTensorNotInRange, false)
  SET(enableSupportedDataTypeCasting, false)
  SET(groupNormStridedChannelGrouping, true)
  SET(batchNormRunningVariance, std::string("pytorch"))
  SET(strictOpVersions, false)
  SET(enableFullyConnectedPass, false)
  SET(enableSerializedMatmuls, false)
  SET(decomposeGradSum, true)
  SET(enableConstantFoldingOfMultipleConsumers, false)
  SET(autoRecomputation, RecomputationType::Standard)
  SET(explicitRecomputation, true)
  SET(enableExplicitMainLoops, true)
  SET(useHostCopyOps, true)
  o.enableExplicitIR(false);
  ok = check(!o.useHostCopyOps && !o.enableExplicitMainLoops && !o.explicitRecomputation,
             "enableExplicitIR") &&
       ok;
  SET(virtualGraphMode, VirtualGraphMode::Manual)
  SET(virtualGraphSplitRatios, (std::vector<float>{0.5f, 0.5f}))
  SET(enablePipelining, true)
  o.executionPhaseSettings.phases = 2;
  o.executionPhaseSettings.activationIOSchedule = ExecutionPhaseIOSchedule::OnDemand;
  o.accumulateOuterFragmentSettings =
      AccumulateOuterFragmentSettings{AccumulateOuterFragmentSchedule::OverlapCycleOptimized, {1}};
  o.batchSerializationSettings.factor = 4;
  o.batchSerializationSettings.transformContext = BatchSerializationTransformContext::Bwd;
  o.batchSerializationSettings.method = BatchSerializationMethod::Loop;
  o.batchSerializationSettings.batchSchedule = BatchSerializationBatchSchedule::OverlapOnIo;
  set += 3;
  SET(createImplicitPipeliningFwdOnlyProgram, true)
  SET(stashAllTensorsInferencePipeline, true)
  SET(mergeVarUpdate, MergeVarUpdateType::AutoLoose)
  SET(mergeVarUpdateMemThreshold, 5000)
  SET(looseThresholdAtPeak, 100)
  SET(delayVarUpdates, false)
  SET(scheduleNonWeightUpdateGradientConsumersEarly, true)
  SET(compileEngine, false)
  SET(constantWeights, false)
  SET(enableEngineCaching, true)
  SET(enableVariablesCaching, false)
  SET(cachePath, std::string("/tmp/cache"))
  o.engineOptions["autoReport.all"] = "true";
  o.reportOptions["showExecutionSteps"] = "true";
  o.convolutionOptions["partialsType"] = "half";
  o.lstmOptions["availableMemoryProportion"] = "0.3";
  o.matmulOptions["partialsType"] = "float";
  o.gclOptions["useSynclessCollectives"] = "true";
  set += 6;
  SET(instrumentWithHardwareCycleCounter, true)
  SET(hardwareInstrumentations, (std::set<Instrumentation>{Instrumentation::Inner}))
  SET(customCodelets, (std::vector<std::string>{"codelet.cpp"}))
  SET(customCodeletCompileFlags, std::string("-g"))
  SET(enableLoadAndOffloadRNGState, true)
  SET(opxAliasChecking, true)
  SET(opxModifyChecking, true)
  SET(enableInplaceAmbiguityChecking, true)
  o.compilationProgressLogger = [](int progress, int total) {
    std::cout << "progress " << progress << "/" << total << "\n";
  };
  ++set;
  SET(compilationProgressTotal, 10)
  SET(disableGradAccumulationTensorStreams, true)
  SET(disableOptimizerStateTensorStreams, true)
  SET(rearrangeAnchorsOnHost, false)
  SET(rearrangeStreamsOnHost, true)
  SET(enablePrefetchDatastreams, false)
  SET(defaultBufferingDepth, 2u)
  SET(defaultPrefetchBufferingDepth, 2u)
  o.bufferingDepthMap["x"] = 3;
  o.prefetchBufferingDepthMap["x"] = 3;
  set += 2;
  SET(groupHostSync, true)
  SET(enableMergeExchange, false)
  SET(enableEfficientOverlapIOTopoCons, true)
  SET(numIOTiles, 32)
  SET(updatableNamedBuffers, (std::vector<TensorId>{"w"}))
  SET(enableOutlining, false)
  SET(enableOutliningCopyCostPruning, false)
  SET(outlineThreshold, 2.5f)
  SET(outlineSequenceBreakCost, 5.0f)
  SET(subgraphCopyingStrategy, SubgraphCopyingStrategy::JustInTime)
  SET(aliasZeroCopy, true)
  o.autodiffSettings.stitchStrategy = AutodiffStitchStrategy::SafeAddFwdOutputs;
  o.replicatedCollectivesSettings.mergeAllReduceCollectives = true;
  set += 2;
  SET(useLoopCandidateCreator, true)
  SET(kahnTieBreaker, std::string("fifo"))
  SET(timeLimitScheduler, 10.0)
  SET(swapLimitScheduler, int64_t{100})
  SET(transitiveClosureOptimizationThreshold, size_t{10})
  SET(serializedPoprithmsShiftGraphsDir, std::string("/tmp/shift"))
  SET(serializedPoprithmsAnnealGraphsDir, std::string("/tmp/anneal"))
  SET(logDir, std::string("/tmp/reports"))
  SET(dotChecks, (std::set<std::string>{"Final"}))
  SET(firstDotOp, 1)
  SET(finalDotOp, 50)
  SET(dotOpNames, true)
  SET(separateCallOpPdfs, false)
  SET(exportPoplarComputationGraph, true)
  SET(exportPoplarVertexGraph, true)
  SessionOptions::ExperimentalSettings experimental;
  experimental.createHostTransferableTensorWithOffset = true;
  experimental.customTransformApplierSettings["Fwd0"] = {"Transform A"};
  o.experimentalSettings = experimental;
  SessionOptions::DeveloperSettings developer;
  developer.timePartitionLoggerThresholdPercentage = 5.0;
  o.developerSettings = developer;
  set += 2;
#undef SET
  ok = check(o.getGlobalReplicationFactor() == 4 && o.getAccumulationFactor() == 4 &&
                 o.autoRecomputationEnabled(),
             "the getters") &&
       ok;
  std::cout << "set " << set << " SessionOptions members\n";
  return ok ? 0 : 1;
}
