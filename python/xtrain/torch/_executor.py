"""PopTorch's ``PoplarExecutor``: a module wrapped for training or inference on xtrain.

The first call (or ``compile``) captures the module (_capture.py), builds an xtrain TrainingSession
or InferenceSession with the options (_options.py) and the optimizer (_optimizer_map.py), and
every call runs one session step: ``deviceIterations`` batches (each of ``gradientAccumulation``
micro-batches per replica, in training).

Weights. The module is the reference copy, as in PopTorch. After a training call the device's
weights are newer than the module's; they are read back into the module's tensors' memory lazily,
when the module's state is next read or another executor of the module runs (_module_sync.py), as
PopTorch does. Before a call, the executor pushes the
module's state to the device if it changed since the executor last synchronised: a tensor's
identity or in-place version counter, or the generations of its modules, which every copy of
trained values into them bumps (_device_weights.py). So an inferenceModel of the same module, or of
a module inside it (PopTorch's trainingModel(WithLoss(model)) with inferenceModel(model)), sees what
a trainingModel trained, and the reverse. A change the version counter cannot see (through
``tensor.data``) needs ``copyWeightsToDevice()``, as PopTorch asks for explicit copies.
"""
import copy
import functools
import math
import weakref

import numpy as np
import torch
from onnx import numpy_helper

from .. import _xtrain
from .. import dist as _dist
from . import (_anchored, _buffers, _capture, _environment, _errors, _export, _module_sync,
               _offline, _placement, _replica_grouping, _structure)
from ._device_weights import DeviceWeights, generation
from ._optimizer_state import OptimizerState
from ._optimizer_map import OptimizerPlan, OptimizerError, is_same, unchanged
from ._options import Options, ReductionType


def _model_name(model):
    return type(model).__name__


def _backend_errors(method):
    """xtrain's exceptions raised in a PopTorch method become PopTorch's classes (_errors.py)."""
    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        with _errors.backend(method.__name__):
            return method(self, *args, **kwargs)
    return wrapped


