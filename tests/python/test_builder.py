"""The Builder: a model built in Python, read back with onnx (the checker passes; ops, attributes
and initializers as given); every op builder method; name scopes; the annotations accepted without
effect; bad arguments raise exceptions naming the culprit."""
import gc
import os
import tempfile
import unittest

import numpy as np
import onnx
from onnx import numpy_helper

import xtrain as popart


def load(builder):
    model = onnx.load_from_string(builder.getModelProto())
    onnx.checker.check_model(model)
    return model


def node_of(model, output):
    for n in model.graph.node:
        if output in n.output:
            return n
    raise AssertionError(f"no node makes {output}")


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def opset_versions(model):
    return {o.domain: o.version for o in model.opset_import}


class ModelTest(unittest.TestCase):
    def test_mlp_round_trip(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 8]), "x")
        w_val = np.arange(16, dtype=np.float32).reshape(8, 2)
        w = b.addInitializedInputTensor(w_val, "w")
        bias = b.addInitializedInputTensor(np.array([0.5, -0.5], dtype=np.float32), "bias")
        y = b.aiOnnx.gemm([x, w, bias], alpha=2.0, transB=0, debugContext="fc")
        r = b.aiOnnx.relu([y])
        p = b.aiOnnx.softmax([r], axis=1)
        lbl = b.addInputTensor("INT32", [4], "labels")
        loss = b.aiGraphcore.nllloss([p, lbl], reduction=popart.ReductionType.Sum)
        b.addOutputTensor(loss)

        self.assertEqual(b.getInputTensorIds(), ["x", "labels"])
        self.assertEqual(b.getOutputTensorIds(), [loss])
        self.assertEqual(sorted(b.getTrainableTensorIds()), ["bias", "w"])
        self.assertEqual(b.getValueTensorIds(), [y, r, p, loss])
        self.assertTrue(b.isInitializer(w))
        self.assertFalse(b.isInitializer(x))
        self.assertFalse(b.isInitializer(y))
        self.assertEqual(b.getTensorShape(y), [4, 2])
        self.assertEqual(b.getTensorShape(x), [4, 8])
        self.assertEqual(b.getTensorDtypeString(p), "float32")
        self.assertEqual(b.getTensorDtypeString(lbl), "int32")
        self.assertEqual(b.getTensorInfo(p), popart.TensorInfo("FLOAT", [4, 2]))

        m = load(b)
        self.assertEqual(opset_versions(m), {"": popart.defaultAiOnnxOpset, "ai.graphcore": 1})
        self.assertEqual([n.op_type for n in m.graph.node], ["Gemm", "Relu", "Softmax", "Nll"])
        gemm = node_of(m, y)
        self.assertEqual(gemm.name, "fc")
        self.assertEqual(attrs(gemm)["alpha"], 2.0)
        self.assertEqual(attrs(node_of(m, p))["axis"], 1)
        self.assertEqual(attrs(node_of(m, loss))["reduction"], 0)  # ReductionType.Sum
        inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
        np.testing.assert_array_equal(inits["w"], w_val)
        np.testing.assert_array_equal(inits["bias"], [0.5, -0.5])
        self.assertEqual([o.name for o in m.graph.output], [loss])

    def test_conv_attributes(self):
        b = popart.Builder(opsets={"ai.onnx": 11, "ai.graphcore": 1})
        x = b.addInputTensor("FLOAT", [1, 2, 8, 8], "img")
        k = b.addInitializedInputTensor(np.ones([4, 2, 3, 3], np.float32), "k")
        c = b.aiOnnx.conv([x, k], dilations=[1, 1], group=1, kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1], strides=[2, 2])
        mp = b.aiOnnx.maxpool([c], num_outputs=1, kernel_shape=[2, 2], strides=[2, 2])[0]
        b.addOutputTensor(mp)
        self.assertEqual(b.getTensorShape(c), [1, 4, 4, 4])
        self.assertEqual(b.getTensorShape(mp), [1, 4, 2, 2])
        m = load(b)
        self.assertEqual(opset_versions(m)[""], 11)
        a = attrs(node_of(m, c))
        self.assertEqual(a["strides"], [2, 2])
        self.assertEqual(a["pads"], [1, 1, 1, 1])
        self.assertEqual(a["kernel_shape"], [3, 3])
        self.assertEqual(a["group"], 1)

    def test_initializer_dtypes(self):
        b = popart.Builder()
        for dt in [np.float32, np.float16, np.int32, np.int64, np.uint8, np.bool_, np.float64]:
            v = (np.arange(6) % 2).astype(dt).reshape(2, 3)
            t = b.addInitializedInputTensor(v, "v_" + np.dtype(dt).name)
            self.assertEqual(b.getTensorShape(t), [2, 3])
            self.assertEqual(b.getTensorDtypeString(t), np.dtype(dt).name)
        # A non-contiguous view is copied in its logical order.
        v = np.arange(12, dtype=np.float32).reshape(3, 4).T
        t = b.addInitializedInputTensor(v, "transposed")
        b.addOutputTensor(b.aiOnnx.identity([t]))
        inits = {i.name: numpy_helper.to_array(i) for i in load(b).graph.initializer}
        np.testing.assert_array_equal(inits["transposed"], v)
        self.assertEqual(inits["v_int32"].dtype, np.int32)
        self.assertNotIn("v_int32", b.getTrainableTensorIds())

    def test_initializer_with_variable_settings(self):
        # VariableSettings is bound by python/src/options.cpp; this branch may not have it yet.
        if not hasattr(popart, "VariableSettings"):
            self.skipTest("popart.VariableSettings is not bound in this build")
        b = popart.Builder()
        w = b.addInitializedInputTensor(np.ones([2], np.float32), popart.VariableSettings(), "w")
        self.assertEqual(w, "w")
        b.addOutputTensor(b.aiOnnx.identity([w]))
        self.assertEqual([i.name for i in load(b).graph.initializer], ["w"])

    def test_from_bytes_and_file(self):
        b = popart.Builder()
        x = b.addInputTensor("FLOAT", [2], "x")
        b.addOutputTensor(b.aiOnnx.exp([x]))
        proto = b.getModelProto()
        self.assertIsInstance(proto, bytes)
        b2 = popart.Builder(proto)
        self.assertEqual(b2.getInputTensorIds(), ["x"])
        y = b2.aiOnnx.neg([b2.getOutputTensorIds()[0]])
        self.assertEqual(b2.getTensorShape(y), [2])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.onnx")
            b.saveModelProto(path)
            b3 = popart.Builder(modelProtoOrFilename=path)
            self.assertEqual(b3.getInputTensorIds(), ["x"])
            self.assertEqual(len(load(b3).graph.node), 1)

    def test_loaded_model_keeps_its_opset(self):
        b = popart.Builder()
        x = b.addInputTensor("FLOAT", [2, 3], "x")
        b.aiOnnxOpset11.relu([x])
        b2 = popart.Builder(b.getModelProto())
        self.assertEqual(b2.aiOnnx.getOpsetVersion(), 11)

    def test_graph_name_and_replication_factor(self):
        b = popart.Builder()
        x = b.addInputTensor("FLOAT", [2], "x")
        b.addOutputTensor(b.aiOnnx.identity([x]))
        b.setGraphName("g")
        b.embedReplicationFactor(4)
        m = load(b)
        self.assertEqual(m.graph.name, "g")
        meta = {p.key: p.value for p in m.metadata_props}
        self.assertEqual(meta.get("__replicationFactor"), "4")

    def test_input_settings(self):
        b = popart.Builder()
        s = popart.InputSettings(popart.ReplicatedStreamMode.Broadcast)
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), s, "x")
        y = b.addInputTensor("FLOAT", [2], settings=s, debugContext="y")
        b.addOutputTensor(b.aiOnnx.add([x, y]))
        meta = {p.key: p.value for p in load(b).metadata_props}
        self.assertIn("__replicated_stream_mode/x", meta)
        self.assertIn("__replicated_stream_mode/y", meta)

    def test_builder_outlived_by_opset(self):
        b = popart.Builder()
        x = b.addInputTensor("FLOAT", [2], "x")
        ops = b.aiOnnx
        g = b.aiGraphcore
        del b
        gc.collect()
        y = ops.relu([x])
        self.assertTrue(g.scale([y], 2.0).startswith("Scale"))


