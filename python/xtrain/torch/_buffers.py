"""Buffers that forward updates in place (PopTorch's section 4.8; docs/poptorch.md, "Buffers").

torch.onnx computes with a buffer's in-place update (``self.i += 1``, ``self.buf.copy_(x)``) but
does not keep it: the exported graph reads the buffer and never writes it. The capture makes the
write explicit: forward is exported with the updated buffers as extra outputs, and each extra
output becomes an ai.graphcore ``CopyVarUpdate(buffer, new value)``, which xtrain's sessions apply
after every micro-batch (a TrainingSession after its backward pass, an InferenceSession after its
forward pass). The buffer stays an initializer, so it is on the device between calls and copied
back to the module as the weights are.

A tensor that is a plain attribute of a module (``self.i = torch.tensor(...)``, listing 4.21) is
not state: the graph holds the value it had when captured, as PopTorch freezes it, and the
capture restores it, so compiling leaves the module as it was.
"""
import contextlib

import torch
from onnx import helper

from . import _ops

_UPDATE_PREFIX = "buffer_update/"


def snapshot(model):
    """What says, after a forward, which buffers it updated, replaced or removed."""
    return {name: (buffer, buffer._version, buffer.detach().clone())
            for name, buffer in model.named_buffers()}


def updated(model, before, kept_elsewhere):
    """The names of the buffers forward updated in place since `before`, in the module's order,
    but those in kept_elsewhere (BatchNorm's statistics, which the graph's BatchNormalization
    updates). A buffer forward replaced or removed is an error naming it (the update could not be
    kept)."""
    name = type(model).__name__
    now = dict(model.named_buffers())
    names = []
    for buffer_name, (tensor, version, value) in before.items():
        if buffer_name not in now:
            raise NotImplementedError(
                "%s.forward removes the buffer '%s': xtrain.torch captures a module whose buffers "
                "stay as they are (PopTorch refuses it too)" % (name, buffer_name))
        current = now[buffer_name]
        if current is not tensor:
            raise NotImplementedError(
                "%s.forward assigns a new tensor to the buffer '%s': the update cannot be kept. "
                "Update it in place instead, as PopTorch asks: self.%s.copy_(new_value)"
                % (name, buffer_name, buffer_name.rsplit(".", 1)[-1]))
        if buffer_name in kept_elsewhere:
            continue
        if current._version != version or not torch.equal(current.detach(), value):
            if not current.is_floating_point():
                raise NotImplementedError(
                    "%s.forward updates the %s buffer '%s' in place: xtrain keeps only "
                    "floating-point tensors as weights the graph can write, so integer buffers "
                    "that forward updates are not implemented (make it a float buffer)"
                    % (name, current.dtype, buffer_name))
            names.append(buffer_name)
    return names


def _plain_tensor_attributes(model):
    """(module, attribute, tensor, a copy of its value) for each tensor that is a plain attribute
    of one of the module's modules (not a parameter nor a buffer)."""
    return [(module, key, value, value.detach().clone())
            for module in model.modules() for key, value in vars(module).items()
            if isinstance(value, torch.Tensor)]


def _restore(saved):
    with torch.no_grad():
        for module, key, tensor, value in saved:
            object.__setattr__(module, key, tensor)
            if tensor.shape == value.shape and not torch.equal(tensor, value):
                tensor.copy_(value)


@contextlib.contextmanager
def plain_tensor_attributes_kept(model):
    """Restores the module's plain tensor attributes after a block that runs forward."""
    saved = _plain_tensor_attributes(model)
    try:
        yield
    finally:
        _restore(saved)


@contextlib.contextmanager
def exported_with_updates(model, names):
    """While the block exports the module, its forward also returns the buffers `names` (after
    forward ran): the graph's extra outputs that hold their updated values. It also restores the
    plain tensor attributes forward changed, untraced, before the exporter writes the graph: the
    traced graph holds them as constants that share their memory, so an in-place update during
    the trace (listing 4.21's self.i += 1) would otherwise be written into the constant, where
    PopTorch freezes the value forward started from."""
    saved = _plain_tensor_attributes(model)
    if not names and not saved:
        yield
        return
    forward = model.forward
    previous = model.__dict__.get("forward")  # an instance's own forward (_half.py sets one)

    def forward_and_buffers(*args, **kwargs):
        outputs = forward(*args, **kwargs)
        tracing = torch._C._get_tracing_state()
        torch._C._set_tracing_state(None)
        try:
            _restore(saved)
        finally:
            torch._C._set_tracing_state(tracing)
        if not names:
            return outputs
        buffers = dict(model.named_buffers())
        return (outputs,) + tuple(buffers[n] for n in names)

    # object's own setattr: the module's (_module_sync's entry point) would copy pending weights.
    object.__setattr__(model, "forward", forward_and_buffers)
    try:
        yield
    finally:
        if previous is not None:
            object.__setattr__(model, "forward", previous)
        else:
            object.__delattr__(model, "forward")
        _restore(saved)


def output_names(names):
    """The graph's names of the extra outputs exported_with_updates adds."""
    return [_UPDATE_PREFIX + n for n in names]


def write_updates(proto, names):
    """Turns the extra outputs into the writes of the buffers: CopyVarUpdate(buffer, new value)."""
    extra = dict(zip(output_names(names), names))
    kept = [o for o in proto.graph.output if o.name not in extra]
    del proto.graph.output[:]
    proto.graph.output.extend(kept)
    for update, buffer in extra.items():
        proto.graph.node.append(helper.make_node(
            "CopyVarUpdate", [buffer, update], [update + "/written"], domain=_ops.GRAPHCORE,
            name="copy-buffer/" + buffer))
    if names and not any(o.domain == _ops.GRAPHCORE for o in proto.opset_import):
        proto.opset_import.append(helper.make_opsetid(_ops.GRAPHCORE, 1))


def updated_in(proto, state_names):
    """The buffers a captured graph writes (its CopyVarUpdate ops of module state)."""
    state = set(state_names)
    return [n.input[0] for n in proto.graph.node
            if n.op_type == "CopyVarUpdate" and n.domain == _ops.GRAPHCORE and n.input[0] in state]


def check_replicas(model, names, options, global_replicas):
    """PopTorch's rule: buffers that forward updates are not broadcast between replicas, so with
    several replicas they need broadcastBuffers(False) (each replica keeps its own)."""
    if names and global_replicas > 1 and options.broadcast_buffers:
        raise ValueError(
            "%s.forward updates the buffers %s in place and the model runs on %d replicas: "
            "PopTorch does not support broadcasting buffers between replicas. If the model can "
            "tolerate each replica keeping its own buffers (out of sync between replicas), "
            "disable buffer broadcasting with poptorch.Options.broadcastBuffers(False)"
            % (type(model).__name__, ", ".join("'%s'" % n for n in names), global_replicas))
