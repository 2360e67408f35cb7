"""PopTorch's option groups ``opts.Precision``, ``opts.TensorLocations``, ``opts.Distributed`` and
``opts.Jit`` for xtrain.torch (docs/poptorch.md, "Options").

Each setter is honoured (it sets the SessionOptions member named in ``apply``), accepted with no
effect for the reason in its docstring, or refused with NotImplementedError saying why.
"""
import enum

import torch

from .. import dist as _dist
from . import _logging


class HalfFloatCastingBehavior(enum.IntEnum):
    """How ops mixing float16 and float32 are cast (PopTorch's enum)."""
    FloatDowncastToHalf = 0
    HalfUpcastToFloat = 1


def _bool(where, value):
    if not isinstance(value, bool):
        raise TypeError("%s: expected a bool, got %r" % (where, value))
    return value


def _count(where, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("%s must be a non-negative int, got %r" % (where, value))
    return value


class _PrecisionOptions:
    """``opts.Precision``. Float16 modules and inputs are captured as they are (docs/poptorch.md,
    "Float16"), with PopTorch 3's rule for mixed float16/float32 operations (compute in float32),
    which PopTorch's deprecated casting options no longer change."""

    def __init__(self, parent):
        self._parent = parent
        self.floating_point_checks = False
        self.stochastic_rounding = False
        self.half_float_casting = HalfFloatCastingBehavior.HalfUpcastToFloat
        self.running_statistics_always_float = False
        self.autocast_enabled = True

    def setPartialsType(self, dtype):
        """Honoured for torch.float (matmuls and convolutions accumulate in float32, as xtrain's
        kernels do); torch.half is refused: xtrain keeps half-precision partials for MatMul only
        (SessionOptions.partialsTypeMatMuls), not for Gemm (nn.Linear) or convolutions, which
        PopTorch's option covers too."""
        if dtype in (torch.half, torch.float16):
            raise NotImplementedError(
                "Options.Precision.setPartialsType(torch.half): half-precision partials are not "
                "implemented in xtrain for nn.Linear's Gemm and for convolutions (only for MatMul, "
                "SessionOptions.partialsTypeMatMuls); they accumulate in float32")
        if dtype not in (torch.float, torch.float32):
            raise ValueError("Options.Precision.setPartialsType: expected torch.float or "
                             "torch.half, got %r" % (dtype,))
        return self._parent

    def enableFloatingPointExceptions(self, enabled):
        """Honoured: an inf or nan produced by an op fails the call, naming the op and tensor
        (SessionOptions.enableFloatingPointChecks)."""
        self.floating_point_checks = _bool("Options.Precision.enableFloatingPointExceptions",
                                           enabled)
        return self._parent

    def enableStochasticRounding(self, enabled):
        """Honoured: SessionOptions.enableStochasticRounding, which rounds the float16 weights
        and optimizer state a step stores stochastically (docs/optimizers.md)."""
        self.stochastic_rounding = _bool("Options.Precision.enableStochasticRounding", enabled)
        return self._parent

    def halfFloatCasting(self, behavior):
        """Accepted, no effect, as in PopTorch 3, which deprecates it: mixed float16/float32
        operations always compute in float32 (HalfUpcastToFloat, PyTorch's rule). Asking for
        FloatDowncastToHalf logs a warning saying so, as PopTorch does."""
        if not isinstance(behavior, HalfFloatCastingBehavior):
            raise TypeError("Options.Precision.halfFloatCasting: expected a "
                            "poptorch.HalfFloatCastingBehavior, got %r" % (behavior,))
        if behavior != HalfFloatCastingBehavior.HalfUpcastToFloat:
            _logging.logger.warning(
                "Options.Precision.halfFloatCasting(%s) has no effect: mixed float16/float32 "
                "operations always compute in float32 (PopTorch 3's rule); cast the float32 "
                "inputs to float16 in forward for a float16 operation" % behavior.name)
        self.half_float_casting = behavior
        return self._parent

    def runningStatisticsAlwaysFloat(self, value):
        """Accepted, no effect, as in PopTorch 3, which deprecates it: the running statistics have
        the dtype the module gives them (cast them to float32 for float32 statistics in a float16
        BatchNorm). True logs a warning saying so, as PopTorch does."""
        self.running_statistics_always_float = _bool(
            "Options.Precision.runningStatisticsAlwaysFloat", value)
        if value:
            _logging.logger.warning(
                "Options.Precision.runningStatisticsAlwaysFloat(True) has no effect: cast the "
                "BatchNorm's running_mean and running_var to float32 instead")
        return self._parent

    def autocastEnabled(self, value):
        """Accepted, no effect: automatic casting (PopTorch's autocast policies) is not built;
        operations run in the dtypes the module and forward give them."""
        self.autocast_enabled = _bool("Options.Precision.autocastEnabled", value)
        return self._parent

    def __getattr__(self, name):
        raise AttributeError("poptorch.Options.Precision has no option '%s'" % name)

    def apply(self, opts):
        opts.enableFloatingPointChecks = self.floating_point_checks
        opts.enableStochasticRounding = self.stochastic_rounding
        opts.partialsTypeMatMuls = "float"


class TensorLocationSettings:
    """PopTorch's TensorLocationSettings: where a class of tensors lives (docs/session-options.md:
    OffChip storage and replicated tensor sharding of weights, optimizer state and accumulators)."""

    def __init__(self):
        self.on_chip = True
        self.sharded = False
        self.min_elements_off_chip = None
        self.min_elements_sharding = None

    def useOnChipStorage(self, use=True):
        self.on_chip = _bool("TensorLocationSettings.useOnChipStorage", use)
        return self

    def useReplicatedTensorSharding(self, use=True):
        self.sharded = _bool("TensorLocationSettings.useReplicatedTensorSharding", use)
        return self

    def minElementsForOffChip(self, n):
        self.min_elements_off_chip = _count("TensorLocationSettings.minElementsForOffChip", n)
        return self

    def minElementsForReplicatedTensorSharding(self, n):
        self.min_elements_sharding = _count(
            "TensorLocationSettings.minElementsForReplicatedTensorSharding", n)
        return self

    def useIOTilesToLoad(self, use=True):
        """Accepted, no effect: a simulated IPU has no IO tiles (SessionOptions' tile sets)."""
        _bool("TensorLocationSettings.useIOTilesToLoad", use)
        return self

    def useIOTilesToStore(self, use=True):
        """Accepted, no effect, as useIOTilesToLoad."""
        _bool("TensorLocationSettings.useIOTilesToStore", use)
        return self

    def to_xtrain(self, xtrain):
        settings = xtrain.TensorLocationSettings()
        location = settings.location
        location.storage = xtrain.TensorStorage.OnChip if self.on_chip else \
            xtrain.TensorStorage.OffChip
        location.replicatedTensorSharding = xtrain.ReplicatedTensorSharding.On if self.sharded \
            else xtrain.ReplicatedTensorSharding.Off
        settings.location = location
        if self.min_elements_off_chip is not None:
            settings.minElementsForOffChip = self.min_elements_off_chip
        if self.min_elements_sharding is not None:
            settings.minElementsForReplicatedTensorSharding = self.min_elements_sharding
        return settings


class _TensorLocationOptions:
    """``opts.TensorLocations``: the four classes' TensorLocationSettings, passed to xtrain's
    SessionOptions, which honours or refuses each combination when the session is built."""

    _MEMBERS = {"activation": "activationTensorLocationSettings",
                "weight": "weightTensorLocationSettings",
                "optimizer": "optimizerStateTensorLocationSettings",
                "accumulator": "accumulatorTensorLocationSettings"}

    def __init__(self, parent):
        self._parent = parent
        self.locations = {}
        self.io_tiles = 0

    def _set(self, kind, location):
        if not isinstance(location, TensorLocationSettings):
            raise TypeError("Options.TensorLocations: expected a poptorch.TensorLocationSettings "
                            "for the %s location, got %r" % (kind, location))
        self.locations[kind] = location
        return self._parent

    def setActivationLocation(self, location):
        return self._set("activation", location)

    def setWeightLocation(self, location):
        return self._set("weight", location)

    def setOptimizerLocation(self, location):
        return self._set("optimizer", location)

    def setAccumulatorLocation(self, location):
        return self._set("accumulator", location)

    def numIOTiles(self, n):
        """Accepted, no effect: a simulated IPU has no tiles to set aside for IO."""
        self.io_tiles = _count("Options.TensorLocations.numIOTiles", n)
        return self._parent

    def __getattr__(self, name):
        raise AttributeError("poptorch.Options.TensorLocations has no option '%s'" % name)

    def apply(self, opts, xtrain):
        for kind, location in self.locations.items():
            setattr(opts, self._MEMBERS[kind], location.to_xtrain(xtrain))


class _DistributedOptions:
    """``opts.Distributed``: PopTorch's settings for launchers other than PopRun. xtrain's
    instances are started by xrun, which says each one's place: values that agree with xrun's are
    accepted, anything else is refused (another launcher's processes cannot join an xtrain job)."""

    def __init__(self, parent):
        self._parent = parent

    @property
    def processId(self):
        return _dist.getInstanceIndex() if _dist.isPopdistEnvSet() else 0

    @property
    def numProcesses(self):
        return _dist.getNumInstances() if _dist.isPopdistEnvSet() else 1

    def configureProcessId(self, process_id, process_count):
        if (process_id, process_count) != (self.processId, self.numProcesses):
            raise NotImplementedError(
                "Options.Distributed.configureProcessId(%r, %r): xtrain's processes are started by "
                "xrun, which makes this process instance %d of %d; processes from another launcher "
                "are not implemented (run the script under build/bin/xrun -n N)"
                % (process_id, process_count, self.processId, self.numProcesses))
        return self._parent

    def setEnvVarNames(self, var_num_processes, var_process_id):
        raise NotImplementedError(
            "Options.Distributed.setEnvVarNames(%r, %r): xtrain reads its place in the job from "
            "xrun's environment only; other launchers are not implemented"
            % (var_num_processes, var_process_id))

    def __getattr__(self, name):
        if name == "disable":
            raise NotImplementedError(
                "Options.Distributed.disable is not built in xtrain.torch (docs/poptorch.md, "
                "\"Not built yet\"): outside xrun the process is already alone (0 of 1)")
        raise AttributeError("poptorch.Options.Distributed has no option '%s'" % name)


class _JitOptions:
    """``opts.Jit``: the capture is a trace (torch.onnx's), so traceModel(True) is what happens."""

    def __init__(self, parent):
        self._parent = parent

    def traceModel(self, trace_model):
        if not _bool("Options.Jit.traceModel", trace_model):
            raise NotImplementedError("Options.Jit.traceModel(False): capturing a module by "
                                      "torch.jit.script is not implemented; xtrain.torch traces it")
        return self._parent

    def __getattr__(self, name):
        raise AttributeError("poptorch.Options.Jit has no option '%s'" % name)
