"""PopART's wording of errors that PopART's programs match on (issue 29): the phrase is in xtrain's
message, which still names the op; where PopART's programs compare the whole message, args[0] is
PopART's text alone and str() xtrain's (xtrain::popart_worded_error)."""
import unittest

import numpy as np

import xtrain as popart


def inference(builder, outputs):
    """Creates an inference session of the builder's model with `outputs` anchored."""
    for o in outputs:
        builder.addOutputTensor(o)
    return popart.InferenceSession(
        fnModel=builder.getModelProto(),
        dataFlow=popart.DataFlow(1, {o: popart.AnchorReturnType("All") for o in outputs}),
        deviceInfo=popart.DeviceManager().createCpuDevice())


class WholeMessageTest(unittest.TestCase):
    def test_args0_is_popart_and_str_is_xtrain(self):
        with self.assertRaises(popart.popart_exception) as ctx:
            popart._xtrain._throw_error("error", "Op 'x': long message", popart_message="short")
        self.assertEqual(ctx.exception.args[0], "short")
        self.assertEqual(str(ctx.exception), "Op 'x': long message")

    def test_reduce_axis_out_of_range(self):
        for axis in (-3, 2):
            b = popart.Builder()
            x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]))
            y = b.aiOnnx.reducesum([x], axes=[axis])
            with self.assertRaises(popart.popart_exception) as ctx:
                inference(b, [y])
            self.assertEqual(ctx.exception.args[0],
                             f"Axis {axis} is out of acceptable range [-2, 1]")
            self.assertIn("ReduceSum", str(ctx.exception))
            self.assertIn(f"Axis {axis} is out of acceptable range", str(ctx.exception))

    def test_transpose_perm_rank(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [1, 3, 2]))
        y = b.aiOnnx.transpose([x], perm=[1, 0])
        with self.assertRaises(popart.popart_exception) as ctx:
            inference(b, [y])
        self.assertEqual(ctx.exception.args[0],
                         "Rank of permutation tensor [1 0], rank 2 must be equal to rank of input "
                         "tensor, shape [1 3 2], rank 3.")
        self.assertIn("Transpose", str(ctx.exception))

    def test_matmul_scalar_and_contracting_dimensions(self):
        b = popart.Builder(opsets={"ai.onnx": 10, "ai.graphcore": 1})
        s = b.addInputTensor(popart.TensorInfo("FLOAT", []), "s")
        m = b.addInputTensor(popart.TensorInfo("FLOAT", [3, 4]), "m")
        y = b.aiOnnx.matmul([s, m])
        with self.assertRaises(popart.popart_exception) as ctx:
            inference(b, [y])
        self.assertEqual(ctx.exception.args[0],
                         f"Op(ai.onnx.MatMul:9, inputs=[s, m], outputs=[{y}]) doesn't support "
                         "scalar tensor s as the lhs input")
        self.assertIn("rank >= 1", str(ctx.exception))
        b = popart.Builder(opsets={"ai.onnx": 13, "ai.graphcore": 1})
        a = b.addInputTensor(popart.TensorInfo("FLOAT", [3, 4]), "a")
        y = b.aiOnnx.matmul([a, a])
        with self.assertRaises(popart.popart_exception) as ctx:
            inference(b, [y])
        self.assertEqual(ctx.exception.args[0],
                         f"Op(ai.onnx.MatMul:13, inputs=[a, a], outputs=[{y}]) contracting "
                         "dimensions unequal: lhs 'a' [3 4], rhs 'a' [3 4]")
        self.assertIn("has K=4 but B 'a' [3,4] has K=3", str(ctx.exception))

    def test_slice_starts_not_constant(self):
        b = popart.Builder(opsets={"ai.onnx": 10, "ai.graphcore": 1})
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 4]), "x")
        starts = b.addInputTensor(popart.TensorInfo("INT32", [2]), "starts")
        ends = b.aiOnnx.constant(np.array([2, 3], dtype=np.int32))
        y = b.aiOnnx.slice([x, starts, ends])
        with self.assertRaises(popart.popart_exception) as ctx:
            inference(b, [y])
        self.assertEqual(ctx.exception.args[0],
                         "Need the value of the ai.onnx.Slice:10 input 'starts' to determine the "
                         "output shape, but was unable because [Tensor::getDataViaGraphTraversal] "
                         "Could not work out tensor data for starts.")
        self.assertIn("input 1 ('starts', used as 'starts') is not a constant", str(ctx.exception))

    def test_nothing_to_compute(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
        b.aiOnnx.sqrt([x])
        with self.assertRaises(popart.popart_exception) as ctx:
            popart.InferenceSession(fnModel=b.getModelProto(), dataFlow=popart.DataFlow(1, [x]),
                                    deviceInfo=popart.DeviceManager().createCpuDevice())
        self.assertEqual(ctx.exception.args[0],
                         "All operations in the main graph were pruned, nothing to compute")
        self.assertIn("compute none of the anchored tensors ('x')", str(ctx.exception))

    def test_serialize_matmul_factor(self):
        def model(mode, factor):
            b = popart.Builder()
            l = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 6]), "l")
            r = b.addInputTensor(popart.TensorInfo("FLOAT", [6, 4]), "r")
            y = b.aiOnnx.matmul([l, r])
            b.setSerializeMatMul({y}, mode, factor)
            return b, y

        for mode, factor, dim, words in (("output_channels", 3, 4, "output channels dim 4. "
                                                                     "output_channels"),
                                         ("reducing_dim", 4, 6, "reducing dimension 6. "
                                                                "reducing_dim"),
                                         ("input_channels", 3, 2, "input channels dim 2. "
                                                                  "input_channels")):
            b, y = model(mode, factor)
            with self.assertRaises(popart.popart_exception) as ctx:
                inference(b, [y])
            self.assertEqual(ctx.exception.args[0],
                             f"Invalid serialisation factor {factor} for {words} dim should be a "
                             "multiple of the serialisation factor")
            self.assertIn("MatMul", str(ctx.exception))
        for mode, factor in (("output_channels", 2), ("reducing_dim", 3), ("none", 5)):
            b, y = model(mode, factor)
            inference(b, [y])
            self.assertEqual(b.nodeHasAttribute("__serialize_matmul_factor", {y}),
                             mode != "none")

    def test_broadcast_frames_not_aligned(self):  # PopART's phrase ends xtrain's message
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [10, 10]), "x")
        z = b.addInputTensor(popart.TensorInfo("FLOAT", [10, 5]), "z")
        y = b.aiOnnx.add([x, z])
        with self.assertRaises(popart.popart_exception) as ctx:
            inference(b, [y])
        self.assertIn("np broadcasting failed on 'Op(ai.onnx.Add:", ctx.exception.args[0])
        self.assertTrue(ctx.exception.args[0].endswith(
            f"inputs=[x, z], outputs=[{y}])', frames [10, 10] and [10, 5] are not aligned"))
        self.assertIn("Add", ctx.exception.args[0])
        self.assertIn("output dimension 1 would be 10 and 5", ctx.exception.args[0])


