"""popart.Patterns and popart.PatternsLevel: PopART's levels and names, the properties and
chaining PopART's op tests use, the refusals, and the sessions' check of a set (which otherwise
changes nothing of what a session computes)."""
import unittest

import numpy as np

import xtrain as popart
from python_testing import linear_model, sgd


class PatternsTest(unittest.TestCase):
    def test_levels(self):
        names = popart.Patterns.getAllPreAliasPatternNames()
        self.assertEqual(len(names), 55)
        none = popart.Patterns(popart.PatternsLevel.NoPatterns)
        minimal = popart.Patterns(popart.PatternsLevel.Minimal)
        every = popart.Patterns(popart.PatternsLevel.All)
        for n in names:
            self.assertFalse(none.isPatternEnabled(n), n)
            self.assertTrue(every.isPatternEnabled(n), n)
            self.assertEqual(minimal.isPatternEnabled(n), popart.Patterns.isMandatory(n), n)
        self.assertEqual(popart.Patterns(), popart.Patterns(popart.PatternsLevel.Default))
        self.assertTrue(popart.Patterns().InPlace)
        self.assertFalse(minimal.InPlace)

    def test_properties_and_chaining(self):
        p = popart.Patterns(["PreUniRepl"])
        self.assertTrue(p.PreUniRepl)
        self.assertFalse(p.InPlace)
        p.InPlace = True
        p.SoftMaxGradDirect = True  # PopART's property over the pattern "SoftmaxGradDirect"
        self.assertTrue(p.isPatternEnabled("SoftmaxGradDirect"))
        self.assertIs(p.enablePattern("OpToIdentity", True).enableRuntimeAsserts(False), p)
        self.assertTrue(p.OpToIdentity)
        self.assertFalse(p.getRuntimeAssertsOn())
        self.assertIn("PreUniRepl", repr(p))

    def test_unknown_names(self):
        with self.assertRaisesRegex(popart.popart_exception, "^Unknown pattern Bogus$"):
            popart.Patterns(["Bogus"])
        with self.assertRaisesRegex(popart.popart_exception, "did you mean InPlace"):
            popart.Patterns(["Inplace"])
        with self.assertRaisesRegex(popart.popart_exception, "Unknown pattern Bogus"):
            popart.Patterns().enablePattern("Bogus", False)

    def session(self, patterns):
        return popart.TrainingSession(fnModel=linear_model(), dataFlow=popart.DataFlow(1, ["loss"]),
                                      loss="loss", optimizer=sgd(0.05),
                                      deviceInfo=popart.DeviceManager().createCpuDevice(),
                                      patterns=patterns)

    def train(self, patterns):
        s = self.session(patterns)
        s.prepareDevice()
        s.weightsFromHost()
        anchors = s.initAnchorArrays()
        rng = np.random.RandomState(3)
        s.run(popart.PyStepIO({"x": rng.rand(2, 4).astype(np.float32),
                               "t": rng.rand(2, 3).astype(np.float32)}, anchors))
        return anchors["loss"].copy()

    def test_sessions_check_the_set_and_compute_the_same(self):
        with self.assertRaisesRegex(popart.popart_exception, "^Pattern 'MatMulOp' must be enabled$"):
            self.session(popart.Patterns().enablePattern("MatMulOp", False))
        reference = self.train(None)
        np.testing.assert_array_equal(self.train(popart.Patterns(popart.PatternsLevel.All)),
                                      reference)
        np.testing.assert_array_equal(
            self.train(popart.Patterns([]).enableRuntimeAsserts(False)), reference)
        with self.assertRaisesRegex(TypeError, "patterns: expected a popart.Patterns"):
            self.session("PreUniRepl")


if __name__ == "__main__":
    unittest.main()
