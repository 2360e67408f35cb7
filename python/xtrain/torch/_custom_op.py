"""PopTorch's ``custom_op``: a user's own op, from a custom op library built against xtrain
(docs/custom-ops.md) and loaded with ``ctypes.cdll.LoadLibrary``, called inside ``forward``
(docs/poptorch.md, "Custom ops").

In the capture the call is one torch.autograd.Function whose ``symbolic`` writes one node of the
op's domain and type, with the attributes (PopTorch's table 4.1) and the example outputs' shapes
and types; the capture then imports the domain at ``domain_version`` (``set_domain_versions``).
Before that, the call checks what the graph could only report later or less clearly: that the op
is registered, at a version ``domain_version`` imports, and that its shape inference gives the
example outputs' shapes and types for these inputs. Outside a capture (the module on the CPU) it
returns zeros shaped as the example outputs, as PopTorch does: the op has no CPU implementation
in Python (``isRunningOnIpu()`` lets a model take another path there).
"""
import math

import torch

from .. import _xtrain
from . import _capture, _logging
from ._errors import Error

# The node attribute that carries domain_version from the symbolic to the capture, which turns it
# into the model's opset import of the domain and removes it.
_VERSION_ATTRIBUTE = "__xtrain_domain_version"

_FLOAT32_MAX = 3.4028234663852886e38
_INT64_RANGE = (-2 ** 63, 2 ** 63 - 1)

# torch dtype -> xtrain's type name (a TensorInfo's), for the shape check.
_XTRAIN_TYPES = {torch.float32: "FLOAT", torch.float16: "FLOAT16", torch.float64: "DOUBLE",
                 torch.bfloat16: "BFLOAT16", torch.int8: "INT8", torch.int16: "INT16",
                 torch.int32: "INT32", torch.int64: "INT64", torch.uint8: "UINT8",
                 torch.bool: "BOOL"}

_warned_on_cpu = set()


class _CustomOp(torch.autograd.Function):
    """The op in the capture: zeros of the example outputs' shapes in the traced forward (the
    values the trace computes with do not matter: the graph is what is exported), one node of the
    op in the ONNX graph."""

    @staticmethod
    def forward(ctx, op, attributes, examples, *inputs):
        return tuple(torch.zeros(shape, dtype=getattr(torch, dtype)) for shape, dtype in examples)

    @staticmethod
    def backward(ctx, *grads):  # pragma: no cover - the capture never runs backward
        raise RuntimeError("custom_op: the op's gradient runs on the device (its library's "
                           "grad), not in PyTorch's autograd")

    @staticmethod
    def symbolic(g, op, attributes, examples, *inputs):
        domain, name, version = op
        kwargs = {key: value for key, value in attributes}
        kwargs[_VERSION_ATTRIBUTE + "_i"] = version
        outputs = g.op("%s::%s" % (domain, name), *inputs, outputs=len(examples), **kwargs)
        return outputs if isinstance(outputs, (tuple, list)) else (outputs,)


def custom_op(inputs, name, domain, domain_version, example_outputs, attributes=None):
    """PopTorch's custom_op: the outputs (a list) of the op ``domain::name`` applied to
    ``inputs``. ``example_outputs`` are tensors shaped and typed as the outputs (their values do
    not matter); ``attributes`` a dict of floats, ints, strs or lists of one of them."""
    what = _describe(name, domain, domain_version)
    inputs = _tensors(inputs, "inputs", what, allow_empty=True)
    if example_outputs is None:
        raise ValueError("%s: example_outputs is missing: give one tensor shaped and typed as "
                         "each output of the op" % what)
    examples = _tensors(example_outputs, "example_outputs", what, allow_empty=False)
    onnx_attributes = _onnx_attributes(attributes, what)
    if not _capture.capturing():
        if what not in _warned_on_cpu:
            _warned_on_cpu.add(what)
            _logging.logger.warning("%s runs on the CPU: its outputs are zeros shaped as "
                                    "example_outputs (as in PopTorch; the op runs on the device "
                                    "only)", what)
        return [torch.zeros_like(e, requires_grad=e.requires_grad) for e in examples]
    _check_registered(name, domain, domain_version, examples, what)
    _check_outputs(inputs, examples, attributes or {}, name, domain, domain_version, what)
    # Plain values: the tracer keeps a Function's non-tensor arguments, but not dtypes or the
    # traced sizes a shape holds while tracing.
    spec = tuple((_shape(e), str(e.dtype).replace("torch.", "")) for e in examples)
    outputs = _CustomOp.apply((domain, name, domain_version), onnx_attributes, spec, *inputs)
    return list(outputs)


