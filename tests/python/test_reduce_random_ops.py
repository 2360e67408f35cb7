"""Builder methods aiGraphcore.reducemedian, sort, bucketize, shapeddropout and aiOnnx.randomnormal,
randomuniform, randomnormallike, randomuniformlike: shapes from Builder.getTensorShape, values in
sessions against numpy and PyTorch references, gradients read as anchors, reproducibility from
Session.setRandomSeed, and PopART's errors."""
import itertools
import unittest

import numpy as np
import onnx
import torch

import xtrain as popart

RNG = np.random.RandomState(3)
GRAD = popart.reservedGradientPrefix()


def run(builder, anchors, feeds, loss=None, seed=None, steps=1):
    """Runs `steps` steps (training when loss is given); returns the anchors' values per step."""
    df = popart.DataFlow(1, {a: popart.AnchorReturnType("All") for a in anchors})
    device = popart.DeviceManager().createCpuDevice()
    if loss is None:
        session = popart.InferenceSession(fnModel=builder.getModelProto(), dataFlow=df,
                                          deviceInfo=device)
    else:
        session = popart.TrainingSession(fnModel=builder.getModelProto(), dataFlow=df, loss=loss,
                                         optimizer=popart.ConstSGD(0.01), deviceInfo=device)
    session.prepareDevice()
    if seed is not None:
        session.setRandomSeed(seed)
    session.weightsFromHost()
    values = session.initAnchorArrays()
    results = []
    for _ in range(steps):
        session.run(popart.PyStepIO(feeds, values))
        results.append({a: np.copy(values[a]) for a in anchors})
    return results if steps > 1 else results[0]


def median_reference(x, axes, keepdims):
    """The lower median over axes (None: all) and its position in the row-major reduced set."""
    axes = tuple(range(x.ndim)) if axes is None else tuple(a % x.ndim for a in axes)
    kept = [d for d in range(x.ndim) if d not in axes]
    moved = np.transpose(x, kept + sorted(axes))
    sets = moved.reshape([x.shape[d] for d in kept] + [-1])
    order = np.argsort(sets, axis=-1, kind="stable")
    mid = (sets.shape[-1] - 1) // 2
    idx = order[..., mid]
    val = np.take_along_axis(sets, idx[..., None], axis=-1)[..., 0]
    if keepdims:
        shape = [1 if d in axes else x.shape[d] for d in range(x.ndim)]
        val, idx = val.reshape(shape), idx.reshape(shape)
    return val.astype(x.dtype), idx.astype(np.int32)


