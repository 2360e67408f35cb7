"""PopTorch's block annotations: ``BeginBlock``, ``Block``, ``BlockFunction`` (docs/poptorch.md,
"Execution strategies").

A block is a part of the module's forward pass that runs on one IPU of a replica. PopTorch keeps
an "active block" while it traces: each annotation starts a block, every op traced after it belongs
to it, and the end of a ``with Block(...)`` leaves no block active (an op traced then is an error).
xtrain.torch captures with torch.onnx, whose tracer names every ONNX node after the stack of
tracing scopes open when the op ran (the module path: ``/encoder/layer.0/Gemm``). So while a
capture traces, each annotation that starts a block opens a scope of its own,
``__xtrain_block_<n>`` (n numbers the starts, in the order they happen), around what it covers:
the ``with`` body, the decorated function, the annotated module's call. Nodes come out of the
exporter in the order they were traced, so after the capture _placement.py walks them and recovers
each node's block from the scopes in its name. Outside a capture (the module on the CPU, or the
capture's untraced first call) the annotations do nothing, as PopTorch's.
"""
import contextlib
import functools
import re

import torch

_SCOPE = "__xtrain_block_"
SCOPE_PATTERN = re.compile(r"^%s(\d+)$" % _SCOPE)


class BlockStart:
    """One start of a block while tracing: its id, the IPU asked for, whether it ends (a context or
    decorated function: True; BeginBlock, which lasts until the next start: False), and what
    started it (for messages)."""

    def __init__(self, index, user_id, ipu_id, ends, where):
        self.index = index
        self.user_id = user_id
        self.ipu_id = ipu_id
        self.ends = ends
        self.where = where

    def describe(self):
        return "block '%s' (%s)" % (self.user_id, self.where)


class _Recording:
    """The block starts of one capture."""

    def __init__(self):
        self.starts = []
        self.next_auto_id = 0
        self.hook_ids = {}  # a BeginBlock hook without user_id: its automatic id in this capture

    def auto_id(self):
        user_id = str(self.next_auto_id)
        self.next_auto_id += 1
        return user_id

    def start(self, user_id, ipu_id, ends, where):
        """Records a start and opens its scope in the tracer; returns whether it did (only while
        torch.onnx traces)."""
        state = torch._C._get_tracing_state()
        if state is None:
            return False
        start = BlockStart(len(self.starts), user_id if user_id is not None else self.auto_id(),
                           ipu_id, ends, where)
        self.starts.append(start)
        state.push_scope("xtrain::%s%d" % (_SCOPE, start.index))
        return True


_recording = None


@contextlib.contextmanager
def recording():
    """Records the block starts of the capture run inside it."""
    global _recording
    previous, _recording = _recording, _Recording()
    try:
        yield _recording
    finally:
        _recording = previous


def _end_scope():
    torch._C._get_tracing_state().pop_scope()


def _check_ids(where, user_id, ipu_id):
    if user_id is not None and not isinstance(user_id, str):
        raise TypeError("%s: user_id must be a str (a block's name, as Stage takes them) or None, "
                        "got %r" % (where, user_id))
    if ipu_id is not None and (isinstance(ipu_id, bool) or not isinstance(ipu_id, int)
                               or ipu_id < 0):
        raise ValueError("%s: ipu_id must be an int >= 0 (an IPU of the replica) or None, got %r"
                         % (where, ipu_id))


class Block:
    """``with poptorch.Block(user_id=None, ipu_id=None):`` puts the ops traced inside on one block.
    Blocks with the same user_id are one block; without one, a block gets the next automatic id
    ("0", "1", ...; ``Block.useAutoId()`` restarts them)."""

    def __init__(self, user_id=None, ipu_id=None):
        _check_ids("poptorch.Block", user_id, ipu_id)
        self._user_id = user_id
        self._ipu_id = ipu_id
        self._opened = []
        self._where = "poptorch.Block"

    @staticmethod
    def useAutoId():
        """Restarts the automatic block ids at "0" (call it first in forward, as PopTorch)."""
        if _recording is not None:
            _recording.next_auto_id = 0

    @staticmethod
    def start(user_id=None, ipu_id=None):
        raise NotImplementedError(
            "poptorch.Block.start: a block started without a scope is not implemented in "
            "xtrain.torch (its capture finds blocks by the scopes they open); use "
            "`with poptorch.Block(...)`, BlockFunction or BeginBlock")

    def __enter__(self):
        opened = _recording is not None and _recording.start(
            self._user_id, self._ipu_id, True, self._where)
        self._opened.append(opened)
        return self

    def __exit__(self, *exc):
        if self._opened.pop():
            _end_scope()
        return False


