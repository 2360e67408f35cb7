"""xtrain.torch.optim.LAMB (PopTorch's poptorch.optim.LAMB) against a NumPy implementation of
LAMB's update written here from its definition (docs/optimizers.md, section 3.1): trained through
the wrapper (xtrain's Adam in Lamb and LambNoBias mode) and stepped on the CPU, with bias
correction or without, max_weight_norm clipping, 2 replicas; its optimizer state, its constants and
bad values (docs/poptorch.md, "Optimizers")."""
import math
import unittest

import numpy as np

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import xtrain.torch as poptorch


class NumpyLamb:
    """LAMB in float64: m, v; m^, v^ (bias correction); u = m^/(sqrt(v^)+eps) + wd*w;
    ratio = min(|w|, mwn)/|u| (1 if either is 0); w -= lr*ratio*u."""

    def __init__(self, lr, betas, eps, wd, bias_correction, mwn):
        self.lr, (self.b1, self.b2), self.eps, self.wd = lr, betas, eps, wd
        self.bias_correction, self.mwn = bias_correction, mwn
        self.m, self.v, self.t = {}, {}, 0

    def step(self, weights, grads):
        self.t += 1
        for k, w in weights.items():
            g = grads[k]
            self.m[k] = self.b1 * self.m.get(k, 0.0) + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v.get(k, 0.0) + (1 - self.b2) * g * g
            m, v = self.m[k], self.v[k]
            if self.bias_correction:
                m, v = m / (1 - self.b1 ** self.t), v / (1 - self.b2 ** self.t)
            u = m / (np.sqrt(v) + self.eps) + self.wd * w
            r1, r2 = min(np.linalg.norm(w), self.mwn), np.linalg.norm(u)
            ratio = r1 / r2 if r1 > 0 and r2 > 0 else 1.0
            weights[k] = w - self.lr * ratio * u


def numpy_training(model, data, lamb, replicas=1):
    """The model's parameters after LAMB steps on data; each step's gradient is the mean of the
    replicas' micro-batch gradients (as the wrapper's), from torch's autograd."""
    model = tt.twin(model)
    weights = {k: p.detach().double().numpy().copy() for k, p in model.named_parameters()}
    for x, y in data:
        with torch.no_grad():
            for k, p in model.named_parameters():
                p.copy_(torch.from_numpy(weights[k]))
        model.zero_grad()
        micro = x.shape[0] // replicas
        for r in range(replicas):
            (model(x[r * micro:(r + 1) * micro], y[r * micro:(r + 1) * micro])[1]
             / replicas).backward()
        lamb.step(weights, {k: p.grad.double().numpy() for k, p in model.named_parameters()})
    return weights


@unittest.skipIf(torch is None, SKIP_REASON)
class LambMatchesItsDefinition(PrivatePool, unittest.TestCase):

    def check(self, kwargs, reference, replicas=1, steps=4):
        model = tt.make(tt.Mlp)
        data = tt.mlp_data(steps, 8 * replicas)
        expected = numpy_training(model, data, reference, replicas)
        cpu_model = tt.twin(model)
        opts = poptorch.Options().replicationFactor(replicas)
        optimizer = poptorch.optim.LAMB(model.parameters(), **kwargs)
        wrapped = poptorch.trainingModel(model, opts, optimizer=optimizer)
        for x, y in data:
            wrapped(x, y)
        for k, p in model.named_parameters():
            np.testing.assert_allclose(p.detach().numpy(), expected[k], rtol=1e-4, atol=1e-6,
                                       err_msg="device, " + k)
        if replicas == 1:  # LAMB.step on the CPU: the same rule
            cpu_opt = poptorch.optim.LAMB(cpu_model.parameters(), **kwargs)
            for x, y in data:
                cpu_opt.zero_grad()
                cpu_model(x, y)[1].backward()
                cpu_opt.step()
            for k, p in cpu_model.named_parameters():
                np.testing.assert_allclose(p.detach().numpy(), expected[k], rtol=1e-4, atol=1e-6,
                                           err_msg="CPU, " + k)
        return wrapped, optimizer, reference

    def test_defaults_with_bias_correction(self):
        # PopTorch's defaults: betas (0.9, 0.999), eps 1e-8, weight decay 0.01, no clipping.
        self.check({"lr": 0.01}, NumpyLamb(0.01, (0.9, 0.999), 1e-8, 0.01, True, math.inf))

    def test_no_bias_correction_and_max_weight_norm(self):
        # fc1.weight's norm is about 1.6: a max_weight_norm of 0.5 clips it, not the biases'.
        kwargs = {"lr": 0.02, "betas": (0.8, 0.9), "eps": 1e-4, "weight_decay": 0.1,
                  "bias_correction": False, "max_weight_norm": 0.5}
        _, optimizer, reference = self.check(
            kwargs, NumpyLamb(0.02, (0.8, 0.9), 1e-4, 0.1, False, 0.5))
        # The optimizer's state is the device's: m and v of each parameter, and the step count.
        state = optimizer.state_dict()["state"]
        for index, (k, _) in enumerate(tt.make(tt.Mlp).named_parameters()):
            np.testing.assert_allclose(state[index]["exp_avg"].numpy(), reference.m[k],
                                       rtol=1e-4, atol=1e-7, err_msg=k)
            np.testing.assert_allclose(state[index]["exp_avg_sq"].numpy(), reference.v[k],
                                       rtol=1e-4, atol=1e-9, err_msg=k)
            self.assertEqual(float(state[index]["step"]), 4.0)

    def test_two_replicas(self):
        self.check({"lr": 0.01, "max_weight_norm": 1.0},
                   NumpyLamb(0.01, (0.9, 0.999), 1e-8, 0.01, True, 1.0), replicas=2, steps=3)

    def test_a_constant_attribute_cannot_change(self):
        model = tt.make(tt.Mlp)
        optimizer = poptorch.optim.LAMB(model.parameters(), lr=0.01)  # max_weight_norm constant
        wrapped = poptorch.trainingModel(model, optimizer=optimizer)
        (x, y), = tt.mlp_data(1, 8)
        wrapped(x, y)
        optimizer.param_groups[0]["lr"] = 0.005  # variable: taken at the next call
        wrapped(x, y)
        optimizer.param_groups[0]["max_weight_norm"] = 2.0
        with self.assertRaisesRegex(poptorch.OptimizerError, "max_weight_norm"):
            wrapped(x, y)

    def test_bad_values_are_refused(self):
        params = tt.make(tt.Mlp).parameters()
        for kwargs, culprit in (({"betas": (0.9, 1.0)}, "betas\\[1\\]"), ({"lr": -1.0}, "lr"),
                                ({"max_weight_norm": -1.0}, "max_weight_norm")):
            with self.assertRaisesRegex(ValueError, "LAMB: invalid %s" % culprit):
                poptorch.optim.LAMB(params, **kwargs)


if __name__ == "__main__":
    unittest.main()
