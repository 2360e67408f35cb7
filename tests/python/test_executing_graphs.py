"""The API PopART's "Executing graphs" chapter (executing-graphs.txt) describes, one test per
section, each a complete program the way a PopART user writes one: the model made with
popart.Builder, a session, a training loop, through `import xtrain as popart`. The programs are
ours, written from what the chapter says each call does (no text of the chapter is copied here);
docs/python.md, "The 'Executing graphs' chapter".
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np
import onnx
from onnx import numpy_helper

import xtrain as popart
from python_testing import PrivatePool, clean_env


def add_model():
    """o = a + b on two one-element inputs named 'a' and 'b' (the chapter's PyStepIO example)."""
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [1]), "a")
    b = builder.addInputTensor(popart.TensorInfo("FLOAT", [1]), "b")
    o = builder.aiOnnx.add([a, b])
    builder.addOutputTensor(o)
    return builder.getModelProto(), o


def classifier_model(batch=4, features=8, classes=3, seed=0):
    """A softmax classifier with an NLL loss: returns (proto, x, label, loss, weight ids)."""
    rng = np.random.RandomState(seed)
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [batch, features]), "x")
    label = builder.addInputTensor(popart.TensorInfo("INT32", [batch]), "label")
    w = builder.addInitializedInputTensor(
        (rng.randn(features, classes) * 0.1).astype(np.float32), "w")
    b = builder.addInitializedInputTensor(np.zeros(classes, np.float32), "b")
    logits = builder.aiOnnx.add([builder.aiOnnx.matmul([x, w]), b])
    probs = builder.aiOnnx.softmax([logits])
    loss = builder.aiGraphcore.nllloss([probs, label])
    builder.addOutputTensor(loss)
    return builder.getModelProto(), x, label, loss, [w, b]


def classifier_data(batch=4, features=8, classes=3, seed=1):
    rng = np.random.RandomState(seed)
    data = rng.rand(batch, features).astype(np.float32)
    labels = rng.randint(0, classes, size=batch).astype(np.int32)
    return data, labels


