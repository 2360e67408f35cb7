"""xtrain.torch's precompilation (docs/poptorch.md, "Precompilation"): compileAndExport writes the
captured graph, options, module and optimizer; poptorch.load and loadExecutable build the model
from the file without capturing the module again, and training goes on where it was."""
import os
import unittest
from unittest import mock

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import xtrain.torch as poptorch
    from xtrain.torch import _capture


def adam(model):
    return torch.optim.Adam(model.parameters(), lr=0.05)


@unittest.skipIf(torch is None, SKIP_REASON)
class Precompilation(PrivatePool, unittest.TestCase):

    def path(self, name="model.poptorch"):
        return os.path.join(self.tmp, name)

    def test_a_trained_model_exported_and_loaded_trains_on_as_pytorch(self):
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        ref_opt = adam(reference)
        opts = poptorch.Options().Training.gradientAccumulation(2)
        wrapped = poptorch.trainingModel(model, opts, adam(model))
        data = tt.mlp_data(4, 8)
        for x, y in data[:2]:
            wrapped(x, y)
            tt.pytorch_step(reference, ref_opt, x, y, accumulation=2)
        wrapped.compileAndExport(self.path(), *data[0])
        wrapped.destroy()
        with mock.patch.object(_capture, "capture", side_effect=AssertionError("captured again")):
            loaded = poptorch.load(self.path())
            self.assertTrue(loaded.isCompiled())
            for x, y in data[2:]:
                _, loss = loaded(x, y)
                ref_loss = tt.pytorch_step(reference, ref_opt, x, y, accumulation=2)
                self.assertAlmostEqual(float(loss), ref_loss[-1], delta=1e-4 * abs(ref_loss[-1]))
        self.assertIsInstance(loaded.model, tt.Mlp)
        self.assertEqual(loaded.options.Training.gradient_accumulation, 2)
        for k, v in reference.state_dict().items():
            torch.testing.assert_close(loaded.model.state_dict()[k], v, rtol=1e-4, atol=1e-6,
                                       msg=k)

    def test_run_time_options_apply_on_load_and_the_others_are_refused(self):
        model = tt.make(tt.Mlp).eval()
        x, _ = tt.mlp_data(1, 4)[0]
        poptorch.inferenceModel(model).compileAndExport(self.path(), x)

        def edit(opts):
            opts.useIpuModel(True)
            opts.randomSeed(3)

        def edit_compiled(opts):
            opts.useIpuModel(True)
            opts.deviceIterations(5)  # compiled into the graph's batching
            opts.Training.gradientAccumulation(2)

        with self.assertRaisesRegex(ValueError, "changed Options.device_iterations, "
                                    "Options.Training.gradient_accumulation, which were compiled"):
            poptorch.load(self.path(), edit_opts_fn=edit_compiled)
        loaded = poptorch.load(self.path(), edit_opts_fn=edit)
        self.assertEqual(loaded.options.random_seed, 3)
        self.assertTrue(loaded.options.use_ipu_model)
        self.assertEqual(loaded.options.device_iterations, 1)
        with torch.no_grad():
            torch.testing.assert_close(loaded(x), model(x), rtol=1e-5, atol=1e-6)

    def test_export_without_the_model_and_load_executable(self):
        model = tt.make(tt.Mlp).eval()
        x, _ = tt.mlp_data(1, 4)[0]
        poptorch.inferenceModel(model).compileAndExport(self.path(), x, export_model=False)
        with self.assertRaisesRegex(ValueError, "export_model=False.*loadExecutable"):
            poptorch.load(self.path())
        twin = tt.make(tt.Mlp, seed=1).eval()  # same tensors, other values: the module's are used
        wrapped = poptorch.inferenceModel(twin)
        with mock.patch.object(_capture, "capture", side_effect=AssertionError("captured again")):
            wrapped.loadExecutable(self.path())
            with torch.no_grad():
                torch.testing.assert_close(wrapped(x), twin(x), rtol=1e-5, atol=1e-6)
        with self.assertRaisesRegex(ValueError, "holds a inferenceModel; this is a trainingModel"):
            poptorch.trainingModel(tt.make(tt.Mlp)).loadExecutable(self.path())
        with self.assertRaisesRegex(ValueError, "tensors fc1.weight.*SmallCnn does not have"):
            poptorch.inferenceModel(tt.make(tt.SmallCnn)).loadExecutable(self.path())

    def test_a_file_of_something_else(self):
        torch.save({"weights": 1}, self.path("other.pt"))
        with self.assertRaisesRegex(ValueError, "not a file of xtrain.torch's compileAndExport"):
            poptorch.load(self.path("other.pt"))
        with open(self.path("text"), "w") as f:
            f.write("hello")
        with self.assertRaisesRegex(ValueError, "is not a file of compileAndExport"):
            poptorch.load(self.path("text"))


if __name__ == "__main__":
    unittest.main()