class TensorNamesTest(unittest.TestCase):
    def test_repeated_op_outputs_are_named_as_poparts(self):
        # PopART's Builder names output i of an op "<type>:i" and its k-th repeat "<type>:i/k"; a
        # PrintTensor's title is its input's name, so programs read these names in the log.
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("INT32", [3]))
        y = b.addInputTensor(popart.TensorInfo("INT32", [3]))
        a1 = b.aiOnnx.add([x, y])
        p1 = b.aiGraphcore.printtensor([a1])
        a2 = b.aiOnnx.add([x, p1])
        self.assertEqual((a1, a2), ("Add:0", "Add:0/1"))
        self.assertEqual(b.aiOnnx.add([x, y], "sum"), "sum:0")
        self.assertEqual(b.aiOnnx.add([x, y], "sum"), "sum:0/1")
        self.assertEqual(b.aiOnnx.split([x], 3, 0, [1, 1, 1]), ["Split:0", "Split:1", "Split:2"])
        self.assertEqual(b.aiOnnx.split([x], 3, 0, [1, 1, 1]),
                         ["Split:0/1", "Split:1/1", "Split:2/1"])
        # Node names stay unique apart from the tensors'.
        names = [n.name for n in onnx.load_from_string(b.getModelProto()).graph.node]
        self.assertEqual(len(names), len(set(names)))


