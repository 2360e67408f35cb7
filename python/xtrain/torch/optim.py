"""PopTorch's ``poptorch.optim``: torch optimizers with PopTorch's extra attributes.

These are ``torch.optim`` optimizers (they can also step a model on the CPU) whose extra arguments
configure xtrain's optimizer: ``loss_scaling``, ``velocity_scaling``, ``use_combined_accum``,
``accum_type`` and ``velocity_accum_type`` (SGD), the accumulator types and ``max_grad_norm``
(Adam, AdamW, RMSprop). As in PopTorch, an attribute passed to
the constructor is *variable* (it may change between calls with ``setOptimizer``); one left out is
*constant* and changing it after the model was compiled is an error. ``lr`` is always variable.
``optimizer.variable_attrs.markAsConstant`` / ``markAsVariable`` change that before compiling.
How each maps to xtrain's optimizers: docs/poptorch.md, "Optimizers".
"""
import inspect

import torch

__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "LAMB", "VariableAttributes"]


class VariableAttributes:
    """PopTorch's ``optimizer.variable_attrs``: which of the optimizer's attributes are variable
    (may change between calls, sent with ``setOptimizer`` or before the next call) and which are
    constant (changing one after compiling is an error). Starts with the attributes given to the
    constructor (and ``lr``); ``markAsConstant`` / ``markAsVariable`` change that before the model
    is compiled: the compiled model keeps the choice it was compiled with."""

    def __init__(self, variable_attributes, allowed_attributes):
        self._variable = set(variable_attributes) | {"lr"}
        self._allowed = tuple(sorted(allowed_attributes))

    def _check(self, method, attr):
        if attr not in self._allowed:
            raise ValueError("variable_attrs.%s: unknown attribute %r; the optimizer's attributes "
                             "are %s" % (method, attr, ", ".join(self._allowed)))

    def isConstant(self, attr):  # noqa: N802 - PopTorch's name
        """Whether the attribute is constant."""
        return attr not in self._variable

    def markAsConstant(self, attr):  # noqa: N802 - PopTorch's name
        """Makes the attribute constant (for the models compiled from now on)."""
        self._check("markAsConstant", attr)
        if attr == "lr":
            # PopTorch keeps lr variable whatever the mark; xtrain says so rather than ignore it.
            raise ValueError("variable_attrs.markAsConstant('lr'): the learning rate is always "
                             "variable, as in PopTorch")
        self._variable.discard(attr)

    def markAsVariable(self, attr):  # noqa: N802 - PopTorch's name
        """Makes the attribute variable (for the models compiled from now on)."""
        self._check("markAsVariable", attr)
        self._variable.add(attr)

    def variable_names(self):
        """The variable attributes now (read when a model is compiled)."""
        return frozenset(self._variable)


def _given(**kwargs):
    """The names of the arguments given (not None): PopTorch's variable attributes."""
    return {k for k, v in kwargs.items() if v is not None}


def _set_extras(optimizer, extras, given):
    # Any argument of the constructor may be marked, as in PopTorch.
    allowed = set(inspect.signature(type(optimizer).__init__).parameters) - {"self", "params"}
    optimizer.variable_attrs = VariableAttributes(given, allowed)
    for key, value in extras.items():
        setattr(optimizer, key, value)


class SGD(torch.optim.SGD):
    """Stochastic gradient descent (PopTorch's ``poptorch.optim.SGD``)."""

    def __init__(self, params, lr, momentum=None, dampening=None, weight_decay=None,
                 nesterov=None, maximize=None, foreach=None, differentiable=None,
                 loss_scaling=None, velocity_scaling=None, use_combined_accum=None,
                 accum_type=None, velocity_accum_type=None):
        given = _given(momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                       nesterov=nesterov, loss_scaling=loss_scaling,
                       velocity_scaling=velocity_scaling)
        super().__init__(params, lr=lr, momentum=momentum or 0.0, dampening=dampening or 0.0,
                         weight_decay=weight_decay or 0.0, nesterov=bool(nesterov),
                         maximize=bool(maximize), foreach=foreach)
        for group in self.param_groups:
            group.setdefault("velocity_scaling", 1.0 if velocity_scaling is None
                             else float(velocity_scaling))
        _set_extras(self, {
            "loss_scaling": 1.0 if loss_scaling is None else float(loss_scaling),
            "use_combined_accum": bool(use_combined_accum),
            # PopTorch's types of the gradient accumulator and the velocity (separate variant)
            "accum_type": accum_type or torch.float32,
            "velocity_accum_type": velocity_accum_type or torch.float32,
        }, given)


