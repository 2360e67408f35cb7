"""Options.connectionType(ConnectionType.Never) (docs/poptorch.md, "Precompilation"): the model
compiles without a device, compileAndExport writes its file, running it is a clear error, and the
file loaded with another connection type trains as PyTorch does."""
import os
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import xtrain
    import xtrain.torch as poptorch


def never():
    return poptorch.Options().connectionType(poptorch.ConnectionType.Never)


@unittest.skipIf(torch is None, SKIP_REASON)
class ConnectionNever(PrivatePool, unittest.TestCase):

    def test_compiles_without_the_pool_and_refuses_to_run(self):
        # The whole pool is taken: an offline compile needs none of it.
        held = xtrain.DeviceManager().acquireAvailableDevice(8)
        try:
            model = tt.make(tt.Mlp)
            before = {k: v.clone() for k, v in model.state_dict().items()}
            wrapped = poptorch.trainingModel(model, never())
            x, y = tt.mlp_data(1, 4)[0]
            path = os.path.join(self.tmp, "offline.pt")
            wrapped.compileAndExport(path, x, y)
            self.assertTrue(wrapped.isCompiled())
            self.assertFalse(wrapped.isAttachedToDevice())
            self.assertTrue(os.path.getsize(path) > 0)
            for what, call in (("run the model", lambda: wrapped(x, y)),
                               ("copyWeightsToDevice", wrapped.copyWeightsToDevice),
                               ("attachToDevice", wrapped.attachToDevice)):
                with self.subTest(what), self.assertRaisesRegex(
                        RuntimeError, "cannot %s: the model was compiled with "
                        "ConnectionType.Never" % what):
                    call()
            wrapped.copyWeightsToHost()  # nothing trained: the module is the weights
            wrapped.destroy()
            for name, value in model.state_dict().items():
                torch.testing.assert_close(value, before[name])
            inference = poptorch.inferenceModel(model, never())
            inference.compile(x)
            with self.assertRaisesRegex(RuntimeError, "ConnectionType.Never"):
                inference(x)
        finally:
            held.detach()

    def test_the_exported_file_runs_when_loaded(self):
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        path = os.path.join(self.tmp, "offline.pt")
        data = tt.mlp_data(3, 4, seed=2)
        poptorch.trainingModel(model, never(), optimizer=optimizer).compileAndExport(
            path, *data[0])
        # Set again on load, Never refuses to run; loaded as it is, it runs (PopTorch's load turns
        # Never into Always: the file was compiled offline to be run elsewhere).
        offline = poptorch.load(path, edit_opts_fn=lambda o: o.connectionType(
            poptorch.ConnectionType.Never))
        with self.assertRaisesRegex(RuntimeError, "ConnectionType.Never"):
            offline(*data[0])
        loaded = poptorch.load(path)
        reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
        for step, (x, y) in enumerate(data):
            _, loss = loaded(x, y)
            losses = tt.pytorch_step(reference, reference_optimizer, x, y)
            tt.assert_close_relative(loss, torch.tensor(losses[0]), "loss at step %d" % step)
        for name, value in reference.state_dict().items():
            tt.assert_close_relative(loaded.model.state_dict()[name], value, name)


if __name__ == "__main__":
    unittest.main()
