"""The Builder's op methods beyond the first set (ceil ... xor, gru/lstm/rnn, the opset 12-15 ops):
each builds a small model that runs in an InferenceSession and matches a numpy reference; the
differentiable ones also take one SGD step (learning rate 1) whose weight change matches a central
finite difference of the numpy reference. Bad arity and bad attributes raise errors naming the
method."""
import math
import unittest

import numpy as np
import onnx

import xtrain as popart

RNG = np.random.RandomState(7)


def away_from(values, points, gap=0.15):
    """values moved off the given points (kinks, integers) by at least gap."""
    v = values.copy()
    for p in points:
        near = np.abs(v - p) < gap
        v[near] = p + np.where(v[near] >= p, gap, -gap)
    return v.astype(np.float32)


def rand(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def builder(opset):
    return popart.Builder(opsets={"ai.onnx": opset, "ai.graphcore": 1})


def run(b, outs, feeds=None):
    """Runs one inference step of b's model; returns the outputs' values."""
    for o in outs:
        b.addOutputTensor(o)
    df = popart.DataFlow(1, {o: popart.AnchorReturnType("All") for o in outs})
    s = popart.InferenceSession(fnModel=b.getModelProto(), dataFlow=df,
                                deviceInfo=popart.DeviceManager().createCpuDevice())
    s.prepareDevice()
    s.weightsFromHost()
    anchors = s.initAnchorArrays()
    s.run(popart.PyStepIO(feeds or {}, anchors))
    return [anchors[o] for o in outs]


def infer(opset, inputs, build):
    """build(ops, ids) -> output id(s) over stream inputs named as in `inputs` (name: array)."""
    b = builder(opset)
    ids = [b.addInputTensor(popart.TensorInfo(a), name) for name, a in inputs.items()]
    out = build(b.aiOnnx, b, *ids)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    values = run(b, outs, {i: a for i, a in zip(ids, inputs.values())})
    return values if isinstance(out, (list, tuple)) else values[0]


def numeric_grad(f, w, r, h=1e-3):
    """d/dw of sum(f(w) * r), central differences in float64."""
    w = w.astype(np.float64)
    g = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        wp, wm = w.copy(), w.copy()
        wp[i] += h
        wm[i] -= h
        g[i] = (np.sum(f(wp) * r) - np.sum(f(wm) * r)) / (2 * h)
    return g


class OpTest(unittest.TestCase):
    def grad_check(self, opset, w0, build, ref, tol=2e-3):
        """One SGD step (lr 1) on weight w through build(ops, b, w), loss sum(y * r): w moves by
        the numeric gradient of sum(ref(w) * r)."""
        b = builder(opset)
        w = b.addInitializedInputTensor(w0, "w")
        y = build(b.aiOnnx, b, w)
        r_val = RNG.uniform(0.5, 1.5, np.shape(ref(w0.astype(np.float64)))).astype(np.float32)
        r = b.aiOnnx.constant(r_val, "r")
        loss = b.aiGraphcore.identityloss([b.aiOnnx.mul([y, r])],
                                          reduction=popart.ReductionType.Sum)
        b.addOutputTensor(loss)
        s = popart.TrainingSession(fnModel=b.getModelProto(), dataFlow=popart.DataFlow(1, {}),
                                   loss=loss, optimizer=popart.ConstSGD(1.0),
                                   deviceInfo=popart.DeviceManager().createCpuDevice())
        s.prepareDevice()
        s.weightsFromHost()
        s.run(popart.PyStepIO({}, {}))
        s.weightsToHost()
        w1 = np.zeros_like(w0)
        s.readWeights(popart.PyWeightsIO({w: w1}))
        expected = w0 - numeric_grad(ref, w0, r_val.astype(np.float64))
        np.testing.assert_allclose(w1, expected, rtol=tol, atol=tol)

    def unary(self, opset, method, ref, x, grad=True, **kw):
        y = infer(opset, {"x": x}, lambda o, b, i: getattr(o, method)([i], **kw))
        np.testing.assert_allclose(y, ref(x.astype(np.float64)), rtol=1e-5, atol=1e-5,
                                   err_msg=method)
        if grad:
            self.grad_check(opset, x, lambda o, b, w: getattr(o, method)([w], **kw), ref)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


class ElementwiseTest(OpTest):
    def test_unary(self):
        x = away_from(rand(2, 5), [-2, -1, 0, 1, 2])
        erf = np.vectorize(math.erf)
        cases = [
            ("abs", np.abs, {}), ("ceil", np.ceil, {}), ("floor", np.floor, {}),
            ("cos", np.cos, {}),
            ("sin", np.sin, {}), ("erf", erf, {}), ("reciprocal", lambda v: 1 / v, {}),
            ("sign", np.sign, {}), ("softplus", lambda v: np.log1p(np.exp(v)), {}),
            ("softsign", lambda v: v / (1 + np.abs(v)), {}),
            ("elu", lambda v: np.where(v > 0, v, 0.5 * (np.exp(v) - 1)), {"alpha": 0.5}),
            ("leakyrelu", lambda v: np.where(v > 0, v, 0.1 * v), {"alpha": 0.1}),
            ("selu", lambda v: 1.0507 * np.where(v > 0, v, 1.67326 * (np.exp(v) - 1)), {}),
            ("hardsigmoid", lambda v: np.clip(0.3 * v + 0.4, 0, 1), {"alpha": 0.3, "beta": 0.4}),
        ]
        for method, ref, kw in cases:
            with self.subTest(method):
                self.unary(11, method, ref, x, **kw)
        # Defaults as PopART's: elu alpha 1, leakyrelu 0.01, hardsigmoid 0.2/0.5.
        self.unary(13, "elu", lambda v: np.where(v > 0, v, np.exp(v) - 1), x, grad=False)
        self.unary(13, "leakyrelu", lambda v: np.where(v > 0, v, 0.01 * v), x, grad=False)
        self.unary(13, "hardsigmoid", lambda v: np.clip(0.2 * v + 0.5, 0, 1), x, grad=False)

    def test_opset12_and_14_unary(self):
        x = away_from(rand(3, 4, lo=-4, hi=4), [-3, 0, 3])
        celu = lambda v: np.maximum(0, v) + np.minimum(0, 2 * (np.exp(v / 2) - 1))  # noqa: E731
        self.unary(12, "celu", celu, x, alpha=2.0)
        hswish = lambda v: v * np.clip(v / 6 + 0.5, 0, 1)  # noqa: E731
        self.unary(14, "hardswish", hswish, x)
        self.assertFalse(hasattr(builder(11).aiOnnxOpset11, "celu"))
        self.assertFalse(hasattr(builder(13).aiOnnxOpset13, "hardswish"))

    def test_logical_and_comparisons(self):
        a = np.array([[True, False, True], [False, False, True]])
        c = np.array([[True, True, False], [False, True, True]])
        x = rand(2, 3)
        y = x.copy()
        y[0, 0] += 1
        y[1, 1] -= 1

        def build(o, b, xi, yi):
            p = o.constant(a, "p")
            q = o.constant(c, "q")
            return [o.logical_and([p, q]), o.logical_or([p, q]), o.logical_xor([p, q]),
                    o.logical_not([p]), o.equal([xi, yi]), o.greater([xi, yi]), o.less([xi, yi]),
                    o.greaterorequal([xi, yi]), o.lessorequal([xi, yi])]
        outs = infer(12, {"x": x, "y": y}, build)
        refs = [a & c, a | c, a ^ c, ~a, x == y, x > y, x < y, x >= y, x <= y]
        for out, ref in zip(outs, refs):
            np.testing.assert_array_equal(np.asarray(out).astype(bool), ref)

    def test_max_min_prelu_where_clip(self):
        x = rand(2, 3)
        y = rand(2, 3)
        z = rand(3)
        for method, ref in (("max", np.maximum), ("min", np.minimum)):
            out = infer(13, {"x": x, "y": y, "z": z},
                        lambda o, b, i, j, k: getattr(o, method)([i, j, k]))
            np.testing.assert_allclose(out, ref(ref(x, y), z))
            self.grad_check(13, x, lambda o, b, w: getattr(o, method)([w, o.constant(y)]),
                            lambda w: ref(w, y))
        slope = np.array([0.1, 0.2, 0.3], np.float32)
        prelu = lambda v: np.where(v > 0, v, slope * v)  # noqa: E731
        xs = away_from(x, [0])
        np.testing.assert_allclose(infer(13, {"x": xs}, lambda o, b, i: o.prelu(
            [i, o.constant(slope)])), prelu(xs), rtol=1e-6)
        self.grad_check(13, xs, lambda o, b, w: o.prelu([w, o.constant(slope)]), prelu)
        cond = x > 0
        where = lambda v: np.where(cond, v, y)  # noqa: E731
        self.grad_check(13, x, lambda o, b, w: o.where([o.constant(cond), w, o.constant(y)]),
                        where)
        lo, hi = np.array(-0.5, np.float32), np.array(0.7, np.float32)
        xc = away_from(x, [lo, hi])
        clip = lambda v: np.clip(v, lo, hi)  # noqa: E731
        out = infer(11, {"x": xc}, lambda o, b, i: [
            o.clip([i, o.constant(lo), o.constant(hi)]), o.clip([i, "", o.constant(hi)]),
            o.clip([i])])
        np.testing.assert_allclose(out[0], clip(xc))
        np.testing.assert_allclose(out[1], np.minimum(xc, hi))
        np.testing.assert_allclose(out[2], xc)
        self.grad_check(11, xc, lambda o, b, w: o.clip([w, o.constant(lo), o.constant(hi)]), clip)

    def test_mod(self):
        a = np.array([7, -7, 7, -7, 5], np.int64)
        d = np.array([3, 3, -3, -3, 5], np.int64)
        out = infer(13, {}, lambda o, b: o.mod([o.constant(a), o.constant(d)]))
        np.testing.assert_array_equal(out, np.mod(a, d))
        x = rand(2, 3, lo=-5, hi=5)
        out = infer(13, {"x": x}, lambda o, b, i: o.mod([i, o.constant(np.array(1.5, np.float32))], fmod=1))
        np.testing.assert_allclose(out, np.fmod(x, 1.5), rtol=1e-6, atol=1e-6)


class ReduceTest(OpTest):
    def test_reductions(self):
        x = rand(2, 3, 4, lo=0.5, hi=1.5)
        cases = [("reducel1", lambda v, a, k: np.sum(np.abs(v), axis=a, keepdims=k)),
                 ("reducel2", lambda v, a, k: np.sqrt(np.sum(v * v, axis=a, keepdims=k))),
                 ("reducelogsumexp",
                  lambda v, a, k: np.log(np.sum(np.exp(v), axis=a, keepdims=k))),
                 ("reducemax", lambda v, a, k: np.max(v, axis=a, keepdims=k)),
                 ("reducemin", lambda v, a, k: np.min(v, axis=a, keepdims=k)),
                 ("reduceprod", lambda v, a, k: np.prod(v, axis=a, keepdims=k)),
                 ("reducesumsquare", lambda v, a, k: np.sum(v * v, axis=a, keepdims=k))]
        for method, ref in cases:
            for opset in (11, 13, 17):
                with self.subTest(method=method, opset=opset):
                    out = infer(opset, {"x": x}, lambda o, b, i: [
                        getattr(o, method)([i], axes=[1, -1], keepdims=0),
                        getattr(o, method)([i]),
                        getattr(o, method)([i], axes=[], keepdims=0)])
                    np.testing.assert_allclose(out[0], ref(x, (1, 2), False), rtol=1e-5)
                    np.testing.assert_allclose(out[1], ref(x, None, True), rtol=1e-5)
                    # axes=[] (not None) reduces nothing, as in PopART.
                    np.testing.assert_allclose(out[2], ref(x, (), False), rtol=1e-5)
            self.grad_check(13, x, lambda o, b, w: getattr(o, method)([w], axes=[1]),
                            lambda w: ref(w, 1, True))

    def test_argmax_argmin_cumsum(self):
        x = rand(3, 4)
        out = infer(11, {"x": x}, lambda o, b, i: [o.argmax([i], axis=1, keepdims=0),
                                                   o.argmin([i]), o.argmax([i])])
        np.testing.assert_array_equal(out[0], np.argmax(x, 1))
        np.testing.assert_array_equal(out[1], np.argmin(x, 0)[None, :])
        np.testing.assert_array_equal(out[2], np.argmax(x, 0)[None, :])

        def cumsum(v, exclusive, reverse):
            v = v[:, ::-1] if reverse else v
            c = np.cumsum(v, axis=1)
            if exclusive:
                c = np.concatenate([np.zeros_like(c[:, :1]), c[:, :-1]], axis=1)
            return c[:, ::-1] if reverse else c
        for exclusive in (0, 1):
            for reverse in (0, 1):
                build = lambda o, b, i: o.cumsum(  # noqa: E731
                    [i, o.constant(np.array(1, np.int64))], exclusive=exclusive, reverse=reverse)
                np.testing.assert_allclose(infer(11, {"x": x}, build),
                                           cumsum(x, exclusive, reverse), rtol=1e-5, atol=1e-6)
        self.grad_check(11, x, lambda o, b, w: o.cumsum([w, o.constant(np.array(1, np.int64))], reverse=1),
                        lambda w: cumsum(w, 0, 1))

    def test_topk_onehot(self):
        x = rand(3, 5)
        k = np.array([2], np.int64)
        vals, idx = infer(11, {"x": x}, lambda o, b, i: o.topk([i, o.constant(k)], axis=1))
        order = np.argsort(-x, axis=1)[:, :2]
        np.testing.assert_array_equal(idx, order)
        np.testing.assert_allclose(vals, np.take_along_axis(x, order, 1))
        vals, idx = infer(11, {"x": x}, lambda o, b, i: o.topk([i, o.constant(k)], axis=0,
                                                                largest=0))
        np.testing.assert_array_equal(idx, np.argsort(x, axis=0)[:2])
        self.grad_check(11, x, lambda o, b, w: o.topk([w, o.constant(k)], axis=1)[0],
                        lambda w: np.take_along_axis(w, np.argsort(-w, axis=1)[:, :2], 1))
        ind = np.array([0, 2, 1, 3], np.int64)

        def build(o, b):
            return o.onehot([o.constant(ind), o.constant(np.array(4, np.int64)),
                             o.constant(np.array([-1.0, 2.0], np.float32))], axis=0)
        out = infer(11, {}, build)
        ref = np.full((4, 4), -1.0, np.float32)
        ref[ind, np.arange(4)] = 2.0
        np.testing.assert_allclose(out, ref)
        out = infer(11, {}, lambda o, b: o.onehot([o.constant(ind), o.constant(np.array(4, np.int64)),
                                                   o.constant(np.array([0, 1], np.float32))]))
        np.testing.assert_allclose(out, np.eye(4, dtype=np.float32)[ind])


class IndexingTest(OpTest):
    def test_gathers(self):
        x = rand(3, 4)
        ind = np.array([[0, 2, 1, 0], [2, 1, 0, 0]], np.int64)
        ref = lambda w: np.take_along_axis(w, ind, 0)  # noqa: E731
        np.testing.assert_allclose(infer(11, {"x": x}, lambda o, b, i: o.gatherelements(
            [i, o.constant(ind)])), ref(x))
        self.grad_check(11, x, lambda o, b, w: o.gatherelements([w, o.constant(ind)]), ref)
        nd = np.array([[1, 2], [0, 3], [2, 0]], np.int64)
        ref = lambda w: w[nd[:, 0], nd[:, 1]]  # noqa: E731
        np.testing.assert_allclose(infer(11, {"x": x}, lambda o, b, i: o.gathernd(
            [i, o.constant(nd)])), ref(x))
        self.grad_check(11, x, lambda o, b, w: o.gathernd([w, o.constant(nd)]), ref)

    def test_scatters(self):
        x = rand(3, 4)
        ind = np.array([[2, 0, 1, 1]], np.int64)
        upd = rand(1, 4)

        def scatter_ref(w):
            out = w.copy()
            for j in range(4):
                out[ind[0, j], j] = upd[0, j]
            return out
        for method in ("scatter", "scatterelements"):
            build = lambda o, b, w: getattr(o, method)(  # noqa: E731
                [w, o.constant(ind), o.constant(upd)], axis=0)
            np.testing.assert_allclose(infer(11, {"x": x}, build), scatter_ref(x))
            self.grad_check(11, x, build, scatter_ref)
        nd = np.array([[2], [0]], np.int64)
        rows = rand(2, 4)

        def nd_ref(w):
            out = w.copy()
            out[2], out[0] = rows[0], rows[1]
            return out
        build = lambda o, b, w: o.scatternd([w, o.constant(nd), o.constant(rows)])  # noqa: E731
        np.testing.assert_allclose(infer(11, {"x": x}, build), nd_ref(x))
        self.grad_check(11, x, build, nd_ref)
        model = onnx.load_from_string(self.scatter_model())
        self.assertEqual([n.op_type for n in model.graph.node if n.op_type.startswith("Scatter")],
                         ["ScatterElements"])

    def scatter_model(self):
        b = builder(11)
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 2]))
        i = b.aiOnnx.constant(np.zeros((1, 2), np.int64))
        b.addOutputTensor(b.aiOnnx.scatter([x, i, x], axis=1))
        return b.getModelProto()