class ReduceMedianTest(unittest.TestCase):
    def test_values_indices_and_shapes_for_every_axis_subset(self):
        x = RNG.randint(0, 6, size=(2, 3, 4)).astype(np.float32)  # ties
        subsets = [None] + [list(c) for i in range(4) for c in itertools.combinations(range(3), i)]
        for axes, keepdims in itertools.product(subsets + [[-1]], [0, 1]):
            b = popart.Builder()
            t = b.addInputTensor(popart.TensorInfo(x))
            values, indices = b.aiGraphcore.reducemedian([t], axes=axes, keepdims=keepdims)
            want_v, want_i = median_reference(x, axes, keepdims)
            self.assertEqual(b.getTensorShape(values), list(want_v.shape))
            self.assertEqual(b.getTensorShape(indices), list(want_i.shape))
            out = run(b, [values, indices], {t: x})
            np.testing.assert_array_equal(out[values], want_v, err_msg=str((axes, keepdims)))
            np.testing.assert_array_equal(out[indices], want_i, err_msg=str((axes, keepdims)))
            self.assertEqual(out[indices].dtype, np.int32)

    def test_odd_counts_match_numpy_and_single_axes_match_torch(self):
        x = RNG.randn(3, 5, 7).astype(np.float32)
        for axis in range(3):
            b = popart.Builder()
            t = b.addInputTensor(popart.TensorInfo(x))
            values, indices = b.aiGraphcore.reducemedian([t], axes=[axis], keepdims=0)
            out = run(b, [values, indices], {t: x})
            ref = torch.median(torch.tensor(x), dim=axis)
            np.testing.assert_array_equal(out[values], ref.values.numpy())
            np.testing.assert_array_equal(out[indices], ref.indices.numpy().astype(np.int32))
        b = popart.Builder()
        t = b.addInputTensor(popart.TensorInfo(x))
        values, _ = b.aiGraphcore.reducemedian([t], axes=(0, 2))
        np.testing.assert_array_equal(run(b, [values], {t: x})[values],
                                      np.median(x, axis=(0, 2), keepdims=True))

    def test_gradient_goes_to_the_median_element(self):
        x = RNG.randn(4, 5).astype(np.float32)
        for axes in ([0], [1], None):
            b = popart.Builder()
            t = b.addInputTensor(popart.TensorInfo(x))
            values, _ = b.aiGraphcore.reducemedian([t], axes=axes, keepdims=0)
            total = b.aiOnnx.reducesum([values], keepdims=0)
            loss = b.aiGraphcore.identityloss([total])
            out = run(b, [values, GRAD + t], {t: x}, loss=loss)
            tx = torch.tensor(x, requires_grad=True)
            if axes is None:
                flat = tx.reshape(-1)
                ref = torch.sort(flat, stable=True).values[(flat.numel() - 1) // 2]
            else:
                ref = torch.median(tx, dim=axes[0]).values
            ref.sum().backward()
            np.testing.assert_allclose(out[GRAD + t], tx.grad.numpy(), err_msg=str(axes))

    def test_int32_and_errors(self):
        x = RNG.permutation(60).reshape(3, 4, 5).astype(np.int32)
        b = popart.Builder()
        t = b.addInputTensor(popart.TensorInfo(x))
        values, indices = b.aiGraphcore.reducemedian([t], axes=[1])
        out = run(b, [values, indices], {t: x})
        want_v, want_i = median_reference(x, [1], 1)
        np.testing.assert_array_equal(out[values], want_v)
        np.testing.assert_array_equal(out[indices], want_i)
        b = popart.Builder()
        t = b.addInputTensor(popart.TensorInfo(x))
        values, _ = b.aiGraphcore.reducemedian([t], axes=[3])
        with self.assertRaisesRegex(popart.popart_exception, "ReduceMedian.*axis 3 is out of range"):
            run(b, [values], {t: x})

    def test_int32_loss_trains_through_the_median(self):
        # An INT32 loss (PopART allows one): the gradients are INT32 too, scattered exactly; Mean
        # divides the loss gradient by the element count as integers.
        x = RNG.permutation(60).reshape(3, 4, 5).astype(np.int32)
        for reduction, scale in ((popart.ReductionType.Sum, 1), (popart.ReductionType.Mean, 1)):
            b = popart.Builder()
            t = b.addInputTensor(popart.TensorInfo(x))
            values, _ = b.aiGraphcore.reducemedian([t], axes=[1], keepdims=0)
            total = b.aiOnnx.reducesum([values], keepdims=0)
            loss = b.aiGraphcore.identityloss([total], reduction=reduction)
            out = run(b, [loss, values, GRAD + t], {t: x}, loss=loss)
            want_v, want_i = median_reference(x, [1], 0)
            self.assertEqual(out[loss].dtype, np.int32)
            self.assertEqual(int(out[loss]), int(want_v.sum()))
            want_g = np.zeros_like(x)
            for i in range(3):
                for k in range(5):
                    want_g[i, want_i[i, k], k] = scale
            self.assertEqual(out[GRAD + t].dtype, np.int32)
            np.testing.assert_array_equal(out[GRAD + t], want_g)
        # Mean over 4 INT32 elements: forward and gradient divide as integers (1 // 4 = 0).
        b = popart.Builder()
        t = b.addInputTensor(popart.TensorInfo(x))
        values, _ = b.aiGraphcore.reducemedian([t], axes=[0, 2], keepdims=0)
        loss = b.aiGraphcore.identityloss([values], reduction=popart.ReductionType.Mean)
        out = run(b, [loss, GRAD + t], {t: x}, loss=loss)
        want_v, _ = median_reference(x, [0, 2], 0)
        self.assertEqual(int(out[loss]), int(want_v.sum()) // 4)
        np.testing.assert_array_equal(out[GRAD + t], np.zeros_like(x))


class SortBucketizeTest(unittest.TestCase):
    def test_sort_matches_stable_torch_sort(self):
        x = RNG.randint(0, 5, size=(4, 6)).astype(np.float32)  # ties: stable order is checked
        for axis, descending in itertools.product([0, 1, -1], [0, 1]):
            b = popart.Builder()
            t = b.addInputTensor(popart.TensorInfo(x))
            values, indices = b.aiGraphcore.sort([t], axis=axis, descending=descending, stable=1)
            self.assertEqual(b.getTensorShape(indices), [4, 6])
            out = run(b, [values, indices], {t: x})
            ref = torch.sort(torch.tensor(x), dim=axis, descending=bool(descending), stable=True)
            np.testing.assert_array_equal(out[values], ref.values.numpy())
            np.testing.assert_array_equal(out[indices], ref.indices.numpy().astype(np.int32))
            self.assertEqual(out[indices].dtype, np.int32)

    def test_sort_gradient_scatters_back(self):
        x = RNG.randn(3, 5).astype(np.float32)
        proj = RNG.randn(3, 5).astype(np.float32)
        b = popart.Builder()
        t = b.addInputTensor(popart.TensorInfo(x))
        values, _ = b.aiGraphcore.sort([t], axis=1, descending=1)
        loss = b.aiGraphcore.identityloss([b.aiOnnx.mul([values, b.aiOnnx.constant(proj)])],
                                          reduction=popart.ReductionType.Sum)
        out = run(b, [GRAD + t], {t: x}, loss=loss)
        tx = torch.tensor(x, requires_grad=True)
        (torch.sort(tx, dim=1, descending=True).values * torch.tensor(proj)).sum().backward()
        np.testing.assert_allclose(out[GRAD + t], tx.grad.numpy(), rtol=1e-6)

    def test_bucketize_matches_torch(self):
        cases = [
            (np.array([[3, 6, 9], [-1, 0, 140]]), np.array([1, 3, 5, 7, 9])),
            (np.array([1, 2, 3, 4, 5, 6, 7, 8, 9]), np.array([1, 2, 3, 6, 4, 5])),
            (np.array([1.0, np.nan, 2.0, np.inf, -np.inf]), np.array([0.0, 1.0, 2.0, 3.0])),
        ]
        for (x, bounds), right, dtype in itertools.product(cases, [0, 1], [np.float32, np.int32]):
            if dtype == np.int32 and not np.all(np.isfinite(x)):
                continue
            x, bounds = x.astype(dtype), bounds.astype(dtype)
            b = popart.Builder()
            t = b.addInputTensor(popart.TensorInfo(x))
            bt = b.addInputTensor(popart.TensorInfo(bounds))
            out_id = b.aiGraphcore.bucketize([t, bt], right=right)
            self.assertEqual(b.getTensorShape(out_id), list(x.shape))
            out = run(b, [out_id], {t: x, bt: bounds})[out_id]
            want = torch.bucketize(torch.tensor(x), torch.tensor(bounds), out_int32=True,
                                   right=bool(right)).numpy()
            np.testing.assert_array_equal(out, want)
            self.assertEqual(out.dtype, np.int32)

    def test_bucketize_errors(self):
        b = popart.Builder()
        t = b.addInputTensor(popart.TensorInfo("FLOAT", [3]))
        bt = b.addInputTensor(popart.TensorInfo("INT32", [3]))
        out = b.aiGraphcore.bucketize([t, bt])
        with self.assertRaisesRegex(popart.popart_exception, "Bucketize.*different data types"):
            run(b, [out], {t: np.zeros(3, np.float32), bt: np.zeros(3, np.int32)})


class RandomOpsTest(unittest.TestCase):
    def test_seed_reproduces_and_runs_differ(self):
        for dtype, npt in [(onnx.TensorProto.FLOAT, np.float32),
                           (onnx.TensorProto.FLOAT16, np.float16)]:
            b = popart.Builder()
            n = b.aiOnnx.randomnormal(shape=[500, 2], dtype=dtype, mean=1.0, scale=2.0)
            u = b.aiOnnx.randomuniform(shape=[500, 2], dtype=dtype, high=5.0, low=3.0)
            self.assertEqual(b.getTensorShape(n), [500, 2])
            first = run(b, [n, u], {}, seed=8, steps=2)
            again = run(b, [n, u], {}, seed=8, steps=2)
            for a in (n, u):
                self.assertEqual(first[0][a].dtype, npt)
                np.testing.assert_array_equal(first[0][a], again[0][a])
                np.testing.assert_array_equal(first[1][a], again[1][a])
                self.assertFalse(np.array_equal(first[0][a], first[1][a]))
            self.assertAlmostEqual(float(np.mean(first[0][n])), 1.0, delta=0.25)
            self.assertAlmostEqual(float(np.std(first[0][n])), 2.0, delta=0.25)
            self.assertGreaterEqual(float(first[0][u].min()), 3.0)
            self.assertLessEqual(float(first[0][u].max()), 5.0)

    def test_like_forms_take_the_inputs_shape_and_type(self):
        x = np.zeros((2, 3, 4), np.float16)
        b = popart.Builder()
        t = b.addInputTensor(popart.TensorInfo(x))
        a = b.aiOnnx.randomuniformlike([t])
        c = b.aiOnnx.randomnormallike([t], dtype=onnx.TensorProto.FLOAT)
        out = run(b, [a, c], {t: x}, seed=1)
        self.assertEqual((out[a].shape, out[a].dtype), (x.shape, np.float16))
        self.assertEqual((out[c].shape, out[c].dtype), (x.shape, np.float32))

    def test_errors_are_poparts(self):
        b = popart.Builder()
        out = b.aiOnnx.randomnormal(shape=[4], seed=1.0)
        with self.assertRaises(popart.popart_exception) as e:
            run(b, [out], {})
        self.assertTrue(str(e.exception).endswith(
            "Optional seed attribute is not supported. Use session::setRandomSeed instead."))
        b = popart.Builder()
        out = b.aiOnnx.randomuniform(shape=[4], dtype=onnx.TensorProto.DOUBLE)
        with self.assertRaisesRegex(popart.popart_exception,
                                    "The data type DOUBLE is not supported in Poplar"):
            run(b, [out], {})


class SetRandomSeedBeforePrepareTest(unittest.TestCase):
    """PopART sends the seed to the device program at once: before prepareDevice, a session whose
    model draws random numbers refuses it with PopART's words; one that draws none takes it."""

    WORDS = ("Devicex::prepare() must be called before "
             "Devicex::setRandomSeedFromHost(uint64_t) is called.")

    def session(self, training, op):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [10]))
        if op == "dropout":
            [o] = b.aiOnnx.dropout([x], num_outputs=1, ratio=0.3)
        elif op == "randomnormal":
            o = b.aiOnnx.add([x, b.aiOnnx.randomnormal(shape=[10])])
        else:
            o = b.aiOnnx.relu([x])
        df = popart.DataFlow(1, {o: popart.AnchorReturnType("All")})
        device = popart.DeviceManager().createCpuDevice()
        if training:
            loss = b.aiGraphcore.identityloss([o])
            return popart.TrainingSession(fnModel=b.getModelProto(), dataFlow=df, loss=loss,
                                          optimizer=popart.ConstSGD(0.1), deviceInfo=device)
        return popart.InferenceSession(fnModel=b.getModelProto(), dataFlow=df, deviceInfo=device)

    def test_random_models_refuse_a_seed_before_prepare(self):
        for training, op in [(True, "dropout"), (False, "randomnormal"), (True, "randomnormal")]:
            with self.subTest(training=training, op=op):
                s = self.session(training, op)
                with self.assertRaises(popart.popart_exception) as e:
                    s.setRandomSeed(0)
                self.assertEqual(e.exception.args[0], self.WORDS)
                self.assertIn("call prepareDevice() first", str(e.exception))
                s.prepareDevice()
                s.setRandomSeed(4)
                self.assertEqual(s.getRandomSeed(), 4)

    def test_models_without_randomness_take_it(self):
        # An inference Dropout passes its input through; a Relu draws nothing.
        for training, op in [(False, "dropout"), (True, "relu")]:
            with self.subTest(training=training, op=op):
                s = self.session(training, op)
                s.setRandomSeed(3)
                self.assertEqual(s.getRandomSeed(), 3)

    def test_stochastic_rounding_needs_the_seed_on_the_device(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [4]))
        o = b.aiOnnx.relu([x])
        opts = popart.SessionOptions()
        opts.enableStochasticRounding = True
        s = popart.InferenceSession(
            fnModel=b.getModelProto(), dataFlow=popart.DataFlow(1, [o]), userOptions=opts,
            deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": 1}))
        with self.assertRaises(popart.popart_exception) as e:
            s.setRandomSeed(1)
        self.assertEqual(e.exception.args[0], self.WORDS)


class ShapedDropoutTest(unittest.TestCase):
    def test_training_drops_rows_and_inference_is_the_identity(self):
        x = RNG.uniform(1.0, 2.0, (200, 4)).astype(np.float32)
        b = popart.Builder()
        t = b.addInputTensor(popart.TensorInfo(x))
        y = b.aiGraphcore.shapeddropout([t], shape=[200, 1], ratio=0.25)
        loss = b.aiGraphcore.identityloss([y], reduction=popart.ReductionType.Sum)
        out = run(b, [y, GRAD + t], {t: x}, loss=loss, seed=4)
        kept = out[y].any(axis=1)
        # Whole rows dropped; kept rows scaled by 1 / (1 - ratio); the gradient has the same mask.
        np.testing.assert_array_equal(out[y].all(axis=1), kept)
        np.testing.assert_allclose(out[y][kept], x[kept] / 0.75, rtol=1e-6)
        np.testing.assert_allclose(out[GRAD + t], np.where(kept[:, None], 1 / 0.75, 0.0) * np.ones((1, 4)),
                                   rtol=1e-6)
        self.assertAlmostEqual(1 - kept.mean(), 0.25, delta=0.08)
        again = run(b, [y, GRAD + t], {t: x}, loss=loss, seed=4)
        np.testing.assert_array_equal(again[y], out[y])
        b = popart.Builder()
        t = b.addInputTensor(popart.TensorInfo(x))
        y = b.aiGraphcore.shapeddropout([t], shape=[200, 1])
        np.testing.assert_array_equal(run(b, [y], {t: x})[y], x)

    def test_errors_are_poparts(self):
        b = popart.Builder()
        t = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 2]))
        y = b.aiGraphcore.shapeddropout([t], shape=[4, 4])
        with self.assertRaises(popart.popart_exception) as e:
            run(b, [y], {t: np.zeros((2, 2), np.float32)})
        # PopART's message, after the import's "importing <model>: " prefix; args[0] is PopART's
        # alone (its tests match the start).
        self.assertIn("ShapedDropout: incompatible input tensor and dropout shape.",
                      str(e.exception))
        self.assertEqual(e.exception.args[0],
                         "ShapedDropout: incompatible input tensor and dropout shape. "
                         "ai.graphcore.ShapedDropout:1 is configured with shape [4 4] which is "
                         "not broadcastable to the input tensor with shape [2 2].")
        b = popart.Builder()
        t = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 2]))
        y = b.aiGraphcore.shapeddropout([t], shape=[2, 2], ratio=1.5)
        with self.assertRaises(popart.popart_exception) as e:
            run(b, [y], {t: np.zeros((2, 2), np.float32)})
        self.assertTrue(str(e.exception).endswith(
            "ratio value 1.5 is not valid. Please use a value in the interval [0,1)"))


if __name__ == "__main__":
    unittest.main()