def training_session(proto, loss, lr=0.5, batches_per_step=1, opts=None):
    """A TrainingSession of a model on a CPU device, with SGD and its loss anchored, compiled."""
    session = popart.TrainingSession(
        fnModel=proto,
        dataFlow=popart.DataFlow(batches_per_step, {loss: popart.AnchorReturnType("ALL")}),
        loss=loss, optimizer=popart.SGD(lr), userOptions=opts or popart.SessionOptions(),
        deviceInfo=popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    return session


def read_weights(session, ids):
    session.weightsToHost()
    weights = {i: np.zeros(session.getInfo(i).shape(), np.float32) for i in ids}
    session.readWeights(popart.PyWeightsIO(weights))
    return weights


class Chapter(PrivatePool, unittest.TestCase):
    """Each test runs in its own scratch directory (the chapter writes files such as onnx.pb)."""

    def setUp(self):
        super().setUp()
        self._cwd = os.getcwd()
        os.chdir(self.tmp)

    def tearDown(self):
        os.chdir(self._cwd)
        super().tearDown()


class InputOutputBuffersTest(Chapter):
    """5.1: PyStepIO and initAnchorArrays; weightsFromHost; updateOptimizerFromHost."""

    def test_pystepio(self):
        proto, o = add_model()
        session = popart.InferenceSession(
            fnModel=proto, dataFlow=popart.DataFlow(1, {o: popart.AnchorReturnType("ALL")}),
            deviceInfo=popart.DeviceManager().createCpuDevice())
        session.prepareDevice()

        results = session.initAnchorArrays()  # zeroed host buffers, one per anchor
        rng = np.random.RandomState(12)
        left = rng.uniform(-1, 1, 1).astype(np.float32)
        right = rng.uniform(-1, 1, 1).astype(np.float32)
        session.run(popart.PyStepIO({"a": left, "b": right}, results))

        self.assertEqual(list(results), [o])
        self.assertEqual(results[o].dtype, np.float32)
        np.testing.assert_array_equal(results[o], left + right)

    def test_weights_and_learning_rate_between_steps(self):
        proto, x, label, loss, weights = classifier_model()
        rates = [0.5, 0.0, 0.25]
        session = popart.TrainingSession(
            fnModel=proto, dataFlow=popart.DataFlow(1, {loss: popart.AnchorReturnType("ALL")}),
            loss=loss, optimizer=popart.SGD(rates[0]),
            deviceInfo=popart.DeviceManager().createCpuDevice())
        session.prepareDevice()
        session.weightsFromHost()  # the initial weights to the device

        anchors = session.initAnchorArrays()
        data, labels = classifier_data()
        stepio = popart.PyStepIO({x: data, label: labels}, anchors)
        seen = [read_weights(session, weights)]
        for rate in rates:
            # A new learning rate for the next step (SGD(number): not a constant, so it can change).
            session.updateOptimizerFromHost(popart.SGD(rate))

            session.run(stepio)
            seen.append(read_weights(session, weights))
        moved = [not np.array_equal(seen[i]["w"], seen[i + 1]["w"]) for i in range(3)]
        self.assertEqual(moved, [True, False, True])  # a rate of 0 leaves the weights alone


class RetrievingResultsTest(Chapter):
    """5.1.1: DataFlow(batchesPerStep, {tensor: AnchorReturnType}) and the four return types."""

    def test_dataflow_and_return_types(self):
        proto, o = add_model()
        df = popart.DataFlow(1, {o: popart.AnchorReturnType("ALL")})
        self.assertEqual(df.batchesPerStep(), 1)
        self.assertTrue(df.isAnchored(o))
        self.assertEqual(df.art(o).id(), popart.AnchorReturnTypeId.All)

        expected = {"ALL": lambda s: s, "EVERYN": lambda s: s[1::2], "FINAL": lambda s: s[-1],
                    "SUM": lambda s: s.sum(axis=0)}
        for kind, pick in expected.items():
            art = popart.AnchorReturnType(kind, 2) if kind == "EVERYN" else \
                popart.AnchorReturnType(kind)
            session = popart.InferenceSession(
                fnModel=proto, dataFlow=popart.DataFlow(4, {o: art}),
                deviceInfo=popart.DeviceManager().createCpuDevice())
            session.prepareDevice()
            anchors = session.initAnchorArrays()
            data_a = np.arange(4, dtype=np.float32).reshape(4, 1)
            data_b = np.full((4, 1), 0.5, np.float32)
            session.run(popart.PyStepIO({"a": data_a, "b": data_b}, anchors))
            np.testing.assert_array_equal(anchors[o], pick(data_a + data_b), err_msg=kind)

    def test_any_tensor_can_be_anchored(self):
        # An anchor need not be a model output, and an output need not be anchored.
        proto, x, label, loss, _ = classifier_model()
        logits = "Add:0"
        self.assertNotIn(logits, popart.Builder(proto).getOutputTensorIds())
        session = popart.InferenceSession(
            fnModel=proto, dataFlow=popart.DataFlow(1, {logits: popart.AnchorReturnType("FINAL")}),
            deviceInfo=popart.DeviceManager().createCpuDevice())
        session.prepareDevice()
        session.weightsFromHost()
        anchors = session.initAnchorArrays()
        self.assertEqual(list(anchors), [logits])
        data, labels = classifier_data()
        session.run(popart.PyStepIO({x: data, label: labels}, anchors))
        self.assertEqual(anchors[logits].shape, (4, 3))


class SessionOptionsTest(Chapter):
    """5.2.1: stochastic rounding."""

    def test_stochastic_rounding(self):
        proto, x, label, loss, weights = classifier_model()
        opts = popart.SessionOptions()
        opts.enableStochasticRounding = True

        session = training_session(proto, loss, lr=0.1, batches_per_step=2, opts=opts)
        session.weightsFromHost()
        anchors = session.initAnchorArrays()
        data, labels = classifier_data()
        session.run(popart.PyStepIO({x: np.stack([data, data]), label: np.stack([labels, labels])},
                                    anchors))
        self.assertTrue(opts.enableStochasticRounding)
        self.assertLess(anchors[loss][1], anchors[loss][0])
        # The note's override through engineOptions: the member is there (the key is Poplar's, so
        # a session refuses it as unknown: docs/session-options.md).
        opts.engineOptions = {"target.deterministicWorkers": "false"}
        self.assertEqual(opts.engineOptions, {"target.deterministicWorkers": "false"})


class SelectingDeviceTest(Chapter):
    """5.3: DeviceManager: createCpuDevice, acquireAvailableDevice, acquireDeviceById, OnDemand."""

    def test_cpu_device_and_inference_session_from_a_file(self):
        proto, o = add_model()
        with open("onnx.pb", "wb") as f:
            f.write(proto)
        device = popart.DeviceManager().createCpuDevice()
        s = popart.InferenceSession(
            "onnx.pb", deviceInfo=device,
            dataFlow=popart.DataFlow(1, {o: popart.AnchorReturnType("ALL")}))
        s.prepareDevice()
        out = s.initAnchorArrays()
        s.run(popart.PyStepIO({"a": np.ones(1, np.float32), "b": np.ones(1, np.float32)}, out))
        self.assertEqual(out[o].tolist(), [2.0])
        self.assertEqual(device.type, popart.DeviceType.Cpu)

    def test_acquire(self):
        devices = popart.DeviceManager().enumerateDevices()
        self.assertEqual(len(devices), 8)  # the private pool's 8 single IPUs
        dev = popart.DeviceManager().acquireAvailableDevice(2)  # any free pair
        self.assertEqual((dev.numIpus, dev.isAttached), (2, True))
        dev.detach()

        dev = popart.DeviceManager().acquireDeviceById(5)  # one device by its id
        self.assertEqual((dev.id, dev.numIpus, dev.isAttached), (5, 1, True))
        dev.detach()

        model = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1})
        self.assertEqual(model.type, popart.DeviceType.IpuModel)

    def test_on_demand(self):
        proto, o = add_model()
        dev = popart.DeviceManager().acquireAvailableDevice(
            4, connectionType=popart.DeviceConnectionType.OnDemand)

        self.assertEqual(dev.numIpus, 4)
        self.assertFalse(dev.isAttached)  # deferred until PopART needs it
        s = popart.InferenceSession(proto, deviceInfo=dev,
                                    dataFlow=popart.DataFlow(1, {o: popart.AnchorReturnType("ALL")}))
        s.prepareDevice()
        self.assertTrue(dev.isAttached)
        dev.detach()
        self.assertFalse(dev.isAttached)


