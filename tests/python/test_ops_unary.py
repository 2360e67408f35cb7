"""The elementwise and layout ops of the Builder (aiOnnx asin ... atanh, tan, round, shrink, lrn,
depthtospace, spacetodepth; aiGraphcore expm1, log1p, depthtospace, bitwise*), and Cast through the
narrow integer types: forward against PyTorch / numpy, gradients (anchored with
reservedGradientPrefix() in a TrainingSession) against PyTorch's autograd. A model PyTorch exports
with nn.PixelShuffle (DepthToSpace, mode CRD) imports and matches PyTorch, forward and backward."""
import io
import unittest

import numpy as np
import onnx
import torch

import xtrain as popart

RNG = np.random.RandomState(11)


def session(b, outs, loss=None):
    """An inference session over b's model anchoring outs, or a training session (SGD lr 0) when
    loss is given."""
    df = popart.DataFlow(1, {o: popart.AnchorReturnType("All") for o in outs})
    dev = popart.DeviceManager().createCpuDevice()
    if loss is None:
        return popart.InferenceSession(fnModel=b.getModelProto(), dataFlow=df, deviceInfo=dev)
    return popart.TrainingSession(fnModel=b.getModelProto(), dataFlow=df, loss=loss,
                                  optimizer=popart.ConstSGD(0.0), deviceInfo=dev)


def run(s, feeds):
    s.prepareDevice()
    s.weightsFromHost()
    anchors = s.initAnchorArrays()
    s.run(popart.PyStepIO(feeds, anchors))
    return anchors


def infer(x, build, opsets=None):
    """build(builder, input id) -> output id; returns its value for input x."""
    b = popart.Builder(opsets=opsets) if opsets else popart.Builder()
    i = b.addInputTensor(popart.TensorInfo(x), "x")
    o = build(b, i)
    b.addOutputTensor(o)
    return run(session(b, [o]), {i: x})[o]


def forward_and_grad(x, build):
    """y = build(b, x) and d(sum(y * r))/dx for a fixed random r, from a training session."""
    b = popart.Builder()
    i = b.addInputTensor(popart.TensorInfo(x), "x")
    y = build(b, i)
    r_val = RNG.uniform(0.5, 1.5, b.getTensorShape(y)).astype(np.float32)
    r = b.aiOnnx.constant(r_val, "r")
    loss = b.aiGraphcore.identityloss([b.aiOnnx.mul([y, r])], reduction=popart.ReductionType.Sum)
    gx = popart.reservedGradientPrefix() + i
    a = run(session(b, [y, gx], loss), {i: x})
    return a[y], a[gx], r_val


def torch_forward_and_grad(x, f, r):
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    y = f(t)
    (y * torch.tensor(r, dtype=torch.float64)).sum().backward()
    return y.detach().numpy(), t.grad.numpy()


UNARY = {
    # name: (builder method's opset object, torch function, input range)
    "asin": ("aiOnnx", torch.asin, (-0.9, 0.9)),
    "acos": ("aiOnnx", torch.acos, (-0.9, 0.9)),
    "atan": ("aiOnnx", torch.atan, (-3, 3)),
    "sinh": ("aiOnnx", torch.sinh, (-2, 2)),
    "cosh": ("aiOnnx", torch.cosh, (-2, 2)),
    "tan": ("aiOnnx", torch.tan, (-1.2, 1.2)),
    "asinh": ("aiOnnx", torch.asinh, (-4, 4)),
    "acosh": ("aiOnnx", torch.acosh, (1.05, 5)),
    "atanh": ("aiOnnx", torch.atanh, (-0.9, 0.9)),
    "expm1": ("aiGraphcore", torch.expm1, (-3, 3)),
    "log1p": ("aiGraphcore", torch.log1p, (-0.8, 3)),
}


class UnaryMath(unittest.TestCase):
    def test_forward_and_gradient_match_torch(self):
        for name, (opset, fn, (lo, hi)) in UNARY.items():
            with self.subTest(op=name):
                x = RNG.uniform(lo, hi, (3, 4)).astype(np.float32)
                y, gx, r = forward_and_grad(x, lambda b, i: getattr(getattr(b, opset), name)([i]))
                ty, tgx = torch_forward_and_grad(x, fn, r)
                np.testing.assert_allclose(y, ty, rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(gx, tgx, rtol=1e-4, atol=1e-5)

    def test_shape_inference_sees_through_graphcore_ops(self):
        b = popart.Builder()
        i = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 5]))
        self.assertEqual(b.getTensorShape(b.aiGraphcore.expm1([i])), [2, 5])
        self.assertEqual(b.getTensorShape(b.aiGraphcore.log1p([i])), [2, 5])

    def test_round_halves_to_even_with_zero_gradient(self):
        x = np.array([-2.5, -1.5, -0.5, 0.5, 1.4, 1.5, 2.5, 2.6], np.float32)
        y, gx, _ = forward_and_grad(x, lambda b, i: b.aiOnnxOpset11.round([i]))
        np.testing.assert_array_equal(y, np.round(x))
        np.testing.assert_array_equal(gx, np.zeros_like(x))

    def test_integer_input_is_refused_naming_the_op(self):
        x = np.arange(4, dtype=np.int32)
        with self.assertRaisesRegex(popart.popart_exception, "Asin.*INT32"):
            infer(x, lambda b, i: b.aiOnnx.asin([i]))


