"""SessionOptions, its settings and enums, CommGroup, ReplicaGrouping and VariableSettings.

Every property round trips, the defaults are those of include/xtrain/sessionoptions.hpp (which are
PopART's, popart-python-api.txt), a wrong type raises TypeError naming the member, and an unknown
attribute raises AttributeError naming it.
"""
import os
import subprocess
import sys
import unittest

import xtrain as popart


# name -> (C++ default, a different valid value, a value of the wrong type)
SCALAR_MEMBERS = {
    "enableReplicatedGraphs": (False, True, 1),
    "replicatedGraphCount": (1, 4, "4"),
    "enableDistributedReplicatedGraphs": (False, True, "yes"),
    "globalReplicationFactor": (1, 8, 8.0),
    "globalReplicaOffset": (0, 4, None),
    "enableGradientAccumulation": (False, True, 0),
    "accumulationFactor": (1, 3, 3.5),
    "logDir": ("", "/tmp/reports", 3),
    "enableStochasticRounding": (False, True, None),
    "enablePipelining": (False, True, "False"),
    "enableOutlining": (True, False, 0),
}

ENUM_MEMBERS = {
    "accumulationAndReplicationReductionType": (
        popart.ReductionType.Sum, popart.ReductionType.Mean),
    "meanAccumulationAndReplicationReductionStrategy": (
        popart.MeanReductionStrategy.Post, popart.MeanReductionStrategy.Running),
    "syntheticDataMode": (popart.SyntheticDataMode.Off, popart.SyntheticDataMode.RandomNormal),
    "virtualGraphMode": (popart.VirtualGraphMode.Off, popart.VirtualGraphMode.Manual),
}

LOCATION_MEMBERS = [
    "activationTensorLocationSettings",
    "weightTensorLocationSettings",
    "optimizerStateTensorLocationSettings",
    "accumulatorTensorLocationSettings",
]

# PopART's enum members (popart-python-api.txt), in xtrain's enums.
ENUMS = {
    "ReductionType": ["Mean", "NoReduction", "Sum"],
    "MeanReductionStrategy": ["Running", "Post"],
    "CommGroupType": ["All", "Consecutive", "Orthogonal", "Ungrouped"],
    "VariableRetrievalMode": ["OnePerGroup", "AllReduceReplicas", "AllReplicas"],
    "TensorStorage": ["OnChip", "OffChip"],
    "ReplicatedTensorSharding": ["Off", "On"],
    "SyntheticDataMode": ["Off", "Zeros", "RandomNormal", "RandomUniform"],
    "VirtualGraphMode": ["Off", "Manual", "Auto", "ExecutionPhases"],
}


