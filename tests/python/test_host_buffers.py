"""NumPy arrays of every memory layout at the host boundary (docs/python.md, "Sessions", Buffers):

- the Builder takes initial values and constants in logical (row-major) order, whatever the array's
  strides (transposed, Fortran-order, reversed, sliced);
- PyStepIO and PyStepIOCallback take inputs of any layout and read them in logical order (PyStepIO
  copies a non-contiguous input once, when it is made; a C-contiguous one is used in place);
- an output buffer the session writes into must be C-contiguous: any other layout is refused with
  PopART's exception, naming the tensor and the fix;
- buffers that hold the expected elements in row-major order with dimensions merged or split (the
  replicas folded into the batch) are accepted; other shapes of the same size are refused.

Unlike PopART, which refuses a non-contiguous input to PyStepIO rather than pay for a copy, xtrain
copies it."""
import re
import unittest

import numpy as np
import onnx
from onnx import numpy_helper

import xtrain as popart
from python_testing import PrivatePool


def layouts(values):
    """values (a C-contiguous array) as arrays of other layouts holding the same logical values."""
    wide = np.zeros(values.shape[:-1] + (values.shape[-1] * 3,), values.dtype)
    wide[..., ::3] = values
    return {
        "fortran": np.asfortranarray(values),
        "transposed": np.ascontiguousarray(values.T).T,
        "reversed": np.ascontiguousarray(values[::-1])[::-1],
        "strided": wide[..., ::3],
    }


