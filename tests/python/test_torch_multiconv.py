"""poptorch.MultiConv (docs/poptorch.md, "MultiConv"): convolutions in the block compute what the
separate convolutions compute, on the CPU and trained through the wrapper as PyTorch trains the
same module without the block; its options are checked as PopTorch checks them."""
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import xtrain.torch as poptorch

    class TwoBranches(nn.Module):
        """Two convolutions of the same input, and a third of a second input, optionally in one
        MultiConv block built by make_block."""

        def __init__(self, make_block=None):
            super().__init__()
            self.a = nn.Conv2d(1, 3, 3, padding=1)
            self.b = nn.Conv2d(1, 3, 1)
            self.c = nn.Conv2d(1, 2, 3, padding=1)
            self.fc = nn.Linear(8 * 6 * 6, 4)
            self.make_block = make_block

        def forward(self, x, y=None):
            if self.make_block is None:
                ha, hb, hc = self.a(x), self.b(x), self.c(x * 2)
            else:
                with self.make_block():
                    ha, hb, hc = self.a(x), self.b(x), self.c(x * 2)
            out = self.fc(torch.relu(torch.cat([ha, hb, hc], 1)).flatten(1))
            if self.training:
                return out, F.cross_entropy(out, y)
            return out

    def full_block():
        return (poptorch.MultiConv().availableMemoryProportions((0.8, 0.7, 0.6))
                .partialsTypes([torch.float, torch.float, torch.float])
                .planType(poptorch.MultiConvPlanType.Parallel).perConvReservedTiles(50)
                .cycleBackOff(0.3).enableConvDithering(True))


@unittest.skipIf(torch is None, SKIP_REASON)
class MultiConvTest(PrivatePool, unittest.TestCase):

    def test_block_computes_the_separate_convolutions(self):
        plain = tt.make(TwoBranches)
        multi = tt.make(TwoBranches)
        multi.make_block = full_block
        x, y = tt.cnn_data(1, 4)[0]
        torch.testing.assert_close(multi(x, y)[0], plain(x, y)[0], rtol=0, atol=0)
        self.assertEqual(F.conv2d.__name__, "conv2d", "F.conv2d restored after the block")

    def test_trained_through_the_wrapper_as_pytorch_without_the_block(self):
        model = tt.make(TwoBranches)
        model.make_block = full_block
        reference = tt.make(TwoBranches)
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
        wrapped = poptorch.trainingModel(
            model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        for x, y in tt.cnn_data(3, 4):
            _, loss = wrapped(x, y)
            ref_loss = tt.pytorch_step(reference, ref_opt, x, y)[0]
            self.assertAlmostEqual(float(loss), ref_loss, delta=1e-4 * ref_loss)
        for k, v in reference.state_dict().items():
            torch.testing.assert_close(model.state_dict()[k], v, rtol=1e-4, atol=1e-6,
                                       msg=lambda m: "%s: %s" % (k, m))
        x, _ = tt.cnn_data(1, 4, seed=2)[0]
        reference.eval()
        with torch.no_grad():
            torch.testing.assert_close(poptorch.inferenceModel(model)(x), reference(x),
                                       rtol=1e-4, atol=1e-6)

    def test_one_value_per_convolution_or_one_for_all(self):
        x, y = tt.cnn_data(1, 4)[0]
        model = tt.make(TwoBranches)
        model.make_block = lambda: poptorch.MultiConv().availableMemoryProportions(0.5)
        model(x, y)  # one value for every convolution
        model.make_block = lambda: poptorch.MultiConv().enableConvDithering([True, False])
        with self.assertRaisesRegex(ValueError, "enableConvDithering has 2 values but the block "
                                    "ran 3 convolutions"):
            model(x, y)
        model.make_block = lambda: poptorch.MultiConv().partialsTypes([torch.float] * 4)
        with self.assertRaisesRegex(ValueError, "partialsTypes has 4 values .* 3 convolutions"):
            poptorch.trainingModel(model)(x, y)  # in the capture too

    def test_blocks_cannot_be_nested(self):
        with poptorch.MultiConv():
            with self.assertRaisesRegex(RuntimeError, "cannot be nested"):
                with poptorch.MultiConv():
                    pass
        with poptorch.MultiConv():  # the failed one left nothing behind
            pass

    def test_bad_values_are_refused(self):
        m = poptorch.MultiConv()
        for method, value, message in (
                ("availableMemoryProportions", 1.5, r"in \(0, 1\], got 1.5"),
                ("availableMemoryProportions", [], "non-empty list"),
                ("availableMemoryProportions", "0.5", "a float in"),
                ("partialsTypes", torch.int32, "expected torch.float or torch.half"),
                ("partialsTypes", "float", "torch.float or torch.half, or a non-empty"),
                ("enableConvDithering", 1, "a bool"),
                ("planType", "parallel", "MultiConvPlanType"),
                ("perConvReservedTiles", -1, "an int >= 0"),
                ("perConvReservedTiles", 2.0, "an int >= 0"),
                ("cycleBackOff", 1, r"a float in \[0, 1\]"),
                ("cycleBackOff", 1.5, r"a float in \[0, 1\]")):
            with self.assertRaisesRegex(AssertionError, "MultiConv.%s: .*%s" % (method, message),
                                        msg="%s(%r)" % (method, value)):
                getattr(m, method)(value)
        with self.assertRaisesRegex(NotImplementedError, "half-precision partials"):
            m.partialsTypes(torch.half)
        self.assertIs(m.planType(None), m)
        self.assertIs(m.availableMemoryProportions(None), m)


if __name__ == "__main__":
    unittest.main()