class SessionOptionsTest(unittest.TestCase):
    def test_scalar_defaults_round_trip_and_type_errors(self):
        for name, (default, other, wrong) in SCALAR_MEMBERS.items():
            with self.subTest(member=name):
                opts = popart.SessionOptions()
                self.assertEqual(getattr(opts, name), default)
                self.assertIs(type(getattr(opts, name)), type(default))
                setattr(opts, name, other)
                self.assertEqual(getattr(opts, name), other)
                with self.assertRaisesRegex(TypeError, "SessionOptions." + name):
                    setattr(opts, name, wrong)
                self.assertEqual(getattr(opts, name), other)  # unchanged by the failed set

    def test_enum_defaults_round_trip_and_type_errors(self):
        for name, (default, other) in ENUM_MEMBERS.items():
            with self.subTest(member=name):
                opts = popart.SessionOptions()
                self.assertEqual(getattr(opts, name), default)
                setattr(opts, name, other)
                self.assertEqual(getattr(opts, name), other)
                # An enum member of another type, an int or a name is refused.
                for wrong in (popart.TensorStorage.OffChip, 1, other.name):
                    with self.assertRaisesRegex(TypeError, "SessionOptions." + name):
                        setattr(opts, name, wrong)

    def test_tensor_location_settings_members(self):
        for name in LOCATION_MEMBERS:
            with self.subTest(member=name):
                opts = popart.SessionOptions()
                tls = getattr(opts, name)
                self.assertIsInstance(tls, popart.TensorLocationSettings)
                self.assertEqual(tls.minElementsForOffChip, 2)
                self.assertEqual(tls.minElementsForReplicatedTensorSharding, 8192)
                self.assertEqual(tls.location.storage, popart.TensorStorage.OnChip)
                self.assertEqual(tls.location.replicatedTensorSharding,
                                 popart.ReplicatedTensorSharding.Off)
                self.assertEqual(tls.location.shardingDomain, popart.CommGroup())
                # Nested assignment changes the options (as PopART's def_readwrite).
                getattr(opts, name).minElementsForReplicatedTensorSharding = 16
                getattr(opts, name).location.replicatedTensorSharding = \
                    popart.ReplicatedTensorSharding.On
                self.assertEqual(getattr(opts, name).minElementsForReplicatedTensorSharding, 16)
                self.assertEqual(getattr(opts, name).location.replicatedTensorSharding,
                                 popart.ReplicatedTensorSharding.On)
                # Whole assignment.
                setattr(opts, name, popart.TensorLocationSettings(
                    popart.TensorStorage.OffChip, 4, 64))
                self.assertEqual(getattr(opts, name).location.storage,
                                 popart.TensorStorage.OffChip)
                self.assertEqual(getattr(opts, name).minElementsForOffChip, 4)
                self.assertEqual(getattr(opts, name).minElementsForReplicatedTensorSharding, 64)
                with self.assertRaisesRegex(TypeError, "SessionOptions." + name):
                    setattr(opts, name, popart.TensorStorage.OffChip)

    def test_options_object_outlives_nested_reference(self):
        tls = popart.SessionOptions().weightTensorLocationSettings
        tls.minElementsForOffChip = 7  # keeps its parent alive
        self.assertEqual(tls.minElementsForOffChip, 7)

    def test_replication_factor_queries(self):
        opts = popart.SessionOptions()
        self.assertEqual(opts.getGlobalReplicationFactor(), 1)
        opts.replicatedGraphCount = 2
        self.assertEqual(opts.getLocalReplicationFactor(), 1)  # not enabled
        opts.enableReplicatedGraphs = True
        self.assertEqual(opts.getLocalReplicationFactor(), 2)
        self.assertEqual(opts.getGlobalReplicationFactor(), 2)
        opts.enableDistributedReplicatedGraphs = True
        opts.globalReplicationFactor = 8
        self.assertEqual(opts.getGlobalReplicationFactor(), 8)
        opts.accumulationFactor = 4
        self.assertEqual(opts.getAccumulationFactor(), 1)
        opts.enableGradientAccumulation = True
        self.assertEqual(opts.getAccumulationFactor(), 4)

    def test_deprecated_buffering_aliases_set_the_options_they_name(self):
        # PopART maps its deprecated prefetch names onto the options that replaced them.
        opts = popart.SessionOptions()
        opts.defaultPrefetchBufferingDepth = 7
        self.assertEqual(opts.defaultBufferingDepth, 7)
        self.assertEqual(opts.defaultPrefetchBufferingDepth, 7)
        opts.prefetchBufferingDepthMap = {"t": 3}
        self.assertEqual(opts.bufferingDepthMap, {"t": 3})
        with self.assertRaises(TypeError):
            opts.defaultPrefetchBufferingDepth = "deep"
        self.assertEqual(opts.defaultBufferingDepth, 7)

    def test_deprecated_name_reads_the_option_in_force(self):
        # PopART's getter of a deprecated name returns its replacement's value.
        opts = popart.SessionOptions()
        opts.defaultBufferingDepth = 5
        self.assertEqual(opts.defaultPrefetchBufferingDepth, 5)
        opts.bufferingDepthMap = {"u": 2}
        self.assertEqual(opts.prefetchBufferingDepthMap, {"u": 2})

    def test_deprecated_names_warn_on_stderr_by_default(self):
        # The Python package starts at PopART's default log level, Warn: the deprecation warning
        # reaches stderr without asking (PopART's programs read it there); off when asked.
        script = ("import xtrain as popart\n"
                  "o = popart.SessionOptions()\n"
                  "o.prefetchBufferingDepthMap = {'t': 1}\n"
                  "o.defaultPrefetchBufferingDepth = 3\n"
                  "print(popart.getLogger().getLevel())\n")
        env = dict(os.environ)
        env.pop("XTRAIN_LOG_LEVEL", None)
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "WARN")
        self.assertIn("prefetchBufferingDepthMap has been deprecated", r.stderr)
        self.assertIn("defaultPrefetchBufferingDepth has been deprecated", r.stderr)
        env["XTRAIN_LOG_LEVEL"] = "off"
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("deprecated", r.stderr)

    def test_unknown_attribute_raises_attribute_error(self):
        opts = popart.SessionOptions()
        for name in ("enableReplicatedGraph", "mergeVarUpdates", "engineOption"):
            with self.subTest(name=name):
                with self.assertRaisesRegex(AttributeError, name):
                    setattr(opts, name, True)
                with self.assertRaisesRegex(AttributeError, name):
                    getattr(opts, name)
        for obj in (popart.TensorLocationSettings(), popart.TensorLocation(),
                    popart.AutomaticLossScalingSettings(), popart.CommGroup()):
            with self.assertRaisesRegex(AttributeError, "bogus"):
                obj.bogus = 1

    def test_every_popart_member_is_there(self):
        # Members PopART has and xtrain once lacked (test_session_options_members.py sets each).
        opts = popart.SessionOptions()
        for name in ("engineOptions", "reportOptions", "mergeVarUpdate", "autoRecomputation",
                     "numIOTiles", "constantWeights"):
            with self.subTest(name=name):
                self.assertTrue(hasattr(opts, name))
        self.assertTrue(callable(opts.enableExplicitIR))

    def test_numpy_scalars(self):
        import numpy as np
        opts = popart.SessionOptions()
        opts.replicatedGraphCount = np.int64(4)
        self.assertEqual(opts.replicatedGraphCount, 4)
        opts.enableReplicatedGraphs = np.bool_(True)
        self.assertIs(opts.enableReplicatedGraphs, True)
        opts.automaticLossScalingSettings.growthFactor = np.float32(3.0)
        self.assertEqual(opts.automaticLossScalingSettings.growthFactor, 3.0)
        with self.assertRaisesRegex(TypeError, "SessionOptions.replicatedGraphCount"):
            opts.replicatedGraphCount = np.float64(4.0)
        with self.assertRaisesRegex(TypeError, "SessionOptions.enableReplicatedGraphs"):
            opts.enableReplicatedGraphs = np.int64(1)
        with self.assertRaisesRegex(TypeError, "AutomaticLossScalingSettings.growthFactor"):
            opts.automaticLossScalingSettings.growthFactor = np.bool_(True)

    def test_integer_out_of_range(self):
        opts = popart.SessionOptions()
        with self.assertRaisesRegex(ValueError, "SessionOptions.replicatedGraphCount"):
            opts.replicatedGraphCount = 2 ** 64
        with self.assertRaisesRegex(ValueError, "TensorLocationSettings.minElementsForOffChip"):
            opts.weightTensorLocationSettings.minElementsForOffChip = 2 ** 40

    def test_automatic_loss_scaling_settings(self):
        als = popart.SessionOptions().automaticLossScalingSettings
        # PopART's defaults (toTrackTensors unset: None), and xtrain's GradScaler fields.
        expected = {"enabled": False, "toTrackTensors": None, "binEdgeLocation": 0.125,
                    "thresholdUpperCountProportion": 1e-7, "updatePeriod": 1,
                    "growthInterval": 2000, "growthFactor": 2.0, "backoffFactor": 0.5,
                    "method": popart.AutomaticLossScalingMethod.Histogram}
        for name, value in expected.items():
            with self.subTest(member=name):
                self.assertAlmostEqual(getattr(als, name), value, places=12) \
                    if isinstance(value, float) else self.assertEqual(getattr(als, name), value)
        opts = popart.SessionOptions()
        opts.automaticLossScalingSettings.enabled = True
        opts.automaticLossScalingSettings.toTrackTensors = ["a", "b"]
        opts.automaticLossScalingSettings.growthInterval = 10
        self.assertTrue(opts.automaticLossScalingSettings.enabled)
        self.assertEqual(opts.automaticLossScalingSettings.toTrackTensors, ["a", "b"])
        self.assertEqual(opts.automaticLossScalingSettings.growthInterval, 10)
        with self.assertRaisesRegex(TypeError, "AutomaticLossScalingSettings.toTrackTensors"):
            opts.automaticLossScalingSettings.toTrackTensors = ["a", 1]
        with self.assertRaisesRegex(TypeError, "AutomaticLossScalingSettings.growthFactor"):
            opts.automaticLossScalingSettings.growthFactor = "2"
        # PopART's keyword arguments, and xtrain's keyword-only ones.
        als = popart.AutomaticLossScalingSettings(enabled=True, toTrackTensors=["w"],
                                                  binEdgeLocation=0.25, updatePeriod=3,
                                                  growthFactor=4.0)
        self.assertTrue(als.enabled)
        self.assertEqual(als.toTrackTensors, ["w"])
        self.assertEqual(als.binEdgeLocation, 0.25)
        self.assertEqual(als.updatePeriod, 3)
        self.assertEqual(als.growthFactor, 4.0)
        self.assertIsNone(popart.AutomaticLossScalingSettings(True).toTrackTensors)
        als.toTrackTensors = None
        self.assertIsNone(als.toTrackTensors)
        als = popart.AutomaticLossScalingSettings(
            True, method=popart.AutomaticLossScalingMethod.GradScaler, binEdgeLocation=0.25)
        opts.automaticLossScalingSettings = als
        self.assertEqual(opts.automaticLossScalingSettings.binEdgeLocation, 0.25)


