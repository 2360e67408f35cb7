#!/usr/bin/python3
"""Independent reference numbers for xtrain's optimizers (issue 7; rules in docs/optimizers.md).

Run with Debian's PyTorch (python3-torch 1.13) through /usr/bin/python3, not a pyenv python:

    /usr/bin/python3 tests/data/optimizer_reference/make_reference.py

It writes one <case>.txt per case next to this script (format: ../README.md, "File format"; parsed by
xtrain::testing::loadReferenceData). The output is deterministic: running it twice gives identical files.

Model (the same for every case; an ONNX model with exactly these ops reproduces it):
    pred = MatMul(x, W) + b          x FLOAT[8,4], W FLOAT[4,3] ([in, out]), b FLOAT[3]
    loss = IdentityLoss(Mul(d, d), reduction=Mean)   with d = Sub(pred, y), y FLOAT[8,3]
i.e. the mean squared error over all 24 elements (torch.nn.functional.mse_loss, reduction "mean").
W starts uniform in [-1, 1); b starts at exactly 0 (so Lamb's ||b|| is 0 on the first step). Step k (k = 1..10)
uses its own batch x/step<k>, y/step<k>: x standard normal, y = x @ W_true + b_true + 0.1 * noise.

Every case trains 10 steps and records the weights after each step, the loss of each step (computed with the
weights before that step's update, without loss scaling) and the optimizer state after the last step.

Reference source per case (hyper key "reference"):
  torch.optim.*  PopART's documented rule equals PyTorch's for that case; PyTorch computes it in float32.
                 Loss scaling: backward of loss * ls, gradients multiplied by 1/ls, then the optimizer.
                 Clipping: PopART's rule (below) applied to the .grad tensors, then the optimizer.
  numpy          PopART's documented rule (docs/optimizers.md) in float64 NumPy, printed as float32. Used where no
                 PyTorch optimizer has PopART's rule: AdamNoBias, AdaMax (epsilon placement), Lamb, LambNoBias,
                 WeightDecayMode::Decay for Adaptive, Adaptive momentum for AdaDelta, SGD dampening (PyTorch
                 does not dampen the first step) and velocity scaling.
Clipping (ClipNormSettings): n = sqrt(sum over the clipped weights of sum(g^2)) of the unscaled gradients;
every clipped gradient is multiplied by maxNorm / max(maxNorm, n) before the optimizer uses it.

Self-checks (the script fails rather than write unchecked numbers):
  - the float64 NumPy implementation of PopART's rules agrees with PyTorch on every torch case (so the NumPy code
    that alone produces the other cases is checked wherever PyTorch can check it);
  - every loss-scaling case equals its unscaled twin exactly (ls is a power of two);
  - sgd_dampening equals PyTorch's SGD started from a zero momentum buffer (PyTorch's own first step is
    undampened, PopART's is dampened);
  - the clipping cases clip on every step; the Lamb max-weight-norm case is limited by mwn on every step for W;
    ||b|| is exactly 0 on Lamb's first step;
  - every file parses back to bit-identical float32 values.
It also prints, for information, how far PyTorch's Adamax and dampened SGD are from PopART's rules.
"""

import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 10
BATCH, IN, OUT = 8, 4, 3
WEIGHTS = ("W", "b")
LOSS_SCALE = 1024.0        # power of two: scaling the loss and unscaling the gradients is exact
TORCH_VS_NUMPY_TOL = 3e-6  # |torch - numpy| / (|numpy| + 0.1 max|numpy tensor|) on every weight and state value

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)


def f32(v):
    return float(np.float32(v))


# ----------------------------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------------------------

def make_data():
    rng = np.random.Generator(np.random.PCG64(20240507))
    w0 = rng.uniform(-1.0, 1.0, size=(IN, OUT)).astype(np.float32)
    b0 = np.zeros(OUT, dtype=np.float32)
    w_true = rng.uniform(-1.5, 1.5, size=(IN, OUT)).astype(np.float32)
    b_true = rng.uniform(-0.5, 0.5, size=OUT).astype(np.float32)
    xs, ys = [], []
    for _ in range(STEPS):
        x = rng.standard_normal(size=(BATCH, IN)).astype(np.float32)
        noise = rng.standard_normal(size=(BATCH, OUT)).astype(np.float32)
        y = (x.astype(np.float64) @ w_true + b_true + 0.1 * noise).astype(np.float32)
        xs.append(x)
        ys.append(y)
    return {"W": w0, "b": b0}, xs, ys


