"""Every member of SessionOptions, as the list next to the struct describes it (through
docs/session-options.md, generated from it): it is a property with the documented default, a value
of its type round trips, values of the wrong type raise TypeError naming it; settings are changed in
place; the dict members write back when changed in place (PopART's DictWrapper); enableExplicitIR sets its
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
    """{name: (default text, state)} of the members table of docs/session-options.md, which is
    generated from include/xtrain/sessionoptions_members.hpp, the list the bindings are made from
    (tests/session/session_options_doc_test.cpp fails when the doc is stale)."""
    rows, in_members = {}, False
    with open(DOC) as f:
        for line in f:
            if line.startswith("## "):
                in_members = line.strip() == "## Members"
            m = re.match(r"\| `(\w+)` \| (.*?) \| (.*?) \|", line)
            if in_members and m:
                rows[m.group(1)] = (m.group(2), m.group(3))
    return rows


# The Python names of the enum values whose C++ name PopART's Python module does not use
# (include/xtrain/sessionoptions_settings.hpp): the doc shows the C++ name.
CPP_ENUM_NAMES = {("RecomputationType", "NoRecompute"): "None",
                  ("MergeVarUpdateType", "Off"): "None"}


def is_enum(value):
    return hasattr(type(value), "__members__") and hasattr(value, "name")


def enum_text(value):
    return CPP_ENUM_NAMES.get((type(value).__name__, value.name), value.name)


def default_matches(value, text):
    """Whether a Python default is the doc's default text (as the C++ list writes it)."""
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, (int, float)):
        return float(text) == value
    if isinstance(value, str):
        return text == '"' + value + '"'
    if is_enum(value):
        return text == enum_text(value)
    if isinstance(value, (list, dict, set)):
        items = sorted(enum_text(v) for v in value)
        brackets = "[]" if isinstance(value, list) else "{}"
        return text == brackets[0] + ", ".join(items) + brackets[1]
    if value is None:  # the callable compilationProgressLogger
        return text == "unset"
    return False


def is_settings(value):
    """A bound settings class (TensorLocationSettings, ...), changed in place."""
    return (type(value).__module__.startswith("xtrain") and not is_enum(value)
            and not isinstance(value, (dict, list, set)))


def scalar_samples(default):
    """(another valid value, values of the wrong type) for a scalar of the type of `default`."""
    if isinstance(default, bool):
        return not default, [int(default), "yes", None]
    if isinstance(default, int):
        return default + 1, [str(default), float(default), None, True]
    if isinstance(default, float):
        return default + 0.5, [str(default), None]
    if isinstance(default, str):
        return default + "x", [1, None, [default]]
    if is_enum(default):
        other = next(v for v in type(default).__members__.values() if v != default)
        return other, [int(default), default.name, None]
    return None


# The containers start empty, so their element type is given here: name -> (another valid value,
# a value of the wrong type). A container member the list gains needs a line here (the test says).
CONTAINERS = {
    "tensorLocationSettingsOverride": ({"w": popart.TensorLocation(popart.TensorStorage.OnChip)},
                                       ["w"]),
    "virtualGraphSplitRatios": ([0.5, 0.5], 0.5),
    "engineOptions": ({"autoReport.all": "true"}, {"autoReport.all": True}),
    "reportOptions": ({"showExecutionSteps": "true"}, [1]),
    "convolutionOptions": ({"partialsType": "half"}, {1: "x"}),
    "lstmOptions": ({"availableMemoryProportion": "0.2"}, "x"),
    "matmulOptions": ({"partialsType": "float"}, None),
    "gclOptions": ({"useSynclessCollectives": "true"}, 3),
    "hardwareInstrumentations": ({popart.Instrumentation.Inner}, {"Inner"}),
    "customCodelets": (["codelet.cpp"], "codelet.cpp"),
    "bufferingDepthMap": ({"x": 2}, {"x": "2"}),
    "prefetchBufferingDepthMap": ({"x": 3}, {"x": 3.0}),
    "updatableNamedBuffers": (["w"], "w"),
    "dotChecks": ({"Final"}, "Final"),
}

# PopART's defaults of fields of the settings classes (the classes, not SessionOptions' members).
SETTINGS_DEFAULTS = {
    "TensorLocationSettings": {"minElementsForOffChip": 2,
                               "minElementsForReplicatedTensorSharding": 8192},
    "AutomaticLossScalingSettings": {"enabled": False},
    "ExecutionPhaseSettings": {"phases": 0, "stages": 2},
    "AccumulateOuterFragmentSettings": {
        "schedule": popart.AccumulateOuterFragmentSchedule.Serial},
    "BatchSerializationSettings": {"factor": 0},
    "AutodiffSettings": {"stitchStrategy": popart.AutodiffStitchStrategy.RecomputeAllNonInputs},
    "ReplicatedCollectivesSettings": {"mergeAllReduceCollectives": False},
    "ExperimentalSettings": {"createHostTransferableTensorWithOffset": False},
    "DeveloperSettings": {"timePartitionLoggerThresholdPercentage": 1.0},
}


