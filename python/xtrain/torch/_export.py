"""PopTorch's precompilation: ``compileAndExport(filename, *args, export_model=True)``,
``poptorch.load(filename, edit_opts_fn=None)`` and ``loadExecutable(filename)``.

What PopTorch stores is the Poplar executable. xtrain has no compiled executable to store: building
a session from a graph takes 30-120 ms (docs/performance.md), while capturing the module is the step
that needs the module's code and the example inputs. So the file (a torch.save archive) holds the
captured ONNX graph with its weights as initializers, how its tensors map to the module's, the
micro-batch size, the options and, with ``export_model``, the module and its torch optimizer
(with its state, read from the device). Loading builds the session from the stored graph without
running ``forward``.
"""
import copy
import enum
import types

import onnx
import torch

from . import _capture
from ._options import ConnectionType

FORMAT = "xtrain.torch compiled model 1"

# Options that apply when a file is loaded (PopTorch: "only run-time options will be applied");
# the others were compiled into the graph and are kept as exported.
_RUN_TIME_OPTIONS = ("use_ipu_model", "ipu_id", "connection_type", "offline_ipu_version",
                     "random_seed", "log_dir")


def write(executor, filename, export_model):
    captured = executor._captured
    data = {
        "format": FORMAT,
        "training": executor.training,
        "options": executor.options,
        "proto": captured.proto.SerializeToString(),
        "input_names": captured.input_names,
        "output_names": captured.output_names,
        "structure": captured.structure,
        "state_names": captured.state_names,
        "constant_buffers": captured.constant_buffers,
        "micro_batch": executor._micro_batch,
        "model": None,
        "optimizer": None,
    }
    if export_model:
        if executor.training:
            executor.copyWeightsToHost()
            optimizer = executor._optimizer
            optimizer.state_dict()  # the device's optimizer state into the torch optimizer
            # A torch optimizer pickles only its groups and state; PopTorch's extras
            # (loss_scaling, ...) are attributes: keep them all but the wrapper's hooks.
            data["optimizer"] = (type(optimizer), {k: v for k, v in vars(optimizer).items()
                                                   if not isinstance(v, types.FunctionType)})
        data["model"] = executor.model
    torch.save(data, filename)


def _read(filename):
    try:
        data = torch.load(filename)
    except Exception as e:
        raise ValueError("%s is not a file of compileAndExport: %s" % (filename, e)) from e
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("%s is not a file of xtrain.torch's compileAndExport (expected format "
                         "%r)" % (filename, FORMAT))
    captured = _capture.Captured(onnx.load_from_string(data["proto"]), data["input_names"],
                                 data["output_names"], data["structure"], data["state_names"],
                                 data.get("constant_buffers", ()))
    return data, captured


def _changed(before, after, where, skip=()):
    """The attributes (named as where.attribute, through the option groups) that differ."""
    changed = []
    for name, value in vars(before).items():
        if name in skip or name == "_parent":
            continue
        other = vars(after).get(name)
        if hasattr(value, "__dict__") and type(value) is type(other) and \
                not isinstance(value, enum.Enum):
            changed += _changed(value, other, "%s.%s" % (where, name))
        elif type(value) is not type(other) or value != other:
            changed.append("%s.%s" % (where, name))
    changed += ["%s.%s" % (where, n) for n in vars(after) if n not in vars(before)]
    return changed


def load(filename, edit_opts_fn=None):
    """The wrapped model of a compileAndExport file, ready to run."""
    from ._executor import PoplarExecutor
    data, captured = _read(filename)
    if data["model"] is None:
        raise ValueError("%s was exported with export_model=False: it holds no module; wrap the "
                         "module and call loadExecutable(%r)" % (filename, filename))
    options = data["options"]
    if options.connection_type == ConnectionType.Never:
        # As PopTorch's load: compiled offline (useOfflineIpuTarget), loaded to run.
        options.connection_type = ConnectionType.Always
        options.offline_ipu_version = None
    if edit_opts_fn is not None:
        edited = copy.deepcopy(options)
        edit_opts_fn(edited)
        compiled = _changed(options, edited, "Options", skip=_RUN_TIME_OPTIONS)
        if compiled:
            raise ValueError(
                "poptorch.load(%s, edit_opts_fn): the function changed %s, which were compiled "
                "into the exported model; only run-time options (%s) can change on load: export "
                "again with the new options"
                % (filename, ", ".join(compiled), ", ".join(_RUN_TIME_OPTIONS)))
        for name in _RUN_TIME_OPTIONS:
            setattr(options, name, getattr(edited, name))
    optimizer = None
    if data["optimizer"] is not None:
        cls, attributes = data["optimizer"]
        optimizer = cls.__new__(cls)
        optimizer.__setstate__(attributes)
    executor = PoplarExecutor(data["model"], options, data["training"], optimizer)
    executor._stored_capture = captured
    executor._use_capture(captured, data["micro_batch"])
    return executor


def read_into(executor, filename):
    """executor compiles from the file's graph (loadExecutable)."""
    data, captured = _read(filename)
    if data["training"] != executor.training:
        raise ValueError("%s holds a %s; this is a %s" % (
            filename, *("trainingModel" if t else "inferenceModel"
                        for t in (data["training"], executor.training))))
    state = executor.model.state_dict()
    missing = [n for n in captured.state_names if n not in state]
    if missing:
        raise ValueError("%s was captured from a module with tensors %s, which %s does not have"
                         % (filename, ", ".join(missing[:5]), type(executor.model).__name__))
    if executor._session is not None:
        executor.destroy()
    executor._stored_capture = captured
    executor._use_capture(captured, data["micro_batch"])
