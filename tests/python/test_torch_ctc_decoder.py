"""poptorch.ctc_beam_search_decoder in xtrain.torch (docs/poptorch.md, "Ops"): in an inferenceModel
(xtrain's CtcBeamSearchDecoder) and on the CPU, against an exact reference that sums every
alignment of every label sequence, for several lengths, blank indices and top_paths > 1."""
import itertools
import math
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch

if torch is not None:
    import torch.nn as nn
    import xtrain.torch as poptorch

    class Decoder(nn.Module):
        def __init__(self, **kwargs):
            super().__init__()
            self.kwargs = kwargs

        def forward(self, log_probs, lengths):
            return poptorch.ctc_beam_search_decoder(log_probs, lengths, **self.kwargs)


def exact_paths(log_probs, length, blank):
    """[(label sequence, log-probability)] of every sequence, most probable first: the log-sum
    of the probabilities of its alignments (each time step's class, repeats merged, blanks
    dropped), by enumerating all C^length alignments."""
    classes = len(log_probs[0])
    totals = {}
    for alignment in itertools.product(range(classes), repeat=length):
        labels, last = [], None
        for c in alignment:
            if c != blank and c != last:
                labels.append(c)
            last = c
        score = sum(log_probs[t][c] for t, c in enumerate(alignment))
        totals.setdefault(tuple(labels), []).append(score)
    paths = [(seq, math.log(sum(math.exp(s) for s in scores))) for seq, scores in totals.items()]
    return sorted(paths, key=lambda p: -p[1])


def random_log_probs(steps, batch, classes, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.log_softmax(torch.randn(steps, batch, classes, generator=g) * 2.0, dim=2)


@unittest.skipIf(torch is None, SKIP_REASON)
class CtcBeamSearchDecoder(PrivatePool, unittest.TestCase):

    def check_exact(self, outputs, log_probs, lengths, blank, top_paths):
        probs, label_lengths, labels = outputs
        batch, steps = log_probs.shape[1], log_probs.shape[0]
        self.assertEqual(tuple(probs.shape), (batch, top_paths))
        self.assertEqual(tuple(labels.shape), (batch, top_paths, steps))
        self.assertEqual(label_lengths.dtype, torch.int32)
        for n in range(batch):
            sequence = [log_probs[t, n].tolist() for t in range(steps)]
            expected = exact_paths(sequence, int(lengths[n]), blank)
            for k in range(top_paths):
                with self.subTest(sample=n, path=k):
                    if k >= len(expected):  # fewer sequences than paths asked for
                        self.assertEqual(float(probs[n, k]), -math.inf)
                        self.assertEqual(int(label_lengths[n, k]), 0)
                        continue
                    seq, score = expected[k]
                    self.assertAlmostEqual(float(probs[n, k]), score, delta=1e-5 * abs(score))
                    self.assertEqual(int(label_lengths[n, k]), len(seq))
                    self.assertEqual(labels[n, k].tolist(), list(seq) + [0] * (steps - len(seq)))

    def run_both(self, log_probs, lengths, **kwargs):
        """(the device's outputs through inferenceModel, the CPU's)."""
        model = Decoder(**kwargs)
        return poptorch.inferenceModel(model)(log_probs, lengths), model(log_probs, lengths)

    def test_default_beam_is_exact_on_two_labels(self):
        # 3 classes, T = 5: at most 63 prefixes, all kept by the default beam of 100.
        log_probs = random_log_probs(5, 4, 3, seed=1)
        lengths = torch.tensor([5, 3, 0, 4])
        for blank in (0, 2):
            for device_or_cpu in self.run_both(log_probs, lengths, blank=blank, top_paths=3):
                self.check_exact(device_or_cpu, log_probs, lengths, blank, 3)

    def test_chapter_listing(self):
        # Section 4.6.1's model as written (PopTorch's defaults: blank 0, beam 100, one path).
        class Model(torch.nn.Module):
            def forward(self, log_probs, lengths):
                return poptorch.ctc_beam_search_decoder(log_probs, lengths)

        log_probs = random_log_probs(4, 2, 3, seed=5)
        lengths = torch.tensor([4, 3])
        outputs = poptorch.inferenceModel(Model())(log_probs, lengths)
        self.check_exact(outputs, log_probs, lengths, 0, 1)

    def test_wide_beam_three_labels_and_a_middle_blank(self):
        # 4 classes, T = 4: at most 121 prefixes, a beam of 128 keeps them all.
        log_probs = random_log_probs(4, 3, 4, seed=2)
        lengths = torch.tensor([4, 2, 1], dtype=torch.int32)
        outputs = self.run_both(log_probs, lengths, blank=1, beam_width=128, top_paths=5)
        for device_or_cpu in outputs:
            self.check_exact(device_or_cpu, log_probs, lengths, 1, 5)
        # A one-step sequence has only C - 1 + 1 sequences (each label, or nothing): the rest -inf.
        self.assertEqual(float(outputs[0][0][2, 4]), -math.inf)

    def test_narrow_beam_prunes_as_the_cpu_does(self):
        # Beams of 1 to 3 drop prefixes: the device's search keeps the same ones as the CPU's.
        log_probs = random_log_probs(8, 3, 5, seed=3)
        lengths = torch.tensor([8, 6, 7])
        for width in (1, 2, 3):
            device, cpu = self.run_both(log_probs, lengths, beam_width=width, top_paths=width)
            with self.subTest(beam_width=width):
                torch.testing.assert_close(device[0], cpu[0], rtol=1e-5, atol=1e-6)
                self.assertTrue(torch.equal(device[1], cpu[1]) and torch.equal(device[2], cpu[2]))
    def test_bad_arguments(self):
        log_probs = random_log_probs(3, 2, 3, seed=4)
        lengths = torch.tensor([3, 2])
        cases = [((log_probs[0], lengths), {}, "log_probs must be float32 \\[T, N, C\\]"),
                 ((log_probs.double(), lengths), {}, "float32"),
                 ((log_probs, lengths.float()), {}, "lengths must be integers of shape \\[2\\]"),
                 ((log_probs, torch.tensor([3])), {}, "lengths must be integers"),
                 ((log_probs, torch.tensor([4, 1])), {},
                  "lengths \\[4, 1\\] must be in \\[0, 3\\]"),
                 ((log_probs, lengths), {"blank": 3}, "blank must be an int in \\[0, 2\\], got 3"),
                 ((log_probs, lengths), {"beam_width": 0}, "beam_width must be an int >= 1"),
                 ((log_probs, lengths), {"beam_width": 2, "top_paths": 3},
                  "top_paths must be an int in \\[1, 2\\], got 3")]
        for args, kwargs, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(ValueError, message):
                    poptorch.ctc_beam_search_decoder(*args, **kwargs)
        with self.assertRaisesRegex(TypeError, "must be torch tensors"):
            poptorch.ctc_beam_search_decoder(log_probs.tolist(), lengths)
        with self.assertRaisesRegex(RuntimeError, "exceeds the 3 time steps"):
            # Checked on the device too: a compiled model fed a length beyond T.
            wrapped = poptorch.inferenceModel(Decoder())
            wrapped(log_probs, lengths)
            wrapped(log_probs, torch.tensor([3, 9]))


if __name__ == "__main__":
    unittest.main()
