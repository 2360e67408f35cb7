"""Run by install_test.sh with the installed package on PYTHONPATH: examples/custom_op's library
(LeakyCube and its grad op), built against the installed package, is loaded with ctypes into the
installed Python package and used through xtrain.torch.custom_op, as a PopTorch user loads a
custom op library. A module using it is trained through trainingModel and must match PyTorch
training the same module with the op written in torch (1e-4 relative after three steps); the
library and the xtrain libraries it links are the prefix's.

Usage: torch_custom_op.py <prefix> <path of libleaky_cube.so>
"""
import ctypes
import sys

import torch
import torch.nn.functional as F

import xtrain.torch as poptorch

prefix, library = sys.argv[1], sys.argv[2]
assert poptorch.__file__.startswith(prefix), poptorch.__file__
ctypes.cdll.LoadLibrary(library)
maps = open("/proc/self/maps").read().split()
loaded = sorted({p for p in maps if "libxtrain_" in p})
outside = [p for p in loaded if not p.startswith(prefix)]
assert loaded and not outside, "xtrain libraries loaded from outside %s: %s" % (prefix, outside)

ALPHA = 0.2


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 6)
        self.fc2 = torch.nn.Linear(6, 2)

    def forward(self, x, target=None):
        h = torch.tanh(self.fc1(x))
        if poptorch.isRunningOnIpu():
            h = poptorch.custom_op([h], "LeakyCube", "com.acme", 1, example_outputs=[h],
                                   attributes={"alpha": ALPHA})[0]
        else:  # the op in torch: x^3 where x >= 0, alpha * x elsewhere
            h = torch.where(h >= 0, h * h * h, ALPHA * h)
        out = self.fc2(h)
        if self.training:
            return out, F.mse_loss(out, target)
        return out


torch.manual_seed(0)
model = Net()
reference = Net()
reference.load_state_dict(model.state_dict())
training = poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5))
reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.5)
for step in range(3):
    x, target = torch.randn(8, 4), torch.randn(8, 2)
    _, loss = training(x, target)
    reference_optimizer.zero_grad()
    _, reference_loss = reference(x, target)
    reference_loss.backward()
    reference_optimizer.step()
    torch.testing.assert_close(loss, reference_loss.detach(), rtol=1e-4, atol=1e-6)
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(model.state_dict()[name], value, rtol=1e-4, atol=1e-6,
                                   msg=lambda m: "%s after step %d: %s" % (name, step, m))
x = torch.randn(3, 4)
reference.eval()
with torch.no_grad():
    torch.testing.assert_close(poptorch.inferenceModel(model)(x), reference(x), rtol=1e-4,
                               atol=1e-6)
print("xtrain.torch.custom_op: the installed example's LeakyCube trained as PyTorch trains it")