class EnumTest(unittest.TestCase):
    def test_members_by_name(self):
        for enum_name, members in ENUMS.items():
            with self.subTest(enum=enum_name):
                enum = getattr(popart, enum_name)
                self.assertEqual(sorted(enum.__members__), sorted(members))
                for m in members:
                    value = getattr(enum, m)
                    self.assertEqual(value.name, m)
                    self.assertEqual(enum.__members__[m], value)
                    self.assertEqual(enum(int(value)), value)
                    self.assertEqual(str(value), enum_name + "." + m)

    def test_numbering_as_popart(self):
        self.assertEqual(int(popart.ReductionType.Sum), 0)
        self.assertEqual(int(popart.ReductionType.Mean), 1)
        self.assertEqual(int(popart.ReductionType.NoReduction), 2)
        self.assertEqual(int(popart.VariableRetrievalMode.AllReplicas), 2)


class TensorLocationTest(unittest.TestCase):
    def test_constructors(self):
        loc = popart.TensorLocation()
        self.assertEqual(loc.storage, popart.TensorStorage.OnChip)
        loc = popart.TensorLocation(popart.TensorStorage.OffChip)
        self.assertEqual(loc.storage, popart.TensorStorage.OffChip)
        self.assertEqual(loc.replicatedTensorSharding, popart.ReplicatedTensorSharding.Off)
        group = popart.CommGroup(popart.CommGroupType.Consecutive, 2)
        loc = popart.TensorLocation(storage=popart.TensorStorage.OnChip,
                                    replicatedTensorSharding=popart.ReplicatedTensorSharding.On,
                                    shardingDomain=group)
        self.assertEqual(loc.replicatedTensorSharding, popart.ReplicatedTensorSharding.On)
        self.assertEqual(loc.shardingDomain, group)
        loc.shardingDomain = popart.CommGroup()
        self.assertEqual(loc.shardingDomain.type, popart.CommGroupType.All)
        with self.assertRaisesRegex(TypeError, "TensorLocation.shardingDomain"):
            loc.shardingDomain = popart.CommGroupType.All
        with self.assertRaisesRegex(TypeError, "TensorLocation.storage"):
            loc.storage = "OffChip"

    def test_settings_constructors(self):
        tls = popart.TensorLocationSettings(
            location=popart.TensorLocation(popart.TensorStorage.OffChip),
            minElementsForOffChip=10, minElementsForReplicatedTensorSharding=20)
        self.assertEqual(tls.location.storage, popart.TensorStorage.OffChip)
        self.assertEqual((tls.minElementsForOffChip, tls.minElementsForReplicatedTensorSharding),
                         (10, 20))
        tls = popart.TensorLocationSettings(popart.TensorStorage.OffChip)
        self.assertEqual((tls.minElementsForOffChip, tls.minElementsForReplicatedTensorSharding),
                         (2, 8192))
        with self.assertRaises(TypeError):
            popart.TensorLocationSettings("OffChip")


