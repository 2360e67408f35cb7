"""Weights between the host and sessions with PyWeightsIO: an inference session runs with its
model's initial weights (with or without weightsFromHost), weights trained in one session are read
out and written into an inference session of the same model, and grouped weights
(VariableSettings over a CommGroup) take buffers of [groups] + shape or [replicas] + shape, each
replica computing with its own group's value (docs/replication.md, docs/replication-semantics.md
section 4). The float16 variant of the weight transfer: test_float16.py."""
import os
import unittest

import numpy as np
import onnx

import xtrain as popart
from python_testing import PrivatePool

ALL = popart.AnchorReturnType("ALL")


def compiled(session):
    session.prepareDevice()
    return session


class InitialWeightsTest(PrivatePool, unittest.TestCase):
    def test_inference_uses_the_models_weights(self):
        for dtype in (np.float32, np.int32):
            for send in (False, True):
                with self.subTest(dtype=dtype.__name__, weightsFromHost=send):
                    b = popart.Builder()
                    x = b.addInputTensor(popart.TensorInfo(dtype, [4]), "x")
                    w = b.addInitializedInputTensor(np.array([3, -1, 0, 12], dtype), "w")
                    y = b.aiOnnx.sub([x, w], "y")
                    b.addOutputTensor(y)
                    with popart.DeviceManager().createIpuModelDevice({}) as device:
                        session = compiled(popart.InferenceSession(
                            fnModel=b.getModelProto(), dataFlow=popart.DataFlow(1, {y: ALL}),
                            deviceInfo=device))
                        if send:
                            session.weightsFromHost()
                        anchors = session.initAnchorArrays()
                        session.run(popart.PyStepIO({x: np.array([5, 5, 5, 5], dtype)}, anchors))
                    self.assertEqual(anchors[y].dtype, dtype)
                    self.assertEqual(anchors[y].tolist(), [2, 6, 5, -7])


