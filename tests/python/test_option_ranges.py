"""The ranges of SessionOptions' numeric members from Python (issue 27: globalReplicaOffset=-1,
numIOTiles=-1 and negative minElementsFor* were accepted against the docs). Members that are
signed in C++ take any int and the session refuses one out of range (popart_exception naming the
member, the value and the range); unsigned ones refuse a negative int when set (ValueError naming
the member and the range), and the session refuses 0 where the range starts at 1.
docs/session-options.md, "Ranges"."""
import math
import unittest

import xtrain as popart


def session(opts):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]), "x")
    y = builder.aiOnnx.exp([x])
    builder.addOutputTensor(y)
    return popart.InferenceSession(
        builder.getModelProto(), deviceInfo=popart.DeviceManager().createIpuModelDevice({}),
        dataFlow=popart.DataFlow(1, {y: popart.AnchorReturnType("ALL")}), userOptions=opts)


def refused(member, value, expected):
    """The start of the error for member = value (value as the message writes it)."""
    return r"SessionOptions\.%s = %s is out of range: expected %s" % (member, value, expected)


class SignedMembersTest(unittest.TestCase):
    """Set from Python, refused by the session."""

    def check(self, cases):
        for setter, member, value, expected in cases:
            with self.subTest(member=member, value=value):
                opts = popart.SessionOptions()
                setter(opts)
                with self.assertRaisesRegex(popart.popart_exception,
                                            refused(member, value, expected)):
                    session(opts)

    def test_replication(self):
        self.check([
            (lambda o: setattr(o, "globalReplicaOffset", -1), "globalReplicaOffset", "-1",
             r"0 <= globalReplicaOffset < globalReplicationFactor \(1\)"),
            (lambda o: setattr(o, "globalReplicationFactor", 0), "globalReplicationFactor", "0",
             ">= 1"),
            (lambda o: setattr(o, "replicatedGraphCount", -1), "replicatedGraphCount", "-1",
             ">= 1"),
            (lambda o: setattr(o, "accumulationFactor", 0), "accumulationFactor", "0", ">= 1"),
        ])

    def test_tensor_location_settings(self):
        cases = []
        for kind in ["activationTensorLocationSettings", "weightTensorLocationSettings",
                     "optimizerStateTensorLocationSettings", "accumulatorTensorLocationSettings"]:
            for field in ["minElementsForOffChip", "minElementsForReplicatedTensorSharding"]:
                cases.append((lambda o, k=kind, f=field: setattr(getattr(o, k), f, -1),
                              r"%s\.%s" % (kind, field), "-1", ">= 0"))
        # The constructor's keyword as well.
        cases.append((lambda o: setattr(o, "weightTensorLocationSettings",
                                        popart.TensorLocationSettings(
                                            popart.TensorStorage.OnChip,
                                            minElementsForOffChip=-2)),
                      r"weightTensorLocationSettings\.minElementsForOffChip", "-2", ">= 0"))
        self.check(cases)

    def test_io_tiles(self):
        expected = r"0 \(no IO tiles\) or an even number >= 32 and below the device's 1472 tiles"
        self.check([(lambda o, n=n: setattr(o, "numIOTiles", n), "numIOTiles", str(n), expected)
                    for n in (-1, 2, 31, 1472)])
        opts = popart.SessionOptions()
        opts.numIOTiles = 32
        session(opts)

    def test_loss_scaling_and_other_settings(self):
        als = "automaticLossScalingSettings"
        self.check([
            (lambda o: setattr(o.automaticLossScalingSettings, "updatePeriod", -1),
             als + r"\.updatePeriod", "-1", ">= 1"),
            (lambda o: setattr(o.automaticLossScalingSettings, "growthInterval", 0),
             als + r"\.growthInterval", "0", ">= 1"),
            (lambda o: setattr(o, "executionPhaseSettings",
                               popart.ExecutionPhaseSettings(phases=-1)),
             r"executionPhaseSettings\.phases", "-1", ">= 0"),
            (lambda o: setattr(o.batchSerializationSettings, "factor", -1),
             r"batchSerializationSettings\.factor", "-1", ">= 0"),
            (lambda o: setattr(o, "virtualGraphSplitRatios", [0.0, 1.0]),
             r"virtualGraphSplitRatios\[0\]", "0", r"a ratio in \(0, 1\)"),
            (lambda o: setattr(o, "mergeVarUpdateMemThreshold", -1), "mergeVarUpdateMemThreshold",
             "-1", ">= 0"),
            (lambda o: setattr(o, "looseThresholdAtPeak", -1), "looseThresholdAtPeak", "-1",
             ">= 0"),
            (lambda o: setattr(o, "timeLimitScheduler", -1.0), "timeLimitScheduler", "-1",
             ">= 0"),
            (lambda o: setattr(o, "outlineThreshold", math.nan), "outlineThreshold", "nan",
             r"a number \(not NaN\)"),
            (lambda o: setattr(o.developerSettings, "timePartitionLoggerThresholdPercentage",
                               -1.0),
             r"developerSettings\.timePartitionLoggerThresholdPercentage", "-1",
             r"a percentage in \[0, 100\]"),
        ])


class UnsignedMembersTest(unittest.TestCase):
    """Unsigned in C++ (as in PopART): a negative int never wraps into a huge value."""

    def test_negative_is_a_value_error_naming_the_member(self):
        cases = [
            (popart.SessionOptions(), "defaultBufferingDepth", r"\[0, 4294967295\]"),
            (popart.SessionOptions(), "defaultPrefetchBufferingDepth", r"\[0, 4294967295\]"),
            (popart.SessionOptions(), "transitiveClosureOptimizationThreshold",
             r"\[0, 18446744073709551615\]"),
            (popart.CommGroup(), "replicaGroupSize", r"\[0, 4294967295\]"),
        ]
        for obj, member, bounds in cases:
            with self.subTest(member=member):
                before = getattr(obj, member)
                with self.assertRaisesRegex(ValueError,
                                            r"%s: -1 is out of range %s" % (member, bounds)):
                    setattr(obj, member, -1)
                self.assertEqual(getattr(obj, member), before)
        opts = popart.SessionOptions()
        with self.assertRaisesRegex(ValueError, r"bufferingDepthMap\[x\]: -3 is out of range"):
            opts.bufferingDepthMap = {"x": -3}
        self.assertEqual(opts.bufferingDepthMap, {})
        with self.assertRaisesRegex(ValueError, r"CommGroup\(replicaGroupSize=...\): -2 is out"):
            popart.CommGroup(popart.CommGroupType.Consecutive, -2)

    def test_zero_depth_is_refused_by_the_session(self):
        # The deprecated defaultPrefetchBufferingDepth sets defaultBufferingDepth (as PopART's
        # does), which the session then names.
        for member in ["defaultBufferingDepth", "defaultPrefetchBufferingDepth"]:
            with self.subTest(member=member):
                opts = popart.SessionOptions()
                setattr(opts, member, 0)
                with self.assertRaisesRegex(popart.popart_exception,
                                            refused("defaultBufferingDepth", "0", ">= 1")):
                    session(opts)
        opts = popart.SessionOptions()
        opts.bufferingDepthMap["x"] = 0
        with self.assertRaisesRegex(popart.popart_exception,
                                    refused(r'bufferingDepthMap\["x"\]', "0", ">= 1")):
            session(opts)


if __name__ == "__main__":
    unittest.main()
