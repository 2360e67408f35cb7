"""Pipelining from Python (docs/pipelining.md): a model in two pipeline stages (the Builder's
pipelineStage and virtualGraph context managers) trains with enablePipelining to the weights and
per-micro-batch losses of the same model trained unpipelined with gradient accumulation, bit for
bit, with 2 local replicas and with RecomputationType.Pipeline; an inference pipeline returns the
unpipelined outputs; the report shows the stashes; bad options are clear errors."""
import json
import unittest

import numpy as np
import onnx

import xtrain as popart
from python_testing import PrivatePool, sgd

WEIGHTS = ["W1", "b1", "W2", "b2"]


def mlp(stages):
    """x -> [stage 0] relu(x W1 + b1) -> [stage 1] softmax cross-entropy of (h W2 + b2)."""
    b = popart.Builder(opsets={"ai.onnx": 13, "ai.graphcore": 1})
    rng = np.random.RandomState(4)
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 6]), "x")
    labels = b.addInputTensor(popart.TensorInfo("INT32", [4]), "labels")
    w1 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (6, 10)).astype(np.float32), "W1")
    b1 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (10,)).astype(np.float32), "b1")
    w2 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (10, 3)).astype(np.float32), "W2")
    b2 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (3,)).astype(np.float32), "b2")

    def layer1():
        return b.aiOnnx.relu([b.aiOnnx.add([b.aiOnnx.matmul([x, w1]), b1])])

    def layer2(h):
        logits = b.aiOnnx.add([b.aiOnnx.matmul([h, w2]), b2])
        return b.aiOnnx.softmaxcrossentropyloss([logits, labels], reduction="mean")[0]

    if stages:
        with b.virtualGraph(0), b.pipelineStage(0):
            h = layer1()
        with b.virtualGraph(1), b.pipelineStage(1):
            loss = layer2(h)
    else:
        loss = layer2(layer1())
    b.addOutputTensor(loss)
    return b.getModelProto(), loss


def options(pipelined, replicas, af, recompute=popart.RecomputationType.NoRecompute):
    opts = popart.SessionOptions()
    opts.enableReplicatedGraphs = replicas > 1
    opts.replicatedGraphCount = replicas
    opts.enableGradientAccumulation = True
    opts.accumulationFactor = af
    opts.autoRecomputation = recompute
    if pipelined:
        opts.virtualGraphMode = popart.VirtualGraphMode.Manual
        opts.enablePipelining = True
    return opts


def train(pipelined, replicas=1, af=4, steps=3, **kw):
    proto, loss = mlp(pipelined)
    device = popart.DeviceManager().createIpuModelDevice(
        {"numIPUs": replicas * (2 if pipelined else 1)})
    s = popart.TrainingSession(
        fnModel=proto, dataFlow=popart.DataFlow(1, {loss: popart.AnchorReturnType("All")}),
        loss=loss, optimizer=sgd(0.1, momentum=0.9),
        userOptions=options(pipelined, replicas, af, **kw), deviceInfo=device)
    s.prepareDevice()
    s.weightsFromHost()
    anchors = s.initAnchorArrays()
    rng = np.random.RandomState(1)
    losses = []
    for _ in range(steps):
        s.run(popart.PyStepIO({"x": rng.randn(af, replicas, 4, 6).astype(np.float32),
                               "labels": rng.randint(0, 3, (af, replicas, 4)).astype(np.int32)},
                              anchors))
        losses.append(anchors[loss].copy())
    s.weightsToHost()
    out = {w: np.zeros(s.getInfo(w).shape(), np.float32) for w in WEIGHTS}
    s.readWeights(popart.PyWeightsIO(out))
    return out, np.concatenate(losses), s


