"""Model parallelism from Python (docs/model-parallelism.md): the Builder's virtualGraph,
pipelineStage and executionPhase write PopART's node attributes (per node and as context
managers); a model placed on 2 IPUs per replica trains, with VirtualGraphMode.Manual or Auto, to the
weights of one IPU per replica, bit for bit (local replicas, gradient accumulation); _serializeIr
shows the placement and the IpuCopy ops; Manual's errors."""
import json
import unittest

import numpy as np
import onnx

import xtrain as popart
from python_testing import PrivatePool, sgd

WEIGHTS = ["W1", "b1", "W2", "b2"]


def attributes(proto, output):
    """{name: int value} of the node that makes `output`."""
    for node in onnx.load_from_string(proto).graph.node:
        if output in node.output:
            return {a.name: a.i for a in node.attribute if a.name.startswith("__")}
    raise KeyError(output)


def mlp(place):
    """x -> [IPU 0] relu(x W1 + b1) -> [IPU 1] x W2 + b2 -> softmax cross-entropy."""
    b = popart.Builder(opsets={"ai.onnx": 13, "ai.graphcore": 1})  # SoftmaxCrossEntropyLoss: 12+
    rng = np.random.RandomState(4)
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 6]), "x")
    labels = b.addInputTensor(popart.TensorInfo("INT32", [4]), "labels")
    w1 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (6, 10)).astype(np.float32), "W1")
    b1 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (10,)).astype(np.float32), "b1")
    w2 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (10, 3)).astype(np.float32), "W2")
    b2 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (3,)).astype(np.float32), "b2")
    if place:
        with b.virtualGraph(0):
            h = b.aiOnnx.relu([b.aiOnnx.add([b.aiOnnx.matmul([x, w1]), b1])])
        with b.virtualGraph(1):
            logits = b.aiOnnx.add([b.aiOnnx.matmul([h, w2]), b2])
            loss = b.aiOnnx.softmaxcrossentropyloss([logits, labels], reduction="mean")[0]
    else:
        h = b.aiOnnx.relu([b.aiOnnx.add([b.aiOnnx.matmul([x, w1]), b1])])
        logits = b.aiOnnx.add([b.aiOnnx.matmul([h, w2]), b2])
        loss = b.aiOnnx.softmaxcrossentropyloss([logits, labels], reduction="mean")[0]
    b.addOutputTensor(loss)
    return b.getModelProto(), loss


def train(place, mode, replicas=2, af=2, ipus_per_replica=2, steps=3):
    proto, loss = mlp(place)
    opts = popart.SessionOptions()
    opts.virtualGraphMode = mode
    opts.enableReplicatedGraphs = replicas > 1
    opts.replicatedGraphCount = replicas
    opts.enableGradientAccumulation = af > 1
    opts.accumulationFactor = af
    device = popart.DeviceManager().createIpuModelDevice(
        {"numIPUs": replicas * ipus_per_replica})
    s = popart.TrainingSession(fnModel=proto, dataFlow=popart.DataFlow(1, {}), loss=loss,
                               optimizer=sgd(0.1, momentum=0.9), userOptions=opts,
                               deviceInfo=device)
    s.prepareDevice()
    s.weightsFromHost()
    rng = np.random.RandomState(1)
    for _ in range(steps):
        s.run(popart.PyStepIO({"x": rng.randn(af, replicas, 4, 6).astype(np.float32),
                               "labels": rng.randint(0, 3, (af, replicas, 4)).astype(np.int32)},
                              {}))
    s.weightsToHost()
    out = {w: np.zeros(s.getInfo(w).shape(), np.float32) for w in WEIGHTS}
    s.readWeights(popart.PyWeightsIO(out))
    return out, s


