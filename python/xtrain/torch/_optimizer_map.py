"""Maps a torch optimizer (torch.optim or xtrain.torch.optim) to one of xtrain's optimizers.

The result is an ``OptimizerPlan``: the xtrain optimizer and the values it was made from, so that
the executor can see between calls whether the torch optimizer changed (a learning-rate scheduler,
``opt.param_groups[0]["lr"] = ...``) and whether a change touches a constant attribute.

Semantics (docs/optimizers.md, docs/poptorch.md "Optimizers"):
- SGD: xtrain's rule is PyTorch's (``g + wd*w``, then momentum) except where PopART differs: with
  momentum and dampening both non-zero, PopART's velocity starts at 0 so its first step is damped
  (PyTorch's is not). Without momentum PyTorch ignores dampening, so it is mapped to 0.
- Adam: PyTorch's Adam is AdamMode.Adam with L2Regularization; AdamW uses Decay.
- LAMB (xtrain.torch.optim.LAMB): AdamMode.Lamb (LambNoBias without bias correction) with Decay;
  max_weight_norm is xtrain's maxWeightNorm.
"""
import math

import torch

from .. import _xtrain
from .optim import LAMB

# (torch class, xtrain family, torch's defaults of the hyperparameters that map)
_SGD_DEFAULTS = {"momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False,
                 "velocity_scaling": 1.0}
