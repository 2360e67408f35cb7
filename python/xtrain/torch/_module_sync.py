"""Lazy copies of trained weights into a wrapped module (docs/poptorch.md, "Weights in sync").

After a training call the device holds newer weights than the module. Copying them back after every
call costs a weightsToHost per step (a quarter of the reference MLP's step); PopTorch instead copies
when the module's state is next read. This module does the same:

- ``mark_stale(model, pending)`` records that ``pending`` (an executor's
  _device_weights.DeviceWeights) holds weights newer than ``model``'s.
- Every module of a wrapped model gets a class derived from its own (``watch``), same name, same
  behaviour, whose entry points that read or write parameters and buffers first call ``flush``:
  attribute access to a parameter, buffer or submodule (``model.fc.weight``, and so ``forward`` on
  the CPU), ``state_dict``, ``load_state_dict``, ``parameters``/``named_parameters``,
  ``buffers``/``named_buffers``, ``_apply`` (``.to``,
  ``.half``, ``.float``), setting an attribute, and pickling (``torch.save(model)``, ``deepcopy``,
  which get the original class back).
- Another executor of the same module, of a module inside it or of one around it flushes before
  it runs (``flush_overlapping``).

Inside ``quiet()`` the hooks do nothing: the executors read the module's tensors themselves (to
compare version counters, or to write into them) without triggering a copy.

A tensor reference taken before a training call (``w = model.fc.weight``) is not an entry point:
reading it later shows the old values until something above flushes, as in PopTorch.
"""
import contextlib
import copyreg
import weakref

# model -> the pending copy (_device_weights.DeviceWeights) whose device holds weights newer than
# the model's tensors. The value must not hold the model (a weak key held by its value would never
# be dropped): it holds the session, not the executor.
_stale = weakref.WeakKeyDictionary()
# any watched module -> the wrapped models it belongs to.
_roots = weakref.WeakKeyDictionary()
# original class -> its watched subclass.
_watched_classes = {}
_quiet_depth = [0]


@contextlib.contextmanager
def quiet():
    """The hooks do nothing inside: the executor's own reads and writes of the module."""
    _quiet_depth[0] += 1
    try:
        yield
    finally:
        _quiet_depth[0] -= 1


def mark_stale(model, pending):
    _stale[model] = pending


def clear(model, pending):
    """pending's newer weights reached the module (or it released them)."""
    if _stale.get(model) is pending:
        del _stale[model]


def pending_copy(model):
    return _stale.get(model)


def flush(model):
    """Copies the pending trained weights, if any, into ``model``. The marker stays if the copy
    fails, so that a later read tries again rather than losing them."""
    pending = _stale.get(model)
    if pending is not None:
        pending.pending_flush(model)


def flush_overlapping(model, skip=None):
    """Flushes every wrapped model that shares a module with ``model`` (itself, one around it or
    one inside it) and has pending weights, except the pending copy ``skip``."""
    if not _stale:
        return
    roots = set()
    for module in model.modules():
        roots.update(_roots.get(module, ()))
    for root in roots:
        pending = _stale.get(root)
        if pending is not None and pending is not skip:
            with quiet():
                flush(root)


def _flush_for(module):
    if not _stale or _quiet_depth[0]:
        return
    roots = _roots.get(module)
    if roots is None:
        return
    for root in list(roots):
        if root in _stale:
            with quiet():
                flush(root)


_READERS = ("state_dict", "load_state_dict", "parameters", "named_parameters", "buffers",
            "named_buffers", "_apply", "__setattr__", "__delattr__")


def _watched_class(cls):
    watched = _watched_classes.get(cls)
    if watched is not None:
        return watched

    def __getattr__(self, name):
        # nn.Module.__getattr__ runs only for parameters, buffers and submodules (and misses).
        _flush_for(self)
        return cls.__getattr__(self, name)

    def __reduce_ex__(self, protocol):
        _flush_for(self)
        reduced = cls.__reduce_ex__(self, protocol)
        if reduced[0] is not copyreg.__newobj__ or reduced[1][:1] != (watched,):
            return reduced
        # Pickles and deep copies name the original class, which can be imported without
        # xtrain (pickle's __newobj__ insists on the instance's own class: the older form).
        return (copyreg._reconstructor, (cls, object, None)) + tuple(reduced[2:])

    namespace = {"__getattr__": __getattr__, "__reduce_ex__": __reduce_ex__,
                 "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                 "__doc__": cls.__doc__}
    for name in _READERS:
        namespace[name] = _reader(cls, name)
    watched = type(cls.__name__, (cls,), namespace)
    watched._xtrain_original_class = cls
    _watched_classes[cls] = watched
    return watched


def _reader(cls, name):
    original = getattr(cls, name)

    def method(self, *args, **kwargs):
        _flush_for(self)
        return original(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = original.__doc__
    return method


def watch(model):
    """Gives every module of ``model`` the flushing class (once), and records ``model`` as a root
    of each, so that reading any of them copies ``model``'s pending weights."""
    with quiet():
        for module in model.modules():
            cls = type(module)
            if getattr(cls, "_xtrain_original_class", None) is None:
                try:
                    module.__class__ = _watched_class(cls)
                except TypeError as e:  # a class whose layout forbids it (TorchScript, slots)
                    raise NotImplementedError(
                        "xtrain.torch cannot wrap %s: its submodule of class %s cannot take the "
                        "class that keeps its weights in sync (%s)"
                        % (type(model).__name__, cls.__name__, e)) from e
            roots = _roots.get(module)
            if roots is None:
                roots = _roots[module] = weakref.WeakSet()
            roots.add(model)