class _AdamExtras:
    """The attributes PopTorch's Adam-like optimizers add to torch's."""

    def _init_extras(self, given, loss_scaling, accum_type, first_order_momentum_accum_type,
                     second_order_momentum_accum_type, max_grad_norm):
        _set_extras(self, {
            "loss_scaling": 1.0 if loss_scaling is None else float(loss_scaling),
            "accum_type": accum_type or torch.float32,
            "first_order_momentum_accum_type": first_order_momentum_accum_type or torch.float32,
            "second_order_momentum_accum_type": second_order_momentum_accum_type or torch.float32,
            "max_grad_norm": float("inf") if max_grad_norm is None else float(max_grad_norm),
        }, given | _given(loss_scaling=loss_scaling))


class Adam(_AdamExtras, torch.optim.Adam):
    """Adam with PyTorch's L2 weight decay (PopTorch's ``poptorch.optim.Adam``)."""

    def __init__(self, params, lr=None, betas=None, eps=None, weight_decay=None, amsgrad=None,
                 maximize=None, foreach=None, capturable=None, differentiable=None, fused=None,
                 loss_scaling=None, accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, max_grad_norm=None):
        given = _given(betas=betas, eps=eps, weight_decay=weight_decay)
        torch.optim.Adam.__init__(self, params, lr=1e-3 if lr is None else lr,
                                  betas=betas or (0.9, 0.999), eps=1e-8 if eps is None else eps,
                                  weight_decay=weight_decay or 0.0, amsgrad=bool(amsgrad),
                                  maximize=bool(maximize), foreach=foreach)
        self._init_extras(given, loss_scaling, accum_type, first_order_momentum_accum_type,
                          second_order_momentum_accum_type, max_grad_norm)


class AdamW(_AdamExtras, torch.optim.AdamW):
    """Adam with decoupled weight decay (PopTorch's ``poptorch.optim.AdamW``)."""

    def __init__(self, params, lr=None, betas=None, eps=None, weight_decay=None, amsgrad=None,
                 maximize=None, foreach=None, capturable=None, differentiable=None, fused=None,
                 loss_scaling=None, bias_correction=None, accum_type=None,
                 first_order_momentum_accum_type=None, second_order_momentum_accum_type=None,
                 max_grad_norm=None):
        given = _given(betas=betas, eps=eps, weight_decay=weight_decay)
        torch.optim.AdamW.__init__(self, params, lr=1e-3 if lr is None else lr,
                                   betas=betas or (0.9, 0.999), eps=1e-8 if eps is None else eps,
                                   weight_decay=0.01 if weight_decay is None else weight_decay,
                                   amsgrad=bool(amsgrad), maximize=bool(maximize), foreach=foreach)
        self.bias_correction = True if bias_correction is None else bool(bias_correction)
        self._init_extras(given, loss_scaling, accum_type, first_order_momentum_accum_type,
                          second_order_momentum_accum_type, max_grad_norm)


class RMSprop(_AdamExtras, torch.optim.RMSprop):
    """RMSprop, centered or not, with PyTorch's L2 weight decay (PopTorch's ``poptorch.optim.RMSprop``).
    xtrain's Adaptive optimizer keeps the square average in the second-order type and the centered
    mean and the momentum in the first-order type."""

    def __init__(self, params, lr=None, alpha=None, eps=None, weight_decay=None, momentum=None,
                 centered=None, foreach=None, maximize=None, differentiable=None,
                 loss_scaling=None, accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, max_grad_norm=None):
        given = _given(alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum)
        torch.optim.RMSprop.__init__(self, params, lr=0.01 if lr is None else lr,
                                     alpha=0.99 if alpha is None else alpha,
                                     eps=1e-8 if eps is None else eps,
                                     weight_decay=weight_decay or 0.0, momentum=momentum or 0.0,
                                     centered=bool(centered), foreach=foreach,
                                     maximize=bool(maximize))
        self._init_extras(given, loss_scaling, accum_type, first_order_momentum_accum_type,
                          second_order_momentum_accum_type, max_grad_norm)