class ExecutingTest(Chapter):
    """5.4: prepareDevice and run, for inference (with a loss) and for training."""

    def test_inference_returns_the_loss(self):
        proto, x, label, loss, weights = classifier_model()
        session = popart.InferenceSession(
            fnModel=proto, dataFlow=popart.DataFlow(1, {loss: popart.AnchorReturnType("ALL"),
                                                        "Softmax:0": popart.AnchorReturnType("ALL")}),
            deviceInfo=popart.DeviceManager().createCpuDevice())
        session.prepareDevice()
        session.weightsFromHost()
        anchors = session.initAnchorArrays()
        data, labels = classifier_data()
        session.run(popart.PyStepIO({x: data, label: labels}, anchors))

        probs = anchors["Softmax:0"]
        expected = -np.mean(np.log(probs[np.arange(4), labels]))
        self.assertAlmostEqual(float(anchors[loss]), float(expected), places=5)

    def test_training_updates_the_weights(self):
        proto, x, label, loss, weights = classifier_model()
        session = training_session(proto, loss)
        session.weightsFromHost()
        before = read_weights(session, weights)
        anchors = session.initAnchorArrays()
        data, labels = classifier_data()
        stepio = popart.PyStepIO({x: data, label: labels}, anchors)
        losses = []
        for _ in range(5):
            session.run(stepio)
            losses.append(float(anchors[loss]))
        after = read_weights(session, weights)
        self.assertFalse(np.array_equal(before["w"], after["w"]))
        self.assertLess(losses[-1], losses[0])


