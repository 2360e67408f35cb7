"""PopTorch's ops (``poptorch.nop``, ``ipu_print_tensor``, ``dynamic_slice``, ``dynamic_update``,
``set_available_memory``, ``serializedMatMul``) for xtrain.torch.

Each is a torch.autograd.Function: on the CPU it computes the plain PyTorch equivalent (with its
gradient), so the module runs and trains unchanged outside the wrapper; in the capture its
``symbolic`` writes the ai.graphcore op xtrain already imports (docs/onnx-import.md): Nop,
PrintTensor, DynamicSlice, DynamicUpdate, or MatMul with xtrain's serialisation attributes.
"""
import enum

import torch

GRAPHCORE = "ai.graphcore"

_FLOAT_FORMATS = {"auto": 0, "fixed": 1, "scientific": 2, "none": 3}


class MatMulSerializationMode(enum.Enum):
    """How serializedMatMul splits the product (PopTorch's enum; the value is xtrain's mode)."""
    InputChannels = "input_channels"
    ReductionDim = "reducing_dim"
    OutputChannels = "output_channels"
    Disabled = "none"


class _Nop(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad

    @staticmethod
    def symbolic(g, x):
        return g.op(GRAPHCORE + "::Nop", x)


def nop(tensor):
    """The tensor, through an op the graph keeps (PopTorch's nop)."""
    return _Nop.apply(tensor)


class _PrintTensor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, attrs):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad, None

    @staticmethod
    def symbolic(g, x, attrs):
        kwargs = {}
        for name, value in attrs:
            kwargs[name + ("_s" if isinstance(value, str) else "_i")] = value
        return g.op(GRAPHCORE + "::PrintTensor", x, **kwargs)


def ipu_print_tensor(tensor, title="", print_gradient=True, summarise_threshold=1000,
                     edge_items=3, max_line_width=75, digits=4, float_format="auto",
                     separator=" ", open_bracket="(", close_bracket=")"):
    """The tensor; on the device it is printed each time the op runs (and its gradient, with
    print_gradient), with PopTorch's formatting arguments. On the CPU nothing is printed."""
    if float_format not in _FLOAT_FORMATS:
        raise ValueError("ipu_print_tensor: float_format must be one of %s, got %r"
                         % (", ".join(_FLOAT_FORMATS), float_format))
    for name, value in (("summarise_threshold", summarise_threshold), ("edge_items", edge_items),
                        ("max_line_width", max_line_width), ("digits", digits)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError("ipu_print_tensor: %s must be a non-negative int, got %r"
                             % (name, value))
    attrs = (("title", title), ("print_gradient", int(bool(print_gradient))),
             ("summariseThreshold", summarise_threshold), ("edgeItems", edge_items),
             ("maxLineWidth", max_line_width), ("digits", digits),
             ("floatFormat", _FLOAT_FORMATS[float_format]), ("separator", separator),
             ("openBracket", open_bracket), ("closeBracket", close_bracket))
    if not title:
        attrs = attrs[1:]  # xtrain titles it with the tensor's name, as PopART does
    return _PrintTensor.apply(tensor, attrs)


def _offset(g, start):
    """DynamicSlice's offset input: one INT32 per axis."""
    start = g.op("Cast", start, to_i=6)  # INT32
    return g.op("Reshape", start, g.op("Constant", value_t=torch.tensor([1])))


def _window(tensor, dim, start, size):
    """The start index PyTorch uses, clamped into [0, dim - size] as the device clamps it."""
    first = int(start)
    return min(max(first, 0), tensor.shape[dim] - size)


class _DynamicSlice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, start, size):
        first = _window(x, dim, start, size)
        ctx.save_for_backward(start)
        ctx.dim, ctx.first, ctx.shape = dim, first, x.shape
        return x.narrow(dim, first, size).clone()

    @staticmethod
    def backward(ctx, grad):
        full = grad.new_zeros(ctx.shape)
        full.narrow(ctx.dim, ctx.first, grad.shape[ctx.dim]).copy_(grad)
        return full, None, None, None

    @staticmethod
    def symbolic(g, x, dim, start, size):
        return g.op(GRAPHCORE + "::DynamicSlice", x, _offset(g, start), axes_i=[dim],
                    sizes_i=[size])