# ----------------------------------------------------------------------------------------------------------------
# Cases. Hyperparameter keys are PopART's names (map constructors and insertSpecific); "<weight>.<key>" is a
# weight-specific value (insertSpecific(<weight>, {<key>: value})).
# ----------------------------------------------------------------------------------------------------------------

def sgd(name, reference, lr, wd=0.0, mm=0.0, dm=0.0, vs=1.0, nesterov=False, ls=1.0, clip=None):
    return dict(name=name, optimizer="SGD", reference=reference, clip=clip,
                hyper={"defaultLearningRate": lr, "defaultWeightDecay": wd, "defaultMomentum": mm,
                       "defaultDampening": dm, "defaultVelocityScaling": vs, "lossScaling": ls,
                       "nesterov": 1 if nesterov else 0}, specific={})


def adam(name, reference, mode, wdmode, lr, wd=0.0, b1=0.9, b2=0.99, eps=1e-3, mwn=10.0, ls=1.0, clip=None,
         specific=None):
    return dict(name=name, optimizer="Adam", reference=reference, clip=clip,
                hyper={"adamMode": mode, "weightDecayMode": wdmode, "defaultLearningRate": lr,
                       "defaultWeightDecay": wd, "defaultBeta1": b1, "defaultBeta2": b2, "defaultEps": eps,
                       "maxWeightNorm": mwn, "lossScaling": ls}, specific=specific or {})


def adaptive(name, reference, mode, wdmode, lr, wd=0.0, alpha=0.9, mm=0.0, eps=1e-6, ls=1.0, specific=None):
    return dict(name=name, optimizer="Adaptive", reference=reference, clip=None,
                hyper={"adaptiveMode": mode, "weightDecayMode": wdmode, "defaultLearningRate": lr,
                       "defaultWeightDecay": wd, "defaultAlpha": alpha, "defaultMomentum": mm,
                       "defaultEps": eps, "lossScaling": ls}, specific=specific or {})


CLIP_SGD = 0.25   # global gradient norms of this model are about 1-5, so these always clip
CLIP_ADAM = 0.5

