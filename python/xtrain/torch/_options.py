"""PopTorch's ``poptorch.Options`` for xtrain (docs/poptorch.md, "Options").

Each setter returns the Options object, so calls chain as in PopTorch
(``opts.deviceIterations(4).replicationFactor(2)``). The options PopTorch has and this slice does not
implement yet raise ``NotImplementedError`` naming the option, rather than being silently dropped;
names PopTorch does not have raise ``AttributeError``.
"""
import enum
import os

from .. import dist as _dist


class OutputMode(enum.IntEnum):
    """What a call returns of the device iterations' outputs (PopTorch's ``OutputMode``)."""
    Final = 0  # the last micro-batch's outputs only
    EveryN = 1  # every N-th device iteration's
    All = 2  # every micro-batch's, concatenated along the batch dimension
    Sum = 3  # the sum over the device iterations and micro-batches
    Default = 4  # Final for training, All for inference


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


# PopTorch's option names that xtrain.torch does not implement yet: refused with a clear error.
_OPTIONS_NOT_BUILT = (
    "useIpuId", "autoRoundNumIPUs", "logDir", "enableSyntheticData", "connectionType",
    "enableExecutableCaching", "loadFromFile", "setExecutionStrategy", "broadcastBuffers",
    "anchorTensor", "enableStableNorm", "logCycleCount", "syncPattern",
    "relaxOptimizerAttributesChecks", "showCompilationProgressBar", "setAvailableMemoryProportion",
    "modelName", "updatableNamedBuffers", "inputReplicaGrouping", "disableModuleNamescope",
    "sourceLocationExcludes", "appendToLocationExcludes", "_Popart",
)
_SUBOPTIONS_NOT_BUILT = ("Precision", "TensorLocations", "Distributed", "Jit")
_TRAINING_NOT_BUILT = ("setAutomaticLossScaling", "setMeanAccumulationAndReplicationReductionStrategy",
                       "setConvolutionDithering")


class _TrainingOptions:
    """``opts.Training``: gradient accumulation and its reduction."""

    def __init__(self, parent):
        self._parent = parent
        self.gradient_accumulation = 1
        self.reduction = ReductionType.Mean  # PopTorch's default (PopART's is Sum)

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


class _OptionsNotBuilt:
    """A PopTorch sub-options object (``opts.Precision`` ...) that this slice does not have yet."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, member):
        return _not_implemented("Options." + self._name, member)


class Options:
    """PopTorch's options: how a wrapped model is batched, replicated and run."""

    def __init__(self):
        self.device_iterations = 1
        # Under xrun, the instance's replicas, as popdist's Options (docs/poptorch.md, "xrun").
        self.replication_factor = _dist.getNumLocalReplicas() if _dist.isPopdistEnvSet() else 1
        self.output_mode = OutputMode.Default
        self.output_return_period = 1
        self.random_seed = None
        # POPTORCH_IPU_MODEL=1 selects the IPU model, as in PopTorch (docs/poptorch.md).
        self.use_ipu_model = os.environ.get("POPTORCH_IPU_MODEL", "0") not in ("", "0")
        self.Training = _TrainingOptions(self)

    def __getattr__(self, name):
        # Called only for names not found normally: PopTorch's options not built yet, or typos.
        if name in _SUBOPTIONS_NOT_BUILT:
            return _OptionsNotBuilt(name)
        if name in _OPTIONS_NOT_BUILT:
            return _not_implemented("Options", name)
        raise AttributeError("poptorch.Options has no option '%s'" % name)

    def deviceIterations(self, device_iterations):
        """Batches (optimizer steps, when training) run per call of the wrapped model."""
        self.device_iterations = _positive_int("Options.deviceIterations", device_iterations)
        return self

    def replicationFactor(self, replication_factor):
        """Local replicas, each on its own simulated IPU."""
        self.replication_factor = _positive_int("Options.replicationFactor", replication_factor)
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

    # ---- what the executor reads ----

    def resolved_output_mode(self, training):
        if self.output_mode == OutputMode.Default:
            return OutputMode.Final if training else OutputMode.All
        return self.output_mode

    def batches_per_call(self, training):
        """How many micro-batches of the model one call's inputs hold (PopTorch's rule)."""
        n = self.device_iterations * self.replication_factor
        return n * self.Training.gradient_accumulation if training else n

    def __repr__(self):
        return ("Options(deviceIterations=%d, replicationFactor=%d, gradientAccumulation=%d, "
                "outputMode=%s, randomSeed=%r, useIpuModel=%r)"
                % (self.device_iterations, self.replication_factor,
                   self.Training.gradient_accumulation, self.output_mode.name, self.random_seed,
                   self.use_ipu_model))
