"""Captures a torch.nn.Module as an ONNX model xtrain can train (docs/poptorch.md, "Capture").

The capture is ``torch.onnx.export`` with the module in the wrapper's mode (training: ``train()``,
so BatchNorm keeps its training form and Dropout is random; inference: ``eval()``), without constant
folding (which would fold weights away), opset 17. Its limits are torch.onnx's: the graph is traced
with the first call's inputs, so Python control flow is frozen to the path those inputs took, and
shapes are static (the micro-batch size is fixed at compile time, as in PopTorch).

Tracing runs ``forward`` once, which would update BatchNorm's running statistics and the RNG state:
both are restored afterwards, so compiling does not change the module.
"""
import contextlib
import inspect
import io
import warnings
import weakref

import onnx
import torch
from onnx import helper

from . import _blocks, _buffers, _ctc, _custom_op, _half, _ops, _placement, _symbolics
from . import _structure as _structure_mod

OPSET = 17


class Captured:
    """The ONNX model of a module and how its tensors map to the module's."""

    def __init__(self, proto, input_names, output_names, structure, state_names,
                 constant_buffers=()):
        self.proto = proto
        self.input_names = input_names  # graph inputs, in forward's order (unused ones dropped)
        self.output_names = output_names  # graph outputs; in training the last one is the loss
        self.structure = structure  # forward's return structure (_structure.py's spec)
        self.state_names = state_names  # the initializers that are module parameters/buffers
        # Buffers the training graph holds as constants (see _trained_state): the executor refuses
        # to run if the module's value changes, as the graph would not see it.
        self.constant_buffers = list(constant_buffers)

    @property
    def updated_buffers(self):
        """The buffers forward updates in place, which the graph writes (_buffers.py)."""
        return _buffers.updated_in(self.proto, self.state_names)


def forward_argument_names(model, args, kwargs):
    """forward's parameter names for the given arguments, in order (the graph's input names)."""
    signature = _forward_signature(model.forward)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError("the arguments do not match %s.forward%s: %s"
                        % (type(model).__name__, signature, e)) from None
    names, values = [], []
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise NotImplementedError("%s.forward takes *%s: xtrain.torch needs named tensor "
                                      "arguments (not implemented yet)" % (type(model).__name__, name))
        names.append(name)
        values.append(value)
    return names, values


# forward's signature by its function: inspect.signature costs about 80 us, a tenth of a small
# model's call (docs/performance.md, "The PopTorch wrapper").
_signatures = weakref.WeakKeyDictionary()


def _forward_signature(forward):
    function = getattr(forward, "__func__", None)
    if function is None:  # not a bound method (an instance attribute): not cached
        return inspect.signature(forward)
    signature = _signatures.get(function)
    if signature is None:
        signature = _signatures[function] = inspect.signature(forward)
    return signature


_capturing = 0


def capturing():
    """Whether a capture is tracing a forward now (poptorch.isRunningOnIpu)."""
    return _capturing > 0


@contextlib.contextmanager
def _preserved(model, training):
    """Runs a block with the module in the given mode, restoring its mode, buffers and the RNG."""
    saved_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    saved_rng = torch.get_rng_state()
    was_training = model.training
    model.train(training)
    global _capturing
    _capturing += 1
    try:
        yield
    finally:
        _capturing -= 1
        model.train(was_training)
        torch.set_rng_state(saved_rng)
        with torch.no_grad():
            for k, v in model.state_dict().items():
                v.copy_(saved_state[k])


def _structure(model, outputs, training):
    name = type(model).__name__
    try:
        flat, structure = _structure_mod.flatten(outputs, "%s.forward's output" % name)
    except TypeError as e:
        raise NotImplementedError(str(e)) from e
    if not flat:
        raise ValueError("%s.forward returned no tensor: %s" % (name, _describe(outputs)))
    if training:
        if flat[-1].numel() != 1 or not flat[-1].is_floating_point():
            raise ValueError(
                "%s.forward must return the loss last (its last tensor, in a nested output), as "
                "a floating-point scalar, for trainingModel (PopTorch's rule); it returned %s"
                % (name, _describe(outputs)))
        if not flat[-1].requires_grad:
            raise ValueError("%s.forward's last output (the loss) does not depend on any parameter "
                             "that requires a gradient: nothing to train" % name)
    return flat, structure


