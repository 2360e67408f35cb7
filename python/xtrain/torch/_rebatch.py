"""Rebatching for PopTorch's ``DataLoaderMode.AsyncRebatched`` and ``AsynchronousDataAccessor``'s
``rebatched_size`` (docs/poptorch.md, "Data").

The loader's workers make batches of one size (``rebatched_worker_size``); these are joined along
the first dimension and cut into batches of another (the combined batch), the rows that do not fit
carried into the next batch, so the rows come in the order the workers made them. The last batch,
shorter than the combined batch, is kept or dropped as the loader's ``drop_last`` says.
"""
import torch


def _flatten(batch):
    """(layout, tensors) of one batch: a tensor, a tuple or list of tensors, or a dict of them."""
    if isinstance(batch, torch.Tensor):
        return ("tensor",), (batch,)
    if isinstance(batch, dict):
        return ("dict", tuple(batch)), tuple(batch.values())
    if isinstance(batch, (tuple, list)):
        return (type(batch), len(batch)), tuple(batch)
    raise TypeError("rebatching: a batch must be a tensor or a tuple, list or dict of tensors, "
                    "got %s" % type(batch).__name__)


def _unflatten(layout, tensors):
    if layout[0] == "tensor":
        return tensors[0]
    if layout[0] == "dict":
        return dict(zip(layout[1], tensors))
    kind = layout[0]
    if hasattr(kind, "_fields"):  # a namedtuple keeps its type
        return kind(*tensors)
    return list(tensors) if issubclass(kind, list) else tuple(tensors)


def _rows(tensors):
    """The batch's number of rows: the first dimension every tensor shares."""
    rows = set()
    for k, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor) or t.dim() == 0:
            raise TypeError("rebatching: element %d of a batch is %s, expected a tensor with a "
                            "batch dimension" % (k, type(t).__name__ if not isinstance(
                                t, torch.Tensor) else "a 0-d tensor"))
        rows.add(t.shape[0])
    if len(rows) != 1:
        raise ValueError("rebatching: the tensors of a batch have different first dimensions %s"
                         % sorted(rows))
    return rows.pop()


def rebatch(batches, size, drop_last):
    """Yields the rows of ``batches`` in batches of ``size`` rows (and a last shorter one unless
    ``drop_last``)."""
    layout, pending, held = None, [], 0  # pending: the tensors of batches not yet given out
    for batch in batches:
        this_layout, tensors = _flatten(batch)
        if layout is None:
            layout = this_layout
        elif this_layout != layout:
            raise ValueError("rebatching: a batch of layout %s after batches of layout %s"
                             % (this_layout, layout))
        held += _rows(tensors)
        pending.append(tensors)
        while held >= size:
            joined = [torch.cat(parts) for parts in zip(*pending)]
            yield _unflatten(layout, [t[:size] for t in joined])
            held -= size
            pending = [tuple(t[size:] for t in joined)] if held else []
    if held and not drop_last:
        yield _unflatten(layout, [torch.cat(parts) for parts in zip(*pending)])


class Rebatched:
    """An iterable of the rebatched batches of ``source``. ``source`` may say how to end
    (``rebatched_drop_last``, PopTorch's attribute; True otherwise) and how many batches an epoch
    has (``rebatched_length``; otherwise its length × its ``batch_size`` rows, or without one
    × the rows of its first batch, as if every batch had as many)."""

    def __init__(self, source, size):
        self._source = source
        self._size = size
        self._drop_last = getattr(source, "rebatched_drop_last", True)

    def __iter__(self):
        return rebatch(self._source, self._size, self._drop_last)

    def __len__(self):
        length = getattr(self._source, "rebatched_length", None)
        if length is not None:
            return length
        per_batch = getattr(self._source, "batch_size", None)
        if per_batch is None:
            first = next(iter(self._source), None)
            per_batch = 0 if first is None else _rows(_flatten(first)[1])
        rows = len(self._source) * per_batch
        return rows // self._size + (0 if self._drop_last or rows % self._size == 0 else 1)
