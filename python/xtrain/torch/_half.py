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
import math

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

_HALF, _FLOAT = torch.float16, torch.float32

# Functions that convert, copy into or take only the shape of another tensor: their dtypes are the
# caller's choice, not a promotion.
_NOT_PROMOTED = {"to", "type", "type_as", "copy_", "__setitem__", "view_as", "expand_as",
                 "reshape_as", "new_tensor", "new_zeros", "new_ones", "new_full", "new_empty",
                 "set_", "__get__", "__set__"}

# x += y and the like: in place, as add_
_IN_PLACE_OPERATORS = {"__i%s__" % op for op in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
    "lshift", "rshift")}


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


def needs_float16_kernels(error):
    """Whether tracing a float32 module failed on float16 tensors its forward made (x.half()):
    a missing float16 CPU kernel, or PyTorch refusing to mix float16 and float32."""
    message = str(error)
    return "'Half'" in message or "c10::Half" in message or "same dtype" in message


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
    if name in _NOT_PROMOTED or name in _IN_PLACE_OPERATORS or \
            name.endswith("_") and not name.endswith("__"):
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

    def per_dim(value):
        return list(value) if isinstance(value, (tuple, list)) else [value] * dims
    dilation = per_dim(values.get("dilation", 1))
    if isinstance(padding, str):
        padding = _explicit_padding(func, padding, dilation, weight.shape[2:])
    return torch._convolution(
        input, weight, bias, per_dim(stride), per_dim(padding), dilation, transposed,
        per_dim(values.get("output_padding", 0)), values.get("groups", 1), False, False, True,
        True)


def _explicit_padding(func, padding, dilation, kernel):
    """"valid" and "same" as numbers (_convolution takes numbers): "same" when it pads both
    sides alike; an uneven "same" (an even kernel) is refused."""
    if padding == "valid":
        return [0] * len(kernel)
    totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
    if padding != "same" or any(t % 2 for t in totals):
        raise NotImplementedError(
            "%s with padding=%r on float16 tensors (kernel %s): xtrain.torch captures float16 "
            "convolutions with padding that is the same on both sides of each dimension; give "
            "the padding as numbers (F.pad first for uneven padding)"
            % (func.__name__, padding, tuple(kernel)))
    return [t // 2 for t in totals]


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
        # Results have the first floating-point input's dtype: float16 when every one is, and
        # for mixed inputs that reach this level (batch_norm's float32 statistics after its
        # float16 data), the data's.
        result_dtype = _floats((args, kwargs))[0].dtype

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


# ---- the exported graph's types ----

# ONNX ops whose inputs (those listed, or all) must have one element type in xtrain.
_SAME_TYPE = {"Add": None, "Sub": None, "Mul": None, "Div": None, "Max": None, "Min": None,
              "Mean": None, "Sum": None, "Equal": None, "Less": None, "Greater": None,
              "LessOrEqual": None, "GreaterOrEqual": None, "Concat": None, "Where": (1, 2)}
_FLOAT_TYPES = (TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE)
_ONNX_TYPES = {torch.float16: TensorProto.FLOAT16, torch.float32: TensorProto.FLOAT}


def fix_types(proto, output_dtypes, state_names):
    """torch.onnx's float16 output has two kinds of types PyTorch would not give:
    - a scalar the exporter writes as a float32 or float64 constant next to float16 data
      (``torch.where(x > 0, x, 0.0)``, cosine_similarity's eps): in PyTorch a scalar or 0-d tensor
      does not promote a dimensioned tensor, so the constant becomes float16 (a copy, for that
      use); a float32 tensor that is not such a constant is left, and xtrain's import names it;
    - an output of another dtype than forward returned (the exporter's norm computes in float32
      for float16 data): a Cast to forward's dtype is added.
    output_dtypes: the dtypes forward returned, one per graph output; state_names: the module's
    state (never a scalar constant to retype)."""
    for _ in range(len(proto.graph.node)):
        if not _retype_one_constant(proto, _value_types(proto), set(state_names)):
            break
    types = _value_types(proto)
    for output, dtype in zip(proto.graph.output, output_dtypes):
        want = _ONNX_TYPES.get(dtype)
        have = types.get(output.name)
        if want is None or have not in _FLOAT_TYPES or have == want:
            continue
        # The producer's result is renamed and cast to the output's name right after it, so
        # the ops that read the output (the loss of it) read forward's dtype too.
        nodes = list(proto.graph.node)
        position = next(i for i, n in enumerate(nodes) if output.name in n.output)
        producer = nodes[position]
        producer.output[:] = [o + "__before_cast" if o == output.name else o
                              for o in producer.output]
        cast = helper.make_node("Cast", [output.name + "__before_cast"], [output.name], to=want)
        del proto.graph.node[:]
        proto.graph.node.extend(nodes[:position + 1] + [cast] + nodes[position + 1:])
        output.type.tensor_type.elem_type = want


def _value_types(proto):
    inferred = onnx.shape_inference.infer_shapes(proto)
    types = {}
    for value in list(inferred.graph.input) + list(inferred.graph.value_info) + \
            list(inferred.graph.output):
        types[value.name] = value.type.tensor_type.elem_type
    for init in proto.graph.initializer:
        types[init.name] = init.data_type
    return types


def _scalar_constants(proto, state_names):
    """{output name: node} of the Constant (one element) and ConstantOfShape nodes torch.onnx made
    for scalars."""
    found = {}
    for node in proto.graph.node:
        if node.output[0] in state_names or not node.attribute:
            continue
        value = node.attribute[0].t
        if node.op_type == "ConstantOfShape" or (
                node.op_type == "Constant" and node.attribute[0].name == "value" and
                math.prod(value.dims) == 1):
            found[node.output[0]] = node
    return found


def _retype_one_constant(proto, types, state_names):
    """Makes the first scalar constant that meets float16 data float16; whether there was one."""
    scalars = _scalar_constants(proto, state_names)
    for node in proto.graph.node:
        if node.op_type not in _SAME_TYPE:
            continue
        indices = _SAME_TYPE[node.op_type] or range(len(node.input))
        names = [node.input[i] for i in indices if i < len(node.input)]
        floats = {types.get(n) for n in names} & set(_FLOAT_TYPES)
        if TensorProto.FLOAT16 not in floats or len(floats) == 1:
            continue
        for index, name in enumerate(node.input):
            if name in names and name in scalars and types.get(name) != TensorProto.FLOAT16:
                node.input[index] = _float16_copy(proto, scalars[name])
                return True
    return False


def _float16_copy(proto, constant):
    """A float16 copy of a scalar constant node, added to the graph; its output name."""
    value = numpy_helper.to_array(constant.attribute[0].t).astype(np.float16)
    name = constant.output[0] + "__float16"
    if all(name not in n.output for n in proto.graph.node):
        tensor = numpy_helper.from_array(value, name)
        copy = helper.make_node(constant.op_type, list(constant.input), [name], value=tensor)
        nodes = list(proto.graph.node)
        position = next(i for i, n in enumerate(nodes) if n.output[0] == constant.output[0])
        del proto.graph.node[:]
        proto.graph.node.extend(nodes[:position + 1] + [copy] + nodes[position + 1:])
    return name
