"""Partials type of matmuls (SessionOptions.partialsTypeMatMuls, Builder.setPartialsType): "half"
keeps a FLOAT16 MatMul's running sum in FLOAT16 between the AMP's groups of 16 products, in the
forward product and in the gradients' products; "float" (and the default) keep it in FLOAT. The
operands are chosen so that the two differ: 2048 + 1 + 1 + 1 with one 1 in each later group of 16
stays 2048 in FLOAT16 partials (2049 is a tie that rounds to even) and is 2051 -> 2052 in FLOAT."""
import unittest

import numpy as np

import xtrain as popart
from python_testing import PrivatePool

K = 64


def column():
    w = np.zeros((K, 1), np.float16)
    w[0] = 2048
    w[16] = w[32] = w[48] = 1
    return w


def run(global_partials=None, node_partials=None):
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT16", [1, K]), "x")
    w = b.addInitializedInputTensor(column(), "w")
    y = b.aiOnnx.matmul([x, w])
    if node_partials is not None:
        b.setPartialsType(y, node_partials)
    opts = popart.SessionOptions()
    if global_partials is not None:
        opts.partialsTypeMatMuls = global_partials
    with popart.DeviceManager().createIpuModelDevice({}) as device:
        flow = popart.DataFlow(1, {y: popart.AnchorReturnType("ALL")})
        session = popart.InferenceSession(fnModel=b.getModelProto(), dataFlow=flow,
                                          deviceInfo=device, userOptions=opts)
        session.prepareDevice()
        out = session.initAnchorArrays()
        session.run(popart.PyStepIO({x: np.ones((1, K), np.float16)}, out))
    return float(out[y].reshape(-1)[0])


def run_gradient(global_partials):
    """x [K, 1] . s [1, 1] summed: d loss / d s = x^T . ones [K, 1], a contraction over K."""
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT16", [K, 1]), "x")
    s = b.addInitializedInputTensor(np.ones((1, 1), np.float16), "s")
    y = b.aiOnnx.matmul([x, s])
    loss = b.aiGraphcore.identityloss([y], reduction=popart.ReductionType.Sum)
    grad = popart.reservedGradientPrefix() + s
    opts = popart.SessionOptions()
    opts.partialsTypeMatMuls = global_partials
    flow = popart.DataFlow(1, {grad: popart.AnchorReturnType("ALL")})
    with popart.DeviceManager().createIpuModelDevice({}) as device:
        session = popart.TrainingSession(fnModel=b.getModelProto(), dataFlow=flow, loss=loss,
                                         optimizer=popart.ConstSGD(0.01), deviceInfo=device,
                                         userOptions=opts)
        session.prepareDevice()
        session.weightsFromHost()
        out = session.initAnchorArrays()
        session.run(popart.PyStepIO({x: column()}, out))
    return float(out[grad].reshape(-1)[0])


class PartialsTypeTest(PrivatePool, unittest.TestCase):
    def test_session_option(self):
        self.assertEqual(run(), 2052.0)
        self.assertEqual(run(global_partials="float"), 2052.0)
        self.assertEqual(run(global_partials="half"), 2048.0)
        self.assertEqual(run(global_partials="HALF"), 2048.0)

    def test_node_attribute_wins_over_the_option(self):
        self.assertEqual(run(node_partials="HALF"), 2048.0)
        self.assertEqual(run(global_partials="half", node_partials="FLOAT"), 2052.0)
        self.assertEqual(run(global_partials="float", node_partials="half"), 2048.0)

    def test_set_partials_type_is_in_the_model(self):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT16", [2, 2]), "x")
        y = b.aiOnnx.matmul([x, x])
        b.setPartialsType(y, "HALF")
        self.assertEqual(b.getPartialsType(y), "HALF")
        self.assertEqual(b.getStringNodeAttribute("__partials_type", {y}), "HALF")
        b.setPartialsType(y, "FLOAT")
        self.assertEqual(b.getStringNodeAttribute("__partials_type", {y}), "FLOAT")

    def test_gradient_product_keeps_the_partials_type(self):
        self.assertEqual(run_gradient("float"), 2052.0)
        self.assertEqual(run_gradient("half"), 2048.0)

    def test_other_values_are_refused(self):
        with self.assertRaisesRegex(popart.popart_exception, "partialsTypeMatMuls = \"double\""):
            run(global_partials="double")


if __name__ == "__main__":
    unittest.main()