CASES = [
    # SGD (the rule of src/device/kernels/optimizer_kernels.cpp)
    sgd("sgd", "torch.optim.SGD", 0.1),
    sgd("sgd_momentum_wd", "torch.optim.SGD", 0.05, wd=0.01, mm=0.9),
    sgd("sgd_nesterov", "torch.optim.SGD", 0.05, wd=0.01, mm=0.9, nesterov=True),
    sgd("sgd_dampening", "numpy", 0.05, wd=0.01, mm=0.9, dm=0.3),
    sgd("sgd_velocity_scaling", "numpy", 0.05, wd=0.01, mm=0.9, vs=8.0),
    sgd("sgd_loss_scaling", "torch.optim.SGD", 0.05, wd=0.01, mm=0.9, ls=LOSS_SCALE),
    sgd("sgd_clip_all", "torch.optim.SGD", 0.05, wd=0.01, mm=0.9, clip=("clipAllWeights", CLIP_SGD, WEIGHTS)),
    sgd("sgd_clip_weights", "torch.optim.SGD", 0.05, wd=0.01, mm=0.9, clip=("clipWeights", CLIP_SGD, ("W",))),
    # Adam family
    adam("adam", "torch.optim.Adam", "Adam", "Decay", 0.02),
    adam("adam_l2", "torch.optim.Adam", "Adam", "L2Regularization", 0.02, wd=0.05),
    adam("adamw", "torch.optim.AdamW", "Adam", "Decay", 0.02, wd=0.05),
    adam("adam_nobias", "numpy", "AdamNoBias", "Decay", 0.02),
    adam("adam_nobias_decay", "numpy", "AdamNoBias", "Decay", 0.02, wd=0.05),
    adam("adamax", "numpy", "AdaMax", "Decay", 0.02),
    adam("adamax_decay", "numpy", "AdaMax", "Decay", 0.02, wd=0.05),
    adam("lamb", "numpy", "Lamb", "Decay", 0.02, wd=0.01),
    adam("lamb_max_weight_norm", "numpy", "Lamb", "Decay", 0.02, wd=0.01, mwn=0.5),
    adam("lamb_nobias", "numpy", "LambNoBias", "Decay", 0.02, wd=0.01),
    adam("lamb_l2", "numpy", "Lamb", "L2Regularization", 0.02, wd=0.01),
    adam("lamb_mwn_zero", "numpy", "Lamb", "Decay", 0.02, wd=0.01, mwn=0.0),
    adam("adam_loss_scaling", "torch.optim.Adam", "Adam", "Decay", 0.02, ls=LOSS_SCALE),
    adam("lamb_loss_scaling", "numpy", "Lamb", "Decay", 0.02, wd=0.01, ls=LOSS_SCALE),
    adam("adam_clip_all", "torch.optim.Adam", "Adam", "Decay", 0.02, clip=("clipAllWeights", CLIP_ADAM, WEIGHTS)),
    adam("adamw_specific", "torch.optim.AdamW", "Adam", "Decay", 0.02, wd=0.05,
         specific={"b": {"learningRate": 0.005, "weightDecay": 0.0, "beta1": 0.8, "beta2": 0.99, "eps": 1e-4}}),
    # Adaptive family
    adaptive("adagrad", "torch.optim.Adagrad", "AdaGrad", "L2Regularization", 0.05),
    adaptive("adagrad_l2", "torch.optim.Adagrad", "AdaGrad", "L2Regularization", 0.05, wd=0.05),
    adaptive("adagrad_decay", "numpy", "AdaGrad", "Decay", 0.05, wd=0.05),
    adaptive("rmsprop", "torch.optim.RMSprop", "RMSProp", "L2Regularization", 0.01),
    adaptive("rmsprop_momentum_l2", "torch.optim.RMSprop", "RMSProp", "L2Regularization", 0.01, wd=0.05, mm=0.8),
    adaptive("rmsprop_decay", "numpy", "RMSProp", "Decay", 0.01, wd=0.05),
    adaptive("centered_rmsprop", "torch.optim.RMSprop", "CenteredRMSProp", "L2Regularization", 0.01),
    adaptive("centered_rmsprop_momentum_l2", "torch.optim.RMSprop", "CenteredRMSProp", "L2Regularization", 0.01,
             wd=0.05, mm=0.5),
    adaptive("adadelta", "torch.optim.Adadelta", "AdaDelta", "L2Regularization", 1.0, eps=1e-4),
    adaptive("adadelta_l2", "torch.optim.Adadelta", "AdaDelta", "L2Regularization", 1.0, wd=0.05, eps=1e-4),
    adaptive("adadelta_momentum_decay", "numpy", "AdaDelta", "Decay", 1.0, wd=0.05, mm=0.5, eps=1e-4),
    adaptive("rmsprop_loss_scaling", "torch.optim.RMSprop", "RMSProp", "L2Regularization", 0.01, ls=LOSS_SCALE),
    adaptive("rmsprop_specific", "torch.optim.RMSprop", "RMSProp", "L2Regularization", 0.01,
             specific={"b": {"learningRate": 0.02, "alpha": 0.95}}),
]

# Loss-scaling cases and the case they must equal exactly.
LOSS_SCALING_TWINS = {"sgd_loss_scaling": "sgd_momentum_wd", "adam_loss_scaling": "adam",
                      "lamb_loss_scaling": "lamb", "rmsprop_loss_scaling": "rmsprop"}


def values_for(case, weight):
    """The hyperparameters in force for one weight: the defaults overridden by the weight's specific values."""
    h = case["hyper"]
    v = {k[len("default"):][0].lower() + k[len("default") + 1:]: h[k] for k in h if k.startswith("default")}
    v.update(case["specific"].get(weight, {}))
    return v


