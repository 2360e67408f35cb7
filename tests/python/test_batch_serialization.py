"""SessionOptions.batchSerializationSettings (docs/batch-serialization.md): a serialized run trains
to the weights of an unserialized one (SGD with momentum and Adam, with gradient accumulation),
while the memory model charges fewer activation bytes and the cycle model more launches; a batch
the factor does not divide, and what PopART refuses, are errors."""
import json
import unittest

import numpy as np

import xtrain as popart
from python_testing import PrivatePool

BATCH = 8
WEIGHTS = ["W1", "b1", "W2"]


def mlp(batch=BATCH):
    b = popart.Builder(opsets={"ai.onnx": 17, "ai.graphcore": 1})
    rng = np.random.RandomState(3)
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [batch, 8]), "x")
    labels = b.addInputTensor(popart.TensorInfo("INT32", [batch]), "labels")
    w1 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (8, 64)).astype(np.float32), "W1")
    b1 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (64,)).astype(np.float32), "b1")
    w2 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (64, 5)).astype(np.float32), "W2")
    h = b.aiOnnx.relu([b.aiOnnx.add([b.aiOnnx.matmul([x, w1]), b1])])
    h = b.aiOnnx.sigmoid([h])
    logits = b.aiOnnx.matmul([h, w2])
    loss = b.aiOnnx.softmaxcrossentropyloss([logits, labels], reduction="mean")[0]
    b.addOutputTensor(loss)
    return b.getModelProto(), loss, logits


def options(factor, context="Bwd", method="Loop", accumulation=1, pipelining=False):
    o = popart.SessionOptions()
    o.batchSerializationSettings.factor = factor
    o.batchSerializationSettings.transformContext = getattr(
        popart.BatchSerializationTransformContext, context)
    o.batchSerializationSettings.method = getattr(popart.BatchSerializationMethod, method)
    o.instrumentWithHardwareCycleCounter = True
    if accumulation > 1:
        o.enableGradientAccumulation = True
        o.accumulationFactor = accumulation
    if pipelining:
        o.enablePipelining = True
        o.virtualGraphMode = popart.VirtualGraphMode.Auto
    return o


