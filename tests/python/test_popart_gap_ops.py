"""Builder methods PopART's operator tests use: aiOnnx.reducelogsum, isnan, isinf, globalmaxpool,
argmax's INT32 indices, a non-spatial (spatial=0) batchnormalization, and aiGraphcore.reshape,
batchnormalization and lstm. Forward against numpy / PyTorch, gradients (anchored with
reservedGradientPrefix()) against PyTorch's autograd, shapes through getTensorShape; and
groupnormalization under SessionOptions.groupNormStridedChannelGrouping against numpy."""
import unittest

import numpy as np
import torch

import xtrain as popart
from test_ops_misc import check_against_torch, infer, run

RNG = np.random.RandomState(41)
GRAD = popart.reservedGradientPrefix()


class OnnxOps(unittest.TestCase):
    def test_reducelogsum_values_and_gradients(self):
        x = RNG.uniform(0.2, 1.5, (2, 3, 4)).astype(np.float32)
        for axes, keep in (([1], 0), ([0, 2], 1), (None, 0), ([], 1)):
            check_against_torch(
                self, [x],
                lambda b, i, axes=axes, keep=keep: b.aiOnnx.reducelogsum([i[0]], axes=axes,
                                                                         keepdims=keep),
                lambda t, axes=axes, keep=keep: torch.log(t) if axes == [] else torch.log(
                    torch.sum(t, dim=tuple(axes) if axes else tuple(range(3)), keepdim=bool(keep))),
                opsets={"ai.onnx": 11, "ai.graphcore": 1})

    def test_isnan_isinf(self):
        x = np.array([np.inf, -np.inf, 2.5, np.nan, 0.0], np.float32)
        np.testing.assert_array_equal(infer([x], lambda b, i: b.aiOnnx.isnan([i[0]])), np.isnan(x))
        np.testing.assert_array_equal(infer([x], lambda b, i: b.aiOnnx.isinf([i[0]])), np.isinf(x))
        np.testing.assert_array_equal(
            infer([x], lambda b, i: b.aiOnnx.isinf([i[0]], detect_negative=0)), x == np.inf)
        b = popart.Builder(opsets={"ai.onnx": 8, "ai.graphcore": 1})
        t = b.addInputTensor(popart.TensorInfo(x))
        with self.assertRaisesRegex(popart.popart_exception, "opset 8 has no IsNaN"):
            b.aiOnnx.isnan([t])

    def test_globalmaxpool_values_and_gradients(self):
        x = RNG.permutation(2 * 3 * 4 * 5).reshape(2, 3, 4, 5).astype(np.float32) / 10
        check_against_torch(self, [x], lambda b, i: b.aiOnnx.globalmaxpool([i[0]]),
                            lambda t: torch.amax(t, dim=(2, 3), keepdim=True))

    def test_argmax_argmin_give_int32(self):
        x = RNG.randn(3, 5).astype(np.float32)
        y = infer([x], lambda b, i: b.aiOnnx.argmax([i[0]], axis=1, keepdims=0))
        self.assertEqual(y.dtype, np.int32)
        np.testing.assert_array_equal(y, np.argmax(x, axis=1))
        y = infer([x], lambda b, i: b.aiOnnx.argmin([i[0]], axis=0))
        self.assertEqual(y.dtype, np.int32)
        np.testing.assert_array_equal(y, np.argmin(x, axis=0)[None, :])

    def test_nonspatial_batchnorm_is_batchnorm1d_over_the_flattened_features(self):
        x = RNG.randn(4, 2, 3).astype(np.float32)
        stats = [RNG.uniform(0.5, 1.5, (2, 3)).astype(np.float32) for _ in range(4)]
        b = popart.Builder(opsets={"ai.onnx": 7, "ai.graphcore": 1})
        ids = [b.addInputTensor(popart.TensorInfo(v)) for v in [x] + stats]
        y, mean, var, _, _ = b.aiOnnx.batchnormalization(ids, 5, 1e-5, 0.1, spatial=0)
        loss = b.aiGraphcore.identityloss([y], reduction=popart.ReductionType.Sum)
        a = run(b, [y, mean, GRAD + ids[0]], dict(zip(ids, [x] + stats)), loss)
        tx = torch.tensor(x.reshape(4, 6), requires_grad=True)
        bn = torch.nn.BatchNorm1d(6, eps=1e-5, momentum=0.9)  # ONNX's momentum is torch's 1 - m
        with torch.no_grad():
            bn.weight.copy_(torch.tensor(stats[0].reshape(6)))
            bn.bias.copy_(torch.tensor(stats[1].reshape(6)))
            bn.running_mean.copy_(torch.tensor(stats[2].reshape(6)))
        ty = bn(tx)
        ty.sum().backward()
        np.testing.assert_allclose(a[y], ty.detach().numpy().reshape(4, 2, 3), rtol=1e-4,
                                   atol=1e-5)
        np.testing.assert_allclose(a[mean], bn.running_mean.numpy().reshape(2, 3), rtol=1e-5)
        np.testing.assert_allclose(a[GRAD + ids[0]], tx.grad.numpy().reshape(4, 2, 3), atol=1e-4)


