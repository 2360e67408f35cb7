"""Automatic loss scaling from Python with PopART's histogram rule (docs/optimizers.md 6.2): the
finalLossScale sequence of a FLOAT16 model whose one tracked gradient we choose, against a NumPy
reference of the rule; update period 2; PopART's errors (compared at the end, as PopART's tests
do); xtrain's GradScaler method as an explicit choice."""
import unittest

import numpy as np

import xtrain as popart

EDGE = np.float16(0.5 * 65504)  # binEdgeLocation 0.5, in FLOAT16


def build(dtype="FLOAT16"):
    """loss = ReduceSum(x * W): the one tracked gradient is dW = ls * x."""
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo(dtype, [4]), "x")
    w = b.addInitializedInputTensor(np.array([1, 2, 3, 4], dtype=np.float16 if dtype ==
                                             "FLOAT16" else np.float32), "W")
    y = b.aiOnnx.mul([x, w])
    loss = b.aiOnnx.reducesum([y], keepdims=0)
    return b.getModelProto(), x, loss


def options(period=1, threshold=0.2):
    o = popart.SessionOptions()
    o.automaticLossScalingSettings.enabled = True
    o.automaticLossScalingSettings.binEdgeLocation = 0.5
    o.automaticLossScalingSettings.thresholdUpperCountProportion = threshold
    o.automaticLossScalingSettings.updatePeriod = period
    return o


def session(proto, loss, opts, bps, ls=3.0, anchors=("finalLossScale",)):
    s = popart.TrainingSession(
        fnModel=proto, loss=loss, deviceInfo=popart.DeviceManager().createCpuDevice(),
        optimizer=popart.SGD({"lossScaling": (ls, False), "defaultLearningRate": (0.0, False)}),
        dataFlow=popart.DataFlow(bps, list(anchors)), userOptions=opts)
    s.prepareDevice()
    s.weightsFromHost()
    return s


def reference(xs, ls, period, threshold):
    """PopART's rule on the batches xs: the scale in force at each batch."""
    factor, out = 1.0, []
    for k, x in enumerate(xs):
        out.append(ls * factor)
        if k % period:
            continue
        g = np.abs((np.float16(ls * factor) * x.astype(np.float16)).astype(np.float16))
        upper = np.count_nonzero(~(g < EDGE))
        lower = g.size - upper
        f = np.float32(threshold) / (np.float32(1) - np.float32(threshold))
        factor = factor / 2 if upper > np.float32(lower) * f else factor * 2
    return out


