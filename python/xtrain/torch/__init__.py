"""xtrain.torch: PopTorch's front end over xtrain (``import xtrain.torch as poptorch``).

Wrap a torch.nn.Module with ``trainingModel`` or ``inferenceModel`` and call it like the module; the
weights stay in sync with the module. Needs PyTorch (Debian's python3-torch); ``import xtrain``
does not import torch, only this subpackage does. docs/poptorch.md says what maps to what, what
differs from PopTorch and what is not built yet.
"""
try:
    import torch as _torch  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the machine
    raise ImportError("xtrain.torch needs PyTorch (Debian: apt install python3-torch): %s" % e) from e

from . import _capture, enums, optim  # noqa: F401
from ._async_data import AsynchronousDataAccessor  # noqa: F401
from ._ctc import ctc_beam_search_decoder  # noqa: F401
from ._custom_op import custom_op  # noqa: F401
from ._data import DataLoader, DataLoaderMode  # noqa: F401
from ._errors import Error, RecoverableError, UnrecoverableError  # noqa: F401
from ._executor import PoplarExecutor  # noqa: F401
from ._export import load  # noqa: F401
from ._hardware import ipuHardwareIsAvailable, ipuHardwareVersion  # noqa: F401
from ._logging import logger, setLogLevel  # noqa: F401
from ._multiconv import MultiConv, MultiConvPlanType  # noqa: F401
from ._optimizer_map import OptimizerError  # noqa: F401
from ._ops import (MatMulSerializationMode, dynamic_slice, dynamic_update,  # noqa: F401
                   ipu_print_tensor, nop, serializedMatMul, set_available_memory)
from ._option_groups import HalfFloatCastingBehavior, TensorLocationSettings  # noqa: F401
from ._options import ConnectionType, Options, OutputMode, ReductionType  # noqa: F401
from ._extra_options import MeanReductionStrategy, SyncPattern  # noqa: F401
from .enums import CommGroupType, VariableRetrievalMode  # noqa: F401
from ._blocks import BeginBlock, Block, BlockFunction, removeBlocks  # noqa: F401
from ._strategies import (AutoStage, ParallelPhasedExecution, Phase,  # noqa: F401
                          PipelinedExecution, SerialPhasedExecution, ShardedExecution, Stage)
from . import _environment

_environment.apply_log_level()  # POPTORCH_LOG_LEVEL, as PopTorch reads it when imported

__all__ = ["trainingModel", "inferenceModel", "Options", "OutputMode", "ReductionType",
           "PoplarExecutor", "OptimizerError", "identity_loss", "optim", "Error",
           "RecoverableError", "UnrecoverableError", "isRunningOnIpu", "DataLoader",
           "DataLoaderMode", "ConnectionType", "HalfFloatCastingBehavior", "TensorLocationSettings",
           "AutoStage", "BeginBlock", "Block", "BlockFunction", "Phase", "PipelinedExecution",
           "ShardedExecution", "Stage", "SerialPhasedExecution", "ParallelPhasedExecution",
           "removeBlocks", "enums", "CommGroupType", "VariableRetrievalMode", "MatMulSerializationMode", "dynamic_slice",
           "dynamic_update", "ipu_print_tensor", "nop", "serializedMatMul", "set_available_memory",
           "AsynchronousDataAccessor", "load", "setLogLevel", "logger", "MultiConv",
           "MultiConvPlanType", "ctc_beam_search_decoder", "custom_op", "MeanReductionStrategy",
           "SyncPattern", "ipuHardwareIsAvailable", "ipuHardwareVersion"]


# PopTorch names xtrain.torch does not build yet (docs/poptorch.md, "Not built yet"): using one is
# a NotImplementedError saying so, not an AttributeError that reads like a typo.
_NOT_BUILT = {
    "CPU": "poptorch.CPU (running part of a module on the host)",
}


def __getattr__(name):
    if name in _NOT_BUILT:
        raise NotImplementedError("poptorch.%s: %s is not built in xtrain.torch yet "
                                  "(docs/poptorch.md, \"Not built yet\")"
                                  % (name, _NOT_BUILT[name]))
    raise AttributeError("module 'xtrain.torch' has no attribute %r" % name)


def isRunningOnIpu():
    """True while xtrain.torch captures a module for the device (forward is being traced), False
    when the module runs on the CPU, as PopTorch's: a model may take another path on the IPU."""
    return _capture.capturing()


def trainingModel(model, options=None, optimizer=None):
    """Wraps a module for training: ``out, loss = wrapped(x, y)``; forward returns the loss last.
    The default optimizer is PopTorch's: SGD with lr=0.01."""
    return PoplarExecutor(model, options, training=True, optimizer=optimizer)


def inferenceModel(model, options=None):
    """Wraps a module (or a trainingModel's) for inference, run in eval mode."""
    return PoplarExecutor(model, options, training=False)


def identity_loss(x, reduction):
    """PopTorch's identity_loss: marks x as the loss, reduced by "sum", "mean" or "none". In xtrain
    the loss is forward's last output either way. PopTorch's "none" on a non-scalar trains with
    the gradient of the tensor itself (an unreduced loss), which xtrain's scalar loss cannot
    express: it is refused; "none" of a scalar is the scalar."""
    if reduction == "sum":
        return x.sum()
    if reduction == "mean":
        return x.mean()
    if reduction == "none":
        if x.numel() != 1:
            raise NotImplementedError(
                "identity_loss(reduction='none') of a tensor of shape %s: unreduced losses are not "
                "implemented in xtrain.torch (the loss must be a scalar; use 'sum' or 'mean')"
                % (tuple(x.shape),))
        return x.reshape([])
    raise ValueError("identity_loss: reduction must be 'sum', 'mean' or 'none', got %r" % (reduction,))
