"""PopTorch's ``poptorch.Options`` for xtrain (docs/poptorch.md, "Options").

Each setter returns the Options object, so calls chain as in PopTorch
(``opts.deviceIterations(4).replicationFactor(2)``). Each option is honoured, accepted with
no effect for a reason its docstring gives, or refused with an error saying so (docs/poptorch.md,
"More options"); a name PopTorch does not have is an ``AttributeError``.
"""
import ast
import copy
import enum

from .. import dist as _dist
from . import _environment, _strategies
from ._extra_options import ExtraOptions, ExtraTrainingOptions
from ._option_groups import (_DistributedOptions, _JitOptions, _PrecisionOptions,
                             _TensorLocationOptions)


class OutputMode(enum.IntEnum):
    """What a call returns of the device iterations' outputs (PopTorch's ``OutputMode``)."""
    Final = 0  # the last micro-batch's outputs only
    EveryN = 1  # every N-th device iteration's
    All = 2  # every micro-batch's, concatenated along the batch dimension
    Sum = 3  # the sum over the device iterations and micro-batches
    Default = 4  # Final for training, All for inference


class ConnectionType(enum.IntEnum):
    """When the device is attached (PopTorch's ``ConnectionType``)."""
    Always = 0  # when the model is compiled
    OnDemand = 1  # when it first runs
    Never = 2  # never: compile only


class ReductionType(enum.IntEnum):
    """How gradients of micro-batches and replicas are combined (PopTorch's ``ReductionType``)."""
    Sum = 0
    Mean = 1
    NoReduction = 2


def _not_implemented(where, name):
    def refuse(*args, **kwargs):
        raise NotImplementedError(
            "%s.%s() is not implemented in xtrain.torch yet (docs/poptorch.md lists what is built)"
            % (where, name))
    return refuse


