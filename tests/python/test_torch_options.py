"""xtrain.torch's Options beyond batching (docs/poptorch.md, "Options"): the reduction's default,
Precision, TensorLocations, Distributed, Jit, the device and file options, loadFromFile,
setExecutionStrategy and the phased strategies (refused: xtrain has no execution phases;
test_torch_strategies.py runs the others). Each is honoured, accepted with no effect, or refused
saying why."""
import os
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import torch.nn as nn
    import xtrain
    import xtrain.torch as poptorch

    class LogOfInput(nn.Module):
        """log(x): a negative input gives nan, which the floating-point checks catch."""

        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(3))

        def forward(self, x):
            return torch.log(x * self.scale)


@unittest.skipIf(torch is None, SKIP_REASON)
class Options(PrivatePool, unittest.TestCase):

    def train_and_compare(self, opts, lr=0.2, lr_reference=None, replicas=1, accumulation=1):
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        wrapped = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=lr))
        ref_opt = torch.optim.SGD(reference.parameters(), lr=lr_reference or lr)
        for x, y in tt.mlp_data(2, 4 * replicas * accumulation):
            wrapped(x, y)
            tt.pytorch_step(reference, ref_opt, x, y, replicas=replicas, accumulation=accumulation)
        for k, v in reference.state_dict().items():
            torch.testing.assert_close(model.state_dict()[k], v, rtol=1e-4, atol=1e-6, msg=k)
        return wrapped

    def test_reduction_is_mean_by_default_as_poptorch_documents(self):
        self.assertEqual(poptorch.Options().Training.reduction, poptorch.ReductionType.Mean)
        self.train_and_compare(poptorch.Options().Training.gradientAccumulation(2), accumulation=2)
        # Sum: the gradients of the 2 micro-batches add up, twice the mean's step.
        opts = poptorch.Options().Training.gradientAccumulation(2)
        opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)
        self.train_and_compare(opts, lr=0.1, lr_reference=0.2, accumulation=2)

    def test_precision(self):
        opts = poptorch.Options()
        self.assertIs(opts.Precision.setPartialsType(torch.float), opts)
        with self.assertRaisesRegex(NotImplementedError, "half-precision partials"):
            opts.Precision.setPartialsType(torch.half)
        with self.assertRaisesRegex(ValueError, "torch.float or torch.half"):
            opts.Precision.setPartialsType(torch.int32)
        opts.Precision.halfFloatCasting(poptorch.HalfFloatCastingBehavior.HalfUpcastToFloat)
        opts.Precision.runningStatisticsAlwaysFloat(True).Precision.enableStochasticRounding(True)
        with self.assertRaisesRegex(TypeError, "HalfFloatCastingBehavior"):
            opts.Precision.halfFloatCasting("half")
        with self.assertRaisesRegex(AttributeError, "Precision has no option 'setPartialType'"):
            opts.Precision.setPartialType(torch.float)
        self.train_and_compare(opts)  # stochastic rounding changes nothing in float32

    def test_floating_point_exceptions(self):
        x = torch.tensor([[1.0, -1.0, 2.0]])
        quiet = poptorch.inferenceModel(LogOfInput())
        self.assertTrue(torch.isnan(quiet(x)).any())
        opts = poptorch.Options()
        opts.Precision.enableFloatingPointExceptions(True)
        checked = poptorch.inferenceModel(LogOfInput(), opts)
        with self.assertRaisesRegex(poptorch.Error, "floating-point check"):
            checked(x)

    def test_tensor_locations_reach_the_session(self):
        opts = poptorch.Options().replicationFactor(2)
        off_chip = poptorch.TensorLocationSettings().useOnChipStorage(False) \
            .minElementsForOffChip(0)
        sharded = poptorch.TensorLocationSettings().useReplicatedTensorSharding(True) \
            .minElementsForReplicatedTensorSharding(0)
        self.assertIs(opts.TensorLocations.setWeightLocation(off_chip), opts)
        opts.TensorLocations.setOptimizerLocation(sharded).TensorLocations.numIOTiles(32)
        wrapped = self.train_and_compare(opts, replicas=2)
        session_options = wrapped._session_options()
        weights = session_options.weightTensorLocationSettings
        self.assertEqual(weights.location.storage, xtrain.TensorStorage.OffChip)
        self.assertEqual(weights.minElementsForOffChip, 0)
        optimizer = session_options.optimizerStateTensorLocationSettings
        self.assertEqual(optimizer.location.replicatedTensorSharding,
                         xtrain.ReplicatedTensorSharding.On)
        with self.assertRaisesRegex(TypeError, "TensorLocationSettings for the weight location"):
            opts.TensorLocations.setWeightLocation("OffChip")
        with self.assertRaisesRegex(ValueError, "minElementsForOffChip must be a non-negative"):
            poptorch.TensorLocationSettings().minElementsForOffChip(-1)

    def test_distributed_outside_xrun(self):
        opts = poptorch.Options()
        self.assertEqual((opts.Distributed.processId, opts.Distributed.numProcesses), (0, 1))
        self.assertIs(opts.Distributed.configureProcessId(0, 1), opts)
        with self.assertRaisesRegex(NotImplementedError, "started by xrun"):
            opts.Distributed.configureProcessId(1, 2)
        with self.assertRaisesRegex(NotImplementedError, "setEnvVarNames"):
            opts.Distributed.setEnvVarNames("WORLD_SIZE", "RANK")

    def test_jit(self):
        opts = poptorch.Options()
        self.assertIs(opts.Jit.traceModel(True), opts)
        with self.assertRaisesRegex(NotImplementedError, "torch.jit.script"):
            opts.Jit.traceModel(False)

    def test_log_dir_gets_the_memory_report(self):
        log_dir = os.path.join(self.tmp, "logs")
        os.makedirs(log_dir)
        self.train_and_compare(poptorch.Options().logDir(log_dir))
        self.assertIn("memory-report.txt", os.listdir(log_dir))

    def test_synthetic_data_ignores_the_host_inputs(self):
        model = tt.make(tt.Mlp).eval()
        x, _ = tt.mlp_data(1, 4)[0]
        real = poptorch.inferenceModel(model)(x)
        synthetic = poptorch.inferenceModel(model, poptorch.Options().enableSyntheticData(True))(x)
        self.assertEqual(synthetic.shape, real.shape)
        self.assertTrue(torch.isfinite(synthetic).all())
        self.assertFalse(torch.allclose(synthetic, real))

    def test_device_options(self):
        model = tt.make(tt.Mlp)
        wrapped = poptorch.trainingModel(model, poptorch.Options().useIpuId(3))
        wrapped(*tt.mlp_data(1, 4)[0])
        self.assertEqual(wrapped._device.id, 3)
        with self.assertRaisesRegex(ValueError, "a device of 1 IPUs, but the options need 2"):
            poptorch.trainingModel(model, poptorch.Options().useIpuId(4).replicationFactor(2)) \
                .compile(*tt.mlp_data(1, 8)[0])
        with self.assertRaisesRegex(ValueError, "useIpuModel"):
            poptorch.trainingModel(model, poptorch.Options().useIpuId(4).useIpuModel(True)) \
                .compile(*tt.mlp_data(1, 4)[0])
        opts = poptorch.Options().autoRoundNumIPUs(True)
        opts.connectionType(poptorch.ConnectionType.OnDemand)
        cache = os.path.join(self.tmp, "cache")
        self.train_and_compare(opts.enableExecutableCaching(cache))
        self.assertFalse(os.path.exists(cache) and os.listdir(cache), "the cache wrote files")

    def test_load_from_file(self):
        path = os.path.join(self.tmp, "poptorch.conf")
        with open(path, "w") as f:
            f.write("# PopTorch's config form\ndeviceIterations(2)\n\n"
                    "Training.gradientAccumulation(3)\n"
                    "outputMode(poptorch.OutputMode.EveryN, 2)\n"
                    "Precision.setPartialsType(torch.float)\nrandomSeed(42)\n")
        opts = poptorch.Options().loadFromFile(path)
        self.assertEqual((opts.device_iterations, opts.Training.gradient_accumulation,
                          opts.output_mode, opts.output_return_period, opts.random_seed),
                         (2, 3, poptorch.OutputMode.EveryN, 2, 42))
        with open(path, "w") as f:
            f.write("deviceIterations(2)\nreplicationFactor(0)\n")
        with self.assertRaisesRegex(ValueError, r"poptorch.conf:2: 'replicationFactor\(0\)'"):
            poptorch.Options().loadFromFile(path)
        with open(path, "w") as f:
            f.write("deviceIterations = 2\n")
        with self.assertRaisesRegex(ValueError, "poptorch.conf:1: .*expected an option call"):
            poptorch.Options().loadFromFile(path)

    def test_execution_strategy_option(self):
        opts = poptorch.Options()
        self.assertIsNone(opts.execution_strategy)  # PipelinedExecution() once blocks exist
        sharded = poptorch.ShardedExecution("a", "b")
        self.assertIs(opts.setExecutionStrategy(sharded), opts)
        self.assertIs(opts.execution_strategy, sharded)
        with self.assertRaisesRegex(TypeError, "setExecutionStrategy: expected"):
            opts.setExecutionStrategy(object())
        attempts = {
            "Phase": lambda: poptorch.Phase(["0"]),
            "SerialPhasedExecution": lambda: poptorch.SerialPhasedExecution(["0"]),
            "ParallelPhasedExecution": lambda: poptorch.ParallelPhasedExecution(["0"], ["1"]),
        }
        for name, attempt in attempts.items():
            with self.subTest(name), self.assertRaisesRegex(
                    NotImplementedError, "%s: execution phases.*ExecutionPhases" % name):
                attempt()

if __name__ == "__main__":
    unittest.main()
