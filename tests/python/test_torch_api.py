"""xtrain.torch's wrapper API besides the numbers: weights kept in sync with the module, device
attach/detach/destroy, Options, optimizers and setOptimizer, and the errors for bad input
(docs/poptorch.md)."""
import os
import subprocess
import sys
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import torch.nn as nn
    import xtrain.torch as poptorch


class ImportWithoutTorch(unittest.TestCase):

    def test_import_xtrain_does_not_import_torch(self):
        code = "import sys, xtrain; print('torch' in sys.modules)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=os.environ.copy(), check=True)
        self.assertEqual(out.stdout.strip(), "False", out.stderr)


@unittest.skipIf(torch is None, SKIP_REASON)
class WeightsInSync(PrivatePool, unittest.TestCase):

    def test_module_changes_reach_the_device(self):
        model = tt.make(tt.Mlp).eval()
        inference = poptorch.inferenceModel(model)
        x, _ = tt.mlp_data(1, 4)[0]
        with torch.no_grad():
            torch.testing.assert_close(inference(x), model(x), rtol=1e-5, atol=1e-6)
            model.fc2.bias.add_(1.0)  # in place: seen before the next call
            torch.testing.assert_close(inference(x), model(x), rtol=1e-5, atol=1e-6)
            model.fc2.bias.data += 1.0  # through .data: needs the explicit copy, as in PopTorch
            inference.copyWeightsToDevice()
            torch.testing.assert_close(inference(x), model(x), rtol=1e-5, atol=1e-6)

    def test_fresh_batchnorm_statistics_stay_separate_tensors(self):
        # A fresh BatchNorm's running_var equals its weight (ones) and running_mean its bias (zeros);
        # the exporter would merge them in eval mode, tying tensors that must stay apart.
        model = tt.make(tt.SmallCnn).eval()
        inference = poptorch.inferenceModel(model)
        x, _ = tt.cnn_data(1, 4)[0]
        with torch.no_grad():
            torch.testing.assert_close(inference(x), model(x), rtol=1e-5, atol=1e-6)
            model.bn.running_var.mul_(4.0)
            model.bn.running_mean.add_(0.5)
            torch.testing.assert_close(inference(x), model(x), rtol=1e-5, atol=1e-6)

    def test_training_model_of_a_trained_module_starts_from_its_weights(self):
        model = tt.make(tt.Mlp)
        x, y = tt.mlp_data(1, 4)[0]
        first = poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5))
        first(x, y)
        after_first = {k: v.clone() for k, v in model.state_dict().items()}
        first.destroy()
        self.assertFalse(first.isAttachedToDevice())
        reference = tt.twin(model)
        second = poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5))
        second(x, y)
        tt.pytorch_step(reference, torch.optim.SGD(reference.parameters(), lr=0.5), x, y)
        for k, v in model.state_dict().items():
            self.assertFalse(torch.equal(v, after_first[k]), k)
            torch.testing.assert_close(v, reference.state_dict()[k], rtol=1e-4, atol=1e-6)

    def test_detach_and_attach(self):
        model = tt.make(tt.Mlp)
        wrapped = poptorch.trainingModel(model)
        x, y = tt.mlp_data(1, 4)[0]
        self.assertFalse(wrapped.isAttachedToDevice())
        with self.assertRaisesRegex(RuntimeError, "not been compiled"):
            wrapped.detachFromDevice()
        wrapped.compile(x, y)
        self.assertTrue(wrapped.isAttachedToDevice())
        wrapped.detachFromDevice()
        self.assertFalse(wrapped.isAttachedToDevice())
        with self.assertRaisesRegex(RuntimeError, "detached from its device"):
            wrapped(x, y)
        wrapped.attachToDevice()
        _, loss = wrapped(x, y)
        self.assertTrue(torch.isfinite(loss))
        wrapped.destroy()
        _, loss = wrapped(x, y)  # compiles again
        self.assertTrue(wrapped.isAttachedToDevice())

    def test_compile_does_not_change_the_module(self):
        model = tt.make(tt.SmallCnn)
        before = {k: v.clone() for k, v in model.state_dict().items()}
        x, y = tt.cnn_data(1, 4)[0]
        poptorch.trainingModel(model).compile(x, y)
        for k, v in model.state_dict().items():
            self.assertTrue(torch.equal(v, before[k]), k)

    def test_outputs_like_the_module(self):
        class ThreeOutputs(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 2)

            def forward(self, x):
                out = self.fc(x)
                return [out, out.sum(1), poptorch.identity_loss(out ** 2, reduction="mean")]

        model = ThreeOutputs()
        result = poptorch.trainingModel(model)(torch.ones(5, 3))
        self.assertIsInstance(result, list)
        self.assertEqual([tuple(r.shape) for r in result], [(5, 2), (5,), ()])