class LAMB(_AdamExtras, torch.optim.Optimizer):
    """LAMB (You et al., "Large Batch Optimization for Deep Learning"), PopTorch's
    ``poptorch.optim.LAMB``: Adam's normalised step ``u = m^/(sqrt(v^) + eps) + wd*w`` (decoupled
    weight decay), scaled per tensor by the trust ratio ``min(|w|, max_weight_norm) / |u|`` (1 when
    either norm is 0). ``bias_correction=False`` leaves m and v uncorrected. On the device it is
    xtrain's Adam in Lamb or LambNoBias mode; ``step()`` runs the same rule on the CPU.
    ``max_weight_norm=None`` does not clip |w|."""

    def __init__(self, params, lr=None, betas=None, eps=None, weight_decay=None,
                 bias_correction=None, loss_scaling=None, max_weight_norm=None, accum_type=None,
                 first_order_momentum_accum_type=None, second_order_momentum_accum_type=None,
                 max_grad_norm=None):
        given = _given(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                       max_weight_norm=max_weight_norm)
        defaults = {"lr": 1e-3 if lr is None else float(lr),
                    "betas": tuple(betas or (0.9, 0.999)), "eps": 1e-8 if eps is None else eps,
                    "weight_decay": 1e-2 if weight_decay is None else weight_decay,
                    "max_weight_norm": float("inf") if max_weight_norm is None
                    else float(max_weight_norm)}
        _check_lamb_values(defaults)
        torch.optim.Optimizer.__init__(self, params, defaults)
        self.bias_correction = True if bias_correction is None else bool(bias_correction)
        self._init_extras(given | _given(bias_correction=bias_correction), loss_scaling,
                          accum_type, first_order_momentum_accum_type,
                          second_order_momentum_accum_type, max_grad_norm)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._update(p, group)
        return loss

    def _update(self, p, group):
        state = self.state[p]
        if not state:
            state["step"] = torch.tensor(0.0)
            state["exp_avg"] = torch.zeros_like(p)
            state["exp_avg_sq"] = torch.zeros_like(p)
        b1, b2 = group["betas"]
        state["step"] += 1
        state["exp_avg"].mul_(b1).add_(p.grad, alpha=1 - b1)
        state["exp_avg_sq"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        if self.bias_correction:
            t = float(state["step"])
            m, v = m / (1 - b1 ** t), v / (1 - b2 ** t)
        update = m / (v.sqrt() + group["eps"]) + group["weight_decay"] * p
        r1 = min(float(p.norm()), group["max_weight_norm"])
        r2 = float(update.norm())
        ratio = r1 / r2 if r1 > 0 and r2 > 0 else 1.0
        p.sub_(update, alpha=group["lr"] * ratio)


def _check_lamb_values(values):
    """PopTorch's (and torch's) checks of the hyperparameters, naming the culprit."""
    b1, b2 = values["betas"]
    checks = [("lr", values["lr"], values["lr"] >= 0), ("eps", values["eps"], values["eps"] >= 0),
              ("betas[0]", b1, 0 <= b1 < 1), ("betas[1]", b2, 0 <= b2 < 1),
              ("weight_decay", values["weight_decay"], values["weight_decay"] >= 0),
              ("max_weight_norm", values["max_weight_norm"], values["max_weight_norm"] >= 0)]
    for name, value, ok in checks:
        if not ok:
            raise ValueError("LAMB: invalid %s: %r (expected %s)" % (
                name, value, "in [0, 1)" if name.startswith("betas") else ">= 0"))
