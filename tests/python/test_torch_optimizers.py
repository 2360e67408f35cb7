"""xtrain.torch's optimizers against PyTorch's: AdamW, xtrain.torch.optim's extras (loss scaling,
max_grad_norm, Nesterov), and the output modes (docs/poptorch.md, "Optimizers", "Outputs")."""
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import xtrain.torch as poptorch


@unittest.skipIf(torch is None, SKIP_REASON)
class OptimizersMatchPyTorch(PrivatePool, unittest.TestCase):

    def compare(self, ours, theirs, clip=None, steps=4):
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        ref_opt = theirs(reference)
        wrapped = poptorch.trainingModel(model, optimizer=ours(model))
        for x, y in tt.mlp_data(steps, 8):
            wrapped(x, y)
            ref_opt.zero_grad()
            reference(x, y)[1].backward()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(reference.parameters(), clip)
            ref_opt.step()
        for k, v in model.state_dict().items():
            torch.testing.assert_close(v, reference.state_dict()[k], rtol=1e-4, atol=1e-6,
                                       msg=lambda m: "%s: %s" % (k, m))

    def test_adamw(self):
        self.compare(lambda m: torch.optim.AdamW(m.parameters(), lr=0.02, betas=(0.9, 0.99),
                                                 weight_decay=0.1),
                     lambda m: torch.optim.AdamW(m.parameters(), lr=0.02, betas=(0.9, 0.99),
                                                 weight_decay=0.1))

    def test_poptorch_adam_with_loss_scaling_and_max_grad_norm(self):
        self.compare(lambda m: poptorch.optim.Adam(m.parameters(), lr=0.02, betas=(0.9, 0.99),
                                                   loss_scaling=128.0, max_grad_norm=0.05),
                     lambda m: torch.optim.Adam(m.parameters(), lr=0.02, betas=(0.9, 0.99)),
                     clip=0.05)

    def test_poptorch_sgd_nesterov_and_velocity_scaling(self):
        self.compare(lambda m: poptorch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9,
                                                  nesterov=True, weight_decay=0.01,
                                                  velocity_scaling=8.0),
                     lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9,
                                               nesterov=True, weight_decay=0.01))

    def test_rmsprop(self):
        self.compare(lambda m: torch.optim.RMSprop(m.parameters(), lr=0.01, alpha=0.9,
                                                   weight_decay=0.01),
                     lambda m: torch.optim.RMSprop(m.parameters(), lr=0.01, alpha=0.9,
                                                   weight_decay=0.01))

    def test_poptorch_rmsprop_centered_with_momentum(self):
        self.compare(lambda m: poptorch.optim.RMSprop(m.parameters(), lr=0.01, momentum=0.5,
                                                      centered=True, loss_scaling=16.0),
                     lambda m: torch.optim.RMSprop(m.parameters(), lr=0.01, momentum=0.5,
                                                   centered=True))

    def test_centered_cannot_change_after_compiling(self):
        model = tt.make(tt.Mlp)
        opt = poptorch.optim.RMSprop(model.parameters(), lr=0.01, centered=True)
        wrapped = poptorch.trainingModel(model, optimizer=opt)
        wrapped(*tt.mlp_data(1, 4)[0])
        opt.param_groups[0]["centered"] = False
        with self.assertRaisesRegex(poptorch.OptimizerError, r"\['centered'\]: True -> False \(it chooses the update rule"):
            wrapped(*tt.mlp_data(1, 4)[0])

    def test_sgd_dampening_without_momentum_is_ignored_as_pytorch_does(self):
        self.compare(lambda m: torch.optim.SGD(m.parameters(), lr=0.05, dampening=0.5),
                     lambda m: torch.optim.SGD(m.parameters(), lr=0.05, dampening=0.5))


@unittest.skipIf(torch is None, SKIP_REASON)
class OutputModes(PrivatePool, unittest.TestCase):

    def test_every_n_in_training(self):
        model = tt.make(tt.Mlp)
        opts = poptorch.Options().deviceIterations(4)
        opts.outputMode(poptorch.OutputMode.EveryN, 2)
        out, loss = poptorch.trainingModel(model, opts)(*tt.mlp_data(1, 8)[0])
        self.assertEqual(tuple(out.shape), (4, 3))  # iterations 1 and 3, 2 samples each
        self.assertEqual(tuple(loss.shape), (2,))

    def test_inference_returns_all_batches_by_default(self):
        model = tt.make(tt.Mlp).eval()
        opts = poptorch.Options().deviceIterations(3).replicationFactor(2)
        x, _ = tt.mlp_data(1, 12)[0]
        out = poptorch.inferenceModel(model, opts)(x)
        with torch.no_grad():
            torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-6)

    def test_final_with_replicas(self):
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        opts = poptorch.Options().replicationFactor(2).deviceIterations(2)
        x, y = tt.mlp_data(1, 8)[0]
        out, loss = poptorch.trainingModel(model, opts)(x, y)
        self.assertEqual(tuple(out.shape), (4, 3))  # the last iteration's 2 replicas x 2 samples
        self.assertEqual(tuple(loss.shape), (2,))
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.01)
        tt.pytorch_step(reference, ref_opt, x[:4], y[:4], replicas=2)
        losses = tt.pytorch_step(reference, ref_opt, x[4:], y[4:], replicas=2)
        torch.testing.assert_close(loss, torch.tensor(losses), rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    unittest.main()