@unittest.skipIf(torch is None, SKIP_REASON)
class OptionsAndOptimizers(PrivatePool, unittest.TestCase):

    def test_options_chain_and_refuse_what_is_not_built(self):
        opts = poptorch.Options().deviceIterations(2).replicationFactor(2).randomSeed(3)
        self.assertIs(opts.Training.gradientAccumulation(4), opts)
        self.assertEqual(opts.batches_per_call(True), 16)
        self.assertEqual(opts.batches_per_call(False), 4)
        with self.assertRaisesRegex(NotImplementedError, r"Options.Precision.setPartialsType"):
            opts.Precision.setPartialsType(torch.half)
        with self.assertRaisesRegex(AttributeError, "no option 'deviceIteration'"):
            opts.deviceIteration(2)
        with self.assertRaisesRegex(ValueError, "replicationFactor must be a positive int"):
            opts.replicationFactor(0)

    def test_the_wrapper_keeps_its_own_copy_of_the_options(self):
        opts = poptorch.Options().deviceIterations(2)
        wrapped = poptorch.trainingModel(tt.make(tt.Mlp), opts)
        opts.deviceIterations(3)
        self.assertEqual(wrapped.options.device_iterations, 2)
        wrapped(*tt.mlp_data(1, 8)[0])  # 2 iterations of 4

    def test_inference_model_of_a_training_model_takes_its_own_options(self):
        # PopTorch: inferenceModel(training_model, options) uses the options given, else the
        # defaults; never the training wrapper's (gradientAccumulation would be refused).
        opts = poptorch.Options().deviceIterations(2)
        opts.Training.gradientAccumulation(2)
        training = poptorch.trainingModel(tt.make(tt.Mlp), opts)
        self.assertEqual(poptorch.inferenceModel(training).options.device_iterations, 1)
        given = poptorch.Options().deviceIterations(3)
        inference = poptorch.inferenceModel(training, given)
        self.assertEqual(inference.options.device_iterations, 3)
        self.assertIs(inference.model, training.model)

    def test_ipu_model_device_and_sum_output(self):
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        opts = poptorch.Options().useIpuModel(True).deviceIterations(2)
        opts.outputMode(poptorch.OutputMode.Sum)
        wrapped = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.1))
        x, y = tt.mlp_data(1, 8)[0]
        _, loss = wrapped(x, y)
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
        losses = tt.pytorch_step(reference, ref_opt, x[:4], y[:4]) + \
            tt.pytorch_step(reference, ref_opt, x[4:], y[4:])
        self.assertAlmostEqual(float(loss), sum(losses), places=5)

    def test_poptorch_optim_and_set_optimizer(self):
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        opt = poptorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, loss_scaling=4.0)
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
        wrapped = poptorch.trainingModel(model, optimizer=opt)
        scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        ref_scheduler = torch.optim.lr_scheduler.StepLR(ref_opt, step_size=1, gamma=0.5)
        for x, y in tt.mlp_data(4, 4):
            wrapped(x, y)
            tt.pytorch_step(reference, ref_opt, x, y)
            scheduler.step()  # a changed lr is picked up at the next call
            ref_scheduler.step()
        for k, v in model.state_dict().items():
            torch.testing.assert_close(v, reference.state_dict()[k], rtol=1e-4, atol=1e-6)
        opt.param_groups[0]["momentum"] = 0.5  # given to the constructor: variable
        wrapped.setOptimizer(opt)
        wrapped(*tt.mlp_data(1, 4)[0])

    def test_changing_a_constant_attribute_is_refused(self):
        model = tt.make(tt.Mlp)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)  # momentum left at 0: constant
        wrapped = poptorch.trainingModel(model, optimizer=opt)
        wrapped(*tt.mlp_data(1, 4)[0])
        opt.param_groups[0]["momentum"] = 0.9
        with self.assertRaisesRegex(poptorch.OptimizerError, r"'momentum'.*constant"):
            wrapped(*tt.mlp_data(1, 4)[0])

    def test_param_groups_with_their_own_learning_rate(self):
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)

        def groups(m):
            return [{"params": m.fc1.parameters()}, {"params": m.fc2.parameters(), "lr": 0.01}]
        wrapped = poptorch.trainingModel(model, optimizer=torch.optim.Adam(groups(model), lr=0.1))
        ref_opt = torch.optim.Adam(groups(reference), lr=0.1)
        for x, y in tt.mlp_data(3, 4):
            wrapped(x, y)
            tt.pytorch_step(reference, ref_opt, x, y)
        for k, v in model.state_dict().items():
            torch.testing.assert_close(v, reference.state_dict()[k], rtol=1e-4, atol=1e-6)


