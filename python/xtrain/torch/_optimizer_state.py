"""The optimizer state between the device and a torch optimizer's ``state`` (docs/poptorch.md,
"Optimizer state").

xtrain keeps each weight's optimizer state as tensors named after it (docs/optimizers.md:
``Accl1___<w>``, ``Step___<w>``, ...). They map onto torch's per-parameter state, so that
``optimizer.state_dict()`` after training through the wrapper is what PyTorch's own training would
hold (and can be saved, or go on training on the CPU), and an optimizer loaded from such a
checkpoint resumes on the device:

- SGD: ``momentum_buffer`` = the velocity (``Accl1___<w>``, or ``Accl___<w>`` when combined) divided
  by the velocity scaling it is stored with;
- Adam, AdamW, LAMB: ``exp_avg`` = ``Accl1___<w>``, ``exp_avg_sq`` = ``Accl2___<w>``, ``step`` =
  ``Step___<w>``;
- RMSprop: ``square_avg`` = ``Accl1___<w>``, ``grad_avg`` = ``Accl2___<w>`` (centered),
  ``momentum_buffer`` = ``Accl3___<w>`` (with momentum), ``step`` = ``Step___<w>``.

A state the device does not keep (SGD without momentum) has no entry, as in PyTorch.
"""
import numpy as np
import torch

from .. import _xtrain

_SLOTS = {
    "SGD": (("momentum_buffer", ("Accl1___", "Accl___")),),
    "Adam": (("exp_avg", ("Accl1___",)), ("exp_avg_sq", ("Accl2___",)), ("step", ("Step___",))),
    "RMSprop": (("square_avg", ("Accl1___",)), ("grad_avg", ("Accl2___",)),
                ("momentum_buffer", ("Accl3___",)), ("step", ("Step___",))),
}
_SLOTS["AdamW"] = _SLOTS["Adam"]
_SLOTS["LAMB"] = _SLOTS["Adam"]


def _slots(plan, session_ids, weight):
    """[(torch key, device tensor id)] of one weight's state the device keeps."""
    found = []
    for key, prefixes in _SLOTS[plan.family]:
        for prefix in prefixes:
            if prefix + weight in session_ids:
                found.append((key, prefix + weight))
                break
    return found


def _velocity_scaling(plan, weight):
    for index, names in enumerate(plan.groups):
        if weight in names:
            return float(plan.values["groups"][index]["velocity_scaling"])
    return 1.0


def _torch_step(optimizer, value):
    # Adam and AdamW keep a float tensor, RMSprop an int (torch 1.13).
    if isinstance(optimizer, torch.optim.RMSprop):
        return int(round(float(value)))
    return torch.tensor(float(value))


class OptimizerState:
    """Moves one executor's optimizer state between its session and its torch optimizer."""

    def __init__(self, session, plan, weight_names, groups=None):
        ids = set(session.getAllTensorIds())
        self._session = session
        # weight name -> groups of a grouped weight (replicaGrouping): the host copy of its state
        # holds every group's, as the weight's does.
        self._groups = groups or {}
        self._plan = plan
        self._params = weight_names  # id(parameter) -> weight name
        self._slots = {w: _slots(plan, ids, w) for w in weight_names.values()}
        # RMSprop's step: xtrain's Adaptive optimizer keeps no step count, torch keeps one (not used
        # by its update): counted here, from a loaded state's, per weight.
        self._counted = {w: 0 for w in weight_names.values()}

    def advance(self, steps):
        """The device ran `steps` optimizer steps."""
        for w in self._counted:
            self._counted[w] += steps

    def _counts_steps(self, name):
        return self._plan.family == "RMSprop" and all(k != "step" for k, _ in self._slots[name])

    def _parameters(self, optimizer):
        for group in optimizer.param_groups:
            for p in group["params"]:
                name = self._params.get(id(p))
                if name is not None:
                    yield p, name

    def to_torch(self, optimizer):
        """The host copy of the device's state (weightsToHost has run) into optimizer.state."""
        arrays = {}
        for _, name in self._parameters(optimizer):
            for _, tid in self._slots[name]:
                dtype, shape = self._host_info(tid, name)
                arrays[tid] = np.zeros(shape, dtype=dtype)
        if arrays:
            self._session.readWeights(_xtrain.PyWeightsIO(arrays))
        for p, name in self._parameters(optimizer):
            state = optimizer.state[p]
            if self._counts_steps(name):
                state["step"] = _torch_step(optimizer, self._counted[name])
            for key, tid in self._slots[name]:
                if key == "step":
                    state[key] = _torch_step(optimizer, arrays[tid].reshape(-1)[0])
                    continue
                # The device's type (the optimizer's accumulator types), not the parameter's: a
                # float32 moment of a float16 weight read as float16 would lose its precision in
                # a checkpoint (PyTorch's optimizers step with either).
                value = torch.from_numpy(arrays[tid]).reshape(p.shape)
                if key == "momentum_buffer" and self._plan.family == "SGD":
                    value = value / _velocity_scaling(self._plan, name)
                state[key] = value

    def _host_info(self, tid, weight):
        """A state tensor shaped as its grouped weight (momentum, moments; not a scalar step) has a
        host copy of every group's."""
        dtype, shape = self._session._hostInfo(tid)
        groups = self._groups.get(weight)
        if groups and list(shape) == list(self._session._hostInfo(weight)[1]):
            return dtype, [groups] + list(shape)
        return dtype, shape

    def to_device(self, optimizer):
        """optimizer.state into the session's host copy; True when there was any (the caller then
        sends the host copy to the device)."""
        arrays = {}
        for p, name in self._parameters(optimizer):
            state = optimizer.state.get(p, {})
            if self._counts_steps(name) and "step" in state:
                self._counted[name] = int(round(float(state["step"])))
            for key, tid in self._slots[name]:
                if key not in state:
                    continue
                dtype, shape = self._host_info(tid, name)
                value = state[key]
                if key == "step":
                    arrays[tid] = np.full(shape, float(value), dtype=dtype)
                    continue
                value = value.detach().float()
                if key == "momentum_buffer" and self._plan.family == "SGD":
                    value = value * _velocity_scaling(self._plan, name)
                arrays[tid] = value.numpy().astype(dtype).reshape(shape)
        if arrays:
            self._session.writeWeights(_xtrain.PyWeightsIO(arrays))
        return bool(arrays)
