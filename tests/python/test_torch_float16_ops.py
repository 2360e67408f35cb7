"""Which operations xtrain.torch trains in float16 (docs/poptorch.md, "Float16"): each function of
a list, applied to a float16 input times a float16 parameter in a `.half()` module, trained one SGD
step through trainingModel; its output and loss must be float16, its output PyTorch's (computed in
float64 from the same float16 values) and its gradient, read from the step, PyTorch's too. So each
op runs forward and backward on FLOAT16 in xtrain, and a wrong float16 kernel or gradient fails."""
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import torch.nn.functional as F
    import xtrain.torch as poptorch

    Apply = tt.Apply

    def positive(x):
        return x.abs() + 0.5

    def kernel(dtype):
        """36 weights in [-0.5, 0.6], multiples of 1/32: exact in float16 and float64 alike."""
        return (torch.arange(36) / 32 - 0.5).to(dtype)

    # x is [4, 6, 8]: batch 4 of 6 x 8 (a sequence or 6 channels of length 8)
    FUNCTIONS = {
        "tanh": torch.tanh, "sigmoid": torch.sigmoid, "relu": F.relu, "gelu": F.gelu,
        "silu": F.silu, "elu": F.elu, "softplus": F.softplus, "leaky_relu": F.leaky_relu,
        # within (-3, 3), away from the kinks, where a float16-rounded input may fall on the
        # other side than float64's
        "hardswish": lambda x: F.hardswish(x / 2), "exp": lambda x: torch.exp(x / 2),
        "log": lambda x: torch.log(positive(x)), "sqrt": lambda x: torch.sqrt(positive(x)),
        "rsqrt": lambda x: torch.rsqrt(positive(x)), "reciprocal": lambda x: 1 / positive(x),
        "pow": lambda x: positive(x) ** 1.5, "sin": torch.sin, "cos": torch.cos,
        "erf": torch.erf, "atan": torch.atan, "abs": torch.abs,
        "mean": lambda x: x.mean(-1), "amax": lambda x: x.amax(-1),
        "logsumexp": lambda x: torch.logsumexp(x, -1),
        "norm": lambda x: torch.linalg.vector_norm(x, dim=-1),
        "softmax": lambda x: F.softmax(x, -1) * x, "log_softmax": lambda x: F.log_softmax(x, -1),
        "layer_norm": lambda x: F.layer_norm(x, (8,), kernel(x.dtype)[:8] + 1) * x,
        "group_norm": lambda x: F.group_norm(x, 2) * x, "cumsum": lambda x: torch.cumsum(x, -1),
        "topk": lambda x: torch.topk(x, 3)[0], "where": lambda x: torch.where(x > 0, x, 0.1 * x),
        "clamp": lambda x: torch.clamp(x, -0.5, 0.5), "maximum": lambda x: torch.maximum(x, -x / 2),
        "matmul": lambda x: x @ x.transpose(1, 2), "pad": lambda x: F.pad(x, (1, 2)) * 2,
        "flip": lambda x: torch.flip(x, [-1]) * x, "roll": lambda x: torch.roll(x, 1, -1) * x,
        "gather": lambda x: torch.gather(x, -1, torch.tensor([[[0, 3, 3]]]).expand(4, 6, 3)),
        "max_pool": lambda x: F.max_pool1d(x, 2), "avg_pool": lambda x: F.avg_pool1d(x, 2),
        "adaptive_pool": lambda x: F.adaptive_avg_pool1d(x, 4),
        "interpolate": lambda x: F.interpolate(x, scale_factor=2.0),
        "conv1d": lambda x: F.conv1d(x, kernel(x.dtype).reshape(2, 6, 3)),
        "conv_transpose1d": lambda x: F.conv_transpose1d(x, kernel(x.dtype).reshape(6, 2, 3)),
        "cross_entropy": lambda x: F.cross_entropy(x[:, 0], torch.tensor([0, 3, 5, 7])),
        "mse": lambda x: F.mse_loss(x, torch.ones_like(x)),
        "l1": lambda x: F.l1_loss(x, torch.ones_like(x)),
        "bce_with_logits": lambda x: F.binary_cross_entropy_with_logits(x, torch.ones_like(x) / 3),
        "kl_div": lambda x: F.kl_div(F.log_softmax(x, -1), F.softmax(x.flip(0), -1),
                                     reduction="batchmean"),
        "cosine_similarity": lambda x: F.cosine_similarity(x, x.flip(0), dim=-1),
    }


@unittest.skipIf(torch is None, SKIP_REASON)
class Float16Operations(PrivatePool, unittest.TestCase):
    """Tolerances: float16's unit roundoff is 2^-11 (4.9e-4 relative). Each op computes in
    float32 and rounds its result once, and the few ops before and after it (the product x * w,
    the sum, their gradients) round again; so the output is within 4 float16 ulps of float64's
    at its largest element, and the gradient, a sum of 24 float16 products per weight, within 1%
    of its largest element (2^-11 of each of the rounded terms, several roundings deep). The
    gradient is read from one SGD step with lr 1 (w - g, rounded to float16): its rounding, one
    ulp of the new weight, is added to the tolerance."""

    def test_forward_and_gradient_in_float16(self):
        x = torch.linspace(-2, 2, 4 * 6 * 8).reshape(4, 6, 8).half()
        failures = []
        for name, function in FUNCTIONS.items():
            model = Apply(function).half()
            before = model.w.detach().clone()
            reference = Apply(function).double()  # from the same float16 weights
            with torch.no_grad():
                reference.w.copy_(before.double())
            try:
                out, loss = poptorch.trainingModel(model, optimizer=torch.optim.SGD(
                    model.parameters(), lr=1.0))(x)
            except Exception as e:  # noqa: B902 - every op's failure is reported at the end
                failures.append("%s: %s: %s" % (name, type(e).__name__, str(e)[:300]))
                continue
            expected, expected_loss = reference(x.double())
            expected_loss.backward()
            gradient = (before.double() - model.w.detach().double())
            self.assertEqual((out.dtype, loss.dtype), (torch.float16, torch.float16), name)
            out_error = float((out.double() - expected).abs().max())
            out_tolerance = 4 * 2.0 ** -11 * max(float(expected.abs().max()), 2.0 ** -10)
            grad_error = float((gradient - reference.w.grad).abs().max())
            grad_tolerance = 1e-2 * float(reference.w.grad.abs().max()) + \
                2.0 ** -10 * max(1.0, float(model.w.detach().abs().max()))
            if out_error > out_tolerance or grad_error > grad_tolerance:
                failures.append("%s: output %.3g off (tolerance %.3g), gradient %.3g off "
                                "(tolerance %.3g)" % (name, out_error, out_tolerance, grad_error,
                                                      grad_tolerance))
        self.assertEqual(failures, [])


if __name__ == "__main__":
    unittest.main()