@unittest.skipIf(torch is None, SKIP_REASON)
class BadInput(PrivatePool, unittest.TestCase):

    def test_forward_without_a_loss(self):
        model = tt.make(tt.Mlp)
        model.forward = lambda x, y=None: model.fc2(model.fc1(x))  # logits only
        with self.assertRaisesRegex(ValueError, "must return the loss last.*shape \\(4, 3\\)"):
            poptorch.trainingModel(model)(*tt.mlp_data(1, 4)[0])

    def test_wrong_batch_size_for_the_options(self):
        model = tt.make(tt.Mlp)
        opts = poptorch.Options().deviceIterations(2)
        opts.Training.gradientAccumulation(3)
        wrapped = poptorch.trainingModel(model, opts)
        x, y = tt.mlp_data(1, 8)[0]
        with self.assertRaisesRegex(ValueError, r"argument 'x' has batch dimension 8 .*expected a "
                                    r"multiple of 6.*deviceIterations \(2\) x replicationFactor "
                                    r"\(1\) x gradientAccumulation \(3\)"):
            wrapped(x, y)
        x, y = tt.mlp_data(1, 12)[0]
        wrapped(x, y)  # micro-batch 2
        x, y = tt.mlp_data(1, 24)[0]
        with self.assertRaisesRegex(ValueError, r"expected 12 \(6 micro-batches of 2\)"):
            wrapped(x, y)

    def test_a_dtype_other_than_the_first_call(self):
        model = tt.make(tt.Mlp)
        wrapped = poptorch.trainingModel(model)
        x, y = tt.mlp_data(1, 4)[0]
        wrapped(x, y)
        with self.assertRaisesRegex(TypeError, "argument 'y' is torch.int32"):
            wrapped(x, y.int())

    def test_optimizers_that_cannot_be_mapped(self):
        model = tt.make(tt.Mlp)
        with self.assertRaisesRegex(poptorch.OptimizerError, "torch.optim.adagrad.Adagrad cannot "
                                    "be mapped"):
            poptorch.trainingModel(model, optimizer=torch.optim.Adagrad(model.parameters()))
        with self.assertRaisesRegex(poptorch.OptimizerError, "amsgrad=True"):
            poptorch.trainingModel(model, optimizer=torch.optim.Adam(model.parameters(),
                                                                     amsgrad=True))
        wrapped = poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.fc1.parameters(),
                                                                          lr=0.1))
        with self.assertRaisesRegex(poptorch.OptimizerError, "fc2.bias, fc2.weight"):
            wrapped(*tt.mlp_data(1, 4)[0])

    def test_inference_options(self):
        model = tt.make(tt.Mlp)
        opts = poptorch.Options()
        opts.Training.gradientAccumulation(2)
        with self.assertRaisesRegex(ValueError, "must be 1 for inference"):
            poptorch.inferenceModel(model, opts)

    def test_a_module_changed_after_wrapping(self):
        model = tt.make(tt.Mlp)
        wrapped = poptorch.trainingModel(model)
        x, y = tt.mlp_data(1, 4)[0]
        wrapped(x, y)
        model.fc2.weight = nn.Parameter(torch.zeros(3, 5))
        with self.assertRaisesRegex(ValueError, r"tensor 'fc2.weight' is now float32 \(3, 5\), but "
                                    r"the compiled model has float32 \(3, 8\)"):
            wrapped(x, y)

    def test_a_half_precision_module(self):
        # the chapter's listing 4.4's second part (more in test_torch_float16.py)
        model = nn.Linear(1, 10).half()
        self.assertEqual(poptorch.inferenceModel(model)(torch.tensor([1.]).half()).dtype,
                         torch.half)
        with self.assertRaisesRegex(NotImplementedError, "'weight' is bfloat16"):
            poptorch.inferenceModel(model.bfloat16())(torch.tensor([1.]).bfloat16())

    def test_batchnorm_without_momentum(self):
        model = tt.make(tt.SmallCnn)
        model.bn.momentum = None
        with self.assertRaisesRegex(NotImplementedError, "bn .*momentum=None"):
            poptorch.trainingModel(model)(*tt.cnn_data(1, 4)[0])


if __name__ == "__main__":
    unittest.main()