def identity_session(shape, dtype="INT32", bps=1):
    """An inference session of y = identity(x), compiled, with y anchored ALL."""
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo(dtype, shape), "x")
    y = b.aiOnnx.identity([x], "y")
    b.addOutputTensor(y)
    session = popart.InferenceSession(
        fnModel=b.getModelProto(),
        dataFlow=popart.DataFlow(bps, {y: popart.AnchorReturnType("ALL")}),
        deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    return session, x, y


class BuilderValuesTest(PrivatePool, unittest.TestCase):
    def test_initial_values_are_stored_in_logical_order(self):
        values = np.arange(24, dtype=np.int32).reshape(4, 6) * 7 - 50
        b = popart.Builder()
        ids = {"contiguous": b.addInitializedInputTensor(values, "contiguous")}
        for name, array in layouts(values).items():
            self.assertFalse(array.flags.c_contiguous, name)
            ids[name] = b.addInitializedInputTensor(array, name)
        stored = {i.name: numpy_helper.to_array(i)
                  for i in onnx.load_from_string(b.getModelProto()).graph.initializer}
        for name, tid in ids.items():
            with self.subTest(name):
                np.testing.assert_array_equal(stored[tid], values)

    def test_transposed_weight_and_constant_run_as_given(self):
        rng = np.random.RandomState(4)
        weight = rng.randint(-99, 99, (5, 3)).astype(np.int32).T   # [3, 5], non-contiguous
        const = np.asfortranarray(rng.randint(-99, 99, (3, 5)).astype(np.int32))
        b = popart.Builder()
        w = b.addInitializedInputTensor(weight, "w")
        k = b.aiOnnx.constant(const, "k")
        w_out = b.aiOnnx.identity([w])
        total = b.aiOnnx.add([w, k])
        b.addOutputTensor(total)
        session = popart.InferenceSession(
            fnModel=b.getModelProto(),
            dataFlow=popart.DataFlow(1, {w_out: popart.AnchorReturnType("ALL"),
                                         total: popart.AnchorReturnType("ALL")}),
            deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
        session.prepareDevice()
        session.weightsFromHost()
        anchors = session.initAnchorArrays()
        session.run(popart.PyStepIO({}, anchors))
        np.testing.assert_array_equal(anchors[w_out], weight)
        np.testing.assert_array_equal(anchors[total], weight + const)


class StepInputsTest(PrivatePool, unittest.TestCase):
    def test_pystepio_inputs_of_any_layout(self):
        session, x, y = identity_session([2, 4, 3], bps=2)
        values = np.arange(48, dtype=np.int32).reshape(2, 2, 4, 3) - 20
        for name, array in layouts(values).items():
            with self.subTest(name):
                anchors = session.initAnchorArrays()
                session.run(popart.PyStepIO({x: array}, anchors))
                np.testing.assert_array_equal(anchors[y], values)

    def test_non_contiguous_input_is_read_when_the_stepio_is_made(self):
        session, x, y = identity_session([3, 2], "FLOAT")
        base = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
        view = base.T                      # non-contiguous: copied by PyStepIO
        contiguous = base.T.copy()         # C-contiguous: used in place
        for array, changes_seen in ((view, False), (contiguous, True)):
            with self.subTest(contiguous=changes_seen):
                before = array.copy()
                anchors = session.initAnchorArrays()
                io = popart.PyStepIO({x: array}, anchors)
                array[0, 0] = 100.0
                session.run(io)
                np.testing.assert_array_equal(anchors[y], array if changes_seen else before)

    def test_callback_inputs_of_any_layout(self):
        session, x, y = identity_session([4, 3])
        values = np.arange(12, dtype=np.int32).reshape(4, 3) * -3
        for name, array in layouts(values).items():
            with self.subTest(name):
                out = np.zeros((4, 3), np.int32)
                session.run(popart.PyStepIOCallback(
                    lambda tid, prefetch: array, lambda tid: None, lambda tid: out,
                    lambda tid: None))
                np.testing.assert_array_equal(out, values)


class OutputBuffersTest(PrivatePool, unittest.TestCase):
    def test_non_contiguous_outputs_are_refused(self):
        session, x, y = identity_session([4, 3])
        feed = np.ones((4, 3), np.int32)
        for name, array in layouts(np.zeros((4, 3), np.int32)).items():
            with self.subTest(name):
                with self.assertRaisesRegex(
                        popart.popart_exception,
                        r"PyStepIO output '%s': .*it is not c-contiguous.*ascontiguousarray"
                        % re.escape(y)):
                    popart.PyStepIO({x: feed}, {y: array})
                io = popart.PyStepIOCallback(lambda tid, prefetch: feed, lambda tid: None,
                                             lambda tid: array, lambda tid: None)
                with self.assertRaisesRegex(
                        popart.popart_exception,
                        r"PyStepIOCallback output '%s': .*it is not c-contiguous" % re.escape(y)):
                    session.run(io)


class WeightsBufferLayoutTest(PrivatePool, unittest.TestCase):
    def test_non_contiguous_weight_buffers_are_refused(self):
        b = popart.Builder()
        w = b.addInitializedInputTensor(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
        y = b.aiOnnx.neg([w], "y")
        session = popart.InferenceSession(
            fnModel=b.getModelProto(),
            dataFlow=popart.DataFlow(1, {y: popart.AnchorReturnType("ALL")}),
            deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
        session.prepareDevice()
        out = np.zeros((3, 2), np.float32).T
        with self.assertRaisesRegex(popart.popart_exception, "'w'.*it is not c-contiguous"):
            session.readWeights(popart.PyWeightsIO({w: out}))


class RegroupedBuffersTest(PrivatePool, unittest.TestCase):
    def test_replicas_folded_into_the_batch(self):
        # Replicated inference: the buffers are [bps, replicas, batch, 3]; the same elements as
        # [bps, replicas * batch, 3] or flat are accepted (PopART checks only the count, and
        # Graphcore's MNIST tutorial feeds the replicas folded into the batch).
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 3]), "x")
        y = b.aiOnnx.mul([x, x], "y")
        b.addOutputTensor(y)
        opts = popart.SessionOptions()
        opts.enableReplicatedGraphs = True
        opts.replicatedGraphCount = 2
        with popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}) as device:
            session = popart.InferenceSession(
                fnModel=b.getModelProto(),
                dataFlow=popart.DataFlow(5, {y: popart.AnchorReturnType("ALL")}),
                userOptions=opts, deviceInfo=device)
            session.prepareDevice()
            anchors = session.initAnchorArrays()
            self.assertEqual(anchors[y].shape, (5, 2, 4, 3))
            data = np.linspace(-3, 3, 5 * 2 * 4 * 3, dtype=np.float32)
            flat = np.zeros(data.size, np.float32)
            session.run(popart.PyStepIO({x: data.reshape(5, 8, 3)}, {y: flat}))
            np.testing.assert_array_equal(flat, data * data)
            session.run(popart.PyStepIO({x: data.reshape(5, 2, 4, 3)}, anchors))
            np.testing.assert_array_equal(anchors[y].reshape(-1), data * data)
            # The same element count but not a regrouping: refused, naming both shapes.
            for bad in [(5, 2, 3, 4), (10, 3, 4), (24, 5)]:
                with self.subTest(shape=bad):
                    with self.assertRaisesRegex(
                            popart.popart_exception,
                            r"input 'x': expected shape \[5,2,4,3\], got shape"):
                        session.run(popart.PyStepIO({x: data.reshape(bad)}, anchors))