def _describe(name, domain, domain_version):
    if not isinstance(name, str) or not name:
        raise TypeError("custom_op: name must be the op's type, a non-empty str; got %r" % (name,))
    if not isinstance(domain, str) or not domain:
        raise TypeError("custom_op %s: domain must be a non-empty str; got %r" % (name, domain))
    if isinstance(domain_version, bool) or not isinstance(domain_version, int) or \
            domain_version < 1:
        raise TypeError("custom_op %s::%s: domain_version must be an int >= 1; got %r"
                        % (domain, name, domain_version))
    return "custom_op %s::%s (version %d)" % (domain, name, domain_version)


def _tensors(values, argument, what, allow_empty):
    if isinstance(values, torch.Tensor) or not isinstance(values, (list, tuple)):
        raise TypeError("%s: %s must be a list or tuple of tensors; got %s"
                        % (what, argument, type(values).__name__))
    if not values and not allow_empty:
        raise ValueError("%s: %s is empty: give one tensor shaped and typed as each output of "
                         "the op" % (what, argument))
    for i, value in enumerate(values):
        if not isinstance(value, torch.Tensor):
            raise TypeError("%s: %s[%d] is a %s; expected a tensor"
                            % (what, argument, i, type(value).__name__))
    return list(values)


def _onnx_attributes(attributes, what):
    """((name + ONNX kind suffix, value), ...) for torch.onnx's g.op, in the dict's order."""
    if attributes is None:
        return ()
    if not isinstance(attributes, dict):
        raise TypeError("%s: attributes must be a dict; got %s" % (what, type(attributes).__name__))
    out = []
    for key, value in attributes.items():
        if not isinstance(key, str) or not key:
            raise ValueError("%s: attribute names must be non-empty strs; got %r" % (what, key))
        if key == _VERSION_ATTRIBUTE:
            raise ValueError("%s: the attribute name %s is xtrain's own" % (what, key))
        out.append(_onnx_attribute(key, value, "%s: attribute '%s'" % (what, key)))
    return tuple(out)


def _onnx_attribute(key, value, where):
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError("%s is an empty %s: its element type (float, int or str) is unknown"
                             % (where, type(value).__name__))
        kind = _kind(value[0], where + "[0]")
        for i, element in enumerate(value):
            if _kind(element, "%s[%d]" % (where, i)) != kind:
                raise ValueError("%s mixes types (%s): a list attribute holds only floats, only "
                                 "ints or only strs" % (where, ", ".join(
                                     sorted({type(e).__name__ for e in value}))))
        return key + "_" + kind, [_checked(e, kind, "%s[%d]" % (where, i))
                                  for i, e in enumerate(value)]
    kind = _kind(value, where)
    return key + "_" + kind, _checked(value, kind, where)


def _kind(value, where):
    """ONNX's attribute kind of one Python value (PopTorch's table 4.1): f, i or s."""
    if isinstance(value, float):
        return "f"
    if isinstance(value, int):  # bool too, as PopTorch: 0 or 1
        return "i"
    if isinstance(value, str):
        return "s"
    raise ValueError("%s is a %s (%r): custom op attributes are floats, ints, strs or lists or "
                     "tuples of one of them (PopTorch's table 4.1)"
                     % (where, type(value).__name__, value))


def _checked(value, kind, where):
    if kind == "f" and math.isfinite(value) and abs(value) > _FLOAT32_MAX:
        raise ValueError("%s = %r is too %s for a float attribute (stored as float32, whose "
                         "magnitude is at most %.6g)" % (where, value, "high" if value > 0 else
                                                         "low", _FLOAT32_MAX))
    if kind == "i" and not _INT64_RANGE[0] <= value <= _INT64_RANGE[1]:
        raise ValueError("%s = %d does not fit an int attribute (64-bit signed)" % (where, value))
    return int(value) if kind == "i" else value


