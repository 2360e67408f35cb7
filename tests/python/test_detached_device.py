"""A session whose device was detached does not use it (issue 27: session.run() kept working after
device.detach() while a second session took the same IPU, two holders of one IPU). Every call that
touches the device raises popart_runtime_error saying the device is detached and how to attach it
again; an Always device is usable again after device.attach() (False while another holds the IPU),
an OnDemand one is attached again when the session needs it. docs/python.md, "Sessions"."""
import os
import unittest

import numpy as np

import xtrain as popart
from python_testing import PrivatePool, linear_model, sgd

RNG = np.random.RandomState(3)
X = RNG.rand(2, 4).astype(np.float32)
T = RNG.rand(2, 3).astype(np.float32)


def training_session(device):
    s = popart.TrainingSession(
        fnModel=linear_model(), dataFlow=popart.DataFlow(1, {"loss": popart.AnchorReturnType("ALL")}),
        loss="loss", optimizer=sgd(0.05), deviceInfo=device)
    s.prepareDevice()
    s.weightsFromHost()
    return s


def step(session):
    """One training step; returns the loss."""
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({"x": X, "t": T}, anchors))
    return float(anchors["loss"])


def weights(session):
    session.weightsToHost()
    out = {"w": np.zeros((4, 3), np.float32), "b": np.zeros(3, np.float32)}
    session.readWeights(popart.PyWeightsIO(out))
    return out


class DetachedDeviceTest(PrivatePool, unittest.TestCase):
    def setUp(self):
        super().setUp()
        self._saved_wait = os.environ.pop("XTRAIN_WAIT_FOR_IPU", None)

    def tearDown(self):
        popart.DeviceManager().setOnDemandAttachTimeout(0)
        if self._saved_wait is not None:
            os.environ["XTRAIN_WAIT_FOR_IPU"] = self._saved_wait
        super().tearDown()

    def test_always_device_must_be_attached_again(self):
        dm = popart.DeviceManager()
        device = dm.acquireDeviceById(0)
        s = training_session(device)
        step(s)
        device.detach()
        calls = {
            "run": lambda: step(s),
            "weightsFromHost": s.weightsFromHost,
            "weightsToHost": s.weightsToHost,
            "modelToHost": lambda: s.modelToHost(os.path.join(self.tmp, "m.onnx")),
            "updateOptimizerFromHost": lambda: s.updateOptimizerFromHost(sgd(0.01)),
        }
        for name, call in calls.items():
            with self.subTest(call=name):
                with self.assertRaisesRegex(
                        popart.popart_runtime_error,
                        r"%s: device 0 is detached .*call attach\(\) on the device" % name):
                    call()
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "m.onnx")))

        # A second session takes the IPU; the first cannot attach while it holds it.
        other = dm.acquireDeviceById(0)
        t = training_session(other)
        step(t)
        self.assertFalse(device.attach())
        with self.assertRaisesRegex(popart.popart_runtime_error,
                                    "IPU 0 is held by process %d" % os.getpid()):
            step(s)

        # Attached again, the first session goes on from its step 1, as one never detached does.
        other.detach()
        self.assertTrue(device.attach())
        step(s)
        straight = training_session(dm.acquireDeviceById(2))
        step(straight)
        step(straight)
        for name, value in weights(straight).items():
            np.testing.assert_array_equal(weights(s)[name], value, err_msg=name)

    def test_on_demand_device_is_attached_again_when_needed(self):
        dm = popart.DeviceManager()
        device = dm.acquireDeviceById(1, connectionType=popart.DeviceConnectionType.OnDemand)
        s = training_session(device)
        self.assertTrue(device.isAttached)
        device.detach()
        holder = dm.acquireDeviceById(1)
        with self.assertRaisesRegex(
                popart.popart_runtime_error,
                r"run: device 1 \(DeviceConnectionType::OnDemand\) was detached and could not be "
                r"attached again: IPU 1 is held by process %d" % os.getpid()):
            step(s)
        self.assertFalse(device.isAttached)
        holder.detach()
        step(s)
        self.assertTrue(device.isAttached)
        self.assertIsNone(dm.tryAcquireDeviceById(1))

    def test_with_device_block_detaches_the_session_too(self):
        # `with device:` detaches at the end of the block: the session stops with it.
        with popart.DeviceManager().createIpuModelDevice({}) as device:
            s = training_session(device)
            step(s)
        with self.assertRaisesRegex(popart.popart_runtime_error, "run: device 0 is detached"):
            step(s)
        self.assertTrue(device.attach())
        step(s)


if __name__ == "__main__":
    unittest.main()