_ADAM_DEFAULTS = {"betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0}
_ADAMW_DEFAULTS = {"betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01}
_LAMB_DEFAULTS = {"betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01,
                  "max_weight_norm": math.inf}
_RMSPROP_DEFAULTS = {"alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0, "momentum": 0.0,
                     "centered": False}
# Values that choose the update rule when the session is built: never changed afterwards.
_FIXED = ("nesterov", "centered")

_DTYPES = {torch.float32: "FLOAT", torch.float16: "FLOAT16"}


class OptimizerError(ValueError):
    """A torch optimizer xtrain cannot map, or a change it cannot apply."""


def _family(optimizer):
    if isinstance(optimizer, torch.optim.SGD):
        return "SGD", _SGD_DEFAULTS
    if isinstance(optimizer, torch.optim.AdamW):
        return "AdamW", _ADAMW_DEFAULTS
    if isinstance(optimizer, torch.optim.Adam):
        return "Adam", _ADAM_DEFAULTS
    if isinstance(optimizer, torch.optim.RMSprop):
        return "RMSprop", _RMSPROP_DEFAULTS
    if isinstance(optimizer, LAMB):
        return "LAMB", _LAMB_DEFAULTS
    raise OptimizerError(
        "optimizer %s.%s cannot be mapped to an xtrain optimizer: xtrain.torch takes "
        "torch.optim.SGD, Adam, AdamW, RMSprop, their xtrain.torch.optim versions and "
        "xtrain.torch.optim.LAMB (docs/poptorch.md, \"Optimizers\")"
        % (type(optimizer).__module__, type(optimizer).__name__))


def _variable_names(optimizer, defaults):
    """PopTorch's rule: poptorch.optim's explicitly given attributes are variable (and those
    marked so with variable_attrs); for torch.optim, those not at torch's default. lr is always
    variable."""
    marks = getattr(optimizer, "variable_attrs", None)  # poptorch.optim's, marks applied
    if marks is not None:
        return set(marks.variable_names())
    group = optimizer.param_groups[0]
    return {"lr"} | {k for k, v in defaults.items() if k in group and group[k] != v}


def _check_group(optimizer, group, index):
    name = type(optimizer).__name__
    for flag in ("maximize", "amsgrad"):
        if group.get(flag):
            raise OptimizerError("%s: %s=True (param group %d) is not implemented in xtrain"
                                 % (name, flag, index))


class OptimizerPlan:
    """An xtrain optimizer built from a torch optimizer, with what it was built from."""

    def __init__(self, optimizer, weight_names):
        """weight_names: {id(parameter): the ONNX name of its weight} (the trained weights)."""
        self.family, defaults = _family(optimizer)
        self.variable = _variable_names(optimizer, defaults)
        self.values = _values(optimizer, self.family)
        self.groups = []
        self.group_sizes = [len(g["params"]) for g in optimizer.param_groups]
        seen = {}
        for index, group in enumerate(optimizer.param_groups):
            _check_group(optimizer, group, index)
            names = []
            for p in group["params"]:
                if id(p) not in weight_names:
                    continue  # not a weight of the captured graph (e.g. unused by forward)
                seen[id(p)] = index
                names.append(weight_names[id(p)])
            self.groups.append(names)
        missing = [n for pid, n in weight_names.items() if pid not in seen]
        if missing:
            raise OptimizerError(
                "%s does not update parameter(s) %s of the model, which xtrain would train "
                "(it trains every parameter with requires_grad=True that forward uses): give "
                "the optimizer every such parameter, or set requires_grad=False on those to "
                "leave untrained before compiling (docs/poptorch.md, \"Freezing parameters\")"
                % (type(optimizer).__name__, ", ".join(sorted(missing))))
        self.xtrain = self._build()

    def _value(self, key, value):
        return (float(value), key not in self.variable)

    def _build(self):
        build = {"SGD": self._sgd, "Adam": self._adam, "AdamW": self._adam,
                 "LAMB": self._adam, "RMSprop": self._rmsprop}[self.family]
        optimizer = build(self.values["groups"][0])
        for index, names in enumerate(self.groups[1:], start=1):
            specific = self._specific(self.values["groups"][index])
            for name in names:
                optimizer.insertSpecific(name, specific)
        return optimizer

    def _sgd_values(self, g):
        momentum = float(g["momentum"])
        dampening = float(g["dampening"]) if momentum != 0.0 else 0.0  # PyTorch ignores it then
        return {"learningRate": self._value("lr", g["lr"]),
                "weightDecay": self._value("weight_decay", g["weight_decay"]),
                "momentum": self._value("momentum", momentum),
                "dampening": self._value("dampening", dampening),
                "velocityScaling": self._value("velocity_scaling", g["velocity_scaling"]),
                "nesterov": (1.0 if g["nesterov"] else 0.0, True)}

    def _adam_values(self, g):
        b1, b2 = g["betas"]
        return {"learningRate": self._value("lr", g["lr"]),
                "weightDecay": self._value("weight_decay", g["weight_decay"]),
                "beta1": self._value("betas", b1), "beta2": self._value("betas", b2),
                "eps": self._value("eps", g["eps"])}

    def _lamb_values(self, g):
        values = self._adam_values(g)
        values["maxWeightNorm"] = self._value("max_weight_norm", g["max_weight_norm"])
        return values

    def _rmsprop_values(self, g):
        return {"learningRate": self._value("lr", g["lr"]),
                "weightDecay": self._value("weight_decay", g["weight_decay"]),
                "alpha": self._value("alpha", g["alpha"]),
                "momentum": self._value("momentum", g["momentum"]),
                "eps": self._value("eps", g["eps"])}

    def _specific(self, g):
        if self.family == "SGD":
            return self._sgd_values(g)
        if self.family == "RMSprop":
            return self._rmsprop_values(g)
        if self.family == "LAMB":
            return self._lamb_values(g)
        return self._adam_values(g)

    def _defaults(self, g):
        values = {"default" + k[0].upper() + k[1:]: v for k, v in self._specific(g).items()}
        if "defaultNesterov" in values:
            values["nesterov"] = values.pop("defaultNesterov")
        values["lossScaling"] = self._value("loss_scaling", self.values["loss_scaling"])
        return values

    def _clip(self):
        norm = self.values.get("max_grad_norm", math.inf)
        return [] if math.isinf(norm) else [_xtrain.ClipNormSettings.clipAllWeights(norm)]

    def _sgd(self, g):
        combined = self.values.get("use_combined_accum", False)
        mode = _xtrain.SGDAccumulatorAndMomentum
        if combined:  # one tensor in the weight's type, whatever the types (as PopTorch)
            return _xtrain.SGD(self._defaults(g), clip_norm_settings=self._clip(),
                               accumulatorAndMomentum=mode.Combined)
        accum, velocity = self.values["types"]
        return _xtrain.SGD(self._defaults(g), clip_norm_settings=self._clip(),
                           accumulatorAndMomentum=mode.Separate, accumType=accum,
                           accl1Type=velocity)

    def _adam(self, g):
        modes = _xtrain.AdamMode
        biased = self.values.get("bias_correction", True)
        if self.family == "LAMB":
            mode = modes.Lamb if biased else modes.LambNoBias
        else:
            mode = modes.Adam if self.family == "Adam" or biased else modes.AdamNoBias
        decay = _xtrain.WeightDecayMode
        types = self.values["types"]
        return _xtrain.Adam(
            self._defaults(g), mode=mode,
            weight_decay_mode=decay.L2Regularization if self.family == "Adam" else decay.Decay,
            accum_type=types[0], accl1_type=types[1], accl2_type=types[2],
            clip_norm_settings=self._clip())

    def _rmsprop(self, g):
        centered = {bool(group["centered"]) for group in self.values["groups"]}
        if len(centered) > 1:
            raise OptimizerError("RMSprop: centered must be the same in every param group (it "
                                 "chooses xtrain's AdaptiveMode for the whole optimizer)")
        mode = _xtrain.AdaptiveMode
        types = self.values["types"]
        return _xtrain.Adaptive(
            self._defaults(g), mode=mode.CenteredRMSProp if g["centered"] else mode.RMSProp,
            weight_decay_mode=_xtrain.WeightDecayMode.L2Regularization, accum_type=types[0],
            accl1_type=types[2], accl2_type=types[1], accl3_type=types[1],
            clip_norm_settings=self._clip())

    def changed_constants(self, other):
        """The constant attributes whose values differ in another plan of the same optimizer."""
        changed = []
        for index, (mine, theirs) in enumerate(zip(self.values["groups"], other.values["groups"])):
            for key, value in mine.items():
                if (key not in self.variable or key in _FIXED) and theirs.get(key) != value:
                    changed.append("param_groups[%d][%r]: %r -> %r%s"
                                   % (index, key, value, theirs.get(key),
                                      " (it chooses the update rule: never variable)"
                                      if key in _FIXED else ""))
        for key in ("loss_scaling", "use_combined_accum", "types", "max_grad_norm",
                    "bias_correction"):
            if key not in self.variable and self.values.get(key) != other.values.get(key):
                changed.append("%s: %r -> %r" % (key, self.values.get(key), other.values.get(key)))
        return changed


def _dtype_name(optimizer, attribute):
    dtype = getattr(optimizer, attribute, torch.float32)
    if dtype not in _DTYPES:
        raise OptimizerError("%s.%s: expected torch.float32 or torch.float16, got %r"
                             % (type(optimizer).__name__, attribute, dtype))
    return _DTYPES[dtype]


def _values(optimizer, family):
    """Everything the xtrain optimizer is made from, as comparable plain values."""
    keys = {"SGD": _SGD_DEFAULTS, "RMSprop": _RMSPROP_DEFAULTS,
            "LAMB": _LAMB_DEFAULTS}.get(family, _ADAM_DEFAULTS)
    groups = []
    for group in optimizer.param_groups:
        g = {k: group.get(k, d) for k, d in keys.items()}
        g["lr"] = group["lr"]
        for flag in ("maximize", "amsgrad"):
            g[flag] = group.get(flag, False)
        groups.append(g)
    values = {"groups": groups, "loss_scaling": float(getattr(optimizer, "loss_scaling", 1.0))}
    if family == "SGD":
        values["use_combined_accum"] = bool(getattr(optimizer, "use_combined_accum", False))
        values["types"] = tuple(_dtype_name(optimizer, a)
                                for a in ("accum_type", "velocity_accum_type"))
    else:
        values["types"] = tuple(_dtype_name(optimizer, a) for a in (
            "accum_type", "first_order_momentum_accum_type", "second_order_momentum_accum_type"))
        values["max_grad_norm"] = float(getattr(optimizer, "max_grad_norm", math.inf))
        values["bias_correction"] = bool(getattr(optimizer, "bias_correction", True))
    return values


def is_same(plan, other):
    return plan.family == other.family and plan.values == other.values and \
        plan.groups == other.groups


def unchanged(plan, optimizer):
    """Whether the optimizer still has the values the plan was built from (cheap: no xtrain
    optimizer is built; the executor asks before every call)."""
    try:
        family, _ = _family(optimizer)
    except OptimizerError:
        return False
    if family != plan.family or plan.values != _values(optimizer, family):
        return False
    return [len(g["params"]) for g in optimizer.param_groups] == plan.group_sizes