class UnusedInputsTest(PrivatePool, unittest.TestCase):
    """A model input no op reads is removed from the session, as PopART prunes it: a run needs no
    buffer for it and ignores one that is given; a buffer for a name that is no input at all is
    still an error."""

    def session(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [3]), "x")
        unused = b.addInputTensor(popart.TensorInfo("INT32", [2]), "unused")
        y = b.aiOnnx.relu([x], "y")
        session = popart.InferenceSession(
            fnModel=b.getModelProto(),
            dataFlow=popart.DataFlow(1, {y: popart.AnchorReturnType("ALL")}),
            deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
        session.prepareDevice()
        return session, x, unused, y

    def test_unused_input_needs_no_buffer(self):
        session, x, _, y = self.session()
        anchors = session.initAnchorArrays()
        values = np.array([-1.0, 0.5, 2.0], np.float32)
        session.run(popart.PyStepIO({x: values}, anchors))
        np.testing.assert_array_equal(anchors[y], np.maximum(values, 0))

    def test_buffer_for_unused_input_is_ignored(self):
        session, x, unused, y = self.session()
        anchors = session.initAnchorArrays()
        values = np.array([3.0, -2.0, 1.0], np.float32)
        # Even of a wrong shape: nothing reads it.
        session.run(popart.PyStepIO({x: values, unused: np.zeros([5], np.int32)}, anchors))
        np.testing.assert_array_equal(anchors[y], np.maximum(values, 0))

    def test_buffer_for_a_name_that_is_no_input_is_refused(self):
        session, x, _, _ = self.session()
        anchors = session.initAnchorArrays()
        with self.assertRaisesRegex(popart.popart_exception, "'nothing'.*not an input"):
            session.run(popart.PyStepIO({x: np.zeros([3], np.float32),
                                         "nothing": np.zeros([3], np.float32)}, anchors))

    def test_buffer_for_a_weight_is_ignored(self):
        """PopART streams only the host inputs: a weight's buffer among them is passed over (with
        a warning), whatever its type and shape; the weight keeps its value."""
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
        w = b.addInitializedInputTensor(np.array([1.0, 2.0], np.float32), "w")
        y = b.aiOnnx.add([x, w])
        opts = popart.SessionOptions()
        opts.constantWeights = False
        session = popart.InferenceSession(
            fnModel=b.getModelProto(), dataFlow=popart.DataFlow(1, [y]),
            deviceInfo=popart.DeviceManager().createIpuModelDevice({}), userOptions=opts)
        session.prepareDevice()
        anchors = session.initAnchorArrays()
        session.run(popart.PyStepIO({x: np.zeros(2, np.float32), w: np.zeros(3)}, anchors))
        np.testing.assert_array_equal(anchors[y], [1.0, 2.0])

    def test_anchored_input_is_kept(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
        session = popart.InferenceSession(
            fnModel=b.getModelProto(),
            dataFlow=popart.DataFlow(1, {x: popart.AnchorReturnType("ALL")}),
            deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
        session.prepareDevice()
        anchors = session.initAnchorArrays()
        with self.assertRaisesRegex(popart.popart_exception, "no buffer for input 'x'"):
            session.run(popart.PyStepIO({}, anchors))
        session.run(popart.PyStepIO({x: np.array([4.0, 5.0], np.float32)}, anchors))
        np.testing.assert_array_equal(anchors[x], [4.0, 5.0])


class Int64InputsTest(PrivatePool, unittest.TestCase):
    """An INT32 input may be fed INT64 data (NumPy's default integer), as PopART converts it on
    the host; a value INT32 cannot hold is an error naming the input; other types still must
    match."""

    def test_int64_data_for_an_int32_input(self):
        session, x, y = identity_session([4], "INT32", bps=2)
        anchors = session.initAnchorArrays()
        values = np.array([[1, -2, 3, 2**31 - 1], [-(2**31), 0, 7, 8]], np.int64)
        session.run(popart.PyStepIO({x: values}, anchors))
        np.testing.assert_array_equal(anchors[y], values.astype(np.int32))
        self.assertEqual(anchors[y].dtype, np.int32)

    def test_int64_data_through_callbacks(self):
        session, x, y = identity_session([3], "INT32")
        anchors = session.initAnchorArrays()
        data = np.array([5, -6, 7], np.int64)
        io = popart.PyStepIOCallback(lambda i, prefetch: data, lambda i: None,
                                     lambda i: anchors[i], lambda i: None)
        session.run(io)
        np.testing.assert_array_equal(anchors[y], [5, -6, 7])

    def test_values_int32_cannot_hold_are_refused(self):
        session, x, _ = identity_session([2], "INT32")
        with self.assertRaisesRegex(popart.popart_exception, r"'x' element 1 is 4294967296"):
            session.run(popart.PyStepIO({x: np.array([1, 2**32], np.int64)},
                                        session.initAnchorArrays()))

    def test_other_types_must_match(self):
        session, x, _ = identity_session([2], "INT32")
        with self.assertRaisesRegex(popart.popart_exception, "'x'.*int32"):
            session.run(popart.PyStepIO({x: np.array([1.0, 2.0], np.float32)},
                                        session.initAnchorArrays()))

    def test_synthetic_data_reads_no_input_buffer(self):
        """With synthetic data no input buffer is read, so its type is not looked at (PopART
        streams nothing from the host); the input holds the synthetic values."""
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("INT8", [3]), "x")
        y = b.aiOnnx.identity([x], "y")
        opts = popart.SessionOptions()
        opts.syntheticDataMode = popart.SyntheticDataMode.Zeros
        session = popart.InferenceSession(
            fnModel=b.getModelProto(), dataFlow=popart.DataFlow(1, [y]), userOptions=opts,
            deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
        session.prepareDevice()
        anchors = session.initAnchorArrays()
        anchors[y][:] = 9
        session.run(popart.PyStepIO({x: np.ones([3])}, anchors))
        np.testing.assert_array_equal(anchors[y], [0, 0, 0])


if __name__ == "__main__":
    unittest.main()
