"""PopTorch's ``poptorch.DataLoader``: a torch DataLoader whose batches are the combined batches one
call of a wrapped model takes (docs/poptorch.md, "Data").

One element is ``batch_size`` (the micro-batch) × ``deviceIterations`` × ``replicationFactor`` ×
``Training.gradientAccumulation`` samples, so ``for x, y in loader: model(x, y)`` feeds each call
what its options imply. ``drop_last`` defaults to True, as in PopTorch: a shorter last batch would
not fit the compiled model. Under xrun with several instances, each instance reads its share of
every global batch (with ``shuffle``, of a permutation all instances draw alike each epoch:
``_InstanceShare``). ``DataLoaderMode.Async`` loads in the background (_async_data.py);
``AsyncRebatched`` does too, its workers loading batches of ``rebatched_worker_size`` samples
(the combined batch by default) that the background thread joins into combined batches
(_rebatch.py), the last incomplete one kept or dropped as ``drop_last`` says.
"""
import enum
import hashlib

import torch

from .. import dist as _dist
from ._async_data import AsynchronousDataAccessor
from ._options import Options


class _InstanceShare(torch.utils.data.Sampler):
    """This instance's samples under xrun: of each global batch (combined x instances samples),
    the instance's contiguous slice, so the job's replicas see the global batch in replica order.
    A last global batch that is not whole is left out. With a seed, each epoch (each iteration)
    first draws a permutation of the whole dataset from a generator every instance seeds alike,
    so the instances' shares of an epoch are disjoint and together cover the permutation's
    whole global batches."""

    def __init__(self, length, combined, seed):
        super().__init__(None)
        self._length = length
        self._combined = combined
        self._instances, self._index = _dist.getNumInstances(), _dist.getInstanceIndex()
        self._generator = None
        if seed is not None:
            self._generator = torch.Generator()
            self._generator.manual_seed(seed)

    def __len__(self):
        return self._length // (self._combined * self._instances) * self._combined

    def __iter__(self):
        order = range(self._length)
        if self._generator is not None:  # the generator moves on: a new order every epoch
            order = torch.randperm(self._length, generator=self._generator).tolist()
        global_batch = self._combined * self._instances
        for start in range(0, self._length - global_batch + 1, global_batch):
            first = start + self._index * self._combined
            yield from order[first:first + self._combined]


def _shared_seed(options):
    """The seed every instance shuffles with: Options.randomSeed, else one drawn from the job's id
    (xtrain.dist.getJobId(): the same in every instance of one job, new for each job)."""
    if options.random_seed is not None:
        return options.random_seed
    if not _dist.isPopdistEnvSet():
        raise ValueError("DataLoader: shuffle=True with several instances needs a seed every "
                         "instance shares: set Options.randomSeed(...) (no launcher started this "
                         "process, so there is no job id to draw one from)")
    job = _dist.getJobId()
    return int.from_bytes(hashlib.sha256(job.encode()).digest()[:8], "little") >> 1


class DataLoaderMode(enum.IntEnum):
    """How the loader runs (PopTorch's ``DataLoaderMode``)."""
    Sync = 0
    Async = 1
    AsyncRebatched = 2


