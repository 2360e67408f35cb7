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
        np.testing.assert_array_equal(self.train(popart.Patterns(popart.PatternsLevel.Minimal)),
                                      reference)
        # Without asserts a set without a pattern the graph needs is refused when the graph is made.
        with self.assertRaisesRegex(
                popart.popart_exception,
                "gradient of input 0 \\('d'\\) of Mul .*This op should have been removed by "
                "pattern MulArgGradOp$"):
            self.session(popart.Patterns([]).enableRuntimeAsserts(False))
        with self.assertRaisesRegex(TypeError, "patterns: expected a popart.Patterns"):
            self.session("PreUniRepl")

    def test_a_graph_needing_a_disabled_pattern_is_refused(self):
        def model(op, inputs, loss):
            b = popart.Builder()
            x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
            w = b.addInitializedInputTensor(np.ones(2, np.float32), "w")
            y = op(b, [{"x": x, "w": w}[i] for i in inputs])
            out = b.aiGraphcore.l1loss([y], 1.0) if loss else y
            return b.getModelProto(), out

        def session(op, inputs, names, loss=True):
            proto, out = model(op, inputs, loss)
            patterns = popart.Patterns(names).enableRuntimeAsserts(False)
            dev = popart.DeviceManager().createCpuDevice()
            if not loss:
                return popart.InferenceSession(proto, popart.DataFlow(1, [out]), dev,
                                               patterns=patterns)
            return popart.TrainingSession(proto, popart.DataFlow(1, [out]), out, sgd(0.1), dev,
                                          patterns=patterns)

        def sub(b, ins):
            return b.aiOnnx.sub(ins)

        def cosh(b, ins):
            return b.aiOnnx.cosh(ins)

        # Sub's gradient needs a pattern for its second input only.
        with self.assertRaisesRegex(popart.popart_exception,
                                    "input 1 \\('w'\\) of Sub.*enable SubtractArg1GradOp.*"
                                    "This op should have been removed by pattern "
                                    "SubtractArg1GradOp$"):
            session(sub, ["x", "w"], [])
        session(sub, ["w", "x"], [])
        session(sub, ["x", "w"], ["SubtractArg1GradOp"])
        # Cosh needs its pattern even without training.
        with self.assertRaisesRegex(popart.popart_exception,
                                    "^Cosh .*This op should have been removed by pattern CoshOp$"):
            session(cosh, ["x"], [], loss=False)
        session(cosh, ["x"], ["CoshOp"], loss=False)


if __name__ == "__main__":
    unittest.main()
