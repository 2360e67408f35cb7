"""The Builder's ai.onnx opsets 6 to 10 (PopART's AiOnnxOpset6..10; 10 is the default), its node
attribute API, and Resize with PopART's semantics against PyTorch's F.interpolate: each model runs
in an InferenceSession (or a TrainingSession for gradients) and matches a NumPy or PyTorch
reference."""
import unittest

import numpy as np
import onnx
import torch
import torch.nn.functional as F

import xtrain as popart

RNG = np.random.RandomState(11)


def rand(*shape):
    return RNG.uniform(-2, 2, shape).astype(np.float32)


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def run(b, outs, feeds):
    for o in outs:
        b.addOutputTensor(o)
    df = popart.DataFlow(1, {o: popart.AnchorReturnType("All") for o in outs})
    s = popart.InferenceSession(fnModel=b.getModelProto(), dataFlow=df,
                                deviceInfo=popart.DeviceManager().createCpuDevice())
    s.prepareDevice()
    anchors = s.initAnchorArrays()
    s.run(popart.PyStepIO(feeds, anchors))
    return [anchors[o] for o in outs]


def infer(opset, arrays, build):
    """build(ops, builder, *ids) -> output id(s); arrays are fed as stream inputs."""
    b = popart.Builder(opsets={"ai.onnx": opset, "ai.graphcore": 1})
    ids = [b.addInputTensor(popart.TensorInfo(a)) for a in arrays]
    out = build(b.aiOnnx, b, *ids)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    values = run(b, outs, dict(zip(ids, arrays)))
    return values if isinstance(out, (list, tuple)) else values[0]


def last_node(b):
    return onnx.load_from_string(b.getModelProto()).graph.node[-1]