def _describe(outputs):
    if isinstance(outputs, torch.Tensor):
        return "a tensor of shape %s" % (tuple(outputs.shape),)
    if isinstance(outputs, (tuple, list)):
        return "(%s)" % ", ".join(_describe(o) for o in outputs)
    if isinstance(outputs, dict):
        return "{%s}" % ", ".join("%r: %s" % (k, _describe(v)) for k, v in outputs.items())
    return type(outputs).__name__


def _batchnorm_statistics(model, training):
    """The buffers the graph's BatchNormalization updates itself (in training), and PyTorch's
    count of its batches (kept by the executor)."""
    names = set()
    if training:
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                prefix = name + "." if name else ""
                names |= {prefix + b for b in ("running_mean", "running_var",
                                               "num_batches_tracked")}
    return names


def _check_modules(model, training):
    if not training:
        return
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and \
                module.track_running_stats and module.momentum is None:
            raise NotImplementedError(
                "%s (%s): momentum=None (a cumulative moving average) is not implemented in "
                "xtrain.torch; give the BatchNorm a momentum" % (name or "model", type(module).__name__))


def _export(model, names, values, training, half):
    """torch.onnx's export of the module (with _half.py's kernels when `half`): the ONNX model
    (with the writes of the buffers forward updates, _buffers.py), forward's flat outputs and
    structure, the output names, the blocks recorded and the updated buffers."""
    with _preserved(model, training), \
            _half.forward_in_modes(model) if half else contextlib.nullcontext():
        before = _buffers.snapshot(model)
        with _buffers.plain_tensor_attributes_kept(model):
            outputs = model(*values)
        updated = _buffers.updated(model, before, _batchnorm_statistics(model, training))
        flat, structure = _structure(model, outputs, training)
        output_names = ["output%d" % i for i in range(len(flat))]
        if training:
            output_names[-1] = "loss"
        if not training:
            _make_equal_tensors_distinct(model)
        buffer = io.BytesIO()
        _symbolics.register(OPSET)
        with warnings.catch_warnings(), _export_errors(model), _blocks.recording() as blocks, \
                _buffers.exported_with_updates(model, updated):
            warnings.simplefilter("ignore")  # the exporter's notes on in-place buffer updates
            torch.onnx.export(
                model, tuple(values), buffer, input_names=names,
                output_names=output_names + _buffers.output_names(updated),
                # PRESERVE with the mode set above: EVAL would fold BatchNorm into the
                # convolution's weights, which then could not be kept in sync with the module.
                training=torch.onnx.TrainingMode.PRESERVE,
                # ai.graphcore ops (_ops.py) get opset 1, the exporter's default for a custom
                # domain and the one xtrain imports (naming it here warns when none is used).
                do_constant_folding=False, opset_version=OPSET)
    proto = onnx.load_from_string(buffer.getvalue())
    _buffers.write_updates(proto, updated)
    return proto, flat, structure, output_names, blocks, updated


def capture(model, names, values, training, strategy=None):
    """Exports the module called with `values` (tensors named `names`); returns a Captured. Blocks
    (_blocks.py) the module starts while traced place its nodes, by the execution strategy."""
    _check_modules(model, training)
    # Float16 tensors: PyTorch has no CPU kernels to trace them with; _half.py supplies them. A
    # float32 module whose forward makes float16 tensors (x.half()) is found by its failure.
    half = _half.uses_half(model, list(zip(names, values)))
    try:
        proto, flat, structure, output_names, blocks, updated = _export(
            model, names, values, training, half)
    except RuntimeError as e:
        if half or not _half.needs_float16_kernels(e):
            raise
        half = True
        proto, flat, structure, output_names, blocks, updated = _export(
            model, names, values, training, half)
    _custom_op.set_domain_versions(proto)
    if half:  # the exporter's float16 scalars and output dtypes, as PyTorch gives them
        _half.fix_types(proto, [t.dtype for t in flat], model.state_dict())
    if blocks.starts:
        _placement.annotate(proto, blocks.starts, strategy, type(model).__name__)
    _serialized_matmuls(proto)
    _ctc.rewrite(proto)
    state = model.state_dict()
    trained = _trained_state(model, training, updated)
    constant_buffers = [i.name for i in proto.graph.initializer
                        if i.name in state and i.name not in trained]
    state_names = _constants_for_non_state(proto, trained)
    graph_inputs = [i.name for i in proto.graph.input]
    graph_outputs = [o.name for o in proto.graph.output]
    if graph_outputs != output_names:
        raise NotImplementedError(
            "%s.forward's outputs %s were exported as %s (an output that is an input or another "
            "output is not implemented yet)" % (type(model).__name__, output_names, graph_outputs))
    return Captured(proto, [n for n in names if n in graph_inputs], graph_outputs, structure,
                    state_names, constant_buffers)


