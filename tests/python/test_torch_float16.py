"""Float16 modules and inputs through xtrain.torch (docs/poptorch.md, "Float16"): PopTorch's
section 4.7 and its listing 4.20, `.half()` models trained with SGD and Adam under loss scaling
against PyTorch's float64 training of the same float16 weights, float16 inputs into a float32
module, mixed float16/float32 parameters, the dtypes of the outputs and of the weights kept in the
module, and the optimizer state types."""
import math
import os
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import xtrain.torch as poptorch

    Apply = tt.Apply

    class AddBoth(nn.Module):
        """PopTorch's half_test: x + y + 5 and z + w + 5, no parameters."""

        def forward(self, x, y, z, w):
            return x + y + 5, z + w + 5

RTOL_FLOAT32 = 1e-4


def half_ulps(reference, ulps):
    """`ulps` float16 units in the last place at the tensor's largest magnitude."""
    largest = float(reference.abs().max())
    if largest == 0.0:
        return 2.0 ** -24 * ulps  # the smallest float16 subnormal
    return ulps * 2.0 ** (math.floor(math.log2(largest)) - 10)


@unittest.skipIf(torch is None, SKIP_REASON)
class Float16Training(PrivatePool, unittest.TestCase):
    """A `.half()` module trained through trainingModel against PyTorch's float64 training of the
    same module: the same float16 weights (exact in float64), the same float16 inputs, the same
    optimizer without loss scaling (loss scaling changes nothing in exact arithmetic, PopTorch's
    4.5.1). xtrain computes each op in float32 and stores its result, each gradient and each
    updated weight rounded to float16 (unit roundoff 2^-11); the float64 run rounds nothing. After
    3 steps a weight carries at most 3 half-ulp roundings of its updates plus the effect of the
    rounded activations on the updates (a fraction of an ulp at these learning rates): each tensor
    must be within 4 float16 ulps of its largest element, each loss within 4 ulps of its value.
    The weights move by more than 10 times that, so an untrained or float32-wrong model fails."""

    def train_both(self, model, data, optimizers, ulps=4, replicas=1, accumulation=1):
        reference = tt.twin(model).double()
        initial = {k: v.clone() for k, v in model.state_dict().items()}
        optimizer, ref_optimizer = optimizers(model), optimizers(reference, reference=True)
        opts = poptorch.Options().replicationFactor(replicas).outputMode(poptorch.OutputMode.All)
        opts.Training.gradientAccumulation(accumulation)
        wrapped = poptorch.trainingModel(model, opts, optimizer=optimizer)
        for step, (x, y) in enumerate(data):
            out, loss = wrapped(x, y)
            self.assertEqual((out.dtype, loss.dtype), (torch.float16, torch.float16))
            # the mean gradient of the micro-batches, each replica's BatchNorm statistics
            ref_losses = tt.pytorch_step(reference, ref_optimizer, x.double(), y, replicas,
                                         accumulation)
            for ours, theirs in zip(loss.reshape(-1).tolist(), ref_losses):
                self.assertLessEqual(abs(ours - theirs), half_ulps(torch.tensor(theirs), ulps),
                                     "step %d: loss %s, float64 %s" % (step, ours, theirs))
        moved = 0.0
        for name, value in model.state_dict().items():
            ref = reference.state_dict()[name]
            if not value.is_floating_point():
                self.assertTrue(torch.equal(value, ref), name)
                continue
            self.assertEqual(value.dtype, torch.float16, name)  # the module keeps its dtypes
            tolerance = half_ulps(ref, ulps)
            error = float((value.double() - ref).abs().max())
            self.assertLessEqual(error, tolerance, "%s: %g from float64 (tolerance %g)"
                                 % (name, error, tolerance))
            moved = max(moved, float((value.double() - initial[name].double()).abs().max())
                        / tolerance)
        self.assertGreater(moved, 10.0, "the weights barely moved: the comparison says nothing")
        return wrapped, reference

    def sgd(self, model, reference=False):
        if reference:
            return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        return poptorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, loss_scaling=64.0)

    def adam(self, model, reference=False):
        if reference:
            return torch.optim.Adam(model.parameters(), lr=0.01)
        return poptorch.optim.Adam(model.parameters(), lr=0.01, loss_scaling=64.0)

    def half_data(self, data):
        return [(x.half(), y) for x, y in data]

    def test_mlp_sgd_with_loss_scaling(self):
        self.train_both(tt.make(tt.Mlp).half(), self.half_data(tt.mlp_data(3, 8)), self.sgd)

    def test_mlp_adam_with_loss_scaling(self):
        self.train_both(tt.make(tt.Mlp).half(), self.half_data(tt.mlp_data(3, 8)), self.adam)

    def test_mlp_other_optimizers(self):
        # each of PopTorch's other optimizers, float32 state for float16 weights (the defaults)
        optimizers = {
            "AdamW": lambda p, ls: poptorch.optim.AdamW(p, lr=0.01, loss_scaling=ls),
            "RMSprop": lambda p, ls: poptorch.optim.RMSprop(p, lr=0.01, momentum=0.5,
                                                            centered=True, loss_scaling=ls),
            "LAMB": lambda p, ls: poptorch.optim.LAMB(p, lr=0.01, loss_scaling=ls),
            "SGD combined": lambda p, ls: poptorch.optim.SGD(
                p, lr=0.1, momentum=0.9, use_combined_accum=True, velocity_scaling=4.0,
                loss_scaling=ls),
            "SGD nesterov": lambda p, ls: poptorch.optim.SGD(
                p, lr=0.1, momentum=0.9, nesterov=True, loss_scaling=ls),
        }
        for name, make in optimizers.items():
            def both(model, reference=False, make=make):
                return make(model.parameters(), 1.0 if reference else 32.0)
            with self.subTest(name):
                self.train_both(tt.make(tt.Mlp).half(), self.half_data(tt.mlp_data(3, 8)), both)

    def test_mlp_two_replicas_and_accumulation(self):
        # 2 replicas x 2 micro-batches of 4 a step: the gradient is their mean (Mean reduction)
        self.train_both(tt.make(tt.Mlp).half(), self.half_data(tt.mlp_data(3, 16)), self.adam,
                        replicas=2, accumulation=2)

    def test_cnn_with_batchnorm_sgd_and_adam(self):
        for optimizers in (self.sgd, self.adam):
            model = tt.make(tt.SmallCnn).half()
            if optimizers == self.adam:
                # The convolution's bias feeds BatchNorm, which subtracts its channel's mean:
                # its gradient is zero but for rounding noise, which Adam's normalisation turns
                # into steps of the learning rate's size in any implementation (float64's own
                # noise included). Frozen on both sides; SGD trains it.
                model.conv.bias.requires_grad_(False)
            wrapped, reference = self.train_both(model, self.half_data(tt.cnn_data(3, 4)),
                                                 optimizers)
            # inference after training sees the trained float16 weights, in eval mode
            x = tt.cnn_data(1, 4, seed=5)[0][0].half()
            out = poptorch.inferenceModel(wrapped.model)(x)
            self.assertEqual(out.dtype, torch.float16)
            expected = reference.eval()(x.double())
            self.assertLessEqual(float((out.double() - expected).abs().max()),
                                 half_ulps(expected, 8))

    def test_float16_inputs_into_a_float32_module(self):
        # Only the inputs are float16: casting them to float32 is exact and everything computes
        # in float32, so the module trains as PyTorch trains it on x.float(), at float32's 1e-4.
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
        wrapped = poptorch.trainingModel(
            model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        for x, y in tt.mlp_data(3, 8):
            out, loss = wrapped(x.half(), y)
            self.assertEqual((out.dtype, loss.dtype), (torch.float32, torch.float32))
            ref_losses = tt.pytorch_step(reference, ref_optimizer, x.half().float(), y, 1, 1)
            torch.testing.assert_close(loss, torch.tensor(ref_losses[0]), rtol=RTOL_FLOAT32,
                                       atol=1e-6)
        for name, value in model.state_dict().items():
            self.assertEqual(value.dtype, torch.float32)
            torch.testing.assert_close(value, reference.state_dict()[name], rtol=RTOL_FLOAT32,
                                       atol=1e-6)

    def test_mixed_float16_and_float32_parameters(self):
        # fc1 float32, fc2 float16: fc2 reads fc1's float32 output, so it computes in float32
        # (its float16 weights cast up, PopTorch 3's rule) and the logits and loss are float32;
        # fc2's weights stay float16, trained through the cast.
        model = tt.make(tt.Mlp)
        model.fc2.half()
        reference = tt.twin(model).double()
        ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
        wrapped = poptorch.trainingModel(
            model, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9,
                                                loss_scaling=16.0))
        for x, y in tt.mlp_data(3, 8):
            out, loss = wrapped(x, y)
            self.assertEqual((out.dtype, loss.dtype), (torch.float32, torch.float32))
            ref_optimizer.zero_grad()
            ref_loss = reference(x.double(), y)[1]
            ref_loss.backward()
            ref_optimizer.step()
        dtypes = {k: v.dtype for k, v in model.state_dict().items()}
        self.assertEqual(dtypes, {"fc1.weight": torch.float32, "fc1.bias": torch.float32,
                                  "fc2.weight": torch.float16, "fc2.bias": torch.float16})
        for name, value in model.state_dict().items():
            ref = reference.state_dict()[name]
            # fc2's stored weights are rounded to float16 after each update; fc1's gradients
            # flow through fc2's float16 weights (exact in float32), so fc1 is close to
            # float32 precision but for the rounding of fc2's weights it reads.
            tolerance = half_ulps(ref, 4)
            self.assertLessEqual(float((value.double() - ref).abs().max()), tolerance, name)