# ----------------------------------------------------------------------------------------------------------------
# PopART's rules in float64 NumPy (docs/optimizers.md). Hyperparameters are used as float32 values, as xtrain
# stores them.
# ----------------------------------------------------------------------------------------------------------------

def np_loss_and_grads(w, x, y, ls):
    x = x.astype(np.float64)
    y = y.astype(np.float64)
    pred = x @ w["W"] + w["b"]
    d = pred - y
    loss = np.mean(d * d)
    dpred = (2.0 * ls / d.size) * d          # gradient of ls * loss
    return loss, {"W": x.T @ dpred, "b": dpred.sum(axis=0)}


def clip_factor(grads, clip):
    if clip is None:
        return None, 1.0
    _, max_norm, ids = clip
    norm = math.sqrt(sum(float(np.sum(np.asarray(grads[k], dtype=np.float64) ** 2)) for k in ids))
    return norm, max_norm / max(max_norm, norm)


def np_sgd_step(v, w, g, st):
    lr, wd, mm, dm, vs = (f32(v[k]) for k in ("learningRate", "weightDecay", "momentum", "dampening",
                                               "velocityScaling"))
    gg = g + wd * w
    if mm == 0.0:
        return w - lr * gg
    st["velocity"] = mm * st["velocity"] + (1.0 - dm) * vs * gg
    if v["nesterov"]:
        return w - (lr / vs) * (vs * gg + mm * st["velocity"])
    return w - (lr / vs) * st["velocity"]


def np_adam_step(v, mode, wdmode, w, g, st, info):
    lr, wd, b1, b2, eps, mwn = (f32(v[k]) for k in ("learningRate", "weightDecay", "beta1", "beta2", "eps",
                                                     "maxWeightNorm"))
    if wdmode == "L2Regularization":
        g = g + wd * w
    st["m"] = b1 * st["m"] + (1.0 - b1) * g
    if mode == "AdaMax":
        st["v"] = np.maximum(b2 * st["v"], np.abs(g))
    else:
        st["v"] = b2 * st["v"] + (1.0 - b2) * g * g
    st["step"] = st["step"] + 1.0
    t = st["step"]
    mc = st["m"] / (1.0 - b1 ** t) if mode in ("Adam", "Lamb", "AdaMax") else st["m"]
    vc = st["v"] / (1.0 - b2 ** t) if mode in ("Adam", "Lamb") else st["v"]
    u = mc / (vc + eps) if mode == "AdaMax" else mc / (np.sqrt(vc) + eps)
    if wdmode == "Decay":
        u = u + wd * w
    ratio = 1.0
    if mode in ("Lamb", "LambNoBias") and mwn != 0.0:
        r1 = math.sqrt(float(np.sum(w * w)))
        r2 = math.sqrt(float(np.sum(u * u)))
        info.append((r1, r2, mwn))
        if r1 != 0.0 and r2 != 0.0:
            ratio = min(r1, mwn) / r2
    return w - lr * ratio * u


def np_adaptive_step(v, mode, wdmode, w, g, st):
    lr, wd, a, mm, eps = (f32(v[k]) for k in ("learningRate", "weightDecay", "alpha", "momentum", "eps"))
    if wdmode == "L2Regularization":
        g = g + wd * w
    if mode == "AdaGrad":
        st["v1"] = st["v1"] + g * g
        x = g / (np.sqrt(st["v1"]) + eps)
    elif mode == "RMSProp":
        st["v1"] = a * st["v1"] + (1.0 - a) * g * g
        x = g / (np.sqrt(st["v1"]) + eps)
    elif mode == "CenteredRMSProp":
        st["v1"] = a * st["v1"] + (1.0 - a) * g * g
        st["v2"] = a * st["v2"] + (1.0 - a) * g
        x = g / (np.sqrt(st["v1"] - st["v2"] * st["v2"]) + eps)
    elif mode == "AdaDelta":
        st["v1"] = a * st["v1"] + (1.0 - a) * g * g
        x = g * np.sqrt(st["v2"] + eps) / np.sqrt(st["v1"] + eps)
        st["v2"] = a * st["v2"] + (1.0 - a) * x * x
    else:
        raise ValueError(mode)
    if mm != 0.0:
        st["v3"] = mm * st["v3"] + x
        x = st["v3"]
    if wdmode == "Decay":
        return w - lr * (x + wd * w)
    return w - lr * x