class OpsetTest(unittest.TestCase):
    def test_versions(self):
        for v in range(6, 18):
            b = popart.Builder()
            ops = getattr(b, f"aiOnnxOpset{v}")
            self.assertEqual(ops.getOpsetVersion(), v)
            self.assertIs(type(ops), getattr(popart, f"AiOnnxOpset{v}"))
            self.assertEqual(b.aiOnnx.getOpsetVersion(), v)
            x = b.addInputTensor("FLOAT", [2, 3], "x")
            b.addOutputTensor(ops.softmax([x]))
            m = load(b)
            self.assertEqual(opset_versions(m)[""], v)
            # Softmax's default axis is ONNX's for the version.
            self.assertEqual(attrs(m.graph.node[0]).get("axis", -1 if v >= 13 else 1),
                             -1 if v >= 13 else 1)

    def test_one_version_per_model(self):
        b = popart.Builder()
        b.aiOnnxOpset13
        # PopART's class and words.
        with self.assertRaisesRegex(RuntimeError, "^Invalid opset 'aiOnnxOpset11' selected. Opset "
                                    "for domain ai.onnx already defined as 13"):
            b.aiOnnxOpset11
        with self.assertRaisesRegex(ValueError, "opset 5 is not supported"):
            popart.Builder(opsets={"ai.onnx": 5, "ai.graphcore": 1})
        with self.assertRaisesRegex(ValueError, "unknown opset domain 'ai.onnx.mlx'"):
            popart.Builder(opsets={"ai.onnx.mlx": 1})
        # ai.onnx.ml is accepted (PopART's tests name it; xtrain has none of its ops).
        b = popart.Builder(opsets={"ai.onnx": 9, "ai.onnx.ml": 1, "ai.graphcore": 1})
        self.assertEqual(b.aiOnnx.getOpsetVersion(), 9)
        with self.assertRaisesRegex(RuntimeError, "already defined as 9"):
            b.aiOnnxOpset10

    def test_default_is_popart_opset_10(self):
        self.assertEqual(popart.defaultAiOnnxOpset, 10)
        b = popart.Builder()
        x = b.addInputTensor("FLOAT", [2], "x")
        b.addOutputTensor(b.aiOnnx.relu([x]))
        self.assertEqual(opset_versions(load(b))[""], 10)
        self.assertIsInstance(popart.Builder().aiOnnx, popart.AiOnnxOpset10)
        with self.assertRaisesRegex(ValueError, "ai.graphcore opset 2"):
            popart.Builder(opsets={"ai.graphcore": 2})
        self.assertIsInstance(popart.Builder().aiGraphcoreOpset1, popart.AiGraphcoreOpset1)