@unittest.skipIf(torch is None, SKIP_REASON)
class Float16Inference(PrivatePool, unittest.TestCase):

    def test_listing_4_20(self):
        # PopTorch's listing 4.20 as written but for the import (its lines 3-4 as its source has
        # them: the text lost "model = model.half()").
        model = torch.nn.Linear(1, 10)

        # Cast the parameters (weights) to half.
        model = model.half()

        t1 = torch.tensor([1.]).half()

        opts = poptorch.Options()

        inference_model = poptorch.inferenceModel(model, opts)
        out = inference_model(t1)

        assert out.dtype == torch.half
        # the values: the float16 weights' products, rounded once to float16
        expected = model.float()(t1.float())
        torch.testing.assert_close(out.float(), expected.half().float(), rtol=0, atol=0)

    def test_output_dtypes_follow_pytorch(self):
        half, single = torch.tensor([1.]).half(), torch.tensor([3.])
        a, b = poptorch.inferenceModel(AddBoth())(half, half * 2, single, single + 1)
        self.assertEqual((a.dtype, b.dtype), (torch.float16, torch.float32))
        self.assertEqual((float(a), float(b)), (8.0, 12.0))
        # a float16 and a float32 operand compute in float32 (either order), as PyTorch does
        a, b = poptorch.inferenceModel(AddBoth())(half, single, single, half)
        self.assertEqual((a.dtype, b.dtype), (torch.float32, torch.float32))
        self.assertEqual((float(a), float(b)), (9.0, 9.0))

    def test_exporter_scalars_and_output_dtypes(self):
        # torch.onnx writes these functions' scalars as float32 or float64 constants next to the
        # float16 data (xtrain's import refused the mixed Where and Max), and computes the norm of
        # pairwise_distance in float32 (a float32 output): the capture makes the scalars float16
        # and casts the output to forward's float16, as PyTorch computes them.
        functions = {
            "where": lambda x: torch.where(x > 0, x, 0.0),
            "where_0d": lambda x: torch.where(x > 0, x, torch.tensor(-1.0)),
            "cosine_similarity": lambda x: F.cosine_similarity(x, x.flip(0), dim=-1),
            "kl_div": lambda x: F.kl_div(F.log_softmax(x, -1), F.softmax(x.flip(0), -1),
                                         reduction="none"),
            "pairwise_distance": lambda x: F.pairwise_distance(x, x.flip(0)),
        }
        x = torch.randn(4, 8).half()
        for name, function in functions.items():
            model = Apply(function).half()
            out, loss = poptorch.trainingModel(model, optimizer=torch.optim.SGD(
                model.parameters(), lr=0.0))(x)
            self.assertEqual((out.dtype, loss.dtype), (torch.float16, torch.float16), name)
            expected = Apply(function).float()(x.float())[0]
            self.assertLessEqual(float((out.float() - expected).abs().max()),
                                 half_ulps(expected, 4), name)

    def test_float32_module_with_float16_input(self):
        # PyTorch refuses a float16 input to a float32 Linear; PopTorch 3 upcasts it (its 4.7:
        # mixed inputs compute in float32), so the output is float32, the module's on x.float().
        model = tt.make(tt.Mlp).eval()
        x = tt.mlp_data(1, 4)[0][0].half()
        out = poptorch.inferenceModel(model)(x)
        self.assertEqual(out.dtype, torch.float32)
        torch.testing.assert_close(out, model(x.float()), rtol=RTOL_FLOAT32, atol=1e-6)

    def test_float16_module_with_float32_input(self):
        # float32 data into float16 weights: the weights are cast up, the output is float32
        model = tt.make(tt.Mlp).eval().half()
        x = tt.mlp_data(1, 4)[0][0]
        out = poptorch.inferenceModel(model)(x)
        self.assertEqual(out.dtype, torch.float32)
        torch.testing.assert_close(out, model.float()(x), rtol=RTOL_FLOAT32, atol=1e-6)

    def test_explicit_casts_in_forward(self):
        class Casts(nn.Module):  # PopTorch's test_half_casts_outplace, and a cast back up
            def forward(self, x1, x2):
                return x1, x1.to(torch.float16), x2.half(), x2.half().float() * 3

        outs = poptorch.inferenceModel(Casts())(torch.tensor([0.1]), torch.tensor([1 / 3]))
        self.assertEqual([o.dtype for o in outs],
                         [torch.float32, torch.float16, torch.float16, torch.float32])
        self.assertEqual(float(outs[3]), float(torch.tensor([1 / 3]).half().float() * 3))

    def test_a_float32_module_that_casts_to_float16_in_forward(self):
        # No float16 tensor until forward makes one: the first trace fails on it, the capture
        # traces again with the float16 kernels (PopTorch's test_8bit_io_casting, with 3's rule)
        class CastsInside(nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = nn.Linear(4, 3)

            def forward(self, x):
                mixed = self.linear(x.half())  # float16 data, float32 weights: float32
                half = F.linear(x.half(), self.linear.weight.half(), self.linear.bias.half())
                return mixed, half

        torch.manual_seed(0)
        model = CastsInside()
        x = torch.randn(2, 4)
        mixed, half = poptorch.inferenceModel(model)(x)
        self.assertEqual((mixed.dtype, half.dtype), (torch.float32, torch.float16))
        torch.testing.assert_close(mixed, model.linear(x.half().float()), rtol=RTOL_FLOAT32,
                                   atol=1e-6)
        expected = F.linear(x.half().float(), model.linear.weight.half().float(),
                            model.linear.bias.half().float())
        self.assertLessEqual(float((half.float() - expected).abs().max()), half_ulps(expected, 4))

    def test_in_place_operations_keep_their_dtype(self):
        class InPlace(nn.Module):
            def forward(self, x, y):
                h = x * 2
                h += y  # float32 into float16: h stays float16 and holds the sum
                h.mul_(y)
                return h

        x, y = torch.randn(2, 4).half(), torch.randn(2, 4)
        out = poptorch.inferenceModel(InPlace())(x, y)
        self.assertEqual(out.dtype, torch.float16)
        expected = (x.float() * 2 + y) * y
        self.assertLessEqual(float((out.float() - expected).abs().max()), half_ulps(expected, 4))

    def test_float32_running_statistics_of_a_float16_batchnorm(self):
        # PopTorch 3 replaces runningStatisticsAlwaysFloat by casting the statistics back
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(2, 4, 3)
                self.bn = nn.BatchNorm2d(4)

            def forward(self, x):
                out = self.bn(self.conv(x))
                return out, out.float().pow(2).mean()

        torch.manual_seed(0)
        model = Net().half()
        model.bn.running_mean = torch.randn(4) * 0.1
        model.bn.running_var = torch.rand(4) + 0.5
        reference = tt.twin(model).float()
        x = torch.randn(4, 2, 6, 6).half()
        out = poptorch.inferenceModel(model)(x)[0]
        self.assertEqual(out.dtype, torch.float16)
        expected = reference.eval()(x.float())[0]
        self.assertLessEqual(float((out.float() - expected).abs().max()), half_ulps(expected, 4))
        model.train()
        reference.train()
        wrapped = poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(),
                                                                          lr=0.1))
        _, loss = wrapped(x)
        self.assertEqual(loss.dtype, torch.float32)
        reference(x.float())
        for name in ("running_mean", "running_var"):
            value = getattr(model.bn, name)
            self.assertEqual(value.dtype, torch.float32, name)
            torch.testing.assert_close(value, getattr(reference.bn, name), rtol=1e-3, atol=1e-4)


