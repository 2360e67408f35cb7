"""PopTorch's ``AsynchronousDataAccessor`` and ``DataLoaderMode.Async`` (docs/poptorch.md, "Data").

A background thread iterates the data loader and keeps up to ``buffer_size`` batches ready, so
loading the next batches overlaps the step: the session's ``run`` releases the GIL while the device
computes. PopTorch runs the loader in a separate process and hands tensors over shared memory; a
thread needs neither (the loader's own ``num_workers`` processes still do the per-sample work in
parallel), so ``sharing_strategy`` has no effect here. Batches come in the loader's order; an error
in the loader is raised in the consumer, at the batch where it happened. With ``rebatched_size``
the thread joins the loader's batches and cuts them into batches of that many rows (_rebatch.py),
as PopTorch's worker does.
"""
import queue
import threading

from ._rebatch import Rebatched

_END = object()


class _Failure:
    def __init__(self, error):
        self.error = error


class AsynchronousDataAccessor:
    """Iterates ``dataset`` (a DataLoader or any iterable of batches) in a background thread."""

    def __init__(self, dataset, buffer_size=3, miss_sleep_time_in_ms=0.1, load_indefinitely=True,
                 early_preload=False, sharing_strategy=None, rebatched_size=None):
        if rebatched_size is not None and (isinstance(rebatched_size, bool) or not isinstance(
                rebatched_size, int) or rebatched_size < 2):
            # PopTorch's bound: a size of 1 would be the loader's own rows one at a time.
            raise ValueError("AsynchronousDataAccessor: rebatched_size must be None or an int "
                             "greater than 1, got %r" % (rebatched_size,))
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 1:
            raise ValueError("AsynchronousDataAccessor: buffer_size must be a positive int, got %r"
                             % (buffer_size,))
        self.rebatched_size = rebatched_size
        self._dataset = dataset if rebatched_size is None else Rebatched(dataset, rebatched_size)
        self._buffer_size = buffer_size
        self._load_indefinitely = load_indefinitely
        self._epoch = None  # (queue, thread, stop event) of the epoch being loaded
        if early_preload:
            self._start_epoch()

    def __len__(self):
        return len(self._dataset)

    def _start_epoch(self):
        batches = queue.Queue(maxsize=self._buffer_size)
        stop = threading.Event()

        def load():
            try:
                for batch in self._dataset:
                    if not self._put(batches, batch, stop):
                        return
                self._put(batches, _END, stop)
            except BaseException as e:  # handed to the consumer
                self._put(batches, _Failure(e), stop)

        thread = threading.Thread(target=load, name="xtrain.torch AsynchronousDataAccessor",
                                  daemon=True)
        thread.start()
        self._epoch = (batches, thread, stop)

    @staticmethod
    def _put(batches, item, stop):
        while not stop.is_set():
            try:
                batches.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self):
        if self._epoch is None:
            self._start_epoch()
        batches, _, stop = self._epoch
        self._epoch = None
        finished = False
        try:
            while True:
                item = batches.get()
                if item is _END:
                    finished = True
                    break
                if isinstance(item, _Failure):
                    raise item.error
                yield item
        finally:
            if not finished:
                stop.set()  # the caller stopped early, or the loader failed: stop loading
        if self._load_indefinitely:
            self._start_epoch()  # the next epoch loads while the caller finishes this one

    def terminate(self):
        """Stops the background loading (the thread ends at its next batch)."""
        if self._epoch is not None:
            _, thread, stop = self._epoch
            stop.set()
            thread.join()
            self._epoch = None

    def __del__(self):
        try:
            self.terminate()
        except Exception:  # interpreter shutdown
            pass