class SavingLoadingTest(Chapter):
    """5.5: modelToHost, then resetHostWeights + weightsFromHost in a new session."""

    def test_save_and_load(self):
        proto, x, label, loss, weights = classifier_model()
        session = training_session(proto, loss)
        session.weightsFromHost()
        anchors = session.initAnchorArrays()
        data, labels = classifier_data()
        for _ in range(3):
            session.run(popart.PyStepIO({x: data, label: labels}, anchors))
        trained = read_weights(session, weights)
        session.modelToHost("trained_model.onnx")

        saved = {i.name: numpy_helper.to_array(i)
                 for i in onnx.load("trained_model.onnx").graph.initializer}
        for k in weights:
            np.testing.assert_array_equal(saved[k], trained[k])

        # An earlier run's parameters loaded into a new session of the untrained model.
        os.replace("trained_model.onnx", "test.onnx")
        session = training_session(proto, loss)
        session.resetHostWeights("test.onnx")
        session.weightsFromHost()

        loaded = read_weights(session, weights)
        for k in weights:
            np.testing.assert_array_equal(loaded[k], trained[k])

    def test_separate_files_per_process(self):
        # The chapter's advice for several processes: one temporary file each.
        proto, x, label, loss, weights = classifier_model()
        session = popart.InferenceSession(
            fnModel=proto, dataFlow=popart.DataFlow(1, {loss: popart.AnchorReturnType("ALL")}),
            deviceInfo=popart.DeviceManager().createCpuDevice())
        session.prepareDevice()
        session.weightsFromHost()
        with tempfile.NamedTemporaryFile(suffix=".onnx", dir=self.tmp) as f:
            session.modelToHost(f.name)
            self.assertEqual(sorted(i.name for i in onnx.load(f.name).graph.initializer), sorted(weights))


class ProfilingTest(Chapter):
    """5.6: getSummaryReport and getReport (JSON, docs/reports.md); engine and report options are
    issue 19's."""

    def test_reports(self):
        proto, o = add_model()
        opts = popart.SessionOptions()
        opts.engineOptions = {"autoReport.all": "true"}
        self.assertEqual(opts.engineOptions, {"autoReport.all": "true"})
        opts.reportOptions = {"showExecutionSteps": "true"}
        self.assertEqual(opts.reportOptions, {"showExecutionSteps": "true"})
        # The reports themselves are reports.md's; this test checks the summary below.
        opts.engineOptions = {}
        opts.reportOptions = {}

        session = popart.InferenceSession(
            proto, deviceInfo=popart.DeviceManager().createCpuDevice(), userOptions=opts,
            dataFlow=popart.DataFlow(1, {o: popart.AnchorReturnType("ALL")}))
        session.prepareDevice()
        anchors = session.initAnchorArrays()
        session.run(popart.PyStepIO({"a": np.ones(1, np.float32), "b": np.ones(1, np.float32)},
                                    anchors))
        summary = session.getSummaryReport()
        self.assertIsInstance(summary, str)
        self.assertIn("1 step(s) run", summary)
        self.assertIn("Memory report", summary)
        self.assertIn("execution profile: 1 run(s)", summary)
        self.assertEqual(json.loads(session.getReport())["execution"]["runs"], 0)  # reset above