class HistogramRuleTest(unittest.TestCase):
    def check(self, period):
        proto, x, loss = build()
        rng = np.random.default_rng(period)
        # Each batch: 0 to 3 elements large enough to reach the edge at some scales.
        xs = [np.where(rng.random(4) < 0.4, 8192.0, 1.0).astype(np.float16) for _ in range(8)]
        s = session(proto, loss, options(period), bps=8)
        anchors = s.initAnchorArrays()
        s.run(popart.PyStepIO({x: np.stack(xs)}, anchors))
        np.testing.assert_array_equal(anchors["finalLossScale"].flatten(),
                                      reference(xs, 3.0, period, 0.2))

    def test_update_period_1(self):
        self.check(1)

    def test_update_period_2(self):
        self.check(2)

    def test_pipelined_histograms_count_as_unpipelined(self):
        """Pipelined over two stages, each tracked gradient of a micro-batch is counted after
        the cycle that writes it: the scales are those of the same model unpipelined."""
        def run(pipelined):
            b = popart.Builder()
            x = b.addInputTensor(popart.TensorInfo("FLOAT16", [4]), "x")
            w0 = b.addInitializedInputTensor(np.ones(4, np.float16), "W0")
            w1 = b.addInitializedInputTensor(np.full(4, 2.0, np.float16), "W1")
            with b.virtualGraph(0), b.pipelineStage(0):
                y = b.aiOnnx.mul([x, w0])
            with b.virtualGraph(1), b.pipelineStage(1):
                loss = b.aiOnnx.reducesum([b.aiOnnx.mul([y, w1])], keepdims=0)
            o = options(period=2)
            o.virtualGraphMode = popart.VirtualGraphMode.Manual
            o.enableGradientAccumulation = True
            o.accumulationFactor = 3
            o.enablePipelining = pipelined
            s = popart.TrainingSession(
                fnModel=b.getModelProto(), loss=loss,
                deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}),
                optimizer=popart.SGD({"lossScaling": (3.0, False),
                                      "defaultLearningRate": (0.0, False)}),
                dataFlow=popart.DataFlow(6, ["finalLossScale"]), userOptions=o)
            s.prepareDevice()
            s.weightsFromHost()
            rng = np.random.default_rng(7)
            xs = np.where(rng.random([6 * 3, 4]) < 0.3, 8192.0, 1.0).astype(np.float16)
            anchors = s.initAnchorArrays()
            s.run(popart.PyStepIO({x: xs.reshape(6, 3, 4)}, anchors))
            return anchors["finalLossScale"].flatten()
        unpipelined = run(False)
        self.assertGreater(len(set(unpipelined.tolist())), 1)  # the scale moves
        np.testing.assert_array_equal(run(True), unpipelined)

    def test_gradscaler_is_an_explicit_choice(self):
        proto, x, loss = build()
        o = options()
        o.automaticLossScalingSettings.method = popart.AutomaticLossScalingMethod.GradScaler
        o.automaticLossScalingSettings.growthInterval = 1
        s = session(proto, loss, o, bps=1, anchors=())
        s.run(popart.PyStepIO({x: np.ones(4, np.float16)}, s.initAnchorArrays()))
        self.assertEqual(s.getLossScaling(), 6.0)  # grown after one finite step


class ErrorsTest(unittest.TestCase):
    def error(self, make):
        with self.assertRaises(popart.popart_exception) as e:
            make()
        return e.exception.args[0]

    def test_popart_messages(self):
        proto, x, loss = build()
        self.assertTrue(self.error(lambda: popart.InferenceSession(
            proto, deviceInfo=popart.DeviceManager().createCpuDevice(),
            dataFlow=popart.DataFlow(1, [loss]), userOptions=options())).endswith(
                "Only compatible when doing training"))
        self.assertTrue(self.error(lambda: popart.TrainingSession(
            fnModel=proto, loss=loss, deviceInfo=popart.DeviceManager().createCpuDevice(),
            optimizer=popart.SGD({"lossScaling": (2.0, True)}), dataFlow=popart.DataFlow(1, []),
            userOptions=options())).endswith("The optimizer must have non-const loss scaling"))
        proto32, _, loss32 = build("FLOAT")
        self.assertTrue(self.error(lambda: session(proto32, loss32, options(), 1)).endswith(
            "No tracked gradient tensors of type fp16 were found."))
        self.assertTrue(self.error(lambda: session(proto, loss, options(threshold=1.1), 1))
                        .startswith("Out of range value for 'thresholdUpperCountProportion'."))
        # Pipelining without gradient accumulation is named before the pipeline's own checks
        # (here: one virtual graph only).
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT16", [4]), "x")
        w = b.addInitializedInputTensor(np.ones(4, np.float16), "W")
        with b.virtualGraph(0):
            loss = b.aiOnnx.reducesum([b.aiOnnx.mul([x, w])], keepdims=0)
        opts = options()
        opts.enablePipelining = True
        opts.virtualGraphMode = popart.VirtualGraphMode.Manual
        self.assertTrue(self.error(lambda: session(b.getModelProto(), loss, opts, 1)).endswith(
            "Automatic loss scaling is not currently supported when the 'enablePipelining' "
            "SessionOption is set to 'true', but the 'enableGradientAccumulation' SessionOption "
            "is set to 'false'"))


if __name__ == "__main__":
    unittest.main()
