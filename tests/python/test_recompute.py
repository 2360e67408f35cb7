"""SessionOptions.autoRecomputation from Python (docs/session-options.md, docs/performance.md):
each mode trains an MLP with LayerNorm and Relu to the same weights, bit for bit, as NoRecompute;
NormOnly recomputes the LayerNorm and the Relu in the backward pass; Pipeline is an error."""
import json
import unittest

import numpy as np

import xtrain as popart
from python_testing import PrivatePool, sgd

WEIGHTS = ["W1", "b1", "lnScale", "lnBias", "W2"]


def mlp():
    b = popart.Builder(opsets={"ai.onnx": 17, "ai.graphcore": 1})
    rng = np.random.RandomState(7)
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 8]), "x")
    labels = b.addInputTensor(popart.TensorInfo("INT32", [4]), "labels")
    w1 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (8, 16)).astype(np.float32), "W1")
    b1 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (16,)).astype(np.float32), "b1")
    scale = b.addInitializedInputTensor(np.ones(16, np.float32), "lnScale")
    bias = b.addInitializedInputTensor(np.zeros(16, np.float32), "lnBias")
    w2 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (16, 5)).astype(np.float32), "W2")
    h = b.aiOnnx.add([b.aiOnnx.matmul([x, w1]), b1])
    h = b.aiOnnx.relu([b.aiOnnx.layernormalization([h, scale, bias])[0]])
    logits = b.aiOnnx.matmul([h, w2])
    loss = b.aiOnnx.softmaxcrossentropyloss([logits, labels], reduction="mean")[0]
    b.addOutputTensor(loss)
    return b.getModelProto(), loss


def session_with(mode):
    proto, loss = mlp()
    opts = popart.SessionOptions()
    opts.autoRecomputation = mode
    s = popart.TrainingSession(fnModel=proto, dataFlow=popart.DataFlow(1, {}), loss=loss,
                               optimizer=sgd(0.1), userOptions=opts,
                               deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
    s.prepareDevice()
    s.weightsFromHost()
    return s


def trained(mode, steps=3):
    s = session_with(mode)
    rng = np.random.RandomState(1)
    for _ in range(steps):
        s.run(popart.PyStepIO({"x": rng.randn(4, 8).astype(np.float32),
                               "labels": rng.randint(0, 5, 4).astype(np.int32)}, {}))
    s.weightsToHost()
    out = {w: np.zeros(s.getInfo(w).shape(), np.float32) for w in WEIGHTS}
    s.readWeights(popart.PyWeightsIO(out))
    return out, s


class RecomputeTest(PrivatePool, unittest.TestCase):
    def test_every_mode_trains_to_the_same_weights(self):
        none, _ = trained(popart.RecomputationType.NoRecompute)
        for mode in (popart.RecomputationType.Standard, popart.RecomputationType.NormOnly,
                     popart.RecomputationType.RecomputeAll):
            got, _ = trained(mode)
            for w in WEIGHTS:
                self.assertEqual(got[w].tobytes(), none[w].tobytes(), "%s: %s" % (mode, w))

    def test_norm_only_recomputes_the_norm_and_its_relu(self):
        _, s = trained(popart.RecomputationType.NormOnly, steps=1)
        ops = json.loads(s.getReport())["execution"]["ops"]
        recomputed = sorted(op["type"] for op in ops if op["name"].startswith("recompute/"))
        self.assertEqual(recomputed, ["LayerNormalization", "Relu"])
        self.assertTrue(all(op["phase"] == "Backward" for op in ops
                            if op["name"].startswith("recompute/")))

    def test_pipeline_is_refused(self):
        with self.assertRaisesRegex(popart.popart_exception, "autoRecomputation = Pipeline"):
            session_with(popart.RecomputationType.Pipeline)


if __name__ == "__main__":
    unittest.main()