class AiOnnxOpsTest(unittest.TestCase):
    """Every ai.onnx method: the node it emits and its inferred shape."""

    def setUp(self):
        self.b = popart.Builder(opsets={"ai.onnx": 17, "ai.graphcore": 1})
        self.ops = self.b.aiOnnx
        self.x = self.b.addInputTensor("FLOAT", [2, 3, 4, 4], "x")
        self.m = self.b.addInputTensor("FLOAT", [4, 4], "m")

    def check(self, out, op_type, shape, **expected_attrs):
        outs = out if isinstance(out, list) else [out]
        self.assertEqual(self.b.getTensorShape(outs[0]), shape)
        for o in outs:
            self.b.addOutputTensor(o)
        model = load(self.b)
        n = node_of(model, outs[0])
        self.assertEqual(n.op_type, op_type)
        a = attrs(n)
        for k, v in expected_attrs.items():
            self.assertEqual(a[k], v, k)
        return n

    def test_elementwise(self):
        o, x, m = self.ops, self.x, self.m
        for name, op_type in [("add", "Add"), ("sub", "Sub"), ("mul", "Mul"), ("div", "Div"),
                              ("pow", "Pow"), ("sum", "Sum")]:
            self.check(getattr(o, name)([x, m], debugContext=name), op_type, [2, 3, 4, 4])
        for name, op_type in [("neg", "Neg"), ("exp", "Exp"), ("log", "Log"), ("sqrt", "Sqrt"),
                              ("relu", "Relu"), ("sigmoid", "Sigmoid"), ("tanh", "Tanh"),
                              ("identity", "Identity")]:
            self.check(getattr(o, name)([x]), op_type, [2, 3, 4, 4])

    def test_thresholdedrelu(self):
        o = self.ops
        self.check(o.thresholdedrelu([self.x]), "ThresholdedRelu", [2, 3, 4, 4], alpha=1.0)
        self.check(o.thresholdedrelu([self.m], alpha=0.25), "ThresholdedRelu", [4, 4], alpha=0.25)

    def test_cast_softmax_matmul(self):
        o = self.ops
        self.check(o.cast([self.x], "INT32"), "Cast", [2, 3, 4, 4], to=onnx.TensorProto.INT32)
        self.check(o.softmax([self.m], axis=0), "Softmax", [4, 4], axis=0)
        self.check(o.logsoftmax([self.m]), "LogSoftmax", [4, 4])
        self.check(o.matmul([self.x, self.m]), "MatMul", [2, 3, 4, 4])
        self.check(o.gemm([self.m, self.m], 1.0, 0.5, 1, 0), "Gemm", [4, 4], beta=0.5, transA=1)

    def test_shapes(self):
        o, x = self.ops, self.x
        shape = o.constant(np.array([6, 16], dtype=np.int64), "shape")
        self.check(o.reshape([x, shape]), "Reshape", [6, 16])
        self.check(o.flatten([x], axis=2), "Flatten", [6, 16], axis=2)
        self.check(o.transpose([x], perm=[0, 2, 3, 1]), "Transpose", [2, 4, 4, 3],
                   perm=[0, 2, 3, 1])
        self.check(o.concat([x, x], 1), "Concat", [2, 6, 4, 4], axis=1)
        parts = o.split([x], num_outputs=3, axis=1)
        self.assertEqual(len(parts), 3)
        self.check(parts, "Split", [2, 1, 4, 4])
        self.check(o.slice([x], starts=[0], ends=[2], axes=[3]), "Slice", [2, 3, 4, 2])
        u = o.unsqueeze([self.m], axes=[0])
        self.assertEqual(self.b.getTensorShape(u), [1, 4, 4])
        self.check(o.squeeze([u], axes=[0]), "Squeeze", [4, 4])
        idx = o.constant(np.array([0, 2], dtype=np.int64))
        self.check(o.gather([x, idx], axis=1), "Gather", [2, 2, 4, 4])
        self.check(o.reducesum([x], axes=[1, 2], keepdims=0), "ReduceSum", [2, 4])
        self.check(o.reducemean([x]), "ReduceMean", [1, 1, 1, 1], keepdims=1)

    def test_slice_from_tensors(self):
        o = self.ops
        c = lambda v: o.constant(np.array(v, dtype=np.int64))
        self.check(o.slice([self.m, c([1]), c([3]), c([0])]), "Slice", [2, 4])

    def test_normalisation_and_pooling(self):
        o, x = self.ops, self.x
        scale = self.b.addInitializedInputTensor(np.ones([3], np.float32), "s")
        bias = self.b.addInitializedInputTensor(np.zeros([3], np.float32), "b")
        mean = self.b.addInitializedInputTensor(np.zeros([3], np.float32), "mean")
        var = self.b.addInitializedInputTensor(np.ones([3], np.float32), "var")
        bn = o.batchnormalization([x, scale, bias, mean, var], 1, epsilon=1e-3)
        self.check(bn, "BatchNormalization", [2, 3, 4, 4], epsilon=np.float32(1e-3))
        self.check(o.averagepool([x], kernel_shape=[2, 2], strides=[2, 2]), "AveragePool",
                   [2, 3, 2, 2], kernel_shape=[2, 2])
        self.check(o.globalaveragepool([x]), "GlobalAveragePool", [2, 3, 1, 1])
        self.check(o.dropout([x], num_outputs=1, ratio=0.25)[0], "Dropout", [2, 3, 4, 4])
        # Out of range: PopART's closing sentence, which programs match on.
        with self.assertRaisesRegex(popart.popart_exception,
                                    r"ratio 1\.5 .*Please use a value in the interval \[0,1\)$"):
            o.dropout([x], num_outputs=1, ratio=1.5)
        ln_scale = self.b.addInitializedInputTensor(np.ones([4], np.float32), "lns")
        self.check(o.layernormalization([x, ln_scale], axis=-1, epsilon=1e-6)[0],
                   "LayerNormalization", [2, 3, 4, 4], axis=-1)

    def test_softmaxcrossentropyloss(self):
        lbl = self.b.addInputTensor("INT64", [4], "lbl")
        out = self.ops.softmaxcrossentropyloss([self.m, lbl], reduction="sum")
        self.check(out, "SoftmaxCrossEntropyLoss", [], reduction=b"sum")

    def test_constant(self):
        v = np.array([[1, 2], [3, 4]], dtype=np.int32)
        c = self.ops.constant(v, debugContext="c")
        n = self.check(c, "Constant", [2, 2])
        np.testing.assert_array_equal(numpy_helper.to_array(attrs(n)["value"]), v)
        with self.assertRaisesRegex(TypeError, "constant: value.*list.*not a numpy.ndarray"):
            self.ops.constant([1, 2])
        with self.assertRaisesRegex(NotImplementedError, "is_value_sparse"):
            self.ops.constant(v, is_value_sparse=True)