class CommGroupTest(unittest.TestCase):
    def test_round_trip(self):
        g = popart.CommGroup()
        self.assertEqual((g.type, g.replicaGroupSize), (popart.CommGroupType.All, 0))
        g = popart.CommGroup(type=popart.CommGroupType.Orthogonal, replicaGroupSize=4)
        self.assertEqual((g.type, g.replicaGroupSize), (popart.CommGroupType.Orthogonal, 4))
        g.type = popart.CommGroupType.Consecutive
        g.replicaGroupSize = 2
        self.assertEqual(g, popart.CommGroup(popart.CommGroupType.Consecutive, 2))
        self.assertNotEqual(g, popart.CommGroup())
        self.assertEqual(repr(g), "CommGroup(type=Consecutive, replicaGroupSize=2)")

    def test_to_and_from_replica_grouping(self):
        g = popart.CommGroup(popart.CommGroupType.Orthogonal, 2)
        rg = g.toReplicaGrouping(8)
        self.assertEqual(rg, popart.ReplicaGrouping(8, 4, 2))
        self.assertEqual(popart.CommGroup(rg), g)
        self.assertEqual(popart.CommGroup(grouping=popart.ReplicaGrouping(8)),
                         popart.CommGroup())
        with self.assertRaisesRegex(ValueError, r"ReplicaGrouping\(numReplicas=8, stride=2, "
                                                r"groupSize=2\)"):
            popart.CommGroup(popart.ReplicaGrouping(8, 2, 2))

    def test_wrong_values(self):
        with self.assertRaisesRegex(ValueError, "replicaGroupSize"):
            popart.CommGroup(popart.CommGroupType.Consecutive, -1)
        with self.assertRaises(TypeError):
            popart.CommGroup("Consecutive", 2)
        g = popart.CommGroup()
        with self.assertRaisesRegex(TypeError, "CommGroup.replicaGroupSize"):
            g.replicaGroupSize = "2"
        with self.assertRaisesRegex(ValueError, "CommGroup.replicaGroupSize"):
            g.replicaGroupSize = -2
        with self.assertRaisesRegex(TypeError, "CommGroup.type"):
            g.type = 1
        with self.assertRaisesRegex(Exception, "3"):
            popart.CommGroup(popart.CommGroupType.Consecutive, 3).toReplicaGrouping(8)


