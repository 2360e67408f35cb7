"""Float16 modules and inputs in the capture (docs/poptorch.md, "Float16").

torch.onnx traces ``forward`` by running it, and PyTorch 1.13 has no CPU kernels for most float16
operations (``addmm``, convolutions, softmax, tanh, ...). The trace records each operation, with
the dtypes of its tensors, at the tracer's dispatch key, before the kernel runs; so the capture
supplies the missing kernels below the tracer and the graph gets the module's own float16 types:

- ``_Float32Kernels`` (a TorchDispatchMode, below the tracer): an operation that has no float16 CPU
  kernel runs on float32 copies of its float16 tensors and its results are rounded back to
  float16. Only values the trace computes go through it; the tracer has already written the
  operation, with float16 tensors, and the device computes it (in float16, as xtrain does: each
  kernel computes in float32 and rounds once, docs/architecture.md).
- ``_MixedUpcast`` (a TorchFunctionMode, above the tracer): an operation whose floating-point
  tensors mix float16 and float32 computes in float32, the rule of PopTorch 3 (its chapter 4.7,
  "PopTorch complies with this convention") and of PyTorch's elementwise promotion: its float16
  tensors are cast to float32 first, and the trace records those casts. PyTorch refuses such a mix
  in matmuls, convolutions and normalisations; PopTorch, and so xtrain.torch, upcasts there too.
  As in PyTorch, a 0-d tensor does not promote a dimensioned one (``x_half * torch.tensor(2.0)``
  stays float16), and BatchNorm's running statistics do not count (a float16 BatchNorm may keep
  float32 statistics, PopTorch's replacement for ``runningStatisticsAlwaysFloat``).

bfloat16 is refused: xtrain has no BFLOAT16 kernels (docs/python.md).
"""
import contextlib
import functools

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

_HALF, _FLOAT = torch.float16, torch.float32

# Functions that convert, copy into or take only the shape of another tensor: their dtypes are the
# caller's choice, not a promotion.
_NOT_PROMOTED = {"to", "type", "type_as", "copy_", "__setitem__", "view_as", "expand_as",
                 "reshape_as", "new_tensor", "new_zeros", "new_ones", "new_full", "new_empty",
                 "set_", "__get__", "__set__"}


def uses_half(model, values):
    """Whether the module's state or the inputs hold float16 tensors (the capture then needs the
    modes below); refuses bfloat16, naming the tensor."""
    half = False
    named = list(model.state_dict().items()) + [("input '%s'" % i, v) for i, v in values]
    for name, tensor in named:
        if not isinstance(tensor, torch.Tensor):
            continue
        if tensor.dtype == torch.bfloat16:
            raise NotImplementedError(
                "%s's %s is bfloat16: xtrain has no BFLOAT16 kernels; use float16 (.half()) or "
                "float32 (.float())" % (type(model).__name__,
                                        name if name.startswith("input") else "tensor '%s'" % name))
        half = half or tensor.dtype == _HALF
    return half


@contextlib.contextmanager
def forward_in_modes(model):
    """The module's forward, while the block runs, computes under PopTorch's mixed-precision rule
    (above the tracer) with float32 kernels for float16 (below it). Only forward: the exporter's
    own graph passes, which call ATen operations on the graph's constants, run outside them."""
    forward = model.forward
    had_own = "forward" in model.__dict__
    previous = model.__dict__.get("forward")

    @functools.wraps(forward)
    def forward_with_kernels(*args, **kwargs):
        with _MixedUpcast(), _Float32Kernels():
            return forward(*args, **kwargs)
    model.__dict__["forward"] = forward_with_kernels
    try:
        yield
    finally:
        if had_own:
            model.__dict__["forward"] = previous
        else:
            del model.__dict__["forward"]


def _floats(tree):
    return [t for t in tree_flatten(tree)[0]
            if isinstance(t, torch.Tensor) and t.is_floating_point()]


def _batch_norm_statistics(func, args, kwargs):
    """The running statistics of a batch_norm call (they do not take part in the promotion)."""
    if func is not torch.nn.functional.batch_norm:
        return ()
    stats = list(args[1:3]) + [kwargs.get("running_mean"), kwargs.get("running_var")]
    return {id(t) for t in stats if isinstance(t, torch.Tensor)}