class AiGraphcoreOpsTest(unittest.TestCase):
    def setUp(self):
        self.b = popart.Builder()
        self.g = self.b.aiGraphcore
        self.x = self.b.addInputTensor("FLOAT", [4, 3], "x")

    def emit(self, out, op_type, **expected_attrs):
        self.b.addOutputTensor(out)
        n = node_of(load(self.b), out)
        self.assertEqual((n.domain, n.op_type), ("ai.graphcore", op_type))
        a = attrs(n)
        for k, v in expected_attrs.items():
            self.assertEqual(a[k], v, k)
        return n

    def test_losses(self):
        g, x = self.g, self.x
        self.emit(g.identityloss([x]), "IdentityLoss", reduction=1)
        lbl = self.b.addInputTensor("INT32", [4], "lbl")
        self.emit(g.nllloss([x, lbl], ignoreIndex=2, inputIsLogProbability=True), "Nll",
                  ignoreIndex=2, inputIsLogProbability=1)
        self.emit(g.l1loss([x], 0.5, reduction=popart.ReductionType.NoReduction), "L1",
                  reduction=2)

    def test_pointwise(self):
        g, x = self.g, self.x
        for name, op_type in [("gelu", "Gelu"), ("detach", "Detach"), ("nop", "Nop"),
                              ("round", "Round")]:
            self.emit(getattr(g, name)([x]), op_type)
        for name, op_type in [("remainder", "Remainder"), ("fmod", "Fmod")]:
            self.emit(getattr(g, name)([x, x]), op_type)
        self.emit(g.scale([x], 3.0), "Scale", scale=3.0)
        self.emit(g.scaledadd([x, x], scale0=0.5, scale1=2.0), "ScaledAdd", scale0=0.5,
                  scale1=2.0)
        self.emit(g.reverse([x], dimensions=[1]), "Reverse", dimensions=[1])

    def test_dynamic(self):
        g, x = self.g, self.x
        off = self.b.aiOnnx.constant(np.array([1], dtype=np.int32))
        sl = g.dynamicslice([x, off], axes=[0], sizes=[2], noOverlap=1)
        self.assertEqual(self.b.getTensorShape(sl), [2, 3])
        self.emit(sl, "DynamicSlice", axes=[0], sizes=[2], noOverlap=1)
        self.emit(g.dynamicupdate([x, off, sl], [0], [2]), "DynamicUpdate")
        self.emit(g.dynamiczero([x, off], [0], [2]), "DynamicZero")
        self.emit(g.dynamicadd([x, off, sl], [0], [2]), "DynamicAdd")

    def test_init_print_groupnorm_abort(self):
        g, x = self.g, self.x
        t = g.init([2, 5], int(popart.DataType.FLOAT), int(popart.InitType.Zero), 0)
        self.assertEqual(self.b.getTensorShape(t), [2, 5])
        self.emit(t, "Init", shape=[2, 5], batch_axis=0)
        t2 = g.init(shape=[3], data_type=int(popart.DataType.INT32),
                    init_type=int(popart.InitType.NoInit))
        self.emit(t2, "Init", shape=[3])
        self.emit(g.printtensor([x], title="hello", separator=","), "PrintTensor",
                  title=b"hello")
        s = self.b.addInitializedInputTensor(np.ones([3], np.float32), "gs")
        bias = self.b.addInitializedInputTensor(np.zeros([3], np.float32), "gb")
        outs = g.groupnormalization([x, s, bias], num_groups=1, epsilon=1e-3)
        self.assertEqual(len(outs), 3)
        self.emit(outs[0], "GroupNormalization", num_groups=1)
        self.assertIsNone(g.abort())
        with self.assertRaisesRegex(ValueError, "init: shape.*negative dimension -2"):
            g.init([-2], int(popart.DataType.FLOAT), 0)
        with self.assertRaisesRegex(ValueError, "separator 'ab' is not one character"):
            g.printtensor([x], separator="ab")

    def test_collectives(self):
        g, x = self.g, self.x
        self.emit(g.replicatedallreduce([x]), "ReplicatedAllReduce", op=0)
        self.emit(g.replicatedallreduce([x], popart.CollectiveOperator.Max), "ReplicatedAllReduce",
                  op=int(popart.CollectiveOperator.Max))
        self.emit(g.replicatedreducescatter([x], collectiveOperator=popart.CollectiveOperator.Mean),
                  "ReplicatedReduceScatter")
        self.emit(g.replicatedallgather([x]), "ReplicatedAllGather")
        if hasattr(popart, "CommGroup"):
            cg = popart.CommGroup(popart.CommGroupType.Consecutive, 2)
            self.emit(g.replicatedallreduce([x], commGroup=cg), "ReplicatedAllReduce")
        with self.assertRaisesRegex(TypeError, "commGroup 'all' is not a CommGroup"):
            g.replicatedallreduce([x], commGroup="all")
        with self.assertRaisesRegex(TypeError, "collectiveOperator 3 is not a CollectiveOperator"):
            g.replicatedallreduce([x], collectiveOperator=3)


