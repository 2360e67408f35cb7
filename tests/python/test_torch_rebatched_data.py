"""xtrain.torch's DataLoaderMode.AsyncRebatched and AsynchronousDataAccessor's rebatched_size
(docs/poptorch.md, "Data"): workers load smaller batches that are joined into the combined batch,
giving the synchronous loader's batches in its order, the last short one per drop_last."""
import collections
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch

if torch is not None:
    import xtrain.torch as poptorch


def numbered(n):
    """Samples whose values say their index, so any reordering or repeat shows."""
    return torch.utils.data.TensorDataset(torch.arange(n * 3, dtype=torch.float32).reshape(n, 3),
                                          torch.arange(n))


@unittest.skipIf(torch is None, SKIP_REASON)
class AsyncRebatched(PrivatePool, unittest.TestCase):

    def options(self):
        opts = poptorch.Options().deviceIterations(2)
        opts.Training.gradientAccumulation(2)
        return opts  # combined batch: 2 x 2 x batch_size

    def loaders(self, n, drop_last, worker_size, shuffle, num_workers=0):
        """(the synchronous loader, the rebatched one), shuffled with the same seed."""
        def make(**mode):
            return poptorch.DataLoader(self.options(), numbered(n), batch_size=2, shuffle=shuffle,
                                       drop_last=drop_last, num_workers=num_workers,
                                       generator=torch.Generator().manual_seed(7), **mode)
        return make(), make(mode=poptorch.DataLoaderMode.AsyncRebatched,
                            rebatched_worker_size=worker_size)

    def assert_same_batches(self, sync, rebatched, epochs=2):
        self.assertEqual(len(rebatched), len(sync))
        for _ in range(epochs):
            expected = [(x.clone(), y.clone()) for x, y in sync]
            got = [(x.clone(), y.clone()) for x, y in rebatched]
            self.assertEqual([tuple(y.tolist()) for _, y in got],
                             [tuple(y.tolist()) for _, y in expected])
            for (x, _), (sx, _) in zip(got, expected):
                self.assertTrue(torch.equal(x, sx))
        rebatched.terminate()

    def test_same_batches_as_the_synchronous_loader(self):
        # 8 samples a combined batch; worker batches of 8 (the default), 1, 3 and 5 (which do not
        # divide it: their rows are carried across combined batches).
        for worker_size in (None, 1, 3, 5):
            for shuffle in (False, True):
                with self.subTest(worker_size=worker_size, shuffle=shuffle):
                    sync, rebatched = self.loaders(45, True, worker_size, shuffle)
                    self.assertEqual(len(sync), 5)
                    self.assert_same_batches(sync, rebatched)

    def test_last_incomplete_batch_per_drop_last(self):
        sync, rebatched = self.loaders(45, False, 3, shuffle=True)
        self.assertEqual(len(rebatched), 6)
        self.assert_same_batches(sync, rebatched)
        self.assertEqual([y.shape[0] for _, y in rebatched], [8] * 5 + [5])
        sync, rebatched = self.loaders(45, True, 3, shuffle=False)
        self.assertEqual([y.shape[0] for _, y in rebatched], [8] * 5)
        rebatched.terminate()

    def test_worker_processes(self):
        sync, rebatched = self.loaders(40, True, 3, shuffle=True, num_workers=2)
        self.assert_same_batches(sync, rebatched, epochs=1)

    def test_accessor_rebatches_any_iterable_of_batches(self):
        batches = [{"x": torch.full((3, 2), float(i)), "i": torch.arange(3) + 3 * i}
                   for i in range(5)]
        accessor = poptorch.AsynchronousDataAccessor(batches, rebatched_size=4,
                                                     load_indefinitely=False)
        self.assertEqual(accessor.rebatched_size, 4)
        self.assertEqual(len(accessor), 3)  # 15 rows; a plain iterable drops the last 3
        got = list(accessor)
        self.assertEqual([b["i"].tolist() for b in got],
                         [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]])
        self.assertEqual(got[1]["x"][:, 0].tolist(), [1.0, 1.0, 2.0, 2.0])

    def test_namedtuple_batches_keep_their_type(self):
        Pair = collections.namedtuple("Pair", ["x", "y"])
        batches = [Pair(torch.arange(2) + 2 * i, torch.zeros(2, 3)) for i in range(3)]
        got = list(poptorch.AsynchronousDataAccessor(batches, rebatched_size=3,
                                                     load_indefinitely=False))
        self.assertEqual([type(b) for b in got], [Pair, Pair])
        self.assertEqual([b.x.tolist() for b in got], [[0, 1, 2], [3, 4, 5]])

    def test_refusals(self):
        opts = self.options()
        with self.assertRaisesRegex(ValueError,
                                    r"rebatched_worker_size must be an int in \[1, 8\].*got 9"):
            poptorch.DataLoader(opts, numbered(20), batch_size=2, rebatched_worker_size=9,
                                mode=poptorch.DataLoaderMode.AsyncRebatched)
        with self.assertRaisesRegex(ValueError, "rebatched_worker_size applies to "
                                                "DataLoaderMode.AsyncRebatched only.*Async"):
            poptorch.DataLoader(opts, numbered(20), batch_size=2, rebatched_worker_size=4,
                                mode=poptorch.DataLoaderMode.Async)
        with self.assertRaisesRegex(ValueError, "async_options cannot set rebatched_size"):
            poptorch.DataLoader(opts, numbered(20), mode=poptorch.DataLoaderMode.AsyncRebatched,
                                async_options={"rebatched_size": 4})
        with self.assertRaisesRegex(ValueError, "async_options cannot set rebatched_size"):
            poptorch.DataLoader(opts, numbered(20), mode=poptorch.DataLoaderMode.Async,
                                async_options={"rebatched_size": 4})
        with self.assertRaisesRegex(ValueError, "rebatched_size must be None or an int greater "
                                                "than 1, got 1"):
            poptorch.AsynchronousDataAccessor([torch.zeros(2)], rebatched_size=1)
        accessor = poptorch.AsynchronousDataAccessor([torch.zeros(2, 1), torch.zeros(3, 2)],
                                                     rebatched_size=4, load_indefinitely=False)
        with self.assertRaisesRegex(RuntimeError, "Sizes of tensors must match"):
            list(accessor)


if __name__ == "__main__":
    unittest.main()
