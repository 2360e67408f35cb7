"""Off-chip storage from Python (docs/model-parallelism.md, "Off-chip storage"): PopART's
TensorLocationSettings with OffChip storage and minElementsForOffChip, and
tensorLocationSettingsOverride, put weights, optimizer state and accumulators in streaming memory;
training reaches the bits of on-chip training (SGD with momentum, Adam, replicated tensor sharding,
gradient accumulation, a checkpoint saved off chip and resumed on chip); the report shows each
off-chip tensor and the loads and stores; bad settings name the option."""
import contextlib
import json
import os
import tempfile
import unittest

import numpy as np

import xtrain as popart
from python_testing import sgd

WEIGHTS = ["W1", "b1", "W2", "b2"]


def mlp(place=False):
    """x -> relu(x W1 + b1) -> x W2 + b2 -> softmax cross-entropy; b2 has 3 elements. place: the
    first layer on IPU 0 of its replica, the second and the loss on IPU 1."""
    b = popart.Builder()
    rng = np.random.RandomState(4)
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 6]), "x")
    labels = b.addInputTensor(popart.TensorInfo("INT32", [4]), "labels")
    w1 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (6, 10)).astype(np.float32), "W1")
    b1 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (10,)).astype(np.float32), "b1")
    w2 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (10, 3)).astype(np.float32), "W2")
    b2 = b.addInitializedInputTensor(rng.uniform(-0.5, 0.5, (3,)).astype(np.float32), "b2")
    with b.virtualGraph(0) if place else contextlib.nullcontext():
        h = b.aiOnnx.relu([b.aiOnnx.add([b.aiOnnx.matmul([x, w1]), b1])])
    with b.virtualGraph(1) if place else contextlib.nullcontext():
        logits = b.aiOnnx.add([b.aiOnnx.matmul([h, w2]), b2])
        probs = b.aiOnnx.softmax([logits])
        loss = b.aiGraphcore.nllloss([probs, labels], reduction=popart.ReductionType.Mean)
    b.addOutputTensor(loss)
    return b.getModelProto(), loss


def adam():
    return popart.Adam({"defaultLearningRate": (0.02, False), "defaultWeightDecay": (0.01, True)})


def options(off_chip, replicas=1, af=1, rts=False):
    opts = popart.SessionOptions()
    opts.enableReplicatedGraphs = replicas > 1
    opts.replicatedGraphCount = replicas
    opts.enableGradientAccumulation = af > 1
    opts.accumulationFactor = af
    if off_chip:
        # PopART's spelling: a TensorLocationSettings made from a storage and a minimum.
        location = popart.TensorLocationSettings(popart.TensorStorage.OffChip, 5)
        opts.weightTensorLocationSettings = location
        opts.optimizerStateTensorLocationSettings = location
        opts.accumulatorTensorLocationSettings = location
    if rts:
        for settings in (opts.weightTensorLocationSettings,
                         opts.optimizerStateTensorLocationSettings):
            settings.location.replicatedTensorSharding = popart.ReplicatedTensorSharding.On
            settings.minElementsForReplicatedTensorSharding = 5
    return opts


def session(opts, optimizer, replicas=1):
    proto, loss = mlp()
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": replicas})
    s = popart.TrainingSession(fnModel=proto, dataFlow=popart.DataFlow(1, {}), loss=loss,
                               optimizer=optimizer, userOptions=opts, deviceInfo=device)
    s.prepareDevice()
    s.weightsFromHost()
    return s


def run(s, replicas, af, first_step, steps):
    for step in range(first_step, first_step + steps):
        rng = np.random.RandomState(step)
        shape = ([af] if af > 1 else []) + ([replicas] if replicas > 1 else [])
        s.run(popart.PyStepIO({"x": rng.randn(*shape, 4, 6).astype(np.float32),
                               "labels": rng.randint(0, 3, (*shape, 4)).astype(np.int32)}, {}))


def read(s, ids):
    s.weightsToHost()
    # Optimizer state has its weight's shape (whole on the host, also when sharded).
    out = {t: np.zeros(s.getInfo(t.split("___")[-1]).shape(), np.float32) for t in ids}
    s.readWeights(popart.PyWeightsIO(out))
    return out


def state_ids(optimizer_name):
    prefixes = ["Accl1___", "Accl2___"] if optimizer_name == "adam" else ["Accl___"]
    return WEIGHTS + [p + w for p in prefixes for w in WEIGHTS]


def train(off_chip, optimizer_name, replicas=1, af=1, rts=False):
    optimizer = adam() if optimizer_name == "adam" else sgd(0.1, momentum=0.9)
    s = session(options(off_chip, replicas, af, rts), optimizer, replicas)
    run(s, replicas, af, 0, 3)
    return read(s, state_ids(optimizer_name)), s


class OffChipTrainingTest(unittest.TestCase):
    def assert_bit_identical(self, got, want, what):
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{what}: {name}")

    def test_same_bits_as_on_chip(self):
        for optimizer_name in ("sgd", "adam"):
            for replicas, af, rts in ((1, 1, False), (2, 1, True), (2, 2, False), (4, 2, True)):
                what = f"{optimizer_name}, {replicas} replicas, af {af}, rts {rts}"
                with self.subTest(what):
                    off, s = train(True, optimizer_name, replicas, af, rts)
                    on, _ = train(False, optimizer_name, replicas, af, rts)
                    self.assert_bit_identical(off, on, what)
                    names = {t["name"] for t in json.loads(s.getReport())["memory"]
                             ["offChipTensors"]}
                    self.assertIn("W1", names)  # not a vacuous comparison: W1 was off chip

    def test_checkpoint_saved_off_chip_resumes_on_chip(self):
        whole = session(options(False, 2, 2), sgd(0.1, momentum=0.9), 2)
        run(whole, 2, 2, 0, 4)
        want = read(whole, state_ids("sgd"))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "offchip")
            first = session(options(True, 2, 2), sgd(0.1, momentum=0.9), 2)
            run(first, 2, 2, 0, 2)
            first.saveCheckpoint(path)
            del first
            second = session(options(False, 2, 2), sgd(0.1, momentum=0.9), 2)
            second.loadCheckpoint(path)
            run(second, 2, 2, 2, 2)
            self.assert_bit_identical(read(second, state_ids("sgd")), want,
                                      "saved off chip, resumed on chip")


