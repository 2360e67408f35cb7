"""PopXL's ``Session`` conveniences over an xtrain TrainingSession or InferenceSession.

    session = xtrain.TrainingSession(fnModel=..., dataFlow=..., loss=..., optimizer=...,
                                     deviceInfo=...)
    with xtrain.Session(session) as s:          # attaches, prepares, weights_from_host
        outputs = s.run({"x": x, "t": t})        # {anchor id: np.ndarray}
        w = s.get_tensor_data("w")
    # on exit: weights_to_host, then detach

Tensors and streams are named by their tensor ids (str), where PopXL uses its stream and tensor
objects. Buffer shapes follow popxl-session.txt: ``(d, r) + shape`` where d is the number of host
transfers of the tensor in one run (batches per step x accumulation factor for ALL anchors and
inputs, divided by N for EVERYN, 1 for FINAL and SUM) and r the local replication factor, every
dimension of (d, r) not greater than 1 removed. docs/python.md, "Session (PopXL)".
"""
import numpy as np

from . import _xtrain

__all__ = ["Session"]

_DEVICE_TYPES = {
    "cpu": _xtrain.DeviceType.Cpu,
    "ipu_model": _xtrain.DeviceType.IpuModel,
    "ipu_hw": _xtrain.DeviceType.Ipu,
}


def _prod(values):
    n = 1
    for v in values:
        n *= int(v)
    return n