class DataLoader(torch.utils.data.DataLoader):
    """Batches of ``batch_size`` × the options' micro-batches per call."""

    def __init__(self, options, dataset, batch_size=1, shuffle=False, num_workers=0,
                 drop_last=True, persistent_workers=None, auto_distributed_partitioning=True,
                 mode=DataLoaderMode.Sync, async_options=None, rebatched_worker_size=None,
                 **kwargs):
        if not isinstance(options, Options):
            raise TypeError("DataLoader: options must be an xtrain.torch.Options, got %s"
                            % type(options).__name__)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError("DataLoader: batch_size (the micro-batch size) must be a positive int, "
                             "got %r" % (batch_size,))
        if not isinstance(mode, DataLoaderMode):
            raise TypeError("DataLoader: mode must be a poptorch.DataLoaderMode, got %r" % (mode,))
        if async_options is not None and mode == DataLoaderMode.Sync:
            raise ValueError("DataLoader: async_options apply to DataLoaderMode.Async and "
                             "AsyncRebatched only")
        if "rebatched_size" in (async_options or {}):
            raise ValueError("DataLoader: async_options cannot set rebatched_size (as in "
                             "PopTorch): DataLoaderMode.AsyncRebatched rebatches to the "
                             "combined batch")
        if rebatched_worker_size is not None and mode != DataLoaderMode.AsyncRebatched:
            raise ValueError("DataLoader: rebatched_worker_size applies to "
                             "DataLoaderMode.AsyncRebatched only, the mode is %s" % mode.name)
        self._async_options = None if mode == DataLoaderMode.Sync else dict(async_options or {})
        self._accessor = None
        self.options = options
        # PopTorch's combined batch: the micro-batches of one training call (replicas in one
        # input group, Options.inputReplicaGrouping, share theirs).
        self.combinedBatchSize = batch_size * options.batches_per_call(True)
        worker_batch = self.combinedBatchSize
        self._rebatched_drop_last = None  # AsyncRebatched: whether the last short batch goes
        if mode == DataLoaderMode.AsyncRebatched:
            worker_batch = self._worker_batch(rebatched_worker_size)
            # The workers keep their last short batch: the rebatching decides.
            self._rebatched_drop_last, drop_last = drop_last, False
        if persistent_workers is None:
            persistent_workers = num_workers > 0
        if auto_distributed_partitioning and _dist.isDistributed():
            if "sampler" in kwargs or "batch_sampler" in kwargs:
                raise ValueError("DataLoader: a sampler of your own under xrun needs "
                                 "auto_distributed_partitioning=False (the loader samples each "
                                 "instance's share itself)")
            kwargs["sampler"] = _InstanceShare(
                len(dataset), self.combinedBatchSize, _shared_seed(options) if shuffle else None)
            shuffle = False  # the share's sampler shuffles
        super().__init__(dataset, batch_size=worker_batch, shuffle=shuffle,
                         num_workers=num_workers, drop_last=drop_last,
                         persistent_workers=persistent_workers, **kwargs)

    def _worker_batch(self, rebatched_worker_size):
        """The workers' batch size under AsyncRebatched (PopTorch's bound: at most the combined
        batch; any size up to it works, rows carried across combined batches)."""
        if rebatched_worker_size is None:
            return self.combinedBatchSize
        if isinstance(rebatched_worker_size, bool) or not isinstance(rebatched_worker_size, int) \
                or not 1 <= rebatched_worker_size <= self.combinedBatchSize:
            raise ValueError("DataLoader: rebatched_worker_size must be an int in [1, %d] (the "
                             "combined batch size), got %r"
                             % (self.combinedBatchSize, rebatched_worker_size))
        return rebatched_worker_size

    def __len__(self):
        if self._rebatched_drop_last is None:
            return super().__len__()
        samples = len(self.sampler)
        whole, rest = divmod(samples, self.combinedBatchSize)
        return whole + (1 if rest and not self._rebatched_drop_last else 0)

    def __iter__(self):
        if self._async_options is None:
            return super().__iter__()
        if self._accessor is None:  # one background loader, kept across epochs
            rebatched = self.combinedBatchSize if self._rebatched_drop_last is not None else None
            self._accessor = AsynchronousDataAccessor(_Batches(self), **self._async_options,
                                                      rebatched_size=rebatched)
        return iter(self._accessor)

    def terminate(self):
        """Stops the background loading of DataLoaderMode.Async (PopTorch's name)."""
        if self._accessor is not None:
            self._accessor.terminate()


class _Batches:
    """The loader's own synchronous batches, for the background thread to iterate."""

    def __init__(self, loader):
        self._loader = loader
        self.rebatched_drop_last = loader._rebatched_drop_last
        self.rebatched_length = len(loader) if self.rebatched_drop_last is not None else None

    def __iter__(self):
        return torch.utils.data.DataLoader.__iter__(self._loader)

    def __len__(self):
        return torch.utils.data.DataLoader.__len__(self._loader)
