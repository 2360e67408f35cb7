"""SessionOptions.autoRecomputation from Python (docs/session-options.md, docs/performance.md):
each mode trains an MLP with LayerNorm and Relu to the same weights, bit for bit, as NoRecompute;
NormOnly recomputes the LayerNorm and the Relu in the backward pass; Pipeline is an error. The
model's own marks (Builder.recomputeOutput, recomputeOutputInBackwardPass, checkpointOutput):
Recompute marks recompute with NoRecompute, Checkpoint marks keep an op out of an automatic mode's
choice, and both kinds of choice at once are an error."""
import json
import unittest

import numpy as np

import xtrain as popart
from python_testing import PrivatePool, sgd

WEIGHTS = ["W1", "b1", "lnScale", "lnBias", "W2"]


def mlp(marks=None):
    """marks: "scope" recomputes the LayerNorm and the Relu by a recomputeOutput scope;
    "checkpoint" marks the LayerNorm Checkpoint; "checkpointOutput" has the Relu read the
    LayerNorm's output through checkpointOutput."""
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
    if marks == "scope":
        with b.recomputeOutput(popart.RecomputeType.Recompute):
            h = b.aiOnnx.relu([b.aiOnnx.layernormalization([h, scale, bias])[0]])
    else:
        h = b.aiOnnx.layernormalization([h, scale, bias])[0]
        if marks == "checkpoint":
            b.recomputeOutputInBackwardPass(h, popart.RecomputeType.Checkpoint)
        if marks == "checkpointOutput":
            h = b.checkpointOutput([h])[0]
        h = b.aiOnnx.relu([h])
    logits = b.aiOnnx.matmul([h, w2])
    loss = b.aiOnnx.softmaxcrossentropyloss([logits, labels], reduction="mean")[0]
    b.addOutputTensor(loss)
    return b.getModelProto(), loss


def session_with(mode, marks=None):
    proto, loss = mlp(marks)
    opts = popart.SessionOptions()
    opts.autoRecomputation = mode
    s = popart.TrainingSession(fnModel=proto, dataFlow=popart.DataFlow(1, {}), loss=loss,
                               optimizer=sgd(0.1), userOptions=opts,
                               deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
    s.prepareDevice()
    s.weightsFromHost()
    return s


def trained(mode, steps=3, marks=None):
    s = session_with(mode, marks)
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

    def recomputed(self, s):
        ops = json.loads(s.getReport())["execution"]["ops"]
        return sorted(op["type"] for op in ops if op["name"].startswith("recompute/"))

    def test_marks_recompute_without_an_automatic_mode(self):
        none, _ = trained(popart.RecomputationType.NoRecompute)
        got, s = trained(popart.RecomputationType.NoRecompute, marks="scope")
        self.assertEqual(self.recomputed(s), ["LayerNormalization", "Relu"])
        for w in WEIGHTS:
            self.assertEqual(got[w].tobytes(), none[w].tobytes(), w)

    def test_a_checkpoint_is_kept_from_an_automatic_choice(self):
        none, _ = trained(popart.RecomputationType.NoRecompute)
        # NormOnly chooses the LayerNorm and its Relu; marked Checkpoint, the LayerNorm is kept
        # and the Relu is recomputed from its kept output.
        got, s = trained(popart.RecomputationType.NormOnly, marks="checkpoint")
        self.assertEqual(self.recomputed(s), ["Relu"])
        for w in WEIGHTS:
            self.assertEqual(got[w].tobytes(), none[w].tobytes(), w)
        # RecomputeAll recomputes the LayerNorm for the Relu's recomputation, unless the Relu
        # reads it through checkpointOutput's Identity (kept, so the LayerNorm is not needed).
        _, s = trained(popart.RecomputationType.RecomputeAll)
        self.assertIn("LayerNormalization", self.recomputed(s))
        got, s = trained(popart.RecomputationType.RecomputeAll, marks="checkpointOutput")
        self.assertIn("Relu", self.recomputed(s))
        self.assertNotIn("LayerNormalization", self.recomputed(s))
        self.assertNotIn("Identity", self.recomputed(s))
        for w in WEIGHTS:
            self.assertEqual(got[w].tobytes(), none[w].tobytes(), w)

    def test_marks_and_an_automatic_mode_are_an_error(self):
        with self.assertRaisesRegex(popart.popart_exception,
                                    "A mixture of auto and manual recomputation is not supported"):
            session_with(popart.RecomputationType.Standard, marks="scope")

    def test_builder_reads_and_refuses_marks(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
        y = b.aiOnnx.relu([x])
        self.assertFalse(b.getRecomputeOutputInBackwardPass(y))
        b.recomputeOutputInBackwardPass(y)
        self.assertTrue(b.getRecomputeOutputInBackwardPass(y))
        b.recomputeOutputInBackwardPass({y}, popart.RecomputeType.Checkpoint)
        self.assertFalse(b.getRecomputeOutputInBackwardPass(y))
        with self.assertRaisesRegex(popart.popart_exception, "Recomputed marks the clones"):
            b.recomputeOutputInBackwardPass(y, popart.RecomputeType.Recomputed)
        z = b.checkpointOutput([y])[0]
        self.assertNotEqual(z, y)
        self.assertEqual(b.getTensorShape(z), [2])
        with self.assertRaisesRegex(ValueError, "not a list of integers"):
            b.reshape_const(b.aiOnnx, [y], [2.5])
        self.assertEqual(b.getTensorShape(b.reshape_const(b.aiOnnx, [y], [1, 2.0])), [1, 2])

    def test_pipeline_is_refused(self):
        with self.assertRaisesRegex(popart.popart_exception, "autoRecomputation = Pipeline"):
            session_with(popart.RecomputationType.Pipeline)


if __name__ == "__main__":
    unittest.main()
