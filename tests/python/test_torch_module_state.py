"""The module's state and the device's: buffers stay constants in training, wrappers of a module
and of its submodules see each other's training, dropped wrappers release their module
(docs/poptorch.md, "Weights in sync" and "Buffers")."""
import gc
import os
import unittest
import weakref

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import xtrain.torch as poptorch

    class Scaled(nn.Module):
        """A linear layer whose output a registered buffer scales (not BatchNorm's statistics)."""

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 3)
            self.register_buffer("scale", torch.tensor([0.5, 2.0, -1.0]))

        def forward(self, x, y):
            out = self.fc(x) * self.scale
            return out, F.cross_entropy(out, y)

    class WithLoss(nn.Module):
        """PopTorch's usual pattern: the loss around the model, which is wrapped for inference."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x, y):
            out = self.model(x)
            return out, F.cross_entropy(out, y)


@unittest.skipIf(torch is None, SKIP_REASON)
class Buffers(PrivatePool, unittest.TestCase):

    def test_a_registered_buffer_is_not_trained(self):
        model = tt.make(Scaled)
        reference = tt.twin(model)
        wrapped = poptorch.trainingModel(
            model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5))
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.5)
        for x, y in tt.mlp_data(4, 4):
            wrapped(x, y)
            ref_opt.zero_grad()
            reference(x, y)[1].backward()
            ref_opt.step()
        torch.testing.assert_close(model.scale, torch.tensor([0.5, 2.0, -1.0]), rtol=0, atol=0)
        for k, v in reference.state_dict().items():
            torch.testing.assert_close(model.state_dict()[k], v, rtol=1e-4, atol=1e-6, msg=k)

    def test_changing_a_constant_buffer_after_compiling_is_refused(self):
        model = tt.make(Scaled)
        wrapped = poptorch.trainingModel(model)
        x, y = tt.mlp_data(1, 4)[0]
        wrapped(x, y)
        with torch.no_grad():
            model.scale.mul_(3)
        with self.assertRaisesRegex(ValueError, "buffer 'scale' changed.*destroy"):
            wrapped(x, y)
        wrapped.destroy()  # compiles again with the new value
        wrapped(x, y)


if __name__ == "__main__":
    unittest.main()