@unittest.skipIf(torch is None, SKIP_REASON)
class Float16Weights(PrivatePool, unittest.TestCase):

    def test_weight_copies_keep_the_dtypes(self):
        model = tt.make(tt.Mlp).half()
        wrapped = poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(),
                                                                          lr=0.1))
        x, y = tt.mlp_data(1, 4)[0]
        wrapped(x.half(), y)
        wrapped.copyWeightsToHost()
        state = model.state_dict()
        self.assertTrue(all(v.dtype == torch.float16 for v in state.values()))
        # a float16 value set on the CPU reaches the device, and inference sees the training
        with torch.no_grad():
            model.fc2.bias.fill_(0.5)
        wrapped.copyWeightsToDevice()
        wrapped.copyWeightsToHost()
        self.assertTrue(torch.equal(model.fc2.bias, torch.full((3,), 0.5).half()))
        model.eval()
        out = poptorch.inferenceModel(model)(x.half())
        expected = model.float()(x.half().float())
        self.assertLessEqual(float((out.float() - expected).abs().max()), half_ulps(expected, 4))

    def test_a_module_changed_to_float32_after_compiling_is_refused(self):
        model = tt.make(tt.Mlp).half().eval()
        wrapped = poptorch.inferenceModel(model)
        x = tt.mlp_data(1, 4)[0][0].half()
        wrapped(x)
        model.float()
        with self.assertRaisesRegex(ValueError, "fc1.weight' is now float32 .* compiled model "
                                    "has float16"):
            wrapped(x)

    def test_gradient_accumulator_types(self):
        # accum_type: the type of the gradients summed over the micro-batches of a step
        x, y = tt.mlp_data(1, 8)[0]
        opts = poptorch.Options()
        opts.Training.gradientAccumulation(2)
        for accum_type, dtype in ((None, "float32"), (torch.float16, "float16")):
            for make in (poptorch.optim.SGD, poptorch.optim.Adam):
                model = tt.make(tt.Mlp).half()
                wrapped = poptorch.trainingModel(model, opts, optimizer=make(
                    model.parameters(), lr=0.01, accum_type=accum_type))
                wrapped(x.half(), y)
                self.assertEqual(self.session_dtype(wrapped, "Accum___fc1.weight"), dtype,
                                 "%s accum_type=%s" % (make.__name__, accum_type))
                wrapped.destroy()

    def test_exported_and_loaded(self):
        # compileAndExport keeps the float16 graph and weights; the loaded model trains on as
        # the one that stayed (the same float16 steps, bit for bit)
        data = [(x.half(), y) for x, y in tt.mlp_data(3, 4)]
        model = tt.make(tt.Mlp).half()
        twin = tt.twin(model)
        wrapped = poptorch.trainingModel(model, optimizer=poptorch.optim.Adam(
            model.parameters(), lr=0.01, loss_scaling=8.0))
        staying = poptorch.trainingModel(twin, optimizer=poptorch.optim.Adam(
            twin.parameters(), lr=0.01, loss_scaling=8.0))
        wrapped(*data[0])
        staying(*data[0])
        path = os.path.join(self.tmp, "half.pt")
        wrapped.compileAndExport(path, *data[0])
        wrapped.destroy()
        loaded = poptorch.load(path)
        for x, y in data[1:]:
            out, loss = loaded(x, y)
            self.assertTrue(torch.equal(loss, staying(x, y)[1]))
        self.assertEqual(out.dtype, torch.float16)
        for name, value in loaded.model.state_dict().items():
            self.assertEqual(value.dtype, torch.float16, name)
            self.assertTrue(torch.equal(value, twin.state_dict()[name]), name)

    def session_dtype(self, wrapped, name):
        return str(wrapped._session._hostInfo(name)[0])

    def test_optimizer_state_types(self):
        x, y = tt.mlp_data(1, 4)[0]
        cases = [
            # PopTorch's default types are float32 (its optim.py), also for float16 weights
            (lambda p: poptorch.optim.SGD(p, lr=0.1, momentum=0.9), "Accl1___", "float32"),
            (lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), "Accl1___", "float32"),
            (lambda p: poptorch.optim.SGD(p, lr=0.1, momentum=0.9,
                                          velocity_accum_type=torch.float16), "Accl1___",
             "float16"),
            (lambda p: poptorch.optim.Adam(p, lr=0.01), "Accl2___", "float32"),
            (lambda p: poptorch.optim.Adam(p, lr=0.01, first_order_momentum_accum_type=torch.half,
                                           second_order_momentum_accum_type=torch.half),
             "Accl2___", "float16"),
            # the combined variant keeps one tensor in the weight's type (PopTorch ignores types)
            (lambda p: poptorch.optim.SGD(p, lr=0.1, momentum=0.9, use_combined_accum=True,
                                          velocity_accum_type=torch.float32), "Accl___",
             "float16"),
        ]
        for make, prefix, dtype in cases:
            model = tt.make(tt.Mlp).half()
            optimizer = make(model.parameters())
            wrapped = poptorch.trainingModel(model, optimizer=optimizer)
            wrapped(x.half(), y)
            self.assertEqual(self.session_dtype(wrapped, prefix + "fc1.weight"), dtype,
                             "%s %s" % (type(optimizer).__name__, prefix))
            if prefix == "Accl___":  # the combined variant has no state torch maps
                wrapped.destroy()
                continue
            # torch's state holds the device's type: nothing is rounded when it is read
            key = {"Accl1___": "momentum_buffer", "Accl___": "momentum_buffer",
                   "Accl2___": "exp_avg_sq"}[prefix]
            self.assertEqual(str(optimizer.state_dict()["state"][0][key].dtype),
                             "torch." + dtype)
            wrapped.destroy()


if __name__ == "__main__":
    unittest.main()
