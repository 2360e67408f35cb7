"""Options.randomSeed makes training reproducible (docs/poptorch.md, "What maps to what"), and a
module whose tensors or submodules are added or removed after compiling is refused, naming them
(docs/poptorch.md, "Bad input"), rather than trained as it was."""
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import xtrain.torch as poptorch

    class DropoutNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(6, 32)
            self.drop = nn.Dropout(0.5)
            self.fc2 = nn.Linear(32, 3)

        def forward(self, x, y):
            h = self.drop(torch.tanh(self.fc1(x)))
            out = self.fc2(h)
            return h, F.cross_entropy(out, y)


@unittest.skipIf(torch is None, SKIP_REASON)
class RandomSeed(PrivatePool, unittest.TestCase):

    def train(self, seed):
        """The Dropout masks of 3 calls (where h is zero) and the weights after them."""
        model = tt.make(DropoutNet)
        opts = poptorch.Options().deviceIterations(2).outputMode(poptorch.OutputMode.All)
        if seed is not None:
            opts.randomSeed(seed)
        wrapped = poptorch.trainingModel(model, opts)
        masks = [wrapped(x, y)[0] == 0 for x, y in tt.mlp_data(3, 2 * 8, seed=1)]
        wrapped.destroy()
        return torch.stack(masks), model.state_dict()

    def test_the_same_seed_trains_the_same(self):
        masks, weights = self.train(7)
        again, weights_again = self.train(7)
        self.assertTrue(torch.equal(masks, again))
        for name, value in weights.items():
            self.assertTrue(torch.equal(value, weights_again[name]), name)
        # Dropout(0.5) dropped about half, and the masks differ between micro-batches.
        self.assertGreater(float(masks.float().mean()), 0.3)
        self.assertLess(float(masks.float().mean()), 0.7)
        self.assertFalse(torch.equal(masks[0], masks[1]))

    def test_another_seed_trains_otherwise(self):
        masks, weights = self.train(7)
        other, other_weights = self.train(8)
        self.assertFalse(torch.equal(masks, other))
        self.assertFalse(torch.equal(weights["fc1.weight"], other_weights["fc1.weight"]))


@unittest.skipIf(torch is None, SKIP_REASON)
class ChangedAfterCompiling(PrivatePool, unittest.TestCase):

    def compiled(self, training=True):
        model = tt.make(tt.Mlp)
        data = tt.mlp_data(2, 4)
        if training:
            wrapped = poptorch.trainingModel(model)
            wrapped(*data[0])
            return model, wrapped, data[1]
        model.eval()
        wrapped = poptorch.inferenceModel(model)
        wrapped(data[0][0])
        return model, wrapped, (data[1][0],)

    def test_added_or_removed_state_is_refused(self):
        changes = {
            "a submodule": (lambda m: setattr(m, "extra", nn.Linear(3, 3)),
                            "tensor 'extra.weight' added, tensor 'extra.bias' added, submodule "
                            "'extra' added"),
            "a parameter": (lambda m: setattr(m, "scale", nn.Parameter(torch.ones(1))),
                            "tensor 'scale' added"),
            "a buffer": (lambda m: m.register_buffer("count", torch.zeros(1)),
                         "tensor 'count' added"),
            "a parameterless submodule": (lambda m: setattr(m, "act", nn.ReLU()),
                                          "submodule 'act' added"),
            "a removed submodule": (lambda m: delattr(m, "fc1"),
                                    "tensor 'fc1.weight' removed, tensor 'fc1.bias' removed, "
                                    "submodule 'fc1' removed"),
        }
        for training in (True, False):
            for what, (change, message) in changes.items():
                with self.subTest(what=what, training=training):
                    model, wrapped, data = self.compiled(training)
                    change(model)
                    with self.assertRaisesRegex(ValueError, "Mlp changed after compiling: %s\\. "
                                                ".*call destroy\\(\\)" % message):
                        wrapped(*data)
                    with self.assertRaisesRegex(ValueError, "Mlp changed after compiling"):
                        wrapped.copyWeightsToDevice()
                    wrapped.destroy()  # compiles the module as it is now
                    if what != "a removed submodule":
                        wrapped(*data)

    def test_a_replaced_tensor_of_the_same_name_is_not_a_change_of_structure(self):
        model, wrapped, data = self.compiled()
        model.fc2.weight = nn.Parameter(torch.zeros_like(model.fc2.weight))
        wrapped(*data)  # copied to the device, as any new value
        self.assertFalse(torch.equal(model.fc2.weight, torch.zeros_like(model.fc2.weight)))


@unittest.skipIf(torch is None, SKIP_REASON)
class OptimizerOfSomeParameters(PrivatePool, unittest.TestCase):

    def test_refused_unless_the_others_are_frozen(self):
        model = tt.make(tt.Mlp)
        data = tt.mlp_data(2, 4)
        optimizer = torch.optim.SGD(model.fc1.parameters(), lr=0.1)
        with self.assertRaisesRegex(poptorch.OptimizerError,
                                    "SGD does not update parameter.s. fc2.bias, fc2.weight of the "
                                    "model.*requires_grad=False"):
            poptorch.trainingModel(model, optimizer=optimizer)(*data[0])
        # As the message says: frozen, fc2 stays as it was and fc1 trains.
        model = tt.make(tt.Mlp)
        for p in model.fc2.parameters():
            p.requires_grad_(False)
        before = {k: v.clone() for k, v in model.state_dict().items()}
        optimizer = torch.optim.SGD(model.fc1.parameters(), lr=0.1)
        poptorch.trainingModel(model, optimizer=optimizer)(*data[0])
        self.assertTrue(torch.equal(model.fc2.weight, before["fc2.weight"]))
        self.assertFalse(torch.equal(model.fc1.weight, before["fc1.weight"]))


if __name__ == "__main__":
    unittest.main()
