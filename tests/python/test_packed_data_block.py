"""aiGraphcore.packedDataBlock (docs/operators.md): packed sequences unpacked, a callback graph run on
batches of them, the results packed, against a NumPy reference written from the op's description."""
import unittest

import numpy as np

import xtrain as popart


def reference(packed, result_offsets, result_lengths, result_size, batch, callback):
    """packed: [(data, offsets, lengths, max_length)]; callback(*unpacked batches) -> [B, L, ...]."""
    sequences = len(packed[0][1])
    unpacked = []
    for data, offsets, lengths, max_length in packed:
        u = np.zeros((sequences, max_length) + data.shape[1:], data.dtype)
        for s in range(sequences):
            u[s, :lengths[s]] = data[offsets[s]:offsets[s] + lengths[s]]
        unpacked.append(u)
    results = np.concatenate([callback(*[u[c:c + batch] for u in unpacked])
                              for c in range(0, sequences, batch)])
    out = np.zeros((result_size,) + results.shape[2:], results.dtype)
    for s in range(sequences):
        n = min(result_lengths[s], results.shape[1])
        out[result_offsets[s]:result_offsets[s] + n] = results[s, :n]
    return out


def run(builder, out, feeds):
    session = popart.InferenceSession(
        fnModel=builder.getModelProto(), dataFlow=popart.DataFlow(1, [out]),
        deviceInfo=popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO(feeds, anchors))
    return anchors[out]


class PackedDataBlockTest(unittest.TestCase):
    def setUp(self):
        rng = np.random.RandomState(7)
        # Queries: 4 sequences of 2, 4, 1, 3 rows of 3 features; keys: 4 sequences of 3, 1, 2, 2.
        self.q_lengths = np.array([2, 4, 1, 3], np.uint32)
        self.q_offsets = np.array([0, 2, 6, 7], np.uint32)
        self.k_lengths = np.array([3, 1, 2, 2], np.int32)
        self.k_offsets = np.array([5, 0, 1, 3], np.int32)  # packed in another order
        self.q = rng.randint(-4, 5, (10, 3)).astype(np.float32)
        self.k = rng.randint(-4, 5, (8, 3)).astype(np.float32)

    def build(self, batch, result_size=12):
        b = popart.Builder()
        ids = [b.addInputTensor(popart.TensorInfo("FLOAT", [10, 3]), "q"),
               b.addInputTensor(popart.TensorInfo("UINT32", [4]), "qOffsets"),
               b.addInputTensor(popart.TensorInfo("UINT32", [4]), "qLengths"),
               b.addInputTensor(popart.TensorInfo("FLOAT", [8, 3]), "k"),
               b.addInputTensor(popart.TensorInfo("INT32", [4]), "kOffsets"),
               b.addInputTensor(popart.TensorInfo("INT32", [4]), "kLengths")]
        callback = b.createSubgraphBuilder()
        q = callback.addUntypedInputTensor()
        k = callback.addUntypedInputTensor()
        scores = callback.aiOnnx.matmul([q, callback.aiOnnx.transpose([k], [0, 2, 1])])
        callback.addOutputTensor(scores)
        # The result is packed as the queries are.
        out = b.aiGraphcore.packedDataBlock(ids + [ids[1], ids[2]], [4, 3], result_size, batch,
                                            callback)
        return b, out

    def feeds(self):
        return {"q": self.q, "qOffsets": self.q_offsets, "qLengths": self.q_lengths,
                "k": self.k, "kOffsets": self.k_offsets, "kLengths": self.k_lengths}

    def expected(self, batch, result_size=12):
        return reference([(self.q, self.q_offsets, self.q_lengths, 4),
                          (self.k, self.k_offsets, self.k_lengths, 3)],
                         self.q_offsets, self.q_lengths, result_size, batch,
                         lambda q, k: np.matmul(q, np.transpose(k, [0, 2, 1])))

    def test_matches_the_reference_for_each_batch_size(self):
        for batch in (1, 2, 4):
            with self.subTest(batch=batch):
                b, out = self.build(batch)
                self.assertEqual(b.getTensorShape(out), [12, 3])
                got = run(b, out, self.feeds())
                np.testing.assert_array_equal(got, self.expected(batch))
        # Rows 10 and 11 belong to no sequence: zero.
        self.assertFalse(np.any(got[10:]))

    def test_offsets_and_lengths_are_read_at_run_time(self):
        b, out = self.build(2)
        self.q_lengths = np.array([1, 1, 1, 1], np.uint32)
        self.k_offsets = np.array([0, 0, 0, 0], np.int32)
        np.testing.assert_array_equal(run(b, out, self.feeds()), self.expected(2))

    def test_overlapping_result_sequences_keep_the_later(self):
        b, out = self.build(1)
        self.q_offsets = np.array([0, 1, 2, 3], np.uint32)  # each sequence overlaps the next
        np.testing.assert_array_equal(run(b, out, self.feeds()), self.expected(1))

    def test_bad_arguments(self):
        b = popart.Builder()
        d = b.addInputTensor(popart.TensorInfo("FLOAT", [6, 2]), "d")
        o = b.addInputTensor(popart.TensorInfo("INT32", [3]), "o")
        n = b.addInputTensor(popart.TensorInfo("INT32", [3]), "n")
        callback = b.createSubgraphBuilder()
        x = callback.addUntypedInputTensor()
        callback.addOutputTensor(callback.aiOnnx.relu([x]))
        with self.assertRaisesRegex(popart.popart_exception, "3 x K \\+ 2 inputs"):
            b.aiGraphcore.packedDataBlock([d, o, n, o], [2], 6, 1, callback)
        with self.assertRaisesRegex(popart.popart_exception, "maxSequenceLengths has 2 values"):
            b.aiGraphcore.packedDataBlock([d, o, n, o, n], [2, 2], 6, 1, callback)
        # Known at import: a batch that does not divide the sequences.
        out = b.aiGraphcore.packedDataBlock([d, o, n, o, n], [2], 6, 2, callback)
        with self.assertRaisesRegex(popart.popart_exception,
                                    "callbackBatchSize is 2; it must divide the 3 sequences"):
            run(b, out, {d: np.zeros([6, 2], np.float32), o: np.zeros(3, np.int32),
                         n: np.zeros(3, np.int32)})


if __name__ == "__main__":
    unittest.main()
