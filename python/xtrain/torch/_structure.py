"""forward's outputs as a flat list of tensors and back (docs/poptorch.md, "Outputs").

A module may return a tensor or tuples, lists and dicts of them nested to any depth, as PopTorch
allows; the graph has one output per tensor, in the order torch.onnx flattens them (depth first,
a dict's values in its order). The spec is plain data that pickles (compileAndExport stores it):
"tensor", or (kind, [specs of the items], extra) with kind "tuple" (extra: a namedtuple's class or
None), "list" or "dict" (extra: the keys). Files of earlier versions hold ("tuple"/"list", count)
for a flat sequence, which unflatten still reads.
"""
import torch


def flatten(outputs, where="forward"):
    """(tensors, spec); anything but a tensor, tuple, list or dict is a TypeError naming where it
    is (e.g. forward's output[1]['mask'])."""
    if isinstance(outputs, torch.Tensor):
        return [outputs], "tensor"
    if isinstance(outputs, dict):
        keys = list(outputs)
        items = [outputs[k] for k in keys]
        kind, extra, names = "dict", keys, ["%s[%r]" % (where, k) for k in keys]
    elif isinstance(outputs, (tuple, list)):
        items = list(outputs)
        kind = "list" if isinstance(outputs, list) else "tuple"
        extra = type(outputs) if kind == "tuple" and hasattr(outputs, "_fields") else None
        names = ["%s[%d]" % (where, i) for i in range(len(items))]
    else:
        raise TypeError("%s is a %s: xtrain.torch takes outputs that are tensors or tuples, lists "
                        "and dicts of them" % (where, type(outputs).__name__))
    tensors, specs = [], []
    for item, name in zip(items, names):
        flat, spec = flatten(item, name)
        tensors += flat
        specs.append(spec)
    return tensors, (kind, specs, extra)


def unflatten(tensors, spec):
    """The structure of spec with the tensors in order (the inverse of flatten)."""
    return _build(iter(tensors), spec)


def _build(rest, spec):
    if spec == "tensor":
        return next(rest)
    kind, specs = spec[0], spec[1]
    if isinstance(specs, int):  # an earlier version's flat ("tuple"/"list", count)
        specs = ["tensor"] * specs
    items = [_build(rest, s) for s in specs]
    if kind == "list":
        return items
    if kind == "dict":
        return dict(zip(spec[2], items))
    cls = spec[2] if len(spec) > 2 else None
    return cls(*items) if cls is not None else tuple(items)