class PhraseTest(unittest.TestCase):
    def assertRaisesPhrase(self, builder, outputs, phrase, op):
        with self.assertRaises(popart.popart_exception) as ctx:
            inference(builder, outputs)
        self.assertIn(phrase, ctx.exception.args[0])
        self.assertIn(op, ctx.exception.args[0])
        return ctx.exception.args[0]

    def test_reshape_two_minus_ones(self):
        # ONNX's shape inference cannot type the output: the op's own error comes first.
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 4, 3]))
        y = b.aiOnnx.reshape([x, b.aiOnnx.constant(np.array([-1, -1, 0], dtype=np.int64))])
        self.assertRaisesPhrase(
            b, [y], "shape input to ReshapeOp can only use -1 to specify one unknown dimension",
            "Reshape")

    def test_tile(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]))
        y = b.aiOnnx.tile([x, b.aiOnnx.constant(np.array([1, 2, 3], dtype=np.int64))])
        m = self.assertRaisesPhrase(
            b, [y], "should have one element for each dimension of the data tensor", "Tile")
        self.assertTrue(m.endswith("should have one element for each dimension of the data tensor"))

        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]))
        y = b.aiOnnx.tile([x, b.aiOnnx.constant(np.array([1, -2], dtype=np.int64))])
        self.assertRaisesPhrase(b, [y], "Values must be non-negative in each shape dimension",
                                "Tile")

        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]))
        r = b.addInputTensor(popart.TensorInfo("INT64", [2]))
        y = b.aiOnnx.tile([x, r])
        m = self.assertRaisesPhrase(b, [y], "must be of type Constant", "Tile")
        self.assertTrue(m.endswith("must be of type Constant"))

    def test_expand_incompatible(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]))
        y = b.aiOnnx.expand([x, b.aiOnnx.constant(np.array([4, 3, 4], dtype=np.int64))])
        self.assertRaisesPhrase(
            b, [y],
            "corresponding dimensions must have the same value or one of them must be 1", "Expand")

    def test_reverse_dimensions(self):
        for dims, phrase in (([-1], "invalid dimension '-1'. Only positive dimensions are supported"),
                             ([2], "invalid dimension '2' for input tensor of rank 2"),
                             ([1, 1], "Dimension 1 appears multiple times")):
            b = popart.Builder()
            x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]))
            y = b.aiGraphcore.reverse([x], dims)
            self.assertRaisesPhrase(b, [y], phrase, "Reverse")

    def test_binary_types(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT16", [2, 2]))
        z = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 2]))
        y = b.aiOnnx.mul([x, z])
        m = self.assertRaisesPhrase(b, [y], "inputs have different types", "Mul")
        self.assertTrue(m.endswith("incompatible types FLOAT16 and FLOAT (shapes [2 2] and [2 2])"))


