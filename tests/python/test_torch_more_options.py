"""The PopTorch options _extra_options.py builds (docs/poptorch.md, "More options"): those xtrain
honours (automatic loss scaling, the mean reduction strategy, anchorTensor, logCycleCount,
updatableNamedBuffers, disableModuleNamescope, _Popart, enableStableNorm), those accepted with no
effect, and their bad values."""
import pickle
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch

if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import xtrain
    import xtrain.torch as poptorch

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.fc = nn.Linear(4, 3)
            self.relu = nn.ReLU()
            self.out = nn.Linear(3, 2)

        def forward(self, x, y):
            out = self.out(self.relu(self.fc(x)))
            return out, F.mse_loss(out, y)

    class UpdatableBuffer(nn.Module):
        """PopTorch's model for updatableNamedBuffers."""

        def __init__(self):
            super().__init__()
            self.register_buffer("buffer_1", torch.ones(1))
            self.register_buffer("buffer_2", torch.ones(1))

        def forward(self, x):
            return torch.sum(x + self.buffer_1 + self.buffer_2)

    def data(n=2):
        torch.manual_seed(1)
        return torch.randn(n, 4), torch.randn(n, 2)


@unittest.skipIf(torch is None, SKIP_REASON)
class Honoured(PrivatePool, unittest.TestCase):

    def test_anchor_tensor_reads_an_activation_and_a_gradient(self):
        opts = poptorch.Options().deviceIterations(2)
        opts.anchorTensor("hidden", "/relu/Relu_output_0", poptorch.OutputMode.All)
        opts.anchorTensor("grad", "Gradient___fc.weight", poptorch.OutputMode.Final)
        model = Net()
        cpu = Net()
        wrapped = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.0))
        x, y = data(4)
        wrapped(x, y)
        hidden = wrapped.getAnchoredTensor("hidden")
        torch.testing.assert_close(hidden, torch.relu(cpu.fc(x)).detach())
        # The gradient of the last micro-batch (lr 0: the weights stay the CPU model's).
        _, loss = cpu(x[2:], y[2:])
        loss.backward()
        torch.testing.assert_close(wrapped.getAnchoredTensor("grad"), cpu.fc.weight.grad)
        with self.assertRaisesRegex(ValueError, "no tensor anchored as 'hiden'.*'hidden', 'grad'"):
            wrapped.getAnchoredTensor("hiden")

    def test_anchor_tensor_in_inference_with_the_outputs_mode(self):
        opts = poptorch.Options().deviceIterations(2)
        opts.anchorTensor("first", "/fc/Gemm_output_0")
        model = Net()
        wrapped = poptorch.inferenceModel(model, opts)
        x, y = data(4)
        wrapped(x, y)
        torch.testing.assert_close(wrapped.getAnchoredTensor("first"), model.fc(x).detach())
        opts = poptorch.Options()
        opts.anchorTensor("bad", "no_such_tensor")
        with self.assertRaisesRegex(poptorch.Error, "'no_such_tensor' is not a tensor of the "
                                    "model"):
            poptorch.inferenceModel(Net(), opts)(*data())

    def test_automatic_loss_scaling_reaches_the_session(self):
        opts = poptorch.Options()
        opts.Training.setAutomaticLossScaling(True)
        model = Net()
        wrapped = poptorch.trainingModel(model, opts, poptorch.optim.SGD(
            model.parameters(), lr=0.1, loss_scaling=4.0))
        # PopART's rule, which PopTorch's float32 models meet too: it scales by the histogram of
        # float16 gradients, and a float32 model has none.
        with self.assertRaisesRegex(poptorch.Error, "No tracked gradient tensors of type fp16"):
            wrapped(*data())
        # An inference model has no loss to scale: the setting does not reach its session.
        inference = poptorch.inferenceModel(Net(), opts)
        inference(*data())
        self.assertFalse(inference._session_options().automaticLossScalingSettings.enabled)
        with self.assertRaisesRegex(TypeError, "expected a bool"):
            opts.Training.setAutomaticLossScaling(1)

    def test_mean_reduction_strategy(self):
        opts = poptorch.Options()
        opts.Training.gradientAccumulation(2)
        opts.Training.setMeanAccumulationAndReplicationReductionStrategy(
            poptorch.MeanReductionStrategy.Running)
        model = Net()
        wrapped = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.1))
        wrapped(*data(4))
        self.assertEqual(wrapped._session_options().meanAccumulationAndReplicationReductionStrategy,
                         xtrain.MeanReductionStrategy.Running)
        # Running trains as Post: PyTorch's mean over the micro-batches.
        cpu = Net()
        sgd = torch.optim.SGD(cpu.parameters(), lr=0.1)
        x, y = data(4)
        (cpu(x[:2], y[:2])[1] / 2 + cpu(x[2:], y[2:])[1] / 2).backward()
        sgd.step()
        torch.testing.assert_close(model.fc.weight, cpu.fc.weight)
        with self.assertRaisesRegex(NotImplementedError, "PostAndLoss"):
            opts.Training.setMeanAccumulationAndReplicationReductionStrategy(
                poptorch.MeanReductionStrategy.PostAndLoss)
        with self.assertRaisesRegex(TypeError, "expected a poptorch.MeanReductionStrategy"):
            opts.Training.setMeanAccumulationAndReplicationReductionStrategy("Running")

    def test_log_cycle_count(self):
        wrapped = poptorch.inferenceModel(Net(), poptorch.Options().logCycleCount(True))
        with self.assertRaisesRegex(ValueError, "run the model at least once"):
            wrapped.cycleCount()
        wrapped(*data())
        self.assertGreater(wrapped.cycleCount(), 0)
        off = poptorch.inferenceModel(Net())
        off(*data())
        with self.assertRaisesRegex(ValueError, r"logCycleCount\(True\)"):
            off.cycleCount()

    def test_updatable_named_buffers(self):
        model = UpdatableBuffer()
        wrapped = poptorch.inferenceModel(
            model, poptorch.Options().updatableNamedBuffers(["buffer_1"]))
        x = torch.ones(3)
        self.assertEqual(wrapped(x).item(), 9)
        # Changes PyTorch's version counter does not see (.data) need an explicit copy.
        model.buffer_1.data += 1
        model.buffer_2.data += 1
        self.assertEqual(wrapped(x).item(), 9)
        wrapped.copyNamedBuffersToDevice()
        self.assertEqual(wrapped(x).item(), 12)  # buffer_1 only
        wrapped.copyWeightsToDevice()
        self.assertEqual(wrapped(x).item(), 15)
        plain = poptorch.inferenceModel(UpdatableBuffer())
        plain(x)
        with self.assertRaisesRegex(ValueError, "no buffers are marked as updatable"):
            plain.copyNamedBuffersToDevice()
        bad = poptorch.inferenceModel(
            UpdatableBuffer(), poptorch.Options().updatableNamedBuffers(["non_existing_buffer"]))
        with self.assertRaisesRegex(ValueError, "no buffer 'non_existing_buffer'"):
            bad(x)

    def test_disable_module_namescope(self):
        model = Net()
        plain = poptorch.inferenceModel(model)
        scoped = [n.name for n in (plain.compile(*data()) or plain._captured.proto.graph.node)]
        self.assertIn("/fc/Gemm", scoped)
        wrapped = poptorch.inferenceModel(model, poptorch.Options().disableModuleNamescope())
        out = wrapped(*data())
        names = [n.name for n in wrapped._captured.proto.graph.node]
        self.assertIn("Gemm", names)
        self.assertIn("Gemm_1", names)
        self.assertFalse([n for n in names if "/" in n])
        torch.testing.assert_close(out[0], plain(*data())[0])

    def test_popart_options_by_name(self):
        opts = poptorch.Options()
        opts._Popart.set("enableStableNorm", True)
        opts._Popart.set("automaticLossScalingSettings.binEdgeLocation", 0.5)
        wrapped = poptorch.inferenceModel(Net(), opts.enableStableNorm(False))
        wrapped(*data())
        session_opts = wrapped._session_options()
        self.assertTrue(session_opts.enableStableNorm)  # _Popart's, set last
        self.assertEqual(session_opts.automaticLossScalingSettings.binEdgeLocation, 0.5)
        with self.assertRaisesRegex(AttributeError, "no option 'enableStabelNorm'"):
            opts._Popart.set("enableStabelNorm", True)
        self.assertTrue(poptorch.inferenceModel(Net(), poptorch.Options().enableStableNorm(
            True))._session_options().enableStableNorm)


