"""TrainingSession and InferenceSession with PyStepIO, PyStepIOCallback and PyWeightsIO: the
training example of executing-graphs.txt (the model from onnx.helper, since the Builder is bound
elsewhere), equivalence with the C++ API (bit-identical weights to build/bin/xtrain), anchor shapes
per the API reference's rules, bad inputs, callbacks (their results and the order they are called
in), the GIL and Ctrl-C."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import unittest

import numpy as np

import xtrain as popart
from python_testing import BIN_DIR, HERE, PrivatePool, initializers, linear_model, sgd


class TrainingExampleTest(PrivatePool, unittest.TestCase):
    def test_executing_graphs_training_example(self):
        # The training loop executing-graphs.txt describes (our code, from its description).
        o = "loss"
        df = popart.DataFlow(1, {o: popart.AnchorReturnType("ALL")})
        device = popart.DeviceManager().createCpuDevice()
        session = popart.TrainingSession(fnModel=linear_model(), dataFlow=df, loss=o,
                                         optimizer=sgd(0.05), deviceInfo=device)
        session.prepareDevice()
        session.weightsFromHost()
        anchors = session.initAnchorArrays()
        rng = np.random.RandomState(1)
        data_x = rng.rand(2, 4).astype(np.float32)
        data_t = rng.rand(2, 3).astype(np.float32)
        stepio = popart.PyStepIO({"x": data_x, "t": data_t}, anchors)
        losses = []
        for rate in (0.05, 0.05, 0.02, 0.02, 0.01):
            session.updateOptimizerFromHost(
                popart.SGD({"defaultLearningRate": (rate, False)}))
            session.run(stepio)
            losses.append(float(anchors[o]))
        self.assertLess(losses[-1], losses[0])
        session.weightsToHost()
        path = os.path.join(self.tmp, "trained_model.onnx")
        session.modelToHost(path)
        trained = initializers(path)
        self.assertFalse(np.array_equal(trained["w"], initializers(linear_model())["w"]))
        # A file of saved parameters loaded into another session.
        s2 = popart.InferenceSession(linear_model(), dataFlow=popart.DataFlow(
            1, {"y": popart.AnchorReturnType("ALL")}), deviceInfo=device)
        s2.prepareDevice()
        s2.resetHostWeights(path)
        s2.weightsFromHost()
        a2 = s2.initAnchorArrays()
        s2.run(popart.PyStepIO({"x": data_x, "t": data_t}, a2))
        np.testing.assert_allclose(a2["y"], data_x @ trained["w"] + trained["b"], rtol=1e-5)
        self.assertIsInstance(session.getSummaryReport(), str)
        self.assertEqual(session.getInfo("w").shape(), [4, 3])
        self.assertIn("w", session.getTensorIds())
        self.assertEqual(session.replicationFactor, 1)
        self.assertEqual(session.accumulationFactor, 1)
        self.assertEqual(session.name, "training")
        self.assertEqual(session.dataFlow.batchesPerStep(), 1)

    def test_equivalence_with_the_cpp_api(self):
        # The same model, data, optimizer and steps through build/bin/xtrain (the C++ API) and
        # through the Python session: the trained weights are bit-identical. One sample, so that
        # xtrain's seeded sample order plays no part.
        import h5py
        xtrain_bin = os.path.join(BIN_DIR, "xtrain")
        if not os.path.exists(xtrain_bin):
            self.skipTest("no " + xtrain_bin)
        model = linear_model(batch=1)
        x = np.array([[1.0, 2.0, -1.0, 0.5]], np.float32)
        t = np.array([[0.5, -1.0, 2.0]], np.float32)
        model_path = os.path.join(self.tmp, "m.onnx")
        with open(model_path, "wb") as f:
            f.write(model)
        with h5py.File(os.path.join(self.tmp, "d.h5"), "w") as f:
            f["x"] = x
            f["t"] = t
        out_cpp = os.path.join(self.tmp, "cpp.onnx")
        subprocess.run([xtrain_bin, "--model", model_path, "--data",
                        os.path.join(self.tmp, "d.h5"), "--loss", "loss", "--lr", "0.05",
                        "--momentum", "0.9", "--micro-batch-size", "1", "--steps", "6",
                        "--save-model", out_cpp],
                       check=True, timeout=120, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

        session = popart.TrainingSession(
            model_path, popart.DataFlow(1, {"loss": popart.AnchorReturnType("ALL")}), "loss",
            sgd(0.05, 0.9), popart.DeviceManager().createCpuDevice())
        session.prepareDevice()
        session.weightsFromHost()
        anchors = session.initAnchorArrays()
        stepio = popart.PyStepIO({"x": x, "t": t}, anchors)
        for _ in range(6):
            session.run(stepio)
        session.weightsToHost()
        out_py = os.path.join(self.tmp, "py.onnx")
        session.modelToHost(out_py)
        cpp, py = initializers(out_cpp), initializers(out_py)
        for name in ("w", "b"):
            self.assertEqual(cpp[name].tobytes(), py[name].tobytes(), name)
        self.assertFalse(np.array_equal(py["w"], initializers(model)["w"]))


class AnchorShapesTest(PrivatePool, unittest.TestCase):
    def make(self, bps, af=1, replicas=1, training=True):
        arts = {"loss": popart.AnchorReturnType("ALL"), "y": popart.AnchorReturnType("FINAL"),
                "xw": popart.AnchorReturnType("SUM"), "d": popart.AnchorReturnType("EVERYN", 2)}
        opts = popart.SessionOptions()
        if af > 1:
            opts.enableGradientAccumulation = True
            opts.accumulationFactor = af
        if replicas > 1:
            opts.enableReplicatedGraphs = True
            opts.replicatedGraphCount = replicas
            device = popart.DeviceManager().acquireAvailableDevice(replicas)
        else:
            device = popart.DeviceManager().createCpuDevice()
        df = popart.DataFlow(bps, arts)
        if training:
            s = popart.TrainingSession(linear_model(), df, "loss", sgd(), device,
                                       userOptions=opts)
        else:
            s = popart.InferenceSession(linear_model(), df, device, userOptions=opts)
        s.prepareDevice()
        s.weightsFromHost()
        return s

    def check(self, bps, af, replicas):
        s = self.make(bps, af, replicas)
        a = s.initAnchorArrays()
        prefix = [d for d in (bps, af, replicas) if d != 1]
        everyn = [d for d in (bps // 2, af, replicas) if d != 1]
        repl = [replicas] if replicas != 1 else []
        self.assertEqual(a["loss"].shape, tuple(prefix))
        self.assertEqual(a["d"].shape, tuple(everyn + [2, 3]))
        self.assertEqual(a["y"].shape, tuple(repl + [2, 3]))
        self.assertEqual(a["xw"].shape, tuple(repl + [2, 3]))
        self.assertTrue(all(v.dtype == np.float32 for v in a.values()))
        x = np.ones(prefix + [2, 4], np.float32)
        t = np.zeros(prefix + [2, 3], np.float32)
        s.run(popart.PyStepIO({"x": x, "t": t}, a))
        self.assertTrue(np.all(a["loss"] > 0))
        return s

    def test_batches_per_step(self):
        self.check(4, 1, 1)

    def test_accumulation(self):
        self.check(4, 2, 1)

    def test_replication(self):
        s = self.check(2, 2, 2)
        self.assertEqual(s.replicationFactor, 2)
        self.assertEqual(s.accumulationFactor, 2)
        self.assertEqual(s.expectedInputBufferShape("x"), [2, 2, 2, 2, 4])

    def test_everyn_counts_global_batches(self):
        # AnchorReturnTypeId.EveryN: every N-th global batch with all its accumulation steps. bps 2,
        # af 2, 2 replicas, N 2, inputs 1..8 ([bps, af, replicas]): the second global batch,
        # [[5, 6], [7, 8]] (not every second micro-batch, [[3, 4], [7, 8]]); through PyStepIO and
        # PyStepIOCallback alike.
        b = popart.Builder()
        x = b.addInputTensor("FLOAT", [], "x")
        y = b.aiOnnx.identity([x], "y")
        w = b.addInitializedInputTensor(np.ones((), np.float32), "w")
        loss = b.aiGraphcore.identityloss([b.aiOnnx.mul([x, w])])
        opts = popart.SessionOptions()
        opts.enableGradientAccumulation = True
        opts.accumulationFactor = 2
        opts.enableReplicatedGraphs = True
        opts.replicatedGraphCount = 2
        s = popart.TrainingSession(
            b.getModelProto(), popart.DataFlow(2, {y: popart.AnchorReturnType("EVERYN", 2)}),
            loss, sgd(), popart.DeviceManager().acquireAvailableDevice(2), userOptions=opts)
        s.prepareDevice()
        s.weightsFromHost()
        data = np.arange(1, 9, dtype=np.float32).reshape(2, 2, 2)
        anchors = s.initAnchorArrays()
        s.run(popart.PyStepIO({x: data}, anchors))
        np.testing.assert_array_equal(anchors[y], [[5, 6], [7, 8]])

        feed = iter(data.reshape(-1))
        buf = np.zeros((), np.float32)
        got = []
        s.run(popart.PyStepIOCallback(lambda tid, prefetch: np.array(next(feed), np.float32),
                                      lambda tid: None, lambda tid: buf,
                                      lambda tid: got.append(float(buf))))
        self.assertEqual(got, [5.0, 6.0, 7.0, 8.0])

    def test_everyn_must_divide(self):
        with self.assertRaises(popart.popart_exception):
            self.make(3)


class BadInputsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = popart.TrainingSession(
            linear_model(), popart.DataFlow(2, {"loss": popart.AnchorReturnType("ALL")}), "loss",
            sgd(), popart.DeviceManager().createCpuDevice())
        cls.s.prepareDevice()
        cls.s.weightsFromHost()

    def setUp(self):
        self.x = np.ones((2, 2, 4), np.float32)
        self.t = np.ones((2, 2, 3), np.float32)
        self.a = self.s.initAnchorArrays()

    def run_io(self, inputs, anchors=None):
        self.s.run(popart.PyStepIO(inputs, self.a if anchors is None else anchors))

    def test_good(self):
        self.run_io({"x": self.x, "t": self.t})

    def test_wrong_shape(self):
        with self.assertRaisesRegex(popart.popart_exception,
                                    r"'x'.*expected shape \[2,2,4\], got shape \[2,4\]"):
            self.run_io({"x": np.ones((2, 4), np.float32), "t": self.t})
        with self.assertRaisesRegex(popart.popart_exception,
                                    r"anchor 'loss'.*expected shape \[2\], got shape \[3\]"):
            self.run_io({"x": self.x, "t": self.t}, {"loss": np.zeros(3, np.float32)})

    def test_wrong_dtype(self):
        with self.assertRaisesRegex(popart.popart_exception,
                                    r"'t'.*expected dtype float32 \(FLOAT\), got float64"):
            self.run_io({"x": self.x, "t": self.t.astype(np.float64)})
        # numpy_types.hpp's mapping: complex64 is COMPLEX64 (not the tensor's type), a
        # big-endian float32 has no type (xtrain reads buffers in native byte order).
        with self.assertRaisesRegex(popart.popart_exception,
                                    r"'x'.*expected dtype float32 \(FLOAT\), got complex64"):
            self.run_io({"x": self.x.astype(np.complex64), "t": self.t})
        with self.assertRaisesRegex(TypeError, "'x'.*>f4.*native byte order"):
            popart.PyStepIO({"x": self.x.astype(">f4")}, {})

    def test_unknown_and_missing_tensors(self):
        with self.assertRaisesRegex(popart.popart_exception, "'nope'"):
            self.run_io({"x": self.x, "t": self.t, "nope": self.x})
        with self.assertRaisesRegex(popart.popart_exception, "'t'"):
            self.run_io({"x": self.x})

    def test_poplar_debug_info_is_refused(self):
        # Poplar's debug-info streamer has no xtrain equivalent: refused, no file written.
        path = os.path.join(tempfile.gettempdir(), "xtrain-debug-info-%d.json" % os.getpid())
        with self.assertRaisesRegex(popart.popart_exception, "initializePoplarDebugInfo.*not "
                                    "implemented in xtrain"):
            popart.initializePoplarDebugInfo(path, "json")
        self.assertFalse(os.path.exists(path))
        with self.assertRaisesRegex(popart.popart_exception, "not implemented in xtrain"):
            popart.closePoplarDebugInfo()

    def test_anchor_of_an_optimizer_hyperparameter_is_refused(self):
        # PopART's names of its hyperparameter tensors exist for programs that build names;
        # xtrain has no such tensors, and says so when one is anchored.
        slr = popart.reservedDefaultScaledLearningRate0Prefix()
        self.assertEqual(slr, "scaledLearningRate0___default___")
        self.assertEqual(popart.reservedSpecificAdamBeta2Prefix(), "adamBeta2___specific___")
        with self.assertRaisesRegex(popart.popart_exception,
                                    "anchor 'scaledLearningRate0___default___FLOAT' names one of "
                                    "PopART's optimizer hyperparameter tensors"):
            popart.TrainingSession(linear_model(), popart.DataFlow(1, [slr + "FLOAT"]), "loss",
                                   sgd(), popart.DeviceManager().createCpuDevice())
        with self.assertRaisesRegex(popart.popart_exception,
                                    "anchor 'lossScaling_FLOAT' names one.*prefix 'lossScaling_'"):
            popart.TrainingSession(linear_model(), popart.DataFlow(1, ["lossScaling_FLOAT"]),
                                   "loss", sgd(), popart.DeviceManager().createCpuDevice())

    def test_bad_containers(self):
        with self.assertRaisesRegex(TypeError, "keys must be tensor ids"):
            popart.PyStepIO({1: self.x}, {})
        with self.assertRaisesRegex(TypeError, "anchor|output 'loss'.*NumPy array"):
            popart.PyStepIO({}, {"loss": [0.0, 0.0]})
        with self.assertRaisesRegex(popart.popart_exception, "'loss'.*not c-contiguous"):
            popart.PyStepIO({}, {"loss": np.zeros((2, 2), np.float32)[:, 0]})
        ro = np.zeros(2, np.float32)
        ro.setflags(write=False)
        with self.assertRaisesRegex(ValueError, "'loss'.*read-only"):
            popart.PyStepIO({}, {"loss": ro})
        with self.assertRaises(TypeError):
            popart.PyStepIO([self.x], {})

    def test_inputs_are_not_copied(self):
        # PyStepIO uses C-contiguous arrays in place: a change between runs is seen.
        s = popart.InferenceSession(
            linear_model(), popart.DataFlow(1, {"y": popart.AnchorReturnType("ALL")}),
            popart.DeviceManager().createCpuDevice())
        s.prepareDevice()
        s.weightsFromHost()
        a = s.initAnchorArrays()
        x = np.zeros((2, 4), np.float32)
        io = popart.PyStepIO({"x": x, "t": np.zeros((2, 3), np.float32)}, a)
        s.run(io)
        np.testing.assert_array_equal(a["y"], 0)
        x[:] = 1
        s.run(io)
        w = initializers(linear_model())["w"]
        np.testing.assert_allclose(a["y"], np.ones((2, 4), np.float32) @ w, rtol=1e-6)

    def test_session_busy(self):
        # A callback calling into its own session: refused at once, not a deadlock.
        def inp(tid, prefetch):
            self.s.weightsToHost()

        io = popart.PyStepIOCallback(inp, lambda t: None, lambda t: None, lambda t: None)
        with self.assertRaisesRegex(popart.popart_exception, "in use"):
            self.s.run(io)

    def test_before_prepare_device(self):
        # PopART's sentence names the device step (modelToHost reads weights with weightsToHost).
        s = popart.TrainingSession(
            linear_model(), popart.DataFlow(2, {"loss": popart.AnchorReturnType("ALL")}), "loss",
            sgd(), popart.DeviceManager().createCpuDevice())
        with self.assertRaisesRegex(
                popart.popart_exception,
                r"^Devicex::prepare\(\) must be called before Devicex::weightsToHost .*modelToHost"):
            s.modelToHost(os.path.join(tempfile.gettempdir(), "never_written.onnx"))
        with self.assertRaisesRegex(popart.popart_exception,
                                    r"^Devicex::prepare\(\) must be called before Devicex::run "):
            s.run(popart.PyStepIO({"x": self.x, "t": self.t}, s.initAnchorArrays()))

    def test_non_contiguous_input_is_copied(self):
        wide = np.ones((2, 2, 8), np.float32)
        self.run_io({"x": wide[:, :, ::2], "t": self.t})

    def test_relaxed_shape_check(self):
        # [8,2] is not [2,2,4] regrouped (merging dimensions, as [4,4] would be, is accepted).
        io = popart.PyStepIO({"x": self.x.reshape(8, 2), "t": self.t}, self.a)
        with self.assertRaises(popart.popart_exception):
            self.s.run(io)
        io.enableRuntimeAsserts(False)
        try:
            self.s.run(io)
        except popart.popart_exception as e:  # the C++ session checks shapes itself
            self.assertIn("'x'", str(e))

    def test_bad_session_arguments(self):
        df = popart.DataFlow(1, {"loss": popart.AnchorReturnType("ALL")})
        dev = popart.DeviceManager().createCpuDevice()
        with self.assertRaisesRegex(TypeError, "fnModel"):
            popart.TrainingSession(42, df, "loss", sgd(), dev)
        with self.assertRaisesRegex(popart.popart_exception, "nosuchloss"):
            popart.TrainingSession(linear_model(), df, "nosuchloss", sgd(), dev)
        with self.assertRaises(popart.popart_exception):
            popart.TrainingSession(b"not a model", df, "loss", sgd(), dev)
        with self.assertRaises(popart.popart_exception):
            popart.InferenceSession("/nonexistent/model.onnx", df, dev)
        with self.assertRaises(TypeError):
            popart.TrainingSession(linear_model(), df, "loss", sgd(), None)
        with self.assertRaises(TypeError):
            popart.TrainingSession(linear_model(), df, "loss", sgd(), dev, userOption=None)

    def test_out_of_memory(self):
        dev = popart.DeviceManager().createIpuModelDevice({"tilesPerIPU": 1,
                                                           "memoryPerTile": "64"})
        s = popart.TrainingSession(
            linear_model(), popart.DataFlow(1, {"loss": popart.AnchorReturnType("ALL")}), "loss",
            sgd(), dev)
        with self.assertRaisesRegex(popart.OutOfMemoryException, "Out of memory on IPU 0") as ctx:
            s.prepareDevice()
        self.assertIn("OUT OF MEMORY", ctx.exception.getSummaryReport())

    def test_not_implemented(self):
        # getCycleCount and getReport are implemented (test_reports.py).
        for call in (lambda: self.s.compileAndExport("f"), lambda: self.s.run("prog", None)):
            with self.assertRaisesRegex(popart.popart_exception, "not implemented"):
                call()


class WeightsTest(unittest.TestCase):
    def test_read_write_weights(self):
        s = popart.TrainingSession(
            linear_model(), popart.DataFlow(1, {"loss": popart.AnchorReturnType("ALL")}), "loss",
            sgd(momentum=0.9), popart.DeviceManager().createCpuDevice())
        s.prepareDevice()
        w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
        s.writeWeights(popart.PyWeightsIO({"w": w}))
        s.weightsFromHost()
        s.weightsToHost()
        back = {"w": np.zeros((4, 3), np.float32), "b": np.ones(3, np.float32)}
        s.readWeights(popart.PyWeightsIO(back))
        np.testing.assert_array_equal(back["w"], w)
        np.testing.assert_array_equal(back["b"], np.zeros(3, np.float32))
        with self.assertRaisesRegex(popart.popart_exception, "'w'"):
            s.writeWeights(popart.PyWeightsIO({"w": np.zeros(5, np.float32)}))
        with self.assertRaisesRegex(popart.popart_exception, "'nope'"):
            s.readWeights(popart.PyWeightsIO({"nope": np.zeros(5, np.float32)}))
        with self.assertRaisesRegex(TypeError, "'w'.*NumPy array"):
            popart.PyWeightsIO({"w": [1.0]})
        ro = np.zeros((4, 3), np.float32)
        ro.setflags(write=False)
        with self.assertRaisesRegex(ValueError, "'w'.*read-only"):
            s.readWeights(popart.PyWeightsIO({"w": ro}))

    def test_checkpoint_round_trip(self):
        tmp = tempfile.mkdtemp(prefix="xtrain-test-ckpt-")
        try:
            def session():
                s = popart.TrainingSession(
                    linear_model(), popart.DataFlow(1, {"loss": popart.AnchorReturnType("ALL")}),
                    "loss", sgd(momentum=0.9), popart.DeviceManager().createCpuDevice())
                s.prepareDevice()
                s.weightsFromHost()
                return s
            s = session()
            a = s.initAnchorArrays()
            io = popart.PyStepIO({"x": np.ones((2, 4), np.float32),
                                  "t": np.zeros((2, 3), np.float32)}, a)
            s.run(io)
            s.saveCheckpoint(os.path.join(tmp, "ckpt-00000001"), epoch=3, samplesSeen=2,
                             dataPosition=[3, 1, 2])
            s.run(io)
            s.weightsToHost()
            w1 = np.zeros((4, 3), np.float32)
            s.readWeights(popart.PyWeightsIO({"w": w1}))

            r = session()
            os.makedirs(os.path.join(tmp, "empty"))
            self.assertIsNone(r.loadLatestCheckpoint(os.path.join(tmp, "empty")))
            info = r.loadCheckpoint(os.path.join(tmp, "ckpt-00000001"))
            self.assertEqual((info.step, info.epoch, info.samplesSeen, info.dataPosition),
                             (1, 3, 2, [3, 1, 2]))
            r.weightsFromHost()
            r.run(popart.PyStepIO({"x": np.ones((2, 4), np.float32),
                                   "t": np.zeros((2, 3), np.float32)}, r.initAnchorArrays()))
            r.weightsToHost()
            w2 = np.zeros((4, 3), np.float32)
            r.readWeights(popart.PyWeightsIO({"w": w2}))
            self.assertEqual(w1.tobytes(), w2.tobytes())
            latest = r.loadLatestCheckpoint(tmp)
            self.assertEqual(latest.step, 1)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_save_checkpoint_never_replaces_a_users_latest(self):
        # saveCheckpoint(DIR/run1) points DIR/latest at run1: it once replaced a file of the
        # user's called `latest` without a word. Only a `latest` xtrain wrote may move.
        tmp = tempfile.mkdtemp(prefix="xtrain-test-latest-")
        try:
            s = popart.TrainingSession(
                linear_model(), popart.DataFlow(1, {"loss": popart.AnchorReturnType("ALL")}),
                "loss", sgd(), popart.DeviceManager().createCpuDevice())
            s.prepareDevice()
            s.weightsFromHost()
            s.run(popart.PyStepIO({"x": np.ones((2, 4), np.float32),
                                   "t": np.zeros((2, 3), np.float32)}, s.initAnchorArrays()))
            latest = os.path.join(tmp, "latest")
            run1 = os.path.join(tmp, "run1")
            # Notes, a single word that names no checkpoint, a link, a directory: all the user's.
            for users in ("my notes on\nthe runs\n", "v2\n"):
                with open(latest, "w") as f:
                    f.write(users)
                with self.assertRaisesRegex(popart.popart_exception,
                                            "latest' is not a `latest` pointer xtrain wrote"):
                    s.saveCheckpoint(run1)
                with open(latest) as f:
                    self.assertEqual(f.read(), users)
                self.assertFalse(os.path.exists(run1))
            os.remove(latest)
            os.symlink("notes.txt", latest)
            with self.assertRaisesRegex(popart.popart_exception, "it is a symbolic link"):
                s.saveCheckpoint(run1)
            self.assertTrue(os.path.islink(latest))
            os.remove(latest)
            os.mkdir(latest)
            with self.assertRaisesRegex(popart.popart_exception, "not a regular file"):
                s.saveCheckpoint(run1)
            os.rmdir(latest)
            # Without one, xtrain writes its own, and moves it on later saves.
            s.saveCheckpoint(run1)
            with open(latest) as f:
                self.assertEqual(f.read(), "run1\n")
            s.saveCheckpoint(os.path.join(tmp, "run2"))
            with open(latest) as f:
                self.assertEqual(f.read(), "run2\n")
            # A pointer at a checkpoint that was removed since is still xtrain's (ckpt-<step>).
            with open(latest, "w") as f:
                f.write("ckpt-00000007\n")
            s.saveCheckpoint(os.path.join(tmp, "ckpt-00000001"))
            with open(latest) as f:
                self.assertEqual(f.read(), "ckpt-00000001\n")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class CallbackTest(unittest.TestCase):
    def session(self, bps=3):
        s = popart.TrainingSession(
            linear_model(), popart.DataFlow(bps, {"loss": popart.AnchorReturnType("ALL"),
                                                  "y": popart.AnchorReturnType("ALL")}),
            "loss", sgd(), popart.DeviceManager().createCpuDevice())
        s.prepareDevice()
        s.weightsFromHost()
        return s

    def test_same_as_pystepio(self):
        rng = np.random.RandomState(3)
        x = rng.rand(3, 2, 4).astype(np.float32)
        t = rng.rand(3, 2, 3).astype(np.float32)
        ref = self.session()
        a = ref.initAnchorArrays()
        ref.run(popart.PyStepIO({"x": x, "t": t}, a))

        s = self.session()
        data = {"x": x, "t": t}
        pos = {"x": 0, "t": 0, "loss": 0, "y": 0}
        out = {"loss": np.zeros(3, np.float32), "y": np.zeros((3, 2, 3), np.float32)}
        calls = []

        def input_callback(tid, prefetch):
            arr = data[tid][pos[tid]]
            return arr

        def input_complete_callback(tid):
            calls.append(("inComplete", tid))
            pos[tid] += 1

        def output_callback(tid):
            i = pos[tid]  # a view of one entry: the session writes into it
            return out[tid][i:i + 1].reshape(out[tid].shape[1:])

        def output_complete_callback(tid):
            calls.append(("outComplete", tid))
            pos[tid] += 1

        s.run(popart.PyStepIOCallback(input_callback, input_complete_callback, output_callback,
                                      output_complete_callback))
        self.assertEqual(out["loss"].tobytes(), a["loss"].tobytes())
        self.assertEqual(out["y"].tobytes(), a["y"].tobytes())
        self.assertEqual(calls.count(("inComplete", "x")), 3)

    def test_inference_with_two_outputs(self):
        # Two anchored results of the same two inputs, filled through the callbacks into
        # buffers the caller owns, and a run given a name for its logs.
        n = 1000
        b = popart.Builder()
        p = b.addInputTensor(popart.TensorInfo("FLOAT", [n]), "p")
        q = b.addInputTensor(popart.TensorInfo("FLOAT", [n]), "q")
        total = b.aiOnnx.add([p, q])
        product = b.aiOnnx.mul([p, q])
        s = popart.InferenceSession(
            b.getModelProto(), popart.DataFlow(1, {total: popart.AnchorReturnType("ALL"),
                                                   product: popart.AnchorReturnType("ALL")}),
            popart.DeviceManager().createCpuDevice())
        s.prepareDevice()
        rng = np.random.RandomState(8)
        data = {p: rng.uniform(-2, 2, n).astype(np.float32),
                q: rng.uniform(-2, 2, n).astype(np.float32)}
        out = {total: np.zeros(n, np.float32), product: np.zeros(n, np.float32)}
        done, fed = {}, []

        def input_callback(tid, prefetch):
            fed.append((tid, prefetch))
            return data[tid]

        def output_complete_callback(tid):
            done[tid] = out[tid].copy()  # the buffer is full when this is called

        s.run(popart.PyStepIOCallback(input_callback, lambda tid: None, lambda tid: out[tid],
                                      output_complete_callback), "two outputs")
        self.assertEqual(sorted(fed), [(p, False), (q, False)])  # xtrain never prefetches
        self.assertEqual(set(done), {total, product})
        np.testing.assert_array_equal(done[total], data[p] + data[q])
        np.testing.assert_array_equal(done[product], data[p] * data[q])

    def test_order_of_calls(self):
        # Per micro-batch: in, inComplete, then out and outComplete of the values it made.
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("INT32", [2]), "x")
        y = b.aiOnnx.identity([x])
        s = popart.InferenceSession(
            b.getModelProto(), popart.DataFlow(3, {y: popart.AnchorReturnType("ALL")}),
            popart.DeviceManager().createCpuDevice())
        s.prepareDevice()
        events, buf = [], np.zeros(2, np.int32)

        def input_callback(tid, prefetch):
            events.append("in")
            return np.array([len(events), -len(events)], np.int32)

        def output_complete_callback(tid):
            events.append("outComplete %d" % buf[0])

        s.run(popart.PyStepIOCallback(input_callback, lambda tid: events.append("inComplete"),
                                      lambda tid: events.append("out") or buf,
                                      output_complete_callback))
        self.assertEqual(events, ["in", "inComplete", "out", "outComplete 1",
                                  "in", "inComplete", "out", "outComplete 5",
                                  "in", "inComplete", "out", "outComplete 9"])

    def test_input_callback_must_return_an_array(self):
        s = self.session(1)
        io = popart.PyStepIOCallback(lambda tid, prefetch: None, lambda t: None,
                                     lambda t: np.zeros((2, 3), np.float32), lambda t: None)
        with self.assertRaisesRegex(TypeError, r"PyStepIOCallback input '(x|t)'"):
            s.run(io)

    def test_callback_error_propagates(self):
        s = self.session()

        class Boom(Exception):
            pass

        def bad_input(tid, prefetch):
            raise Boom("no data for " + tid)

        io = popart.PyStepIOCallback(bad_input, lambda t: None, lambda t: None, lambda t: None)
        with self.assertRaisesRegex(Boom, "no data for"):
            s.run(io)
        io2 = popart.PyStepIOCallback(lambda t, p: "text", lambda t: None, lambda t: None,
                                      lambda t: None)
        with self.assertRaises((TypeError, popart.popart_exception)):
            s.run(io2)

    def test_callback_buffers_are_checked(self):
        s = self.session(1)

        def inputs(shape_x, dtype=np.float32):
            return lambda tid, prefetch: np.zeros(shape_x if tid == "x" else (2, 3), dtype)

        cases = [
            (inputs((3,)), lambda t: np.zeros((2, 3), np.float32),
             r"'x' is FLOAT\[3\].*expected FLOAT\[2,4\]"),
            (inputs((2, 4), np.float64), lambda t: np.zeros((2, 3), np.float32),
             r"'x' is DOUBLE\[2,4\].*expected FLOAT\[2,4\]"),
            (inputs((2, 4)), lambda t: np.zeros(0, np.float32), r"'(loss|y)' is FLOAT\[0\]"),
        ]
        for inp, out, pattern in cases:
            io = popart.PyStepIOCallback(inp, lambda t: None, out, lambda t: None)
            with self.assertRaisesRegex(popart.popart_exception, pattern):
                s.run(io)
        with self.assertRaisesRegex(TypeError, "output '(loss|y)'.*NumPy array"):
            s.run(popart.PyStepIOCallback(inputs((2, 4)), lambda t: None, lambda t: [0.0],
                                          lambda t: None))


class GilTest(unittest.TestCase):
    def train(self, steps):
        s = popart.TrainingSession(
            linear_model(), popart.DataFlow(4, {"loss": popart.AnchorReturnType("ALL")}), "loss",
            sgd(), popart.DeviceManager().createCpuDevice())
        s.prepareDevice()
        s.weightsFromHost()
        a = s.initAnchorArrays()
        io = popart.PyStepIO({"x": np.ones((4, 2, 4), np.float32),
                              "t": np.zeros((4, 2, 3), np.float32)}, a)
        for _ in range(steps):
            s.run(io)
        return a["loss"].copy()

    def test_run_releases_the_gil(self):
        # With a long switch interval another thread gets the GIL only when it is released: it
        # makes progress during run() only if run() releases it. (Waking it can take longer than
        # a run on a busy machine, so a few runs are tried; with the GIL held none would do.)
        bps = 4000
        s = popart.TrainingSession(
            linear_model(), popart.DataFlow(bps, {"loss": popart.AnchorReturnType("ALL")}),
            "loss", sgd(0.0), popart.DeviceManager().createCpuDevice())
        s.prepareDevice()
        s.weightsFromHost()
        io = popart.PyStepIO({"x": np.ones((bps, 2, 4), np.float32),
                              "t": np.zeros((bps, 2, 3), np.float32)}, s.initAnchorArrays())
        count = [0]
        stop = threading.Event()

        def spin():
            while not stop.is_set():
                count[0] += 1

        old = sys.getswitchinterval()
        sys.setswitchinterval(0.5)
        th = threading.Thread(target=spin)
        progress = []
        try:
            th.start()
            stop.wait(0.01)  # lets spin start
            for _ in range(5):
                before = count[0]
                s.run(io)
                progress.append(count[0] - before)
                if progress[-1] > 0:
                    break
        finally:
            stop.set()
            th.join(timeout=30)
            sys.setswitchinterval(old)
        self.assertGreater(max(progress), 0, progress)

    def test_threads_drive_sessions(self):
        expected = self.train(30)
        results = [None] * 3
        errors = []

        def work(i):
            try:
                results[i] = self.train(30)
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=120)
        self.assertFalse(any(th.is_alive() for th in threads))
        self.assertEqual(errors, [])
        for r in results:
            self.assertEqual(r.tobytes(), expected.tobytes())

    def test_ctrl_c(self):
        script = textwrap.dedent("""
            import sys, numpy as np
            sys.path.insert(0, %r)
            from python_testing import linear_model, sgd
            import xtrain as popart
            s = popart.TrainingSession(linear_model(), popart.DataFlow(
                64, {"loss": popart.AnchorReturnType("ALL")}), "loss", sgd(0.0),
                popart.DeviceManager().createCpuDevice())
            s.prepareDevice(); s.weightsFromHost()
            a = s.initAnchorArrays()
            io = popart.PyStepIO({"x": np.ones((64, 2, 4), np.float32),
                                  "t": np.zeros((64, 2, 3), np.float32)}, a)
            mode = sys.argv[1]
            x = np.ones((2, 4), np.float32); t = np.zeros((2, 3), np.float32)
            out = np.zeros(2, np.float32)
            started = []
            def inp(tid, prefetch):
                if not started:
                    started.append(1); print("ready", flush=True)
                return x if tid == "x" else t
            cb = popart.PyStepIOCallback(inp, lambda tid: None, lambda tid: out[:1].reshape(()),
                                         lambda tid: None)
            try:
                if mode == "stepio":
                    print("ready", flush=True)
                    while True:
                        s.run(io)
                else:
                    while True:
                        s.run(cb)
            except KeyboardInterrupt:
                print("interrupted", flush=True)
            s.run(io)  # the session still works
            print("done", flush=True)
        """ % HERE)
        for mode in ("stepio", "callback"):
            p = subprocess.Popen([sys.executable, "-c", script, mode], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=dict(os.environ))
            try:
                line = p.stdout.readline()
                self.assertEqual(line.strip(), "ready", p.stderr.read() if not line else line)
                p.send_signal(signal.SIGINT)
                out, err = p.communicate(timeout=60)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            self.assertEqual(p.returncode, 0, err)
            self.assertEqual(out.split(), ["interrupted", "done"], mode)


class EngineLoadingTest(PrivatePool, unittest.TestCase):
    """PopART's order of calls: loadEngineAndConnectStreams needs a compiled engine; prepareDevice
    loads it unless loadEngine=False, and run loads it when it is not loaded; the log says when
    the graph is compiled and when the engine is loaded."""

    def session(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
        y = b.aiOnnx.neg([x], "y")
        return popart.InferenceSession(
            fnModel=b.getModelProto(),
            dataFlow=popart.DataFlow(1, {y: popart.AnchorReturnType("ALL")}),
            deviceInfo=popart.DeviceManager().createIpuModelDevice({})), x, y

    def test_load_before_compile_is_refused(self):
        session, _, _ = self.session()
        with self.assertRaisesRegex(popart.popart_exception, "no compiled engine.*prepareDevice"):
            session.loadEngineAndConnectStreams()

    def test_run_loads_an_engine_left_unloaded(self):
        script = textwrap.dedent("""
            import numpy as np, xtrain as popart
            b = popart.Builder()
            x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
            y = b.aiOnnx.neg([x], "y")
            s = popart.InferenceSession(
                fnModel=b.getModelProto(),
                dataFlow=popart.DataFlow(1, {y: popart.AnchorReturnType("ALL")}),
                deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
            popart.getLogger().setLevel("INFO")
            s.prepareDevice(False)
            print("--- compiled", flush=True)
            a = s.initAnchorArrays()
            s.run(popart.PyStepIO({x: np.array([1.0, -2.0], np.float32)}, a))
            print("--- ran", a[y].tolist(), flush=True)
            s.loadEngineAndConnectStreams()
            """)
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--- ran [-1.0, 2.0]", r.stdout)
        log = r.stderr
        self.assertEqual(log.count("Graph compiled"), 1, log)
        self.assertEqual(log.count("Engine loaded"), 1, log)  # by run, once


if __name__ == "__main__":
    unittest.main()
