#!/usr/bin/python3
"""Generates independent SGD training reference numbers for xtrain's training correctness tests.

Run with Debian's PyTorch (python3-torch 1.13), not a pyenv python:

    /usr/bin/python3 tests/data/make_sgd_reference.py

It writes sgd_reference_mlp.txt and sgd_reference_cnn.txt next to this script. The output is deterministic:
fixed seeds (torch.Generator per purpose), float32 throughout, torch.set_num_threads(1), deterministic
algorithms. Running it twice gives byte-identical files.

Models (weights laid out as an ONNX model would hold them: MatMul weights as [in, out], so y = x @ W + b):
  mlp: x[8,6] -> x@W1[6,5]+b1[5] -> Relu -> @W2[5,4]+b2[4] -> softmax cross-entropy (mean) with labels[8] in [0,4)
  cnn: x[4,1,6,6] -> Conv(Wc[3,1,3,3], bc[3], stride 1, pad 1) -> Relu -> MaxPool(2x2, stride 2) -> [4,3,3,3]
       -> Flatten [4,27] -> @W3[27,5]+b3[5] -> softmax cross-entropy (mean) with labels[4] in [0,5)
Initial weights and biases: uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)) (fan_in: 6, 5 for the MLP; 9, 27 for
the CNN). Inputs: standard normal. Every step uses a different batch.

Optimizer: torch.optim.SGD(lr=0.05, momentum=0.9, dampening=0, weight_decay=0.01, nesterov=False), 5 steps:
    g = dL/dw + wd * w;   v = momentum * v + g   (v = g on the first step);   w = w - lr * v
With dampening 0, torch's momentum_buffer equals PopART's plain velocity.

Recorded tensors (see README.md for the file format):
  <name>             initial value of each weight, named like the ONNX initializer (W1 b1 W2 b2 / Wc bc W3 b3)
  x/step<k>          input batch of step k (k = 0..4)
  labels/step<k>     INT64 labels of step k
  loss/step<k>       scalar loss of step k, computed with the weights before that step's update
  final/<name>       weights after all 5 steps
  velocity/<name>    torch's momentum_buffer after all 5 steps

Self-checks (assertions; the script fails rather than write unchecked numbers):
  - a float64 NumPy re-implementation of both models' forward, backward and SGD update agrees with torch to 1e-6
    (losses, final weights, velocities);
  - no Relu pre-activation is within 1e-4 of 0 and no max-pool window whose maximum is positive has a tie (second
    largest within 1e-4), so the gradients do not depend on tie-breaking conventions;
  - the written files parse back to bit-identical float32 values.
"""

import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))

LR = 0.05
MOMENTUM = 0.9
DAMPENING = 0.0
WEIGHT_DECAY = 0.01
NESTEROV = False
STEPS = 5
MARGIN = 1e-4   # minimum distance of Relu inputs from 0 and between a max-pool maximum and the runner-up
TOL = 1e-6      # torch (float32) vs NumPy (float64) agreement


def fmt_float(v):
    # repr of a float32: 9 significant digits round-trip every float32 exactly.
    return "%.9g" % float(np.float32(v))


def uniform(gen, shape, bound):
    return (torch.rand(shape, generator=gen, dtype=torch.float32) * 2.0 - 1.0) * bound


# ----------------------------------------------------------------------------------------------------------------
# Models (torch)
# ----------------------------------------------------------------------------------------------------------------

def check_relu_margin(z, what):
    m = z.detach().abs().min().item()
    assert m > MARGIN, "%s: a Relu input is %g from 0; pick another seed" % (what, m)


def mlp_forward(p, x, labels, what):
    z1 = x @ p["W1"] + p["b1"]
    check_relu_margin(z1, what)
    h = torch.relu(z1)
    logits = h @ p["W2"] + p["b2"]
    return F.cross_entropy(logits, labels, reduction="mean")