@unittest.skipIf(torch is None, SKIP_REASON)
class AcceptedWithNoEffect(PrivatePool, unittest.TestCase):

    def test_accepted_and_the_model_runs_as_without_them(self):
        opts = poptorch.Options()
        self.assertIs(opts.modelName("net"), opts)
        self.assertIs(opts.showCompilationProgressBar(False), opts)
        self.assertIs(opts.setAvailableMemoryProportion({"IPU0": 0.3}), opts)
        self.assertIs(opts.relaxOptimizerAttributesChecks(), opts)
        self.assertIs(opts.syncPattern(poptorch.SyncPattern.SinglePipeline), opts)
        self.assertIn("site-packages/torch", opts.source_location_excludes)  # PopTorch's default
        self.assertIs(opts.sourceLocationExcludes(["torch/"]), opts)
        self.assertIs(opts.appendToLocationExcludes("site-packages/", "x/"), opts)
        self.assertEqual(opts.source_location_excludes, ["torch/", "site-packages/", "x/"])
        self.assertIs(opts.Training.setConvolutionDithering(True), opts)
        model = Net()
        out = poptorch.inferenceModel(model, opts)(*data())
        torch.testing.assert_close(out[0], model(*data())[0].detach())

    def test_bad_values(self):
        opts = poptorch.Options()
        with self.assertRaisesRegex(ValueError, r"keys are \"IPU<n>\""):
            opts.setAvailableMemoryProportion({"GPU0": 0.5})
        with self.assertRaisesRegex(ValueError, "IPU1's proportion must be in"):
            opts.setAvailableMemoryProportion({"IPU1": 1.5})
        with self.assertRaisesRegex(TypeError, "expected a poptorch.SyncPattern"):
            opts.syncPattern("Full")
        with self.assertRaisesRegex(TypeError, "expected a str"):
            opts.modelName(3)
        with self.assertRaisesRegex(TypeError, "expected strings"):
            opts.appendToLocationExcludes(3)
        with self.assertRaisesRegex(TypeError, "expected a bool"):
            opts.broadcastBuffers("no")
        with self.assertRaisesRegex(TypeError, "expected a poptorch.OutputMode"):
            opts.anchorTensor("a", "b", "All")
        with self.assertRaisesRegex(ValueError, "output_return_period must be a positive int"):
            opts.anchorTensor("a", "b", poptorch.OutputMode.EveryN, 0)

    def test_options_pickled_before_them_load_with_their_defaults(self):
        opts = poptorch.Options().deviceIterations(2)  # as an older compileAndExport wrote it
        for name in ("broadcast_buffers", "anchored_tensors", "_popart", "log_cycle_count"):
            del opts.__dict__[name]
        del opts.Training.__dict__["automatic_loss_scaling"]
        loaded = pickle.loads(pickle.dumps(opts))
        self.assertEqual(loaded.device_iterations, 2)
        self.assertTrue(loaded.broadcast_buffers)
        self.assertEqual(loaded.anchored_tensors, {})
        self.assertFalse(loaded.log_cycle_count)
        self.assertFalse(loaded.Training.automatic_loss_scaling)
        loaded._Popart.set("enableStableNorm", True)

    def test_config_file_sets_them(self):
        path = self.tmp + "/opts.cfg"
        with open(path, "w") as f:
            f.write("broadcastBuffers(False)\nTraining.setAutomaticLossScaling(True)\n"
                    "anchorTensor('h', '/relu/Relu_output_0')\n")
        opts = poptorch.Options().loadFromFile(path)
        self.assertFalse(opts.broadcast_buffers)
        self.assertTrue(opts.Training.automatic_loss_scaling)
        self.assertEqual(opts.anchored_tensors["h"][0], "/relu/Relu_output_0")


if __name__ == "__main__":
    unittest.main()
