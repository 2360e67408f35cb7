"""torchvision models trained through xtrain.torch's trainingModel match PyTorch's own training of
the same module (docs/poptorch.md): ResNet-18, MobileNetV3-small and SqueezeNet 1.1, with 1
replica (three steps of SGD with momentum), 2 replicas and gradient accumulation (two steps each),
then ResNet-18's inference. Dropout is set to p=0: its masks come from xtrain's generator, not
torch's. Inputs are 64x64, where the last BatchNorms see 2x2 maps: at 32x32 they see 1x1 maps of
4 samples, where PyTorch's own float32 and float64 runs part after two steps, so no
implementation can be compared there. Each tensor is compared by tt.assert_close_relative."""
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch, torchvision
import torch_testing as tt

if torch is not None:
    import xtrain.torch as poptorch


@unittest.skipIf(torch is None, SKIP_REASON)
@unittest.skipIf(torchvision is None, "torchvision (Debian's python3-torchvision) is not importable")
class TorchvisionMatchesPyTorch(PrivatePool, unittest.TestCase):

    def train_both(self, name, steps=3, replicas=1, accumulation=1, seed=1):
        """Micro-batches of 4 images; returns the trained module and PyTorch's state."""
        model = tt.make_vision(name)
        data = tt.vision_data(steps, 4 * replicas * accumulation, seed)
        losses, state, noise = tt.vision_reference(model, data, replicas, accumulation)
        opts = poptorch.Options().replicationFactor(replicas)
        opts.Training.gradientAccumulation(accumulation)
        opts.outputMode(poptorch.OutputMode.All)
        wrapped = poptorch.trainingModel(model, opts, optimizer=tt.vision_sgd(model))
        for step, (x, y) in enumerate(data):
            _, loss = wrapped(x, y)
            torch.testing.assert_close(loss.reshape(-1), torch.tensor(losses[step]), rtol=1e-4,
                                       atol=0.0, msg=lambda m: "step %d: %s" % (step, m))
        tt.assert_vision_state_close(self, model.state_dict(), state, noise)
        return model, state

    def test_resnet18_and_its_inference(self):
        model, state = self.train_both("resnet18")
        x = torch.randn(4, 3, 64, 64, generator=torch.Generator().manual_seed(5))
        out = poptorch.inferenceModel(model)(x)
        reference = tt.make_vision("resnet18")
        reference.load_state_dict(state)
        reference.eval()
        with torch.no_grad():
            tt.assert_close_relative(out, reference(x), "inference output")

    def test_mobilenet_v3_small(self):
        self.train_both("mobilenet_v3_small")

    def test_squeezenet1_1(self):
        self.train_both("squeezenet1_1")

    def test_two_replicas(self):
        for name in ("resnet18", "mobilenet_v3_small", "squeezenet1_1"):
            with self.subTest(name):
                self.train_both(name, steps=2, replicas=2)

    def test_gradient_accumulation(self):
        for name in ("resnet18", "mobilenet_v3_small", "squeezenet1_1"):
            with self.subTest(name):
                self.train_both(name, steps=2, accumulation=2)

    def test_resnet18_four_replicas(self):
        """Data of seed 3: with the default seed's 16 images, a decision in ResNet-18's stem at
        the second step lies within float32 rounding of its threshold, and which side a run
        takes moves conv1 by 3e-5 (PyTorch's own float32 run parts from its float64 run by that
        much with 2 replicas x accumulation 2 of the same images; with seed 2, by 1.5e-3), so
        no implementation can be compared there (docs/poptorch.md, "Proof")."""
        self.train_both("resnet18", steps=2, replicas=4, seed=3)


if __name__ == "__main__":
    unittest.main()