def check_pool_ties(a, what):
    # a: Relu output [N, C, H, W]; windows 2x2 stride 2.
    n, c, hh, ww = a.shape
    w = a.detach().reshape(n, c, hh // 2, 2, ww // 2, 2).permute(0, 1, 2, 4, 3, 5).reshape(-1, 4)
    top2 = torch.topk(w, 2, dim=1).values
    positive = top2[:, 0] > 0
    gap = (top2[:, 0] - top2[:, 1])[positive]
    if gap.numel():
        assert gap.min().item() > MARGIN, "%s: max-pool tie (gap %g); pick another seed" % (what, gap.min().item())


def cnn_forward(p, x, labels, what):
    z = F.conv2d(x, p["Wc"], p["bc"], stride=1, padding=1)
    check_relu_margin(z, what)
    a = torch.relu(z)
    check_pool_ties(a, what)
    pooled = F.max_pool2d(a, kernel_size=2, stride=2)
    flat = pooled.reshape(pooled.shape[0], -1)
    logits = flat @ p["W3"] + p["b3"]
    return F.cross_entropy(logits, labels, reduction="mean")


MODELS = {
    "mlp": dict(
        weights=[("W1", [6, 5], 6), ("b1", [5], 6), ("W2", [5, 4], 5), ("b2", [4], 5)],
        x_shape=[8, 6], num_classes=4, forward=mlp_forward,
        weight_seed=1234, data_seed=5678,
        description="x[8,6] -> MatMul W1[6,5] + b1 -> Relu -> MatMul W2[5,4] + b2 -> softmax CE (mean)"),
    "cnn": dict(
        weights=[("Wc", [3, 1, 3, 3], 9), ("bc", [3], 9), ("W3", [27, 5], 27), ("b3", [5], 27)],
        x_shape=[4, 1, 6, 6], num_classes=5, forward=cnn_forward,
        weight_seed=4321, data_seed=8765,
        description="x[4,1,6,6] -> Conv Wc[3,1,3,3] + bc (stride 1, pad 1) -> Relu -> MaxPool 2x2/2 -> "
                    "Flatten [4,27] -> MatMul W3[27,5] + b3 -> softmax CE (mean)"),
}


def run_torch(name, cfg):
    wgen = torch.Generator().manual_seed(cfg["weight_seed"])
    dgen = torch.Generator().manual_seed(cfg["data_seed"])
    names = [w[0] for w in cfg["weights"]]
    params = {}
    for wname, shape, fan_in in cfg["weights"]:
        params[wname] = uniform(wgen, shape, 1.0 / math.sqrt(fan_in)).requires_grad_(True)
    initial = {k: v.detach().clone() for k, v in params.items()}

    batch = cfg["x_shape"][0]
    xs, labels = [], []
    for _ in range(STEPS):
        xs.append(torch.randn(cfg["x_shape"], generator=dgen, dtype=torch.float32))
        labels.append(torch.randint(0, cfg["num_classes"], [batch], generator=dgen, dtype=torch.int64))

    opt = torch.optim.SGD([params[k] for k in names], lr=LR, momentum=MOMENTUM, dampening=DAMPENING,
                          weight_decay=WEIGHT_DECAY, nesterov=NESTEROV)
    losses = []
    for k in range(STEPS):
        opt.zero_grad()
        loss = cfg["forward"](params, xs[k], labels[k], "%s step %d" % (name, k))
        loss.backward()
        losses.append(loss.detach().clone())
        opt.step()
    # One more forward with the final weights only to apply the Relu/pool margin checks to them too.
    with torch.no_grad():
        cfg["forward"](params, xs[0], labels[0], "%s final weights" % name)

    final = {k: params[k].detach().clone() for k in names}
    velocity = {k: opt.state[params[k]]["momentum_buffer"].detach().clone() for k in names}
    return dict(names=names, initial=initial, xs=xs, labels=labels, losses=losses, final=final,
                velocity=velocity)


# ----------------------------------------------------------------------------------------------------------------
# Independent NumPy (float64) re-implementation
# ----------------------------------------------------------------------------------------------------------------

def np_softmax_ce(logits, labels):
    """Mean softmax cross-entropy and its gradient w.r.t. logits."""
    n = logits.shape[0]
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    prob = e / e.sum(axis=1, keepdims=True)
    loss = -np.mean(np.log(prob[np.arange(n), labels]))
    d = prob.copy()
    d[np.arange(n), labels] -= 1.0
    return loss, d / n


def np_mlp_loss_grad(w, x, labels):
    z1 = x @ w["W1"] + w["b1"]
    h = np.maximum(z1, 0.0)
    logits = h @ w["W2"] + w["b2"]
    loss, dlogits = np_softmax_ce(logits, labels)
    g = {"W2": h.T @ dlogits, "b2": dlogits.sum(axis=0)}
    dz1 = (dlogits @ w["W2"].T) * (z1 > 0)
    g["W1"] = x.T @ dz1
    g["b1"] = dz1.sum(axis=0)
    return loss, g


def np_cnn_loss_grad(w, x, labels):
    n, cin, hh, ww = x.shape
    cout, _, kh, kw = w["Wc"].shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    # im2col: cols[n, oy, ox, cin*kh*kw]
    cols = np.empty((n, hh, ww, cin * kh * kw))
    for oy in range(hh):
        for ox in range(ww):
            cols[:, oy, ox, :] = xp[:, :, oy:oy + kh, ox:ox + kw].reshape(n, -1)
    wmat = w["Wc"].reshape(cout, -1)                       # [cout, cin*kh*kw]
    z = np.einsum("nyxk,ck->ncyx", cols, wmat) + w["bc"][None, :, None, None]
    a = np.maximum(z, 0.0)
    ph, pw = hh // 2, ww // 2
    win = a.reshape(n, cout, ph, 2, pw, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, cout, ph, pw, 4)
    arg = win.argmax(axis=-1)
    pooled = win.max(axis=-1)
    flat = pooled.reshape(n, -1)
    logits = flat @ w["W3"] + w["b3"]
    loss, dlogits = np_softmax_ce(logits, labels)
    g = {"W3": flat.T @ dlogits, "b3": dlogits.sum(axis=0)}
    dpooled = (dlogits @ w["W3"].T).reshape(n, cout, ph, pw)
    dwin = np.zeros_like(win)
    np.put_along_axis(dwin, arg[..., None], dpooled[..., None], axis=-1)
    da = dwin.reshape(n, cout, ph, pw, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, cout, hh, ww)
    dz = da * (z > 0)
    g["Wc"] = np.einsum("ncyx,nyxk->ck", dz, cols).reshape(w["Wc"].shape)
    g["bc"] = dz.sum(axis=(0, 2, 3))
    return loss, g


NP_LOSS_GRAD = {"mlp": np_mlp_loss_grad, "cnn": np_cnn_loss_grad}


def run_numpy(name, ref):
    w = {k: v.numpy().astype(np.float64) for k, v in ref["initial"].items()}
    v = {k: None for k in ref["names"]}
    losses = []
    for k in range(STEPS):
        loss, g = NP_LOSS_GRAD[name](w, ref["xs"][k].numpy().astype(np.float64), ref["labels"][k].numpy())
        losses.append(loss)
        for p in ref["names"]:
            d = g[p] + WEIGHT_DECAY * w[p]
            v[p] = d.copy() if v[p] is None else MOMENTUM * v[p] + (1.0 - DAMPENING) * d
            w[p] = w[p] - LR * v[p]
    return losses, w, v


def assert_close(what, torch_value, np_value):
    a = np.asarray(torch_value, dtype=np.float64)
    b = np.asarray(np_value, dtype=np.float64)
    assert a.shape == b.shape, "%s: shape %s vs %s" % (what, a.shape, b.shape)
    err = np.max(np.abs(a - b)) if a.size else 0.0
    assert err <= TOL, "%s: torch and NumPy differ by %g (> %g)" % (what, err, TOL)
    return err


def cross_check(name, ref):
    losses, w, v = run_numpy(name, ref)
    worst = 0.0
    for k in range(STEPS):
        worst = max(worst, assert_close("%s loss/step%d" % (name, k), ref["losses"][k].numpy(), losses[k]))
    for p in ref["names"]:
        worst = max(worst, assert_close("%s final/%s" % (name, p), ref["final"][p].numpy(), w[p]))
        worst = max(worst, assert_close("%s velocity/%s" % (name, p), ref["velocity"][p].numpy(), v[p]))
    return worst


# ----------------------------------------------------------------------------------------------------------------
# File I/O
# ----------------------------------------------------------------------------------------------------------------

def tensor_lines(tname, t):
    arr = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    if arr.dtype == np.float32:
        dtype, values = "FLOAT", [fmt_float(e) for e in arr.reshape(-1)]
    elif arr.dtype == np.int64:
        dtype, values = "INT64", [str(int(e)) for e in arr.reshape(-1)]
    else:
        raise TypeError("%s: unsupported dtype %s" % (tname, arr.dtype))
    header = " ".join(["tensor", tname, dtype, str(arr.ndim)] + [str(d) for d in arr.shape])
    return [header, " ".join(values)]


def write_reference(name, cfg, ref, path):
    lines = [
        "# xtrain SGD training reference: %s model. Generated by make_sgd_reference.py with PyTorch %s;"
        % (name, torch.__version__),
        "# do not edit by hand (regenerate: /usr/bin/python3 tests/data/make_sgd_reference.py).",
        "# Model: %s" % cfg["description"],
        "# MatMul weights are [in, out] (y = x @ W + b). Initial weights U(-1/sqrt(fan_in), 1/sqrt(fan_in)).",
        "# Optimizer: torch.optim.SGD; per step g = dL/dw + weight_decay*w; v = momentum*v + g (v = g at step 0);",
        "# w -= lr*v. loss/step<k> uses the weights before step k's update; final/<w> and velocity/<w> are",
        "# after all steps (velocity = torch momentum_buffer = PopART velocity with dampening 0).",
        "# Format: 'hyper key=value ...'; 'tensor <name> <FLOAT|INT64> <rank> <dims...>' then one line of values",
        "# (floats as '%.9g', which round-trips float32 exactly).",
        "hyper model=%s lr=%s momentum=%s dampening=%s weight_decay=%s nesterov=%d steps=%d batch=%d "
        "num_classes=%d loss=softmax_cross_entropy reduction=mean weight_seed=%d data_seed=%d"
        % (name, LR, MOMENTUM, DAMPENING, WEIGHT_DECAY, int(NESTEROV), STEPS, cfg["x_shape"][0],
           cfg["num_classes"], cfg["weight_seed"], cfg["data_seed"]),
    ]
    expected = {}

    def add(tname, t):
        lines.extend(tensor_lines(tname, t))
        expected[tname] = t.detach().numpy().copy()

    for p in ref["names"]:
        add(p, ref["initial"][p])
    for k in range(STEPS):
        add("x/step%d" % k, ref["xs"][k])
        add("labels/step%d" % k, ref["labels"][k])
        add("loss/step%d" % k, ref["losses"][k])
    for p in ref["names"]:
        add("final/%s" % p, ref["final"][p])
    for p in ref["names"]:
        add("velocity/%s" % p, ref["velocity"][p])
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return expected


def read_reference(path):
    """Minimal parser, used only to check the round trip."""
    out = {}
    with open(path) as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines):
        parts = lines[i].split()
        i += 1
        if not parts or parts[0].startswith("#") or parts[0] == "hyper":
            continue
        assert parts[0] == "tensor", "line %d: %r" % (i, lines[i - 1])
        tname, dtype, rank = parts[1], parts[2], int(parts[3])
        dims = [int(d) for d in parts[4:4 + rank]]
        np_dtype = np.float32 if dtype == "FLOAT" else np.int64
        values = lines[i].split()
        i += 1
        out[tname] = np.array([np_dtype(v) if np_dtype is np.float32 else int(v) for v in values],
                              dtype=np_dtype).reshape(dims)
    return out


def check_round_trip(path, expected):
    back = read_reference(path)
    assert set(back) == set(expected), "%s: names differ after reading back" % path
    for k, v in expected.items():
        b = back[k]
        assert b.dtype == v.dtype and b.shape == v.shape, "%s: %s dtype/shape differ" % (path, k)
        assert b.tobytes() == v.tobytes(), "%s: %s not bit-identical" % (path, k)


def main():
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.set_default_dtype(torch.float32)
    for name, cfg in MODELS.items():
        ref = run_torch(name, cfg)
        worst = cross_check(name, ref)
        path = os.path.join(HERE, "sgd_reference_%s.txt" % name)
        expected = write_reference(name, cfg, ref, path)
        check_round_trip(path, expected)
        print("%s: wrote %s; losses %s; max |torch - numpy| = %.3g"
              % (name, os.path.relpath(path), " ".join(fmt_float(l.item()) for l in ref["losses"]), worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