class LoggingTest(unittest.TestCase):
    """5.7: getLogger().setLevel and the output format, in a child process (the level is global)."""

    PROGRAM = """
        import sys
        import numpy as np
        import xtrain as popart
        popart.getLogger().setLevel("DEBUG")        # every module
        popart.getLogger("session").setLevel("OFF")  # but the session's
        for module in ["popart", "session", "ir", "devicex", "transform", "pattern", "builder",
                       "op", "opx", "ces", "python", "none"]:
            popart.getLogger(module)
        for level in ["TRACE", "DEBUG", "INFO", "WARN", "ERR", "CRITICAL", "OFF"]:
            popart.getLogger("ir").setLevel(level)

        def run():
            builder = popart.Builder()
            a = builder.addInputTensor(popart.TensorInfo("FLOAT", [1]), "a")
            o = builder.aiOnnx.relu([a])
            s = popart.InferenceSession(
                builder.getModelProto(), deviceInfo=popart.DeviceManager().createCpuDevice(),
                dataFlow=popart.DataFlow(1, {o: popart.AnchorReturnType("ALL")}))
            s.prepareDevice()
            s.run(popart.PyStepIO({a: np.ones(1, np.float32)}, s.initAnchorArrays()))

        run()
        popart.flushLogs()
        print("--- session at DEBUG", file=sys.stderr, flush=True)
        popart.getLogger("session").setLevel("DEBUG")
        run()
        popart.flushLogs()
    """

    def test_levels_and_format(self):
        env = {k: v for k, v in clean_env().items() if not k.startswith("XTRAIN_LOG")}
        r = subprocess.run([sys.executable, "-c", textwrap.dedent(self.PROGRAM)], env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stderr  # the default destination
        before, after = out.split("--- session at DEBUG\n")
        line = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z (\S+) (\d+)\.(\d+) ([TDIWEC]): ")
        session_lines = [m for m in map(line.match, after.splitlines()) if m and
                         m.group(1).endswith("session")]
        self.assertTrue(session_lines, out)
        self.assertEqual(session_lines[0].group(2), session_lines[0].group(3))  # main thread
        self.assertIn("D", {m.group(4) for m in session_lines})
        self.assertFalse([m for m in map(line.match, before.splitlines()) if m and
                          m.group(1).endswith("session")], out)


class ErrorsTest(Chapter):
    """5.8: the hierarchy, application errors from a real mistake, system errors' recovery."""

    def test_hierarchy(self):
        application = [popart.popart_exception, popart.popart_internal_exception,
                       popart.popart_runtime_error, popart.poplibs_exception,
                       popart.poplar_application_runtime_error]
        system = [popart.poplar_recoverable_runtime_error,
                  popart.poplar_unrecoverable_runtime_error, popart.poplar_unknown_runtime_error]
        for cls in application + system:
            self.assertTrue(issubclass(cls, popart.popart_exception), cls)
        for cls in system:
            self.assertTrue(issubclass(cls, popart.poplar_system_runtime_error), cls)
            self.assertTrue(issubclass(cls, popart.poplar_runtime_error), cls)
            self.assertTrue(issubclass(cls, popart.poplar_exception), cls)
        self.assertTrue(issubclass(popart.poplar_application_runtime_error,
                                   popart.poplar_runtime_error))
        self.assertEqual({a.name for a in [popart.RecoveryAction.IPU_RESET,
                                           popart.RecoveryAction.LINK_RESET,
                                           popart.RecoveryAction.PARTITION_RESET,
                                           popart.RecoveryAction.POWER_CYCLE]},
                         {"IPU_RESET", "LINK_RESET", "PARTITION_RESET", "POWER_CYCLE"})

    def test_application_error(self):
        proto, x, label, loss, _ = classifier_model()
        session = training_session(proto, loss, lr=0.1)
        session.weightsFromHost()
        data, labels = classifier_data()
        try:
            session.run(popart.PyStepIO({x: data[:2], label: labels}, session.initAnchorArrays()))
        except popart.popart_exception as e:  # a bug in the user code
            message = str(e)
        else:
            self.fail("no error for a wrong input shape")
        self.assertIn("'x'", message)
        self.assertIn("[4,8]", message)
        self.assertIn("[2,8]", message)

    def test_system_error_handler(self):
        # A training loop's handler for the system errors. The simulated IPUs never fail this
        # way, so the test raises each one as the library would (xtrain._xtrain._throw_error).
        from xtrain import _xtrain

        def handle(step):
            try:
                step()
            except popart.poplar_recoverable_runtime_error as e:
                return "recover", e.recoveryAction
            except popart.poplar_unrecoverable_runtime_error:
                return "contact support", None
            except popart.poplar_unknown_runtime_error:
                return "try every recovery", None
            return "ok", None

        for action in [popart.RecoveryAction.IPU_RESET, popart.RecoveryAction.LINK_RESET,
                       popart.RecoveryAction.PARTITION_RESET, popart.RecoveryAction.POWER_CYCLE]:
            self.assertEqual(
                handle(lambda: _xtrain._throw_error("recoverable_runtime_error", "x", action)),
                ("recover", action))
        self.assertEqual(
            handle(lambda: _xtrain._throw_error("unrecoverable_runtime_error", "x")),
            ("contact support", None))
        self.assertEqual(handle(lambda: _xtrain._throw_error("unknown_runtime_error", "x")),
                         ("try every recovery", None))
        self.assertEqual(handle(lambda: None), ("ok", None))


if __name__ == "__main__":
    unittest.main()