class CustomOpTest(unittest.TestCase):
    def test_custom_op(self):
        b = popart.Builder()
        x = b.addInputTensor("FLOAT", [2], "x")
        outs = b.customOp(opName="LeakyCube", opVersion=1, domain="com.acme", inputs=[x],
                          attributes={"alpha": 0.5, "n": 3, "mode": "fast", "ks": [1, 2],
                                      "fs": [0.5, 1], "names": ["a", "b"]},
                          numOutputs=2, name="lc")
        self.assertEqual(len(outs), 2)
        b.addOutputTensor(outs[0])
        m = onnx.load_from_string(b.getModelProto())
        n = node_of(m, outs[0])
        self.assertEqual((n.domain, n.op_type, n.name), ("com.acme", "LeakyCube", "lc"))
        self.assertEqual(attrs(n), {"alpha": 0.5, "n": 3, "mode": b"fast", "ks": [1, 2],
                                    "fs": [0.5, 1.0], "names": [b"a", b"b"]})
        self.assertEqual(opset_versions(m)["com.acme"], 1)
        with self.assertRaisesRegex(TypeError, "attribute 'bad'"):
            b.customOp("Op", 1, "com.acme", [x], {"bad": {"x": 1}})

    def test_reshape_const(self):
        b = popart.Builder()
        x = b.addInputTensor("FLOAT", [2, 6], "x")
        y = b.reshape_const(b.aiOnnx, [x], [3, 4], debugContext="r")
        self.assertEqual(b.getTensorShape(y), [3, 4])


