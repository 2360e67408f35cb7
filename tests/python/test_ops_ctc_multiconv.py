"""PopART's aiGraphcore ctcloss, ctcbeamsearchdecoder and multiconv through the Builder: the loss
and the logits' gradient (anchored with reservedGradientPrefix() in a TrainingSession) against
torch.nn.functional.ctc_loss, the decoder's shapes and types, multiconv against torch's
convolutions, shapes through getTensorShape, and the Builder's argument errors."""
import unittest

import numpy as np
import torch
import torch.nn.functional as F

import xtrain as popart
from python_testing import run_once as run

RNG = np.random.RandomState(31)


class CtcLoss(unittest.TestCase):
    def check(self, reduction, torch_reduction, blank):
        t, n, c, s = 5, 3, 4, 2
        logits = RNG.uniform(0, 1, (t, n, c)).astype(np.float32)
        targets = RNG.randint(1, c, (n, s)).astype(np.uint32)
        if blank != 0:
            targets = np.where(targets == blank, 0, targets).astype(np.uint32)
        in_len = np.array([5, 4, 5], np.uint32)
        tgt_len = np.array([2, 1, 0], np.uint32)
        b = popart.Builder()
        ids = [b.addInputTensor(popart.TensorInfo(x), f"x{k}")
               for k, x in enumerate([logits, targets, in_len, tgt_len])]
        lp = b.aiOnnx.logsoftmax([ids[0]], axis=2)
        loss = b.aiGraphcore.ctcloss([lp] + ids[1:], reduction, blank)
        self.assertEqual(b.getTensorShape(loss), [n] if torch_reduction == "none" else [])
        final = loss
        if torch_reduction == "none":
            final = b.aiGraphcore.identityloss([loss], reduction=popart.ReductionType.Sum)
        grad = popart.reservedGradientPrefix() + ids[0]
        a = run(b, [loss, grad], dict(zip(ids, [logits, targets, in_len, tgt_len])), final)
        tl = torch.tensor(logits, requires_grad=True)
        ref = F.ctc_loss(F.log_softmax(tl, 2), torch.tensor(targets.astype(np.int64)),
                         torch.tensor(in_len.astype(np.int64)),
                         torch.tensor(tgt_len.astype(np.int64)), blank=blank,
                         reduction=torch_reduction)
        ref.sum().backward()
        np.testing.assert_allclose(a[loss], ref.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a[grad], tl.grad.numpy(), rtol=1e-4, atol=1e-6)

    def test_reductions_match_torch(self):
        self.check(popart.ReductionType.Mean, "mean", 0)
        self.check(popart.ReductionType.Sum, "sum", 3)
        self.check(popart.ReductionType.NoReduction, "none", 0)

    def test_builder_checks_out_data_type(self):
        b = popart.Builder()
        lp = b.addInputTensor("FLOAT", [2, 1, 3])
        ints = [b.addInputTensor("UINT32", s) for s in ([1, 1], [1], [1])]
        with self.assertRaisesRegex(popart.popart_exception, "outDataType 'INT32'"):
            b.aiGraphcore.ctcloss([lp] + ints, outDataType="INT32")
        half = b.aiGraphcore.ctcloss([lp] + ints, outDataType="FLOAT16")
        self.assertEqual(b.getTensorDtypeString(half), "float16")


class BeamSearch(unittest.TestCase):
    def test_outputs_and_greedy_case(self):
        # One dominant class per step: the best path is that sequence collapsed.
        t, n, c = 4, 1, 3
        best = [1, 1, 0, 2]
        lp = np.full((t, n, c), np.log(0.05), np.float32)
        for k, cls in enumerate(best):
            lp[k, 0, cls] = np.log(0.9)
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo(lp), "lp")
        lens = b.addInputTensor(popart.TensorInfo(np.array([t], np.uint32)), "len")
        probs, lengths, labels = b.aiGraphcore.ctcbeamsearchdecoder([x, lens], 0, 5, 2)
        self.assertEqual(b.getTensorShape(labels), [n, 2, t])
        a = run(b, [probs, lengths, labels], {x: lp, lens: np.array([t], np.uint32)})
        self.assertEqual(a[lengths].dtype, np.uint32)
        self.assertEqual(list(a[labels][0, 0, :a[lengths][0, 0]]), [1, 2])
        self.assertGreater(a[probs][0, 0], a[probs][0, 1])


class MultiConv(unittest.TestCase):
    def test_matches_torch_forward_and_backward(self):
        x0 = RNG.uniform(-1, 1, (1, 4, 6)).astype(np.float32)
        w0 = RNG.uniform(-1, 1, (4, 2, 3)).astype(np.float32)  # group 2
        x1 = RNG.uniform(-1, 1, (2, 2, 5, 5)).astype(np.float32)
        w1 = RNG.uniform(-1, 1, (3, 2, 2, 2)).astype(np.float32)
        b1 = RNG.uniform(-1, 1, (3,)).astype(np.float32)
        b = popart.Builder()
        i0, f0 = b.addInputTensor(popart.TensorInfo(x0), "x0"), b.addInitializedInputTensor(w0)
        i1, f1 = b.addInputTensor(popart.TensorInfo(x1), "x1"), b.addInitializedInputTensor(w1)
        bias = b.addInitializedInputTensor(b1)
        c0, c1 = b.aiGraphcore.multiconv([[i0, f0], [i1, f1, bias]], strides=[[2], [1, 1]],
                                         pads=[[1, 1], [0, 1, 0, 1]], dilations=[[1], [2, 1]],
                                         partialsTypes=["half", "float"])
        self.assertEqual(b.getTensorShape(c0), [1, 4, 3])
        self.assertEqual(b.getTensorShape(c1), [2, 3, 3, 6])
        s = b.aiOnnx.add([b.aiOnnx.reducesum([c0], keepdims=0),
                          b.aiOnnx.reducesum([c1], keepdims=0)])
        loss = b.aiGraphcore.identityloss([s])
        grads = [popart.reservedGradientPrefix() + t for t in (i0, f0, i1, f1, bias)]
        a = run(b, [c0, c1] + grads, {i0: x0, i1: x1}, loss)
        ts = [torch.tensor(v, requires_grad=True) for v in (x0, w0, x1, w1, b1)]
        r0 = F.conv1d(ts[0], ts[1], stride=2, padding=1, groups=2)
        r1 = F.conv2d(F.pad(ts[2], (1, 1, 0, 0)), ts[3], ts[4], dilation=(2, 1))
        (r0.sum() + r1.sum()).backward()
        np.testing.assert_allclose(a[c0], r0.detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(a[c1], r1.detach().numpy(), rtol=1e-5, atol=1e-5)
        for g, t in zip(grads, ts):
            np.testing.assert_allclose(a[g], t.grad.numpy(), rtol=1e-4, atol=1e-4)

    def test_builder_errors(self):
        b = popart.Builder()
        d = b.addInputTensor("FLOAT", [1, 2, 4, 4])
        f = b.addInputTensor("FLOAT", [3, 2, 3, 3])
        with self.assertRaisesRegex(popart.popart_exception, "number of strides parameter sets"):
            b.aiGraphcore.multiconv([[d, f]], strides=[[1, 1], [1, 1]])
        with self.assertRaisesRegex(popart.popart_exception, "Length of strides vector 1"):
            b.aiGraphcore.multiconv([[d, f]], strides=[[1]])
        with self.assertRaisesRegex(popart.popart_exception, "has no input tensors"):
            b.aiGraphcore.multiconv([])


if __name__ == "__main__":
    unittest.main()
