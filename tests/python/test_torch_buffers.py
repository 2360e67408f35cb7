"""Buffers that forward updates in place (PopTorch's section 4.8; docs/poptorch.md, "Buffers"):
listings 4.21 and 4.22 as written, the update kept on the device between calls in inference and
training, PopTorch's copy rules, replicas with broadcastBuffers(False), and the refusals."""
import unittest

from python_testing import PrivatePool, results_under_xrun
from torch_testing import SKIP_REASON, torch

if torch is not None:
    import torch.nn as nn
    import xtrain.torch as poptorch

    class BufferUpdatingModel(nn.Module):
        """A buffer that accumulates a parameter's value each micro-batch, beside a trained
        convolution (the model of PopTorch's buffer test)."""

        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 2, 1, padding=0)
            self.register_buffer("test_buff", torch.zeros([2], dtype=torch.float32))
            self.loss = nn.L1Loss()

        def forward(self, inp, target):
            x = self.conv(inp)
            with torch.no_grad():
                self.test_buff += self.conv.bias[0]
            return x, self.loss(x, target)

    class ReplicaBufferModel(nn.Module):
        """Each call adds its input to the buffer and returns the buffer."""

        def __init__(self):
            super().__init__()
            self.register_buffer("buffer", torch.zeros(1, 2))

        def forward(self, x):
            self.buffer.copy_(self.buffer + x)
            return self.buffer * 1.0


