"""xtrain.Session: PopXL's Session conveniences over an xtrain session (popxl-session.txt's
context manager, run / run_with_outputs, output shapes (d, r) + shape, tensor data)."""
import unittest

import numpy as np

import xtrain as popart
from python_testing import PrivatePool, linear_model, sgd


def training_session(bps=1, device=None, opts=None, arts=None):
    arts = arts or {"loss": popart.AnchorReturnType("ALL"), "y": popart.AnchorReturnType("FINAL")}
    return popart.TrainingSession(
        linear_model(), popart.DataFlow(bps, arts), "loss", sgd(0.05, 0.9),
        device or popart.DeviceManager().createCpuDevice(),
        userOptions=opts or popart.SessionOptions())


class SessionTest(PrivatePool, unittest.TestCase):
    def test_run_matches_pystepio(self):
        rng = np.random.RandomState(5)
        x = rng.rand(4, 2, 4).astype(np.float32)
        t = rng.rand(4, 2, 3).astype(np.float32)
        ref = training_session(4)
        ref.prepareDevice()
        ref.weightsFromHost()
        a = ref.initAnchorArrays()
        for _ in range(2):
            ref.run(popart.PyStepIO({"x": x, "t": t}, a))

        with popart.Session(training_session(4), "cpu") as s:
            self.assertTrue(s.is_attached)
            self.assertEqual(s.expected_inputs(), ["t", "x"])
            host = s.create_host_outputs()
            self.assertEqual({k: v.shape for k, v in host.items()},
                             {"loss": (4,), "y": (2, 3)})
            s.run({"x": x, "t": t})
            out = s.run({"x": x, "t": t.astype(np.float64)})  # downcast_inputs
        self.assertEqual(out["loss"].tobytes(), a["loss"].tobytes())
        self.assertEqual(out["y"].tobytes(), a["y"].tobytes())

    def test_replicated_shapes_and_attach(self):
        opts = popart.SessionOptions()
        opts.enableReplicatedGraphs = True
        opts.replicatedGraphCount = 2
        opts.enableGradientAccumulation = True
        opts.accumulationFactor = 2
        dev = popart.DeviceManager().acquireAvailableDevice(
            2, connectionType=popart.DeviceConnectionType.OnDemand)
        sess = training_session(3, dev, opts, {"loss": popart.AnchorReturnType("ALL"),
                                               "y": popart.AnchorReturnType("FINAL"),
                                               "xw": popart.AnchorReturnType("SUM")})
        s = popart.Session(sess)
        self.assertFalse(s.is_attached)
        with self.assertRaisesRegex(ValueError, "not attached"):
            s.run({"x": np.zeros((6, 2, 2, 4), np.float32),
                   "t": np.zeros((6, 2, 2, 3), np.float32)})
        with s:
            self.assertTrue(s.is_attached)
            host = s.create_host_outputs()
            # d = 3 batches x 2 micro-batches, r = 2
            self.assertEqual(host["loss"].shape, (6, 2))
            self.assertEqual(host["y"].shape, (2, 2, 3))
            self.assertEqual(host["xw"].shape, (2, 2, 3))
            s.run_with_outputs({"x": np.ones((6, 2, 2, 4), np.float32),
                                "t": np.zeros((6, 2, 2, 3), np.float32)}, host)
            self.assertTrue(np.all(host["loss"] > 0))
            with self.assertRaisesRegex(ValueError, r"'x' has shape \(3, 2, 2, 4\), expected "
                                                    r"\(6, 2, 2, 4\)"):
                s.run({"x": np.ones((3, 2, 2, 4), np.float32),
                       "t": np.zeros((6, 2, 2, 3), np.float32)})
            trained = s.get_tensor_data("w")
        self.assertFalse(s.is_attached)
        self.assertFalse(dev.isAttached)
        # weights_to_host_on_exit: the host copy is the trained one
        w = np.zeros((4, 3), np.float32)
        sess.readWeights(popart.PyWeightsIO({"w": w}))
        self.assertEqual(w.tobytes(), trained.tobytes())

    def test_tensor_data(self):
        with popart.Session(training_session()) as s:
            w = s.get_tensor_data("w")
            self.assertEqual(w.shape, (4, 3))
            new = np.full((4, 3), 0.25, np.float32)
            s.write_variable_data("w", new)
            np.testing.assert_array_equal(s.get_tensor_data("w"), new)
            both = s.get_tensors_data(["w", "b"])
            self.assertEqual(sorted(both), ["b", "w"])
            with self.assertRaisesRegex(ValueError, "'w' expects float32"):
                s.write_variable_data("w", np.zeros((4, 3), np.float64))
            with self.assertRaises(TypeError):
                s.get_tensors_data([1])

    def test_scalar_weight_data(self):
        # A 0-d weight keeps shape (): written from a 0-d array or a Python float.
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
        s0 = b.addInitializedInputTensor(np.array(1.5, np.float32), "s")
        y = b.aiOnnx.mul([x, s0], "y")
        session = popart.InferenceSession(
            b.getModelProto(), popart.DataFlow(1, {y: popart.AnchorReturnType("ALL")}),
            popart.DeviceManager().createCpuDevice())
        with popart.Session(session) as s:
            self.assertEqual(s.get_tensor_data(s0).shape, ())
            s.write_variable_data(s0, np.array(-2.0, np.float32))
            self.assertEqual(float(s.get_tensor_data(s0)), -2.0)
            out = s.run({x: np.array([1.0, 3.0], np.float32)})
            np.testing.assert_array_equal(out[y], [-2.0, -6.0])

    def test_bad_inputs(self):
        with popart.Session(training_session()) as s:
            x = np.zeros((2, 4), np.float32)
            t = np.zeros((2, 3), np.float32)
            with self.assertRaisesRegex(ValueError, "no data for input.*t"):
                s.run({"x": x})
            with self.assertRaisesRegex(KeyError, "'nope'"):
                s.run({"x": x, "t": t, "nope": x})
            with self.assertRaisesRegex(popart.popart_exception, "'t'.*float32"):
                s.run({"x": x, "t": t.astype(np.float64)}, downcast_inputs=False)
            with self.assertRaisesRegex(TypeError, "output 'loss'"):
                s.run_with_outputs({"x": x, "t": t}, {"loss": [0.0]})
        with self.assertRaisesRegex(ValueError, "does not match"):
            popart.Session(training_session(), "ipu_hw")
        with self.assertRaisesRegex(ValueError, "device_desc"):
            popart.Session(training_session(), "gpu")
        with self.assertRaises(TypeError):
            popart.Session("model.onnx")


if __name__ == "__main__":
    unittest.main()