def training_session(opts, optimizer, batch=BATCH, ipus=1):
    proto, loss, _ = mlp(batch)
    return popart.TrainingSession(
        fnModel=proto, dataFlow=popart.DataFlow(2, {loss: popart.AnchorReturnType("All")}),
        loss=loss, optimizer=optimizer, userOptions=opts,
        deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": ipus}))


def trained(opts, optimizer, accumulation):
    s = training_session(opts, optimizer)
    s.prepareDevice()
    s.weightsFromHost()
    rng = np.random.RandomState(5)
    lead = (2, accumulation) if accumulation > 1 else (2,)
    anchors = s.initAnchorArrays()
    for _ in range(2):
        s.run(popart.PyStepIO({"x": rng.randn(*lead, BATCH, 8).astype(np.float32),
                               "labels": rng.randint(0, 5, (*lead, BATCH)).astype(np.int32)},
                              anchors))
    s.weightsToHost()
    out = {w: np.zeros(s.getInfo(w).shape(), np.float32) for w in WEIGHTS}
    s.readWeights(popart.PyWeightsIO(out))
    return out, json.loads(s.getReport())


def activations(report):
    return report["memory"]["ipus"][0]["classes"]["Activations"]


def op_cycles(report, description):
    return [op["cyclesPerCall"] for op in report["execution"]["ops"]
            if op["description"].startswith(description)]


class BatchSerializationTest(PrivatePool, unittest.TestCase):
    def test_same_weights_fewer_activation_bytes_more_launches(self):
        optimizers = {
            "sgd": lambda: popart.SGD({"defaultLearningRate": (0.05, False),
                                       "defaultMomentum": (0.9, False)}),
            "adam": lambda: popart.Adam({"defaultLearningRate": (0.01, False)}),
        }
        for name, make in optimizers.items():
            plain, plain_report = trained(options(1, accumulation=2), make(), 2)
            for context, method in (("Bwd", "Loop"), ("Fwd", "UnrollDynamic")):
                with self.subTest(optimizer=name, context=context):
                    serial, report = trained(options(4, context, method, accumulation=2),
                                             make(), 2)
                    for w in WEIGHTS:
                        # The host computes the whole batch either way: equal by construction.
                        np.testing.assert_array_equal(serial[w], plain[w], err_msg=w)
                    # The first MatMul is serialized in both contexts: 4 launches on 2 samples
                    # each cost more than one launch on 8 (each pays the instruction overhead).
                    self.assertGreater(op_cycles(report, "MatMul 'MatMul'")[0],
                                       op_cycles(plain_report, "MatMul 'MatMul'")[0])
                    if context == "Bwd":
                        # Forward and backward of one slice run together: the activations
                        # between them are charged one slice at a time.
                        self.assertLess(activations(report), activations(plain_report))

    def test_inference_activation_peak_goes_down_with_the_factor(self):
        proto, _, logits = mlp()

        def peak(factor):
            s = popart.InferenceSession(
                fnModel=proto, dataFlow=popart.DataFlow(1, {logits: popart.AnchorReturnType("All")}),
                userOptions=options(factor, "Fwd", "UnrollDynamic"),
                deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
            s.prepareDevice()
            self.assertEqual(f"batch serialization: factor {factor}" in s.getSummaryReport(),
                             factor > 1)
            return activations(json.loads(s.getReport()))

        one, two, four = peak(1), peak(2), peak(4)
        self.assertLess(two, one)
        self.assertLess(four, two)

    def test_an_lstm_input_is_cut_along_its_batch_axis(self):
        # x is [seq 5, batch 4, 3]: the factor 2 divides the batch axis (1), not the first.
        def run(factor):
            b = popart.Builder(opsets={"ai.onnx": 11, "ai.graphcore": 1})
            x = b.addInputTensor(popart.TensorInfo("FLOAT", [5, 4, 3]), "x")
            rng = np.random.RandomState(0)
            w = b.addInitializedInputTensor(rng.rand(1, 24, 3).astype(np.float32), "W")
            r = b.addInitializedInputTensor(rng.rand(1, 24, 6).astype(np.float32), "R")
            y = b.aiOnnx.lstm([x, w, r], 3)[0]
            s = popart.InferenceSession(
                fnModel=b.getModelProto(),
                dataFlow=popart.DataFlow(1, {y: popart.AnchorReturnType("All")}),
                userOptions=options(factor, "Fwd", "UnrollDynamic"),
                deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
            s.prepareDevice()
            anchors = s.initAnchorArrays()
            s.run(popart.PyStepIO({x: rng.rand(5, 4, 3).astype(np.float32)}, anchors))
            return anchors[y], activations(json.loads(s.getReport()))

        plain, plain_bytes = run(1)
        serial, serial_bytes = run(2)
        np.testing.assert_array_equal(serial, plain)
        self.assertLess(serial_bytes, plain_bytes)

    def test_refusals(self):
        sgd = lambda: popart.SGD({"defaultLearningRate": (0.05, False)})
        cases = [
            (lambda: training_session(options(4), sgd(), batch=6),
             ["batchSerializationSettings.factor = 4 does not divide", "'x'", "[6,8]"]),
            (lambda: training_session(options(4), sgd(), batch=2),
             ["Batch axis: 2 is smaller than the batch serialization factor: 4", "x"]),
            (lambda: training_session(options(4, "Fwd", "Loop"), sgd()),
             ["Loop batch serialization is only supported in "
              "BatchSerializationTransformContext::Bwd"]),
            (lambda: training_session(options(2, accumulation=4, pipelining=True), sgd(), ipus=2),
             ["enablePipelining", "not implemented"]),
        ]
        b = popart.Builder(opsets={"ai.onnx": 11, "ai.graphcore": 1})
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 2, 3, 3]), "x")
        params = [b.addInitializedInputTensor(np.full(2, v, np.float32)) for v in (1, 0, 0, 1)]
        y = b.aiOnnx.batchnormalization([x] + params, 5)[0]
        loss = b.aiGraphcore.l1loss([y], 0.1)
        cases.append((lambda: popart.TrainingSession(
            fnModel=b.getModelProto(), dataFlow=popart.DataFlow(1, {}), loss=loss,
            optimizer=sgd(), userOptions=options(2),
            deviceInfo=popart.DeviceManager().createIpuModelDevice({})),
            ["BatchNormalization", "not implemented", "statistics of each slice"]))
        for make, parts in cases:
            with self.assertRaises(popart.popart_exception) as e:
                make()
            for part in parts:
                self.assertIn(part, str(e.exception))


if __name__ == "__main__":
    unittest.main()
