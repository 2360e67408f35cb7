"""Weights stored in ONNX external data through a training session: modelToHost writes the trained
weights back into their file and the optimizer state beside them (as PopART does), and
updateExternallySavedTensorLocations moves them to a new file."""
import os
import tempfile
import unittest

import numpy as np

import xtrain as popart

try:
    import onnx
    from onnx import TensorProto
except ImportError:  # Debian's python3-onnx is in scripts/setup-deps
    onnx = None

W0 = np.array([0.5, -1.0, 2.0], np.float32)
LR = 0.25


def external(t):
    return {kv.key: kv.value for kv in t.external_data}


@unittest.skipIf(onnx is None, "python3-onnx is not installed")
class ExternalDataTrainingTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.data = os.path.join(self.tmp.name, "weights.bin")

    def session(self, model=None):
        """One SGD step with momentum on l1(w) (sum): the gradient is sign(w)."""
        if model is None:
            b = popart.Builder()
            w = b.addInitializedInputTensor(W0, "w")
            loss = b.aiGraphcore.l1loss([b.aiOnnx.add([w, w])], 0.5,
                                        reduction=popart.ReductionType.Sum)
            b.saveInitializersExternally([w], self.data)
            model = b.getModelProto()
            self.loss = loss
        opt = popart.SGD({"defaultLearningRate": (LR, True), "defaultMomentum": (0.5, True)})
        s = popart.TrainingSession(model, popart.DataFlow(1, []), self.loss, opt,
                                   popart.DeviceManager().createCpuDevice())
        s.prepareDevice()
        s.weightsFromHost()
        s.run(popart.PyStepIO({}, {}))
        return s

    def test_model_to_host_writes_weights_and_state_to_the_external_file(self):
        s = self.session()
        trained = W0 - LR * np.sign(W0)
        path = os.path.join(self.tmp.name, "model.onnx")
        for _ in range(2):  # writing again reuses the same bytes of the file
            s.modelToHost(path)
            stored = np.fromfile(self.data, np.float32)
            self.assertEqual(stored.size, 6)
            np.testing.assert_allclose(stored[:3], trained)
            np.testing.assert_allclose(stored[3:], np.sign(W0))  # the velocity Accl___w
        saved = {t.name: t for t in onnx.load(path, load_external_data=False).graph.initializer}
        self.assertEqual(sorted(saved), ["Accl___w", "w"])
        for name, offset in (("w", "0"), ("Accl___w", "12")):
            self.assertEqual(saved[name].data_location, TensorProto.EXTERNAL, name)
            self.assertEqual(external(saved[name]),
                             {"location": self.data, "offset": offset, "length": "12"}, name)
        # A session of the saved model starts from the trained weight and its velocity.
        again = self.session(path)
        weights = {"w": np.zeros(3, np.float32)}
        again.weightsToHost()
        again.readWeights(popart.PyWeightsIO(weights))
        velocity = 0.5 * np.sign(W0) + np.sign(trained)
        np.testing.assert_allclose(weights["w"], trained - LR * velocity)

    def test_relative_location_from_another_directory_is_refused(self):
        os.mkdir(os.path.join(self.tmp.name, "elsewhere"))
        here = os.getcwd()
        try:
            os.chdir(self.tmp.name)
            b = popart.Builder()
            w = b.addInitializedInputTensor(W0, "w")
            self.loss = b.aiGraphcore.l1loss([w], 0.5)
            b.saveInitializersExternally([w], "rel.bin")
            s = self.session(b.getModelProto())
            os.chdir("elsewhere")
            with self.assertRaises(popart.popart_exception) as e:
                s.modelToHost("model.onnx")
            self.assertIn("Unrecognised file name 'rel.bin' for externally stored tensor 'w'",
                          str(e.exception))
            self.assertFalse(os.path.exists("rel.bin"))
        finally:
            os.chdir(here)

    def test_update_externally_saved_tensor_locations(self):
        s = self.session()
        moved = os.path.join(self.tmp.name, "moved.bin")
        missing = os.path.join(self.tmp.name, "missing.bin")
        with self.assertRaisesRegex(popart.popart_exception,
                                    "but file '" + missing + "' does not exist"):
            s.updateExternallySavedTensorLocations(missing, moved)
        with self.assertRaisesRegex(popart.popart_exception, "already exists"):
            s.updateExternallySavedTensorLocations(self.data, self.data)
        s.updateExternallySavedTensorLocations(self.data, moved)
        np.testing.assert_array_equal(np.fromfile(moved, np.float32), W0)  # the file's data
        with self.assertRaisesRegex(popart.popart_exception,
                                    "No ONNX model initializers have external location set to"):
            s.updateExternallySavedTensorLocations(self.data, missing)
        s.modelToHost(os.path.join(self.tmp.name, "model.onnx"))
        np.testing.assert_allclose(np.fromfile(moved, np.float32)[:3], W0 - LR * np.sign(W0))
        np.testing.assert_array_equal(np.fromfile(self.data, np.float32), W0)  # left alone


if __name__ == "__main__":
    unittest.main()