class Session:
    """A context manager around an xtrain session (PopXL's ``popxl.Session``).

    ir: the xtrain TrainingSession or InferenceSession to drive (it already has its device).
    device_desc: None (the session's device), or "cpu", "ipu_model", "ipu_hw", which must name the
        type of the session's device (a session cannot change device after it was built).
    weights_to_host_on_exit: on leaving the context, copy the weights from the device to the host
        before detaching.
    """

    def __init__(self, ir, device_desc=None, weights_to_host_on_exit=True):
        if not isinstance(ir, (_xtrain.TrainingSession, _xtrain.InferenceSession)):
            raise TypeError("Session: ir must be an xtrain TrainingSession or InferenceSession, got "
                            + type(ir).__name__)
        self._session = ir
        self._device = ir.getDevice()
        if device_desc is not None:
            if isinstance(device_desc, _xtrain.DeviceInfo):
                if device_desc is not self._device and device_desc.id != self._device.id:
                    raise ValueError("Session: device_desc is not the session's device")
            elif device_desc not in _DEVICE_TYPES:
                raise ValueError("Session: device_desc must be 'ipu_hw', 'ipu_model' or 'cpu', got "
                                 + repr(device_desc))
            elif _DEVICE_TYPES[device_desc] != self._device.type:
                raise ValueError("Session: device_desc %r does not match the session's device (%s); "
                                 "the device is chosen when the session is built"
                                 % (device_desc, self._device.type.name))
        self.weights_to_host_on_exit = bool(weights_to_host_on_exit)
        self._prepared = False
        self._weights_sent = False
        self._attached_on_enter = None
        self._inputs = None
        self._replicas = max(1, int(ir.replicationFactor))

    # ---- properties ----

    @property
    def ir(self):
        """The xtrain session this Session drives."""
        return self._session

    @property
    def is_attached(self):
        return self._device.isAttached

    # ---- context manager ----

    def __enter__(self):
        self._attached_on_enter = self.is_attached
        # As PopXL: waits for DeviceManager.setOnDemandAttachTimeout (or XTRAIN_WAIT_FOR_IPU).
        if not self._attached_on_enter and not self._device.tryAttachUntilTimeout():
            raise RuntimeError("Session: could not attach to the device: " + repr(self._device))
        self._prepare()
        self.weights_from_host()
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        if self._attached_on_enter is False:
            try:
                if self.weights_to_host_on_exit and self.is_attached:
                    self.weights_to_host()
            finally:
                self._device.detach()
        self._attached_on_enter = None
        return False

    # ---- streams ----

    def expected_inputs(self):
        """The tensor ids the host feeds (each run needs data for every one)."""
        if self._inputs is None:
            inputs = []
            for tid in sorted(self._session.getTensorIds()):
                try:
                    self._session.expectedInputBufferShape(tid)
                except _xtrain.popart_exception:
                    continue
                inputs.append(tid)
            self._inputs = inputs
        return list(self._inputs)

    def _popxl_shape(self, buffer_shape, tid):
        """(d, r) + shape from the session's buffer shape of tensor tid."""
        shape = list(self._session._hostInfo(tid)[1])
        prefix = list(buffer_shape)[:len(buffer_shape) - len(shape)]
        r = self._replicas if self._replicas > 1 and self._replicas in prefix else 1
        d = _prod(prefix) // r
        return tuple([v for v in (d, r) if v > 1] + shape)

    def create_host_outputs(self):
        """{anchor id: zeroed np.ndarray of shape (d, r) + shape}."""
        out = {}
        for tid, arr in self._session.initAnchorArrays().items():
            out[tid] = arr.reshape(self._popxl_shape(arr.shape, tid))
        return out

    # ---- running ----

    def _prepare(self):
        if not self._prepared:
            self._session.prepareDevice()
            self._prepared = True

    def _check_attached(self, what):
        if not self.is_attached:
            raise ValueError("Session.%s: not attached to a device (use `with session:`)" % what)

    def run(self, inputs=None, downcast_inputs=True):
        """run_with_outputs with new output arrays, which it returns."""
        outputs = self.create_host_outputs()
        self.run_with_outputs(inputs, outputs, downcast_inputs)
        return outputs

    def run_with_outputs(self, inputs=None, outputs=None, downcast_inputs=True):
        """One step: inputs {tensor id: array} in, outputs {anchor id: array} written."""
        self._check_attached("run_with_outputs")
        self._prepare()
        if not self._weights_sent:
            self.weights_from_host()
        inputs = dict(inputs or {})
        outputs = dict(outputs or {})
        missing = [t for t in self.expected_inputs() if t not in inputs]
        if missing:
            raise ValueError("Session.run: no data for input(s) %s (expected_inputs(): %s)"
                             % (", ".join(missing), ", ".join(self.expected_inputs())))
        step_inputs = {}
        for tid, data in inputs.items():
            if tid not in self.expected_inputs():
                raise KeyError("Session.run: '%s' is not an input of the session (expected one "
                               "of %s)" % (tid, ", ".join(self.expected_inputs())))
            step_inputs[tid] = self._buffer(tid, data, True, downcast_inputs)
        step_outputs = {}
        for tid, data in outputs.items():
            step_outputs[tid] = self._buffer(tid, data, False, False)
        self._session.run(_xtrain.PyStepIO(step_inputs, step_outputs))

    def _buffer(self, tid, data, is_input, downcast):
        """The session's buffer for tid: data reshaped (a view when contiguous)."""
        if is_input:
            data = np.asarray(data)
            expected = self._session._hostInfo(tid)[0]
            if downcast and data.dtype != expected and data.dtype.itemsize == 8 \
                    and expected.itemsize == 4 and data.dtype.kind == expected.kind:
                data = data.astype(expected)
            buffer_shape = self._session.expectedInputBufferShape(tid)
        else:
            if not isinstance(data, np.ndarray):
                raise TypeError("Session.run: output '%s' must be a NumPy array, got %s"
                                % (tid, type(data).__name__))
            buffer_shape = self._session.expectedAnchorBufferShape(tid)
        want = self._popxl_shape(buffer_shape, tid)
        if tuple(data.shape) != want:
            raise ValueError("Session.run: %s '%s' has shape %s, expected %s ((d, r) + shape)"
                             % ("input" if is_input else "output", tid, tuple(data.shape), want))
        view = data.reshape(buffer_shape)
        if not is_input and not np.shares_memory(view, data):
            raise ValueError("Session.run: output '%s' must be C-contiguous" % tid)
        return view

    # ---- weights ----

    def weights_from_host(self):
        self._check_attached("weights_from_host")
        self._prepare()
        self._session.weightsFromHost()
        self._weights_sent = True

    def weights_to_host(self):
        self._check_attached("weights_to_host")
        self._prepare()
        self._session.weightsToHost()

    def get_tensor_data(self, tensor):
        """A weight's value (fetched from the device when attached), as a new array."""
        return self.get_tensors_data([tensor])[tensor]

    def get_tensors_data(self, tensors):
        """{tensor id: array} for several weights, with one device-to-host copy."""
        tensors = list(tensors)
        for t in tensors:
            if not isinstance(t, str):
                raise TypeError("Session.get_tensors_data: tensors are named by their ids (str), "
                                "got " + type(t).__name__)
        if self.is_attached and self._prepared and self._weights_sent:
            self._session.weightsToHost()
        out = {}
        for t in tensors:
            dtype, shape = self._session._hostInfo(t)
            out[t] = np.zeros(shape, dtype=dtype)
        self._session.readWeights(_xtrain.PyWeightsIO(out))
        return out

    def write_variable_data(self, tensor, data):
        """Sets a weight on the host, and on the device when attached."""
        self.write_variables_data({tensor: data})

    def write_variables_data(self, tensors):
        """write_variable_data for several weights, with one host-to-device copy."""
        arrays = {}
        for t, data in tensors.items():
            want, shape = self._session._hostInfo(t)
            # order="C", not ascontiguousarray: that one turns a 0-d array into shape (1,).
            data = np.asarray(data, order="C")
            if data.dtype != want or list(data.shape) != list(shape):
                raise ValueError("Session.write_variable_data: '%s' expects %s %s, got %s %s"
                                 % (t, want, tuple(shape), data.dtype, data.shape))
            arrays[t] = data
        self._session.writeWeights(_xtrain.PyWeightsIO(arrays))
        if self.is_attached and self._prepared:
            self._session.weightsFromHost()
            self._weights_sent = True