@unittest.skipIf(torch is None, SKIP_REASON)
class Listings(PrivatePool, unittest.TestCase):

    def test_listing_4_22_a_registered_buffer_counts(self):
        class CounterModel(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("i", torch.tensor([0.], dtype=torch.float))

            def forward(self):
                self.i += 1
                return self.i

        model = CounterModel()
        poptorch_model = poptorch.inferenceModel(model)

        self.assertEqual(poptorch_model().tolist(), [1.])  # print(poptorch_model())  # tensor([1.])
        self.assertEqual(poptorch_model().tolist(), [2.])  # print(poptorch_model())  # tensor([2.])
        # An inferenceModel does not copy its buffers to the host implicitly (PopTorch's rule)...
        self.assertEqual(model.i.tolist(), [0.])
        # ...copyWeightsToHost does, and the device keeps counting from there.
        poptorch_model.copyWeightsToHost()
        self.assertEqual(model.i.tolist(), [2.])
        self.assertEqual(poptorch_model().tolist(), [3.])
        # A value set on the host reaches the device before the next call.
        model.i.fill_(10.)
        self.assertEqual(poptorch_model().tolist(), [11.])

    def test_listing_4_21_a_plain_tensor_attribute_is_frozen(self):
        class CounterModel(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.i = torch.tensor([0.], dtype=torch.float)

            def forward(self):
                self.i += 1
                return self.i

        model = CounterModel()
        poptorch_model = poptorch.inferenceModel(model)
        self.assertEqual(poptorch_model().tolist(), [1.])  # print(poptorch_model())  # tensor([1.])
        self.assertEqual(poptorch_model().tolist(), [1.])  # print(poptorch_model())  # tensor([1.])
        self.assertEqual(model.i.tolist(), [0.])  # compiling left the module as it was

    def test_device_iterations_count_every_batch(self):
        class Counter(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("n", torch.zeros(1))

            def forward(self, x):
                self.n += 1
                return x * self.n

        model = Counter()
        wrapped = poptorch.inferenceModel(model, poptorch.Options().deviceIterations(3))
        x = torch.ones(3, 1)
        self.assertEqual(wrapped(x).flatten().tolist(), [1., 2., 3.])
        self.assertEqual(wrapped(x).flatten().tolist(), [4., 5., 6.])


    def test_a_float16_buffer(self):
        # Captured with _half.py's kernels, whose forward the buffers' capture wraps.
        class HalfCounter(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("i", torch.zeros(1, dtype=torch.half))

            def forward(self, x):
                self.i += 1
                return x * self.i

        model = HalfCounter()
        wrapped = poptorch.inferenceModel(model)
        x = torch.ones(1, dtype=torch.half)
        self.assertEqual(wrapped(x).tolist(), [1.])
        out = wrapped(x)
        self.assertEqual((out.dtype, out.tolist()), (torch.half, [2.]))
        self.assertNotIn("forward", vars(model))  # the capture's wrappers are gone


@unittest.skipIf(torch is None, SKIP_REASON)
class Training(PrivatePool, unittest.TestCase):

    def train_on_cpu(self, steps, accumulation):
        torch.manual_seed(0)
        model = BufferUpdatingModel()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        inp, target = torch.ones([2, 2, 2, 2]), torch.zeros([2, 2, 2, 2])
        for _ in range(steps):
            opt.zero_grad()
            for _ in range(accumulation):
                _, loss = model(inp, target)
                (loss / accumulation).backward()
            opt.step()
        return model

    def test_the_buffer_follows_each_micro_batch_as_on_the_cpu(self):
        for device_iterations, accumulation in ((1, 1), (3, 1), (2, 3)):
            with self.subTest(device_iterations=device_iterations, accumulation=accumulation):
                calls = 4
                expected = self.train_on_cpu(calls * device_iterations, accumulation)
                torch.manual_seed(0)
                model = BufferUpdatingModel()
                opts = poptorch.Options().deviceIterations(device_iterations)
                opts.Training.gradientAccumulation(accumulation)
                wrapped = poptorch.trainingModel(
                    model, opts, torch.optim.SGD(model.parameters(), lr=0.1))
                batch = 2 * device_iterations * accumulation
                for _ in range(calls):
                    wrapped(torch.ones([batch, 2, 2, 2]), torch.zeros([batch, 2, 2, 2]))
                # A trainingModel copies its buffers to the host implicitly, as its weights.
                torch.testing.assert_close(model.conv.bias, expected.conv.bias)
                torch.testing.assert_close(model.test_buff, expected.test_buff)
                self.assertNotEqual(model.test_buff.tolist(), [0., 0.])

    def test_a_counter_in_training_then_in_inference(self):
        class CountingLoss(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 1)
                self.register_buffer("steps", torch.zeros(1))

            def forward(self, x):
                self.steps += 1
                out = self.fc(x)
                return out, out.sum()

        model = CountingLoss()
        training = poptorch.trainingModel(model, poptorch.Options().deviceIterations(2))
        for call in range(1, 4):
            training(torch.ones(2, 2))
            self.assertEqual(model.steps.tolist(), [2. * call])
        # The inference wrapper of the same module starts from the trained count.
        inference = poptorch.inferenceModel(model)
        inference(torch.ones(1, 2))
        inference.copyWeightsToHost()
        self.assertEqual(model.steps.tolist(), [7.])

    def test_pipelined_over_two_ipus(self):
        class Piped(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.fc2 = nn.Linear(2, 2), nn.Linear(2, 1)
                self.register_buffer("c", torch.zeros(1))

            def forward(self, x):
                with poptorch.Block(ipu_id=0):
                    h = self.fc1(x)
                    self.c += 1
                with poptorch.Block(ipu_id=1):
                    out = self.fc2(h)
                    loss = out.sum()
                return out, loss

        model = Piped()
        opts = poptorch.Options()
        opts.Training.gradientAccumulation(4)
        wrapped = poptorch.trainingModel(model, opts)
        wrapped(torch.ones(4, 2))
        wrapped(torch.ones(4, 2))
        self.assertEqual(model.c.tolist(), [8.])
        # A pipelined inference session does not write variables: refused, saying so.
        inference = poptorch.inferenceModel(Piped(), poptorch.Options().deviceIterations(2))
        with self.assertRaisesRegex(poptorch.Error, "a pipelined InferenceSession does not do"):
            inference(torch.ones(2, 2))

    def test_exported_and_loaded_the_update_is_kept(self):
        model = BufferUpdatingModel()
        wrapped = poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(),
                                                                           lr=0.1))
        path = self.tmp + "/model.pt"
        wrapped.compileAndExport(path, torch.ones([2, 2, 2, 2]), torch.zeros([2, 2, 2, 2]))
        loaded = poptorch.load(path)
        loaded(torch.ones([2, 2, 2, 2]), torch.zeros([2, 2, 2, 2]))
        loaded.copyWeightsToHost()
        bias = loaded.model.conv.bias[0].item()
        # The buffer took the first step's bias (before SGD moved it), as on the CPU.
        self.assertNotEqual(loaded.model.test_buff.tolist(), [0., 0.])
        self.assertNotAlmostEqual(loaded.model.test_buff[0].item(), bias)


@unittest.skipIf(torch is None, SKIP_REASON)
class Replicas(PrivatePool, unittest.TestCase):

    def test_broadcasting_buffers_is_refused_as_in_poptorch(self):
        model = BufferUpdatingModel()
        wrapped = poptorch.trainingModel(model, poptorch.Options().replicationFactor(2),
                                         torch.optim.SGD(model.parameters(), lr=0.1))
        with self.assertRaisesRegex(ValueError, r"updates the buffers 'test_buff' in place and "
                                    r"the model runs on 2 replicas: PopTorch does not support "
                                    r"broadcasting buffers.*broadcastBuffers\(False\)"):
            wrapped(torch.ones([4, 2, 2, 2]), torch.zeros([4, 2, 2, 2]))

    def test_each_replica_keeps_its_own_buffer(self):
        opts = poptorch.Options().replicationFactor(2).broadcastBuffers(False)
        model = ReplicaBufferModel()
        wrapped = poptorch.inferenceModel(model, opts)
        x = torch.tensor([[9.], [2.]])
        for _ in range(50):
            y = wrapped(x)
        self.assertEqual(y.tolist(), [[450., 450.], [100., 100.]])
        wrapped.copyWeightsToHost()
        self.assertEqual(model.buffer.tolist(), [[450., 450.]])  # replica 0's, as BatchNorm's

    def test_buffers_forward_only_reads_need_nothing(self):
        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("scale", torch.tensor([1., 2., 3.]))

            def forward(self, x):
                return x * self.scale

        wrapped = poptorch.inferenceModel(Scaled(), poptorch.Options().replicationFactor(2))
        self.assertEqual(wrapped(torch.ones(2, 3)).tolist(), [[1., 2., 3.]] * 2)


XRUN_SCRIPT = r"""
import json
import torch
import xtrain.torch as poptorch
from xtrain import dist


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("n", torch.zeros(1))

    def forward(self, x):
        self.n.copy_(self.n + x.sum())
        return self.n * 1.0


result = {"instance": dist.getInstanceIndex()}
try:  # broadcast by default: refused, the job having 2 replicas
    poptorch.inferenceModel(Counter())(torch.ones(1, 1))
except ValueError as e:
    result["error"] = str(e)
model = Counter()
wrapped = poptorch.inferenceModel(model, poptorch.Options().broadcastBuffers(False))
x = torch.full((1, 1), 1.0 + dist.getInstanceIndex())
for _ in range(3):
    wrapped(x)
wrapped.copyWeightsToHost()
result["n"] = model.n.tolist()
print("RESULT " + json.dumps(result), flush=True)
"""


@unittest.skipIf(torch is None, SKIP_REASON)
class UnderXrun(unittest.TestCase):

    def test_each_instance_keeps_its_own_buffer(self):
        results = results_under_xrun(self, XRUN_SCRIPT, timeout=120, replicas=2)
        for r in results:
            self.assertIn("the model runs on 2 replicas", r["error"])
            self.assertEqual(r["n"], [3.0 * (1 + r["instance"])])


@unittest.skipIf(torch is None, SKIP_REASON)
class BadInput(PrivatePool, unittest.TestCase):

    def test_a_buffer_replaced_or_removed_in_forward(self):
        class Reassigns(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("y", torch.tensor([2.]))

            def forward(self, x):
                self.y = x + 1
                return x

        class Removes(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("y", torch.tensor([2.]))

            def forward(self, x):
                if "y" in self._buffers:
                    del self._buffers["y"]
                return x + 1

        class IntCounter(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("n", torch.zeros(1, dtype=torch.int64))

            def forward(self, x):
                self.n += 1
                return x + 1

        with self.assertRaisesRegex(NotImplementedError, "IntCounter.forward updates the "
                                    "torch.int64 buffer 'n' in place.*make it a float buffer"):
            poptorch.inferenceModel(IntCounter())(torch.tensor([5.]))
        with self.assertRaisesRegex(NotImplementedError, r"Reassigns.forward assigns a new tensor "
                                    r"to the buffer 'y'.*self.y.copy_\(new_value\)"):
            poptorch.inferenceModel(Reassigns())(torch.tensor([5.]))
        with self.assertRaisesRegex(NotImplementedError,
                                    "Removes.forward removes the buffer 'y'"):
            poptorch.inferenceModel(Removes())(torch.tensor([5.]))


if __name__ == "__main__":
    unittest.main()