class ShapeOpsTest(OpTest):
    def test_shape_size_expand_tile_range(self):
        x = rand(2, 1, 3)
        out = infer(13, {"x": x}, lambda o, b, i: [
            o.shape([i]), o.size([i]), o.expand([i, o.constant(np.array([4, 3], np.int64))]),
            o.tile([i, o.constant(np.array([1, 2, 2], np.int64))]),
            o.range([o.constant(np.array(1, np.float32)), o.constant(np.array(3, np.float32)),
                     o.constant(np.array(0.5, np.float32))])])
        np.testing.assert_array_equal(out[0], [2, 1, 3])
        self.assertEqual(int(out[1]), 6)
        np.testing.assert_allclose(out[2], x * np.ones((2, 4, 3), np.float32))
        np.testing.assert_allclose(out[3], np.tile(x, (1, 2, 2)))
        np.testing.assert_allclose(out[4], np.arange(1, 3, 0.5))
        self.grad_check(13, x, lambda o, b, w: o.expand(
            [w, o.constant(np.array([4, 3], np.int64))]), lambda w: w * np.ones((2, 4, 3)))
        self.grad_check(13, x, lambda o, b, w: o.tile(
            [w, o.constant(np.array([1, 2, 2], np.int64))]), lambda w: np.tile(w, (1, 2, 2)))
        out = infer(15, {"x": x}, lambda o, b, i: [o.shape([i], start=1), o.shape([i], 0, -1),
                                                   o.shape([i])])
        np.testing.assert_array_equal(out[0], [1, 3])
        np.testing.assert_array_equal(out[1], [2, 1])
        np.testing.assert_array_equal(out[2], [2, 1, 3])

    def test_constantofshape_castlike(self):
        out = infer(11, {}, lambda o, b: [
            o.constantofshape([o.constant(np.array([2, 3], np.int64))],
                              np.array([1.5], np.float32)),
            o.constantofshape([o.constant(np.array([2], np.int64))], np.array([7], np.int32))])
        np.testing.assert_allclose(out[0], np.full((2, 3), 1.5, np.float32))
        np.testing.assert_array_equal(out[1], [7, 7])
        self.assertEqual(out[1].dtype, np.int32)
        x = rand(2, 3, lo=-5, hi=5)
        out = infer(15, {"x": x}, lambda o, b, i: o.castlike(
            [i, o.constant(np.array([1], np.int32))]))
        self.assertEqual(out.dtype, np.int32)
        np.testing.assert_array_equal(out, x.astype(np.int32))
        with self.assertRaisesRegex(Exception, "constantofshape.*one element"):
            builder(11).aiOnnx.constantofshape(["s"], np.array([1.0, 2.0], np.float32))

    def test_pad(self):
        x = rand(2, 3)
        pads = np.array([1, 0, 0, 2], np.int64)
        for mode, np_mode in (("constant", "constant"), ("reflect", "reflect"), ("edge", "edge")):
            ref = lambda w: np.pad(w, ((1, 0), (0, 2)), mode=np_mode)  # noqa: E731
            build = lambda o, b, w: o.pad([w, o.constant(pads)], mode=mode)  # noqa: E731
            np.testing.assert_allclose(infer(11, {"x": x}, build), ref(x))
            self.grad_check(11, x, build, ref)
        out = infer(13, {"x": x}, lambda o, b, i: o.pad(
            [i, o.constant(pads), o.constant(np.array(9, np.float32))]))
        np.testing.assert_allclose(out, np.pad(x, ((1, 0), (0, 2)), constant_values=9))
        # Pad-2's form (pads and value as attributes) is opset 10's and earlier's only, as in
        # PopART: AiOnnxOpset11 and later take them as inputs (test_builder_legacy_opsets.py).
        with self.assertRaises(TypeError):
            builder(13).aiOnnx.pad(["x"], pads=[1, 0, 0, 2], mode="constant", value=-1.0)

    def test_reducesum_reducemean_no_axes(self):
        x = rand(2, 3)
        out = infer(13, {"x": x}, lambda o, b, i: [o.reducesum([i], axes=[]),
                                                   o.reducemean([i], axes=[], keepdims=0),
                                                   o.reducesum([i], keepdims=0)])
        np.testing.assert_allclose(out[0], x)
        np.testing.assert_allclose(out[1], x)
        np.testing.assert_allclose(out[2], x.sum(), rtol=1e-6)

    def test_trilu(self):
        x = rand(3, 4)
        out = infer(14, {"x": x}, lambda o, b, i: [
            o.trilu([i]), o.trilu([i, o.constant(np.array(1, np.int64))], upper=0)])
        np.testing.assert_allclose(out[0], np.triu(x))
        np.testing.assert_allclose(out[1], np.tril(x, 1))
        self.grad_check(14, x, lambda o, b, w: o.trilu([w], upper=0), np.tril)

    def test_resize_upsample(self):
        x = rand(1, 1, 2, 3)
        scales = np.array([1, 1, 2, 2], np.float32)
        nearest = x.repeat(2, axis=2).repeat(2, axis=3)
        for opset in (11, 13):
            out = infer(opset, {"x": x}, lambda o, b, i: [
                o.resize([i, o.constant(np.zeros(0, np.float32)), o.constant(scales)]),
                o.upsample([i, o.constant(scales)])])
            np.testing.assert_allclose(out[0], nearest)
            np.testing.assert_allclose(out[1], nearest)
        out = infer(13, {"x": x}, lambda o, b, i: o.resize(
            [i, "", "", o.constant(np.array([1, 1, 4, 6], np.int64))], mode="linear",
            coordinate_transformation_mode="align_corners"))
        # align_corners: the corners keep their values, the rest interpolate between them.
        np.testing.assert_allclose(out[0, 0, [0, 0, -1, -1], [0, -1, 0, -1]],
                                   x[0, 0, [0, 0, -1, -1], [0, -1, 0, -1]], rtol=1e-6)
        np.testing.assert_allclose(out[0, 0, 0, 1], x[0, 0, 0, 0] * 0.6 + x[0, 0, 0, 1] * 0.4,
                                   rtol=1e-5)
        up = infer(13, {"x": x}, lambda o, b, i: o.upsample([i, o.constant(scales)], "linear"))
        # asymmetric linear: out[j] = x[j / 2] interpolated, the last column clamped.
        np.testing.assert_allclose(up[0, 0, 0, 1], (x[0, 0, 0, 0] + x[0, 0, 0, 1]) / 2, rtol=1e-5)
        self.grad_check(13, x, lambda o, b, w: o.upsample([w, o.constant(scales)]),
                        lambda w: w.repeat(2, axis=2).repeat(2, axis=3))


