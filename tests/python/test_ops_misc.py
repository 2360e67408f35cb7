"""PopART's aiGraphcore atan2, swish, geluerf, nearbyint, incrementmod, slice, subsample,
groupedgather, sequenceslice, normalize_image and aiOnnx mean through the Builder: forward against
PyTorch / numpy, gradients (anchored with reservedGradientPrefix() in a TrainingSession) against
PyTorch's autograd, shapes through getTensorShape, and the errors for bad input."""
import unittest

import numpy as np
import torch

import xtrain as popart
from python_testing import run_once as run

RNG = np.random.RandomState(29)


def infer(xs, build, opsets=None):
    """build(builder, input ids) -> output id; its value for the inputs xs."""
    b = popart.Builder(opsets=opsets) if opsets else popart.Builder()
    ids = [b.addInputTensor(popart.TensorInfo(x), f"x{k}") for k, x in enumerate(xs)]
    o = build(b, ids)
    b.addOutputTensor(o)
    return run(b, [o], dict(zip(ids, xs)))[o]


def check_against_torch(test, xs, build, fn, rtol=1e-5, atol=1e-6, opsets=None):
    """y = build(b, ids) and the gradients of sum(y * r) (r fixed, random) with respect to every
    input, against fn on float64 torch tensors."""
    b = popart.Builder(opsets=opsets) if opsets else popart.Builder()
    ids = [b.addInputTensor(popart.TensorInfo(x), f"x{k}") for k, x in enumerate(xs)]
    y = build(b, ids)
    r_val = RNG.uniform(0.5, 1.5, b.getTensorShape(y)).astype(np.float32)
    loss = b.aiGraphcore.identityloss([b.aiOnnx.mul([y, b.aiOnnx.constant(r_val, "r")])],
                                      reduction=popart.ReductionType.Sum)
    grads = [popart.reservedGradientPrefix() + i for i in ids]
    a = run(b, [y] + grads, dict(zip(ids, xs)), loss)
    ts = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    ty = fn(*ts)
    (ty * torch.tensor(r_val, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(a[y], ty.detach().numpy(), rtol=rtol, atol=atol)
    for g, t in zip(grads, ts):
        np.testing.assert_allclose(a[g], t.grad.numpy(), rtol=rtol * 10, atol=atol * 10)


class Elementwise(unittest.TestCase):
    def test_atan2_broadcasts_and_matches_torch(self):
        y = RNG.uniform(-2, 2, (2, 3, 4)).astype(np.float32)
        x = RNG.uniform(0.5, 2, (3, 1)).astype(np.float32) * np.array([[1], [-1], [1]], np.float32)
        check_against_torch(self, [y, x], lambda b, i: b.aiGraphcore.atan2(i), torch.atan2)

    def test_mean_broadcasts_and_matches_torch(self):
        xs = [RNG.uniform(-1, 1, s).astype(np.float32) for s in ((8, 7), (6, 8, 7), (6, 1, 7), (7,))]
        check_against_torch(self, xs, lambda b, i: b.aiOnnx.mean(i),
                            lambda *t: sum(torch.broadcast_tensors(*t)) / len(t))

    def test_mean_before_opset_8_needs_equal_shapes(self):
        xs = [np.ones((2, 3), np.float32), np.ones((3,), np.float32)]
        with self.assertRaisesRegex(popart.popart_exception,
                                    "Inputs to ai.onnx.Mean:6 do not all the same type & shape"):
            infer(xs, lambda b, i: b.aiOnnx.mean(i), opsets={"ai.onnx": 7, "ai.graphcore": 1})
        same = [np.full((2, 3), 1.0, np.float32), np.full((2, 3), 4.0, np.float32)]
        np.testing.assert_allclose(
            infer(same, lambda b, i: b.aiOnnx.mean(i), opsets={"ai.onnx": 7, "ai.graphcore": 1}),
            np.full((2, 3), 2.5))

    def test_swish_and_geluerf_match_torch(self):
        x = RNG.uniform(-5, 5, (4, 6)).astype(np.float32)
        check_against_torch(self, [x], lambda b, i: b.aiGraphcore.swish(i), torch.nn.functional.silu)
        check_against_torch(self, [x], lambda b, i: b.aiGraphcore.geluerf(i),
                            torch.nn.functional.gelu, rtol=1e-5, atol=1e-5)

    def test_nearbyint_rounds_halves_to_even_with_a_zero_gradient(self):
        x = np.array([-2.5, -1.5, -0.5, 0.5, 1.4, 1.5, 2.5, 2.6, 140.0], np.float32)
        check_against_torch(self, [x], lambda b, i: b.aiGraphcore.nearbyint(i), torch.round)

    def test_incrementmod_is_numpys_fmod_in_each_type(self):
        for dtype in (np.float32, np.float16, np.int32, np.uint32):
            with self.subTest(dtype=dtype.__name__):
                x = np.array([5.0, -5.0, 10.0, 1.0, 2.0], dtype=dtype)
                want = np.fmod(x + np.asarray(3, dtype), np.asarray(4, dtype))
                got = infer([x], lambda b, i: b.aiGraphcore.incrementmod(i, 3.0, 4.0))
                self.assertEqual(got.dtype, want.dtype)
                np.testing.assert_array_equal(got, want)

    def test_incrementmod_refuses_a_zero_modulus(self):
        b = popart.Builder()
        i = b.addInputTensor(popart.TensorInfo("FLOAT", [2]))
        with self.assertRaisesRegex(popart.popart_exception, "incrementmod.*modulus"):
            b.aiGraphcore.incrementmod([i], increment=1.0, modulus=0.0)


class Indexing(unittest.TestCase):
    def test_slice_takes_popart_argument_order_and_matches_numpy(self):
        x = RNG.uniform(-1, 1, (5, 6)).astype(np.float32)
        build = lambda b, i: b.aiGraphcore.slice(i, ends=[-1, 100], starts=[-4, 2], axes=[0, 1])
        check_against_torch(self, [x], build, lambda t: t[-4:-1, 2:])
        got = infer([x], lambda b, i: b.aiGraphcore.slice(i, [3], [1], []))
        np.testing.assert_array_equal(got, x[1:3])

    def test_subsample_matches_numpy_strides_with_its_gradient(self):
        x = RNG.uniform(-1, 1, (5, 7, 4)).astype(np.float32)
        check_against_torch(self, [x], lambda b, i: b.aiGraphcore.subsample(i, [2, 3, 1]),
                            lambda t: t[::2, ::3, ::1])
        b = popart.Builder()
        i = b.addInputTensor(popart.TensorInfo("FLOAT", [10, 9, 8, 7]))
        self.assertEqual(b.getTensorShape(b.aiGraphcore.subsample([i], strides=[2, 3, 4, 5])),
                         [5, 3, 2, 2])

    def test_subsample_refuses_a_zero_stride_with_popart_words(self):
        b = popart.Builder()
        i = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 4]))
        with self.assertRaisesRegex(popart.popart_exception,
                                    r"^Strides invalid. 0 stride at index 1.*subsample"):
            b.aiGraphcore.subsample([i], [4, 0])

    def test_groupedgather_is_a_gather_per_group(self):
        data = RNG.uniform(-1, 1, (3, 4, 5)).astype(np.float32)
        idx = np.array([[0, 2], [3, 3], [1, 0]], np.int32)
        b = popart.Builder()
        d = b.addInitializedInputTensor(data, "data")
        i = b.addInputTensor(popart.TensorInfo(idx), "idx")
        o = b.aiGraphcore.groupedgather([d, i], axis=1, group_size=3)
        self.assertEqual(b.getTensorShape(o), [3, 2, 5])
        loss = b.aiGraphcore.identityloss([o], reduction=popart.ReductionType.Sum)
        gd = popart.reservedGradientPrefix() + d
        a = run(b, [o, gd], {i: idx}, loss)
        np.testing.assert_array_equal(a[o], np.stack([np.take(data[g], idx[g], axis=0)
                                                      for g in range(3)]))
        want = np.zeros_like(data)
        for g in range(3):
            np.add.at(want[g], idx[g], 1.0)  # repeated indices add up
        np.testing.assert_array_equal(a[gd], want)

    def test_groupedgather_refuses_the_group_axis(self):
        data = np.zeros((2, 3), np.float32)
        idx = np.zeros((2, 1), np.int32)
        with self.assertRaisesRegex(popart.popart_exception, "GroupedGather.*axis 0"):
            infer([data, idx], lambda b, i: b.aiGraphcore.groupedgather(i, 0, group_size=2))

    def test_sequenceslice_copies_rows_and_zeroes_unused(self):
        source = (np.arange(36, dtype=np.float32) + 10).reshape(6, 6)
        dest = np.full((4, 6), -1.0, np.float32)
        n, so, do = (np.array(v, np.uint32) for v in ([1, 2], [0, 4], [2, 0]))
        for zero in (False, True):
            with self.subTest(zeroUnused=zero):
                want = np.zeros_like(dest) if zero else dest.copy()
                for k in range(2):
                    want[do[k]:do[k] + n[k]] = source[so[k]:so[k] + n[k]]
                got = infer([source, dest, n, so, do],
                            lambda b, i: b.aiGraphcore.sequenceslice(i, zero))
                np.testing.assert_array_equal(got, want)

    def test_sequenceslice_reports_an_entry_outside_the_source(self):
        source, dest = np.zeros((3, 2), np.float32), np.zeros((3, 2), np.float32)
        n, so, do = (np.array([v], np.uint32) for v in (2, 2, 0))
        with self.assertRaisesRegex(popart.popart_exception, "SequenceSlice.*entry 0"):
            infer([source, dest, n, so, do], lambda b, i: b.aiGraphcore.sequenceslice(i))