class BuilderChecksTest(unittest.TestCase):
    def test_arity_names_the_op_type(self):
        b = popart.Builder()
        with self.assertRaises(popart.popart_exception) as ctx:
            b.aiOnnx.abs([])
        self.assertTrue(ctx.exception.args[0].startswith("Abs has invalid number of inputs 0"))
        self.assertIn("abs takes 1 input tensors, got 0", ctx.exception.args[0])

    def test_window_parameter_lengths(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [1, 2, 8, 8]))
        w = b.addInputTensor(popart.TensorInfo("FLOAT", [3, 2, 3, 3]))
        cases = [
            (lambda: b.aiOnnx.conv([x, w], strides=[1]),
             "Length of strides vector 1 != number of spatial dimensions 2"),
            (lambda: b.aiOnnx.conv([x, w], pads=[0, 0]),
             "Padding vector (length 2) does not have 2 values for each spatial dimension 2"),
            (lambda: b.aiOnnx.conv([x, w], dilations=[1]),
             "Length of dilations vector 1 != number of spatial dimensions 2"),
            (lambda: b.aiOnnx.averagepool([x], kernel_shape=[2, 2], pads=[0, 0, 0, 0, 0]),
             "Padding vector (length 5) does not have 2 values for each spatial dimension 2"),
            (lambda: b.aiOnnx.maxpool([x], 1, kernel_shape=[2, 2], strides=[1, 1, 1]),
             "Length of strides vector 3 != number of spatial dimensions 2"),
        ]
        for call, phrase in cases:
            with self.assertRaises(popart.popart_exception) as ctx:
                call()
            self.assertEqual(ctx.exception.args[0], phrase)
            self.assertIn("Builder: ", str(ctx.exception))

    def test_conv_kernel_shape_and_output_size(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [1, 2, 8, 8]))
        w = b.addInputTensor(popart.TensorInfo("FLOAT", [3, 2, 3, 3]))
        with self.assertRaises(popart.popart_exception) as ctx:
            b.aiOnnx.conv([x, w], kernel_shape=[5, 5])
        self.assertEqual(ctx.exception.args[0],
                         f"kernel_shape, [5 5], does not match inferred shape from weight input "
                         f"'{w}', [3 3]")
        big = b.addInputTensor(popart.TensorInfo("FLOAT", [3, 2, 10, 9]))
        with self.assertRaises(popart.popart_exception) as ctx:
            b.aiOnnx.conv([x, big])
        self.assertEqual(ctx.exception.args[0],
                         "Window parameter values combine to give invalid spatial output shape: "
                         "[-1 0]")
        # Padding makes the same kernel fit; the node is added.
        b.aiOnnx.conv([x, big], pads=[1, 0, 1, 0])
        with self.assertRaises(popart.popart_exception) as ctx:
            b.aiOnnx.maxpool([x], 1, kernel_shape=[4, 4], dilations=[3, 3])
        self.assertIn("invalid spatial output shape: [-1 -1]", ctx.exception.args[0])


    def test_conv_dithering_only_on_conv_and_bool(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [1, 2, 4, 4]))
        w = b.addInputTensor(popart.TensorInfo("FLOAT", [3, 2, 3, 3]))
        c = b.aiOnnx.conv([x, w], pads=[1, 1, 1, 1])
        r = b.aiOnnx.relu([c])
        with self.assertRaises(popart.popart_exception) as ctx:
            b.setEnableConvDithering(r, 1)
        self.assertEqual(ctx.exception.args[0], "Builder::setEnableConvDithering should only be "
                         "called on convolutions but was given: Relu")
        self.assertIn(r, str(ctx.exception))
        with self.assertRaises(popart.popart_exception) as ctx:
            b.setEnableConvDithering(c, 44)
        self.assertEqual(ctx.exception.args[0], "enableConvDithering must be a bool value")
        b.setEnableConvDithering(c, True)
        inference(b, [r])  # PopART's annotation does not stop the import

    def test_exclude_patterns_names(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]))
        y = b.aiOnnx.identity([x])
        with self.assertRaises(popart.popart_exception) as ctx:
            b.excludePatterns(y, ["ThisPatternDoesNotExist"])
        self.assertTrue(ctx.exception.args[0].startswith(
            "Invalid pattern name 'ThisPatternDoesNotExist'"))
        b.excludePatterns(y, ["PostNRepl", "InPlace"])