def BlockFunction(user_id=None, ipu_id=None):  # noqa: N802 - PopTorch's name
    """A decorator: the function's ops (and those of what it calls) are one block."""
    _check_ids("poptorch.BlockFunction", user_id, ipu_id)

    def decorator(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            block = Block(user_id, ipu_id)
            block._where = "poptorch.BlockFunction(%s)" % function.__name__
            with block:
                return function(*args, **kwargs)
        return wrapper
    return decorator


class _BlockHook:
    """BeginBlock's forward pre-hook (the start) and forward hook (closing the scope)."""

    def __init__(self, module, user_id, ipu_id):
        self.user_id = user_id
        self.ipu_id = ipu_id
        self.where = "poptorch.BeginBlock(%s)" % type(module).__name__
        self.opened = []

    def before(self, module, inputs):
        user_id = self.user_id
        if _recording is not None and user_id is None:
            user_id = _recording.hook_ids.setdefault(id(self), _recording.auto_id())
        self.opened.append(_recording is not None and _recording.start(
            user_id, self.ipu_id, False, self.where))

    def after(self, module, inputs, outputs):
        if self.opened and self.opened.pop():
            _end_scope()

    def __repr__(self):
        return "BeginBlock(user_id=%r, ipu_id=%r)" % (self.user_id, self.ipu_id)


def _block_hooks(module):
    return [h for h in module._forward_pre_hooks.values()
            if getattr(h, "__self__", None).__class__ is _BlockHook]


def BeginBlock(layer_to_call, user_id=None, ipu_id=None):  # noqa: N802 - PopTorch's name
    """Starts a block at a module: the module's ops, and every op traced after it until the next
    block starts, are the block's (PopTorch's rule). Returns the module (annotated in place)."""
    _check_ids("poptorch.BeginBlock", user_id, ipu_id)
    if not isinstance(layer_to_call, torch.nn.Module):
        if callable(layer_to_call):
            return _BeginBlockFunction(layer_to_call, user_id, ipu_id)
        raise TypeError("poptorch.BeginBlock: expected a torch.nn.Module (or a function), got %s"
                        % type(layer_to_call).__name__)
    if _block_hooks(layer_to_call):
        raise ValueError("poptorch.BeginBlock: this %s has already been assigned to a block"
                         % type(layer_to_call).__name__)
    hook = _BlockHook(layer_to_call, user_id, ipu_id)
    layer_to_call.register_forward_pre_hook(hook.before)
    layer_to_call.register_forward_hook(hook.after)
    return layer_to_call


class _BeginBlockFunction:
    """BeginBlock of a function (PopTorch keeps this form for older code)."""

    def __init__(self, function, user_id, ipu_id):
        self._function = function
        self._hook = _BlockHook(function, user_id, ipu_id)
        self._hook.where = "poptorch.BeginBlock(%s)" % getattr(function, "__name__", "function")

    def __call__(self, *args, **kwargs):
        self._hook.before(None, args)
        try:
            return self._function(*args, **kwargs)
        finally:
            self._hook.after(None, args, None)


def removeBlocks(module):  # noqa: N802 - PopTorch's name
    """Removes the BeginBlock annotations of a module and its submodules."""
    for m in module.modules():
        for key, h in list(m._forward_pre_hooks.items()):
            owner = getattr(h, "__self__", None)
            if owner.__class__ is _BlockHook:
                del m._forward_pre_hooks[key]
                for k2, h2 in list(m._forward_hooks.items()):
                    if getattr(h2, "__self__", None) is owner:
                        del m._forward_hooks[k2]
