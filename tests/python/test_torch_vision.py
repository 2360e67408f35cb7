"""torchvision models trained through xtrain.torch's trainingModel match PyTorch's own training of
the same module (docs/poptorch.md): ResNet-18, MobileNetV3-small and SqueezeNet 1.1, three steps of
SGD with momentum, then ResNet-18's inference. Dropout is set to p=0: its masks come from xtrain's
generator, not torch's. Inputs are 64x64, where the last BatchNorms see 2x2 maps: at 32x32 they see
1x1 maps of 4 samples, where PyTorch's own float32 and float64 runs part after two steps, so no
implementation can be compared there."""
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

torchvision = None
if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import xtrain.torch as poptorch
    try:
        import torchvision
    except ImportError:
        pass

    def assert_close_relative(actual, expected, name, noise=0.0):
        """Issue 31's criterion, 1e-4 relative, for a whole tensor: each element within 1e-4 of
        its value (rtol) or within 1e-4 of the tensor's largest magnitude (atol). A fixed atol
        fails on elements near zero, whose difference is rounding noise of the tensor's scale:
        the two sides sum convolutions in other orders (PyTorch's OpenBLAS or its own kernels,
        xtrain's kernels), and after three steps a conv1 weight element near zero differs by
        4.7e-6 in a tensor whose largest element is about 0.1.

        Some tensors are rounding noise as a whole: a BatchNorm bias's gradient is a sum over the
        batch and the map that nearly cancels, so after three steps the bias (about 3e-3) is
        1.6e-6 away in PyTorch's own float32 run from its float64 run, as in xtrain's. `noise` is
        that distance (PyTorch float32 from float64, for this tensor): xtrain may differ from
        PyTorch float32 by up to 3 times it (each side's own rounding, and a margin). The atol
        never goes below 1e-6, the float32 noise of weights of order 0.1 to 1."""
        scale = float(expected.abs().max()) if expected.numel() else 0.0
        atol = max(1e-6, 1e-4 * scale, 3 * noise)
        torch.testing.assert_close(actual, expected, rtol=1e-4, atol=atol,
                                   msg=lambda m: "%s (atol %.3g): %s" % (name, atol, m))

    class WithLoss(nn.Module):
        """A torchvision classifier with the loss in forward, as trainingModel needs it."""

        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x, y=None):
            out = self.net(x)
            if self.training:
                return out, F.cross_entropy(out, y)
            return out


@unittest.skipIf(torch is None, SKIP_REASON)
@unittest.skipIf(torchvision is None, "torchvision (Debian's python3-torchvision) is not importable")
class TorchvisionMatchesPyTorch(PrivatePool, unittest.TestCase):

    def train_both(self, make_net, steps=3):
        torch.manual_seed(0)
        model = WithLoss(make_net(num_classes=10))
        for module in model.modules():
            if isinstance(module, nn.Dropout):
                module.p = 0.0
        reference = tt.twin(model)
        wrapped = poptorch.trainingModel(
            model, optimizer=torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.01, momentum=0.9)
        # PyTorch in float64: how far float32 rounding alone moves each tensor (see
        # assert_close_relative).
        reference64 = tt.twin(reference).double()
        ref64_opt = torch.optim.SGD(reference64.parameters(), lr=0.01, momentum=0.9)
        g = torch.Generator().manual_seed(1)
        for step in range(steps):
            x = torch.randn(4, 3, 64, 64, generator=g)
            y = torch.randint(0, 10, (4,), generator=g)
            _, loss = wrapped(x, y)
            ref_loss = tt.pytorch_step(reference, ref_opt, x, y)[0]
            tt.pytorch_step(reference64, ref64_opt, x.double(), y)
            self.assertAlmostEqual(float(loss), ref_loss, delta=1e-4 * abs(ref_loss),
                                   msg="step %d" % step)
        theirs = reference.state_dict()
        exact = reference64.state_dict()
        for k, v in model.state_dict().items():
            if v.is_floating_point():
                noise = float((theirs[k].double() - exact[k]).abs().max())
                assert_close_relative(v, theirs[k], k, noise)
            else:
                self.assertTrue(torch.equal(v, theirs[k]), k)
        return model, reference

    def test_resnet18_and_its_inference(self):
        model, reference = self.train_both(torchvision.models.resnet18)
        x = torch.randn(4, 3, 64, 64, generator=torch.Generator().manual_seed(5))
        out = poptorch.inferenceModel(model)(x)
        reference.eval()
        with torch.no_grad():
            assert_close_relative(out, reference(x), "inference output")

    def test_mobilenet_v3_small(self):
        self.train_both(torchvision.models.mobilenet_v3_small)

    def test_squeezenet1_1(self):
        self.train_both(torchvision.models.squeezenet1_1)


if __name__ == "__main__":
    unittest.main()
