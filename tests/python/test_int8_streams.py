"""8-bit host streams: INT8 and UINT8 inputs and anchors travel to and from the device, a Cast turns
them into arithmetic types and back; arithmetic on the 8-bit tensors themselves is taken by the IR
(as PopART's IR takes it) and refused by prepareDevice, where the device's kernels have no 8-bit form,
as Poplar's compile refuses it in PopART: a poplar_exception naming the op and the type."""
import unittest

import numpy as np

import xtrain as popart

TYPES = [("INT8", np.int8), ("UINT8", np.uint8)]


def session_of(builder, outputs):
    return popart.InferenceSession(
        fnModel=builder.getModelProto(),
        dataFlow=popart.DataFlow(1, {o: popart.AnchorReturnType("All") for o in outputs}),
        deviceInfo=popart.DeviceManager().createCpuDevice())


class Int8StreamTest(unittest.TestCase):
    def test_cast_scale_cast_round_trip(self):
        for name, npt in TYPES:
            with self.subTest(type=name):
                x = np.array([1, 3, 20, 25], dtype=npt)
                b = popart.Builder()
                i = b.addInputTensor(name, list(x.shape))
                half = b.aiOnnx.cast([i], "FLOAT16")
                scaled = b.aiGraphcore.scale([half], 5)
                out = b.aiOnnx.cast([scaled], name)
                s = session_of(b, [out])
                s.prepareDevice()
                anchors = s.initAnchorArrays()
                self.assertEqual(anchors[out].dtype, npt)
                s.run(popart.PyStepIO({i: x}, anchors))
                np.testing.assert_array_equal(anchors[out], (x.astype(np.int64) * 5).astype(npt))

    def test_arithmetic_on_8_bit_tensors_fails_at_prepare_device(self):
        for name, _ in TYPES:
            for op in ("add", "mul"):
                with self.subTest(type=name, op=op):
                    b = popart.Builder()
                    i1 = b.addInputTensor(popart.TensorInfo(name, [2]))
                    i2 = b.addInputTensor(popart.TensorInfo(name, [2]))
                    o = getattr(b.aiOnnx, op)([i1, i2])
                    # The IR takes it (the output is 8-bit too) ...
                    self.assertEqual(b.getTensorDtypeString(o).upper(), name)
                    s = session_of(b, [i1, i2, o])
                    # ... the device cannot build it.
                    with self.assertRaises(popart.poplar_exception) as ctx:
                        s.prepareDevice()
                    self.assertIsInstance(ctx.exception, popart.popart_exception)
                    message = str(ctx.exception)
                    self.assertIn(op.capitalize(), message)
                    self.assertIn(name, message)
                    self.assertIn("cast the operands first", message)

    def test_other_types_are_still_refused_at_import(self):
        b = popart.Builder()
        i1 = b.addInputTensor(popart.TensorInfo("BOOL", [2]))
        i2 = b.addInputTensor(popart.TensorInfo("BOOL", [2]))
        o = b.aiOnnx.add([i1, i2])
        with self.assertRaises(popart.popart_exception) as ctx:
            session_of(b, [o])
        self.assertIn("inputs are BOOL, expected FLOAT, FLOAT16, INT32, INT64, INT8 or UINT8",
                      str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
