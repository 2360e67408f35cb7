"""Every member of SessionOptions (docs/session-options.md lists them): it exists with PopART's
default, a value of its type round trips, a value of the wrong type raises TypeError naming it; the
dict members write back when changed in place (PopART's DictWrapper); enableExplicitIR sets its
three members; a session refuses a refused member, honours compilationProgressLogger and
enableFloatingPointChecks.
"""
import os
import re
import unittest

import numpy as np

import xtrain as popart

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "session-options.md")


def documented_members():
    """The member names of the '## Members' table of docs/session-options.md."""
    names, in_members = [], False
    with open(DOC) as f:
        for line in f:
            if line.startswith("## "):
                in_members = line.strip() == "## Members"
            m = re.match(r"\| `(\w+)` \|", line)
            if in_members and m:
                names.append(m.group(1))
    return names


def location():
    return popart.TensorLocation(popart.TensorStorage.OnChip)


# name -> (PopART's default, another valid value, a value of the wrong type). Settings objects and
# the callable are checked by the tests below them.
MEMBERS = {
    "enableReplicatedGraphs": (False, True, 1),
    "replicatedGraphCount": (1, 2, "2"),
    "enableDistributedReplicatedGraphs": (False, True, 1),
    "globalReplicationFactor": (1, 4, 4.0),
    "globalReplicaOffset": (0, 2, None),
    "enableGradientAccumulation": (False, True, 0),
    "accumulationFactor": (1, 4, 4.5),
    "accumulationAndReplicationReductionType": (
        popart.ReductionType.Sum, popart.ReductionType.Mean, "Mean"),
    "meanAccumulationAndReplicationReductionStrategy": (
        popart.MeanReductionStrategy.Post, popart.MeanReductionStrategy.Running, 0),
    "tensorLocationSettingsOverride": ({}, {"w": location()}, ["w"]),
    "syntheticDataMode": (popart.SyntheticDataMode.Off, popart.SyntheticDataMode.Zeros, 1),
    "enableStochasticRounding": (False, True, "no"),
    "enableFloatingPointChecks": (False, True, 1),
    "enableStableNorm": (False, True, 1),
    "enableNonStableSoftmax": (False, True, 1),
    "partialsTypeMatMuls": ("", "half", 16),
    "ensureFp32LossScaleTensor": (False, True, 1),
    "throwIfLog2ScaleTensorNotInRange": (True, False, 0),
    "enableSupportedDataTypeCasting": (True, False, 0),
    "groupNormStridedChannelGrouping": (False, True, 1),
    "strictOpVersions": (True, False, 0),
    "enableFullyConnectedPass": (True, False, 0),
    "enableSerializedMatmuls": (True, False, 0),
    "decomposeGradSum": (False, True, 1),
    "enableConstantFoldingOfMultipleConsumers": (True, False, 0),
    "batchNormRunningVariance": ("onnx", "pytorch", 1),
    "autoRecomputation": (
        popart.RecomputationType.NoRecompute, popart.RecomputationType.Standard, "Standard"),
    "explicitRecomputation": (False, True, 1),
    "enableExplicitMainLoops": (False, True, 1),
    "useHostCopyOps": (False, True, 1),
    "virtualGraphMode": (popart.VirtualGraphMode.Off, popart.VirtualGraphMode.Auto, 2),
    "virtualGraphSplitRatios": ([], [0.5, 0.5], 0.5),
    "enablePipelining": (False, True, 1),
    "createImplicitPipeliningFwdOnlyProgram": (False, True, 1),
    "stashAllTensorsInferencePipeline": (False, True, 1),
    "mergeVarUpdate": (popart.MergeVarUpdateType.Off, popart.MergeVarUpdateType.All, "All"),
    "mergeVarUpdateMemThreshold": (1000000, 500, 1.5),
    "looseThresholdAtPeak": (8000, 100, "100"),
    "delayVarUpdates": (True, False, 0),
    "scheduleNonWeightUpdateGradientConsumersEarly": (False, True, 1),
    "compileEngine": (True, False, 0),
    "constantWeights": (True, False, 0),
    "enableEngineCaching": (False, True, 1),
    "enableVariablesCaching": (True, False, 0),
    "cachePath": ("session_cache", "/tmp/cache", 1),
    "engineOptions": ({}, {"autoReport.all": "true"}, {"autoReport.all": True}),
    "reportOptions": ({}, {"showExecutionSteps": "true"}, [1]),
    "convolutionOptions": ({}, {"partialsType": "half"}, {1: "x"}),
    "lstmOptions": ({}, {"availableMemoryProportion": "0.2"}, "x"),
    "matmulOptions": ({}, {"partialsType": "float"}, None),
    "gclOptions": ({}, {"useSynclessCollectives": "true"}, 3),
    "instrumentWithHardwareCycleCounter": (False, True, 1),
    "hardwareInstrumentations": (
        {popart.Instrumentation.Outer}, {popart.Instrumentation.Inner}, {"Inner"}),
    "customCodelets": ([], ["codelet.cpp"], "codelet.cpp"),
    "customCodeletCompileFlags": ("", "-g", ["-g"]),
    "enableLoadAndOffloadRNGState": (False, True, 1),
    "opxAliasChecking": (False, True, 1),
    "opxModifyChecking": (False, True, 1),
    "enableInplaceAmbiguityChecking": (False, True, 1),
    "compilationProgressTotal": (100, 10, 10.0),
    "disableGradAccumulationTensorStreams": (False, True, 1),
    "disableOptimizerStateTensorStreams": (False, True, 1),
    "rearrangeAnchorsOnHost": (True, False, 0),
    "rearrangeStreamsOnHost": (False, True, 1),
    "enablePrefetchDatastreams": (True, False, 0),
    "defaultBufferingDepth": (1, 3, "3"),
    "defaultPrefetchBufferingDepth": (1, 2, 2.0),
    "bufferingDepthMap": ({}, {"x": 2}, {"x": "2"}),
    "prefetchBufferingDepthMap": ({}, {"x": 3}, {"x": 3.0}),
    "groupHostSync": (False, True, 1),
    "enableMergeExchange": (True, False, 0),
    "enableEfficientOverlapIOTopoCons": (False, True, 1),
    "numIOTiles": (0, 32, "32"),
    "updatableNamedBuffers": ([], ["w"], "w"),
    "enableOutlining": (True, False, 0),
    "enableOutliningCopyCostPruning": (True, False, 0),
    "outlineThreshold": (1.0, 2.5, "2.5"),
    "outlineSequenceBreakCost": (10000.0, 5.0, None),
    "subgraphCopyingStrategy": (
        popart.SubgraphCopyingStrategy.OnEnterAndExit, popart.SubgraphCopyingStrategy.JustInTime,
        1),
    "aliasZeroCopy": (False, True, 1),
    "useLoopCandidateCreator": (False, True, 1),
    "kahnTieBreaker": ("greedy", "fifo", 1),
    "timeLimitScheduler": (1e9, 10.0, "10"),
    "swapLimitScheduler": (1000000000, 100, 1e2),
    "transitiveClosureOptimizationThreshold": (100000, 10, -1.0),
    "serializedPoprithmsShiftGraphsDir": ("", "/tmp/shift", 1),
    "serializedPoprithmsAnnealGraphsDir": ("", "/tmp/anneal", 1),
    "logDir": ("", "/tmp/reports", 1),
    "dotChecks": (set(), {"Final"}, "Final"),
    "firstDotOp": (0, 5, "5"),
    "finalDotOp": (10000, 50, "50"),
    "dotOpNames": (False, True, 1),
    "separateCallOpPdfs": (True, False, 0),
    "exportPoplarComputationGraph": (False, True, 1),
    "exportPoplarVertexGraph": (False, True, 1),
}