class ReplicaGroupingTest(unittest.TestCase):
    def test_queries(self):
        rg = popart.ReplicaGrouping(8, 2, 2)
        self.assertEqual((rg.getNumReplicas(), rg.getStride(), rg.getGroupSize(),
                          rg.getNumGroups()), (8, 2, 2, 4))
        self.assertEqual(rg.getGroups(), [[0, 2], [1, 3], [4, 6], [5, 7]])
        self.assertEqual(rg.getReplicasAt(2), [4, 6])
        self.assertEqual([rg.getGroupAt(r) for r in range(8)], [0, 1, 0, 1, 2, 3, 2, 3])
        self.assertEqual([rg.getIndexInGroupAt(r) for r in range(8)], [0, 0, 1, 1, 0, 0, 1, 1])
        self.assertEqual(rg.getReplicaAt(3), 5)
        self.assertEqual(rg.getReplicaAt(group=3, index=1), 7)
        self.assertIsNone(rg.toCommGroup())
        self.assertEqual(rg.str(), "ReplicaGrouping(numReplicas=8, stride=2, groupSize=2)")
        self.assertEqual(repr(rg), rg.str())

    def test_constructors_and_transpose(self):
        self.assertEqual(popart.ReplicaGrouping(8).getGroups(), [list(range(8))])
        self.assertEqual(popart.ReplicaGrouping(8, 2).getGroups(), [[0, 2, 4, 6], [1, 3, 5, 7]])
        rg = popart.ReplicaGrouping(numReplicas=8, stride=1, groupSize=2)
        self.assertEqual(rg.toCommGroup(), popart.CommGroup(popart.CommGroupType.Consecutive, 2))
        self.assertEqual(rg.getTranspose(), popart.ReplicaGrouping(8, 2, 4))
        self.assertEqual(rg.getTranspose().getTranspose(), rg)
        self.assertEqual(popart.ReplicaGrouping.fromCommGroup(
            popart.CommGroup(popart.CommGroupType.Ungrouped, 0), 4), popart.ReplicaGrouping(4, 1, 1))
        self.assertEqual(len({popart.ReplicaGrouping(8, 1, 2), popart.ReplicaGrouping(8, 1, 2)}), 1)

    def test_errors(self):
        with self.assertRaisesRegex(Exception, "12"):
            popart.ReplicaGrouping(12, 3, 2).getTranspose()
        with self.assertRaises(Exception):
            popart.ReplicaGrouping(8, 3, 2)
        with self.assertRaises(Exception):
            popart.ReplicaGrouping(8, 2, 2).getGroupAt(8)
        with self.assertRaises(TypeError):
            popart.ReplicaGrouping("8")


