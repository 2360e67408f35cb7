"""ONNX's auto_pad through the Builder: aiOnnx.averagepool, maxpool and conv take it as a keyword after
debugContext (PopART's Builder leaves the deprecated attribute out, so its positional calls keep their
meaning); the node gets the attribute and the IR works the pads out (SAME_UPPER, SAME_LOWER, VALID).
Results are checked against naive NumPy pooling and convolution over explicitly padded inputs."""
import itertools
import math
import unittest

import numpy as np
import onnx

import xtrain as popart


def same_pads(size, kernel, stride, mode):
    """(begin, end) padding of one spatial dimension: the output has ceil(size / stride) elements;
    SAME_UPPER puts the odd element at the end, SAME_LOWER at the beginning."""
    out = math.ceil(size / stride)
    total = max(0, (out - 1) * stride + kernel - size)
    if mode == "SAME_UPPER":
        return total // 2, total - total // 2
    return total - total // 2, total // 2


def pads_for(x_shape, kernel, strides, mode):
    if mode == "VALID":
        return [(0, 0)] * len(kernel)
    return [same_pads(s, k, st, mode) for s, k, st in zip(x_shape[2:], kernel, strides)]


def pool_reference(x, kernel, strides, mode, kind):
    """Max or average (padding not counted) pooling of x [N, C, spatial...]."""
    pads = pads_for(x.shape, kernel, strides, mode)
    fill = -np.inf if kind == "max" else np.nan
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + pads, constant_values=fill)
    outs = [(p - k) // s + 1 for p, k, s in zip(padded.shape[2:], kernel, strides)]
    y = np.zeros(list(x.shape[:2]) + outs)
    for index in itertools.product(*[range(o) for o in outs]):
        window = padded[(slice(None), slice(None)) + tuple(
            slice(i * s, i * s + k) for i, s, k in zip(index, strides, kernel))]
        window = window.reshape(x.shape[0], x.shape[1], -1)
        y[(slice(None), slice(None)) + index] = (
            window.max(axis=2) if kind == "max" else np.nanmean(window, axis=2))
    return y.astype(np.float32)


def conv_reference(x, w, strides, mode):
    kernel = list(w.shape[2:])
    pads = pads_for(x.shape, kernel, strides, mode)
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + pads)
    outs = [(p - k) // s + 1 for p, k, s in zip(padded.shape[2:], kernel, strides)]
    y = np.zeros([x.shape[0], w.shape[0]] + outs)
    for index in itertools.product(*[range(o) for o in outs]):
        window = padded[(slice(None), slice(None)) + tuple(
            slice(i * s, i * s + k) for i, s, k in zip(index, strides, kernel))]
        y[(slice(None), slice(None)) + index] = np.tensordot(
            window, w, axes=(list(range(1, w.ndim)), list(range(1, w.ndim))))
    return y.astype(np.float32)


def run(builder, out, feeds):
    builder.addOutputTensor(out)
    session = popart.InferenceSession(
        fnModel=builder.getModelProto(),
        dataFlow=popart.DataFlow(1, {out: popart.AnchorReturnType("All")}),
        deviceInfo=popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO(feeds, anchors))
    return anchors[out]


def node_attributes(builder):
    model = onnx.load_from_string(builder.getModelProto())
    return {a.name: onnx.helper.get_attribute_value(a) for a in model.graph.node[-1].attribute}


class AutoPadTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(29)

    def test_pools_match_reference(self):
        # Odd totals of padding (5 with kernel 3, stride 2) tell SAME_UPPER from SAME_LOWER.
        x = self.rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
        for kind, mode in itertools.product(("max", "average"), ("SAME_UPPER", "SAME_LOWER",
                                                                 "VALID")):
            with self.subTest(kind=kind, mode=mode):
                b = popart.Builder()
                i = b.addInputTensor(popart.TensorInfo("FLOAT", list(x.shape)))
                if kind == "max":
                    (o,) = b.aiOnnx.maxpool([i], num_outputs=1, kernel_shape=[3, 2],
                                            strides=[2, 2], auto_pad=mode)
                else:
                    o = b.aiOnnx.averagepool([i], kernel_shape=[3, 2], strides=[2, 2],
                                             auto_pad=mode)
                self.assertEqual(node_attributes(b)["auto_pad"], mode.encode())
                want = pool_reference(x, [3, 2], [2, 2], mode, kind)
                if mode != "VALID":
                    self.assertEqual(list(want.shape[2:]), [3, 3])
                got = run(b, o, {i: x})
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

    def test_conv_matches_reference(self):
        x = self.rng.standard_normal((1, 2, 6, 5)).astype(np.float32)
        w = self.rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
        for mode in ("SAME_UPPER", "SAME_LOWER", "VALID"):
            with self.subTest(mode=mode):
                b = popart.Builder()
                i = b.addInputTensor(popart.TensorInfo("FLOAT", list(x.shape)))
                wi = b.addInitializedInputTensor(w)
                o = b.aiOnnx.conv([i, wi], strides=[2, 1], auto_pad=mode)
                got = run(b, o, {i: x})
                np.testing.assert_allclose(got, conv_reference(x, w, [2, 1], mode), rtol=1e-4,
                                           atol=1e-5)

    def test_notset_leaves_the_attribute_out_and_positional_calls_keep_their_meaning(self):
        b = popart.Builder()
        i = b.addInputTensor(popart.TensorInfo("FLOAT", [1, 1, 4, 4]))
        # PopART's positional order: args, kernel_shape, ceil_mode, count_include_pad, pads,
        # strides, debugContext.
        o = b.aiOnnx.averagepool([i], [2, 2], 0, 0, [0, 0, 0, 0], [2, 2], "pool")
        self.assertEqual(o, "pool:0")
        self.assertNotIn("auto_pad", node_attributes(b))

    def test_auto_pad_is_keyword_only(self):
        b = popart.Builder()
        i = b.addInputTensor(popart.TensorInfo("FLOAT", [1, 1, 4, 4]))
        with self.assertRaises(TypeError):
            b.aiOnnx.averagepool([i], [2, 2], 0, 0, [], [], "pool", "VALID")

    def test_unknown_auto_pad_is_refused_naming_it(self):
        b = popart.Builder()
        i = b.addInputTensor(popart.TensorInfo("FLOAT", [1, 1, 4, 4]))
        with self.assertRaises(popart.popart_exception) as ctx:
            b.aiOnnx.maxpool([i], num_outputs=1, kernel_shape=[2, 2], auto_pad="SAME")
        self.assertIn("maxpool", str(ctx.exception))
        self.assertIn("'SAME'", str(ctx.exception))
        self.assertIn("SAME_UPPER", str(ctx.exception))

    def test_same_is_not_refused_for_a_kernel_larger_than_the_input(self):
        # Without pads a 5-wide kernel over 3 elements has no output; SAME pads it to one.
        x = self.rng.standard_normal((1, 1, 3, 3)).astype(np.float32)
        b = popart.Builder()
        i = b.addInputTensor(popart.TensorInfo("FLOAT", list(x.shape)))
        o = b.aiOnnx.averagepool([i], kernel_shape=[5, 5], strides=[3, 3], auto_pad="SAME_UPPER")
        got = run(b, o, {i: x})
        np.testing.assert_allclose(got, pool_reference(x, [5, 5], [3, 3], "SAME_UPPER",
                                                       "average"), rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    unittest.main()