class NameScopeTest(unittest.TestCase):
    def test_nested(self):
        b = popart.Builder()
        x = b.addInputTensor("FLOAT", [2], "x")
        with b.nameScope("outer"):
            self.assertEqual(b.getNameScope(), "outer/")
            a = b.aiOnnx.relu([x], "r")
            with b.nameScope("inner"):
                self.assertEqual(b.getNameScope("n"), "outer/inner/n")
                w = b.addInitializedInputTensor(np.zeros([2], np.float32), "w")
                c = b.aiOnnx.add([a, w])
        d = b.aiOnnx.relu([c], "r")
        self.assertEqual(b.getNameScope(), "")
        self.assertEqual(a, "outer/r:0")
        self.assertEqual(w, "outer/inner/w")
        self.assertTrue(c.startswith("outer/inner/"), c)
        self.assertEqual(d, "r:0")
        b.addOutputTensor(d)
        names = [n.name for n in load(b).graph.node]
        self.assertEqual(names, ["outer/r", "outer/inner/Add", "r"])

    def test_scope_popped_on_exception(self):
        b = popart.Builder()
        with self.assertRaises(ZeroDivisionError):
            with b.nameScope("s"):
                1 / 0
        self.assertEqual(b.getNameScope(), "")
        with self.assertRaisesRegex(ValueError, "must not be empty"):
            b.nameScope("")


class AnnotationTest(unittest.TestCase):
    """Accepted and recorded, without effect on the model (docs/python.md)."""

    def test_context_managers(self):
        b = popart.Builder()
        x = b.addInputTensor("FLOAT", [2], "x")
        self.assertFalse(b.hasVirtualGraph())
        with b.virtualGraph(1), b.pipelineStage(2), b.executionPhase(3):
            self.assertEqual((b.getVirtualGraph(), b.getPipelineStage(), b.getExecutionPhase()),
                             (1, 2, 3))
            with b.virtualGraph(0):
                self.assertEqual(b.getVirtualGraph(), 0)
            self.assertEqual(b.getVirtualGraph(), 1)
            y = b.aiOnnx.relu([x])
        self.assertFalse(b.hasVirtualGraph() or b.hasPipelineStage() or b.hasExecutionPhase())
        # PopART raises popart_exception with its sentence (programs match on it).
        with self.assertRaisesRegex(popart.popart_exception,
                                    "Virtual graph not set in current scope.*no virtualGraph"):
            b.getVirtualGraph()
        with self.assertRaisesRegex(popart.popart_exception,
                                    "Pipeline stage not set in current scope"):
            b.getPipelineStage()
        with self.assertRaisesRegex(popart.popart_exception,
                                    "Execution phase not set in current scope"):
            b.getExecutionPhase()
        with b.executionPhase() as cm:
            self.assertIsInstance(cm, popart.AttributeContextManager)
            self.assertEqual(b.getExecutionPhase(), 0)
        with b.nameScope("n") as cm:
            self.assertIsInstance(cm, popart.NameContextManager)
        with b.schedulePriority(1.0), b.outlineAttributes({"a": "b"}), b.commGroup(1, 2):
            b.aiOnnx.relu([y])
        b.addOutputTensor(y)
        self.assertEqual(len(load(b).graph.node), 2)

    def test_node_setters(self):
        b = popart.Builder()
        x = b.addInputTensor("FLOAT", [2, 2], "x")
        y = b.aiOnnx.matmul([x, x])
        b.virtualGraph(y, 1)
        self.assertEqual(b.getVirtualGraph(y), 1)
        b.pipelineStage(y, value=2)
        self.assertEqual(b.getPipelineStage(y), 2)
        b.executionPhase({y})
        self.assertEqual(b.getExecutionPhase({y}), 0)
        self.assertFalse(b.getRecomputeOutputInBackwardPass(y))
        b.recomputeOutputInBackwardPass(y)
        self.assertTrue(b.getRecomputeOutputInBackwardPass({y}))
        b.setAvailableMemoryProportion(y, 0.3)
        b.setAvailableMemoryProportion({y}, 0.6)
        b.setPartialsType(y, "HALF")
        self.assertEqual(b.getPartialsType(y), "HALF")
        b.setSerializeMatMul({y}, "output_channels", 2, True)
        with self.assertRaisesRegex(popart.popart_exception, "only be called on convolutions"):
            b.setEnableConvDithering(y, 1)  # y is a MatMul's (test_popart_messages.py: a Conv's)
        b.setInplacePreferences(y, {"InPlaceAdd": 1.0})
        b.excludePatterns(y, ["MatMulOp"])
        with self.assertRaisesRegex(KeyError, "'nope' is not a tensor"):
            b.virtualGraph("nope", 1)
        with self.assertRaisesRegex(ValueError, "availableMemoryProportion 2"):
            b.setAvailableMemoryProportion(y, 2.0)
        with self.assertRaisesRegex(ValueError, "partialsType 'DOUBLE'"):
            b.setPartialsType(y, "DOUBLE")
        with self.assertRaisesRegex(popart.popart_exception,
                                    "^Unsupported mat mul serialization mode 'rows'. Supported"):
            b.setSerializeMatMul({y}, "rows")
        with self.assertRaisesRegex(KeyError, "no partialsType"):
            b.getPartialsType(x)

    def test_not_implemented(self):
        with self.assertRaisesRegex(NotImplementedError, "builderCore"):
            popart.Builder(builderCore=object())