def _positive_int(where, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("%s must be a positive int, got %r" % (where, value))
    return value


# PopTorch's option names that xtrain.torch does not implement: refused with a clear error
# (docs/poptorch.md, "Not built yet"). toDict and from_json are PopTorch's form of the options
# for its C++ back end; enableProfiling and maxRepeatLogs are Poplar's profiler and PopTorch's
# log filter.
_OPTIONS_NOT_BUILT = ("toDict", "from_json", "enableProfiling", "maxRepeatLogs")
_TRAINING_NOT_BUILT = ()


class _TrainingOptions(ExtraTrainingOptions):
    """``opts.Training``: gradient accumulation and its reduction (the other setters:
    _extra_options.py)."""

    def __init__(self, parent):
        self._parent = parent
        self.gradient_accumulation = 1
        self.reduction = ReductionType.Mean  # PopTorch's default (PopART's is Sum)
        self._init_extra()

    def gradientAccumulation(self, gradient_accumulation):
        self.gradient_accumulation = _positive_int("Options.Training.gradientAccumulation",
                                                   gradient_accumulation)
        return self._parent

    def accumulationAndReplicationReductionType(self, reduction_type):
        if reduction_type not in (ReductionType.Sum, ReductionType.Mean):
            raise ValueError("Options.Training.accumulationAndReplicationReductionType: expected "
                             "ReductionType.Sum or ReductionType.Mean, got %r" % (reduction_type,))
        self.reduction = ReductionType(reduction_type)
        return self._parent

    def __getattr__(self, name):
        if name in _TRAINING_NOT_BUILT:
            return _not_implemented("Options.Training", name)
        raise AttributeError("poptorch.Options.Training has no option '%s'" % name)


class Options(ExtraOptions):
    """PopTorch's options: how a wrapped model is batched, replicated and run (the setters of
    buffers, anchors and the PopART settings PopTorch passes through: _extra_options.py)."""

    def __init__(self):
        self.device_iterations = 1
        # Under xrun, the instance's replicas, as popdist's Options (docs/poptorch.md, "xrun").
        self.replication_factor = _dist.getNumLocalReplicas() if _dist.isPopdistEnvSet() else 1
        self.output_mode = OutputMode.Default
        self.output_return_period = 1
        self.random_seed = None
        # POPTORCH_IPU_MODEL=1 selects the IPU model, as in PopTorch (_environment.py).
        self.use_ipu_model = _environment.use_ipu_model()
        self.Training = _TrainingOptions(self)
        self.Precision = _PrecisionOptions(self)
        self.TensorLocations = _TensorLocationOptions(self)
        self.Distributed = _DistributedOptions(self)
        self.Jit = _JitOptions(self)
        self.ipu_id = None
        self.auto_round_num_ipus = False
        self.log_dir = None
        self.synthetic_data = False
        self.connection_type = ConnectionType.Always
        self.executable_cache_dir = _environment.cache_dir()  # POPTORCH_CACHE_DIR: no effect
        self.execution_strategy = None  # None: PipelinedExecution() (PopTorch's default)
        self.input_group_size = 1  # replicas fed the same micro-batches (inputReplicaGrouping)
        self.input_group_type = None
        self._init_extra()

    def __getattr__(self, name):
        # Called only for names not found normally: PopTorch's options not built yet, or typos.
        if name in _OPTIONS_NOT_BUILT:
            return _not_implemented("Options", name)
        raise AttributeError("poptorch.Options has no option '%s'" % name)

    def clone(self):
        """A deep copy, as PopTorch's."""
        return copy.deepcopy(self)

    def defaultOutputMode(self):
        """True while outputMode was not set (OutputMode.Default), as PopTorch's."""
        return self.output_mode == OutputMode.Default

    def deviceIterations(self, device_iterations):
        """Batches (optimizer steps, when training) run per call of the wrapped model."""
        self.device_iterations = _positive_int("Options.deviceIterations", device_iterations)
        return self

    def replicationFactor(self, replication_factor):
        """Local replicas, each on its own simulated IPU."""
        self.replication_factor = _positive_int("Options.replicationFactor", replication_factor)
        return self

    def inputReplicaGrouping(self, input_group_size, input_group_type):
        """Groups of input_group_size replicas get the same micro-batches (PopTorch's rule: a call
        takes replicationFactor / input_group_size per device iteration and accumulation step).
        Consecutive groups ({0, 1}, {2, 3}) or Orthogonal ones ({0, 2}, {1, 3}); NoGrouping is
        groups of 1; All is refused, as in PopTorch. Checked against replicationFactor when the
        model is wrapped (_replica_grouping.py)."""
        from .enums import CommGroupType
        if not isinstance(input_group_type, CommGroupType):
            raise TypeError("Options.inputReplicaGrouping: expected a "
                            "poptorch.enums.CommGroupType, got %r" % (input_group_type,))
        if input_group_type == CommGroupType.NoGrouping:
            input_group_size, input_group_type = 1, CommGroupType.Consecutive
        if input_group_type == CommGroupType.All:
            raise ValueError("Options.inputReplicaGrouping: input_group_type cannot be All (every "
                             "replica would get the same micro-batches: give input_group_size = "
                             "replicationFactor with Consecutive)")
        self.input_group_size = _positive_int("Options.inputReplicaGrouping's input_group_size",
                                              input_group_size)
        self.input_group_type = input_group_type
        return self

    def outputMode(self, output_mode, output_return_period=None):
        if not isinstance(output_mode, OutputMode):
            raise TypeError("Options.outputMode: expected a poptorch.OutputMode, got %r"
                            % (output_mode,))
        if output_mode == OutputMode.EveryN:
            self.output_return_period = _positive_int("Options.outputMode's output_return_period",
                                                      output_return_period)
        elif output_return_period is not None:
            raise ValueError("Options.outputMode: output_return_period applies to OutputMode.EveryN "
                             "only, not %s" % output_mode.name)
        self.output_mode = output_mode
        return self

    def randomSeed(self, random_seed):
        if isinstance(random_seed, bool) or not isinstance(random_seed, int) or random_seed < 0:
            raise ValueError("Options.randomSeed must be a non-negative int, got %r" % (random_seed,))
        self.random_seed = random_seed
        return self

    def useIpuModel(self, use_model):
        """True: a simulated IPU model device; False: IPUs from xtrain's pool (docs/devices.md)."""
        if not isinstance(use_model, bool):
            raise TypeError("Options.useIpuModel: expected a bool, got %r" % (use_model,))
        self.use_ipu_model = use_model
        return self

    def useIpuId(self, ipu_id):
        """Honoured: the device with this id from xtrain's pool (DeviceManager.acquireDeviceById;
        docs/devices.md); it must have replicationFactor IPUs."""
        if isinstance(ipu_id, bool) or not isinstance(ipu_id, int) or ipu_id < 0:
            raise ValueError("Options.useIpuId must be a non-negative int, got %r" % (ipu_id,))
        self.ipu_id = ipu_id
        return self

    def autoRoundNumIPUs(self, enabled):
        """Honoured for blocks: a module whose blocks use a number of IPUs per replica that is not
        a power of two (3) gets the next power of two (4, one idle) instead of an error, as in
        PopTorch (_placement.py). It does not round the replicas: replicationFactor(3) fails in
        the pool, which hands out powers of two, saying so."""
        if not isinstance(enabled, bool):
            raise TypeError("Options.autoRoundNumIPUs: expected a bool, got %r" % (enabled,))
        self.auto_round_num_ipus = enabled
        return self

    def logDir(self, log_dir):
        """Honoured: SessionOptions.logDir (prepareDevice writes its memory report there)."""
        if not isinstance(log_dir, str):
            raise TypeError("Options.logDir: expected a str, got %r" % (log_dir,))
        self.log_dir = log_dir
        return self

    def enableSyntheticData(self, enabled):
        """Honoured: inputs are drawn on the device (SyntheticDataMode.RandomNormal), the host's
        are not sent; a call still takes inputs of the right shapes."""
        if not isinstance(enabled, bool):
            raise TypeError("Options.enableSyntheticData: expected a bool, got %r" % (enabled,))
        self.synthetic_data = enabled
        return self

    def connectionType(self, connection_type):
        """Always (the default) is what happens: the device is attached when the model is
        compiled. OnDemand is accepted with no effect: attaching a simulated IPU is immediate.
        Never compiles on an offline device, which cannot run (for compileAndExport;
        _offline.py)."""
        if not isinstance(connection_type, ConnectionType):
            raise TypeError("Options.connectionType: expected a poptorch.ConnectionType, got %r"
                            % (connection_type,))
        self.connection_type = connection_type
        return self

    def enableExecutableCaching(self, path):
        """Accepted, no effect: SessionOptions.enableEngineCaching and cachePath, which xtrain
        accepts without caching (docs/performance.md: compiling is 30-120 ms, of which a cache could
        skip under one training step); nothing is written to path."""
        if not isinstance(path, str):
            raise TypeError("Options.enableExecutableCaching: expected a directory (str), got %r"
                            % (path,))
        self.executable_cache_dir = path
        return self

    def setExecutionStrategy(self, strategy):
        """How the module's blocks run on the replica's IPUs: PipelinedExecution (the default) or
        ShardedExecution (_strategies.py; the phased strategies are refused when made)."""
        if not isinstance(strategy, _strategies.STRATEGY_TYPES):
            raise TypeError("Options.setExecutionStrategy: expected a poptorch.PipelinedExecution "
                            "or poptorch.ShardedExecution, got %r" % (strategy,))
        self.execution_strategy = strategy
        return self

    def loadFromFile(self, filepath):
        """Sets options from a file of PopTorch's config form: one call per line, written as in
        Python without the ``options.`` prefix (``deviceIterations(2)``,
        ``Training.gradientAccumulation(4)``, ``outputMode(poptorch.OutputMode.All)``); blank lines
        and lines starting with # are skipped. A bad line is a ValueError naming the file and
        line."""
        with open(filepath) as f:
            lines = f.read().splitlines()
        for number, line in enumerate(lines, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                self._apply_config_line(text)
            except (ValueError, TypeError, AttributeError, NotImplementedError) as e:
                raise ValueError("%s:%d: %r: %s" % (filepath, number, text, e)) from e
        return self

    def _apply_config_line(self, text):
        try:
            call = ast.parse(text, mode="eval").body
        except SyntaxError:
            call = None
        if not isinstance(call, ast.Call) or any(k.arg is None for k in call.keywords):
            raise ValueError("expected an option call such as deviceIterations(2)")
        target = self
        for name in _dotted(call.func):
            target = getattr(target, name)
        args = [_config_value(a) for a in call.args]
        kwargs = {k.arg: _config_value(k.value) for k in call.keywords}
        target(*args, **kwargs)

    # ---- what the executor reads ----

    def resolved_output_mode(self, training):
        if self.output_mode == OutputMode.Default:
            return OutputMode.Final if training else OutputMode.All
        return self.output_mode

    def batches_per_call(self, training):
        """How many micro-batches of the model one call's inputs hold (PopTorch's rule)."""
        if self.replication_factor % self.input_group_size:
            raise ValueError("Options.inputReplicaGrouping(%d, ...): input groups of %d replicas do "
                             "not divide replicationFactor (%d)" % (
                                 self.input_group_size, self.input_group_size,
                                 self.replication_factor))
        n = self.device_iterations * (self.replication_factor // self.input_group_size)
        return n * self.Training.gradient_accumulation if training else n

    def __repr__(self):
        return ("Options(deviceIterations=%d, replicationFactor=%d, gradientAccumulation=%d, "
                "outputMode=%s, randomSeed=%r, useIpuModel=%r)"
                % (self.device_iterations, self.replication_factor,
                   self.Training.gradient_accumulation, self.output_mode.name, self.random_seed,
                   self.use_ipu_model))


def _dotted(node):
    """["Training", "gradientAccumulation"] of ``Training.gradientAccumulation``."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + [node.attr]
    raise ValueError("expected a dotted name, got %s" % ast.dump(node))


def _config_value(node):
    """A literal, a dotted name of xtrain.torch (``poptorch.OutputMode.All``, ``OutputMode.All``)
    or torch (``torch.float``), or a call of xtrain.torch's (``poptorch.ShardedExecution()``,
    ``poptorch.Stage("B").ipu(1)``, as PopTorch's own config file has) with such values."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.Call):
        function = _config_value(node.func)
        if not callable(function) or \
                not getattr(function, "__module__", "").startswith("xtrain.torch"):
            raise ValueError("only poptorch's classes and methods can be called in a config "
                             "file, got %s" % ast.dump(node.func))
        if any(k.arg is None for k in node.keywords):
            raise ValueError("expected keyword arguments by name, got %s" % ast.dump(node))
        return function(*[_config_value(a) for a in node.args],
                        **{k.arg: _config_value(k.value) for k in node.keywords})
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call):
        return getattr(_config_value(node.value), node.attr)
    import torch
    from .. import torch as poptorch
    names = _dotted(node)
    roots = {"poptorch": poptorch, "torch": torch}
    value = roots[names[0]] if names[0] in roots else getattr(poptorch, names[0])
    for name in names[1:]:
        value = getattr(value, name)
    return value