# Settings objects: name -> (class, a field, its default, another value).
SETTINGS = {
    "activationTensorLocationSettings": (popart.TensorLocationSettings, "minElementsForOffChip",
                                         2, 4),
    "weightTensorLocationSettings": (popart.TensorLocationSettings,
                                     "minElementsForReplicatedTensorSharding", 8192, 16),
    "optimizerStateTensorLocationSettings": (popart.TensorLocationSettings,
                                             "minElementsForOffChip", 2, 8),
    "accumulatorTensorLocationSettings": (popart.TensorLocationSettings, "minElementsForOffChip",
                                          2, 9),
    "automaticLossScalingSettings": (popart.AutomaticLossScalingSettings, "enabled", False, True),
    "executionPhaseSettings": (popart.ExecutionPhaseSettings, "phases", 0, 4),
    "accumulateOuterFragmentSettings": (
        popart.AccumulateOuterFragmentSettings, "schedule",
        popart.AccumulateOuterFragmentSchedule.Serial,
        popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized),
    "batchSerializationSettings": (popart.BatchSerializationSettings, "factor", 0, 4),
    "autodiffSettings": (popart.AutodiffSettings, "stitchStrategy",
                         popart.AutodiffStitchStrategy.RecomputeAllNonInputs,
                         popart.AutodiffStitchStrategy.AddFwdOutputs),
    "replicatedCollectivesSettings": (popart.ReplicatedCollectivesSettings,
                                      "mergeAllReduceCollectives", False, True),
    "experimentalSettings": (popart.ExperimentalSettings,
                             "createHostTransferableTensorWithOffset", False, True),
    "developerSettings": (popart.DeveloperSettings, "timePartitionLoggerThresholdPercentage",
                          1.0, 5.0),
}

