"""aiGraphcore.copyvarupdate (docs/operators.md): a weight the model writes itself, once per
micro-batch of a TrainingSession, alongside the optimizer's updates of the others, and after each
forward pass of an InferenceSession."""
import unittest

import numpy as np

import xtrain as popart


def model():
    """A trained weight w (loss = sum(x * w)) and a step counter c that copyvarupdate advances."""
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    w = b.addInitializedInputTensor(np.ones(2, np.float32), "w")
    loss = b.aiOnnx.reducesum([b.aiOnnx.mul([x, w])], keepdims=0)
    c = b.addInitializedInputTensor(np.array([10.0], np.float32), "c")
    next_c = b.aiOnnx.add([c, b.aiOnnx.constant(np.array([1.0], np.float32))])
    copied = b.aiGraphcore.copyvarupdate([c, next_c])
    return b, x, loss, c, next_c, copied


class CopyVarUpdateTest(unittest.TestCase):
    def training(self, accumulation=1):
        b, x, loss, c, next_c, copied = model()
        opts = popart.SessionOptions()
        if accumulation > 1:
            opts.enableGradientAccumulation = True
            opts.accumulationFactor = accumulation
        session = popart.TrainingSession(
            fnModel=b.getModelProto(),
            dataFlow=popart.DataFlow(1, {next_c: popart.AnchorReturnType("All"),
                                         copied: popart.AnchorReturnType("All")}),
            loss=loss, optimizer=popart.ConstSGD(0.5), userOptions=opts,
            deviceInfo=popart.DeviceManager().createCpuDevice())
        session.prepareDevice()
        session.weightsFromHost()
        return session, x, next_c, copied

    def test_the_weight_takes_the_value_each_micro_batch(self):
        session, x, next_c, copied = self.training()
        anchors = session.initAnchorArrays()
        for step in range(3):
            session.run(popart.PyStepIO({x: np.ones(2, np.float32)}, anchors))
            self.assertEqual(anchors[next_c][0], 11 + step)
            np.testing.assert_array_equal(anchors[copied], anchors[next_c])
        weights = {"w": np.zeros(2, np.float32), "c": np.zeros(1, np.float32)}
        session.weightsToHost()
        session.readWeights(popart.PyWeightsIO(weights))
        self.assertEqual(weights["c"][0], 13)
        # The other weight is trained as usual (and c is not: it has no gradient to follow).
        np.testing.assert_allclose(weights["w"], 1 - 3 * 0.5)

    def test_with_gradient_accumulation_each_micro_batch_counts(self):
        session, x, next_c, _ = self.training(accumulation=2)
        anchors = session.initAnchorArrays()
        session.run(popart.PyStepIO({x: np.ones([2, 2], np.float32)}, anchors))
        np.testing.assert_array_equal(anchors[next_c].reshape(-1), [11, 12])

    def test_an_inference_session_writes_it_after_each_forward_pass(self):
        # PopTorch's buffers that forward updates in place (docs/poptorch.md) run so: 3 batches
        # a step on 2 replicas, each replica its own counter.
        b, x, loss, c, next_c, copied = model()
        opts = popart.SessionOptions()
        opts.enableReplicatedGraphs = True
        opts.replicatedGraphCount = 2
        session = popart.InferenceSession(
            fnModel=b.getModelProto(), dataFlow=popart.DataFlow(3, [copied]), userOptions=opts,
            deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}))
        session.prepareDevice()
        session.weightsFromHost()
        anchors = session.initAnchorArrays()
        for step in range(2):
            session.run(popart.PyStepIO({x: np.ones([3, 2, 2], np.float32)}, anchors))
            expected = 11 + 3 * step + np.arange(3)
            np.testing.assert_array_equal(anchors[copied].reshape(3, 2),
                                          np.stack([expected, expected], axis=1))
        weights = {"w": np.zeros(2, np.float32), "c": np.zeros(1, np.float32)}
        session.weightsToHost()
        session.readWeights(popart.PyWeightsIO(weights))
        self.assertEqual(weights["c"][0], 16)
        np.testing.assert_array_equal(weights["w"], [1, 1])

    def test_a_pipelined_inference_session_refuses_it(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
        c = b.addInitializedInputTensor(np.array([10.0, 10.0], np.float32), "c")
        with b.virtualGraph(0), b.pipelineStage(0):
            h = b.aiOnnx.add([x, c])
            copied = b.aiGraphcore.copyvarupdate([c, h])
        with b.virtualGraph(1), b.pipelineStage(1):
            y = b.aiOnnx.mul([copied, x])
        opts = popart.SessionOptions()
        opts.virtualGraphMode = popart.VirtualGraphMode.Manual
        opts.enablePipelining = True
        with self.assertRaisesRegex(popart.popart_exception,
                                    "a pipelined InferenceSession does not do"):
            popart.InferenceSession(
                fnModel=b.getModelProto(), dataFlow=popart.DataFlow(4, [y]), userOptions=opts,
                deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}))

    def test_refused_where_it_cannot_write(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
        w = b.addInitializedInputTensor(np.ones(2, np.float32), "w")
        y = b.aiOnnx.mul([x, w])
        copied = b.aiGraphcore.copyvarupdate([y, x])
        loss = b.aiOnnx.reducesum([b.aiOnnx.add([y, copied])], keepdims=0)
        with self.assertRaisesRegex(popart.popart_exception, "is not a weight"):
            popart.TrainingSession(fnModel=b.getModelProto(), dataFlow=popart.DataFlow(1, [loss]),
                                   loss=loss, optimizer=popart.ConstSGD(0.1),
                                   deviceInfo=popart.DeviceManager().createCpuDevice())
        with self.assertRaisesRegex(popart.popart_exception, "takes 2 input tensors, got 1"):
            b.aiGraphcore.copyvarupdate([x])


if __name__ == "__main__":
    unittest.main()