class VariableSettingsTest(unittest.TestCase):
    def test_default(self):
        vs = popart.VariableSettings()
        self.assertTrue(vs.isUsingCommGroup())
        self.assertEqual(vs.getSharedVariableDomain(), popart.CommGroup())
        self.assertEqual(vs.getRetrievalMode(), popart.VariableRetrievalMode.OnePerGroup)
        self.assertEqual(vs.getGroupCount(4), 1)
        self.assertEqual(vs.numReplicasReturningVariable(4), 1)
        self.assertEqual(vs.shapeOnHost([2, 3], 4), [2, 3])
        self.assertEqual(vs, popart.VariableSettings(popart.CommGroup()))

    def test_header_table(self):
        # include/xtrain/variablesettings.hpp's table, R = 8, k = 2.
        R, k = 8, 2
        cases = {
            popart.CommGroupType.All: (1, R, 1, [0]),
            popart.CommGroupType.Consecutive: (R // k, k, 1, [0, 2, 4, 6]),
            popart.CommGroupType.Orthogonal: (R // k, k, R // k, [0, 1, 2, 3]),
            popart.CommGroupType.Ungrouped: (R, 1, 1, list(range(8))),
        }
        for t, (count, size, stride, reps) in cases.items():
            with self.subTest(type=t.name):
                vs = popart.VariableSettings(popart.CommGroup(t, k),
                                             popart.VariableRetrievalMode.OnePerGroup)
                self.assertEqual(vs.getCommGroupType(), t)
                self.assertEqual(vs.getGroupCount(R), count)
                self.assertEqual(vs.getRealGroupSize(R), size)
                self.assertEqual(vs.getStride(R), stride)
                self.assertEqual([vs.getGroupRepresentative(g) for g in range(count)], reps)
                self.assertEqual([vs.getGroupRepresentative(g, R) for g in range(count)], reps)
                self.assertEqual(vs.numReplicasReturningVariable(R), count)
                self.assertEqual(vs.groups(R), vs.getReplicaGrouping(R).getGroups())
                all_replicas = popart.VariableSettings(popart.CommGroup(t, k),
                                                       popart.VariableRetrievalMode.AllReplicas)
                self.assertEqual(all_replicas.numReplicasReturningVariable(R), R)
                vs.verify(R)

    def test_shapes(self):
        vs = popart.VariableSettings(
            sharedVariableDomain_=popart.CommGroup(popart.CommGroupType.Consecutive, 2),
            retrievalMode_=popart.VariableRetrievalMode.OnePerGroup)
        self.assertEqual(vs.shapeOnHost([2, 3, 4], 4), [2, 2, 3, 4])
        self.assertEqual(vs.shapeOnReplica([2, 2, 3, 4], 4), [2, 3, 4])
        self.assertEqual(vs.shapeOnHostForRetrieval([2, 3, 4], 4), [2, 2, 3, 4])
        all_replicas = popart.VariableSettings(
            popart.CommGroup(popart.CommGroupType.Consecutive, 2),
            popart.VariableRetrievalMode.AllReplicas)
        self.assertEqual(all_replicas.shapeOnHostForRetrieval([2, 3, 4], 4), [4, 2, 3, 4])
        with self.assertRaisesRegex(Exception, "w0"):
            vs.shapeOnReplica([3, 2, 3, 4], 4, "w0")

    def test_stride_and_grouping_constructors(self):
        vs = popart.VariableSettings(stride=4, groupSize=2)
        self.assertFalse(vs.isUsingCommGroup())
        self.assertEqual((vs.getStride(), vs.getGroupSize()), (4, 2))
        self.assertEqual(vs.getRetrievalMode(), popart.VariableRetrievalMode.OnePerGroup)
        self.assertEqual(vs.groups(8), [[0, 4], [1, 5], [2, 6], [3, 7]])
        self.assertEqual(vs.getReplicaGrouping(8), popart.ReplicaGrouping(8, 4, 2))
        vs = popart.VariableSettings(2, 2, popart.VariableRetrievalMode.AllReplicas)
        self.assertEqual(vs.getRetrievalMode(), popart.VariableRetrievalMode.AllReplicas)
        vs = popart.VariableSettings(popart.ReplicaGrouping(8, 2, 2))
        self.assertEqual(vs.groups(8), [[0, 2], [1, 3], [4, 6], [5, 7]])
        self.assertEqual(vs.getGroupCount(8), 4)
        with self.assertRaises(Exception):
            vs.getGroupCount(4)  # built for 8 replicas
        vs = popart.VariableSettings(popart.VariableRetrievalMode.AllReplicas)
        self.assertEqual(vs.getSharedVariableDomain(), popart.CommGroup())
        self.assertIn("AllReplicas", repr(vs))

    def test_errors(self):
        with self.assertRaises(Exception):
            popart.VariableSettings(popart.CommGroup(popart.CommGroupType.Consecutive, 0))
        vs = popart.VariableSettings(popart.CommGroup(popart.CommGroupType.Consecutive, 3))
        with self.assertRaisesRegex(Exception, "8"):
            vs.getGroupCount(8)
        with self.assertRaises(Exception):
            vs.verify(8)
        with self.assertRaises(Exception):
            popart.VariableSettings(popart.VariableRetrievalMode.AllReduceReplicas).verify(4)
        with self.assertRaises(Exception):
            popart.VariableSettings(stride=2, groupSize=2).getSharedVariableDomain()
        with self.assertRaises(TypeError):
            popart.VariableSettings("All")


if __name__ == "__main__":
    unittest.main()