class LayersTest(OpTest):
    def test_convtranspose(self):
        x = rand(1, 2, 3, 3)
        w = rand(2, 3, 2, 2)

        def ref(v, stride=2):
            out = np.zeros((1, 3, (3 - 1) * stride + 2, (3 - 1) * stride + 2))
            for c in range(2):
                for i in range(3):
                    for j in range(3):
                        out[0, :, i * stride:i * stride + 2, j * stride:j * stride + 2] += \
                            v[0, c, i, j] * w[c]
            return out
        out = infer(11, {"x": x}, lambda o, b, i: o.convtranspose([i, o.constant(w)],
                                                                   strides=[2, 2]))
        np.testing.assert_allclose(out, ref(x), rtol=1e-5, atol=1e-5)
        self.grad_check(11, x, lambda o, b, v: o.convtranspose([v, o.constant(w)],
                                                               strides=[2, 2]), ref)

    def test_instancenormalization(self):
        x = rand(2, 3, 4)
        scale = rand(3)
        bias = rand(3)

        def ref(v):
            m = v.mean(axis=2, keepdims=True)
            var = v.var(axis=2, keepdims=True)
            return (v - m) / np.sqrt(var + 1e-3) * scale[:, None] + bias[:, None]
        build = lambda o, b, v: o.instancenormalization(  # noqa: E731
            [v, o.constant(scale), o.constant(bias)], epsilon=1e-3)
        np.testing.assert_allclose(infer(11, {"x": x}, build), ref(x), rtol=1e-4, atol=1e-5)
        self.grad_check(11, x, build, ref)

    def test_einsum_nll(self):
        a = rand(2, 3)
        c = rand(3, 4)
        out = infer(12, {"a": a}, lambda o, b, i: o.einsum([i, o.constant(c)], "ij,jk->ik"))
        np.testing.assert_allclose(out, a @ c, rtol=1e-5)
        self.grad_check(12, a, lambda o, b, w: o.einsum([w, o.constant(c)], equation="ij,jk->ik"),
                        lambda w: w @ c)
        logp = rand(4, 3)
        t = np.array([0, 2, 1, 2], np.int64)
        out = infer(12, {"x": logp}, lambda o, b, i: [
            o.negativeloglikelihoodloss([i, o.constant(t)]),
            o.negativeloglikelihoodloss([i, o.constant(t)], ignore_index=2, reduction="sum"),
            o.negativeloglikelihoodloss([i, o.constant(t)], reduction="none")])
        picked = -logp[np.arange(4), t]
        np.testing.assert_allclose(out[0], picked.mean(), rtol=1e-6)
        np.testing.assert_allclose(out[1], picked[t != 2].sum(), rtol=1e-6)
        np.testing.assert_allclose(out[2], picked, rtol=1e-6)
        self.grad_check(12, logp, lambda o, b, w: o.negativeloglikelihoodloss(
            [w, o.constant(t)]), lambda w: -w[np.arange(4), t].mean())