def state_slots(case, weight):
    opt, h = case["optimizer"], case["hyper"]
    v = values_for(case, weight)
    if opt == "SGD":
        return ["velocity"] if any(values_for(case, k)["momentum"] != 0.0 for k in WEIGHTS) else []
    if opt == "Adam":
        return ["m", "v", "step"]
    slots = ["v1"]
    if h["adaptiveMode"] in ("CenteredRMSProp", "AdaDelta"):
        slots.append("v2")
    if v["momentum"] != 0.0:
        slots.append("v3")
    return slots


def run_numpy(case, w0, xs, ys):
    ls = f32(case["hyper"]["lossScaling"])
    w = {k: w0[k].astype(np.float64) for k in WEIGHTS}
    state = {k: {s: (0.0 if s == "step" else np.zeros_like(w[k])) for s in state_slots(case, k)} for k in WEIGHTS}
    rec = {"losses": [], "weights": [], "norms": [], "factors": [], "lamb": []}
    for k in range(STEPS):
        loss, g = np_loss_and_grads(w, xs[k], ys[k], ls)
        g = {n: g[n] / ls for n in WEIGHTS}
        norm, factor = clip_factor(g, case["clip"])
        if case["clip"] is not None:
            for n in case["clip"][2]:
                g[n] = g[n] * factor
        rec["norms"].append(norm)
        rec["factors"].append(factor)
        new = {}
        for n in WEIGHTS:
            v = values_for(case, n)
            if case["optimizer"] == "SGD":
                v["nesterov"] = case["hyper"]["nesterov"]
                new[n] = np_sgd_step(v, w[n], g[n], state[n])
            elif case["optimizer"] == "Adam":
                v["maxWeightNorm"] = case["hyper"]["maxWeightNorm"]
                info = []
                new[n] = np_adam_step(v, case["hyper"]["adamMode"], case["hyper"]["weightDecayMode"], w[n], g[n],
                                      state[n], info)
                rec["lamb"].append((k + 1, n) + tuple(info[0]) if info else None)
            else:
                new[n] = np_adaptive_step(v, case["hyper"]["adaptiveMode"], case["hyper"]["weightDecayMode"],
                                          w[n], g[n], state[n])
        w = new
        rec["losses"].append(loss)
        rec["weights"].append({n: w[n].copy() for n in WEIGHTS})
    rec["state"] = {n: {s: np.asarray(state[n][s], dtype=np.float64) for s in state[n]} for n in WEIGHTS}
    return rec


# ----------------------------------------------------------------------------------------------------------------
# PyTorch (float32)
# ----------------------------------------------------------------------------------------------------------------

def torch_optimizer(case, params):
    opt, h = case["optimizer"], case["hyper"]

    def group(n):
        v = values_for(case, n)
        g = {"params": [params[n]], "lr": v["learningRate"]}
        if opt == "SGD":
            g.update(momentum=v["momentum"], dampening=v["dampening"], weight_decay=v["weightDecay"],
                     nesterov=bool(h["nesterov"]))
        elif opt == "Adam":
            g.update(betas=(v["beta1"], v["beta2"]), eps=v["eps"], weight_decay=v["weightDecay"])
        else:
            mode = h["adaptiveMode"]
            if mode == "AdaGrad":
                g.update(eps=v["eps"], weight_decay=v["weightDecay"], lr_decay=0.0, initial_accumulator_value=0.0)
            elif mode in ("RMSProp", "CenteredRMSProp"):
                g.update(alpha=v["alpha"], eps=v["eps"], weight_decay=v["weightDecay"], momentum=v["momentum"],
                         centered=(mode == "CenteredRMSProp"))
            else:
                g.update(rho=v["alpha"], eps=v["eps"], weight_decay=v["weightDecay"])
        return g

    cls = getattr(torch.optim, case["reference"].split(".")[-1])
    groups = [group(n) for n in WEIGHTS]
    if cls is torch.optim.Adam:
        assert h["adamMode"] == "Adam" and (h["weightDecayMode"] == "L2Regularization" or
                                            all(gr["weight_decay"] == 0.0 for gr in groups))
    if cls is torch.optim.AdamW:
        assert h["adamMode"] == "Adam" and h["weightDecayMode"] == "Decay"
    if opt == "Adaptive":
        assert h["weightDecayMode"] == "L2Regularization" or all(gr["weight_decay"] == 0.0 for gr in groups)
    return cls(groups)