class NormalizeImage(unittest.TestCase):
    def test_normalizes_and_pads_each_image_type(self):
        for dtype, out_dtype in ((np.float32, np.float32), (np.float16, np.float16),
                                 (np.uint8, np.float16)):
            with self.subTest(dtype=dtype.__name__):
                img = (RNG.uniform(0, 1, (2, 2, 2, 3)) * 255).astype(dtype)
                offsets = np.array([1, 2, 3], out_dtype)
                scales = np.array([4, 5, 6], out_dtype)
                got = infer([img, offsets, scales],
                            lambda b, i: b.aiGraphcore.normalize_image(i, scale=1.0 / 255))
                norm = (img.astype(np.float32) / 255 - offsets.astype(np.float32)) * scales
                want = np.concatenate([norm, np.zeros((2, 2, 2, 1))], axis=-1)
                self.assertEqual(got.dtype, out_dtype)
                self.assertEqual(got.shape, (2, 2, 2, 4))
                np.testing.assert_allclose(got, want, rtol=1e-2 if out_dtype == np.float16 else 1e-5,
                                           atol=1e-2 if out_dtype == np.float16 else 1e-5)

    def test_refuses_four_channels(self):
        img = np.zeros((2, 4), np.float32)
        offsets = np.zeros(3, np.float32)
        with self.assertRaisesRegex(popart.popart_exception,
                                    r"NormalizeImage.*image.*inner dimension to be 3"):
            infer([img, offsets, offsets], lambda b, i: b.aiGraphcore.normalize_image(i))


if __name__ == "__main__":
    unittest.main()
