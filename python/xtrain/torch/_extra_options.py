"""PopTorch's options beyond batching and devices (docs/poptorch.md, "More options"): buffers,
extra anchors, the PopART settings PopTorch passes through, and those with nothing to act on in
a simulated IPU (accepted with no effect, each saying why, as SessionOptions does)."""
import enum

from . import _hardware


class MeanReductionStrategy(enum.IntEnum):
    """When a Mean reduction divides (PopTorch's ``MeanReductionStrategy``)."""
    Running = 0  # a running mean of the micro-batches' gradients
    Post = 1  # the sum, divided once after the reduction
    PostAndLoss = 2  # PopTorch's deprecated legacy strategy: refused


class SyncPattern(enum.IntEnum):
    """How the IPUs synchronise with the host (PopTorch's ``SyncPattern``)."""
    Full = 0
    SinglePipeline = 1
    ReplicaAndLadder = 2


def _bool(where, value):
    if not isinstance(value, bool):
        raise TypeError("%s: expected a bool, got %r" % (where, value))
    return value


def _strings(where, values):
    values = list(values)
    if not all(isinstance(v, str) for v in values):
        raise TypeError("%s: expected strings, got %r" % (where, values))
    return values


class PopartOptions:
    """``opts._Popart``: PopART's session options by name, which PopTorch passes through (for
    advanced users). Each is set on xtrain's SessionOptions when the session is built, after
    everything the wrapper sets; a name SessionOptions does not have is refused when set."""

    def __init__(self):
        self.options = {}

    def set(self, key, value):
        from .. import _xtrain
        target, field = _xtrain.SessionOptions(), key
        if not isinstance(key, str):
            raise TypeError("Options._Popart.set: expected an option name (str), got %r" % (key,))
        if "." in key:  # a field of a settings struct: automaticLossScalingSettings.enabled
            head, field = key.split(".", 1)
            target = getattr(target, head, None)
        if target is None or "." in field or not hasattr(target, field):
            raise AttributeError("Options._Popart.set: xtrain's SessionOptions has no option '%s' "
                                 "(docs/session-options.md lists them)" % key)
        self.options[key] = value
        return self

    def __getattr__(self, name):
        if name in ("setPatterns", "setEngineOptions", "checkIsFrozen"):
            raise NotImplementedError(
                "Options._Popart.%s is not built in xtrain.torch (docs/poptorch.md, \"Not built "
                "yet\"): set PopART's options by name with Options._Popart.set" % name)
        raise AttributeError("poptorch.Options._Popart has no option '%s'" % name)

    def apply(self, opts):
        for key, value in self.options.items():
            if "." in key:
                head, field = key.split(".", 1)
                settings = getattr(opts, head)
                setattr(settings, field, value)
                setattr(opts, head, settings)
            else:
                setattr(opts, key, value)


class ExtraTrainingOptions:
    """``opts.Training``'s setters mapped onto xtrain's SessionOptions."""

    def __setstate__(self, state):
        self._init_extra()  # options added after the object was pickled get their defaults
        self.__dict__.update(state)

    def _init_extra(self):
        self.automatic_loss_scaling = False
        self.mean_reduction_strategy = None  # None: xtrain's default (Post)
        self.convolution_dithering = False

    def setAutomaticLossScaling(self, enabled):
        """Honoured: SessionOptions.automaticLossScalingSettings.enabled (PopART's histogram rule
        over the FLOAT16 gradients; docs/optimizers.md section 6.2)."""
        self.automatic_loss_scaling = _bool("Options.Training.setAutomaticLossScaling", enabled)
        return self._parent

    def setMeanAccumulationAndReplicationReductionStrategy(self, mean_reduction_strategy):
        """Honoured for Running and Post: SessionOptions.meanAccumulationAndReplicationReduction
        Strategy. PostAndLoss, deprecated in PopTorch, is refused: xtrain has no such strategy."""
        if not isinstance(mean_reduction_strategy, MeanReductionStrategy):
            raise TypeError("Options.Training.setMeanAccumulationAndReplicationReductionStrategy: "
                            "expected a poptorch.MeanReductionStrategy, got %r"
                            % (mean_reduction_strategy,))
        if mean_reduction_strategy == MeanReductionStrategy.PostAndLoss:
            raise NotImplementedError(
                "MeanReductionStrategy.PostAndLoss (deprecated in PopTorch) is not implemented in "
                "xtrain: use Running or Post")
        self.mean_reduction_strategy = mean_reduction_strategy
        return self._parent

    def setConvolutionDithering(self, enabled):
        """Accepted, no effect: dithering lays convolutions out from different tiles for tile
        balance; a simulated IPU has no tiles (its convolutions are oneDNN's)."""
        self.convolution_dithering = _bool("Options.Training.setConvolutionDithering", enabled)
        return self._parent

    def apply_extra(self, opts, xtrain):
        if self.automatic_loss_scaling:
            settings = opts.automaticLossScalingSettings
            settings.enabled = True
            opts.automaticLossScalingSettings = settings
        if self.mean_reduction_strategy is not None:
            opts.meanAccumulationAndReplicationReductionStrategy = getattr(
                xtrain.MeanReductionStrategy, self.mean_reduction_strategy.name)