TORCH_STATE = {  # torch optimizer class -> {PopART slot: torch state key}
    "SGD": {"velocity": "momentum_buffer"},
    "Adam": {"m": "exp_avg", "v": "exp_avg_sq", "step": "step"},
    "AdamW": {"m": "exp_avg", "v": "exp_avg_sq", "step": "step"},
    "Adamax": {"m": "exp_avg", "v": "exp_inf", "step": "step"},
    "Adagrad": {"v1": "sum"},
    "RMSprop": {"v1": "square_avg", "v2": "grad_avg", "v3": "momentum_buffer"},
    "Adadelta": {"v1": "square_avg", "v2": "acc_delta"},
}


def run_torch(case, w0, xs, ys, reference=None, zero_momentum_buffer=False):
    ls = case["hyper"]["lossScaling"]
    params = {k: torch.tensor(w0[k], dtype=torch.float32, requires_grad=True) for k in WEIGHTS}
    if reference is not None:
        case = dict(case, reference=reference)
    opt = torch_optimizer(case, params)
    if zero_momentum_buffer:  # PyTorch then dampens the first step too, as PopART does
        for n in WEIGHTS:
            opt.state[params[n]]["momentum_buffer"] = torch.zeros_like(params[n])
    rec = {"losses": [], "weights": [], "norms": [], "factors": []}
    for k in range(STEPS):
        opt.zero_grad()
        x, y = torch.from_numpy(xs[k]), torch.from_numpy(ys[k])
        loss = torch.nn.functional.mse_loss(x @ params["W"] + params["b"], y, reduction="mean")
        (loss * ls).backward()
        with torch.no_grad():
            for n in WEIGHTS:
                params[n].grad.mul_(1.0 / ls)
            norm, factor = None, 1.0
            if case["clip"] is not None:
                ids = case["clip"][2]
                norm = float(torch.sqrt(sum(torch.sum(params[n].grad * params[n].grad) for n in ids)))
                max_norm = case["clip"][1]
                factor = max_norm / max(max_norm, norm)
                for n in ids:
                    params[n].grad.mul_(factor)
        rec["norms"].append(norm)
        rec["factors"].append(factor)
        opt.step()
        rec["losses"].append(float(loss))
        rec["weights"].append({n: params[n].detach().numpy().copy() for n in WEIGHTS})
    key = case["reference"].split(".")[-1]
    rec["state"] = {}
    for n in WEIGHTS:
        st = opt.state[params[n]]
        rec["state"][n] = {s: np.asarray(torch.as_tensor(st[TORCH_STATE[key][s]]).detach().numpy(), dtype=np.float64)
                           for s in state_slots(case, n)}
    return rec


# ----------------------------------------------------------------------------------------------------------------
# Comparison and output
# ----------------------------------------------------------------------------------------------------------------

def max_rel_diff(a, b, with_state=True):
    """max |a - b| / (|b| + 0.1 max|B|) over the weights after every step and the final state, B being the whole
    tensor b belongs to (the comparison README.md recommends, with its tolerance 1e-5)."""
    worst = 0.0
    pairs = [(sa[n], sb[n]) for sa, sb in zip(a["weights"], b["weights"]) for n in WEIGHTS]
    if with_state:
        pairs += [(a["state"][n][s], b["state"][n][s]) for n in WEIGHTS for s in b["state"][n]]
    for x, y in pairs:
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        scale = np.abs(y) + 0.1 * np.max(np.abs(y))
        if np.max(scale) == 0.0:
            worst = max(worst, float(np.max(np.abs(x))))
        else:
            worst = max(worst, float(np.max(np.abs(x - y) / scale)))
    return worst


