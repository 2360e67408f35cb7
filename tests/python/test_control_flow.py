"""Subgraphs and control flow: Builder.createSubgraphBuilder with aiGraphcore.call, aiOnnx.logical_if,
aiOnnx.loop and aiOnnx.scan. Each model runs in an InferenceSession against a numpy reference; the
gradients (anchored as Gradient___<id> in a TrainingSession) match central finite differences of
that reference. getModelProto keeps the subgraphs as graph attributes and round-trips through
Builder(modelProto). A torch.onnx-exported nn.EmbeddingBag (a Loop) matches torch."""
import io
import unittest

import numpy as np
import onnx

import xtrain as popart

RNG = np.random.RandomState(11)
GRAD = popart.reservedGradientPrefix()


def session(b, outs, train_loss=None, weights_lr=0.0):
    """An inference session, or with train_loss a training session (SGD at weights_lr)."""
    df = popart.DataFlow(1, {o: popart.AnchorReturnType("All") for o in outs})
    dev = popart.DeviceManager().createCpuDevice()
    if train_loss is None:
        return popart.InferenceSession(fnModel=b.getModelProto(), dataFlow=df, deviceInfo=dev)
    return popart.TrainingSession(fnModel=b.getModelProto(), dataFlow=df, deviceInfo=dev,
                                  loss=train_loss, optimizer=popart.ConstSGD(weights_lr))


def run(s, feeds):
    s.prepareDevice()
    s.weightsFromHost()
    anchors = s.initAnchorArrays()
    s.run(popart.PyStepIO(feeds, anchors))
    return anchors


