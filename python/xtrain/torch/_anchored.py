"""The executor's extras over its session (docs/poptorch.md, "More options"): the tensors
``Options.anchorTensor`` anchors, ``cycleCount()``, ``copyNamedBuffersToDevice()`` and
``disableModuleNamescope``'s op names."""
import numpy as np
import torch

from .. import _xtrain
from ._options import OutputMode

_RETURN_TYPES = {OutputMode.Final: "FINAL", OutputMode.All: "ALL", OutputMode.Sum: "SUM"}


def return_type(options, mode, period, training):
    """xtrain's AnchorReturnType of an output mode (Default: the wrapper's mode's)."""
    if mode is None or mode == OutputMode.Default:
        mode, period = options.resolved_output_mode(training), options.output_return_period
    if mode == OutputMode.EveryN:
        return _xtrain.AnchorReturnType("EVERYN", period)
    return _xtrain.AnchorReturnType(_RETURN_TYPES[mode])


def extra_anchors(options, training, outputs):
    """{long name: return type} of the tensors Options.anchorTensor names, beside the outputs."""
    anchors = {}
    for short, (long_name, mode, period) in options.anchored_tensors.items():
        if long_name in outputs:
            raise ValueError("Options.anchorTensor(%r, %r): %r is already an output of forward"
                             % (short, long_name, long_name))
        anchors[long_name] = return_type(options, mode, period, training)
    return anchors


def as_tensor(array, shape):
    """A session anchor as PopTorch returns it: the leading [bps, af, replicas] dimensions merged
    into the first one (a scalar per batch: a 1-d tensor of them)."""
    prefix = int(np.prod(array.shape[: array.ndim - len(shape)]))
    if shape:
        array = array.reshape([prefix * shape[0]] + list(shape[1:]))
    elif prefix > 1:
        array = array.reshape([prefix])
    else:
        array = array.reshape([])
    return torch.from_numpy(array.copy())


def read_anchored(options, anchors, info):
    """{short name: tensor} of the anchored tensors after a call."""
    return {short: as_tensor(anchors[long_name], list(info(long_name)[1]))
            for short, (long_name, _, _) in options.anchored_tensors.items()}


def check_updatable_buffers(model, options, captured):
    """Options.updatableNamedBuffers names buffers of the module that the compiled graph holds as
    state (a buffer a training graph holds as a constant cannot be copied to the device)."""
    names = options.updatable_named_buffers
    if names is None:
        return
    buffers = dict(model.named_buffers())
    state = set(captured.state_names)
    for name in names:
        if name not in buffers:
            raise ValueError("Options.updatableNamedBuffers: %s has no buffer '%s' (its buffers: "
                             "%s)" % (type(model).__name__, name, ", ".join(buffers) or "none"))
        if name not in state:
            raise ValueError(
                "Options.updatableNamedBuffers: the buffer '%s' is a constant of the compiled "
                "trainingModel (forward only reads it, and a step never changes it), so it cannot "
                "be copied to the device: changing it needs destroy() and a new compile" % name)


def named_buffer_arrays(model, options):
    """{name: array} of the buffers copyNamedBuffersToDevice copies."""
    if options.updatable_named_buffers is None:
        raise ValueError("copyNamedBuffersToDevice: no buffers are marked as updatable: name them "
                         "with Options.updatableNamedBuffers([...])")
    buffers = dict(model.named_buffers())
    return {n: buffers[n].detach().cpu().contiguous().numpy()
            for n in options.updatable_named_buffers}


def drop_module_namescopes(proto):
    """disableModuleNamescope: an op named /fc/Gemm by torch.onnx becomes Gemm (tensor names,
    which anchorTensor uses, keep the module path)."""
    seen = {}
    for node in proto.graph.node:
        if "/" in node.name:
            name = node.name.rsplit("/", 1)[-1]
            count = seen.get(name, 0)
            seen[name] = count + 1
            node.name = name if count == 0 else "%s_%d" % (name, count)
