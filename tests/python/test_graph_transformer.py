"""popart.GraphTransformer: type conversions of ONNX models (as onnx writes them), initializers to
constants, unused inputs, BatchNormalization's training outputs, external data."""
import os
import tempfile
import unittest

import numpy as np

import xtrain as popart

try:
    import onnx
    from onnx import helper, numpy_helper, TensorProto
except ImportError:  # Debian's python3-onnx is in scripts/setup-deps
    onnx = None


def model(nodes, inputs, outputs, initializers=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


@unittest.skipIf(onnx is None, "python3-onnx is not installed")
class GraphTransformerTest(unittest.TestCase):
    def run_inference(self, proto, feeds, out):
        opts = popart.SessionOptions()
        session = popart.InferenceSession(proto, popart.DataFlow(1, [out]),
                                          popart.DeviceManager().createCpuDevice(), userOptions=opts)
        session.prepareDevice()
        anchors = session.initAnchorArrays()
        session.run(popart.PyStepIO(feeds, anchors))
        return anchors[out]

    def test_uint8_constant_of_shape_becomes_int32_typed_data(self):
        values = np.array([[1, 2], [3, 4], [5, 6]], np.uint8)
        node = helper.make_node("Identity", ["c"], ["y"])
        m = model([node], [], [helper.make_tensor_value_info("y", TensorProto.UINT8, [3, 2])],
                  [numpy_helper.from_array(values, "c")])
        gt = popart.GraphTransformer(m.SerializeToString())
        gt.convertUINT8ToINT32()
        out = onnx.load_from_string(gt.getModelProto())
        onnx.checker.check_model(out)
        self.assertEqual(out.graph.initializer[0].data_type, TensorProto.INT32)
        self.assertEqual(list(out.graph.initializer[0].int32_data), values.flatten().tolist())
        self.assertEqual(out.graph.output[0].type.tensor_type.elem_type, TensorProto.INT32)

    def test_int64_range_is_checked_or_clipped(self):
        big = np.array([1, 2**40, -(2**40)], np.int64)
        node = helper.make_node("Constant", [], ["y"], value=numpy_helper.from_array(big))
        m = model([node], [], [helper.make_tensor_value_info("y", TensorProto.INT64, [3])])
        gt = popart.GraphTransformer(m.SerializeToString())
        with self.assertRaisesRegex(popart.popart_exception, "cannot cast int64 to int32.*clip"):
            gt.convertINT64ToINT32()
        self.assertEqual(onnx.load_from_string(gt.getModelProto()), m)  # a failed edit: no change
        gt.convertINT64ToINT32(clip=True)
        out = onnx.load_from_string(gt.getModelProto())
        t = out.graph.node[0].attribute[0].t
        self.assertEqual(list(t.int32_data), [1, 2**31 - 1, -(2**31)])

    def test_floats_to_halfs_runs_in_float16(self):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
        c = numpy_helper.from_array(np.array([0.1, 0.2, 0.3, 0.4], np.float32), "c")
        m = model([helper.make_node("Add", ["x", "c"], ["y"])], [x], [y], [c])
        gt = popart.GraphTransformer(m.SerializeToString())
        gt.convertFloatsToHalfs()
        proto = gt.getModelProto()
        d = np.array([1, 2, 3, 4], np.float16)
        out = self.run_inference(proto, {"x": d}, "y")
        self.assertEqual(out.dtype, np.float16)
        np.testing.assert_array_equal(out, d + np.array([0.1, 0.2, 0.3, 0.4], np.float16))

    def test_initializers_to_constants_and_unused_inputs(self):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
        unused = helper.make_tensor_value_info("unused", TensorProto.FLOAT, [2])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
        w = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "w")
        k = numpy_helper.from_array(np.array([3, 4], np.int64), "k")
        nodes = [helper.make_node("Mul", ["x", "w"], ["y"]),
                 helper.make_node("Identity", ["k"], ["kk"])]
        m = model(nodes, [x, unused], [y], [w, k])
        gt = popart.GraphTransformer(m.SerializeToString())
        with self.assertRaisesRegex(popart.popart_exception, "nope not in the model initalizers"):
            gt.convertInitializersToConstants(["nope"])
        gt.convertAllFixedPointInitializersToConstants()
        gt.removeUnusedInputs()
        out = onnx.load_from_string(gt.getModelProto())
        self.assertEqual([i.name for i in out.graph.initializer], ["w"])
        self.assertEqual(out.graph.node[0].op_type, "Constant")
        self.assertEqual(out.graph.node[0].output[0], "k")
        self.assertEqual([i.name for i in out.graph.input], ["x"])
        np.testing.assert_array_equal(
            self.run_inference(gt.getModelProto(), {"x": np.array([5, 6], np.float32)}, "y"),
            [5, 12])

    def test_prepare_nodes_for_training_and_external_data(self):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 2])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])
        inits = [numpy_helper.from_array(np.full(2, v, np.float32), n)
                 for n, v in (("s", 1.0), ("b", 0.0), ("m", 0.0), ("v", 1.0))]
        bn = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn")
        gt = popart.GraphTransformer(model([bn], [x], [y], inits).SerializeToString())
        gt.prepareNodesForTraining()
        out = onnx.load_from_string(gt.getModelProto())
        self.assertEqual(len(out.graph.node[0].output), 5)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "weights.bin")
            gt.saveInitializersExternally(["s", "v"], path)
            out = onnx.load_from_string(gt.getModelProto())  # from bytes: data stays external
            self.assertEqual(out.graph.initializer[0].data_location, TensorProto.EXTERNAL)
            self.assertEqual(os.path.getsize(path), 16)


@unittest.skipIf(onnx is None, "python3-onnx is not installed")
class PackedFloat16Test(unittest.TestCase):
    """PopART writes FLOAT16 initializers two values to an int32_data entry (onnx.proto asks for
    one per entry): a model saved so runs with its values; onnx's layout still reads."""

    def test_both_layouts_of_float16_int32_data(self):
        values = np.array([1.5, -2.0, 0.25], np.float16)
        bits = values.view(np.uint16)
        packed = np.concatenate([values, np.zeros(1, np.float16)]).view(np.int32)
        for name, data in (("packed", packed.tolist()), ("onnx", bits.astype(np.int32).tolist())):
            with self.subTest(layout=name):
                w = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT16, dims=[3])
                w.int32_data.extend(data)
                m = model([helper.make_node("Add", ["x", "w"], ["y"])],
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [3])], [w])
                out = GraphTransformerTest.run_inference(self, m.SerializeToString(),
                                                         {"x": np.ones(3, np.float16)}, "y")
                np.testing.assert_array_equal(out, values + np.float16(1))


if __name__ == "__main__":
    unittest.main()