def _check_registered(name, domain, domain_version, examples, what):
    """Refuses an op no loaded library registered, one the domain's version cannot import, and
    example outputs that are not one per output of the op."""
    found = [(op.version, definition) for op, definition in
             _xtrain.getSupportedOperationsDefinition(False).items()
             if op.domain == domain and op.type == name]
    if not found:
        raise Error("%s: no op %s::%s is registered in xtrain: load the custom op library that "
                    "defines it (ctypes.cdll.LoadLibrary(path)) before the model is compiled "
                    "(docs/custom-ops.md)" % (what, domain, name), "custom_op", "compile")
    version, definition = min(found, key=lambda f: f[0])
    if version > domain_version:
        raise Error("%s: %s::%s is registered with version %d, newer than domain_version %d: "
                    "the model must import %s at version %d or later"
                    % (what, domain, name, version, domain_version, domain, version),
                    "custom_op", "compile")
    if len(definition.outputs) != len(examples):
        raise ValueError("%s: example_outputs has %d tensors, but the op has %d outputs: give one "
                         "example per output" % (what, len(examples), len(definition.outputs)))


def _check_outputs(inputs, examples, attributes, name, domain, domain_version, what):
    """The op's own shape inference, run on the inputs' shapes and types in a one-node model,
    must give the example outputs': the graph traced after the op was computed with those."""
    builder = _xtrain.Builder()
    ids = []
    for i, value in enumerate(inputs):
        if value.dtype not in _XTRAIN_TYPES:
            raise TypeError("%s: inputs[%d] is %s, which xtrain has no type for"
                            % (what, i, value.dtype))
        ids.append(builder.addInputTensor(
            _xtrain.TensorInfo(_XTRAIN_TYPES[value.dtype], list(_shape(value)))))
    try:
        outputs = builder.customOp(opName=name, opVersion=domain_version, domain=domain,
                                   inputs=ids, attributes=dict(attributes),
                                   numOutputs=len(examples))
        inferred = [(builder.getTensorDtypeString(o), builder.getTensorShape(o)) for o in outputs]
    except _xtrain.popart_exception as e:
        raise Error("%s: the op refuses inputs %s: %s" % (what, _shapes(inputs), e),
                    type(e).__name__, "compile") from e
    for i, (example, (dtype, shape)) in enumerate(zip(examples, inferred)):
        want = str(example.dtype).replace("torch.", "")
        if list(_shape(example)) != list(shape) or want != dtype:
            raise ValueError("%s: example_outputs[%d] is %s %s, but the op's output %d is %s %s "
                             "for inputs %s: give example outputs shaped and typed as the op's"
                             % (what, i, want, list(_shape(example)), i, dtype, list(shape),
                                _shapes(inputs)))


def _shape(tensor):
    """The tensor's shape as ints (while tracing, its sizes are traced values)."""
    return tuple(int(d) for d in tensor.shape)


def _shapes(values):
    return "[%s]" % ", ".join("%s %s" % (str(v.dtype).replace("torch.", ""), list(_shape(v)))
                              for v in values)


def set_domain_versions(proto):
    """Imports each custom op's domain at the domain_version its calls gave (the exporter imports
    every custom domain at version 1) and removes the attribute that carried it. Calls of one
    domain with different versions are a ValueError."""
    from onnx import helper
    versions = {}
    for node in proto.graph.node:
        for attribute in list(node.attribute):
            if attribute.name == _VERSION_ATTRIBUTE:
                version = helper.get_attribute_value(attribute)
                seen = versions.setdefault(node.domain, (version, node.op_type))
                if seen[0] != version:
                    raise ValueError(
                        "custom_op: domain %s is used at version %d (%s) and %d (%s): one model "
                        "imports a domain at one version" % (node.domain, seen[0], seen[1],
                                                             version, node.op_type))
                node.attribute.remove(attribute)
    for opset in proto.opset_import:
        if opset.domain in versions:
            opset.version = versions.pop(opset.domain)[0]
    for domain, (version, _) in versions.items():
        proto.opset_import.append(helper.make_opsetid(domain, version))