class _MixedUpcast(TorchFunctionMode):
    """Float16 tensors of an operation that also has float32 ones are cast to float32 first; a
    float16 convolution is traced as the operation the tracer records (_traced_convolution)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        args, kwargs = _promoted(func, args, kwargs)
        if func in _CONVOLUTIONS and any(t.dtype == _HALF for t in _floats((args, kwargs))):
            return _traced_convolution(func, *args, **kwargs)
        return func(*args, **kwargs)


def _promoted(func, args, kwargs):
    """The arguments with float16 tensors cast to float32 when float32 ones are there too."""
    name = getattr(func, "__name__", "")
    if name in _NOT_PROMOTED or name.endswith("_") and not name.endswith("__"):
        return args, kwargs  # conversions, and in-place ops keep self's dtype
    skip = _batch_norm_statistics(func, args, kwargs)
    floats = [t for t in _floats((args, kwargs)) if id(t) not in skip]
    ranked = [t for t in floats if t.dim() > 0] or floats  # 0-d ones only among 0-d ones
    if not {t.dtype for t in ranked} >= {_HALF, _FLOAT}:
        return args, kwargs

    def up(t):
        if isinstance(t, torch.Tensor) and t.dtype == _HALF and id(t) not in skip:
            return t.float()
        return t
    return tree_map(up, args), tree_map(up, kwargs)


_F = torch.nn.functional
# function -> (spatial dimensions, transposed)
_CONVOLUTIONS = {_F.conv1d: (1, False), _F.conv2d: (2, False), _F.conv3d: (3, False),
                 _F.conv_transpose1d: (1, True), _F.conv_transpose2d: (2, True),
                 _F.conv_transpose3d: (3, True)}


def _traced_convolution(func, input, weight, bias=None, stride=1, padding=0, *rest, **kwargs):
    """A float16 convolution as ``torch._convolution``, the operation torch.onnx records for
    every convolution: the tracer does not record conv2d or convolution themselves, so their
    kernel (_Float32Kernels' float32 one) would be traced instead, in float32."""
    dims, transposed = _CONVOLUTIONS[func]
    names = ("output_padding", "groups", "dilation") if transposed else ("dilation", "groups")
    values = dict(zip(names, rest))
    values.update(kwargs)
    if isinstance(padding, str):
        raise NotImplementedError(
            "%s with padding=%r on float16 tensors: xtrain.torch captures float16 convolutions "
            "with explicit padding only; give the padding as numbers" % (func.__name__, padding))

    def per_dim(value):
        return list(value) if isinstance(value, (tuple, list)) else [value] * dims
    return torch._convolution(
        input, weight, bias, per_dim(stride), per_dim(padding), per_dim(values.get("dilation", 1)),
        transposed, per_dim(values.get("output_padding", 0)), values.get("groups", 1),
        False, False, True, True)


class _Float32Kernels(TorchDispatchMode):
    """An ATen operation without a float16 CPU kernel runs in float32, its results rounded back."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            return func(*args, **kwargs)
        except (RuntimeError, NotImplementedError) as e:
            dtypes = {t.dtype for t in _floats((args, kwargs))}
            if _HALF not in dtypes or "Half" not in str(e) and "same" not in str(e) and \
                    "dtype" not in str(e) and "scalar type" not in str(e):
                raise
        if torch._C._get_tracing_state() is not None:
            # An operation the tracer does not record itself (as conv2d): its float32 kernel
            # would be traced in its place, and the graph would compute in float32.
            raise NotImplementedError(
                "capturing %s on float16 tensors is not implemented in xtrain.torch (PyTorch has "
                "no float16 CPU kernel for it, and the tracer would record its float32 "
                "replacement); compute it in float32 (.float()) in forward" % func)
        # Results are float16 when every floating-point input was (or, for mixed inputs that
        # reached here, such as batch_norm's float32 statistics, when the first one was).
        first = _floats((args, kwargs))[0].dtype
        result_dtype = _HALF if dtypes == {_HALF} or first == _HALF else _FLOAT

        def up(t):
            return t.float() if isinstance(t, torch.Tensor) and t.dtype == _HALF else t

        up_args, up_kwargs = tree_map(up, args), tree_map(up, kwargs)
        out = func(*up_args, **up_kwargs)
        # In-place and out= operations wrote into the float32 copies: into the caller's tensors.
        copies = {}
        for original, copy in zip(_mutated_arguments(func, args, kwargs),
                                  _mutated_arguments(func, up_args, up_kwargs)):
            if copy is not original:
                with torch.no_grad():
                    original.copy_(copy)
                copies[id(copy)] = original

        def down(t):
            if not isinstance(t, torch.Tensor):
                return t
            if id(t) in copies:
                return copies[id(t)]
            return t.to(result_dtype) if t.dtype == _FLOAT else t
        return tree_map(down, out)


def _mutated_arguments(func, args, kwargs):
    """The tensors an ATen operation writes into (its schema's mutable arguments)."""
    mutated = []
    for index, argument in enumerate(func._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = args[index] if index < len(args) else kwargs.get(argument.name)
        if isinstance(value, torch.Tensor):
            mutated.append(value)
    return mutated
