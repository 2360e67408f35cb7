"""xtrain.torch's frozen parameters (requires_grad=False: not updated, as in PopTorch) and nested
outputs (tuples, lists, dicts and namedtuples of tensors come back in forward's structure)
(docs/poptorch.md, "Freezing parameters", "Outputs")."""
import collections
import os
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import xtrain.torch as poptorch

    Pair = collections.namedtuple("Pair", ["hidden", "probabilities"])

    class NestedOutputs(nn.Module):
        """The MLP, returning ({"logits": ..., "extra": Pair(hidden, [probabilities])}, loss) in
        training and the dict alone in eval."""

        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(6, 8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x, y=None):
            h = torch.tanh(self.fc1(x))
            out = self.fc2(h)
            result = {"logits": out, "extra": Pair(h, [F.softmax(out, 1)])}
            if self.training:
                return result, F.cross_entropy(out, y)
            return result


@unittest.skipIf(torch is None, SKIP_REASON)
class FrozenParameters(PrivatePool, unittest.TestCase):

    def train_both(self, model_class, data, make_optimizer, frozen, clip=None):
        model = tt.make(model_class)
        for name, p in model.named_parameters():
            p.requires_grad_(name not in frozen)
        initial = {k: v.clone() for k, v in model.state_dict().items()}
        reference = tt.twin(model)
        ref_opt = make_optimizer(reference)
        wrapped = poptorch.trainingModel(model, optimizer=make_optimizer(model))
        for x, y in data:
            _, loss = wrapped(x, y)
            ref_opt.zero_grad()
            ref_loss = reference(x, y)[1]
            ref_loss.backward()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(reference.parameters(), clip)
            ref_opt.step()
            self.assertAlmostEqual(float(loss), float(ref_loss), delta=1e-4 * float(ref_loss))
        for k, v in model.state_dict().items():
            torch.testing.assert_close(v, reference.state_dict()[k], rtol=1e-4, atol=1e-6,
                                       msg=lambda m: "%s: %s" % (k, m))
            if k in frozen:
                self.assertTrue(torch.equal(v, initial[k]), k + " was trained")
            elif k.endswith(("weight", "bias")):
                self.assertFalse(torch.equal(v, initial[k]), k + " was not trained")
        return wrapped, model

    def test_sgd_with_the_frozen_parameters_in_the_optimizer(self):
        # Momentum and weight decay would move a frozen weight if it were trained with lr 0.
        self.train_both(tt.Mlp, tt.mlp_data(3, 8),
                        lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9,
                                                  weight_decay=0.01),
                        frozen={"fc1.weight", "fc2.bias"})

    def test_adam_with_max_grad_norm_over_the_trained_parameters_only(self):
        # The global norm clip covers the parameters that have gradients, as clip_grad_norm_.
        self.train_both(tt.Mlp, tt.mlp_data(3, 8),
                        lambda m: poptorch.optim.Adam(m.parameters(), lr=0.02, max_grad_norm=0.05),
                        frozen={"fc1.weight", "fc1.bias"}, clip=0.05)

    def test_frozen_batchnorm_affine_and_an_optimizer_of_the_rest(self):
        self.train_both(tt.SmallCnn, tt.cnn_data(3, 4),
                        lambda m: torch.optim.SGD([p for p in m.parameters() if p.requires_grad],
                                                  lr=0.1, momentum=0.9),
                        frozen={"bn.weight", "bn.bias", "conv.bias"})

    def test_changing_a_frozen_parameter_or_the_freezing_after_compiling(self):
        wrapped, model = self.train_both(
            tt.Mlp, tt.mlp_data(1, 8), lambda m: torch.optim.SGD(m.parameters(), lr=0.1),
            frozen={"fc1.weight"})
        x, y = tt.mlp_data(1, 8, seed=4)[0]
        with torch.no_grad():
            model.fc1.weight.mul_(2.0)
        with self.assertRaisesRegex(ValueError, r"frozen parameter \(requires_grad=False\) "
                                    "'fc1.weight' changed.*destroy\\(\\)"):
            wrapped(x, y)
        with torch.no_grad():
            model.fc1.weight.mul_(0.5)
        wrapped(x, y)  # back to the compiled value
        model.fc1.weight.requires_grad_(True)
        with self.assertRaisesRegex(ValueError, "parameter 'fc1.weight' has requires_grad=True, "
                                    "but was compiled with False"):
            wrapped(x, y)
        wrapped.destroy()  # compiles again: now fc1.weight trains
        before = model.fc1.weight.detach().clone()
        wrapped(x, y)
        self.assertFalse(torch.equal(model.fc1.weight.detach(), before))

    def test_inference_after_training_with_frozen_parameters(self):
        wrapped, model = self.train_both(
            tt.Mlp, tt.mlp_data(2, 8), lambda m: torch.optim.SGD(m.parameters(), lr=0.1),
            frozen={"fc2.weight"})
        x, _ = tt.mlp_data(1, 4, seed=9)[0]
        expected = tt.twin(model).eval()(x).detach()
        torch.testing.assert_close(poptorch.inferenceModel(model)(x), expected, rtol=1e-4,
                                   atol=1e-6)


