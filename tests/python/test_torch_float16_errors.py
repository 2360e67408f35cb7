"""Float16 in xtrain.torch, continued (docs/poptorch.md, "Float16"): what is refused, with an error
naming it (bfloat16, an operation or argument that cannot be captured or run in float16, optimizer
types), and the Precision options that act on float16 modules."""
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import xtrain.torch as poptorch

    Apply = tt.Apply


@unittest.skipIf(torch is None, SKIP_REASON)
class Float16Refusals(PrivatePool, unittest.TestCase):

    def test_bfloat16_module_and_input(self):
        model = tt.make(tt.Mlp).to(torch.bfloat16)
        with self.assertRaisesRegex(NotImplementedError, r"Mlp's tensor 'fc1.weight' is bfloat16: "
                                    r"xtrain has no BFLOAT16 kernels; use float16"):
            poptorch.inferenceModel(model.eval())(torch.randn(4, 6).to(torch.bfloat16))
        with self.assertRaisesRegex(NotImplementedError, "Mlp's input 'x' is bfloat16"):
            poptorch.inferenceModel(tt.make(tt.Mlp).eval())(torch.randn(4, 6).to(torch.bfloat16))

    def test_convolution_with_string_padding(self):
        x = torch.randn(2, 4, 8).half()
        for padding, size in (("same", 3), ("valid", 3), (2, 3)):
            model = Apply(lambda x: F.conv1d(x, torch.ones(2, 4, size).half(),
                                             padding=padding)).half()
            out = poptorch.inferenceModel(model)(x)[0]
            self.assertEqual((out.dtype, out.shape[-1]), (torch.float16,
                                                          {"same": 8, "valid": 6, 2: 10}[padding]))
            expected = F.conv1d(x.float() * model.w.float(), torch.ones(2, 4, size),
                                padding=padding)
            self.assertLess(float((out.float() - expected).abs().max()),
                            4 * 2.0 ** -11 * float(expected.abs().max()))
        # "same" with an even kernel pads one side more: refused
        model = Apply(lambda x: F.conv1d(x, torch.ones(2, 4, 2).half(), padding="same")).half()
        with self.assertRaisesRegex(NotImplementedError, r"conv1d with padding='same' on float16 "
                                    r"tensors \(kernel \(2,\)\).*give the padding as numbers"):
            poptorch.inferenceModel(model)(x)

    def test_an_untraced_operation_without_float16_kernel(self):
        # torch.convolution is not recorded by the tracer (torch.onnx records _convolution);
        # its float32 replacement would be traced, so the capture refuses it, naming it.
        weight = torch.ones(2, 4, 3).half()
        model = Apply(lambda x: torch.convolution(x, weight, None, [1], [0], [1], False, [0],
                                                  1)).half()
        with self.assertRaisesRegex(NotImplementedError, r"capturing aten.convolution.default on "
                                    r"float16 tensors is not implemented.*\.float\(\)"):
            poptorch.inferenceModel(model)(torch.randn(2, 4, 8).half())

    def test_ctc_decoder_takes_float32_only(self):
        class Decoder(nn.Module):
            def forward(self, log_probs, lengths):
                return poptorch.ctc_beam_search_decoder(log_probs, lengths)

        log_probs = torch.randn(5, 2, 3).log_softmax(-1).half()
        with self.assertRaisesRegex(ValueError, "log_probs must be float32"):
            poptorch.inferenceModel(Decoder())(log_probs, torch.tensor([5, 5]))

    def test_optimizer_types(self):
        model = tt.make(tt.Mlp).half()
        optimizer = poptorch.optim.Adam(model.parameters(), accum_type=torch.bfloat16)
        with self.assertRaisesRegex(ValueError, r"Adam.accum_type: expected torch.float32 or "
                                    r"torch.float16, got torch.bfloat16"):
            poptorch.trainingModel(model, optimizer=optimizer)
        optimizer = poptorch.optim.SGD(model.parameters(), lr=0.1,
                                       velocity_accum_type=torch.float64)
        with self.assertRaisesRegex(ValueError, "SGD.velocity_accum_type: expected"):
            poptorch.trainingModel(model, optimizer=optimizer)

    def test_a_changed_accumulator_type_is_a_constant(self):
        model = tt.make(tt.Mlp).half()
        optimizer = poptorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        wrapped = poptorch.trainingModel(model, optimizer=optimizer)
        x, y = tt.mlp_data(1, 4)[0]
        wrapped(x.half(), y)
        optimizer.velocity_accum_type = torch.float16
        with self.assertRaisesRegex(ValueError, "constant: types: \\('FLOAT', 'FLOAT'\\) -> "
                                    "\\('FLOAT', 'FLOAT16'\\)"):
            wrapped(x.half(), y)


@unittest.skipIf(torch is None, SKIP_REASON)
class Float16Precision(PrivatePool, unittest.TestCase):

    def test_stochastic_rounding_moves_float16_weights(self):
        # Updates of 1e-4 to weights near 1 (float16 spacing 2^-10 ~ 9.8e-4 there) round back to
        # the old value to nearest; stochastic rounding moves them up or down, on average by the
        # update.
        def train(stochastic):
            model = Apply(lambda x: x).half()
            with torch.no_grad():
                model.w.fill_(1.0)
            opts = poptorch.Options().randomSeed(0)
            opts.Precision.enableStochasticRounding(stochastic)
            wrapped = poptorch.trainingModel(model, opts, optimizer=torch.optim.SGD(
                model.parameters(), lr=1e-4))
            x = torch.ones(4, 8).half() / 4  # d(sum)/dw = 1 for every weight: w -= 1e-4
            for _ in range(10):
                wrapped(x)
            return model.w.detach().float()

        self.assertTrue(torch.equal(train(False), torch.ones(8)))
        moved = train(True)
        self.assertFalse(torch.equal(moved, torch.ones(8)))
        # 10 updates of 1e-4: on average 1e-3 lower, within the spacing's noise
        self.assertLess(abs(float(moved.mean()) - (1 - 1e-3)), 1.5e-3)

    def test_deprecated_casting_options_warn(self):
        opts = poptorch.Options()
        with self.assertLogs("poptorch", "WARNING") as logs:
            opts.Precision.halfFloatCasting(poptorch.HalfFloatCastingBehavior.FloatDowncastToHalf)
            opts.Precision.runningStatisticsAlwaysFloat(True)
        self.assertRegex(logs.output[0], "FloatDowncastToHalf\\) has no effect: mixed "
                         "float16/float32 operations always compute in float32")
        self.assertRegex(logs.output[1], "cast the BatchNorm's running_mean and running_var")
        # and they change nothing: a float16 input still meets the float32 weights in float32
        model = tt.make(tt.Mlp).eval()
        out = poptorch.inferenceModel(model, opts)(torch.randn(4, 6).half())
        self.assertEqual(out.dtype, torch.float32)


if __name__ == "__main__":
    unittest.main()