class LegacyOpsetsTest(unittest.TestCase):
    def test_clip_pad_topk_at_10(self):
        x = rand(3, 4)
        y = infer(10, [x], lambda o, b, i: o.clip([i], max=0.5, min=-0.25))
        np.testing.assert_allclose(y, np.clip(x, -0.25, 0.5))
        y = infer(10, [x], lambda o, b, i: o.pad([i], [0, 1, 2, 0], "constant", 1.5))
        np.testing.assert_allclose(y, np.pad(x, [(0, 2), (1, 0)], constant_values=1.5))

        def topk(o, b, i):
            k = o.constant(np.array([2], dtype=np.int64))
            return o.topk([i, k], axis=1)
        values, indices = infer(10, [x], topk)
        np.testing.assert_allclose(values, -np.sort(-x, axis=1)[:, :2])
        np.testing.assert_array_equal(indices, np.argsort(-x, axis=1)[:, :2])

    def test_attribute_forms_before_10(self):
        x = rand(4, 6)
        y = infer(9, [x], lambda o, b, i: o.slice([i], axes=[1], starts=[1], ends=[-1]))
        np.testing.assert_allclose(y, x[:, 1:-1])
        values, _ = infer(9, [x], lambda o, b, i: o.topk([i], k=3, axis=0))
        np.testing.assert_allclose(values, -np.sort(-x, axis=0)[:3])
        img = rand(1, 2, 5, 5)
        (mp,) = infer(9, [img], lambda o, b, i: o.maxpool([i], 1, [2, 2], strides=[2, 2]))
        ref = F.max_pool2d(torch.tensor(img), 2, 2).numpy()
        np.testing.assert_allclose(mp, ref)
        mp = infer(7, [img], lambda o, b, i: o.maxpool([i], [2, 2], strides=[2, 2]))
        np.testing.assert_allclose(mp, ref)
        ap = infer(9, [img], lambda o, b, i: o.averagepool([i], [3, 3], count_include_pad=1,
                                                          pads=[1, 1, 1, 1]))
        np.testing.assert_allclose(ap, F.avg_pool2d(torch.tensor(img), 3, 1, 1).numpy(),
                                   rtol=1e-5, atol=1e-6)

    def test_batchnormalization_7_and_opset_6(self):
        x = rand(2, 3, 4)
        scale, bias, mean, var = rand(3), rand(3), rand(3), np.abs(rand(3)) + 0.5

        def bn(o, b, i):
            c = [b.addInitializedInputTensor(v) for v in (scale, bias, mean, var)]
            return o.batchnormalization([i] + c, 1, epsilon=1e-3, spatial=1)[0]
        ref = (x - mean[:, None]) / np.sqrt(var[:, None] + 1e-3) * scale[:, None] + bias[:, None]
        np.testing.assert_allclose(infer(8, [x], bn), ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(infer(7, [x], bn), ref, rtol=1e-5, atol=1e-5)
        a, c = rand(2, 3), rand(3)
        y = infer(6, [a, c], lambda o, b, i, j: o.add([i, j], broadcast=1))
        np.testing.assert_allclose(y, a + c)
        w = rand(3, 4)
        y = infer(6, [a, w, c[:1]],
                  lambda o, b, i, j, k: o.gemm([i, j, k], alpha=2.0, broadcast=1))
        np.testing.assert_allclose(y, 2 * a @ w + c[:1], rtol=1e-5, atol=1e-5)

    def test_upsample_forms(self):
        x = rand(1, 1, 2, 3)
        ref = F.interpolate(torch.tensor(x), scale_factor=(2.0, 3.0), mode="nearest").numpy()
        scales = np.array([1, 1, 2, 3], dtype=np.float32)
        for opset in (9, 10):
            y = infer(opset, [x], lambda o, b, i: o.upsample([i, o.constant(scales)]))
            np.testing.assert_allclose(y, ref)
        y = infer(8, [x], lambda o, b, i: o.upsample([i], scales=[1, 1, 2, 3]))
        np.testing.assert_allclose(y, ref)

    def test_ops_an_opset_lacks_are_refused(self):
        b = popart.Builder(opsets={"ai.onnx": 10, "ai.graphcore": 1})
        x = b.addInputTensor("FLOAT", [2, 2])
        i = b.addInputTensor("INT64", [2, 2])
        with self.assertRaisesRegex(popart.popart_exception,
                                    "ai.onnx opset 10 has no GatherElements op"):
            b.aiOnnx.gatherelements([x, i])
        b = popart.Builder(opsets={"ai.onnx": 7, "ai.graphcore": 1})
        x = b.addInputTensor("FLOAT", [2, 2])
        with self.assertRaisesRegex(popart.popart_exception, "opset 7 has no Expand op"):
            b.aiOnnx.expand([x, x])


class NodeAttributeTest(unittest.TestCase):
    def setUp(self):
        self.b = popart.Builder()
        x = self.b.addInputTensor("FLOAT", [1, 2, 6, 6])
        w = self.b.addInputTensor("FLOAT", [3, 2, 3, 3])
        self.o = self.b.aiOnnx.conv([x, w], strides=[1, 1])
        self.ids = {self.o}

    def test_add_get_remove(self):
        b, ids = self.b, self.ids
        values = {"i": 7, "iv": [1, -2], "f": 0.25, "fv": [0.5, -1.0], "s": "text",
                  "sv": ["a", "b"]}
        for name, v in values.items():
            b.addNodeAttribute(name, v, ids)
        self.assertEqual(b.getInt64NodeAttribute("i", ids), 7)
        self.assertEqual(b.getInt64VectorNodeAttribute("iv", ids), [1, -2])
        self.assertEqual(b.getFloatNodeAttribute("f", ids), 0.25)
        self.assertEqual(b.getFloatVectorNodeAttribute("fv", ids), [0.5, -1.0])
        self.assertEqual(b.getStringNodeAttribute("s", ids), "text")
        self.assertEqual(b.getStringVectorNodeAttribute("sv", ids), ["a", "b"])
        self.assertEqual(b.getInt64VectorNodeAttribute("strides", ids), [1, 1])
        self.assertEqual(set(b.getAllNodeAttributeNames(ids)),
                         set(values) | {"strides", "group"})
        self.assertTrue(b.nodeHasAttribute("s", ids))
        b.removeNodeAttribute("s", ids)
        self.assertFalse(b.nodeHasAttribute("s", ids))

    def test_errors_are_popart_s(self):
        b, ids = self.b, self.ids
        b.addNodeAttribute("f", 1.0, ids)
        cases = [
            (lambda: b.addNodeAttribute("f", 2, ids), "Node already has attribute f."),
            (lambda: b.getFloatNodeAttribute("g", ids), "Node does not have an attribute g."),
            (lambda: b.getInt64NodeAttribute("f", ids), "Attribute f is not an integer."),
            (lambda: b.removeNodeAttribute("g", ids),
             "Cannot remove attribute g as it does not exist."),
        ]
        for call, message in cases:
            with self.assertRaises(popart.popart_exception) as e:
                call()
            self.assertEqual(e.exception.args[0], message)
        with self.assertRaisesRegex(popart.popart_exception,
                                    "Could not find a node with outputs Conv:0 ,nope. Must "):
            b.addNodeAttribute("x", 1, {"nope", self.o})

    def test_attributes_change_the_op(self):
        # PopART's pooling test: count_include_pad replaced on an AveragePool node.
        x = rand(1, 1, 4, 4)

        def avg(o, b, i):
            y = o.averagepool([i], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
            b.removeNodeAttribute("count_include_pad", {y})
            b.addNodeAttribute("count_include_pad", 1, {y})
            return y
        np.testing.assert_allclose(infer(10, [x], avg),
                                   F.avg_pool2d(torch.tensor(x), 3, 1, 1).numpy(), rtol=1e-5)


class ExternalDataTest(unittest.TestCase):
    """Builder.saveInitializersExternally: the data in a file of its own, read back on import."""

    def test_save_and_load(self):
        import os
        import tempfile
        d1 = np.array([1.5, -2.0, 4.0], dtype=np.float32)
        d2 = np.array([3, 5], dtype=np.float16)
        b = popart.Builder()
        w1 = b.addInitializedInputTensor(d1)
        w2 = b.addInitializedInputTensor(np.array([0.5, 0.25, 2.0], dtype=np.float32))
        w3 = b.addInitializedInputTensor(d2)
        o = b.aiOnnx.mul([w1, w2])
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "tensors.bin")
            b.saveInitializersExternally([w1, w3], data)
            with open(data, "rb") as f:
                raw = f.read()
            self.assertEqual(raw, d1.tobytes() + d2.tobytes())
            with self.assertRaisesRegex(popart.popart_exception,
                                        "already has an external data_location"):
                b.saveInitializersExternally([w1], data)
            with self.assertRaisesRegex(popart.popart_exception, "'nope' is not an initializer"):
                b.saveInitializersExternally(["nope"], data)
            with self.assertRaisesRegex(popart.popart_exception,
                                        "parent directory does not exist"):
                b.saveInitializersExternally([w2], os.path.join(tmp, "no", "t.bin"))
            model = os.path.join(tmp, "model.onnx")
            b.saveModelProto(model)
            b2 = popart.Builder(model)
            (y,) = run(b2, [o], {})
            np.testing.assert_allclose(y, d1 * np.array([0.5, 0.25, 2.0], dtype=np.float32))
            os.remove(data)
            with self.assertRaisesRegex(RuntimeError, "doesn't exist or is not accessible"):
                popart.Builder(model)


class ResizeTest(unittest.TestCase):
    """Resize's modes against F.interpolate (PopART's own mode "pytorch" is PyTorch's nearest)."""

    def test_resize_10_is_pytorch_nearest(self):
        for shape, scales in (([1, 1, 5, 3], [2.3, 2.5]), ([1, 1, 5, 3], [0.3, 0.5]),
                              ([1, 1, 2, 8], [1.0, 3 / 8])):
            x = rand(*shape)
            s = np.array([1, 1] + scales, dtype=np.float32)
            y = infer(10, [x], lambda o, b, i: o.resize([i, o.constant(s)]))
            ref = F.interpolate(torch.tensor(x), scale_factor=[float(v) for v in s[2:]],
                                recompute_scale_factor=False)
            np.testing.assert_allclose(y, ref.numpy())

    def test_nearest_mode_as_a_node_attribute(self):
        x = rand(1, 1, 6)
        s = np.array([1, 1, 0.51], dtype=np.float32)

        def build(o, b, i):
            y = o.resize([i, o.constant(s)])
            b.addNodeAttribute("nearest_mode", "round_prefer_floor", {y})
            return y
        # half_pixel, round_prefer_floor: output o reads round((o + 0.5) / 0.51 - 0.5).
        np.testing.assert_allclose(infer(10, [x], build), x[:, :, [0, 2, 4]])

    def test_cubic_and_linear_match_torch(self):
        x = rand(1, 2, 4, 5)
        roi = np.array([], dtype=np.float32)
        for mode, torch_mode, ctm, align in (("cubic", "bicubic", "half_pixel", False),
                                             ("cubic", "bicubic", "align_corners", True),
                                             ("linear", "bilinear", "pytorch_half_pixel", False)):
            s = np.array([1, 1, 2, 3], dtype=np.float32)
            y = infer(11, [x], lambda o, b, i: o.resize(
                [i, o.constant(roi), o.constant(s)], mode=mode,
                coordinate_transformation_mode=ctm))
            ref = F.interpolate(torch.tensor(x), scale_factor=(2, 3), mode=torch_mode,
                                align_corners=align).numpy()
            np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5, err_msg=f"{mode} {ctm}")

    def test_sizes_with_empty_scales(self):
        x = rand(4, 4)
        sizes = np.array([5, 3], dtype=np.int64)
        roi = np.array([], dtype=np.float32)
        y = infer(11, [x], lambda o, b, i: o.resize([i, o.constant(roi), "", o.constant(sizes)]))
        self.assertEqual(y.shape, (5, 3))

    def test_popart_input_types(self):
        # FLOAT16 scales and INT32 sizes (ONNX has FLOAT and INT64 only) are taken, as PopART does.
        x = rand(1, 1, 2, 2)
        s16 = np.array([1, 1, 2, 3], dtype=np.float16)
        y = infer(10, [x], lambda o, b, i: o.resize([i, o.constant(s16)]))
        np.testing.assert_allclose(y, x.repeat(2, axis=2).repeat(3, axis=3))
        roi = np.array([], dtype=np.float32)
        sizes = np.array([1, 1, 3, 5], dtype=np.int32)
        y = infer(11, [x], lambda o, b, i: o.resize(
            [i, o.constant(roi, False), "", o.constant(sizes, False)]))
        self.assertEqual(y.shape, (1, 1, 3, 5))
        b = popart.Builder(opsets={"ai.onnx": 11, "ai.graphcore": 1})
        i = b.addInputTensor("FLOAT", [1, 1, 2, 2])
        with self.assertRaisesRegex(popart.popart_exception,
                                    "^Resize op has inputs for `sizes` and `scales`. Only one"):
            b.aiOnnx.resize([i, b.aiOnnx.constant(roi), b.aiOnnx.constant(s16),
                             b.aiOnnx.constant(sizes.astype(np.int64))])

    def test_cubic_gradient_matches_torch(self):
        x = rand(1, 1, 3, 4)
        g = rand(1, 1, 6, 2)
        b = popart.Builder(opsets={"ai.onnx": 11, "ai.graphcore": 1})
        w = b.addInitializedInputTensor(x)
        gi = b.addInputTensor(popart.TensorInfo(g))
        roi = b.aiOnnx.constant(np.array([], dtype=np.float32))
        s = b.aiOnnx.constant(np.array([1, 1, 2, 0.5], dtype=np.float32))
        y = b.aiOnnx.resize([w, roi, s], mode="cubic",
                            coordinate_transformation_mode="pytorch_half_pixel")
        loss = b.aiGraphcore.identityloss([b.aiOnnx.mul([y, gi])],
                                          reduction=popart.ReductionType.Sum)
        grad = popart.reservedGradientPrefix() + w
        df = popart.DataFlow(1, {grad: popart.AnchorReturnType("All")})
        s = popart.TrainingSession(fnModel=b.getModelProto(), dataFlow=df, loss=loss,
                                   optimizer=popart.ConstSGD(0.0),
                                   deviceInfo=popart.DeviceManager().createCpuDevice())
        s.prepareDevice()
        s.weightsFromHost()
        anchors = s.initAnchorArrays()
        s.run(popart.PyStepIO({gi: g}, anchors))
        t = torch.tensor(x, requires_grad=True)
        (F.interpolate(t, scale_factor=(2, 0.5), mode="bicubic", align_corners=False,
                       recompute_scale_factor=False) * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(anchors[grad], t.grad.numpy(), rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    unittest.main()
