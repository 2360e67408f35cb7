"""PopTorch's execution strategies in xtrain.torch (docs/poptorch.md, "Execution strategies"):
modules split into blocks (Block, BlockFunction, BeginBlock) train through trainingModel with
PipelinedExecution and ShardedExecution, with 1 and 2 replicas, to the weights PyTorch reaches on
the same global batches; the captured graph carries each op's IPU and stage; bad input is refused
naming what to change."""
import unittest

from python_testing import HERE, PrivatePool, results_under_xrun
from torch_testing import SKIP_REASON, torch, torchvision
import torch_testing as tt

if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import xtrain.torch as poptorch

    class TwoBlockMlp(nn.Module):
        """Two blocks by `with poptorch.Block`: fc1 on IPU 0, fc2 and fc3 and the loss on IPU 1."""

        def __init__(self, front_ipu=0, back_ipu=1):
            super().__init__()
            self.fc1 = nn.Linear(6, 8)
            self.fc2 = nn.Linear(8, 8)
            self.fc3 = nn.Linear(8, 3)
            self.ipus = (front_ipu, back_ipu)

        def forward(self, x, y=None):
            with poptorch.Block("front", ipu_id=self.ipus[0]):
                h = torch.tanh(self.fc1(x))
            with poptorch.Block("back", ipu_id=self.ipus[1]):
                out = self.fc3(torch.relu(self.fc2(h)))
                if self.training:
                    return out, F.cross_entropy(out, y)
            return out

    class BeginBlockCnn(nn.Module):
        """A CNN with BatchNorm split by BeginBlock: the stem on IPU 0 (the default before the
        first block), the classifier from `fc` on IPU 1 (its block lasts to the loss)."""

        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.fc = nn.Linear(4 * 3 * 3, 4)
            poptorch.BeginBlock(self.fc, "head", ipu_id=1)

        def forward(self, x, y=None):
            h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
            out = self.fc(h.flatten(1))
            out = out * 2.0  # after fc's call: still fc's block
            if self.training:
                return out, F.cross_entropy(out, y)
            return out

    class ThreeFunctionBlocks(nn.Module):
        """BlockFunction blocks on IPUs 0, 1, 0: against the data flow under SameAsIpu, a 3-stage
        pipeline under AutoIncrement."""

        def __init__(self):
            super().__init__()
            self.a = nn.Linear(6, 8)
            self.b = nn.Linear(8, 8)
            self.c = nn.Linear(8, 3)

        @poptorch.BlockFunction("A", ipu_id=0)
        def first(self, x):
            return torch.tanh(self.a(x))

        @poptorch.BlockFunction("B", ipu_id=1)
        def second(self, h):
            return torch.tanh(self.b(h))

        @poptorch.BlockFunction("C", ipu_id=0)
        def third(self, h, y):
            out = self.c(h)
            return out, F.cross_entropy(out, y)

        def forward(self, x, y):
            return self.third(self.second(self.first(x)), y)


    class BlockLstm(nn.Module):
        """An LSTM on IPU 0, its classifier on IPU 1: torch.onnx adds Unsqueeze ops of the LSTM's
        states outside every tracing scope, which go with the ops around them."""

        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(5, 8, batch_first=True)
            self.fc = nn.Linear(8, 3)

        def forward(self, x, y):
            with poptorch.Block("rnn", ipu_id=0):
                h, _ = self.lstm(x)
            with poptorch.Block("head", ipu_id=1):
                out = self.fc(h[:, -1])
                return out, F.cross_entropy(out, y)


def placement(wrapped):
    """[(node name, op type, IPU, stage)] of the wrapper's captured graph, constants left out."""
    rows = []
    for node in wrapped._captured.proto.graph.node:
        if node.op_type == "Constant":
            continue
        attrs = {a.name: a.i for a in node.attribute}
        rows.append((node.name, node.op_type, attrs.get("__ipu_number"),
                     attrs.get("__pipeline_stage")))
    return rows


