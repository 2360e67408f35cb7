"""The device's copy of a wrapped module's state, and how it is read back into the module.

An executor (_executor.py) owns one per session. After a training call it is what
_module_sync records as pending for the module: it holds the session and device but not the module
(nor the executor), so a dropped wrapper and its module can be collected, and with them the session
and its IPUs. The module is given when the copy happens.
"""
import weakref

import numpy as np
import torch

from .. import _xtrain
from . import _errors, _module_sync

# module -> how many times trained values were written into its tensors (see generation()).
_generations = weakref.WeakKeyDictionary()


def generation(model):
    """A number that grows whenever trained values are written into any of model's modules:
    writes through NumPy do not move torch's version counters, so other executors of the module,
    or of a module inside it or around it, compare this to see that its values changed."""
    return sum(_generations.get(m, 0) for m in model.modules())


def _writable_view(tensor):
    """A NumPy array sharing the tensor's memory, or None (not a contiguous CPU tensor)."""
    if tensor.device.type != "cpu" or not tensor.is_contiguous() or tensor.is_conj() or \
            tensor.is_neg():
        return None
    try:
        return tensor.detach().numpy()
    except (RuntimeError, TypeError):
        return None


class DeviceWeights:
    """A session's weights, to be copied into the module they were captured from."""

    def __init__(self, session, device, state_names, host_info, on_copied):
        self.session = session
        self.device = device
        self.state_names = list(state_names)
        self.host_info = host_info  # name -> (NumPy dtype, shape), shared with the executor
        self.on_copied = on_copied  # a weak callable: the executor's bookkeeping, if it lives

    def info(self, name):
        if name not in self.host_info:
            self.host_info[name] = self.session._hostInfo(name)
        return self.host_info[name]

    def pending_flush(self, model):
        """_module_sync's lazy copy: the module's state is being read. The pending marker is
        cleared only once the copy succeeded (a failed copy can be retried)."""
        if self.device.isAttached:
            with _errors.backend("copyWeightsToHost"):
                self.copy_into(model)
        _module_sync.clear(model, self)

    def copy_into(self, model):
        """The device's weights into the module's tensors: read straight into their memory where
        the dtype and shape allow (no temporary copy), else through an array and copy_."""
        self.session.weightsToHost()
        with _module_sync.quiet():
            state = model.state_dict(keep_vars=True)
        arrays, fallback = {}, []
        for name in self.state_names:
            tensor = state.get(name)
            if tensor is None:  # removed from the module since compiling: nowhere to copy it
                continue
            dtype, shape = self.info(name)
            view = _writable_view(tensor)
            if view is not None and view.dtype == dtype and list(view.shape) == list(shape):
                arrays[name] = view
            else:
                arrays[name] = np.zeros(shape, dtype=dtype)
                fallback.append((name, tensor))
        self.session.readWeights(_xtrain.PyWeightsIO(arrays))
        with torch.no_grad():
            for name, tensor in fallback:
                tensor.copy_(torch.from_numpy(arrays[name]))
        for module in model.modules():
            _generations[module] = _generations.get(module, 0) + 1
        _module_sync.clear(model, self)
        self.on_copied()
