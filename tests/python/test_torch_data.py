"""xtrain.torch's DataLoader: combined batches as the options imply, training through them as
PyTorch trains on the micro-batches (docs/poptorch.md, "Data")."""
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import xtrain.torch as poptorch


@unittest.skipIf(torch is None, SKIP_REASON)
class DataLoaderBatches(PrivatePool, unittest.TestCase):

    def dataset(self, n=100):
        g = torch.Generator().manual_seed(0)
        return torch.utils.data.TensorDataset(torch.randn(n, 6, generator=g),
                                              torch.randint(0, 3, (n,), generator=g))

    def test_combined_batches(self):
        opts = poptorch.Options().deviceIterations(2).replicationFactor(2)
        opts.Training.gradientAccumulation(3)
        loader = poptorch.DataLoader(opts, self.dataset(), batch_size=2)
        self.assertEqual(loader.combinedBatchSize, 24)
        self.assertEqual(len(loader), 4)  # 100 // 24; the short last batch dropped
        self.assertEqual([tuple(x.shape) for x, _ in loader], [(24, 6)] * 4)
        keep = poptorch.DataLoader(opts, self.dataset(), batch_size=2, drop_last=False)
        self.assertEqual(len(keep), 5)

    def test_training_through_the_loader(self):
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        opts = poptorch.Options().replicationFactor(2)
        opts.Training.gradientAccumulation(2)
        wrapped = poptorch.trainingModel(
            model, opts, optimizer=torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
        calls = 0
        for x, y in poptorch.DataLoader(opts, self.dataset(), batch_size=4):
            wrapped(x, y)
            tt.pytorch_step(reference, ref_opt, x, y, replicas=2, accumulation=2)
            calls += 1
        self.assertEqual(calls, 6)
        for k, v in model.state_dict().items():
            torch.testing.assert_close(v, reference.state_dict()[k], rtol=1e-4, atol=1e-6)

    def test_refusals(self):
        opts = poptorch.Options()
        with self.assertRaisesRegex(TypeError, "mode must be a poptorch.DataLoaderMode"):
            poptorch.DataLoader(opts, self.dataset(), mode=2)
        with self.assertRaisesRegex(TypeError, "options must be an xtrain.torch.Options"):
            poptorch.DataLoader(self.dataset(), opts)
        with self.assertRaisesRegex(ValueError, "batch_size .* must be a positive int"):
            poptorch.DataLoader(opts, self.dataset(), batch_size=0)


if __name__ == "__main__":
    unittest.main()
