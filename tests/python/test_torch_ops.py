"""PopTorch's ops in xtrain.torch (docs/poptorch.md, "Ops"): nop, ipu_print_tensor, dynamic_slice,
dynamic_update, set_available_memory and serializedMatMul, captured as xtrain's ai.graphcore ops,
each checked against a plain-PyTorch equivalent, on the CPU and trained through the wrapper."""
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import xtrain.torch as poptorch

    class OpsNet(nn.Module):
        """Every op in one forward; `plain` computes the same with plain PyTorch."""

        def __init__(self, plain=False):
            super().__init__()
            self.plain = plain
            self.fc1 = nn.Linear(6, 8)
            self.w = nn.Parameter(torch.randn(8, 8) * 0.3)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x, y=None):
            h = torch.tanh(self.fc1(x))
            # A start computed on the device from the data: 0 or 3.
            start = (x[:, 0].sum() > 0).long() * 3
            if self.plain:
                h = h.clone() @ self.w
                s = h.narrow(1, int(start), 4)
                h = torch.cat([h[:, :1], s * 2.0, h[:, 5:]], 1)
            else:
                h = poptorch.ipu_print_tensor(poptorch.nop(h), "h")
                h = poptorch.set_available_memory(h, 0.5)
                h = poptorch.serializedMatMul(h, self.w,
                                              poptorch.MatMulSerializationMode.OutputChannels, 2)
                s = poptorch.dynamic_slice(h, 1, start, 4)
                h = poptorch.dynamic_update(h, s * 2.0, 1, 1, 4)
            out = self.fc2(h)
            if self.training:
                return out, F.cross_entropy(out, y)
            return out


@unittest.skipIf(torch is None, SKIP_REASON)
class Ops(PrivatePool, unittest.TestCase):

    def test_on_the_cpu_each_is_its_plain_equivalent(self):
        x = torch.randn(4, 10, requires_grad=True)
        start = torch.tensor(3)
        torch.testing.assert_close(poptorch.nop(x), x)
        torch.testing.assert_close(poptorch.ipu_print_tensor(x, "x"), x)
        torch.testing.assert_close(poptorch.dynamic_slice(x, 1, start, 4), x[:, 3:7])
        torch.testing.assert_close(poptorch.dynamic_slice(x, 1, 9, 4), x[:, 6:10])  # clamped
        src = torch.ones(4, 2)
        expected = x.detach().clone()
        expected[:, 3:5] = 1.0
        torch.testing.assert_close(poptorch.dynamic_update(x, src, 1, start, 2), expected)
        w = torch.randn(10, 6)
        torch.testing.assert_close(poptorch.serializedMatMul(
            x, w, poptorch.MatMulSerializationMode.ReductionDim, 5), x @ w)
        # Gradients as PyTorch's own ops give them.
        ours = torch.autograd.grad(poptorch.dynamic_update(
            poptorch.dynamic_slice(x, 1, start, 4) * 3.0, src, 1, 1, 2).sum(), x)[0]
        theirs = torch.autograd.grad(torch.cat([x[:, 3:4] * 3.0, src, x[:, 6:7] * 3.0], 1).sum(),
                                     x)[0]
        torch.testing.assert_close(ours, theirs)

    def test_trained_through_the_wrapper_as_plain_pytorch_trains(self):
        torch.manual_seed(0)
        model = OpsNet()
        reference = OpsNet(plain=True)
        reference.load_state_dict(model.state_dict())
        wrapped = poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(),
                                                                          lr=0.2))
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.2)
        for x, y in tt.mlp_data(3, 4, seed=3):
            x[:, 0] = x[:, 0].abs() if y[0] % 2 else -x[:, 0].abs()  # both starts
            _, loss = wrapped(x, y)
            ref_loss = tt.pytorch_step(reference, ref_opt, x, y)[0]
            self.assertAlmostEqual(float(loss), ref_loss, delta=1e-4 * abs(ref_loss))
        for k, v in reference.state_dict().items():
            torch.testing.assert_close(model.state_dict()[k], v, rtol=1e-4, atol=1e-6, msg=k)
        nodes = {(n.domain, n.op_type): n for n in wrapped._captured.proto.graph.node}
        for op in ("Nop", "PrintTensor", "DynamicSlice", "DynamicUpdate"):
            self.assertIn(("ai.graphcore", op), nodes)
        matmul = [n for n in wrapped._captured.proto.graph.node if n.op_type == "MatMul" and any(
            a.name == "__serialize_matmul_mode" for a in n.attribute)]
        self.assertEqual(len(matmul), 1)
        attrs = {a.name: a for a in matmul[0].attribute}
        self.assertEqual(attrs["__serialize_matmul_mode"].s, b"output_channels")
        self.assertEqual(attrs["__serialize_matmul_factor"].i, 2)
        self.assertEqual([a.s for a in nodes[("ai.graphcore", "PrintTensor")].attribute
                          if a.name == "title"], [b"h"])

    def test_bad_arguments(self):
        x = torch.randn(4, 10)
        with self.assertRaisesRegex(ValueError, "dynamic_slice: size 11 must be in"):
            poptorch.dynamic_slice(x, 1, 0, 11)
        with self.assertRaisesRegex(ValueError, "dynamic_slice: dim 2 is not a dimension"):
            poptorch.dynamic_slice(x, 2, 0, 1)
        with self.assertRaisesRegex(ValueError, "step must be 1"):
            poptorch.dynamic_slice(x, 1, 0, 2, step=2)
        with self.assertRaisesRegex(ValueError, "start must be one integer"):
            poptorch.dynamic_slice(x, 1, torch.tensor(1.5), 2)
        with self.assertRaisesRegex(ValueError, r"dynamic_update: src is .* expected"):
            poptorch.dynamic_update(x, torch.ones(4, 3), 1, 0, 2)
        with self.assertRaisesRegex(ValueError, "float_format"):
            poptorch.ipu_print_tensor(x, float_format="hex")
        with self.assertRaisesRegex(ValueError, r"proportion must be in \(0, 1\]"):
            poptorch.set_available_memory(x, 1.5)
        with self.assertRaisesRegex(TypeError, "MatMulSerializationMode"):
            poptorch.serializedMatMul(x, x.t(), "output_channels", 2)
        with self.assertRaisesRegex(ValueError, "factor must be a positive int"):
            poptorch.serializedMatMul(x, x.t(), poptorch.MatMulSerializationMode.InputChannels, 0)


if __name__ == "__main__":
    unittest.main()
