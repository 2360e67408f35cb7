"""The optimizer state between the device and a torch optimizer (docs/poptorch.md, "Optimizer
state"): state_dict() after training through the wrapper is PyTorch's, and a checkpoint of model
and optimizer resumes on the device where PyTorch's own training would have gone on."""
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import xtrain.torch as poptorch


def adam(m):
    return torch.optim.Adam(m.parameters(), lr=0.02, betas=(0.9, 0.99))


def sgd(m):
    return poptorch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, velocity_scaling=4.0)


def rmsprop(m):
    return torch.optim.RMSprop(m.parameters(), lr=0.01, momentum=0.5, centered=True)


@unittest.skipIf(torch is None, SKIP_REASON)
class OptimizerState(PrivatePool, unittest.TestCase):

    def assert_states_close(self, ours, theirs):
        a, b = ours.state_dict()["state"], theirs.state_dict()["state"]
        self.assertEqual(sorted(a), sorted(b))
        for index in a:
            self.assertEqual(sorted(a[index]), sorted(b[index]), index)
            for key, value in a[index].items():
                if torch.is_tensor(value):
                    torch.testing.assert_close(value, b[index][key], rtol=1e-4, atol=1e-7,
                                               msg=lambda m: "%s[%s]: %s" % (index, key, m))
                else:
                    self.assertEqual(value, b[index][key], (index, key))

    def test_state_dict_after_training_is_pytorchs(self):
        for make in (adam, sgd, rmsprop):
            with self.subTest(optimizer=make.__name__):
                model = tt.make(tt.Mlp)
                reference = tt.twin(model)
                opt, ref_opt = make(model), make(reference)
                wrapped = poptorch.trainingModel(model, optimizer=opt)
                for x, y in tt.mlp_data(3, 4):
                    wrapped(x, y)
                    tt.pytorch_step(reference, ref_opt, x, y)
                self.assert_states_close(opt, ref_opt)
                wrapped.destroy()

    def test_resuming_from_a_checkpoint(self):
        for make in (adam, sgd):
            with self.subTest(optimizer=make.__name__):
                data = tt.mlp_data(4, 4)
                model = tt.make(tt.Mlp)
                reference = tt.twin(model)
                opt, ref_opt = make(model), make(reference)
                first = poptorch.trainingModel(model, optimizer=opt)
                for x, y in data[:2]:
                    first(x, y)
                first.destroy()  # the module and the optimizer keep what was trained
                checkpoint = {"model": model.state_dict(), "optimizer": opt.state_dict()}
                # A new process would start here: a fresh module and optimizer, then the checkpoint.
                resumed = tt.make(tt.Mlp, seed=5)
                resumed.load_state_dict(checkpoint["model"])
                new_opt = make(resumed)
                new_opt.load_state_dict(checkpoint["optimizer"])
                second = poptorch.trainingModel(resumed, optimizer=new_opt)
                for x, y in data[2:]:
                    second(x, y)
                for x, y in data:
                    tt.pytorch_step(reference, ref_opt, x, y)
                for k, v in resumed.state_dict().items():
                    torch.testing.assert_close(v, reference.state_dict()[k], rtol=1e-4, atol=1e-6,
                                               msg=lambda m: "%s: %s" % (k, m))
                second.destroy()

    def test_load_state_dict_after_compiling_reaches_the_device(self):
        data = tt.mlp_data(3, 4)
        model = tt.make(tt.Mlp)
        opt = adam(model)
        wrapped = poptorch.trainingModel(model, optimizer=opt)
        wrapped(*data[0])
        saved_model = {k: v.clone() for k, v in model.state_dict().items()}
        saved_opt = opt.state_dict()
        wrapped(*data[1])  # moves weights and state on
        with torch.no_grad():
            model.load_state_dict(saved_model)  # in place: pushed before the next call
        opt.load_state_dict(saved_opt)
        wrapped(*data[1])
        reference = tt.make(tt.Mlp)
        ref_opt = adam(reference)
        for x, y in data[:2]:
            tt.pytorch_step(reference, ref_opt, x, y)
        for k, v in model.state_dict().items():
            torch.testing.assert_close(v, reference.state_dict()[k], rtol=1e-4, atol=1e-6)


if __name__ == "__main__":
    unittest.main()