OTHER = {"enableExplicitIR", "compilationProgressLogger"}


def add_model():
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [3]), "a")
    o = builder.aiOnnx.log([a])
    builder.addOutputTensor(o)
    return builder.getModelProto(), o


def session(opts):
    proto, o = add_model()
    return popart.InferenceSession(
        proto, deviceInfo=popart.DeviceManager().createCpuDevice(), userOptions=opts,
        dataFlow=popart.DataFlow(1, {o: popart.AnchorReturnType("ALL")})), o


class MembersTest(unittest.TestCase):

    def test_the_test_covers_every_documented_member(self):
        documented = set(documented_members())
        self.assertGreater(len(documented), 100)
        covered = set(MEMBERS) | set(SETTINGS) | OTHER
        self.assertEqual(documented - covered, set(), "documented members this test lacks")
        self.assertEqual(covered - documented, set(), "members the doc lacks")

    def test_defaults_round_trip_and_types(self):
        for name, (default, other, wrong) in MEMBERS.items():
            with self.subTest(name=name):
                opts = popart.SessionOptions()
                self.assertEqual(getattr(opts, name), default)
                setattr(opts, name, other)
                self.assertEqual(getattr(opts, name), other)
                with self.assertRaisesRegex(TypeError, "SessionOptions." + name):
                    setattr(opts, name, wrong)
                self.assertEqual(getattr(opts, name), other)

    def test_settings_are_changed_in_place(self):
        for name, (cls, field, default, other) in SETTINGS.items():
            with self.subTest(name=name):
                opts = popart.SessionOptions()
                self.assertIsInstance(getattr(opts, name), cls)
                self.assertEqual(getattr(getattr(opts, name), field), default)
                setattr(getattr(opts, name), field, other)
                self.assertEqual(getattr(getattr(opts, name), field), other)
                fresh = cls()
                setattr(opts, name, fresh)
                self.assertEqual(getattr(getattr(opts, name), field), default)
                with self.assertRaisesRegex(TypeError, "SessionOptions." + name):
                    setattr(opts, name, 1)

    def test_settings_constructors_take_popart_keywords(self):
        b = popart.BatchSerializationSettings(
            factor=2, concatOnVirtualGraphChange=False, concatOnExecutionPhaseChange=True,
            concatOnPipelineStageChange=True,
            transformContext=popart.BatchSerializationTransformContext.Bwd,
            method=popart.BatchSerializationMethod.Loop,
            batchSchedule=popart.BatchSerializationBatchSchedule.Scheduler)
        self.assertEqual((b.factor, b.concatOnVirtualGraphChange, b.method),
                         (2, False, popart.BatchSerializationMethod.Loop))
        self.assertEqual(popart.BatchSerializationTransformContext.Backward,
                         popart.BatchSerializationTransformContext.Bwd)
        e = popart.ExecutionPhaseSettings(phases=3, stages=1)
        self.assertEqual((e.phases, e.stages, e.optimizerStateIOSchedule),
                         (3, 1, popart.ExecutionPhaseIOSchedule.OnDemand))
        a = popart.AccumulateOuterFragmentSettings(
            popart.AccumulateOuterFragmentSchedule.Scheduler, [1, 2])
        self.assertEqual(a.excludedVirtualGraphs, [1, 2])
        loc = popart.TensorLocation(popart.TensorStorage.OnChip)
        self.assertEqual((loc.loadTileSet, loc.storageTileSet),
                         (popart.TileSet.Compute, popart.TileSet.Compute))
        als = popart.AutomaticLossScalingSettings(
            True, gradientTensorTrackingMethod=popart.GradientTensorTrackingMethod.
            ConvAndMatmulGradients)
        self.assertEqual(als.gradientTensorTrackingMethod,
                         popart.GradientTensorTrackingMethod.ConvAndMatmulGradients)

    def test_dicts_write_back(self):
        opts = popart.SessionOptions()
        opts.engineOptions["autoReport.all"] = "true"
        opts.engineOptions.update({"autoReport.directory": "/tmp/r"})
        self.assertEqual(opts.engineOptions,
                         {"autoReport.all": "true", "autoReport.directory": "/tmp/r"})
        del opts.engineOptions["autoReport.all"]
        self.assertEqual(opts.engineOptions, {"autoReport.directory": "/tmp/r"})
        opts.bufferingDepthMap["x"] = 3
        self.assertEqual(opts.bufferingDepthMap, {"x": 3})
        with self.assertRaisesRegex(TypeError, r"SessionOptions.convolutionOptions\[k\]"):
            opts.convolutionOptions["k"] = 1

    def test_enable_explicit_ir(self):
        opts = popart.SessionOptions()
        opts.enableExplicitIR(True)
        self.assertTrue(opts.useHostCopyOps and opts.enableExplicitMainLoops
                        and opts.explicitRecomputation)
        opts.enableExplicitIR(False)
        self.assertFalse(opts.useHostCopyOps or opts.enableExplicitMainLoops
                         or opts.explicitRecomputation)

    def test_unknown_member(self):
        with self.assertRaisesRegex(AttributeError, "enableRecomputation"):
            popart.SessionOptions().enableRecomputation = True


