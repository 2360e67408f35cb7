"""What each AnchorReturnType hands back, value by value, checked against a NumPy model of one
step: ALL (every micro-batch), FINAL (the last), SUM (their sum) and EVERYN(N) (every N-th batch
with all its micro-batches, docs/replication-semantics.md section 6), for scalar and vector
tensors, one or many batches per step, replicas, and training with gradient accumulation (where
the anchored value is the forward value of its micro-batch, before that batch's weight update).
Every case runs with and without PopART's explicit main loops and host copy ops switched on (no
effect in xtrain).

Anchor buffer shapes alone: test_sessions.py (AnchorShapesTest); bad AnchorReturnType arguments:
test_tensors.py (AnchorReturnTypeTest)."""
import itertools
import unittest

import numpy as np

import xtrain as popart
from python_testing import PrivatePool

KINDS = [("ALL", None), ("FINAL", None), ("SUM", None), ("EVERYN", 1), ("EVERYN", 2),
         ("EVERYN", 3)]


def art(kind, period):
    return popart.AnchorReturnType(kind) if period is None else \
        popart.AnchorReturnType(kind, period)


def options(replicas=1, accumulation=1, explicit=False):
    """explicit: PopART's explicit main loops and host copy ops, accepted by xtrain with no
    effect on the results (docs/session-options.md): every case runs both ways."""
    opts = popart.SessionOptions()
    opts.enableExplicitMainLoops = explicit
    opts.useHostCopyOps = explicit
    if replicas > 1:
        opts.enableReplicatedGraphs = True
        opts.replicatedGraphCount = replicas
    if accumulation > 1:
        opts.enableGradientAccumulation = True
        opts.accumulationFactor = accumulation
    return opts


def squeeze_prefix(values, prefix_rank):
    """Drops the leading (bps, af, replicas) dimensions equal to 1, as the session's buffers do."""
    keep = [n for n in values.shape[:prefix_rank] if n != 1]
    return values.reshape(keep + list(values.shape[prefix_rank:]))


def reference(kind, period, seen):
    """The anchor of a step whose per-micro-batch values are seen[batch, micro, replica, ...]."""
    if kind == "ALL":
        return squeeze_prefix(seen, 3)
    if kind == "EVERYN":
        return squeeze_prefix(seen[period - 1::period], 3)
    per_replica = seen[-1, -1] if kind == "FINAL" else seen.sum(axis=(0, 1))
    return squeeze_prefix(per_replica, 1)


class InferenceAnchorsTest(PrivatePool, unittest.TestCase):
    """y = identity(x): each anchor of y is a selection or the sum of the inputs fed."""

    def step(self, shape, bps, replicas, anchor, explicit):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", shape), "x")
        y = b.aiOnnx.identity([x], "y")
        b.addOutputTensor(y)
        rng = np.random.RandomState(len(shape) * 100 + bps * 10 + replicas)
        # Small integers: every sum is exact in float32, so the comparison can be exact.
        seen = rng.randint(-50, 50, size=[bps, 1, replicas] + shape).astype(np.float32)
        with popart.DeviceManager().createIpuModelDevice({"numIPUs": replicas}) as device:
            session = popart.InferenceSession(
                fnModel=b.getModelProto(), dataFlow=popart.DataFlow(bps, {y: anchor}),
                deviceInfo=device, userOptions=options(replicas, explicit=explicit))
            session.prepareDevice()
            anchors = session.initAnchorArrays()
            session.run(popart.PyStepIO({x: squeeze_prefix(seen, 3)}, anchors))
        return anchors[y], seen

    def check(self, shape, bps, replicas=1):
        for (kind, period), explicit in itertools.product(KINDS, (False, True)):
            if period is not None and bps % period:
                continue  # a period must divide the batches per step
            with self.subTest(kind=kind, period=period, explicit=explicit):
                got, seen = self.step(shape, bps, replicas, art(kind, period), explicit)
                want = reference(kind, period, seen)
                self.assertEqual(got.shape, want.shape)
                np.testing.assert_array_equal(got, want)

    def test_scalar_one_batch(self):
        self.check([], 1)

    def test_scalar_many_batches(self):
        self.check([], 6)

    def test_vector_one_batch(self):
        self.check([3], 1)

    def test_vector_many_batches(self):
        self.check([3], 6)

    def test_scalar_replicated(self):
        # One value per replica: FINAL and SUM are [replicas], ALL [bps, replicas].
        self.check([], 6, replicas=2)

    def test_matrix_replicated(self):
        self.check([2, 2], 2, replicas=2)

    def test_sum_of_a_known_step(self):
        # Written out once by hand: bps 4, inputs 2, 4, 6, 8 -> SUM 20, FINAL 8, EVERYN(2) [4, 8].
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", []), "x")
        outs = {kind: b.aiOnnx.identity([x], "y_" + kind) for kind in ("sum", "final", "every2")}
        flow = popart.DataFlow(4, {outs["sum"]: popart.AnchorReturnType("SUM"),
                                   outs["final"]: popart.AnchorReturnType("FINAL"),
                                   outs["every2"]: popart.AnchorReturnType("EVERYN", 2)})
        with popart.DeviceManager().createIpuModelDevice({}) as device:
            session = popart.InferenceSession(fnModel=b.getModelProto(), dataFlow=flow,
                                              deviceInfo=device)
            session.prepareDevice()
            anchors = session.initAnchorArrays()
            session.run(popart.PyStepIO({x: np.array([2, 4, 6, 8], np.float32)}, anchors))
        self.assertEqual(float(anchors[outs["sum"]]), 20.0)
        self.assertEqual(float(anchors[outs["final"]]), 8.0)
        self.assertEqual(anchors[outs["every2"]].tolist(), [4.0, 8.0])