@unittest.skipIf(torch is None, SKIP_REASON)
class NestedOutputsTest(PrivatePool, unittest.TestCase):

    def assert_same_structure(self, ours, theirs, where="output"):
        self.assertIs(type(ours), type(theirs), where)
        if isinstance(theirs, torch.Tensor):
            torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-6,
                                       msg=lambda m: "%s: %s" % (where, m))
        elif isinstance(theirs, dict):
            self.assertEqual(list(ours), list(theirs), where)
            for k in theirs:
                self.assert_same_structure(ours[k], theirs[k], "%s[%r]" % (where, k))
        else:
            self.assertEqual(len(ours), len(theirs), where)
            for i, (a, b) in enumerate(zip(ours, theirs)):
                self.assert_same_structure(a, b, "%s[%d]" % (where, i))

    def test_training_and_inference_return_forwards_structure(self):
        model = tt.make(NestedOutputs)
        reference = tt.twin(model)
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
        opts = poptorch.Options().outputMode(poptorch.OutputMode.All)
        wrapped = poptorch.trainingModel(model, opts,
                                         optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
        for x, y in tt.mlp_data(2, 4):
            ours = wrapped(x, y)
            ref_opt.zero_grad()
            theirs = reference(x, y)
            theirs[1].backward()
            ref_opt.step()
            self.assert_same_structure(ours, _detached(theirs))
        x, _ = tt.mlp_data(1, 4, seed=3)[0]
        reference.eval()
        with torch.no_grad():
            self.assert_same_structure(poptorch.inferenceModel(model)(x), reference(x))

    def test_a_compiled_file_keeps_the_structure(self):
        model = tt.make(NestedOutputs).eval()
        x, _ = tt.mlp_data(1, 4)[0]
        path = os.path.join(self.tmp, "nested.pt")
        poptorch.inferenceModel(model).compileAndExport(path, x)
        with torch.no_grad():
            self.assert_same_structure(poptorch.load(path)(x), model(x))

    def test_outputs_that_are_not_tensors(self):
        class Bad(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)

            def forward(self, x):
                return {"out": self.fc(x), "info": [self.fc(x), "a string"]}

        with self.assertRaisesRegex(NotImplementedError, r"Bad.forward's output\['info'\]\[1\] "
                                    "is a str"):
            poptorch.inferenceModel(Bad())(torch.ones(2, 2))


def _detached(structure):
    if isinstance(structure, torch.Tensor):
        return structure.detach()
    if isinstance(structure, dict):
        return {k: _detached(v) for k, v in structure.items()}
    items = [_detached(v) for v in structure]
    if isinstance(structure, list):
        return items
    return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)


if __name__ == "__main__":
    unittest.main()