class ExtraOptions:
    """The setters of ``poptorch.Options`` this file builds (mixed into Options)."""

    def __setstate__(self, state):
        # A file of compileAndExport written before an option existed: its default.
        self._init_extra()
        self.__dict__.update(state)

    def _init_extra(self):
        self.broadcast_buffers = True  # PopTorch's default
        self.updatable_named_buffers = None
        self.anchored_tensors = {}  # short name -> (long name, output mode or None, period)
        self.stable_norm = False
        self.log_cycle_count = False
        self.model_name = None
        self.show_compilation_progress_bar = True
        self.available_memory_proportion = {}
        self.relax_optimizer_checks = False
        self.sync_pattern = SyncPattern.Full
        self.module_namescope = True
        # PopTorch's default list (no effect here: see sourceLocationExcludes).
        self.source_location_excludes = ["install/poptorch", "site-packages/torch",
                                         "site-packages/poptorch"]
        self._popart = PopartOptions()
        self.offline_ipu_version = None  # xtrain's ipuVersion of useOfflineIpuTarget's device

    def useOfflineIpuTarget(self, ipu_version=2):
        """Honoured, as PopTorch: compiles offline (connectionType(ConnectionType.Never),
        _offline.py) for IPUs of that version (1, 2 or 21; xtrain's ipu1, ipu2, ipu21), without
        taking IPUs from the pool. Not together with useIpuModel(True), as in PopTorch."""
        from ._options import ConnectionType
        self.offline_ipu_version = _hardware.offline_ipu_version(ipu_version)
        return self.connectionType(ConnectionType.Never)

    @property
    def _Popart(self):
        """PopART's options by name (PopartOptions)."""
        return self._popart

    def broadcastBuffers(self, broadcast_buffers=True):
        """Honoured as in PopTorch: buffers that forward updates in place are never broadcast
        between replicas; with several replicas such a model needs broadcastBuffers(False), and
        each replica then keeps its own (the module gets replica 0's)."""
        self.broadcast_buffers = _bool("Options.broadcastBuffers", broadcast_buffers)
        return self

    def updatableNamedBuffers(self, buffers):
        """Honoured: the buffers copyNamedBuffersToDevice() copies to the device."""
        self.updatable_named_buffers = _strings("Options.updatableNamedBuffers", buffers)
        return self

    def anchorTensor(self, short_name, long_name, output_mode=None, output_return_period=1):
        """Honoured: the graph's tensor long_name (torch.onnx's names; a parameter's name is its
        state_dict key, Gradient___<name> its gradient in training) is also read back at each
        call, with its own output mode (default: the outputs'), for getAnchoredTensor(short_name).
        """
        from ._options import OutputMode
        if not isinstance(short_name, str) or not isinstance(long_name, str):
            raise TypeError("Options.anchorTensor: expected names (str), got %r and %r"
                            % (short_name, long_name))
        if output_mode is not None and not isinstance(output_mode, OutputMode):
            raise TypeError("Options.anchorTensor: expected a poptorch.OutputMode, got %r"
                            % (output_mode,))
        if output_mode != OutputMode.EveryN:
            output_return_period = 1
        elif isinstance(output_return_period, bool) or not isinstance(output_return_period, int) \
                or output_return_period < 1:
            raise ValueError("Options.anchorTensor: output_return_period must be a positive int "
                             "for OutputMode.EveryN, got %r" % (output_return_period,))
        self.anchored_tensors[short_name] = (long_name, output_mode, output_return_period)
        return self

    def enableStableNorm(self, enabled):
        """Honoured: SessionOptions.enableStableNorm, which xtrain accepts with no effect (its norm
        kernels always compute the variance stably)."""
        self.stable_norm = _bool("Options.enableStableNorm", enabled)
        return self

    def logCycleCount(self, log_cycle_count):
        """Honoured: SessionOptions.instrumentWithHardwareCycleCounter; cycleCount() of the
        wrapped model then returns the simulated clock's cycles of the last call."""
        self.log_cycle_count = _bool("Options.logCycleCount", log_cycle_count)
        return self

    def modelName(self, name):
        """Accepted, no effect: PopTorch names the profile's subdirectory after it; xtrain.torch
        writes no profile (logDir's memory report goes to logDir itself)."""
        if not isinstance(name, str):
            raise TypeError("Options.modelName: expected a str, got %r" % (name,))
        self.model_name = name
        return self

    def showCompilationProgressBar(self, show=True):
        """Accepted, no effect: compiling takes 30-120 ms (docs/performance.md), no bar is shown."""
        self.show_compilation_progress_bar = _bool("Options.showCompilationProgressBar", show)
        return self

    def setAvailableMemoryProportion(self, available_memory_proportion):
        """Checked as PopTorch does ({"IPU0": 0.5}), then accepted with no effect, as
        set_available_memory: a simulated IPU plans no tile memory."""
        if not isinstance(available_memory_proportion, dict):
            raise TypeError("Options.setAvailableMemoryProportion: expected a dict such as "
                            "{\"IPU0\": 0.5}, got %r" % (available_memory_proportion,))
        proportions = {}
        for key, value in available_memory_proportion.items():
            if not isinstance(key, str) or not key.startswith("IPU") or not key[3:].isdigit():
                raise ValueError("Options.setAvailableMemoryProportion: keys are \"IPU<n>\" (the "
                                 "IPU's index, {\"IPU0\": 0.5}), got %r" % (key,))
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not 0.0 < value <= 1.0:
                raise ValueError("Options.setAvailableMemoryProportion: %s's proportion must be "
                                 "in (0, 1], got %r" % (key, value))
            proportions[int(key[3:])] = float(value)
        self.available_memory_proportion = proportions
        return self

    def relaxOptimizerAttributesChecks(self, relax=True):
        """Accepted, no effect: PopTorch warns once about unexpected optimizer attributes (or, with
        relax, logs them at debug level); xtrain.torch maps the attributes it knows and refuses a
        change it cannot apply (OptimizerError), so there is no warning to relax."""
        self.relax_optimizer_checks = _bool("Options.relaxOptimizerAttributesChecks", relax)
        return self

    def syncPattern(self, sync_pattern):
        """Accepted, no effect: every pattern gives the same results; simulated IPUs exchange with
        the host when a replica's step needs it, with no synchronisation cost to save."""
        if not isinstance(sync_pattern, SyncPattern):
            raise TypeError("Options.syncPattern: expected a poptorch.SyncPattern, got %r"
                            % (sync_pattern,))
        self.sync_pattern = sync_pattern
        return self

    def disableModuleNamescope(self):
        """Honoured: the captured graph's op names drop the module path torch.onnx gives them
        (/fc/Gemm becomes Gemm); tensor names, which anchorTensor uses, keep it."""
        self.module_namescope = False
        return self

    def sourceLocationExcludes(self, excludes):
        """Accepted, no effect: PopTorch skips these frames when it records each op's source line
        in its IR; xtrain's graph records no source locations. Kept for appendToLocationExcludes."""
        self.source_location_excludes = _strings("Options.sourceLocationExcludes", excludes)
        return self

    def appendToLocationExcludes(self, *excludes):
        """Accepted, no effect (see sourceLocationExcludes)."""
        self.source_location_excludes += _strings("Options.appendToLocationExcludes", excludes)
        return self

    def apply_extra(self, opts):
        """The options that are SessionOptions settings."""
        opts.enableStableNorm = self.stable_norm
        opts.instrumentWithHardwareCycleCounter = self.log_cycle_count

    def apply_popart(self, opts):
        """opts._Popart's settings, last (over the wrapper's)."""
        self._popart.apply(opts)