class InSessionTest(unittest.TestCase):

    def test_refused_member(self):
        opts = popart.SessionOptions()
        opts.autoRecomputation = popart.RecomputationType.Pipeline
        with self.assertRaisesRegex(popart.popart_exception,
                                    "autoRecomputation = Pipeline .*not implemented"):
            session(opts)

    def test_compilation_progress_logger(self):
        calls = []
        opts = popart.SessionOptions()
        opts.compilationProgressLogger = lambda progress, total: calls.append((progress, total))
        opts.compilationProgressTotal = 10
        s, _ = session(opts)
        s.prepareDevice()
        self.assertEqual(calls, [(0, 10), (10, 10)])
        opts.compilationProgressLogger = None
        self.assertIsNone(opts.compilationProgressLogger)
        with self.assertRaisesRegex(TypeError, "compilationProgressLogger: expected a callable"):
            opts.compilationProgressLogger = 3

    def test_floating_point_checks(self):
        opts = popart.SessionOptions()
        opts.enableFloatingPointChecks = True
        s, o = session(opts)
        s.prepareDevice()
        anchors = s.initAnchorArrays()
        s.run(popart.PyStepIO({"a": np.ones(3, np.float32)}, anchors))
        with self.assertRaisesRegex(popart.popart_exception, "holds inf at element 1"):
            s.run(popart.PyStepIO({"a": np.array([1, 0, 1], np.float32)}, anchors))


if __name__ == "__main__":
    unittest.main()