class PipelinedTrainingTest(PrivatePool, unittest.TestCase):
    def check_same(self, **kw):
        expected, expected_losses, _ = train(False, **kw)
        kw.pop("recompute", None)
        got, losses, s = train(True, **kw)
        for w in WEIGHTS:
            self.assertEqual(got[w].tobytes(), expected[w].tobytes(), w)
        self.assertEqual(losses.tobytes(), expected_losses.tobytes())
        return s

    def test_trains_to_the_unpipelined_weights_bit_for_bit(self):
        s = self.check_same(af=4)
        report = json.loads(s.getReport())
        self.assertEqual(report["pipeline"]["stages"], 2)
        self.assertEqual(report["pipeline"]["slots"], 3)
        self.assertGreater(report["pipeline"]["stashBytesPerIpu"][0], 0)
        self.assertIn("pipeline: 2 stages in 3 slots", s.getSummaryReport())

    def test_local_replicas_and_recomputation(self):
        self.check_same(replicas=2, af=6)
        expected, expected_losses, _ = train(False, af=4)
        got, losses, _ = train(True, af=4, recompute=popart.RecomputationType.Pipeline)
        for w in WEIGHTS:
            self.assertEqual(got[w].tobytes(), expected[w].tobytes(), w)
        self.assertEqual(losses.tobytes(), expected_losses.tobytes())

    def test_bad_options(self):
        proto, loss = mlp(True)
        for change, message in (
                (lambda o: setattr(o, "accumulationFactor", 2),
                 r"depth \(gradient accumulation factor\) must equal at least the number of "
                 r"pipeline stages \(3\)"),
                (lambda o: setattr(o, "virtualGraphMode", popart.VirtualGraphMode.Off),
                 r"Pipelining requires more than 1 IPU \(currently 1\) and the 'virtualGraphMode' "
                 r"session option to not be VirtualGraphMode::Off \(currently Off\)"),
                (lambda o: (setattr(o, "enableGradientAccumulation", False),
                            setattr(o, "accumulationFactor", 1)),
                 "requires enableGradientAccumulation = true")):
            opts = options(True, 1, 4)
            change(opts)
            with self.assertRaisesRegex(popart.popart_exception, message):
                popart.TrainingSession(
                    fnModel=proto, dataFlow=popart.DataFlow(1, {}), loss=loss,
                    optimizer=sgd(0.1), userOptions=opts,
                    deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}))


    def test_batches_per_step_and_activation_anchors(self):
        """2 batches a step (an update after each pipeline), an activation of the first stage, the
        loss of the last and a weight anchored: every value as unpipelined."""
        results = []
        for pipelined in (False, True):
            proto, loss = mlp(pipelined)
            relu = [n.output[0] for n in onnx.load_from_string(proto).graph.node
                    if n.op_type == "Relu"][0]
            arts = {loss: popart.AnchorReturnType("All"), relu: popart.AnchorReturnType("All"),
                    "W1": popart.AnchorReturnType("Final")}
            s = popart.TrainingSession(
                fnModel=proto, dataFlow=popart.DataFlow(2, arts), loss=loss,
                optimizer=sgd(0.1, momentum=0.9), userOptions=options(pipelined, 1, 4),
                deviceInfo=popart.DeviceManager().createIpuModelDevice(
                    {"numIPUs": 2 if pipelined else 1}))
            s.prepareDevice()
            s.weightsFromHost()
            anchors = s.initAnchorArrays()
            rng = np.random.RandomState(1)
            s.run(popart.PyStepIO({"x": rng.randn(2, 4, 4, 6).astype(np.float32),
                                   "labels": rng.randint(0, 3, (2, 4, 4)).astype(np.int32)},
                                  anchors))
            results.append({k: v.copy() for k, v in anchors.items()})
        for k in results[0]:
            self.assertEqual(results[0][k].tobytes(), results[1][k].tobytes(), k)


class PipelinedInferenceTest(PrivatePool, unittest.TestCase):
    def test_returns_the_unpipelined_outputs(self):
        outputs = []
        for pipelined in (False, True):
            proto, loss = mlp(pipelined)
            opts = popart.SessionOptions()
            if pipelined:
                opts.virtualGraphMode = popart.VirtualGraphMode.Manual
                opts.enablePipelining = True
            s = popart.InferenceSession(
                fnModel=proto, dataFlow=popart.DataFlow(5, {loss: popart.AnchorReturnType("All")}),
                userOptions=opts,
                deviceInfo=popart.DeviceManager().createIpuModelDevice(
                    {"numIPUs": 2 if pipelined else 1}))
            s.prepareDevice()
            anchors = s.initAnchorArrays()
            rng = np.random.RandomState(2)
            s.run(popart.PyStepIO({"x": rng.randn(5, 4, 6).astype(np.float32),
                                   "labels": rng.randint(0, 3, (5, 4)).astype(np.int32)},
                                  anchors))
            outputs.append(anchors[loss].copy())
        self.assertEqual(outputs[0].tobytes(), outputs[1].tobytes())


if __name__ == "__main__":
    unittest.main()
