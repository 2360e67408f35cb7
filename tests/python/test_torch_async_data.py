"""xtrain.torch's asynchronous data loading (docs/poptorch.md, "Data"): AsynchronousDataAccessor and
DataLoaderMode.Async give the loader's batches in order, load while the caller works, pass the
loader's errors on, and train as the synchronous loader does."""
import threading
import time
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import xtrain.torch as poptorch


class SlowBatches:
    """An iterable of numbered batches, each taking `delay` seconds to make; records the thread."""

    def __init__(self, count, delay=0.0, fail_at=None):
        self.count, self.delay, self.fail_at = count, delay, fail_at
        self.threads = set()

    def __len__(self):
        return self.count

    def __iter__(self):
        for i in range(self.count):
            self.threads.add(threading.get_ident())
            if i == self.fail_at:
                raise KeyError("sample %d is missing" % i)
            time.sleep(self.delay)
            yield torch.full((2,), float(i))


@unittest.skipIf(torch is None, SKIP_REASON)
class AsynchronousLoading(PrivatePool, unittest.TestCase):

    def test_batches_in_order_from_another_thread_for_every_epoch(self):
        source = SlowBatches(5)
        accessor = poptorch.AsynchronousDataAccessor(source, buffer_size=2)
        self.assertEqual(len(accessor), 5)
        for _ in range(2):  # load_indefinitely: a second epoch
            self.assertEqual([int(b[0]) for b in accessor], [0, 1, 2, 3, 4])
        self.assertNotIn(threading.get_ident(), source.threads)
        accessor.terminate()

    def test_loading_overlaps_the_callers_work(self):
        source = SlowBatches(6, delay=0.05)
        accessor = poptorch.AsynchronousDataAccessor(source, buffer_size=6, early_preload=True,
                                                     load_indefinitely=False)
        start = time.monotonic()
        for _ in accessor:
            time.sleep(0.05)  # the caller's step: the next batch is made meanwhile
        elapsed = time.monotonic() - start
        # In sequence: 12 x 50 ms; overlapped: about 6 x 50 ms plus the first batch.
        self.assertLess(elapsed, 0.5, "loading did not overlap the caller's work")

    def test_a_loader_error_reaches_the_caller(self):
        accessor = poptorch.AsynchronousDataAccessor(SlowBatches(5, fail_at=3))
        seen = []
        with self.assertRaisesRegex(KeyError, "sample 3 is missing"):
            for batch in accessor:
                seen.append(int(batch[0]))
        self.assertEqual(seen, [0, 1, 2])

    def test_stopping_early_and_refusals(self):
        accessor = poptorch.AsynchronousDataAccessor(SlowBatches(50), buffer_size=1)
        for batch in accessor:
            break
        accessor.terminate()
        with self.assertRaisesRegex(ValueError, "buffer_size must be a positive int"):
            poptorch.AsynchronousDataAccessor(SlowBatches(1), buffer_size=0)

    def test_async_data_loader_trains_as_the_synchronous_one(self):
        g = torch.Generator().manual_seed(0)
        dataset = torch.utils.data.TensorDataset(torch.randn(64, 6, generator=g),
                                                 torch.randint(0, 3, (64,), generator=g))
        opts = poptorch.Options().Training.gradientAccumulation(2)
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        wrapped = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.1))
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
        loader = poptorch.DataLoader(opts, dataset, batch_size=4, num_workers=1,
                                     mode=poptorch.DataLoaderMode.Async,
                                     async_options={"buffer_size": 2})
        sync = poptorch.DataLoader(opts, dataset, batch_size=4)
        batches = 0
        for (x, y), (sx, sy) in zip(loader, sync):
            self.assertTrue(torch.equal(x, sx) and torch.equal(y, sy))
            wrapped(x, y)
            tt.pytorch_step(reference, ref_opt, x, y, accumulation=2)
            batches += 1
        self.assertEqual(batches, 8)
        loader.terminate()
        for k, v in model.state_dict().items():
            torch.testing.assert_close(v, reference.state_dict()[k], rtol=1e-4, atol=1e-6, msg=k)


if __name__ == "__main__":
    unittest.main()