class GraphcoreOps(unittest.TestCase):
    def test_reshape_with_zero_and_minus_one(self):
        x = RNG.randn(2, 4, 3).astype(np.float32)
        for shape, want in (([4, 6], [4, 6]), ([-1, 6], [4, 6]), ([-1, 0], [6, 4])):
            b = popart.Builder()
            t = b.addInputTensor(popart.TensorInfo(x))
            y = b.aiGraphcore.reshape(t, shape=shape)
            self.assertEqual(b.getTensorShape(y), want)
        check_against_torch(self, [x], lambda b, i: b.aiGraphcore.reshape(i[0], shape=[-1, 0]),
                            lambda t: t.reshape(6, 4))

    def test_batchnormalization_has_the_unbiased_running_variance(self):
        x = RNG.randn(4, 3, 2).astype(np.float32)
        scale, bias, mean = (RNG.randn(3).astype(np.float32) for _ in range(3))
        var = RNG.uniform(0.5, 1.5, 3).astype(np.float32)
        b = popart.Builder()
        ids = [b.addInputTensor(popart.TensorInfo(v)) for v in (x, scale, bias, mean, var)]
        y, rmean, rvar, _, _ = b.aiGraphcore.batchnormalization(ids, 5, 1e-5, 0.9)
        self.assertEqual(b.getTensorShape(rvar), [3])
        loss = b.aiGraphcore.identityloss([y], reduction=popart.ReductionType.Sum)
        a = run(b, [y, rmean, rvar], dict(zip(ids, (x, scale, bias, mean, var))), loss)
        bn = torch.nn.BatchNorm1d(3, eps=1e-5, momentum=0.1)
        with torch.no_grad():
            bn.weight.copy_(torch.tensor(scale))
            bn.bias.copy_(torch.tensor(bias))
            bn.running_mean.copy_(torch.tensor(mean))
            bn.running_var.copy_(torch.tensor(var))
        ty = bn(torch.tensor(x))
        np.testing.assert_allclose(a[y], ty.detach().numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(a[rmean], bn.running_mean.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a[rvar], bn.running_var.numpy(), rtol=1e-5, atol=1e-6)

    def test_lstm_matches_torch_with_poparts_weight_layout(self):
        S, B, I, H = 3, 2, 4, 5
        x = RNG.randn(S, B, I).astype(np.float32)
        torch.manual_seed(0)
        ref = torch.nn.LSTM(I, H)
        w_ih, w_hh = ref.weight_ih_l0.detach().numpy(), ref.weight_hh_l0.detach().numpy()
        b_sum = (ref.bias_ih_l0 + ref.bias_hh_l0).detach().numpy()
        # torch's gates are i, f, g (cell), o; PopART's f, i, c, o; each [I + H, H].
        order = [1, 0, 2, 3]
        weights = np.stack([np.concatenate([w_ih[g * H:(g + 1) * H].T, w_hh[g * H:(g + 1) * H].T])
                            for g in order]).astype(np.float32)
        bias = np.stack([b_sum[g * H:(g + 1) * H] for g in order]).astype(np.float32)
        h0 = RNG.randn(1, B, H).astype(np.float32)
        c0 = RNG.randn(1, B, H).astype(np.float32)
        state = np.concatenate([h0, c0])
        for full in (1, 0):
            b = popart.Builder()
            ids = [b.addInputTensor(popart.TensorInfo(v)) for v in (x, weights, bias, state)]
            out, cell = b.aiGraphcore.lstm(ids, outputFullSequence=full)
            self.assertEqual(b.getTensorShape(out), [S, B, H] if full else [B, H])
            self.assertEqual(b.getTensorShape(cell), [B, H])
            loss = b.aiGraphcore.identityloss([out], reduction=popart.ReductionType.Sum)
            a = run(b, [out, cell, GRAD + ids[0], GRAD + ids[1]],
                    dict(zip(ids, (x, weights, bias, state))), loss)
            tx = torch.tensor(x, requires_grad=True)
            ty, (th, tc) = ref(tx, (torch.tensor(h0), torch.tensor(c0)))
            want = ty if full else th[0]
            want.sum().backward()
            np.testing.assert_allclose(a[out], want.detach().numpy(), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(a[cell], tc[0].detach().numpy(), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(a[GRAD + ids[0]], tx.grad.numpy(), rtol=1e-3, atol=1e-5)
            gw = np.stack([np.concatenate([ref.weight_ih_l0.grad[g * H:(g + 1) * H].numpy().T,
                                           ref.weight_hh_l0.grad[g * H:(g + 1) * H].numpy().T])
                           for g in order])
            np.testing.assert_allclose(a[GRAD + ids[1]], gw, rtol=1e-3, atol=1e-5)
            ref.zero_grad()


class StridedGroupNorm(unittest.TestCase):
    def test_session_option_groups_channels_strided(self):
        """SessionOptions.groupNormStridedChannelGrouping: group g holds channels g, g + G, ...;
        against numpy, and the default against consecutive groups."""
        x = RNG.randn(2, 4, 3).astype(np.float32)
        scale = RNG.uniform(0.5, 1.5, 4).astype(np.float32)
        bias = RNG.randn(4).astype(np.float32)

        def reference(strided):
            y = np.empty_like(x)
            for g in range(2):
                chans = [g, g + 2] if strided else [2 * g, 2 * g + 1]
                block = x[:, chans].astype(np.float64)
                mean = block.mean(axis=(1, 2), keepdims=True)
                inv = 1.0 / np.sqrt(block.var(axis=(1, 2), keepdims=True) + 1e-5)
                y[:, chans] = (block - mean) * inv * scale[chans, None] + bias[chans, None]
            return y

        for strided in (False, True):
            b = popart.Builder()
            ids = [b.addInputTensor(popart.TensorInfo(v)) for v in (x, scale, bias)]
            y = b.aiGraphcore.groupnormalization(ids, 2, 1e-5)[0]
            b.addOutputTensor(y)
            opts = popart.SessionOptions()
            opts.groupNormStridedChannelGrouping = strided
            s = popart.InferenceSession(
                fnModel=b.getModelProto(),
                dataFlow=popart.DataFlow(1, {y: popart.AnchorReturnType("All")}),
                deviceInfo=popart.DeviceManager().createCpuDevice(), userOptions=opts)
            s.prepareDevice()
            anchors = s.initAnchorArrays()
            s.run(popart.PyStepIO(dict(zip(ids, (x, scale, bias))), anchors))
            np.testing.assert_allclose(anchors[y], reference(strided), rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    unittest.main()