def sgd(m):
    return torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)


def adam(m):
    return torch.optim.Adam(m.parameters(), lr=0.01, betas=(0.9, 0.99))


@unittest.skipIf(torch is None, SKIP_REASON)
class StrategiesTrainAsPyTorch(PrivatePool, unittest.TestCase):

    def train_both(self, model, strategy, data, make_optimizer, replicas=1, accumulation=1):
        reference = tt.twin(model)
        ref_opt = make_optimizer(reference)
        opts = poptorch.Options().replicationFactor(replicas)
        opts.Training.gradientAccumulation(accumulation)
        opts.outputMode(poptorch.OutputMode.All)
        if strategy is not None:
            opts.setExecutionStrategy(strategy)
        wrapped = poptorch.trainingModel(model, opts, optimizer=make_optimizer(model))
        initial = {k: v.clone() for k, v in model.state_dict().items()}
        for step, (x, y) in enumerate(data):
            _, loss = wrapped(x, y)
            ref_losses = tt.pytorch_step(reference, ref_opt, x, y, replicas, accumulation)
            torch.testing.assert_close(loss.reshape(-1), torch.tensor(ref_losses), rtol=1e-4,
                                       atol=1e-6, msg=lambda m: "step %d losses: %s" % (step, m))
            ours, theirs = model.state_dict(), reference.state_dict()
            for k in theirs:
                if theirs[k].is_floating_point():
                    tt.assert_close_relative(ours[k], theirs[k], "step %d, %s" % (step, k))
                else:
                    self.assertTrue(torch.equal(ours[k], theirs[k]), k)
        for k, v in model.named_parameters():
            self.assertFalse(torch.equal(v, initial[k]), "%s was not trained" % k)
        return wrapped

    def test_pipelined_blocks_train_as_pytorch(self):
        wrapped = self.train_both(tt.make(TwoBlockMlp), poptorch.PipelinedExecution(),
                                  tt.mlp_data(4, 16), sgd, accumulation=4)
        self.assertEqual(wrapped._device.numIpus, 2)
        self.assertTrue(wrapped._session_options().enablePipelining)

    def test_pipelining_is_the_default_strategy(self):
        wrapped = self.train_both(tt.make(TwoBlockMlp), None, tt.mlp_data(3, 12), adam,
                                  accumulation=3)
        self.assertTrue(wrapped._session_options().enablePipelining)

    def test_pipelined_with_two_replicas(self):
        strategy = poptorch.PipelinedExecution("front", "back")
        wrapped = self.train_both(tt.make(TwoBlockMlp), strategy, tt.mlp_data(3, 32), sgd,
                                  replicas=2, accumulation=4)
        self.assertEqual(wrapped._device.numIpus, 4)

    def test_sharded_blocks_train_as_pytorch(self):
        for accumulation in (1, 2):
            with self.subTest(accumulation=accumulation):
                wrapped = self.train_both(tt.make(TwoBlockMlp), poptorch.ShardedExecution(),
                                          tt.mlp_data(3, 8), sgd, accumulation=accumulation)
                self.assertFalse(wrapped._session_options().enablePipelining)
                self.assertEqual(wrapped._device.numIpus, 2)

    def test_sharded_with_two_replicas(self):
        self.train_both(tt.make(TwoBlockMlp), poptorch.ShardedExecution(), tt.mlp_data(3, 8), adam,
                        replicas=2)

    def test_begin_block_cnn_with_batchnorm_pipelined(self):
        # SGD: the conv's bias feeds BatchNorm, so its gradient is zero but for rounding noise,
        # which Adam would scale into steps of the learning rate (docs/poptorch.md, "Tests").
        self.train_both(tt.make(BeginBlockCnn), None, tt.cnn_data(3, 16), sgd, accumulation=4)

    def test_lstm_blocks_with_ops_the_exporter_adds(self):
        wrapped = self.train_both(tt.make(BlockLstm), None, tt.sequence_data(3, 12), sgd,
                                  accumulation=3)
        rows = placement(wrapped)
        unscoped = [(op, ipu) for name, op, ipu, _ in rows if not name.startswith("/")]
        self.assertTrue(unscoped)  # the exporter's Unsqueeze ops of the LSTM's states
        self.assertEqual({ipu for _, ipu in unscoped}, {0})
        self.assertNotIn(None, [ipu for _, _, ipu, _ in rows])

    def test_auto_increment_pipeline_of_three_stages(self):
        wrapped = self.train_both(
            tt.make(ThreeFunctionBlocks), poptorch.PipelinedExecution(
                poptorch.AutoStage.AutoIncrement), tt.mlp_data(3, 10), sgd, accumulation=5)
        stages = {name.split("/")[2]: (ipu, stage) for name, op, ipu, stage in placement(wrapped)
                  if op == "Gemm"}
        self.assertEqual(stages, {"a": (0, 0), "b": (1, 1), "c": (0, 2)})

    def test_exported_pipeline_loads_and_trains_on(self):
        import os
        model = tt.make(TwoBlockMlp)
        reference = tt.twin(model)
        ref_opt = sgd(reference)
        opts = poptorch.Options().setExecutionStrategy(poptorch.PipelinedExecution("front", "back"))
        opts.Training.gradientAccumulation(3)
        data = tt.mlp_data(3, 12)
        path = os.path.join(self.tmp, "pipelined.xtrain")
        poptorch.trainingModel(model, opts, optimizer=sgd(model)).compileAndExport(path, *data[0])
        with self.assertRaisesRegex(ValueError, r"changed Options\.execution_strategy, which were "
                                                r"compiled into the exported model"):
            poptorch.load(path, lambda o: o.setExecutionStrategy(poptorch.ShardedExecution()))
        loaded = poptorch.load(path, lambda o: o.randomSeed(3))  # a run-time option: fine
        for x, y in data:
            loaded(x, y)
            tt.pytorch_step(reference, ref_opt, x, y, accumulation=3)
        self.assertEqual(loaded._device.numIpus, 2)
        self.assertTrue(loaded._session_options().enablePipelining)
        for k, v in reference.state_dict().items():
            tt.assert_close_relative(loaded.model.state_dict()[k], v, k)

    def test_inference_pipelined_over_device_iterations(self):
        model = tt.make(TwoBlockMlp)
        model.eval()
        opts = poptorch.Options().deviceIterations(2)
        x = torch.randn(2 * 5, 6)
        out = poptorch.inferenceModel(model, opts)(x)
        with torch.no_grad():
            torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-6)


