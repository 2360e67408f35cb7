"""xtrain.torch copies trained weights into the module lazily, as PopTorch does: when the module's
state is read or another wrapper of the module runs, not after every call (docs/poptorch.md,
"Weights in sync")."""
import copy
import gc
import io
import unittest
from unittest import mock

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import xtrain.torch as poptorch
    from xtrain.torch._device_weights import DeviceWeights


@unittest.skipIf(torch is None, SKIP_REASON)
class LazyCopyBack(PrivatePool, unittest.TestCase):

    def setUp(self):
        super().setUp()
        self.model = tt.make(tt.Mlp)
        self.reference = tt.twin(self.model)
        self.wrapped = poptorch.trainingModel(
            self.model, optimizer=torch.optim.SGD(self.model.parameters(), lr=0.3))
        ref_opt = torch.optim.SGD(self.reference.parameters(), lr=0.3)
        self.data = tt.mlp_data(3, 4)
        self.copies = mock.patch.object(DeviceWeights, "copy_into", autospec=True,
                                        side_effect=DeviceWeights.copy_into)
        for x, y in self.data:
            tt.pytorch_step(self.reference, ref_opt, x, y)

    def train(self):
        with self.copies as copies:
            for x, y in self.data:
                self.wrapped(x, y)
            self.assertEqual(copies.call_count, 0, "a training call copied weights to the module")
        return self.copies

    def assert_trained(self, state):
        for k, v in self.reference.state_dict().items():
            torch.testing.assert_close(state[k], v, rtol=1e-4, atol=1e-6, msg=k)

    def test_calls_copy_nothing_until_the_module_is_read(self):
        self.train()
        with self.copies as copies:
            weight = self.model.fc1.weight  # a read through the module: one copy
            self.assertEqual(copies.call_count, 1)
            self.model.state_dict()
            self.model.fc2.bias
            self.assertEqual(copies.call_count, 1, "a second read copied again")
        torch.testing.assert_close(weight, self.reference.fc1.weight, rtol=1e-4, atol=1e-6)
        self.assert_trained(self.model.state_dict())

    def test_every_way_of_reading_the_module_sees_the_trained_weights(self):
        readers = {
            "state_dict": lambda m: m.state_dict(),
            "parameters": lambda m: dict(zip(["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"],
                                             m.parameters())),
            "named_parameters": lambda m: dict(m.named_parameters()),
            "submodule attribute": lambda m: {"fc2.weight": m.fc2.weight},
            "deepcopy": lambda m: copy.deepcopy(m).state_dict(),
            "torch.save of the module": self.saved_and_loaded,
            "wrapper attribute": lambda m: {"fc1.bias": self.wrapped.fc1.bias},
        }
        for name, read in readers.items():
            with self.subTest(name):
                self.train()
                state = read(self.model)
                for k, v in state.items():
                    torch.testing.assert_close(v, self.reference.state_dict()[k], rtol=1e-4,
                                               atol=1e-6, msg="%s: %s" % (name, k))
                # The next round trains from the trained weights: keep PyTorch in step.
                ref_opt = torch.optim.SGD(self.reference.parameters(), lr=0.3)
                for x, y in self.data:
                    tt.pytorch_step(self.reference, ref_opt, x, y)

    def saved_and_loaded(self, model):
        buffer = io.BytesIO()
        torch.save(model, buffer)  # pickles the module itself, under its original class
        buffer.seek(0)
        loaded = torch.load(buffer)
        self.assertIs(type(loaded), tt.Mlp)
        return loaded.state_dict()

    def test_the_module_keeps_its_class_name_and_type(self):
        self.assertEqual(type(self.model).__name__, "Mlp")
        self.assertIsInstance(self.model, tt.Mlp)
        self.assertIsInstance(self.model.fc1, torch.nn.Linear)

    def test_cpu_forward_sees_the_trained_weights(self):
        self.train()
        x, _ = self.data[0]
        with torch.no_grad():
            torch.testing.assert_close(self.model.eval()(x), self.reference.eval()(x), rtol=1e-4,
                                       atol=1e-6)

    def test_another_wrapper_of_the_module_gets_them_before_it_runs(self):
        self.train()
        inference = poptorch.inferenceModel(self.model)  # compiles from the module
        x, _ = self.data[0]
        with torch.no_grad():
            torch.testing.assert_close(inference(x), self.reference.eval()(x), rtol=1e-4, atol=1e-6)
        # Training again, then the already compiled inferenceModel runs: the copy happens first.
        ref_opt = torch.optim.SGD(self.reference.train().parameters(), lr=0.3)
        for x, y in self.data:
            tt.pytorch_step(self.reference, ref_opt, x, y)
        self.train()
        with torch.no_grad():
            torch.testing.assert_close(inference(x), self.reference.eval()(x), rtol=1e-4, atol=1e-6)

    def test_copy_weights_to_device_keeps_pending_trained_weights(self):
        self.train()
        self.wrapped.copyWeightsToDevice()  # must not send the module's older values
        self.assert_trained(self.model.state_dict())
        x, y = self.data[0]
        ref_opt = torch.optim.SGD(self.reference.parameters(), lr=0.3)
        tt.pytorch_step(self.reference, ref_opt, x, y)
        self.wrapped(x, y)
        self.assert_trained(self.model.state_dict())

    def test_dropping_the_wrapper_loses_nothing(self):
        self.train()
        del self.wrapped
        gc.collect()
        self.assert_trained(self.model.state_dict())

    def test_load_state_dict_after_training_wins(self):
        self.train()
        fresh = tt.make(tt.Mlp).state_dict()
        self.model.load_state_dict(fresh)  # the pending copy lands first, then the load
        for k, v in fresh.items():
            torch.testing.assert_close(self.model.state_dict()[k], v, msg=k)
        x, _ = self.data[0]
        with torch.no_grad():
            inference = poptorch.inferenceModel(self.model)
            torch.testing.assert_close(inference(x), self.model.eval()(x), rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    unittest.main()