class TrainThenInferTest(PrivatePool, unittest.TestCase):
    """A two-class softmax regression trained for a few steps, its weights then moved to an
    inference session of the same model."""

    def test_trained_weights_move_to_an_inference_session(self):
        rng = np.random.RandomState(31)
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [8, 5]), "x")
        label = b.addInputTensor(popart.TensorInfo("INT32", [8]), "label")
        w0 = (rng.randn(5, 2) * 0.1).astype(np.float32)
        w = b.addInitializedInputTensor(w0, "w")
        c = b.addInitializedInputTensor(np.zeros(2, np.float32), "c")
        logits = b.aiOnnx.add([b.aiOnnx.matmul([x, w]), c], "logits")
        loss = b.aiGraphcore.nllloss([b.aiOnnx.softmax([logits]), label])
        proto = b.getModelProto()
        flow = popart.DataFlow(4, {logits: ALL, loss: ALL})
        # Class 1 when the first two features sum above zero.
        data = rng.randn(4, 8, 5).astype(np.float32)
        labels = (data[..., 0] + data[..., 1] > 0).astype(np.int32)

        with popart.DeviceManager().createIpuModelDevice({}) as device:
            trainer = compiled(popart.TrainingSession(
                fnModel=proto, dataFlow=flow, loss=loss, optimizer=popart.ConstSGD(0.5),
                deviceInfo=device))
            trainer.weightsFromHost()
            anchors = trainer.initAnchorArrays()
            io = popart.PyStepIO({x: data, label: labels}, anchors)
            first = None
            for _ in range(5):
                trainer.run(io)
                first = anchors[loss].copy() if first is None else first
            self.assertLess(anchors[loss].mean(), first.mean())
            trainer.weightsToHost()
            trained = {w: np.zeros((5, 2), np.float32), c: np.zeros(2, np.float32)}
            weights_io = popart.PyWeightsIO(trained)
            trainer.readWeights(weights_io)
        self.assertFalse(np.array_equal(trained[w], w0))

        opts = popart.SessionOptions()
        opts.constantWeights = False  # weights written after compiling
        with popart.DeviceManager().createIpuModelDevice({}) as device:
            inference = compiled(popart.InferenceSession(
                fnModel=proto, dataFlow=flow, deviceInfo=device, userOptions=opts))
            inference.writeWeights(weights_io)
            inference.weightsFromHost()
            out = inference.initAnchorArrays()
            inference.run(popart.PyStepIO({x: data, label: labels}, out))
            # Read back from the inference session: the values written.
            inference.weightsToHost()
            back = {w: np.zeros((5, 2), np.float32)}
            inference.readWeights(popart.PyWeightsIO(back))
        np.testing.assert_allclose(out[logits], data @ trained[w] + trained[c], rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_array_equal(back[w], trained[w])


class GroupedWeightsTest(PrivatePool, unittest.TestCase):
    """Four replicas; a weight per group of two replicas (Consecutive: {0,1},{2,3}; Orthogonal:
    {0,2},{1,3}); y = x * w on each replica, x all ones, so y shows each replica's weight."""

    REPLICAS = 4

    def session(self, settings, initial):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [3]), "x")
        w = b.addInitializedInputTensor(initial, settings, "w")
        y = b.aiOnnx.mul([x, w], "y")
        loss = b.aiGraphcore.l1loss([y], 1.0)
        opts = popart.SessionOptions()
        opts.enableReplicatedGraphs = True
        opts.replicatedGraphCount = self.REPLICAS
        device = popart.DeviceManager().acquireAvailableDevice(self.REPLICAS)
        self.addCleanup(device.detach)
        session = compiled(popart.TrainingSession(
            fnModel=b.getModelProto(), dataFlow=popart.DataFlow(1, {y: ALL}), loss=loss,
            optimizer=popart.ConstSGD(0.25), deviceInfo=device, userOptions=opts))
        session.weightsFromHost()
        return session, x, w, y

    def per_replica(self, session, x, y):
        anchors = session.initAnchorArrays()
        session.run(popart.PyStepIO({x: np.ones((self.REPLICAS, 3), np.float32)}, anchors))
        return anchors[y]

    def check(self, kind, members):
        """members[g]: the replicas of group g."""
        group = popart.CommGroup(kind, 2)
        one = popart.VariableSettings(group, popart.VariableRetrievalMode.OnePerGroup)
        every = popart.VariableSettings(group, popart.VariableRetrievalMode.AllReplicas)
        self.assertEqual(one.getGroupCount(self.REPLICAS), 2)
        self.assertEqual(one.numReplicasReturningVariable(self.REPLICAS), 2)
        self.assertEqual(every.numReplicasReturningVariable(self.REPLICAS), self.REPLICAS)
        initial = np.array([[1, 2, 3], [-4, -5, -6]], np.float32)  # [groups, 3]

        for settings, rows in ((one, 2), (every, self.REPLICAS)):
            with self.subTest(mode=str(settings.getRetrievalMode())):
                session, x, w, y = self.session(settings, initial)
                want = np.zeros((self.REPLICAS, 3), np.float32)
                for g, replicas in enumerate(members):
                    want[replicas] = initial[g]
                np.testing.assert_array_equal(self.per_replica(session, x, y), want)

                # One step: d l1loss / d w = sign(w) / 3 per replica, summed over the group's
                # two replicas; learning rate 1/4.
                session.weightsToHost()
                read = {w: np.zeros((rows, 3), np.float32)}
                session.readWeights(popart.PyWeightsIO(read))
                trained = initial - 0.25 * 2 * np.sign(initial) / 3
                if rows == 2:
                    np.testing.assert_allclose(read[w], trained, rtol=1e-6)
                else:
                    for g, replicas in enumerate(members):
                        np.testing.assert_allclose(read[w][replicas], [trained[g]] * 2,
                                                   rtol=1e-6)

                # Written back per group (the lowest replica's row for AllReplicas) and used.
                new = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) + 10
                session.writeWeights(popart.PyWeightsIO({w: new}))
                session.weightsFromHost()
                got = self.per_replica(session, x, y)
                for g, replicas in enumerate(members):
                    source = new[g] if rows == 2 else new[min(replicas)]
                    np.testing.assert_array_equal(got[replicas], [source] * 2)

                with self.assertRaisesRegex(popart.popart_exception,
                                            r"'w' is FLOAT\[%d,3\].*expected FLOAT\[%d,3\]"
                                            % (rows + 1, rows)):
                    session.readWeights(popart.PyWeightsIO({w: np.zeros((rows + 1, 3),
                                                                        np.float32)}))

    def test_consecutive_groups(self):
        self.check(popart.CommGroupType.Consecutive, [[0, 1], [2, 3]])

    def test_orthogonal_groups(self):
        self.check(popart.CommGroupType.Orthogonal, [[0, 2], [1, 3]])

    def test_one_group_retrieved_from_all_replicas(self):
        # CommGroupType.All: one weight for every replica; AllReplicas still returns one copy per
        # replica, and writing takes the first replica's copy.
        every = popart.VariableSettings(popart.CommGroup(popart.CommGroupType.All, 0),
                                        popart.VariableRetrievalMode.AllReplicas)
        self.assertEqual(every.getGroupCount(self.REPLICAS), 1)
        self.assertEqual(every.numReplicasReturningVariable(self.REPLICAS), self.REPLICAS)
        initial = np.array([1, -2, 3], np.float32)
        session, x, w, y = self.session(every, initial)
        session.weightsToHost()
        read = {w: np.zeros((self.REPLICAS, 3), np.float32)}
        session.readWeights(popart.PyWeightsIO(read))
        np.testing.assert_array_equal(read[w], [initial] * self.REPLICAS)
        self.per_replica(session, x, y)  # one step: every replica's gradient, summed
        session.weightsToHost()
        session.readWeights(popart.PyWeightsIO(read))
        trained = initial - 0.25 * self.REPLICAS * np.sign(initial) / 3
        np.testing.assert_allclose(read[w], [trained] * self.REPLICAS, rtol=1e-6)
        new = np.arange(self.REPLICAS * 3, dtype=np.float32).reshape(self.REPLICAS, 3)
        session.writeWeights(popart.PyWeightsIO({w: new}))
        session.weightsFromHost()
        np.testing.assert_array_equal(self.per_replica(session, x, y), [new[0]] * self.REPLICAS)
        with self.assertRaisesRegex(popart.popart_exception,
                                    r"'w' is FLOAT\[3\].*expected FLOAT\[4,3\]"):
            session.readWeights(popart.PyWeightsIO({w: np.zeros(3, np.float32)}))