def numeric_grad(f, x, h=1e-3):
    """d sum(f(x)) / dx by central differences in float64."""
    x = x.astype(np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        g[i] = (np.sum(f(xp)) - np.sum(f(xm))) / (2 * h)
    return g


class ControlFlowTest(unittest.TestCase):
    def check_grads(self, build, ref, inputs, tol=2e-3):
        """build(b, *ids) -> output y; the loss is sum(y): each input's anchored gradient equals the
        finite difference of sum(ref(*inputs)) and y equals ref."""
        b = popart.Builder()
        ids = [b.addInputTensor(popart.TensorInfo(a), "x%d" % k) for k, a in enumerate(inputs)]
        y = build(b, *ids)
        loss = b.aiGraphcore.identityloss([y], reduction=popart.ReductionType.Sum)
        b.addOutputTensor(loss)
        outs = [y] + [GRAD + i for i in ids]
        anchors = run(session(b, outs, train_loss=loss), dict(zip(ids, inputs)))
        np.testing.assert_allclose(anchors[y], ref(*inputs), rtol=1e-5, atol=1e-5)
        for k, (i, a) in enumerate(zip(ids, inputs)):
            def f(x, k=k):
                args = list(inputs)
                args[k] = x
                return ref(*args)
            np.testing.assert_allclose(anchors[GRAD + i], numeric_grad(f, a), rtol=tol, atol=tol,
                                       err_msg="gradient of input %d" % k)

    # ---- Call

    def test_call_twice_forward_and_gradient(self):
        def build(b, x0, x1, x2):
            sg = b.createSubgraphBuilder()
            a, c = sg.addUntypedInputTensor(), sg.addUntypedInputTensor()
            sg.addOutputTensor(sg.aiOnnx.tanh([sg.aiOnnx.matmul([a, c])]))
            h = b.aiGraphcore.call([x0, x1], 1, sg)[0]
            return b.aiGraphcore.call([h, x2], 1, sg)[0]

        def ref(x0, x1, x2):
            return np.tanh(np.tanh(x0 @ x1) @ x2)

        self.check_grads(build, ref, [RNG.randn(3, 3).astype(np.float32) * 0.5 for _ in range(3)])

    def test_nested_calls_and_parent_tensors(self):
        d = np.array([1.0, -2.0, 3.0], np.float32)
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo(d))
        k = b.aiOnnx.constant(np.array([10.0, 20.0, 30.0], np.float32))
        inner = b.createSubgraphBuilder()
        i0 = inner.addUntypedInputTensor()
        inner.addOutputTensor(inner.aiOnnx.add([i0, k]))  # k: a tensor of the main graph
        outer = b.createSubgraphBuilder()
        outer.addInputTensorFromParentGraph(x)
        outer.addOutputTensor(outer.aiGraphcore.scale([outer.aiGraphcore.call([x], 1, inner)[0]], 2.0))
        y = b.aiGraphcore.call([x], 1, outer)[0]
        self.assertEqual(b.getTensorShape(y), [3])
        b.addOutputTensor(y)
        out = run(session(b, [y]), {x: d})[y]
        np.testing.assert_allclose(out, 2 * (d + [10, 20, 30]))

    def test_call_inlines_the_shape_given(self):
        """A callee input declared with another shape (PopART does not check it) takes the shape
        the call gives; another element type is still an error."""
        d = RNG.randn(2, 1).astype(np.float32)
        for declared, ok in (("FLOAT", True), ("INT32", False)):
            b = popart.Builder()
            x = b.addInputTensor(popart.TensorInfo(d))
            sg = b.createSubgraphBuilder()
            i0 = sg.addInputTensor(popart.TensorInfo(declared, [2, 5]))
            sg.addOutputTensor(sg.aiOnnx.add([i0, i0]))
            y = b.aiGraphcore.call([x], 1, sg)[0]
            b.addOutputTensor(y)
            if ok:
                np.testing.assert_allclose(run(session(b, [y]), {x: d})[y], 2 * d)
            else:
                with self.assertRaisesRegex(popart.popart_exception, "element type"):
                    session(b, [y])

    def test_call_count_mismatch_errors(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]))
        sg = b.createSubgraphBuilder()
        sg.addOutputTensor(sg.aiGraphcore.scale([sg.addUntypedInputTensor()], 2.0))
        with self.assertRaises(popart.popart_exception) as e:
            b.aiGraphcore.call([x], 2, sg, "c")
        self.assertEqual(str(e.exception), "For CallOp 'c', number of outputs (2) does not match "
                         "that of the callee subgraph (1)")
        with self.assertRaises(popart.popart_exception) as e:
            b.aiGraphcore.call([x, x], 1, sg)
        self.assertIn("number of inputs (2)", str(e.exception))
        with self.assertRaises(popart.popart_exception):
            b.addUntypedInputTensor()  # only subgraphs have untyped inputs
        with self.assertRaises(popart.popart_exception):
            sg.addInputTensorFromParentGraph("no-such-tensor")
        with self.assertRaises(TypeError):
            b.aiGraphcore.call([x], 1, "not a builder")

    # ---- If

    def if_model(self, cond_value=None):
        """y = then: x * 3 + w | else: x - w, on a constant or a streamed condition."""
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [4]), "x")
        w = b.addInitializedInputTensor(np.full([4], 0.5, np.float32), "w")
        if cond_value is None:
            c = b.addInputTensor(popart.TensorInfo("BOOL", []), "c")
        else:
            c = b.aiOnnx.constant(np.array(cond_value), "c")
        then_b, else_b = b.createSubgraphBuilder(), b.createSubgraphBuilder()
        three = then_b.aiOnnx.constant(np.array([3.0], np.float32))
        then_b.addOutputTensor(then_b.aiOnnx.add([then_b.aiOnnx.mul([x, three]), w]))
        else_b.addOutputTensor(else_b.aiOnnx.sub([x, w]))
        y = b.aiOnnx.logical_if([c], 1, else_b, then_b)[0]
        return b, x, w, c, y

    def test_if_constant_and_runtime_condition(self):
        xv = RNG.randn(4).astype(np.float32)
        for cond in (True, False):
            b, x, _, _, y = self.if_model(cond)
            b.addOutputTensor(y)
            out = run(session(b, [y]), {x: xv})[y]
            np.testing.assert_allclose(out, xv * 3 + 0.5 if cond else xv - 0.5, rtol=1e-6)
            b, x, w, c, y = self.if_model(None)
            loss = b.aiGraphcore.identityloss([y], reduction=popart.ReductionType.Sum)
            anchors = run(session(b, [y, GRAD + x, GRAD + w], train_loss=loss),
                          {x: xv, c: np.array(cond)})
            np.testing.assert_allclose(anchors[y], xv * 3 + 0.5 if cond else xv - 0.5, rtol=1e-6)
            np.testing.assert_allclose(anchors[GRAD + x], np.full(4, 3.0 if cond else 1.0))
            np.testing.assert_allclose(anchors[GRAD + w], np.full(4, 1.0 if cond else -1.0))

    def test_if_branches_declaring_parent_inputs(self):
        """Branches that declare the enclosing graph's tensors as inputs
        (addInputTensorFromParentGraph), as PopART's Builder writes them, bind them by name."""
        xv = RNG.randn(3).astype(np.float32)
        wv = RNG.randn(3).astype(np.float32)
        for runtime in (False, True):
            for cond in (True, False):
                b = popart.Builder()
                x = b.addInputTensor(popart.TensorInfo("FLOAT", [3]), "x")
                w = b.addInputTensor(popart.TensorInfo("FLOAT", [3]), "w")
                c = (b.addInputTensor(popart.TensorInfo("BOOL", []), "c") if runtime
                     else b.aiOnnx.constant(np.array(cond), "c"))
                then_b, else_b = b.createSubgraphBuilder(), b.createSubgraphBuilder()
                for sub in (then_b, else_b):
                    sub.addInputTensorFromParentGraph(x)
                    sub.addInputTensorFromParentGraph(w)
                then_b.addOutputTensor(then_b.aiOnnx.add([x, w]))
                else_b.addOutputTensor(else_b.aiOnnx.sub([x, w]))
                y = b.aiOnnx.logical_if([c], 1, else_b, then_b)[0]
                b.addOutputTensor(y)
                feeds = {x: xv, w: wv}
                if runtime:
                    feeds[c] = np.array(cond)
                out = run(session(b, [y]), feeds)[y]
                np.testing.assert_allclose(out, xv + wv if cond else xv - wv, rtol=1e-6)

    # ---- Loop

    def loop_model(self, trip, stop_at=None):
        """x <- x * b + 1 for trip iterations (or while x < stop_at), scanning each x."""
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
        s = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "s")
        m = b.aiOnnx.constant(np.array(trip, np.int64), "M")
        cond = b.aiOnnx.constant(np.array(True), "cond")
        body = b.createSubgraphBuilder()
        body.addInputTensor(popart.TensorInfo("INT64", []))
        keep = body.addInputTensor(popart.TensorInfo("BOOL", []))
        xi = body.addUntypedInputTensor("x_in")
        one = body.aiOnnx.constant(np.array([1.0], np.float32))
        xo = body.aiOnnx.add([body.aiOnnx.mul([xi, s]), one])
        if stop_at is not None:
            limit = body.aiOnnx.constant(np.array(stop_at, np.float32))
            keep = body.aiOnnx.less([body.aiOnnx.reducemax([xo], keepdims=0), limit])
        body.addOutputTensor(keep)
        body.addOutputTensor(xo)
        if stop_at is None:
            body.addOutputTensor(xo)
            y, scanned = b.aiOnnx.loop([m, cond, x], 2, body)
            return b, x, s, y, scanned
        return b, x, s, b.aiOnnx.loop([m, cond, x], 1, body)[0], None

    def test_loop_fixed_trip_count_forward_and_gradient(self):
        xv = np.array([0.5, -1.0], np.float32)
        sv = np.array([0.9, 1.1], np.float32)

        def ref(xv, sv, n=5):
            rows = []
            for _ in range(n):
                xv = xv * sv + 1
                rows.append(xv)
            return xv, np.stack(rows)

        b, x, s, y, scanned = self.loop_model(5)
        b.addOutputTensor(y)
        b.addOutputTensor(scanned)
        anchors = run(session(b, [y, scanned]), {x: xv, s: sv})
        np.testing.assert_allclose(anchors[y], ref(xv, sv)[0], rtol=1e-6)
        np.testing.assert_allclose(anchors[scanned], ref(xv, sv)[1], rtol=1e-6)
        self.assertEqual(anchors[scanned].shape, (5, 2))

        b, x, s, y, _ = self.loop_model(5)
        loss = b.aiGraphcore.identityloss([y], reduction=popart.ReductionType.Sum)
        anchors = run(session(b, [GRAD + x, GRAD + s], train_loss=loss), {x: xv, s: sv})
        np.testing.assert_allclose(anchors[GRAD + x], numeric_grad(lambda v: ref(v, sv)[0], xv),
                                   rtol=2e-3)
        np.testing.assert_allclose(anchors[GRAD + s], numeric_grad(lambda v: ref(xv, v)[0], sv),
                                   rtol=2e-3)

    def test_loop_stops_on_a_runtime_condition(self):
        def ref(xv, sv, n=10, stop=20.0):
            for _ in range(n):
                xv = xv * sv + 1
                if not xv.max() < stop:
                    break
            return xv

        for xv in (np.array([1.0, 0.5], np.float32), np.array([30.0, 0.0], np.float32)):
            sv = np.array([2.0, 1.5], np.float32)
            b, x, s, y, _ = self.loop_model(10, stop_at=20.0)
            b.addOutputTensor(y)
            out = run(session(b, [y]), {x: xv, s: sv})[y]
            np.testing.assert_allclose(out, ref(xv, sv), rtol=1e-6)
            b, x, s, y, _ = self.loop_model(10, stop_at=20.0)
            loss = b.aiGraphcore.identityloss([y], reduction=popart.ReductionType.Sum)
            anchors = run(session(b, [GRAD + x], train_loss=loss), {x: xv, s: sv})
            np.testing.assert_allclose(anchors[GRAD + x],
                                       numeric_grad(lambda v: ref(v, sv), xv), rtol=2e-3)

    def test_loop_trip_count_known_only_at_run_time_is_refused(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
        m = b.addInputTensor(popart.TensorInfo("INT64", []), "m")
        cond = b.aiOnnx.constant(np.array(True), "cond")
        body = b.createSubgraphBuilder()
        body.addInputTensor(popart.TensorInfo("INT64", []))
        keep = body.addInputTensor(popart.TensorInfo("BOOL", []))
        body.addOutputTensor(keep)
        body.addOutputTensor(body.aiOnnx.neg([body.addUntypedInputTensor()]))
        y = b.aiOnnx.loop([m, cond, x], 1, body)[0]
        b.addOutputTensor(y)
        with self.assertRaises(popart.popart_exception) as e:
            session(b, [y])
        # The op's own error comes before the checker's complaint about the output ONNX could not
        # type.
        self.assertIn("the trip count 'm' is computed at run time", str(e.exception))
        self.assertIn("'Loop'", str(e.exception))

    # ---- Scan

    def test_scan_rnn_forward_and_gradient(self):
        """h_t = tanh(W x_t + h_{t-1}), scanned over axis 1 backwards; outputs concatenated."""
        def build(b, h0, xs, w):
            body = b.createSubgraphBuilder()
            h = body.addUntypedInputTensor("h")
            xt = body.addUntypedInputTensor("xt")  # [2, 3]: the scan axis dropped
            hn = body.aiOnnx.tanh([body.aiOnnx.add([body.aiOnnx.matmul([xt, w]), h])])
            body.addOutputTensor(hn)
            body.addOutputTensor(hn)
            hT, hs = b.aiOnnx.scan([h0, xs], 2, body, 1, scan_input_axes=[1],
                                   scan_input_directions=[1], scan_output_axes=[1])
            return b.aiOnnx.add([b.aiOnnx.reducesum([hs], axes=[1], keepdims=1), hT])

        def ref(h0, xs, w):
            h, rows = h0, []
            for t in reversed(range(xs.shape[1])):
                h = np.tanh(xs[:, t, :] @ w + h)
                rows.append(h)
            hs = np.concatenate(rows, axis=1)  # PopART concatenates along the output axis
            return hs.sum(axis=1, keepdims=True) + h

        self.check_grads(build, ref, [RNG.randn(2, 4).astype(np.float32) * 0.3,
                                      RNG.randn(2, 5, 3).astype(np.float32) * 0.3,
                                      RNG.randn(3, 4).astype(np.float32) * 0.3])

    # ---- the model proto

    def test_model_proto_keeps_subgraphs_and_round_trips(self):
        b, x, _, _, y = self.if_model(True)
        b.addOutputTensor(y)
        proto = b.getModelProto()
        m = onnx.load_from_string(proto)
        node = [n for n in m.graph.node if n.op_type == "If"][0]
        self.assertEqual(sorted(a.name for a in node.attribute), ["else_branch", "then_branch"])
        onnx.checker.check_model(m)
        again = popart.Builder(proto)
        self.assertEqual(again.getModelProto(), proto)
        out = run(session(again, [y]), {x: np.ones(4, np.float32)})[y]
        np.testing.assert_allclose(out, np.full(4, 3.5))


class EmbeddingBagTest(unittest.TestCase):
    def test_torch_embedding_bag_matches_torch(self):
        try:
            import torch
        except ImportError:
            self.skipTest("no torch")

        class Bags(torch.nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed(0)
                self.bag = torch.nn.EmbeddingBag(12, 4, mode="mean")

            def forward(self, idx):
                return self.bag(idx, torch.tensor([0, 2, 3, 7]))  # offsets fixed in the model

        model = Bags()
        idx = torch.tensor([1, 5, 2, 7, 7, 0, 11, 3, 4])
        f = io.BytesIO()
        torch.onnx.export(model, (idx,), f, input_names=["idx"], output_names=["out"],
                          opset_version=13)
        proto = f.getvalue()
        ops = {n.op_type for n in onnx.load_from_string(proto).graph.node}
        self.assertIn("Loop", ops)
        df = popart.DataFlow(1, {"out": popart.AnchorReturnType("All")})
        s = popart.InferenceSession(fnModel=proto, dataFlow=df,
                                    deviceInfo=popart.DeviceManager().createCpuDevice())
        anchors = run(s, {"idx": idx.numpy()})
        np.testing.assert_allclose(anchors["out"], model(idx).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


if __name__ == "__main__":
    unittest.main()