@unittest.skipIf(torch is None, SKIP_REASON)
class CapturedPlacement(PrivatePool, unittest.TestCase):

    def compiled(self, model, strategy=None, training=True, accumulation=4, **opts_kw):
        opts = poptorch.Options()
        if strategy is not None:
            opts.setExecutionStrategy(strategy)
        if training:
            opts.Training.gradientAccumulation(accumulation)
            wrapped = poptorch.trainingModel(model, opts)
            x, y = tt.mlp_data(1, accumulation * 2)[0] if not isinstance(model, BeginBlockCnn) \
                else tt.cnn_data(1, accumulation * 2)[0]
            wrapped.compile(x, y)
        else:
            opts.deviceIterations(2)
            wrapped = poptorch.inferenceModel(model, opts)
            wrapped.compile(torch.randn(4, 6))
        return wrapped

    def test_block_context_places_each_op(self):
        rows = placement(self.compiled(tt.make(TwoBlockMlp)))
        by_layer = {}
        for name, op, ipu, stage in rows:
            self.assertIsNotNone(ipu, "%s has no IPU" % name)
            by_layer.setdefault(name.split("/")[1], set()).add((ipu, stage))
        self.assertEqual(by_layer, {"__xtrain_block_0": {(0, 0)}, "__xtrain_block_1": {(1, 1)}})
        gemms = [(name.split("/")[2], ipu, stage) for name, op, ipu, stage in rows if op == "Gemm"]
        self.assertEqual(gemms, [("fc1", 0, 0), ("fc2", 1, 1), ("fc3", 1, 1)])

    def test_begin_block_lasts_until_the_next_block(self):
        rows = placement(self.compiled(tt.make(BeginBlockCnn)))
        places = {(op, ipu, stage) for name, op, ipu, stage in rows}
        for op in ("Conv", "BatchNormalization", "MaxPool"):
            self.assertIn((op, 0, 0), places)  # before the first block: IPU 0, stage 0
        for op in ("Gemm", "Mul"):  # fc, and the op after its call
            self.assertIn((op, 1, 1), places)
        self.assertNotIn(("Gemm", 0, 0), places)

    def test_explicit_stages_and_stage_ipus(self):
        strategy = poptorch.ShardedExecution(poptorch.Stage("back").ipu(0),
                                             poptorch.Stage("front").ipu(1))
        wrapped = self.compiled(tt.make(TwoBlockMlp), strategy, accumulation=1)
        gemms = [(name.split("/")[2], ipu, stage) for name, op, ipu, stage in placement(wrapped)
                 if op == "Gemm"]
        self.assertEqual(gemms, [("fc1", 1, 1), ("fc2", 0, 0), ("fc3", 0, 0)])
        self.assertEqual(strategy.stage("front").blocks, ["front"])

    def test_stages_of_named_blocks_without_ipus(self):
        # PopTorch's PipelinedExecution docstring: blocks named by user_id, no ipu_id; a block
        # runs on its stage's number when neither the stage nor the block names an IPU.
        class FourBlocks(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList(nn.Linear(6, 6) for _ in range(4))

            def forward(self, x):
                for name, layer in zip("ABCD", self.layers):
                    with poptorch.Block(name):
                        x = torch.relu(layer(x))
                return x

        for strategy, expected in (
                (poptorch.PipelinedExecution("A", "B", "C", "D"), [(0, 0), (1, 1), (2, 2), (3, 3)]),
                (poptorch.PipelinedExecution(poptorch.Stage("A", "B"), poptorch.Stage("C", "D")),
                 [(0, 0), (0, 0), (1, 1), (1, 1)])):
            with self.subTest(strategy):
                opts = poptorch.Options().setExecutionStrategy(strategy).deviceIterations(4)
                wrapped = poptorch.inferenceModel(tt.make(FourBlocks), opts)
                x = torch.randn(8, 6)
                out = wrapped(x)
                with torch.no_grad():
                    torch.testing.assert_close(out, wrapped.model(x), rtol=1e-5, atol=1e-6)
                gemms = [(ipu, stage) for _, op, ipu, stage in placement(wrapped) if op == "Gemm"]
                self.assertEqual(gemms, expected)
                self.assertEqual(wrapped._device.numIpus, expected[-1][0] + 1)
                wrapped.destroy()

    def test_inference_graph_is_placed(self):
        model = tt.make(TwoBlockMlp)
        rows = placement(self.compiled(model, training=False))
        self.assertEqual({(ipu, stage) for _, _, ipu, stage in rows}, {(0, 0), (1, 1)})

    def test_blocks_on_one_ipu_need_one_ipu(self):
        model = TwoBlockMlp(front_ipu=0, back_ipu=0)
        wrapped = poptorch.trainingModel(model, poptorch.Options())
        x, y = tt.mlp_data(1, 4)[0]
        wrapped(x, y)  # no pipeline over one IPU: no gradient accumulation needed
        self.assertEqual(wrapped._device.numIpus, 1)
        self.assertFalse(wrapped._session_options().enablePipelining)

    def test_blocks_do_nothing_on_the_cpu(self):
        model = tt.make(TwoBlockMlp)
        x, y = tt.mlp_data(1, 4)[0]
        out, loss = model(x, y)
        self.assertEqual(tuple(out.shape), (4, 3))

    def test_remove_blocks(self):
        model = tt.make(BeginBlockCnn)
        poptorch.removeBlocks(model)
        wrapped = self.compiled(model, accumulation=1)  # one IPU: nothing to pipeline
        self.assertEqual({(ipu, stage) for _, _, ipu, stage in placement(wrapped)}, {(None, None)})
        self.assertEqual(wrapped._device.numIpus, 1)


@unittest.skipIf(torchvision is None, "torchvision (python3-torchvision) is not importable")
class SplitTorchvisionModels(PrivatePool, unittest.TestCase):
    """torchvision models split by BeginBlock train bit for bit as on one IPU per replica (the
    model-parallel layer's promise: placement, copies and the pipeline change when, not what, a
    kernel computes); test_torch_vision.py compares the one-IPU training with PyTorch's."""

    def train(self, name, split, strategy=None):
        model = tt.make_vision(name)
        if split is not None:
            poptorch.BeginBlock(getattr(model.net, split), ipu_id=1)
        opts = poptorch.Options()
        opts.Training.gradientAccumulation(3)
        if strategy is not None:
            opts.setExecutionStrategy(strategy)
        wrapped = poptorch.trainingModel(model, opts, optimizer=tt.vision_sgd(model))
        for x, y in tt.vision_data(2, 6):
            wrapped(x, y)
        ipus = wrapped._device.numIpus
        wrapped.destroy()
        return model.state_dict(), ipus

    def test_resnet18_and_mobilenet(self):
        for name, split in (("resnet18", "layer3"), ("mobilenet_v3_small", "classifier")):
            one_ipu, _ = self.train(name, None)
            for strategy in (None, poptorch.ShardedExecution()):
                with self.subTest(name=name, strategy=strategy):
                    split_state, ipus = self.train(name, split, strategy)
                    self.assertEqual(ipus, 2)
                    for k, v in one_ipu.items():
                        self.assertTrue(torch.equal(split_state[k], v), k)


XRUN_SCRIPT = """
import json, sys
sys.path.insert(0, %r)
import torch
import torch_testing as tt
import xtrain.torch as poptorch
from xtrain import dist
from test_torch_strategies import TwoBlockMlp, sgd

instance = dist.getInstanceIndex()
model = tt.make(TwoBlockMlp)
opts = poptorch.Options()  # this instance's replica
opts.Training.gradientAccumulation(4)
wrapped = poptorch.trainingModel(model, opts, optimizer=sgd(model))
for x, y in tt.mlp_data(3, 4 * 2 * 3):  # global batches of [accumulation, replica, micro-batch]
    mine = lambda t: t.reshape((4, 2, 3) + t.shape[1:])[:, instance].reshape((12,) + t.shape[1:])
    wrapped(mine(x), mine(y))
print("RESULT " + json.dumps({
    "instance": instance, "ipus": wrapped._device.numIpus,
    "state": {k: v.tolist() for k, v in model.state_dict().items()}}), flush=True)
""" % HERE


@unittest.skipIf(torch is None, SKIP_REASON)
class StrategiesUnderXrun(unittest.TestCase):

    def test_pipelined_over_two_instances(self):
        # xrun -n 2 --num-replicas 2 --ipus-per-replica 2: each instance pipelines its replica
        # over 2 IPUs; together they train as PyTorch on the global batches of 2 replicas.
        results = results_under_xrun(self, XRUN_SCRIPT, timeout=240, replicas=2,
                                     xrun_args=("--ipus-per-replica", "2"))
        model = tt.make(TwoBlockMlp)
        optimizer = sgd(model)
        for x, y in tt.mlp_data(3, 4 * 2 * 3):
            tt.pytorch_step(model, optimizer, x, y, replicas=2, accumulation=4)
        for result in results:
            self.assertEqual(result["ipus"], 2)
            for k, v in model.state_dict().items():
                tt.assert_close_relative(torch.tensor(result["state"][k]), v,
                                         "instance %d, %s" % (result["instance"], k))


if __name__ == "__main__":
    unittest.main()