def fmt(v):
    return "%.9g" % np.float32(v)


def fmt_hyper(v):
    if isinstance(v, str):
        return v
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return str(v)
    return repr(float(v))


def tensor_lines(name, arr):
    arr = np.asarray(arr, dtype=np.float32)
    dims = " ".join(str(d) for d in arr.shape)
    head = "tensor %s FLOAT %d%s" % (name, arr.ndim, (" " + dims) if dims else "")
    return [head, " ".join(fmt(v) for v in arr.reshape(-1))]


def hyper_line(case):
    h = dict(case=case["name"], optimizer=case["optimizer"], reference=case["reference"], steps=STEPS,
             batch=BATCH, loss="mse", reduction="mean")
    h.update(case["hyper"])
    for n, vals in case["specific"].items():
        for key, val in vals.items():
            h["%s.%s" % (n, key)] = val
    if case["clip"] is None:
        h["clip"] = "none"
    else:
        h["clip"] = case["clip"][0]
        h["clipMaxNorm"] = case["clip"][1]
        h["clipWeightIds"] = ",".join(case["clip"][2])
    h["precision"] = "float32" if case["reference"].startswith("torch") else "float64"
    h["torch"] = torch.__version__
    return "hyper " + " ".join("%s=%s" % (k, fmt_hyper(v)) for k, v in h.items())


def write_case(case, w0, xs, ys, rec):
    lines = [
        "# xtrain optimizer reference: case %s (%s). Generated by make_reference.py with PyTorch %s and NumPy %s;"
        % (case["name"], case["optimizer"], torch.__version__, np.__version__),
        "# do not edit (regenerate: /usr/bin/python3 tests/data/optimizer_reference/make_reference.py).",
        "# Model: pred = MatMul(x[8,4], W[4,3]) + b[3]; loss = IdentityLoss(Mul(d, d), Mean), d = pred - y[8,3]",
        "# (MSE, mean over 24 elements). Step k = 1..%d uses x/step<k>, y/step<k>; loss/step<k> is computed with the"
        % STEPS,
        "# weights before step k (no loss scaling); W/step<k>, b/step<k> are the weights after step k; W and b are",
        "# the initial weights; state/<slot>/<w> is the optimizer state after step %d (docs/optimizers.md)." % STEPS,
    ]
    if case["clip"] is not None:
        lines.append("# gradnorm/step<k>: global norm of the clipped weights' unscaled gradients at step k, "
                     "before clipping.")
    lines.append(hyper_line(case))
    for n in WEIGHTS:
        lines += tensor_lines(n, w0[n])
    for k in range(STEPS):
        s = k + 1
        lines += tensor_lines("x/step%d" % s, xs[k])
        lines += tensor_lines("y/step%d" % s, ys[k])
        lines += tensor_lines("loss/step%d" % s, np.float32(rec["losses"][k]))
        if case["clip"] is not None:
            lines += tensor_lines("gradnorm/step%d" % s, np.float32(rec["norms"][k]))
        for n in WEIGHTS:
            lines += tensor_lines("%s/step%d" % (n, s), rec["weights"][k][n])
    for n in WEIGHTS:
        for slot, val in rec["state"][n].items():
            lines += tensor_lines("state/%s/%s" % (slot, n), val)
    path = os.path.join(HERE, case["name"] + ".txt")
    text = "\n".join(lines) + "\n"
    with open(path, "w") as f:
        f.write(text)
    return path, text


def parse_back(text):
    """Minimal parser of the written format: name -> float32 array (values only)."""
    out, lines, i = {}, text.splitlines(), 0
    while i < len(lines):
        tok = lines[i].split()
        if tok and tok[0] == "tensor":
            rank = int(tok[3])
            shape = [int(d) for d in tok[4:4 + rank]]
            out[tok[1]] = np.array([np.float32(v) for v in lines[i + 1].split()], dtype=np.float32).reshape(shape)
            i += 2
        else:
            i += 1
    return out


