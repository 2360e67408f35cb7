"""TrainingSession.getGlobalGradientNorms and getStepTimes from Python (what `xtrain --metrics`
writes): the norm against NumPy's gradient of the linear model, and the step counters."""
import unittest

import numpy as np

import xtrain as popart
from python_testing import initializers, linear_model


def session_with(optimizer):
    s = popart.TrainingSession(
        linear_model(), popart.DataFlow(1, {"loss": popart.AnchorReturnType("ALL")}), "loss",
        optimizer, popart.DeviceManager().createCpuDevice())
    s.prepareDevice()
    s.weightsFromHost()
    return s


class StepFiguresTest(unittest.TestCase):
    def setUp(self):
        rng = np.random.RandomState(3)
        self.x = rng.rand(2, 4).astype(np.float32)
        self.t = rng.rand(2, 3).astype(np.float32)

    def run_step(self, s):
        s.run(popart.PyStepIO({"x": self.x, "t": self.t}, s.initAnchorArrays()))

    def test_global_gradient_norm(self):
        clip = popart.ClipNormSettings.clipAllWeights(1e6)
        s = session_with(popart.SGD({"defaultLearningRate": (0.1, True)},
                                    clip_norm_settings=[clip]))
        self.assertEqual(s.getGlobalGradientNorms(), [])
        self.run_step(s)
        # loss = mean((x w + b - t)^2) over [2, 3]: dL/dy = 2 (y - t) / 6.
        w = initializers(linear_model())["w"].astype(np.float64)
        dy = 2.0 * (self.x.astype(np.float64) @ w - self.t) / 6.0
        expected = np.sqrt(np.sum((self.x.T @ dy) ** 2) + np.sum(dy.sum(axis=0) ** 2))
        norms = s.getGlobalGradientNorms()
        self.assertEqual(len(norms), 1)
        self.assertAlmostEqual(norms[0], expected, delta=1e-5 * expected)

    def test_no_norm_without_clipping(self):
        s = session_with(popart.SGD({"defaultLearningRate": (0.1, True)}))
        self.run_step(s)
        self.assertEqual(s.getGlobalGradientNorms(), [])

    def test_step_times(self):
        s = session_with(popart.SGD({"defaultLearningRate": (0.1, True)}))
        self.assertEqual(s.getStepTimes().steps, 0)
        self.run_step(s)
        self.run_step(s)
        times = s.getStepTimes()
        self.assertEqual(times.steps, 2)
        self.assertGreater(times.runSeconds, 0.0)
        self.assertGreaterEqual(times.reductionSeconds, 0.0)
        self.assertLessEqual(times.reductionSeconds, times.runSeconds)


if __name__ == "__main__":
    unittest.main()