class BadArgumentsTest(unittest.TestCase):
    def setUp(self):
        self.b = popart.Builder()
        self.x = self.b.addInputTensor("FLOAT", [2], "x")

    def test_input_tensor(self):
        with self.assertRaisesRegex(ValueError, "'FLAOT'.*expected one of"):
            self.b.addInputTensor("FLAOT", [2])
        with self.assertRaisesRegex(ValueError, "negative dimension -3"):
            self.b.addInputTensor("FLOAT", [2, -3])
        with self.assertRaisesRegex(ValueError, "negative dimension"):
            self.b.addInputTensor(popart.TensorInfo("FLOAT", [-1]))
        with self.assertRaisesRegex(ValueError, "no data type"):
            self.b.addInputTensor(popart.TensorInfo())

    def test_initializer(self):
        with self.assertRaisesRegex(TypeError, "initVal: <class 'list'> is not a numpy.ndarray"):
            self.b.addInitializedInputTensor([1.0, 2.0], "w")
        with self.assertRaisesRegex(TypeError, "initVal.*dtype 'object'"):
            self.b.addInitializedInputTensor(np.array([object()]), "w")

    def test_unknown_tensors(self):
        with self.assertRaisesRegex(KeyError, "getTensorShape: 'nope'"):
            self.b.getTensorShape("nope")
        with self.assertRaisesRegex(KeyError, "getTensorDtypeString: 'nope'"):
            self.b.getTensorDtypeString("nope")
        # PopART raises popart_exception here: the error is both.
        with self.assertRaisesRegex(popart.popart_exception, "getTensorShape: 'nope'"):
            self.b.getTensorShape("nope")
        with self.assertRaisesRegex(Exception, "'nope'"):
            self.b.aiOnnx.add([self.x, "nope"])
        with self.assertRaisesRegex(Exception, "'nope'"):
            self.b.addOutputTensor("nope")

    def test_wrong_types(self):
        with self.assertRaises(TypeError):
            self.b.aiOnnx.relu(self.x)  # a str, not a list of ids
        with self.assertRaisesRegex(TypeError, "modelProtoOrFilename <class 'int'>"):
            popart.Builder(3)
        with self.assertRaisesRegex(TypeError, "opsets"):
            popart.Builder(opsets=[13])
        with self.assertRaisesRegex(ValueError, "aiOnnx.cast: to: unknown data type 'BAD'"):
            self.b.aiOnnx.cast([self.x], "BAD")

    def test_bad_model(self):
        with self.assertRaises(Exception):
            popart.Builder(b"\x00not a model")


if __name__ == "__main__":
    unittest.main()