def _trained_state(model, training, updated=()):
    """The state tensors the graph keeps as initializers (which xtrain trains, in training): the
    parameters, and in training BatchNorm's running statistics and the buffers forward updates
    (which the graph writes, so xtrain does not train them: _buffers.py). Every
    other buffer is a constant in training, as PyTorch never changes a buffer in a step, and so is
    a frozen parameter (requires_grad=False: PopTorch does not update it); in inference nothing is
    trained, so all state stays an initializer, updated from the module."""
    state = model.state_dict(keep_vars=True)
    if not training:
        return set(state)
    trained = {n for n, t in state.items()
               if isinstance(t, torch.nn.Parameter) and t.requires_grad}
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            prefix = name + "." if name else ""
            trained |= {prefix + "running_mean", prefix + "running_var"}
    return (trained | set(updated)) & set(state)


def _serialized_matmuls(proto):
    """serializedMatMul's placeholder nodes become what xtrain imports: a MatMul with the
    serialisation attributes (docs/onnx-import.md). The exporter's checker would refuse those
    attributes on a standard MatMul, so the rewrite is done after it."""
    for node in proto.graph.node:
        if node.domain == _ops.GRAPHCORE and node.op_type == "SerializedMatMul":
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            del node.attribute[:]
            node.attribute.extend([
                helper.make_attribute("__serialize_matmul_mode", attrs["mode"].decode()),
                helper.make_attribute("__serialize_matmul_factor", attrs["factor"])])
            node.op_type, node.domain = "MatMul", ""


@contextlib.contextmanager
def _export_errors(model):
    """torch.onnx's errors, said as what failed: the capture of this module."""
    try:
        yield
    except torch.onnx.errors.OnnxExporterError as e:
        raise NotImplementedError(
            "capturing %s.forward with torch.onnx failed (an operation the exporter cannot write "
            "as ONNX; docs/poptorch.md, \"Capture\"): %s" % (type(model).__name__, e)) from e


def _make_equal_tensors_distinct(model):
    """In eval mode the exporter merges initializers of equal values (a fresh BatchNorm's
    running_var and weight are both ones), which would tie tensors the executor keeps apart. The
    tensors involved get distinct values for the export only (_preserved restores them; the session
    gets the module's values before it runs)."""
    tensors = [t for t in model.state_dict().values() if t.is_floating_point()]
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for i, a in enumerate(tensors):
            for b in tensors[i + 1:]:
                if a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b):
                    b.copy_(torch.rand(b.shape, generator=generator, dtype=b.dtype) + 1.0)


def _constants_for_non_state(proto, trained):
    """Initializers the exporter made that are not trained module state (_trained_state) become
    Constant nodes (xtrain would otherwise train them as weights); returns the names of the
    others."""
    keep, constants = [], []
    for init in proto.graph.initializer:
        if init.name in trained:
            keep.append(init)
        else:
            constants.append(helper.make_node("Constant", [], [init.name], value=init))
    if constants:
        del proto.graph.initializer[:]
        proto.graph.initializer.extend(keep)
        nodes = list(proto.graph.node)
        del proto.graph.node[:]
        proto.graph.node.extend(constants + nodes)
    return [i.name for i in keep]


def state_arrays(model, names):
    """{name: float32 or other NumPy copy} of the module's state tensors with those names."""
    state = model.state_dict()
    return {n: state[n].detach().cpu().contiguous().numpy() for n in names}

