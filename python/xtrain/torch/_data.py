"""PopTorch's ``poptorch.DataLoader``: a torch DataLoader whose batches are the combined batches one
call of a wrapped model takes (docs/poptorch.md, "Data").

One element is ``batch_size`` (the micro-batch) × ``deviceIterations`` × ``replicationFactor`` ×
``Training.gradientAccumulation`` samples, so ``for x, y in loader: model(x, y)`` feeds each call
what its options imply. ``drop_last`` defaults to True, as in PopTorch: a shorter last batch would
not fit the compiled model. Under xrun with several instances, each instance reads its share of
every global batch. The synchronous mode only: the asynchronous modes are not built yet, and are
refused saying so.
"""
import enum

import torch

from .. import dist as _dist
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
        if mode != DataLoaderMode.Sync or async_options is not None or \
                rebatched_worker_size is not None:
            raise NotImplementedError("DataLoader: only DataLoaderMode.Sync is implemented in "
                                      "xtrain.torch yet (asynchronous loading is not built)")
        self.options = options
        self.combinedBatchSize = batch_size * options.device_iterations * \
            options.replication_factor * options.Training.gradient_accumulation
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