class PoplarExecutor:
    """A torch.nn.Module wrapped by trainingModel or inferenceModel."""

    def __init__(self, model, options, training, optimizer=None):
        if isinstance(model, PoplarExecutor):  # PopTorch: inferenceModel(training_model)
            # Its module, with the options given or the defaults (as PopTorch): not the training
            # wrapper's, which are compiled for training (gradient accumulation, say).
            model = model.model
        if not isinstance(model, torch.nn.Module):
            raise TypeError("%s: expected a torch.nn.Module, got %s"
                            % ("trainingModel" if training else "inferenceModel",
                               type(model).__name__))
        if options is None:
            options = Options()
        if not isinstance(options, Options):
            raise TypeError("options must be an xtrain.torch.Options, got %s" % type(options).__name__)
        if not training and options.Training.gradient_accumulation != 1:
            raise ValueError("inferenceModel: Options.Training.gradientAccumulation is %d; it must be "
                             "1 for inference (there are no gradients to accumulate)"
                             % options.Training.gradient_accumulation)
        if training and optimizer is None:
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)  # PopTorch's default
        if not training and optimizer is not None:
            raise ValueError("inferenceModel takes no optimizer")
        self.model = model
        # A copy, as the model is compiled for these values: changing the caller's Options later
        # does not change the wrapper (wrap again for other options).
        self.options = copy.deepcopy(options)
        self.training = training
        self._optimizer = optimizer
        self._stored_capture = None  # a capture read from a file (_export.py), used to compile
        self._per_replica = {}  # parameter name -> _replica_grouping.Grouping (replicaGrouping)
        if training:
            OptimizerPlan(optimizer, {})  # refuses an optimizer xtrain cannot map, now
        _module_sync.watch(model)
        self._reset()

    def _reset(self):
        self._captured = None
        self._layout = None
        self._loss = "loss"
        self._input_groups = None
        self._grouped = {}
        self._session = None
        self._device = None
        self._weights = None
        self._plan = None
        self._plan_optimizer = None
        self._opt_state = None
        self._host_info = {}
        self._anchors = None
        self._anchored = {}  # Options.anchorTensor's tensors of the last call, by short name
        self._micro_batch = None
        self._synced = None

    # ---- PopTorch's methods ----

    @_backend_errors
    def __call__(self, *args, **kwargs):
        names, values = _capture.forward_argument_names(self.model, args, kwargs)
        inputs = self._inputs(names, values)
        if self._session is None:
            with _errors.backend("compile"):
                self._compile(names, values)
        self._check_attached("run the model")
        feeds = self._feeds(inputs)
        # Another executor's training (of this module, one around it or one inside it) goes into
        # the module first.
        _module_sync.flush_overlapping(self.model, skip=self._weights)
        if self._module_changed():
            self._check_structure()
            self._check_constant_buffers()
            self.copyWeightsToDevice()
        if self.training:
            self._update_optimizer_if_changed()
        self._session.run(_xtrain.PyStepIO(feeds, self._anchors))
        if self.options.anchored_tensors:
            self._anchored = _anchored.read_anchored(self.options, self._anchors, self._info)
        if self.training:
            # The module's tensors are now older than the device's: copied when next read.
            _module_sync.mark_stale(self.model, self._weights)
            self._count_batchnorm_batches()
            self._opt_state.advance(self.options.device_iterations)
            # The device stepped the optimizer: count it as torch's LR schedulers do, so that
            # scheduler.step() after a call does not warn that optimizer.step() was never called.
            if hasattr(self._optimizer, "_step_count"):
                self._optimizer._step_count += 1
        return self._outputs()

    @_backend_errors
    def compile(self, *args, **kwargs):
        """Captures the module and builds its session without running a step."""
        names, values = _capture.forward_argument_names(self.model, args, kwargs)
        self._inputs(names, values)
        if self._session is None:
            self._compile(names, values)

    def compileAndExport(self, filename, *args, export_model=True, **kwargs):
        """PopTorch's precompilation: compiles for these inputs and writes the captured graph, the
        options and the weights (and, with export_model, the module and its optimizer) to
        filename, for poptorch.load or loadExecutable (_export.py)."""
        self.compile(*args, **kwargs)
        _export.write(self, filename, export_model)

    def loadExecutable(self, filename):
        """Compiles from a file of compileAndExport (export_model=False, or any) instead of
        capturing the module: the module must have the tensors the file's graph was captured
        with."""
        _export.read_into(self, filename)

    def isCompiled(self):
        return self._session is not None

    @_backend_errors
    def copyWeightsToHost(self):
        """Copies the device's weights and buffers into the module (offline: none to copy)."""
        if self._session is not None and not _offline.is_offline(self.options):
            self._check_attached("copyWeightsToHost")
            self._copy_weights_to_module()

    @_backend_errors
    def copyWeightsToDevice(self):
        """Copies the module's weights and buffers to the device."""
        if self._session is None:
            return
        self._check_attached("copyWeightsToDevice")
        self._check_structure()
        with _module_sync.quiet():
            # Pending trained weights first, or they would be lost.
            _module_sync.flush_overlapping(self.model)
            arrays = _capture.state_arrays(self.model, self._captured.state_names)
        for name, array in arrays.items():
            want, shape = self._info(name)
            if array.dtype != want or list(array.shape) != list(shape):
                raise ValueError(
                    "%s's tensor '%s' is now %s %s, but the compiled model has %s %s: a module "
                    "changed after wrapping needs a new wrapper (or destroy() and call again)"
                    % (_model_name(self.model), name, array.dtype, tuple(array.shape), want,
                       tuple(shape)))
        self._session.writeWeights(_xtrain.PyWeightsIO(arrays))
        self._session.weightsFromHost()
        self._synced = self._versions()

    def getAnchoredTensor(self, short_name):
        """The tensor Options.anchorTensor(short_name, ...) anchored, from the last call."""
        if short_name not in self._anchored:
            raise ValueError("getAnchoredTensor: no tensor anchored as %r%s (anchored: %s)" % (
                short_name, "" if self._anchored else " after a call",
                ", ".join(map(repr, self.options.anchored_tensors)) or "none"))
        return self._anchored[short_name]

    @_backend_errors
    def cycleCount(self):
        """The simulated clock's cycles of the last call (Options.logCycleCount(True))."""
        if not self.options.log_cycle_count:
            raise ValueError("cycleCount: cycle counting is off; set Options.logCycleCount(True)")
        if self._session is None:
            raise ValueError("cycleCount: run the model at least once first")
        return self._session.getCycleCount()

    @_backend_errors
    def copyNamedBuffersToDevice(self):
        """Copies the buffers Options.updatableNamedBuffers names to the device (the device's
        other weights and buffers stay as they are)."""
        arrays = _anchored.named_buffer_arrays(self.model, self.options)
        if self._session is None:
            return
        self._check_attached("copyNamedBuffersToDevice")
        self._session.weightsToHost()  # the rest of the host copy as the device has it
        self._session.writeWeights(_xtrain.PyWeightsIO(arrays))
        self._session.weightsFromHost()

    @_backend_errors
    def setOptimizer(self, optimizer):
        """Uses another optimizer (or new values of this one) from the next call."""
        if not self.training:
            raise ValueError("setOptimizer: an inferenceModel has no optimizer")
        OptimizerPlan(optimizer, {})
        self._optimizer = optimizer
        if self._session is not None:
            self._update_optimizer_if_changed()

    @_backend_errors
    def detachFromDevice(self):
        if self._session is None:
            raise RuntimeError("detachFromDevice: the model has not been compiled yet")
        if not self._device.isAttached:
            raise RuntimeError("detachFromDevice: the model is already detached")
        if self.training:
            self._copy_weights_to_module()
            self._opt_state.to_torch(self._optimizer)
        self._device.detach()

    @_backend_errors
    def attachToDevice(self):
        if self._session is None:
            raise RuntimeError("attachToDevice: the model has not been compiled yet")
        if _offline.is_offline(self.options):
            _offline.refuse("attachToDevice")
        if self._device.isAttached:
            raise RuntimeError("attachToDevice: the model is already attached")
        if not self._device.attach():
            raise RuntimeError("attachToDevice: the device's IPUs are held by another process or "
                               "model: %r" % (self._device,))

    def isAttachedToDevice(self):
        return self._session is not None and self._device.isAttached

    @_backend_errors
    def destroy(self):
        """Releases the session and its device; the next call compiles again."""
        if self._session is not None and self._device.isAttached:
            if self.training:  # the module and the torch optimizer keep what was trained
                self._copy_weights_to_module()
                self._opt_state.to_torch(self._optimizer)
            self._device.detach()
        self._reset()

    def __getattr__(self, name):
        # The module's attributes, as PopTorch's wrapper exposes them; a parameter with
        # replicaGrouping (_replica_grouping.py), as PopTorch's.
        model = self.__dict__.get("model")
        if model is None:
            raise AttributeError(name)
        value = getattr(model, name)
        if isinstance(value, torch.nn.Parameter):
            return _replica_grouping.ParameterHandle(self, name, value)
        return value

    def __repr__(self):
        return "%s(%s, %s)" % ("trainingModel" if self.training else "inferenceModel",
                               _model_name(self.model), self.options)

    # ---- compiling ----

    def _batches(self):
        return self.options.batches_per_call(self.training)

    def _inputs(self, names, values):
        """{name: tensor} checked: tensors with a batch dimension the options divide."""
        inputs = {}
        for name, value in zip(names, values):
            if not isinstance(value, torch.Tensor):
                raise TypeError("%s.forward argument '%s': expected a torch.Tensor, got %s "
                                "(non-tensor arguments are not implemented yet)"
                                % (_model_name(self.model), name, type(value).__name__))
            if value.dim() == 0:
                raise ValueError("%s.forward argument '%s' is a 0-d tensor: inputs need a batch "
                                 "dimension" % (_model_name(self.model), name))
            if value.dtype == torch.float64:
                value = value.float()  # PopTorch runs doubles as float32
            batches = self._batches()
            if value.shape[0] % batches:
                raise ValueError(self._batch_message(name, value, batches))
            inputs[name] = value
        return inputs

    def _batch_message(self, name, value, batches):
        o = self.options
        rule = "deviceIterations (%d) x replicationFactor (%d)" % (o.device_iterations,
                                                                  o.replication_factor)
        if self.training:
            rule += " x gradientAccumulation (%d)" % o.Training.gradient_accumulation
        expected = "a multiple of %d" % batches if self._micro_batch is None else \
            "%d (%d micro-batches of %d)" % (batches * self._micro_batch, batches,
                                              self._micro_batch)
        return ("%s.forward argument '%s' has batch dimension %d (shape %s), expected %s: one call "
                "takes %s micro-batches (PopTorch's rule; the micro-batch size is fixed by the "
                "first call)" % (_model_name(self.model), name, value.shape[0],
                                 tuple(value.shape), expected, rule))

    def _compile(self, names, values):
        model = self.model
        batches = self._batches()
        micro = [v.float() if v.dtype == torch.float64 else v for v in values]
        micro = [v[: v.shape[0] // batches] for v in micro]
        captured = self._stored_capture
        if captured is None:
            replicas = self.options.replication_factor
            with _replica_grouping.first_group_in_place(model, self._per_replica, replicas):
                captured = _capture.capture(model, names, micro, self.training,
                                            self.options.execution_strategy)
            _replica_grouping.write_groupings(captured.proto, model, self._per_replica, replicas)
            if self.training:
                _replica_grouping.scale_loss_for_mean(captured.proto, self.options,
                                                      self._per_replica)
            if not self.options.module_namescope:
                _anchored.drop_module_namescopes(captured.proto)
        self._use_capture(captured, micro[0].shape[0] if micro else 1)

    def _use_capture(self, captured, micro_batch):
        """Builds the session of a captured module (just captured, or read by _export.py)."""
        model = self.model
        weight_names = {}
        if self.training:
            state = set(captured.state_names)
            weight_names = {id(p): n for n, p in model.named_parameters() if n in state}
            self._plan = OptimizerPlan(self._optimizer, weight_names)
            self._plan_optimizer = self._optimizer
        self._weight_names = weight_names
        self._captured = captured
        self._compiled_structure = self._structure()
        # The values the graph holds (from the module, or from a file of compileAndExport).
        self._constant_values = {
            node.output[0]: torch.from_numpy(numpy_helper.to_array(node.attribute[0].t).copy())
            for node in captured.proto.graph.node
            if node.op_type == "Constant" and node.output[0] in captured.constant_buffers}
        self._check_constant_buffers()
        _anchored.check_updatable_buffers(model, self.options, captured)
        _buffers.check_replicas(model, captured.updated_buffers, self.options,
                                _dist.getNumTotalReplicas() if _dist.isPopdistEnvSet()
                                else self.options.replication_factor)
        self._micro_batch = micro_batch
        self._input_groups = _replica_grouping.input_groups(self.options)
        self._loss = _replica_grouping.training_loss(captured.proto)
        # The blocks' placement (_placement.py), checked against the options before building.
        self._layout = _placement.placed_layout(captured.proto)
        if self._layout is not None:
            self._layout.check(self.options, self.training)
        self._build_session()

    def _session_options(self):
        o = self.options
        opts = _xtrain.SessionOptions()
        # PyTorch's BatchNorm keeps the unbiased running variance (docs/onnx-import.md).
        opts.batchNormRunningVariance = "pytorch"
        if o.replication_factor > 1:
            opts.enableReplicatedGraphs = True
            opts.replicatedGraphCount = o.replication_factor
        if self.training and o.Training.gradient_accumulation > 1:
            opts.enableGradientAccumulation = True
            opts.accumulationFactor = o.Training.gradient_accumulation
        if _dist.isPopdistEnvSet():
            self._configure_for_xrun(opts)
        # Sum with grouped weights: the graph's loss is then scaled (_replica_grouping.py).
        opts.accumulationAndReplicationReductionType = (
            _xtrain.ReductionType.Mean if o.Training.reduction == ReductionType.Mean and
            self._loss == "loss" else _xtrain.ReductionType.Sum)
        o.Precision.apply(opts)
        o.TensorLocations.apply(opts, _xtrain)
        if self._layout is not None:
            self._model_parallel_options(opts)
        if o.log_dir is not None:
            opts.logDir = o.log_dir
        if o.synthetic_data:
            opts.syntheticDataMode = _xtrain.SyntheticDataMode.RandomNormal
        if o.executable_cache_dir is not None:  # accepted by xtrain with no effect
            opts.enableEngineCaching = True
            opts.cachePath = o.executable_cache_dir
        engine = _environment.engine_options()
        if engine:
            opts.engineOptions = {**opts.engineOptions, **engine}
        o.apply_extra(opts)
        if self.training:
            o.Training.apply_extra(opts, _xtrain)
        o.apply_popart(opts)
        return opts

    def _model_parallel_options(self, opts):
        """The blocks' IPUs and stages are in the graph: Manual placement, and pipelining for
        PipelinedExecution over 2 or more IPUs, with PopTorch's default recomputation for it
        (each stage's forward recomputed in its backward instead of stashed: the same weights)."""
        opts.virtualGraphMode = _xtrain.VirtualGraphMode.Manual
        if self._layout.pipelined(self.options):
            opts.enablePipelining = True
            if self.training:
                opts.autoRecomputation = _xtrain.RecomputationType.Pipeline

    def _ipus_per_replica(self):
        return 1 if self._layout is None else self._layout.ipus_per_replica(self.options)

    def _configure_for_xrun(self, opts):
        """Under xrun the job's replicas span the instances: the session joins them (popdist's
        configuration), and the options' replicas must be this instance's."""
        local = _dist.getNumLocalReplicas()
        if self.options.replication_factor != local:
            raise ValueError(
                "Options.replicationFactor is %d but xrun gave this instance %d replicas (of %d "
                "in the job): under xrun leave it at its default, the instance's replicas"
                % (self.options.replication_factor, local, _dist.getNumTotalReplicas()))
        _dist.configureSessionOptions(opts)

    def _data_flow(self):
        outputs = self._captured.output_names
        art = _anchored.return_type(self.options, None, None, self.training)
        anchors = {name: art for name in outputs}
        anchors.update(_anchored.extra_anchors(self.options, self.training, outputs))
        return _xtrain.DataFlow(self.options.device_iterations, anchors)

    def _acquire_device(self):
        ipus = self._ipus_per_replica()
        # A device of replicas x IPUs per replica (docs/model-parallelism.md).
        total = self.options.replication_factor * ipus
        if _offline.is_offline(self.options):
            return _offline.device(self.options, total)
        manager = _xtrain.DeviceManager()
        if _dist.isPopdistEnvSet() and not self.options.use_ipu_model:
            if ipus == 1:
                return _dist.getDevice()
            if _dist.getNumIpusPerReplica() != ipus:
                raise ValueError("the module's blocks need %d IPUs per replica, but xrun gave %d: "
                                 "start it with --ipus-per-replica %d"
                                 % (ipus, _dist.getNumIpusPerReplica(), ipus))
            return _dist.getDevice(ipus)
        if self.options.use_ipu_model:
            if self.options.ipu_id is not None:
                raise ValueError("Options.useIpuId(%d) and useIpuModel(True) together: an IPU "
                                 "model device has no id in the pool; choose one"
                                 % self.options.ipu_id)
            return manager.createIpuModelDevice({"numIPUs": total})
        if self.options.ipu_id is not None:
            device = _environment.acquire(manager, total, self.options.ipu_id)
            if device is None:
                raise RuntimeError("Options.useIpuId(%d): no such device in xtrain's pool, or it is "
                                   "taken (docs/devices.md)" % self.options.ipu_id)
            if device.numIpus != total:
                device.detach()
                raise ValueError("Options.useIpuId(%d) is a device of %d IPUs, but the options need "
                                 "%d (%d replicas x %d IPUs per replica, the IPUs the module's "
                                 "blocks use)" % (self.options.ipu_id, device.numIpus, total,
                                                  self.options.replication_factor, ipus))
            return device
        try:
            return _environment.acquire(manager, total)
        except _xtrain.popart_exception as e:
            if ipus == 1:
                raise
            raise ValueError(
                "the module's blocks use IPUs 0 to %d of a replica, so %d replicas need %d IPUs, "
                "which the pool cannot give (%s): place the blocks on fewer IPUs or use fewer "
                "replicas" % (self._layout.ipus - 1, self.options.replication_factor, total, e)) \
                from e

    def _build_session(self):
        proto = self._captured.proto.SerializeToString()
        device = self._acquire_device()
        try:
            if self.training:
                session = _xtrain.TrainingSession(
                    fnModel=proto, dataFlow=self._data_flow(), loss=self._loss,
                    optimizer=self._plan.xtrain, deviceInfo=device,
                    userOptions=self._session_options(), name="trainingModel")
            else:
                session = _xtrain.InferenceSession(
                    fnModel=proto, dataFlow=self._data_flow(), deviceInfo=device,
                    userOptions=self._session_options(), name="inferenceModel")
            if _offline.is_offline(self.options):
                _offline.prepare(session, device)
            else:
                session.prepareDevice()
                if self.options.random_seed is not None:
                    session.setRandomSeed(self.options.random_seed)
        except BaseException:
            device.detach()
            raise
        self._session, self._device = session, device
        if _offline.is_offline(self.options):
            return  # compiled; nothing is copied or run on an offline device (_offline.py)
        # A grouped weight's host value holds every group's (_replica_grouping.py).
        self._grouped = {}
        for name in _replica_grouping.grouped_names(self._captured.proto):
            dtype, shape = self._info(name)
            host_shape = list(self._state_tensors([name])[0][1].shape)
            if len(host_shape) == len(shape) + 1:
                self._grouped[name] = host_shape[0]
                self._host_info[name] = (dtype, host_shape)
        self._weights = DeviceWeights(session, device, self._captured.state_names, self._host_info,
                                      self._copied_callback())
        self._anchors = session.initAnchorArrays()
        if self.training:
            # An optimizer with state (loaded from a checkpoint) resumes on the device: its state
            # goes into the host copy that copyWeightsToDevice sends.
            self._opt_state = OptimizerState(session, self._plan, self._weight_names,
                                             self._grouped)
            self._opt_state.to_device(self._optimizer)
            self._hook_optimizer(self._optimizer)
        self.copyWeightsToDevice()

    def _hook_optimizer(self, optimizer):
        """optimizer.state_dict() reads the device's state first, and load_state_dict() sends the
        loaded state to the device (PopTorch's "Reading and writing optimizer state"): instance
        attributes over the class's methods, calling them."""
        executor = weakref.ref(self)

        def live(ex):
            return ex is not None and ex._optimizer is optimizer and ex._session is not None \
                and ex._device.isAttached

        def state_dict(*args, **kwargs):
            ex = executor()
            if live(ex):
                with _errors.backend("state_dict"), _module_sync.quiet():
                    # The host copy of the device's state is fresh once pending weights landed.
                    _module_sync.flush(ex.model)
                    ex._opt_state.to_torch(optimizer)
            return type(optimizer).state_dict(optimizer, *args, **kwargs)

        def load_state_dict(*args, **kwargs):
            type(optimizer).load_state_dict(optimizer, *args, **kwargs)
            ex = executor()
            if live(ex):
                with _errors.backend("load_state_dict"):
                    if ex._opt_state.to_device(optimizer):
                        ex._session.weightsFromHost()

        optimizer.state_dict = state_dict
        optimizer.load_state_dict = load_state_dict

    # ---- running ----

    def _check_attached(self, what):
        if _offline.is_offline(self.options):
            _offline.refuse(what)
        if not self._device.isAttached:
            raise RuntimeError("cannot %s: the model is detached from its device (call "
                               "attachToDevice() first)" % what)

    def _feeds(self, inputs):
        feeds = {}
        for name in self._captured.input_names:
            value = inputs[name]
            want, shape = self._info(name)
            array = value.detach().cpu().contiguous().numpy()
            if array.dtype != want:
                raise TypeError("%s.forward argument '%s' is %s; the compiled model takes %s (the "
                                "dtype of the first call)" % (_model_name(self.model), name,
                                                              value.dtype, want))
            if array.shape[0] != self._batches() * shape[0] or list(array.shape[1:]) != shape[1:]:
                raise ValueError(self._batch_message(name, value, self._batches())
                                 if array.shape[0] != self._batches() * shape[0] else
                                 "%s.forward argument '%s' has shape %s; the compiled model takes "
                                 "%s per micro-batch" % (_model_name(self.model), name,
                                                         tuple(array.shape), tuple(shape)))
            if self._input_groups is not None:
                array = _replica_grouping.expand_grouped_inputs(array, self._input_groups,
                                                                self.options, self.training)
            feeds[name] = array
        return feeds

    def _outputs(self):
        results = []
        for name in self._captured.output_names:
            array = self._anchors[name]
            shape = list(self._info(name)[1])
            prefix = math.prod(array.shape[: array.ndim - len(shape)])
            if shape:
                array = array.reshape([prefix * shape[0]] + shape[1:])
            elif prefix > 1:
                array = array.reshape([prefix])
            else:
                array = array.reshape([])
            results.append(torch.from_numpy(array.copy()))
        return _structure.unflatten(results, self._captured.structure)

    # ---- weights ----

    def _info(self, name):
        """(NumPy dtype, shape) of a session tensor, asked once."""
        if name not in self._host_info:
            self._host_info[name] = self._session._hostInfo(name)
        return self._host_info[name]

    def _state_tensors(self, names=None):
        with _module_sync.quiet():
            state = self.model.state_dict(keep_vars=True)
        return [(n, state.get(n)) for n in (self._captured.state_names if names is None else names)]

    def _versions(self):
        """What says whether the module changed: its generation (bumped whenever an executor
        writes trained values into it) and each state tensor's identity, version counter and
        dtype (.half() and .float() replace a parameter's data without counting a version)."""
        with _module_sync.quiet():
            state = self.model.state_dict(keep_vars=True)
        tensors = [(n, state.get(n)) for n in self._captured.state_names +
                   self._captured.constant_buffers]
        return (generation(self.model), self._structure(state),
                [(n, id(t), t._version if t is not None else None,
                  t is not None and t.requires_grad, t.dtype if t is not None else None)
                 for n, t in tensors])

    def _structure(self, state=None):
        """The module's tensor names (state_dict's, or those of state) and submodule names."""
        with _module_sync.quiet():
            if state is None:
                state = self.model.state_dict(keep_vars=True)
            return tuple(state), tuple(n for n, _ in self.model.named_modules())

    def _check_structure(self):
        """A tensor or submodule added or removed after compiling: forward was captured without
        it (or with it), so the compiled model cannot follow; refused rather than ignored."""
        now, then = self._structure(), self._compiled_structure
        if now == then:
            return
        changes = []
        for kind, current, compiled in (("tensor", now[0], then[0]),
                                        ("submodule", now[1], then[1])):
            changes += ["%s '%s' added" % (kind, n) for n in current if n not in compiled]
            changes += ["%s '%s' removed" % (kind, n) for n in compiled if n not in current]
        raise ValueError(
            "%s changed after compiling: %s. The compiled model holds the module as forward was "
            "captured at the first call; call destroy() and call the model again to compile it "
            "as it is now (or wrap it again)"
            % (_model_name(self.model), ", ".join(changes) or "its tensors were reordered"))

    def _check_constant_buffers(self):
        """A buffer or frozen parameter the training graph holds as a constant
        (_capture._trained_state) cannot take a new value, and a parameter cannot be frozen or
        unfrozen after compiling: refused rather than silently ignored."""
        with _module_sync.quiet():
            state = self.model.state_dict(keep_vars=True)
        again = "Call destroy() and call the model again to compile it as it is now"
        for name, value in self._constant_values.items():
            now = state.get(name)
            if now is None or now.shape != value.shape or not torch.equal(
                    now.detach().cpu(), value):
                what = "frozen parameter (requires_grad=False)" if isinstance(
                    now, torch.nn.Parameter) else "buffer"
                raise ValueError(
                    "%s's %s '%s' changed: the compiled trainingModel holds another value as "
                    "a constant (a training step never changes it). %s"
                    % (_model_name(self.model), what, name, again))
        if not self.training:
            return
        trained = set(self._captured.state_names)
        for name, now in state.items():
            if isinstance(now, torch.nn.Parameter) and (name in trained or
                                                        name in self._constant_values):
                frozen_then = name not in trained
                if frozen_then == now.requires_grad:
                    raise ValueError(
                        "%s's parameter '%s' has requires_grad=%s, but was compiled with %s: "
                        "freezing is fixed when trainingModel compiles. %s"
                        % (_model_name(self.model), name, now.requires_grad, not now.requires_grad,
                           again))

    def _module_changed(self):
        return self._synced != self._versions()

    def _copied_callback(self):
        """What the device weights call after a copy into the module: this executor's record of
        what it synchronised, without keeping the executor alive."""
        executor = weakref.ref(self)

        def copied():
            ex = executor()
            if ex is not None and ex._session is not None:
                ex._synced = ex._versions()
        return copied

    def _copy_weights_to_module(self):
        self._weights.copy_into(self.model)

    def _count_batchnorm_batches(self):
        """PyTorch counts a BatchNorm's training batches in num_batches_tracked; the graph does not
        use it (momentum is set), so the executor keeps the count: one per micro-batch a replica ran."""
        steps = self.options.device_iterations * self.options.Training.gradient_accumulation
        with torch.no_grad(), _module_sync.quiet():
            for module in self.model.modules():
                if isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and \
                        module.track_running_stats and module.num_batches_tracked is not None:
                    module.num_batches_tracked.add_(steps)

    def _update_optimizer_if_changed(self):
        if self._plan_optimizer is self._optimizer and unchanged(self._plan, self._optimizer):
            return
        plan = OptimizerPlan(self._optimizer, self._weight_names)
        if not is_same(plan, self._plan):
            changed = self._plan.changed_constants(plan)
            if plan.family != self._plan.family or plan.groups != self._plan.groups:
                changed.append("the optimizer's type or parameter groups")
            if changed:
                raise OptimizerError(
                    "the optimizer changed after the model was compiled in attributes that are "
                    "constant: %s. PopTorch's rule: an attribute not given to the constructor (or, "
                    "for torch.optim, left at its default) is constant; give it explicitly, or "
                    "mark it with optimizer.variable_attrs.markAsVariable before compiling, to "
                    "make it variable" % "; ".join(changed))
            marked = getattr(self._optimizer, "variable_attrs", None) is not None
            if marked and self._plan_optimizer is self._optimizer and \
                    plan.variable != self._plan.variable:
                raise OptimizerError(
                    "optimizer.variable_attrs changed after the model was compiled (variable now: "
                    "%s; compiled with: %s): marks apply when a model is compiled; destroy() the "
                    "model and call it again to compile with them"
                    % (sorted(plan.variable), sorted(self._plan.variable)))
            self._session.updateOptimizerFromHost(plan.xtrain)
        if self._plan_optimizer is not self._optimizer:  # another torch optimizer: its state too
            self._hook_optimizer(self._optimizer)
            self._opt_state = OptimizerState(self._session, plan, self._weight_names,
                                             self._grouped)
            if self._opt_state.to_device(self._optimizer):
                self._session.weightsFromHost()
        self._opt_state._plan = plan
        self._plan = plan
        self._plan_optimizer = self._optimizer