def _check_dynamic(where, tensor, dim, size, start):
    if not isinstance(dim, int) or not -tensor.dim() <= dim < tensor.dim():
        raise ValueError("%s: dim %r is not a dimension of a tensor of shape %s"
                         % (where, dim, tuple(tensor.shape)))
    dim %= tensor.dim()
    if not isinstance(size, int) or not 0 < size <= tensor.shape[dim]:
        raise ValueError("%s: size %r must be in [1, %d] (dimension %d of shape %s)"
                         % (where, size, tensor.shape[dim], dim, tuple(tensor.shape)))
    start = torch.as_tensor(start)
    if start.numel() != 1 or start.is_floating_point():
        raise ValueError("%s: start must be one integer (a tensor or an int), got %r"
                         % (where, start))
    return dim, start.reshape([])


def dynamic_slice(tensor, dim, start, size, step=1):
    """``tensor.narrow(dim, start, size)`` where start is a tensor computed on the device
    (PopTorch's dynamic_slice). Like the device, a start out of range is clamped into
    [0, tensor.shape[dim] - size]; step must be 1, as in PopTorch."""
    if step != 1:
        raise ValueError("dynamic_slice: step must be 1, got %r" % (step,))
    dim, start = _check_dynamic("dynamic_slice", tensor, dim, size, start)
    return _DynamicSlice.apply(tensor, dim, start, size)


class _DynamicUpdate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, src, dim, start, size):
        first = _window(x, dim, start, size)
        ctx.dim, ctx.first, ctx.size, ctx.src_shape = dim, first, size, src.shape
        out = x.clone()
        out.narrow(dim, first, size).copy_(src.reshape(out.narrow(dim, first, size).shape))
        return out

    @staticmethod
    def backward(ctx, grad):
        window = grad.narrow(ctx.dim, ctx.first, ctx.size)
        grad_x = grad.clone()
        grad_x.narrow(ctx.dim, ctx.first, ctx.size).zero_()
        return grad_x, window.reshape(ctx.src_shape).clone(), None, None, None

    @staticmethod
    def symbolic(g, x, src, dim, start, size):
        return g.op(GRAPHCORE + "::DynamicUpdate", x, _offset(g, start), src, axes_i=[dim],
                    sizes_i=[size])


def dynamic_update(input, src, dim, start, size):
    """A copy of input with src written at ``start`` along dim (PopTorch's dynamic_update); start
    is clamped as dynamic_slice's."""
    dim, start = _check_dynamic("dynamic_update", input, dim, size, start)
    window = list(input.shape)
    window[dim] = size
    if src.numel() != int(torch.Size(window).numel()) or src.dtype != input.dtype:
        raise ValueError("dynamic_update: src is %s %s, expected %s %s (the window of size %d "
                         "along dim %d)" % (src.dtype, tuple(src.shape), input.dtype,
                                            tuple(window), size, dim))
    return _DynamicUpdate.apply(input, src, dim, start, size)


def set_available_memory(tensor, available_memory_proportion):
    """Accepted, no effect: PopTorch passes the proportion of tile memory the op producing tensor
    may use to Poplar's planner; a simulated IPU plans no tile memory. Returns tensor."""
    if not isinstance(available_memory_proportion, (int, float)) or \
            not 0.0 < available_memory_proportion <= 1.0:
        raise ValueError("set_available_memory: the proportion must be in (0, 1], got %r"
                         % (available_memory_proportion,))
    return tensor


class _SerializedMatMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, lhs, rhs, mode, factor):
        ctx.save_for_backward(lhs, rhs)
        return lhs @ rhs

    @staticmethod
    def backward(ctx, grad):
        lhs, rhs = ctx.saved_tensors
        return grad @ rhs.transpose(-1, -2), lhs.transpose(-1, -2) @ grad, None, None

    @staticmethod
    def symbolic(g, lhs, rhs, mode, factor):
        return g.op(GRAPHCORE + "::SerializedMatMul", lhs, rhs, mode_s=mode, factor_i=factor)


def serializedMatMul(lhs, rhs, mode, factor=0, keep_precision=False):  # noqa: N802 - PopTorch's
    """``lhs @ rhs`` computed in ``factor`` slices along the mode's dimension (PopTorch's
    serializedMatMul, xtrain's MatMul serialisation). keep_precision is accepted with no effect:
    xtrain's partials are float32 whatever the inputs."""
    if not isinstance(mode, MatMulSerializationMode):
        raise TypeError("serializedMatMul: mode must be a poptorch.MatMulSerializationMode, got %r"
                        % (mode,))
    if mode != MatMulSerializationMode.Disabled and (
            isinstance(factor, bool) or not isinstance(factor, int) or factor < 1):
        raise ValueError("serializedMatMul: factor must be a positive int, got %r" % (factor,))
    if mode == MatMulSerializationMode.Disabled:
        return lhs @ rhs
    return _SerializedMatMul.apply(lhs, rhs, mode.value, factor)
