"""FLOAT16 end to end: float16 stream inputs and anchors, float16 weights (read without and with
weightsFromHost), float16 constants through transposes, float16 anchored inputs handed back as fed,
and one float16 training step (Gemm, Relu, Softmax, NllLoss) whose loss and new weights match a
float64 NumPy replay, the weights then read out into float16 buffers and written into an inference
session. The expected values are NumPy's; the tolerances are float16's (11 significant bits)."""
import unittest

import numpy as np

import xtrain as popart
from python_testing import PrivatePool

HALF = dict(rtol=2e-3, atol=2e-3)


def infer(builder, anchors, feeds, weights_from_host=True):
    """One inference step on a simulated IPU; returns {anchor: array}."""
    flow = popart.DataFlow(1, {a: popart.AnchorReturnType("ALL") for a in anchors})
    with popart.DeviceManager().createIpuModelDevice({}) as device:
        session = popart.InferenceSession(fnModel=builder.getModelProto(), dataFlow=flow,
                                          deviceInfo=device)
        session.prepareDevice()
        if weights_from_host:
            session.weightsFromHost()
        out = session.initAnchorArrays()
        session.run(popart.PyStepIO(feeds, out))
    return out


class Float16InferenceTest(PrivatePool, unittest.TestCase):
    def test_two_inputs(self):
        b = popart.Builder()
        p = b.addInputTensor(popart.TensorInfo("FLOAT16", [4]), "p")
        q = b.addInputTensor(popart.TensorInfo("FLOAT16", [4]), "q")
        s = b.aiOnnx.add([p, q])
        b.addOutputTensor(s)
        pv = np.array([0.5, -2.0, 1024.0, 3.25], np.float16)
        qv = np.array([0.25, 6.0, 1.0, -3.25], np.float16)
        out = infer(b, [s], {p: pv, q: qv})
        self.assertEqual(out[s].dtype, np.float16)
        # 1024 + 1 is exact in float16 (spacing 1 up to 2048): every sum here is.
        np.testing.assert_array_equal(out[s], pv + qv)

    def test_weight_is_read_with_and_without_weights_from_host(self):
        # An inference session starts from the model's initial values; weightsFromHost sends the
        # same values again.
        for explicit in (False, True):
            with self.subTest(weightsFromHost=explicit):
                b = popart.Builder()
                x = b.addInputTensor(popart.TensorInfo("FLOAT16", [3]), "x")
                w = b.addInitializedInputTensor(np.array([1.5, -0.75, 8.0], np.float16), "w")
                y = b.aiOnnx.mul([x, w])
                b.addOutputTensor(y)
                xv = np.array([2.0, 4.0, -0.5], np.float16)
                out = infer(b, [y], {x: xv}, weights_from_host=explicit)
                np.testing.assert_array_equal(out[y], np.array([3.0, -3.0, -4.0], np.float16))

    def test_transposed_constant_and_input(self):
        rng = np.random.RandomState(11)
        table = rng.uniform(-4, 4, (3, 7)).astype(np.float16)
        row = rng.uniform(-4, 4, (1, 3)).astype(np.float16)
        b = popart.Builder()
        k = b.aiOnnx.constant(table, "table")
        r = b.addInputTensor(popart.TensorInfo(row), "row")
        # table^T is [7, 3]; the [1, 3] row broadcasts over its rows; the sum goes back to [3, 7].
        s = b.aiOnnx.add([b.aiOnnx.transpose([k], []), r])
        t = b.aiOnnx.transpose([s], [1, 0])
        b.addOutputTensor(t)
        out = infer(b, [t], {r: row})
        want = (table.astype(np.float32).T + row.astype(np.float32)).T
        self.assertEqual(out[t].shape, (3, 7))
        self.assertEqual(out[t].dtype, np.float16)
        np.testing.assert_allclose(out[t].astype(np.float32), want, **HALF)

    def test_anchored_inputs_come_back_as_fed(self):
        b = popart.Builder()
        p = b.addInputTensor(popart.TensorInfo("FLOAT16", [2, 2]), "p")
        q = b.addInputTensor(popart.TensorInfo("FLOAT16", [2, 2]), "q")
        d = b.aiOnnx.sub([p, q])
        b.addOutputTensor(d)
        pv = np.array([[65504.0, -1.0], [0.0009765625, 7.0]], np.float16)  # float16's max, 2^-10
        qv = np.array([[0.0, 1.0], [0.0, -7.0]], np.float16)
        out = infer(b, [p, q, d], {p: pv, q: qv})
        self.assertEqual(out[p].tobytes(), pv.tobytes())
        self.assertEqual(out[q].tobytes(), qv.tobytes())
        np.testing.assert_array_equal(out[d], pv - qv)

    def test_float32_data_for_a_float16_input_is_refused(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT16", [2]), "x")
        y = b.aiOnnx.identity([x])
        b.addOutputTensor(y)
        with self.assertRaisesRegex(popart.popart_exception,
                                    r"'x'.*expected dtype float16 \(FLOAT16\), got float32"):
            infer(b, [x, y], {x: np.zeros(2, np.float32)})


class Float16TrainingTest(PrivatePool, unittest.TestCase):
    """probs = softmax(relu(x @ w + c)); loss = nll(probs, label), mean over the batch."""

    LR = 0.25

    def model(self, w0, c0):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT16", [3, 4]), "x")
        label = b.addInputTensor(popart.TensorInfo("INT32", [3]), "label")
        w = b.addInitializedInputTensor(w0, "w")
        c = b.addInitializedInputTensor(c0, "c")
        h = b.aiOnnx.relu([b.aiOnnx.gemm([x, w, c], 1.0, 1.0, False, False)])
        probs = b.aiOnnx.softmax([h])
        loss = b.aiGraphcore.nllloss([probs, label])
        return b, x, label, w, c, probs, loss

    @staticmethod
    def forward(x, label, w, c):
        z = x.astype(np.float64) @ w.astype(np.float64) + c.astype(np.float64)
        h = np.maximum(z, 0)
        e = np.exp(h - h.max(axis=1, keepdims=True))
        probs = e / e.sum(axis=1, keepdims=True)
        loss = -np.mean(np.log(probs[np.arange(len(label)), label]))
        return z, probs, loss

    def test_one_step_then_inference_with_the_trained_weights(self):
        rng = np.random.RandomState(23)
        w0 = rng.uniform(-1, 1, (4, 2)).astype(np.float16)
        c0 = np.array([0.5, 0.25], np.float16)
        xv = rng.uniform(-1, 2, (3, 4)).astype(np.float16)
        lv = np.array([1, 0, 1], np.int32)
        b, x, label, w, c, probs, loss = self.model(w0, c0)
        flow = popart.DataFlow(1, {loss: popart.AnchorReturnType("ALL"),
                                   probs: popart.AnchorReturnType("ALL")})

        # NumPy's step: d loss / d z = (probs - onehot) / batch, masked by relu.
        z, p_want, loss_want = self.forward(xv, lv, w0, c0)
        dz = p_want.copy()
        dz[np.arange(3), lv] -= 1
        dz = dz / 3 * (z > 0)
        w_want = w0 - self.LR * (xv.astype(np.float64).T @ dz)
        c_want = c0 - self.LR * dz.sum(axis=0)

        with popart.DeviceManager().createIpuModelDevice({}) as device:
            trainer = popart.TrainingSession(fnModel=b.getModelProto(), dataFlow=flow, loss=loss,
                                             optimizer=popart.ConstSGD(self.LR),
                                             deviceInfo=device)
            trainer.prepareDevice()
            trainer.weightsFromHost()
            out = trainer.initAnchorArrays()
            trainer.run(popart.PyStepIO({x: xv, label: lv}, out))
            trainer.weightsToHost()
            trained = {w: np.empty((4, 2), np.float16), c: np.empty(2, np.float16)}
            weights_io = popart.PyWeightsIO(trained)
            trainer.readWeights(weights_io)
        self.assertEqual(out[loss].dtype, np.float16)
        self.assertAlmostEqual(float(out[loss]), loss_want, delta=2e-3)
        np.testing.assert_allclose(out[probs].astype(np.float64), p_want, **HALF)
        np.testing.assert_allclose(trained[w].astype(np.float64), w_want, **HALF)
        np.testing.assert_allclose(trained[c].astype(np.float64), c_want, **HALF)
        self.assertFalse(np.array_equal(trained[w], w0))

        # The same buffers written into an inference session of the same model: it runs with
        # the trained weights (constantWeights False keeps them writable after compiling).
        opts = popart.SessionOptions()
        opts.constantWeights = False
        xv2 = rng.uniform(-1, 2, (3, 4)).astype(np.float16)
        with popart.DeviceManager().createIpuModelDevice({}) as device:
            inference = popart.InferenceSession(fnModel=b.getModelProto(), dataFlow=flow,
                                                deviceInfo=device, userOptions=opts)
            inference.prepareDevice()
            inference.writeWeights(weights_io)
            inference.weightsFromHost()
            got = inference.initAnchorArrays()
            inference.run(popart.PyStepIO({x: xv2, label: lv}, got))
        _, p2, loss2 = self.forward(xv2, lv, trained[w], trained[c])
        np.testing.assert_allclose(got[probs].astype(np.float64), p2, **HALF)
        self.assertAlmostEqual(float(got[loss]), loss2, delta=2e-3)


if __name__ == "__main__":
    unittest.main()