class TrainingAnchorsTest(PrivatePool, unittest.TestCase):
    """y = x + w, loss = l1loss(y, LAMBDA) (mean over y's elements), ConstSGD(LR): the anchor of y
    and the weight after one step match a NumPy replay of the step."""

    LAMBDA = 0.5
    LR = 0.125
    WIDTH = 3

    def replay(self, feed, w):
        """feed[batch, micro-batch, replica, WIDTH]; gradients summed over micro-batches and
        replicas (the default reduction, docs/replication-semantics.md section 2)."""
        seen = np.zeros_like(feed)
        w = w.astype(np.float64)
        for batch in range(feed.shape[0]):
            grad = np.zeros_like(w)
            for micro in range(feed.shape[1]):
                for replica in range(feed.shape[2]):
                    y = feed[batch, micro, replica] + w
                    seen[batch, micro, replica] = y
                    grad += self.LAMBDA * np.sign(y) / self.WIDTH
            w = w - self.LR * grad
        return seen, w

    def step(self, bps, accumulation, replicas, kind, period, explicit):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [self.WIDTH]), "x")
        w0 = np.array([0.25, -0.5, 1.0], np.float32)
        w = b.addInitializedInputTensor(w0, "w")
        y = b.aiOnnx.add([x, w], "y")
        loss = b.aiGraphcore.l1loss([y], self.LAMBDA)
        rng = np.random.RandomState(bps * 100 + accumulation * 10 + replicas)
        # Values away from zero, so no sign flips within a step make the replay ambiguous.
        feed = (rng.randint(1, 20, size=[bps, accumulation, replicas, self.WIDTH])
                * rng.choice([-1, 1], size=[bps, accumulation, replicas, self.WIDTH])
                ).astype(np.float32)
        with popart.DeviceManager().createIpuModelDevice({"numIPUs": replicas}) as device:
            session = popart.TrainingSession(
                fnModel=b.getModelProto(),
                dataFlow=popart.DataFlow(bps, {y: art(kind, period)}), loss=loss,
                optimizer=popart.ConstSGD(self.LR), deviceInfo=device,
                userOptions=options(replicas, accumulation, explicit))
            session.prepareDevice()
            session.weightsFromHost()
            anchors = session.initAnchorArrays()
            session.run(popart.PyStepIO({x: squeeze_prefix(feed, 3)}, anchors))
            session.weightsToHost()
            trained = {w: np.zeros(self.WIDTH, np.float32)}
            session.readWeights(popart.PyWeightsIO(trained))
        seen, w_after = self.replay(feed, w0)
        return anchors[y], reference(kind, period, seen), trained[w], w_after

    def check(self, bps, accumulation, replicas=1):
        for (kind, period), explicit in itertools.product(KINDS, (False, True)):
            if period is not None and bps % period:
                continue
            with self.subTest(kind=kind, period=period, explicit=explicit):
                got, want, w_got, w_want = self.step(bps, accumulation, replicas, kind, period,
                                                     explicit)
                self.assertEqual(got.shape, want.shape)
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
                np.testing.assert_allclose(w_got, w_want, rtol=1e-6, atol=1e-6)

    def test_one_batch(self):
        self.check(1, 1)

    def test_accumulation_one_batch(self):
        self.check(1, 2)

    def test_batches_without_accumulation(self):
        self.check(2, 1)

    def test_batches_with_accumulation(self):
        # EVERYN(2) keeps batch 2 with both its micro-batches (PopART's own integration test
        # expects every second micro-batch instead: docs/python.md, "PopART's own tests").
        self.check(2, 2)

    def test_three_batches_with_accumulation(self):
        self.check(3, 2)

    def test_accumulation_and_replicas(self):
        self.check(2, 2, replicas=2)

    def test_final_anchor_of_a_weight_is_its_value_after_the_step(self):
        """PopART copies FINAL anchors to the host at the end of the step, after the last update:
        a weight's is the trained value."""
        for bps, accumulation in ((1, 1), (2, 2)):
            b = popart.Builder()
            x = b.addInputTensor(popart.TensorInfo("FLOAT", [self.WIDTH]), "x")
            w0 = np.array([0.25, -0.5, 1.0], np.float32)
            w = b.addInitializedInputTensor(w0, "w")
            loss = b.aiGraphcore.l1loss([b.aiOnnx.add([x, w], "y")], self.LAMBDA)
            feed = np.full([bps, accumulation, 1, self.WIDTH], 3.0, np.float32)
            opt = popart.SGD({"defaultLearningRate": (self.LR, True),
                              "defaultMomentum": (0.5, True)})
            session = popart.TrainingSession(
                fnModel=b.getModelProto(),
                dataFlow=popart.DataFlow(bps, {w: art("FINAL", None)}),
                loss=loss, optimizer=opt, deviceInfo=popart.DeviceManager().createCpuDevice(),
                userOptions=options(1, accumulation))
            session.prepareDevice()
            session.weightsFromHost()
            anchors = session.initAnchorArrays()
            session.run(popart.PyStepIO({x: squeeze_prefix(feed, 3)}, anchors))
            session.weightsToHost()
            trained = {w: np.zeros(self.WIDTH, np.float32)}
            session.readWeights(popart.PyWeightsIO(trained))
            self.assertFalse(np.array_equal(trained[w], w0))
            np.testing.assert_array_equal(anchors[w], trained[w])

    def test_all_anchor_of_a_weight(self):
        """PopART copies a weight's ALL anchor in the backward fragment: after each batch's update
        without gradient accumulation, before the (later) update with it."""
        w0 = np.array([0.25, -0.5, 1.0], np.float32)
        step = self.LR * self.LAMBDA / self.WIDTH  # x = 3: every y > 0, gradient LAMBDA / WIDTH
        for bps, accumulation in ((2, 1), (2, 2)):
            b = popart.Builder()
            x = b.addInputTensor(popart.TensorInfo("FLOAT", [self.WIDTH]), "x")
            w = b.addInitializedInputTensor(w0, "w")
            loss = b.aiGraphcore.l1loss([b.aiOnnx.add([x, w], "y")], self.LAMBDA)
            feed = np.full([bps, accumulation, 1, self.WIDTH], 3.0, np.float32)
            session = popart.TrainingSession(
                fnModel=b.getModelProto(),
                dataFlow=popart.DataFlow(bps, {w: art("ALL", None)}),
                loss=loss, optimizer=popart.ConstSGD(self.LR),
                deviceInfo=popart.DeviceManager().createCpuDevice(),
                userOptions=options(1, accumulation))
            session.prepareDevice()
            session.weightsFromHost()
            anchors = session.initAnchorArrays()
            session.run(popart.PyStepIO({x: squeeze_prefix(feed, 3)}, anchors))
            if accumulation == 1:
                want = np.stack([w0 - step, w0 - 2 * step])
            else:
                update = accumulation * step
                want = np.stack([np.stack([w0, w0]), np.stack([w0 - update] * 2)])
            np.testing.assert_allclose(anchors[w], want, rtol=1e-6, atol=1e-7)

    def test_anchors_of_optimizer_state_and_accumulator(self):
        """Accum___<w> (gradient accumulation) after each micro-batch's accumulation; the velocity
        Accl___<w> like its weight (after each batch's update without accumulation)."""
        w0 = np.array([0.25, -0.5, 1.0], np.float32)
        grad = self.LAMBDA / self.WIDTH  # x = 3: every y > 0
        for accumulation, anchor in ((2, "Accum___w"), (1, "Accl___w")):
            b = popart.Builder()
            x = b.addInputTensor(popart.TensorInfo("FLOAT", [self.WIDTH]), "x")
            w = b.addInitializedInputTensor(w0, "w")
            loss = b.aiGraphcore.l1loss([b.aiOnnx.add([x, w], "y")], self.LAMBDA)
            feed = np.full([2, accumulation, 1, self.WIDTH], 3.0, np.float32)
            opt = popart.ConstSGD(self.LR) if accumulation > 1 else popart.SGD(
                {"defaultLearningRate": (self.LR, True), "defaultMomentum": (0.5, True)})
            session = popart.TrainingSession(
                fnModel=b.getModelProto(), dataFlow=popart.DataFlow(2, [anchor]), loss=loss,
                optimizer=opt, deviceInfo=popart.DeviceManager().createCpuDevice(),
                userOptions=options(1, accumulation))
            session.prepareDevice()
            session.weightsFromHost()
            anchors = session.initAnchorArrays()
            session.run(popart.PyStepIO({x: squeeze_prefix(feed, 3)}, anchors))
            ones = np.ones(self.WIDTH, np.float32)
            if accumulation == 2:  # the accumulator restarts after each batch's update
                want = np.stack([np.stack([grad * ones, 2 * grad * ones])] * 2)
            else:  # velocity v = 0.5 v + g
                want = np.stack([grad * ones, 1.5 * grad * ones])
            np.testing.assert_allclose(anchors[anchor], want, rtol=1e-6, atol=1e-7)
        with self.assertRaisesRegex(popart.popart_exception, "anchor 'Accum___w' is not a tensor "
                                    "of the model, nor optimizer state or an accumulator"):
            popart.TrainingSession(
                fnModel=b.getModelProto(), dataFlow=popart.DataFlow(1, ["Accum___w"]), loss=loss,
                optimizer=opt, deviceInfo=popart.DeviceManager().createCpuDevice())


if __name__ == "__main__":
    unittest.main()
