"""PopTorch's ``MultiConv``: a hint that the convolutions run inside the ``with`` block be planned
together as one multi-convolution (docs/poptorch.md, "MultiConv").

Its options choose how Poplar plans the convolutions on the tiles; a simulated IPU has no such
planner, so they are checked the way PopTorch checks them and then have no effect, and each
convolution computes what it computes outside the block (PopTorch's results are those of the
separate convolutions too). ``partialsTypes(torch.half)`` is refused, as
``Options.Precision.setPartialsType(torch.half)`` is: xtrain accumulates in float32.
"""
import contextlib
import enum
import threading

import torch
import torch.nn.functional as F

_CONVOLUTIONS = ("conv1d", "conv2d", "conv3d")
_active = threading.local()


class MultiConvPlanType(enum.IntEnum):
    """PopTorch's plan types: the convolutions planned to run in parallel or one after another."""
    Parallel = 0
    Serial = 1


def _per_conv(method, value, scalar_types, what):
    """PopTorch's rule for a per-convolution option: one value (for every convolution) or a
    non-empty list or tuple of them (one per convolution); None unsets it."""
    if value is None:
        return None
    if isinstance(value, scalar_types):
        return (value,)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, scalar_types)
                                                          for v in value):
        return tuple(value)
    raise AssertionError("MultiConv.%s: expected %s, or a non-empty list or tuple of them (one per "
                         "convolution), got %r" % (method, what, value))


class MultiConv:
    """``with poptorch.MultiConv().planType(poptorch.MultiConvPlanType.Parallel): ...``"""

    def __init__(self):
        self._available_memory_proportions = None
        self._partials_types = None
        self._plan_type = None
        self._per_conv_reserved_tiles = None
        self._cycle_back_off = None
        self._enable_conv_dithering = None
        self._convolutions = 0

    def availableMemoryProportions(self, value):
        """The proportion of tile memory each convolution may use: in (0, 1]. No effect."""
        value = _per_conv("availableMemoryProportions", value, (float,), "a float in (0, 1]")
        for v in value or ():
            if not 0.0 < v <= 1.0:
                raise AssertionError("MultiConv.availableMemoryProportions: each proportion must "
                                     "be in (0, 1], got %r" % (v,))
        self._available_memory_proportions = value
        return self

    def partialsTypes(self, value):
        """torch.float: what xtrain does; torch.half is refused (no half partials)."""
        value = _per_conv("partialsTypes", value, (torch.dtype,), "torch.float or torch.half")
        for v in value or ():
            if v == torch.half:
                raise NotImplementedError("MultiConv.partialsTypes(torch.half): half-precision "
                                          "partials are not implemented in xtrain (convolutions "
                                          "accumulate in float32)")
            if v != torch.float:
                raise AssertionError("MultiConv.partialsTypes: expected torch.float or "
                                     "torch.half, got %r" % (v,))
        self._partials_types = value
        return self

    def enableConvDithering(self, value):
        """Whether each convolution's tile placement is dithered. No effect."""
        self._enable_conv_dithering = _per_conv("enableConvDithering", value, (bool,), "a bool")
        return self

    def planType(self, value):
        """MultiConvPlanType.Parallel or Serial. No effect."""
        if value is not None and not isinstance(value, MultiConvPlanType):
            raise AssertionError("MultiConv.planType: expected a poptorch.MultiConvPlanType, got "
                                 "%r" % (value,))
        self._plan_type = value
        return self

    def perConvReservedTiles(self, value):
        """Tiles kept back from each convolution's plan: an int >= 0. No effect."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise AssertionError("MultiConv.perConvReservedTiles: expected an int >= 0, got %r"
                                 % (value,))
        self._per_conv_reserved_tiles = value
        return self

    def cycleBackOff(self, value):
        """The proportion of cycles the planner may give up for memory: a float in [0, 1].
        No effect."""
        if not isinstance(value, float) or not 0.0 <= value <= 1.0:
            raise AssertionError("MultiConv.cycleBackOff: expected a float in [0, 1], got %r"
                                 % (value,))
        self._cycle_back_off = value
        return self

    def __enter__(self):
        if getattr(_active, "block", None) is not None:
            raise RuntimeError("poptorch.MultiConv blocks cannot be nested")
        _active.block = self
        self._convolutions = 0
        self._patch = contextlib.ExitStack()
        for name in _CONVOLUTIONS:
            self._patch.enter_context(_counting(name, self))
        return self

    def __exit__(self, exc_type, exc, traceback):
        self._patch.close()
        _active.block = None
        if exc_type is None:
            self._check_lengths()
        return False

    def _check_lengths(self):
        """As PopTorch: a per-convolution option given as a list needs one value per
        convolution of the block."""
        for method, values in (("availableMemoryProportions", self._available_memory_proportions),
                               ("partialsTypes", self._partials_types),
                               ("enableConvDithering", self._enable_conv_dithering)):
            if values is not None and len(values) > 1 and len(values) != self._convolutions:
                raise ValueError("MultiConv.%s has %d values but the block ran %d convolutions: "
                                 "give one value, or one per convolution"
                                 % (method, len(values), self._convolutions))


@contextlib.contextmanager
def _counting(name, block):
    """F.<name> counting its calls into the block (nn.Conv*d call F.conv*d at each forward)."""
    original = getattr(F, name)

    def counted(*args, **kwargs):
        block._convolutions += 1
        return original(*args, **kwargs)

    setattr(F, name, counted)
    try:
        yield
    finally:
        setattr(F, name, original)