def main():
    w0, xs, ys = make_data()
    results, report = {}, []
    for case in CASES:
        rec_np = run_numpy(case, w0, xs, ys)
        if case["reference"].startswith("torch"):
            rec = run_torch(case, w0, xs, ys)
            diff = max_rel_diff(rec, rec_np)
            assert diff <= TORCH_VS_NUMPY_TOL, "%s: torch and the NumPy rule differ by %g" % (case["name"], diff)
            note = "torch vs numpy rule %.2g" % diff
        else:
            rec = rec_np
            note = "numpy rule"
        if case["clip"] is not None:
            assert all(f < 1.0 for f in rec["factors"]), "%s: some step does not clip" % case["name"]
            note += ", clip factors %.3f..%.3f" % (min(rec["factors"]), max(rec["factors"]))
        if case["optimizer"] == "Adam" and case["hyper"]["adamMode"].startswith("Lamb"):
            first_b = [e for e in rec_np["lamb"] if e and e[0] == 1 and e[1] == "b"]
            if case["hyper"]["maxWeightNorm"] != 0.0:
                assert first_b and first_b[0][2] == 0.0, "%s: ||b|| is not 0 at step 1" % case["name"]
            if case["name"] == "lamb_max_weight_norm":
                assert all(e[2] > e[4] for e in rec_np["lamb"] if e and e[1] == "W"), "mwn does not limit ||W||"
        results[case["name"]] = rec
        path, text = write_case(case, w0, xs, ys, rec)
        back = parse_back(text)
        for k in range(STEPS):
            for n in WEIGHTS:
                assert np.array_equal(back["%s/step%d" % (n, k + 1)], np.asarray(rec["weights"][k][n], np.float32))
        report.append("%-30s %-20s %s" % (case["name"], case["reference"], note))

    for scaled, plain in LOSS_SCALING_TWINS.items():
        for k in range(STEPS):
            for n in WEIGHTS:
                a = np.asarray(results[scaled]["weights"][k][n], np.float32)
                b = np.asarray(results[plain]["weights"][k][n], np.float32)
                assert np.array_equal(a, b), "%s differs from %s at step %d" % (scaled, plain, k + 1)
    # Velocity scaling changes only the stored velocity: the weights are those of plain momentum SGD.
    vs_diff = max(float(np.max(np.abs(np.asarray(results["sgd_velocity_scaling"]["weights"][k][n], np.float64) -
                                      results["sgd_momentum_wd"]["weights"][k][n]))) for k in range(STEPS)
                  for n in WEIGHTS)
    assert vs_diff < 1e-6, vs_diff

    # Information only: PyTorch's rules where they differ from PopART's.
    by_name = {c["name"]: c for c in CASES}
    t = run_torch(by_name["sgd_dampening"], w0, xs, ys, reference="torch.optim.SGD", zero_momentum_buffer=True)
    diff = max_rel_diff(t, results["sgd_dampening"])
    assert diff <= TORCH_VS_NUMPY_TOL, "sgd_dampening: torch with a zero initial buffer differs by %g" % diff
    info = ["sgd_dampening: PyTorch's SGD started from a zero momentum buffer agrees with PopART's rule to %.2g" % diff]
    for name, ref in (("adamax", "torch.optim.Adamax"), ("sgd_dampening", "torch.optim.SGD")):
        t = run_torch(by_name[name], w0, xs, ys, reference=ref)
        info.append("%s: the weights of PyTorch's %s differ from PopART's rule by %.2g (relative)" %
                    (name, ref, max_rel_diff(t, results[name], with_state=False)))

    all_vals = np.concatenate([np.abs(np.asarray(r["weights"][k][n], np.float64)).reshape(-1)
                               for r in results.values() for k in range(STEPS) for n in WEIGHTS])
    print("\n".join(report))
    print("\n".join(info))
    print("loss-scaling cases equal their unscaled twins exactly; sgd_velocity_scaling vs sgd_momentum_wd %.2g" %
          vs_diff)
    print("smallest |weight| recorded: %.3g; wrote %d files to %s" % (all_vals.min(), len(CASES), HERE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