class LossTest(unittest.TestCase):
    def test_nll_label_shape(self):
        b = popart.Builder()
        probs = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 4, 3]))
        label = b.addInputTensor(popart.TensorInfo("INT32", [2, 5]))
        nll = b.aiGraphcore.nllloss([probs, label], popart.ReductionType.Mean)
        with self.assertRaises(popart.popart_exception) as ctx:
            inference(b, [nll])
        self.assertTrue(ctx.exception.args[0].startswith(
            "The label tensor (INT32   [2 5]) must have shape [2 4] to match all but the final "
            "dimension of the probabilities tensor (FLOAT   [2 4 3])"), ctx.exception.args[0])
        self.assertIn("Nll", ctx.exception.args[0])

    def test_loss_must_be_scalar(self):
        b = popart.Builder()
        x = b.addInitializedInputTensor(np.ones([2, 3], np.float32))
        y = b.aiOnnx.relu([x])
        b.addOutputTensor(y)
        with self.assertRaises(popart.popart_exception) as ctx:
            popart.TrainingSession(fnModel=b.getModelProto(),
                                   dataFlow=popart.DataFlow(1, [y]), loss=y,
                                   optimizer=popart.ConstSGD(0.1),
                                   deviceInfo=popart.DeviceManager().createCpuDevice())
        self.assertTrue(ctx.exception.args[0].endswith("must be a scalar tensor"))
        self.assertIn(y, ctx.exception.args[0])


if __name__ == "__main__":
    unittest.main()