class ModelToHostStateTest(PrivatePool, unittest.TestCase):
    """A training session's modelToHost writes its optimizer state as PopART does: Adam's
    Accl1___/Accl2___/Step___ initializers in their typed fields (float_data), no gradient
    accumulator (zero between steps); a new session starts from that state."""

    def session(self, model, loss, af=2):
        opts = popart.SessionOptions()
        opts.enableGradientAccumulation = True
        opts.accumulationFactor = af
        session = popart.TrainingSession(
            fnModel=model, dataFlow=popart.DataFlow(1, {}), loss=loss,
            optimizer=popart.Adam({"defaultLearningRate": (0.1, False)}),
            deviceInfo=popart.DeviceManager().createIpuModelDevice({}), userOptions=opts)
        session.prepareDevice()
        session.weightsFromHost()
        return session

    def test_adam_state_round_trip(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [3]), "x")
        w = b.addInitializedInputTensor(np.array([1.0, -2.0, 0.5], np.float32), "w")
        y = b.aiOnnx.mul([x, w], "y")
        loss = b.aiGraphcore.l1loss([y], 1.0)
        model = b.getModelProto()

        first = self.session(model, loss)
        data = {x: np.arange(6, dtype=np.float32).reshape(2, 3) + 1}
        first.run(popart.PyStepIO(data, first.initAnchorArrays()))
        path = os.path.join(self.tmp, "trained.onnx")
        first.modelToHost(path)
        saved = {t.name: t for t in onnx.load(path).graph.initializer}
        self.assertEqual(sorted(saved), ["Accl1___w", "Accl2___w", "Step___w", "w"])
        for name in ("Accl1___w", "Accl2___w"):
            self.assertEqual(len(saved[name].float_data), 3, name)
            self.assertEqual(saved[name].raw_data, b"", name)
            self.assertTrue(np.any(np.asarray(saved[name].float_data) != 0), name)
        self.assertEqual(list(saved["Step___w"].float_data), [1.0])

        # The next step from the saved state equals the first session's next step. Its data
        # differ from the first step's, so the moments matter: a session that ignored the saved
        # state (a fresh Adam at the trained weights, whose first step is lr * sign(g)) differs.
        trained = np.zeros(3, np.float32)
        first.weightsToHost()
        first.readWeights(popart.PyWeightsIO({w: trained}))
        b2 = popart.Builder()
        x2 = b2.addInputTensor(popart.TensorInfo("FLOAT", [3]), "x")
        w2 = b2.addInitializedInputTensor(trained, "w")
        loss2 = b2.aiGraphcore.l1loss([b2.aiOnnx.mul([x2, w2], "y")], 1.0)
        second = self.session(path, loss)
        fresh = self.session(b2.getModelProto(), loss2)
        data2 = {x: np.array([[0.5, -3.0, 7.0], [2.0, 0.25, -1.0]], np.float32)}
        got = []
        for s, feed in ((first, data2), (second, data2), (fresh, {x2: data2[x]})):
            s.run(popart.PyStepIO(feed, s.initAnchorArrays()))
            s.weightsToHost()
            got.append(np.zeros(3, np.float32))
            s.readWeights(popart.PyWeightsIO({w if s is not fresh else w2: got[-1]}))
        np.testing.assert_array_equal(got[0], got[1])
        self.assertFalse(np.allclose(got[0], got[2]), "the saved state made no difference")

        first.modelToHost(path, False)
        self.assertEqual([t.name for t in onnx.load(path).graph.initializer], ["w"])


if __name__ == "__main__":
    unittest.main()