class BuilderPlacementTest(unittest.TestCase):
    def test_context_managers_write_node_attributes(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
        with b.virtualGraph(1), b.pipelineStage(2):
            y = b.aiOnnx.relu([x])
            with b.virtualGraph(3):
                z = b.aiOnnx.relu([y])
            w = b.aiOnnx.relu([z])
        v = b.aiOnnx.relu([w])
        proto = b.getModelProto()
        self.assertEqual(attributes(proto, y), {"__ipu_number": 1, "__pipeline_stage": 2})
        self.assertEqual(attributes(proto, z), {"__ipu_number": 3, "__pipeline_stage": 2})
        self.assertEqual(attributes(proto, w), {"__ipu_number": 1, "__pipeline_stage": 2})
        self.assertEqual(attributes(proto, v), {})
        self.assertEqual(b.getVirtualGraph(z), 3)
        self.assertEqual(b.getPipelineStage(y), 2)

    def test_per_node_setters_write_and_replace(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 1]), "x")
        outs = b.aiOnnx.split([x], 4)
        b.virtualGraph(set(outs), 1)
        self.assertEqual(b.getVirtualGraph(list(outs)), 1)
        b.virtualGraph(outs[0], 2)  # replaces the node's value
        self.assertEqual(b.getVirtualGraph(outs[2]), 2)
        b.executionPhase(outs[1])
        b.pipelineStage(outs[1], 5)
        self.assertEqual(attributes(b.getModelProto(), outs[3]),
                         {"__ipu_number": 2, "__execution_phase": 0, "__pipeline_stage": 5})
        # A Builder made from the model reads them back.
        again = popart.Builder(b.getModelProto())
        self.assertEqual(again.getVirtualGraph(outs[0]), 2)
        self.assertEqual(again.getExecutionPhase(outs[0]), 0)

    def test_bad_placement(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
        y = b.aiOnnx.relu([x])
        with self.assertRaisesRegex(popart.popart_exception, "no __ipu_number"):
            b.getVirtualGraph(y)
        with self.assertRaisesRegex(popart.popart_exception, "negative"):
            b.virtualGraph(y, -2)
        with self.assertRaisesRegex(popart.popart_exception, "no node has all of"):
            b.virtualGraph(x, 0)


class ShardedTrainingTest(PrivatePool, unittest.TestCase):
    def test_two_ipus_per_replica_train_to_the_same_weights(self):
        one, _ = train(False, popart.VirtualGraphMode.Off, ipus_per_replica=1)
        for place, mode in ((True, popart.VirtualGraphMode.Manual),
                            (False, popart.VirtualGraphMode.Auto)):
            got, s = train(place, mode)
            for w in WEIGHTS:
                self.assertEqual(got[w].tobytes(), one[w].tobytes(), "%s: %s" % (mode, w))
            ir = json.loads(s._serializeIr(popart.IrSerializationFormat.JSON))
            ipus = {int(op["attributes"]["__ipu_number"]) for op in ir["maingraph"]}
            self.assertEqual(ipus, {0, 1})
            self.assertTrue(any(op["type"] == "IpuCopy" for op in ir["maingraph"]))
            report = json.loads(s.getReport())
            weights = [ipu["classes"]["Weights"] for ipu in report["memory"]["ipus"]]
            self.assertTrue(all(w > 0 for w in weights), weights)

    def test_manual_needs_every_op_placed(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [1]), "x")
        y = b.aiOnnx.add([x, x])
        z = b.aiOnnx.add([y, x])
        b.virtualGraph(y, 0)
        opts = popart.SessionOptions()
        opts.virtualGraphMode = popart.VirtualGraphMode.Manual
        with self.assertRaisesRegex(popart.popart_exception, "Either all Ops"):
            popart.InferenceSession(fnModel=b.getModelProto(),
                                    dataFlow=popart.DataFlow(1, {z: popart.AnchorReturnType("All")}),
                                    userOptions=opts,
                                    deviceInfo=popart.DeviceManager().createIpuModelDevice({}))


if __name__ == "__main__":
    unittest.main()
