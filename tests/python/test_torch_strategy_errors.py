"""Bad input to PopTorch's execution strategies in xtrain.torch (docs/poptorch.md, "Execution
strategies"): each a Python exception naming what is wrong and what would work, before anything
runs; and the PopTorch chapter's listings of blocks (4.8, 4.9) and stages (4.10) run as written
but for the import."""
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import xtrain.torch as poptorch
    from test_torch_strategies import ThreeFunctionBlocks, TwoBlockMlp

    class OpAfterBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 3)

        def forward(self, x, y):
            with poptorch.Block("only", ipu_id=1):
                out = self.fc(x)
            return out, F.cross_entropy(out * 2.0, y)  # the Mul and the loss: in no block

    class ThreeIpus(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = nn.Linear(6, 6), nn.Linear(6, 6), nn.Linear(6, 3)
            poptorch.BeginBlock(self.b, ipu_id=1)
            poptorch.BeginBlock(self.c, ipu_id=2)

        def forward(self, x, y):
            out = self.c(self.b(self.a(x)))
            return out, F.cross_entropy(out, y)

    # Listing 4.8 of PopTorch's chapter, as written but for the import.
    class Network48(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = torch.nn.Linear(5, 10)
            self.layer2 = torch.nn.Linear(10, 5)
            self.layer3 = torch.nn.Linear(5, 5)
            self.layer4 = torch.nn.Linear(5, 5)

            self.act = torch.nn.ReLU()
            self.softmax = torch.nn.Softmax(dim=1)

        def forward(self, x):

            # Explicit layers on a certain IPU
            poptorch.Block.useAutoId()
            with poptorch.Block(ipu_id=0):
                x = self.act(self.layer1(x))

            with poptorch.Block(ipu_id=1):
                x = self.act(self.layer2(x))

            with poptorch.Block(ipu_id=2):
                x = self.act(self.layer3(x))
                x = self.act(self.layer4(x))

            with poptorch.Block(ipu_id=3):
                x = self.softmax(x)
            return x

    # Listing 4.9, as written but for the import.
    class Network49(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = torch.nn.Linear(5, 10)
            self.layer2 = torch.nn.Linear(10, 5)
            self.layer3 = torch.nn.Linear(5, 5)
            self.layer4 = torch.nn.Linear(5, 5)

            self.act = torch.nn.ReLU()
            self.softmax = torch.nn.Softmax(dim=1)

        def forward(self, x):
            poptorch.Block.useAutoId()
            x = self.block_one(x)
            x = self.block_two(x)
            x = self.final_activation(x)
            return x

        @poptorch.BlockFunction(ipu_id=0)
        def block_one(self, x):
            x = self.act(self.layer1(x))
            x = self.act(self.layer2(x))
            return x

        @poptorch.BlockFunction(ipu_id=1)
        def block_two(self, x):
            x = self.act(self.layer3(x))
            x = self.act(self.layer4(x))
            return x

        @poptorch.BlockFunction(ipu_id=1)
        def final_activation(self, x):
            return self.softmax(x)


def train_once(model, opts, batch=4):
    x, y = tt.mlp_data(1, batch * opts.batches_per_call(True))[0]
    return poptorch.trainingModel(model, opts)(x, y)


@unittest.skipIf(torch is None, SKIP_REASON)
class StrategyErrors(PrivatePool, unittest.TestCase):

    def test_pipelining_without_gradient_accumulation(self):
        with self.assertRaisesRegex(
                ValueError, r"PipelinedExecution over 2 stages .*"
                r"Options\.Training\.gradientAccumulation\(n\) with n >= 3 .*it is 1.*"
                r"ShardedExecution"):
            train_once(tt.make(TwoBlockMlp), poptorch.Options())
        opts = poptorch.Options()
        opts.Training.gradientAccumulation(2)
        with self.assertRaisesRegex(ValueError, r"n >= 3 .*it is 2"):
            train_once(tt.make(TwoBlockMlp), opts)

    def test_inference_pipeline_needs_device_iterations(self):
        with self.assertRaisesRegex(ValueError, r"Options\.deviceIterations\(n\) with n >= 2"):
            poptorch.inferenceModel(tt.make(TwoBlockMlp))(torch.randn(4, 6))

    def test_stage_order_against_the_data_flow(self):
        opts = poptorch.Options()
        opts.Training.gradientAccumulation(5)
        with self.assertRaisesRegex(
                ValueError, r"block 'C' \(poptorch\.BlockFunction\(third\)\) \(pipeline stage 0\) "
                r"reads '.*', made by block 'B' \(poptorch\.BlockFunction\(second\)\) in the "
                r"later stage 1: the stages of a PipelinedExecution must follow the data flow.*"
                r"AutoStage\.AutoIncrement"):
            train_once(tt.make(ThreeFunctionBlocks), opts)
        # The same blocks run sharded: no stage order to follow.
        opts = poptorch.Options().setExecutionStrategy(poptorch.ShardedExecution())
        train_once(tt.make(ThreeFunctionBlocks), opts)

    def test_blocks_a_strategy_does_not_name(self):
        opts = poptorch.Options().setExecutionStrategy(poptorch.PipelinedExecution("front"))
        opts.Training.gradientAccumulation(4)
        with self.assertRaisesRegex(
                ValueError, r"block 'back' \(poptorch\.Block\) is not in any stage of "
                r"PipelinedExecution\(Stage\('front'\)\).*the blocks it names: 'front'"):
            train_once(tt.make(TwoBlockMlp), opts)

    def test_same_as_ipu_needs_an_ipu(self):
        class NoIpu(TwoBlockMlp):
            def forward(self, x, y=None):
                with poptorch.Block("x"):
                    out = self.fc3(self.fc2(self.fc1(x)))
                    return out, F.cross_entropy(out, y)
        with self.assertRaisesRegex(ValueError, r"block 'x' \(poptorch\.Block\) has no ipu_id.*"
                                                r"AutoStage\.SameAsIpu.*the default"):
            train_once(tt.make(NoIpu), poptorch.Options())

    def test_op_outside_any_block(self):
        opts = poptorch.Options().setExecutionStrategy(poptorch.ShardedExecution())
        with self.assertRaisesRegex(ValueError, r"OpAfterBlock: the op /Mul \(Mul\) is traced "
                                                r"after the end of block 'only'.*in no block"):
            train_once(tt.make(OpAfterBlock), opts)

    def test_ipus_not_a_power_of_two(self):
        opts = poptorch.Options().setExecutionStrategy(poptorch.ShardedExecution())
        with self.assertRaisesRegex(ValueError, r"IPUs 0 to 2 \(3 IPUs per replica\), which is not "
                                                r"a power of two.*autoRoundNumIPUs\(True\)"):
            train_once(ThreeIpus(), opts)
        model = ThreeIpus()
        opts.autoRoundNumIPUs(True)
        wrapped = poptorch.trainingModel(model, opts)
        x, y = tt.mlp_data(1, 4)[0]
        wrapped(x, y)
        self.assertEqual(wrapped._device.numIpus, 4)

    def test_ipu_beyond_the_device(self):
        # useIpuId names a device of the pool: device 0 has 1 IPU, the blocks need 2 x 2.
        opts = poptorch.Options().useIpuId(0).replicationFactor(2)
        opts.setExecutionStrategy(poptorch.ShardedExecution())
        with self.assertRaisesRegex(ValueError, r"useIpuId\(0\) is a device of 1 IPUs, but "
                                                r"the options need 4 \(2 replicas x 2 IPUs per "
                                                r"replica"):
            train_once(tt.make(TwoBlockMlp), opts)
        # Blocks on IPU 7 of 2 replicas: 16 IPUs, more than the pool's 8.
        opts = poptorch.Options().replicationFactor(2)
        opts.setExecutionStrategy(poptorch.ShardedExecution())
        with self.assertRaisesRegex(ValueError, r"blocks use IPUs 0 to 7 of a replica, so 2 "
                                                r"replicas need 16 IPUs, which the pool cannot "
                                                r"give"):
            train_once(TwoBlockMlp(front_ipu=0, back_ipu=7), opts)

    def test_a_stage_on_two_ipus(self):
        opts = poptorch.Options().setExecutionStrategy(
            poptorch.ShardedExecution(poptorch.Stage("front", "back")))
        with self.assertRaisesRegex(ValueError, r"stage 0 holds blocks on different IPUs \(block "
                                                r"'front' .* on IPU 0; block 'back' .* on IPU 1\).*"
                                                r"\.ipu\(n\)"):
            train_once(tt.make(TwoBlockMlp), opts)

    def test_bad_arguments(self):
        model = tt.make(TwoBlockMlp)
        cases = [
            (lambda: poptorch.Block(ipu_id=-1), ValueError, r"ipu_id must be an int >= 0"),
            (lambda: poptorch.Block(user_id=3), TypeError, r"user_id must be a str"),
            (lambda: poptorch.BlockFunction(ipu_id="1"), ValueError, r"ipu_id must be an int"),
            (lambda: poptorch.BeginBlock(3), TypeError, r"expected a torch\.nn\.Module"),
            (lambda: poptorch.BeginBlock(poptorch.BeginBlock(model.fc2, ipu_id=1)), ValueError,
             r"already been assigned to a block"),
            (lambda: poptorch.Stage(1), TypeError, r"block ids are strings"),
            (lambda: poptorch.Stage("a").ipu(-2), ValueError, r"\.ipu: expected an int >= 0"),
            (lambda: poptorch.PipelinedExecution("a", ["a", "b"]), ValueError,
             r"block 'a' is in more than one stage"),
            (lambda: poptorch.PipelinedExecution(3), TypeError, r"argument 0 is 3"),
            (lambda: poptorch.Options().setExecutionStrategy("pipelined"), TypeError,
             r"expected a poptorch\.PipelinedExecution or poptorch\.ShardedExecution"),
            (lambda: poptorch.Block.start("a", 0), NotImplementedError, r"use `with poptorch"),
        ]
        for i, (attempt, error, pattern) in enumerate(cases):
            with self.subTest(i), self.assertRaisesRegex(error, pattern):
                attempt()

    def test_phases_are_refused(self):
        for name in ("Phase", "SerialPhasedExecution", "ParallelPhasedExecution"):
            with self.subTest(name), self.assertRaisesRegex(
                    NotImplementedError, r"poptorch\.%s: execution phases .* not implemented in "
                                         r"xtrain" % name):
                getattr(poptorch, name)(poptorch.Stage("A"))


@unittest.skipIf(torch is None, SKIP_REASON)
class BlockListings(PrivatePool, unittest.TestCase):
    """Listings 4.8 and 4.9 as written compile an inferenceModel of 4 and 2 pipeline stages with
    one device iteration, which PopTorch itself refuses (its compiler's rule: "deviceIterations
    must be greater than or equal to the number of pipeline stages"): so does xtrain.torch. With
    enough device iterations they run on 4 and 2 IPUs and match the module on the CPU."""

    def run_listing(self, network, stages):
        torch.manual_seed(0)
        model = network()
        opts = poptorch.Options()

        poptorch_model = poptorch.inferenceModel(model, options=opts)
        with self.assertRaisesRegex(ValueError, r"deviceIterations\(n\) with n >= %d" % stages):
            print(poptorch_model(torch.rand((4, 5))))

        opts.deviceIterations(stages)
        poptorch_model = poptorch.inferenceModel(model, options=opts)
        x = torch.rand((4 * stages, 5))
        out = poptorch_model(x)
        with torch.no_grad():
            torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-6)
        self.assertEqual(poptorch_model._device.numIpus, stages)

    def test_listing_4_8_blocks(self):
        self.run_listing(Network48, 4)

    def test_listing_4_9_block_functions(self):
        self.run_listing(Network49, 2)

    def test_listing_4_10_stages_of_phases(self):
        # Its stages are made as written; the phases are refused (execution phases).
        with self.assertRaisesRegex(NotImplementedError, r"execution phases"):
            first = poptorch.Phase(poptorch.Stage("A").ipu(0))  # noqa: F841


if __name__ == "__main__":
    unittest.main()
