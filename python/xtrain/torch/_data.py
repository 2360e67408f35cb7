"""PopTorch's ``poptorch.DataLoader``: a torch DataLoader whose batches are the combined batches one
call of a wrapped model takes (docs/poptorch.md, "Data").

One element is ``batch_size`` (the micro-batch) × ``deviceIterations`` × ``replicationFactor`` ×
``Training.gradientAccumulation`` samples, so ``for x, y in loader: model(x, y)`` feeds each call
what its options imply. ``drop_last`` defaults to True, as in PopTorch: a shorter last batch would
not fit the compiled model. Under xrun with several instances, each instance reads its share of
every global batch. ``DataLoaderMode.Async`` loads in the background (_async_data.py);
``AsyncRebatched`` is not built yet and is refused saying so.
"""
import enum

import torch

from .. import dist as _dist
from ._async_data import AsynchronousDataAccessor
from ._options import Options


def _instance_share(dataset, combined):
    """This instance's samples under xrun: of each global batch (combined x instances samples,
    in order), the instance's contiguous slice, so the job's replicas see the global batch in
    replica order. A last global batch that is not whole is left out."""
    instances, index = _dist.getNumInstances(), _dist.getInstanceIndex()
    global_batch = combined * instances
    indices = []
    for start in range(0, len(dataset) - global_batch + 1, global_batch):
        first = start + index * combined
        indices.extend(range(first, first + combined))
    return torch.utils.data.Subset(dataset, indices)


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
        if mode == DataLoaderMode.AsyncRebatched or rebatched_worker_size is not None:
            raise NotImplementedError("DataLoader: DataLoaderMode.AsyncRebatched (and "
                                      "rebatched_worker_size) is not implemented in xtrain.torch "
                                      "yet; Sync and Async are")
        if not isinstance(mode, DataLoaderMode):
            raise TypeError("DataLoader: mode must be a poptorch.DataLoaderMode, got %r" % (mode,))
        if async_options is not None and mode != DataLoaderMode.Async:
            raise ValueError("DataLoader: async_options apply to DataLoaderMode.Async only")
        self._async_options = dict(async_options or {}) if mode == DataLoaderMode.Async else None
        self._accessor = None
        self.options = options
        # PopTorch's combined batch: the micro-batches of one training call (replicas in one
        # input group, Options.inputReplicaGrouping, share theirs).
        self.combinedBatchSize = batch_size * options.batches_per_call(True)
        if persistent_workers is None:
            persistent_workers = num_workers > 0
        if auto_distributed_partitioning and _dist.isDistributed():
            if shuffle:
                raise NotImplementedError(
                    "DataLoader: shuffle=True under xrun with more than one instance is not "
                    "implemented yet (every instance would need the same permutation)")
            dataset = _instance_share(dataset, self.combinedBatchSize)
        super().__init__(dataset, batch_size=self.combinedBatchSize, shuffle=shuffle,
                         num_workers=num_workers, drop_last=drop_last,
                         persistent_workers=persistent_workers, **kwargs)

    def __iter__(self):
        if self._async_options is None:
            return super().__iter__()
        if self._accessor is None:  # one background loader, kept across epochs
            self._accessor = AsynchronousDataAccessor(_Batches(self), **self._async_options)
        return iter(self._accessor)

    def terminate(self):
        """Stops the background loading of DataLoaderMode.Async (PopTorch's name)."""
        if self._accessor is not None:
            self._accessor.terminate()


class _Batches:
    """The loader's own synchronous batches, for the background thread to iterate."""

    def __init__(self, loader):
        self._loader = loader

    def __iter__(self):
        return torch.utils.data.DataLoader.__iter__(self._loader)

    def __len__(self):
        return torch.utils.data.DataLoader.__len__(self._loader)