def rnn_ref(kind, x, w, r, bias, hidden):
    """ONNX RNN/GRU/LSTM, forward, default activations, zero initial state: (Y, Y_h[, Y_c])."""
    seq, batch, _ = x.shape
    h = np.zeros((batch, hidden))
    c = np.zeros((batch, hidden))
    n = {"rnn": 1, "gru": 3, "lstm": 4}[kind]
    wb, rb = bias[0, :n * hidden], bias[0, n * hidden:]
    ys = []
    for t in range(seq):
        xw = x[t] @ w[0].T + wb
        hr = h @ r[0].T + rb
        if kind == "rnn":
            h = np.tanh(xw + hr)
        elif kind == "gru":
            s = slice(0, hidden), slice(hidden, 2 * hidden), slice(2 * hidden, 3 * hidden)
            z = sigmoid(xw[:, s[0]] + hr[:, s[0]])
            rr = sigmoid(xw[:, s[1]] + hr[:, s[1]])
            hh = np.tanh(xw[:, s[2]] + (rr * h) @ r[0][s[2]].T + rb[s[2]])
            h = (1 - z) * hh + z * h
        else:
            g = xw + hr
            i, o, f, cc = (g[:, k * hidden:(k + 1) * hidden] for k in range(4))
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(cc)
            h = sigmoid(o) * np.tanh(c)
        ys.append(h)
    y = np.stack(ys)[:, None]
    return (y, h[None], c[None]) if kind == "lstm" else (y, h[None])