class OffChipVirtualGraphTest(unittest.TestCase):
    def test_each_ipu_keeps_its_own_tensors_off_chip(self):
        results = {}
        for off_chip in (False, True):
            proto, loss = mlp(place=True)
            opts = options(off_chip, replicas=2, af=2)
            opts.virtualGraphMode = popart.VirtualGraphMode.Manual
            device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 4})
            s = popart.TrainingSession(fnModel=proto, dataFlow=popart.DataFlow(1, {}), loss=loss,
                                       optimizer=sgd(0.1, momentum=0.9), userOptions=opts,
                                       deviceInfo=device)
            s.prepareDevice()
            s.weightsFromHost()
            run(s, 2, 2, 0, 3)
            results[off_chip] = read(s, state_ids("sgd"))
            report = json.loads(s.getReport())
        # W1 (60 elements) on IPU 0 of each replica, W2 (30) on IPU 1: each in its IPU's
        # streaming memory, with its velocity.
        off = {(t["ipu"], t["name"]) for t in report["memory"]["offChipTensors"]}
        for replica in range(2):
            self.assertIn((2 * replica, "W1"), off)
            self.assertIn((2 * replica + 1, "W2"), off)
            self.assertIn((2 * replica + 1, "Accl___W2"), off)
        self.assertNotIn((0, "W2"), off)
        ipus = report["memory"]["ipus"]
        self.assertEqual(ipus[1]["streamingClasses"]["Weights"], 30 * 4)
        for name in results[False]:
            np.testing.assert_array_equal(results[True][name], results[False][name], name)


class OffChipPlacementTest(unittest.TestCase):
    def test_minimum_and_overrides_decide_and_the_report_shows_them(self):
        opts = options(False, af=2)
        opts.weightTensorLocationSettings.location.storage = popart.TensorStorage.OffChip
        opts.weightTensorLocationSettings.minElementsForOffChip = 30  # W1 (60), W2 (30)
        opts.tensorLocationSettingsOverride = {
            "W2": popart.TensorLocation(popart.TensorStorage.OnChip),
            "Accl___b1": popart.TensorLocation(popart.TensorStorage.OffChip),
            "Accum___b2": popart.TensorLocation(popart.TensorStorage.OffChip)}
        s = session(opts, sgd(0.1, momentum=0.9))
        run(s, 1, 2, 0, 1)
        report = json.loads(s.getReport())
        off = {t["name"]: t["bytes"] for t in report["memory"]["offChipTensors"]}
        self.assertEqual(off, {"W1": 240, "Accl___b1": 40, "Accum___b2": 12})
        self.assertEqual(report["memory"]["ipus"][0]["streamingBytes"], 292)
        self.assertGreater(report["execution"]["offChipTransfers"]["stores"], 0)
        summary = s.getSummaryReport()
        self.assertIn("Streaming memory", summary)
        self.assertIn("off-chip transfers (RemoteLoad/RemoteStore", summary)

    def test_inference_keeps_weights_off_chip(self):
        proto, loss = mlp()
        opts = popart.SessionOptions()
        opts.weightTensorLocationSettings.location.storage = popart.TensorStorage.OffChip
        # The options of a training session: its optimizer state's override does nothing here.
        opts.tensorLocationSettingsOverride = {
            "Accl___W1": popart.TensorLocation(popart.TensorStorage.OffChip)}
        device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1})
        s = popart.InferenceSession(fnModel=proto, dataFlow=popart.DataFlow(1, {loss: popart.AnchorReturnType("All")}),
                                    userOptions=opts, deviceInfo=device)
        s.prepareDevice()
        off = {t["name"] for t in json.loads(s.getReport())["memory"]["offChipTensors"]}
        self.assertEqual(off, set(WEIGHTS))

    def test_bad_settings_name_the_option(self):
        cases = []
        opts = options(False)
        opts.activationTensorLocationSettings.location.storage = popart.TensorStorage.OffChip
        cases.append((opts, r"activationTensorLocationSettings.*execution phases"))
        opts = options(False)
        opts.tensorLocationSettingsOverride = {
            "nope": popart.TensorLocation(popart.TensorStorage.OffChip)}
        cases.append((opts, r"tensorLocationSettingsOverride names 'nope'.*not a tensor"))
        opts = options(False)
        opts.tensorLocationSettingsOverride = {
            "x": popart.TensorLocation(popart.TensorStorage.OffChip)}
        cases.append((opts, r"tensorLocationSettingsOverride puts 'x' OffChip"))
        opts = options(False)
        opts.weightTensorLocationSettings.minElementsForOffChip = -3
        cases.append((opts, r"weightTensorLocationSettings\.minElementsForOffChip.*-3"))
        for opts, pattern in cases:
            with self.subTest(pattern):
                with self.assertRaisesRegex(popart.popart_exception, pattern):
                    session(opts, sgd(0.1, momentum=0.9))


if __name__ == "__main__":
    unittest.main()