def settings_field(settings):
    """A field of a settings object of a scalar type, with another value of it."""
    for field in sorted(SETTINGS_DEFAULTS[type(settings).__name__]):
        samples = scalar_samples(getattr(settings, field))
        if samples:
            return field, samples[0]
    raise AssertionError(type(settings).__name__ + " has no scalar field to change")


def data_members():
    """The documented members that are data (enableExplicitIR is a method)."""
    return {name: row for name, row in documented_members().items() if row[0] != "(method)"}


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

    def test_the_bindings_have_every_documented_member(self):
        documented = set(documented_members())
        self.assertGreater(len(documented), 100)
        bound = {name for name in dir(popart.SessionOptions) if not name.startswith("_")}
        properties = {name for name in bound
                      if isinstance(getattr(popart.SessionOptions, name), property)}
        self.assertEqual(documented - bound, set(), "documented members Python lacks")
        self.assertEqual(properties - documented, set(), "properties the doc lacks")
        self.assertEqual(set(CONTAINERS) - documented, set(), "CONTAINERS names no member")

    def test_defaults_are_the_documented_ones(self):
        for name, (default_text, _) in data_members().items():
            value = getattr(popart.SessionOptions(), name)
            if is_settings(value):
                continue  # test_settings_are_changed_in_place
            with self.subTest(name=name):
                self.assertTrue(default_matches(value, default_text),
                                "%r is not the documented %s" % (value, default_text))

    def test_round_trip_and_types(self):
        for name in data_members():
            default = getattr(popart.SessionOptions(), name)
            if is_settings(default) or name == "compilationProgressLogger":
                continue  # tested below
            with self.subTest(name=name):
                if isinstance(default, (list, dict, set)):
                    self.assertIn(name, CONTAINERS, "a container member needs a CONTAINERS line")
                    other, wrongs = CONTAINERS[name][0], [CONTAINERS[name][1]]
                else:
                    other, wrongs = scalar_samples(default)
                opts = popart.SessionOptions()
                setattr(opts, name, other)
                self.assertEqual(getattr(opts, name), other)
                for wrong in wrongs:
                    with self.assertRaisesRegex(TypeError, "SessionOptions." + name):
                        setattr(opts, name, wrong)
                    self.assertEqual(getattr(opts, name), other)

    def test_settings_are_changed_in_place(self):
        settings = 0
        for name in data_members():
            if not is_settings(getattr(popart.SessionOptions(), name)):
                continue
            settings += 1
            with self.subTest(name=name):
                opts = popart.SessionOptions()
                cls = type(getattr(opts, name))
                for field, default in SETTINGS_DEFAULTS[cls.__name__].items():
                    self.assertEqual(getattr(getattr(opts, name), field), default, field)
                field, other = settings_field(getattr(opts, name))
                default = getattr(getattr(opts, name), field)
                setattr(getattr(opts, name), field, other)
                self.assertEqual(getattr(getattr(opts, name), field), other)
                setattr(opts, name, cls())
                self.assertEqual(getattr(getattr(opts, name), field), default)
                with self.assertRaisesRegex(TypeError, "SessionOptions." + name):
                    setattr(opts, name, 1)
        self.assertEqual(settings, 12)

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

    def test_popart_only_switches_take_both_values(self):
        # PopART programs switch these off (or constantWeights, on by default, off for
        # weights written after compiling); xtrain accepts either value and ignores them
        # (docs/session-options.md), but only as booleans.
        opts = popart.SessionOptions()
        for name, default in (("constantWeights", True), ("enableExplicitMainLoops", False),
                              ("useHostCopyOps", False)):
            self.assertIs(getattr(opts, name), default, name)
            for value in (not default, default):
                setattr(opts, name, value)
                self.assertIs(getattr(opts, name), value, name)
            with self.assertRaisesRegex(TypeError, name + r": expected bool, got str"):
                setattr(opts, name, "no")

    def test_unknown_member(self):
        with self.assertRaisesRegex(AttributeError, "enableRecomputation"):
            popart.SessionOptions().enableRecomputation = True


class InSessionTest(unittest.TestCase):

    def test_refused_member(self):
        # Pipeline recomputation recomputes pipeline stages: without pipelining it is refused.
        opts = popart.SessionOptions()
        opts.autoRecomputation = popart.RecomputationType.Pipeline
        with self.assertRaisesRegex(popart.popart_exception,
                                    "autoRecomputation = Pipeline .*enablePipelining is false"):
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