class RecurrentTest(OpTest):
    def test_rnn_gru_lstm(self):
        seq, batch, inp, hid = 3, 2, 4, 3
        x = rand(seq, batch, inp, lo=-1, hi=1)
        for kind, n in (("rnn", 1), ("gru", 3), ("lstm", 4)):
            with self.subTest(kind):
                w = rand(1, n * hid, inp, lo=-0.5, hi=0.5)
                r = rand(1, n * hid, hid, lo=-0.5, hi=0.5)
                bias = rand(1, 2 * n * hid, lo=-0.5, hi=0.5)
                nout = 3 if kind == "lstm" else 2

                def build(o, b, xi, kind=kind, w=w, r=r, bias=bias, nout=nout):
                    return getattr(o, kind)([xi, o.constant(w), o.constant(r), o.constant(bias)],
                                            nout, hidden_size=hid)
                outs = infer(13, {"x": x}, build)
                for out, ref in zip(outs, rnn_ref(kind, x.astype(np.float64), w, r, bias, hid)):
                    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
                self.grad_check(13, x, lambda o, b, v, build=build: build(o, b, v)[0],
                                lambda v, kind=kind, w=w, r=r, bias=bias: rnn_ref(
                                    kind, v, w, r, bias, hid)[0])


class SignatureAndErrorTest(unittest.TestCase):
    def test_keywords_and_defaults_match_popart(self):
        o = builder(11).aiOnnxOpset11
        self.assertIn("num_outputs", o.gru.__doc__)
        for method, words in (("topk", ["axis: int = -1", "largest: int = 1", "sorted: int = 1"]),
                              ("resize", ["coordinate_transformation_mode: str = 'half_pixel'",
                                          "nearest_mode: str = 'round_prefer_floor'"]),
                              ("lstm", ["input_forget: int = 0", "direction: str = 'forward'"]),
                              ("selu", ["gamma: float = 1.05"]),
                              ("reducemax", ["axes: Optional[List[int]] = None"])):
            doc = getattr(o, method).__doc__
            for w in words:
                self.assertIn(w, doc, method)

    def test_node_attributes(self):
        b = builder(13)
        o = b.aiOnnx
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3, 4]), "x")
        y = o.lstm([x, x, x], 1, clip=2.0, hidden_size=5, input_forget=1,
                   activations=["Sigmoid", "Tanh", "Tanh"])[0]
        m = onnx.load_from_string(b.getModelProto())
        node = [n for n in m.graph.node if y in n.output][0]
        a = {t.name: onnx.helper.get_attribute_value(t) for t in node.attribute}
        self.assertEqual(a["hidden_size"], 5)
        self.assertAlmostEqual(a["clip"], 2.0)
        self.assertEqual(a["input_forget"], 1)
        self.assertNotIn("direction", a)  # PopART's: "forward", the default, is left out
        self.assertEqual(a["activations"], [b"Sigmoid", b"Tanh", b"Tanh"])
        self.assertNotIn("activation_alpha", a)

    def test_bad_arity_and_attributes(self):
        b = builder(14)
        o = b.aiOnnx
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]), "x")
        cases = [
            (lambda: o.sin([x, x]), "sin takes 1 input tensors, got 2"),
            (lambda: o.where([x, x]), "where takes 3 input tensors, got 2"),
            (lambda: o.logical_and([x]), "logical_and takes 2 input tensors"),
            (lambda: o.topk([x]), "topk takes 2 input tensors"),
            (lambda: o.pad([x, x], mode="wrap"), "pad: mode 'wrap' is not one of"),
            (lambda: o.resize([x, "", ""], mode="bicubic"), "resize: mode 'bicubic'"),
            (lambda: o.gru([x, x, x], 3), "gru has an invalid number of outputs: 3"),
            (lambda: o.rnn([x, x, x], 1, direction="sideways"), "direction 'sideways'"),
            (lambda: o.mod([x, x], fmod=2), "fmod must be 0 or 1"),
            (lambda: o.trilu([x], upper=3), "upper must be 0 or 1"),
            (lambda: o.einsum([x], ""), "einsum needs an equation"),
            (lambda: o.negativeloglikelihoodloss([x, x], reduction="avg"), "reduction 'avg'"),
            (lambda: o.cos(["nope"]), "nope"),
        ]
        for call, message in cases:
            with self.subTest(message):
                with self.assertRaisesRegex(Exception, message):
                    call()
        with self.assertRaises(TypeError):
            o.argmax([x], axis="1")

    def test_l1loss(self):
        b = builder(13)
        w0 = rand(2, 3)
        w = b.addInitializedInputTensor(w0, "w")
        loss = b.aiGraphcore.l1loss([w], 0.5, reduction=popart.ReductionType.Sum)
        self.assertAlmostEqual(float(run(b, [loss])[0]), 0.5 * float(np.abs(w0).sum()), places=5)


if __name__ == "__main__":
    unittest.main()