class ShrinkAndLrn(unittest.TestCase):
    def test_shrink_matches_torch_hardshrink_and_softshrink(self):
        x = RNG.uniform(-4, 4, (50,)).astype(np.float32)
        x = x[np.abs(np.abs(x) - 1.5) > 1e-2]  # off the edges, where the gradient jumps
        hard = lambda b, i: b.aiOnnx.shrink([i], lambd=1.5)
        soft = lambda b, i: b.aiOnnx.shrink([i], lambd=1.5, bias=1.5)
        for build, fn in ((hard, torch.nn.Hardshrink(1.5)), (soft, torch.nn.Softshrink(1.5))):
            y, gx, r = forward_and_grad(x, build)
            ty, tgx = torch_forward_and_grad(x, fn, r)
            np.testing.assert_allclose(y, ty, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(gx, tgx, rtol=1e-6, atol=1e-6)
        # Defaults: lambd 0.5, bias 0.
        np.testing.assert_allclose(infer(x, lambda b, i: b.aiOnnx.shrink([i])),
                                   torch.nn.Hardshrink(0.5)(torch.tensor(x)).numpy())

    def test_lrn_matches_torch_local_response_norm(self):
        x = RNG.uniform(-2, 2, (2, 7, 3, 2)).astype(np.float32)
        for size in (1, 2, 3, 5, 8):
            with self.subTest(size=size):
                build = lambda b, i: b.aiOnnx.lrn([i], size=size, alpha=0.5, beta=0.75, bias=2.0)
                y, gx, r = forward_and_grad(x, build)
                lrn = torch.nn.LocalResponseNorm(size, alpha=0.5, beta=0.75, k=2.0)
                # ONNX's (and PopART's) window is [c - (size-1)//2, c + size//2]; PyTorch's is
                # its mirror image, which differs for an even size: flip the channels around it.
                fn = lrn if size % 2 else lambda t: lrn(t.flip(1)).flip(1)
                ty, tgx = torch_forward_and_grad(x, fn, r)
                np.testing.assert_allclose(y, ty, rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(gx, tgx, rtol=1e-4, atol=1e-5)

    def test_lrn_needs_a_positive_size(self):
        b = popart.Builder()
        i = b.addInputTensor(popart.TensorInfo("FLOAT", [1, 3, 2]))
        with self.assertRaisesRegex(popart.popart_exception, "lrn: size"):
            b.aiOnnx.lrn([i], size=0)


class DepthToSpace(unittest.TestCase):
    def test_both_modes_and_the_graphcore_op_match_torch(self):
        x = RNG.uniform(-1, 1, (2, 12, 3, 2)).astype(np.float32)
        n, c, h, w = x.shape
        t = torch.tensor(x)
        # CRD is PixelShuffle; DCR views the channels as [b, b, C/b^2].
        crd = torch.nn.PixelShuffle(2)(t).numpy()
        dcr = t.reshape(n, 2, 2, c // 4, h, w).permute(0, 3, 4, 1, 5, 2).reshape(
            n, c // 4, h * 2, w * 2).numpy()
        got = infer(x, lambda b, i: b.aiOnnxOpset11.depthtospace([i], blocksize=2, mode="CRD"))
        np.testing.assert_array_equal(got, crd)
        got = infer(x, lambda b, i: b.aiOnnxOpset11.depthtospace([i], blocksize=2))
        np.testing.assert_array_equal(got, dcr)
        got = infer(x, lambda b, i: b.aiGraphcore.depthtospace([i], blocksize=2, mode="DCR"))
        np.testing.assert_array_equal(got, dcr)

    def test_spacetodepth_inverts_dcr_and_gradients_match_torch(self):
        x = RNG.uniform(-1, 1, (1, 2, 4, 6)).astype(np.float32)
        got = infer(x, lambda b, i: b.aiOnnxOpset11.depthtospace(
            [b.aiOnnx.spacetodepth([i], blocksize=2)], blocksize=2))
        np.testing.assert_array_equal(got, x)
        y, gx, r = forward_and_grad(x, lambda b, i: b.aiOnnx.spacetodepth([i], blocksize=2))
        ty, tgx = torch_forward_and_grad(
            x, lambda t: t.reshape(1, 2, 2, 2, 3, 2).permute(0, 3, 5, 1, 2, 4).reshape(1, 8, 2, 3),
            r)
        np.testing.assert_allclose(y, ty)
        np.testing.assert_allclose(gx, tgx)
        for mode in ("DCR", "CRD"):
            z = RNG.uniform(-1, 1, (1, 8, 2, 3)).astype(np.float32)
            y, gx, r = forward_and_grad(
                z, lambda b, i: b.aiOnnxOpset11.depthtospace([i], blocksize=2, mode=mode))
            # The op is a permutation: the gradient is r permuted back.
            np.testing.assert_allclose(np.sort(gx.ravel()), np.sort(r.ravel()))
            if mode == "CRD":
                _, tgx = torch_forward_and_grad(z, torch.nn.PixelShuffle(2), r)
                np.testing.assert_allclose(gx, tgx)

    def test_bad_blocksize_and_mode_are_refused(self):
        b = popart.Builder()
        i = b.addInputTensor(popart.TensorInfo("FLOAT", [1, 8, 2, 2]))
        with self.assertRaisesRegex(popart.popart_exception, "depthtospace: mode 'ABC'"):
            b.aiOnnxOpset11.depthtospace([i], blocksize=2, mode="ABC")
        with self.assertRaisesRegex(popart.popart_exception, "spacetodepth: blocksize"):
            b.aiOnnx.spacetodepth([i], blocksize=0)

    def test_torch_pixelshuffle_model_imports_and_matches_torch(self):
        torch.manual_seed(3)
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 12, 3, padding=1), torch.nn.PixelShuffle(2))
        x = torch.randn(2, 3, 4, 5)
        f = io.BytesIO()
        torch.onnx.export(model, (x,), f, opset_version=11, input_names=["x"],
                          output_names=["y"])
        proto = f.getvalue()
        ops = [n.op_type for n in onnx.load_from_string(proto).graph.node]
        self.assertIn("DepthToSpace", ops)
        df = popart.DataFlow(1, {"y": popart.AnchorReturnType("All")})
        s = popart.InferenceSession(fnModel=proto, dataFlow=df,
                                    deviceInfo=popart.DeviceManager().createCpuDevice())
        y = run(s, {"x": x.numpy()})["y"]
        np.testing.assert_allclose(y, model(x).detach().numpy(), rtol=1e-5, atol=1e-5)

        # Backward through the imported model: the input's gradient of sum(y * r) matches torch.
        b = popart.Builder(proto)
        r_val = RNG.uniform(0.5, 1.5, y.shape).astype(np.float32)
        r = b.aiOnnx.constant(r_val, "r")
        loss = b.aiGraphcore.identityloss([b.aiOnnx.mul(["y", r])],
                                          reduction=popart.ReductionType.Sum)
        gx = popart.reservedGradientPrefix() + "x"
        a = run(session(b, ["y", gx], loss), {"x": x.numpy()})
        tx = x.clone().requires_grad_(True)
        (model(tx) * torch.tensor(r_val)).sum().backward()
        np.testing.assert_allclose(a[gx], tx.grad.numpy(), rtol=1e-4, atol=1e-5)


class Bitwise(unittest.TestCase):
    def test_int32_and_uint32_match_numpy(self):
        for dtype in (np.int32, np.uint32):
            a = RNG.randint(-1000, 1000, 12).astype(dtype)
            c = RNG.randint(-1000, 1000, 12).astype(dtype)
            with self.subTest(dtype=dtype.__name__):
                np.testing.assert_array_equal(
                    infer(a, lambda b, i: b.aiGraphcore.bitwisenot([i])), np.bitwise_not(a))
                for name, ref in (("bitwiseand", np.bitwise_and), ("bitwiseor", np.bitwise_or),
                                  ("bitwisexor", np.bitwise_xor),
                                  ("bitwisexnor", lambda u, v: np.bitwise_not(u ^ v))):
                    b = popart.Builder()
                    i = b.addInputTensor(popart.TensorInfo(a))
                    j = b.addInputTensor(popart.TensorInfo(c))
                    o = getattr(b.aiGraphcore, name)([i, j])
                    self.assertEqual(b.getTensorShape(o), [12])
                    b.addOutputTensor(o)
                    got = run(session(b, [o]), {i: a, j: c})[o]
                    self.assertEqual(got.dtype, dtype)
                    np.testing.assert_array_equal(got, ref(a, c))

    def test_float_input_is_refused(self):
        with self.assertRaisesRegex(popart.popart_exception, "BitwiseNot.*integer"):
            infer(np.ones(3, np.float32), lambda b, i: b.aiGraphcore.bitwisenot([i]))


class NarrowIntegerCasts(unittest.TestCase):
    def test_int8_uint8_int16_uint16_streams_cast_both_ways(self):
        for dtype, name in ((np.int8, "INT8"), (np.uint8, "UINT8"), (np.int16, "INT16"),
                            (np.uint16, "UINT16")):
            with self.subTest(type=name):
                x = np.array([0, 1, 7, 100, 127], dtype)
                y = infer(x, lambda b, i: b.aiOnnx.cast([i], "FLOAT"))
                self.assertEqual(y.dtype, np.float32)
                np.testing.assert_array_equal(y, x.astype(np.float32))
                f = np.array([-3.7, 0.2, 5.9, 90.0], np.float32)
                back = infer(f, lambda b, i: b.aiOnnx.cast([i], name))
                self.assertEqual(back.dtype, dtype)
                want = np.clip(np.trunc(f), np.iinfo(dtype).min, np.iinfo(dtype).max).astype(dtype)
                np.testing.assert_array_equal(back, want)


if __name__ == "__main__":
    unittest.main()
