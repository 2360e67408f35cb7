"""PopTorch's ``poptorch.DataLoader``: a torch DataLoader whose batches are the combined batches one
call of a wrapped model takes (docs/poptorch.md, "Data").

One element is ``batch_size`` (the micro-batch) × ``deviceIterations`` × ``replicationFactor`` ×
``Training.gradientAccumulation`` samples, so ``for x, y in loader: model(x, y)`` feeds each call
what its options imply. ``drop_last`` defaults to True, as in PopTorch: a shorter last batch would
not fit the compiled model. The synchronous mode only: the asynchronous modes and the distributed
share of each instance are not built yet, and are refused saying so.
"""
import enum

import torch

from ._options import Options


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
        super().__init__(dataset, batch_size=self.combinedBatchSize, shuffle=shuffle,
                         num_workers=num_workers, drop_last=drop_last,
                         persistent_workers=persistent_workers, **kwargs)
