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
    from xtrain.torch import _module_sync
    from xtrain.torch._device_weights import DeviceWeights

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

    def test_a_loaded_graph_with_another_buffer_value_is_refused(self):
        model = tt.make(Scaled)
        x, y = tt.mlp_data(1, 4)[0]
        path = os.path.join(self.tmp, "scaled.pt")
        poptorch.trainingModel(model).compileAndExport(path, x, y, export_model=False)
        other = tt.make(Scaled)
        with torch.no_grad():
            other.scale.fill_(1.0)
        with self.assertRaisesRegex(ValueError, "buffer 'scale' changed"):
            poptorch.trainingModel(other).loadExecutable(path)
        poptorch.trainingModel(tt.make(Scaled)).loadExecutable(path)  # the same value: accepted


@unittest.skipIf(torch is None, SKIP_REASON)
class WrappersOfSubmodules(PrivatePool, unittest.TestCase):

    def test_train_around_the_model_and_infer_the_model_over_epochs(self):
        # PopTorch's usual pattern: trainingModel(WithLoss(model)) and inferenceModel(model).
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
        reference = tt.twin(model)
        train = poptorch.trainingModel(
            WithLoss(model), optimizer=torch.optim.SGD(model.parameters(), lr=0.5))
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.5)
        infer = poptorch.inferenceModel(model)
        data = tt.mlp_data(3, 8)
        for epoch in range(3):
            for x, y in data:
                train(x, y)
                ref_opt.zero_grad()
                F.cross_entropy(reference(x), y).backward()
                ref_opt.step()
            with torch.no_grad():
                expected = reference(data[0][0])
            torch.testing.assert_close(infer(data[0][0]), expected, rtol=1e-4, atol=1e-5,
                                       msg="epoch %d" % epoch)

    def test_a_wrapper_of_the_inner_module_starts_from_the_outer_ones_training(self):
        torch.manual_seed(0)
        inner = nn.Sequential(nn.Linear(6, 3))
        outer = WithLoss(inner)
        reference = tt.twin(inner)
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.5)
        train_outer = poptorch.trainingModel(
            outer, optimizer=torch.optim.SGD(outer.parameters(), lr=0.5))
        train_inner = poptorch.trainingModel(
            WithLoss(inner), optimizer=torch.optim.SGD(inner.parameters(), lr=0.5))
        x, y = tt.mlp_data(1, 8)[0]
        for wrapped in (train_inner, train_outer, train_inner, train_outer):
            wrapped(x, y)
            ref_opt.zero_grad()
            F.cross_entropy(reference(x), y).backward()
            ref_opt.step()
        for k, v in reference.state_dict().items():
            torch.testing.assert_close(inner.state_dict()[k], v, rtol=1e-4, atol=1e-6, msg=k)


@unittest.skipIf(torch is None, SKIP_REASON)
class DroppedWrappers(PrivatePool, unittest.TestCase):

    def test_a_dropped_wrapper_and_module_are_collected(self):
        model = tt.make(tt.Mlp)
        wrapped = poptorch.trainingModel(model)
        wrapped(*tt.mlp_data(1, 4)[0])
        model_ref, wrapper_ref = weakref.ref(model), weakref.ref(wrapped)
        del wrapped, model
        gc.collect()
        self.assertIsNone(wrapper_ref(), "the wrapper outlived its last reference")
        self.assertIsNone(model_ref(), "the module outlived its last reference")

    def test_train_and_drop_rounds_keep_getting_ipus(self):
        os.environ["XTRAIN_NUM_IPUS"] = "2"  # a small pool: a leaked session holds it
        x, y = tt.mlp_data(1, 4)[0]
        for _ in range(4):
            model = tt.make(tt.Mlp)
            wrapped = poptorch.trainingModel(model)
            wrapped(x, y)
            del wrapped, model
            gc.collect()


@unittest.skipIf(torch is None, SKIP_REASON)
class FailedLazyCopy(PrivatePool, unittest.TestCase):

    def test_a_failed_copy_keeps_the_pending_weights(self):
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        wrapped = poptorch.trainingModel(
            model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5))
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.5)
        x, y = tt.mlp_data(1, 4)[0]
        wrapped(x, y)
        tt.pytorch_step(reference, ref_opt, x, y)
        original = DeviceWeights.copy_into

        def failing(self, model):
            raise RuntimeError("simulated failure reading the weights")
        DeviceWeights.copy_into = failing
        try:
            with self.assertRaisesRegex(RuntimeError, "simulated failure"):
                model.state_dict()
        finally:
            DeviceWeights.copy_into = original
        self.assertIsNotNone(_module_sync.pending_copy(model), "the failed copy dropped the marker")
        for k, v in reference.state_dict().items():  # the next read copies them
            torch.testing.assert_close(model.state_dict()[k], v, rtol=1e-4, atol=1e-6, msg=k)
        self.assertIsNone(_module_sync.pending_copy(model))


if __name__ == "__main__":
    unittest.main()
