"""ONNX export of the PyTorch ops torch.onnx (1.13) cannot export: ``aten::mse_loss`` and
``aten::l1_loss``, which PopTorch models use as their loss, and ``aten::copy`` (``buffer.copy_(x)``,
which PopTorch's section 4.8 asks for to update a buffer in place). Registered once, for opset 17, when
xtrain.torch first captures a module (torch.onnx.register_custom_op_symbolic: it also lets the
user's own exports of these losses work, with the same standard ONNX ops)."""
import torch
from torch.onnx import symbolic_helper

_registered = False

# PyTorch's reduction argument: 0 none, 1 mean, 2 sum (torch/nn/_reduction.py).
_NONE, _MEAN = 0, 1


def _reduce(g, values, reduction):
    reduction = symbolic_helper._maybe_get_const(reduction, "i")
    if reduction == _NONE:
        return values
    if reduction == _MEAN:
        return g.op("ReduceMean", values, keepdims_i=0)
    return g.op("ReduceSum", values, keepdims_i=0)


def _mse_loss(g, input, target, reduction):
    diff = g.op("Sub", input, target)
    return _reduce(g, g.op("Mul", diff, diff), reduction)


def _l1_loss(g, input, target, reduction):
    return _reduce(g, g.op("Abs", g.op("Sub", input, target)), reduction)


def _copy(g, self, src, non_blocking):
    """self.copy_(src): src broadcast to self's shape, in self's type (the exporter's pass over
    in-place ops writes the result back to self; _buffers.py keeps it for a buffer)."""
    return g.op("CastLike", g.op("Expand", src, g.op("Shape", self)), self)


def register(opset):
    global _registered
    if not _registered:
        torch.onnx.register_custom_op_symbolic("aten::mse_loss", _mse_loss, opset)
        torch.onnx.register_custom_op_symbolic("aten::l1_loss", _l1_loss, opset)
        torch.onnx.register_custom_op_symbolic("aten::copy", _copy, opset)
        _registered = True
