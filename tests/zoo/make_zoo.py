#!/usr/bin/python3
"""The model zoo of issue 14 (item 6): small models written in PyTorch, exported as a user would, with
PyTorch's own weights after a few optimizer steps, so that tests/zoo/zoo_test.cpp can train each model with
xtrain and compare without torch.

Run with Debian's PyTorch (python3-torch 1.13), python3-onnx and python3-h5py through /usr/bin/python3:

    /usr/bin/python3 tests/zoo/make_zoo.py

It writes tests/data/zoo/<model>/ (deterministic: running it twice gives the same numbers):

  <model>_op13.onnx, <model>_op13_dyn.onnx, <model>_op17.onnx, <model>_op17_dyn.onnx
      torch.onnx.export(model, ..., training=TrainingMode.TRAINING, do_constant_folding=False,
      opset_version=13|17), the loss inside the graph (graph output "loss"); *_dyn with
      dynamic_axes={input: {0: "batch"}} for every graph input. All four start from the same weights.
  data.h5
      one dataset per graph input, named like the input, first dimension = samples: STEPS * BATCH
      samples; step k (0-based) of the reference uses samples [k * BATCH, (k + 1) * BATCH), and with
      4 replicas replica r of step k uses samples k * BATCH + r * BATCH/4 + [0, BATCH/4).
  reference_<case>.h5
      one dataset per trained weight (named like the ONNX initializer): the weights after STEPS
      optimizer steps, float32. Cases: sgd, adam (one replica, micro-batch BATCH); for models with
      BatchNormalization also sgd_2x2, adam_2x2: 4 replicas of micro-batch BATCH/4, each computing
      its batch statistics from its own quarter, gradients averaged (mean reduction). For models
      without BatchNormalization the 4-replica weights equal the one-replica ones (the loss is a mean
      over equal quarters), so the tests use reference_<opt>.h5 for both.
  running_sgd.h5 (models with BatchNormalization)
      the running_mean and running_var initializers after the sgd case on one replica, by the ONNX
      operator's definition (population variance of the batch; PyTorch's own running_var uses the
      unbiased one, so its buffers are not the reference).
  manifest.txt
      one line per model: name, loss tensor, BatchNormalization yes/no, and the xtrain options of
      each case (read by zoo_test.cpp).

xtrain options each reference corresponds to (PopART semantics, docs/optimizers.md):
  sgd:  torch.optim.SGD(lr=0.05, momentum=0.9, dampening=0, weight_decay=1e-3)
        = xtrain --optimizer sgd --lr 0.05 --momentum 0.9 --dampening 0 --weight-decay 0.001
        (PopART's g' = g + wd * w, v = mm * v + (1 - dm) * g', w -= lr * v: with dm = 0 the
        zero-started velocity equals PyTorch's first buffer g').
  adam: torch.optim.Adam(lr=0.01, betas=(0.9, 0.99), eps=1e-4, weight_decay=0)
        = xtrain --optimizer adam --lr 0.01 --beta1 0.9 --beta2 0.99 --eps 0.0001 --weight-decay 0
        (epsilon outside the square root after bias correction, as PyTorch; xtrain's default eps is
        1e-6 and PyTorch's 1e-8, so it is always given; eps = 1e-4 keeps weights whose gradient is
        near zero from amplifying float32 summation-order differences; beta2 = 0.99 as in
        tests/data/optimizer_reference, since 1 - 0.999 differs between float32 and double).
  Both: --reduction mean, no loss scaling, no gradient accumulation, --micro-batch-size BATCH (one
  replica) or BATCH/4 (2 instances x 2 replicas), --steps STEPS.

xtrain shuffles the samples (tools/xtrain/sample_order.cpp, SampleOrder); zoo_test.cpp writes a
copy of data.h5 with the samples permuted so that xtrain's order feeds each step and replica exactly
the samples listed above.

No Dropout anywhere (a training-mode export would make it random).
"""

import math
import os
import sys

import h5py
import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "zoo")
STEPS = 4
BATCH = 8
REPLICAS = 4
OPSETS = (13, 17)

SGD = dict(lr=0.05, momentum=0.9, dampening=0.0, weight_decay=1e-3)
ADAM = dict(lr=0.01, betas=(0.9, 0.99), eps=1e-4, weight_decay=0.0)
XTRAIN_FLAGS = {
    "sgd": "--optimizer sgd --lr 0.05 --momentum 0.9 --dampening 0 --weight-decay 0.001",
    "adam": "--optimizer adam --lr 0.01 --beta1 0.9 --beta2 0.99 --eps 0.0001 --weight-decay 0",
}

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)


# ------------------------------------------------------------------------------------------------
# Models: forward(*inputs) returns the loss (a scalar).
# ------------------------------------------------------------------------------------------------

class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x, y):
        return F.cross_entropy(self.fc2(F.relu(self.fc1(x))), y)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x, y):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)       # 12x12 -> 6x6
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)       # 4x4 -> 2x2
        h = h.view(h.shape[0], -1)
        return F.cross_entropy(self.fc2(F.relu(self.fc1(h))), y)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(h + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.block1 = BasicBlock(8, 8, 1)
        self.block2 = BasicBlock(8, 16, 2)
        self.fc = nn.Linear(16, 10)

    def forward(self, x, y):
        h = F.relu(self.bn(self.stem(x)))
        h = self.block2(self.block1(h))
        h = F.adaptive_avg_pool2d(h, 1).flatten(1)
        return F.cross_entropy(self.fc(h), y)


class SqueezeExcite(nn.Module):
    def __init__(self, c, r):
        super().__init__()
        self.reduce = nn.Conv2d(c, r, 1)
        self.expand = nn.Conv2d(r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.hardsigmoid(self.expand(F.relu(self.reduce(s))))
        return x * s


class MobileNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.se = SqueezeExcite(8, 4)
        self.pw = nn.Conv2d(8, 16, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x, y):
        h = F.hardswish(self.bn0(self.stem(x)))
        h = F.hardswish(self.bn1(self.dw(h)))
        h = self.bn2(self.pw(self.se(h)))
        h = F.adaptive_avg_pool2d(h, 1).flatten(1)
        return F.cross_entropy(self.fc(h), y)


VOCAB, SEQ, DIM, HEADS = 16, 8, 16, 2


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)

    def forward(self, x, mask_fill):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q = q.view(b, t, HEADS, -1).transpose(1, 2)
        k = k.view(b, t, HEADS, -1).transpose(1, 2)
        v = v.view(b, t, HEADS, -1).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // HEADS)
        att = mask_fill(att)
        h = F.softmax(att, dim=-1) @ v
        return self.proj(h.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(DIM)
        self.attn = Attention()
        self.ln2 = nn.LayerNorm(DIM)
        self.fc1 = nn.Linear(DIM, 2 * DIM)
        self.fc2 = nn.Linear(2 * DIM, DIM)

    def forward(self, x, mask_fill):
        x = x + self.attn(self.ln1(x), mask_fill)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Gpt(nn.Module):
    """Decoder: token and position embeddings, a causal block, next-token cross-entropy."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(SEQ, DIM)
        self.block = Block()
        self.ln = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, x, y):
        t = x.shape[1]
        h = self.tok(x) + self.pos(torch.arange(t, device=x.device))
        pos = torch.arange(t, device=x.device)
        causal = pos[None, :] > pos[:, None]  # torch.triu has no ONNX export at opset 13
        h = self.block(h, lambda att: att.masked_fill(causal, float("-inf")))
        logits = self.head(self.ln(h))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))


class Bert(nn.Module):
    """Encoder with a padding mask (1 = token, 0 = padding): masked mean pooling, a classifier."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(SEQ, DIM)
        self.ln0 = nn.LayerNorm(DIM)
        self.block = Block()
        self.cls = nn.Linear(DIM, 3)

    def forward(self, x, mask, y):
        h = self.ln0(self.tok(x) + self.pos(torch.arange(x.shape[1], device=x.device)))
        pad = (mask == 0)[:, None, None, :]
        h = self.block(h, lambda att: att.masked_fill(pad, -1e9))
        m = mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(dim=1) / m.sum(dim=1)
        return F.cross_entropy(self.cls(pooled), y)


class LstmClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 8, batch_first=True)
        self.fc = nn.Linear(8, 5)

    def forward(self, x, y):
        out, _ = self.rnn(x)
        return F.cross_entropy(self.fc(out[:, -1]), y)


class GruClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 8, batch_first=True)
        self.fc = nn.Linear(8, 5)

    def forward(self, x, y):
        out, _ = self.rnn(x)
        return F.cross_entropy(self.fc(out[:, -1]), y)


class UNet(nn.Module):
    """Two levels down (max pooling), up by ConvTranspose2d and by F.interpolate (bilinear), skip
    connections by concatenation, a per-pixel MSE loss."""

    def __init__(self):
        super().__init__()
        self.enc1 = nn.Conv2d(1, 4, 3, padding=1)
        self.enc2 = nn.Conv2d(4, 8, 3, padding=1)
        self.mid = nn.Conv2d(8, 8, 3, padding=1)
        self.up2 = nn.ConvTranspose2d(8, 8, 2, stride=2)
        self.dec2 = nn.Conv2d(16, 4, 3, padding=1)
        self.dec1 = nn.Conv2d(8, 4, 3, padding=1)
        self.out = nn.Conv2d(4, 1, 1)

    def forward(self, x, y):
        e1 = F.relu(self.enc1(x))                               # 8x8
        e2 = F.relu(self.enc2(F.max_pool2d(e1, 2)))             # 4x4
        m = F.relu(self.mid(F.max_pool2d(e2, 2)))               # 2x2
        d2 = F.relu(self.dec2(torch.cat([self.up2(m), e2], 1)))  # 4x4
        u1 = F.interpolate(d2, scale_factor=2.0, mode="bilinear", align_corners=False)
        d1 = F.relu(self.dec1(torch.cat([u1, e1], 1)))          # 8x8
        return ((self.out(d1) - y) ** 2).mean()  # F.mse_loss has no ONNX export in torch 1.13


# ------------------------------------------------------------------------------------------------
# Data: (name, numpy array [STEPS * BATCH, ...]) per graph input, in forward's argument order.
# ------------------------------------------------------------------------------------------------

def labels(rng, classes, shape=()):
    return rng.integers(0, classes, size=(STEPS * BATCH,) + shape).astype(np.int64)


def images(rng, shape):
    return rng.standard_normal(size=(STEPS * BATCH,) + shape).astype(np.float32)


def data_mlp(rng):
    return [("x", images(rng, (16,))), ("y", labels(rng, 10))]


def data_lenet(rng):
    return [("x", images(rng, (1, 12, 12))), ("y", labels(rng, 10))]


def data_rgb(rng):
    return [("x", images(rng, (3, 8, 8))), ("y", labels(rng, 10))]


def data_gpt(rng):
    seq = rng.integers(0, VOCAB, size=(STEPS * BATCH, SEQ + 1)).astype(np.int64)
    return [("x", seq[:, :-1].copy()), ("y", seq[:, 1:].copy())]


def data_bert(rng):
    n = STEPS * BATCH
    x = rng.integers(1, VOCAB, size=(n, SEQ)).astype(np.int64)
    lengths = rng.integers(3, SEQ + 1, size=n)
    mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype(np.int64)
    x = x * mask  # token 0 is padding
    return [("x", x), ("mask", mask), ("y", labels(rng, 3))]


def data_seq(rng):
    return [("x", images(rng, (6, 4))), ("y", labels(rng, 5))]


def data_unet(rng):
    x = images(rng, (1, 8, 8))
    y = (0.5 * x + 0.1 * rng.standard_normal(size=x.shape)).astype(np.float32)
    return [("x", x), ("y", y)]


MODELS = [
    ("mlp", Mlp, data_mlp, False),
    ("lenet", LeNet, data_lenet, False),
    ("resnet", ResNet, data_rgb, True),
    ("mobilenet", MobileNet, data_rgb, True),
    ("gpt", Gpt, data_gpt, False),
    ("bert", Bert, data_bert, False),
    ("lstm", LstmClassifier, data_seq, False),
    ("gru", GruClassifier, data_seq, False),
    ("unet", UNet, data_unet, False),
]


# ------------------------------------------------------------------------------------------------
# Training in PyTorch
# ------------------------------------------------------------------------------------------------

def make_optimizer(name, model):
    if name == "sgd":
        return torch.optim.SGD(model.parameters(), **SGD)
    return torch.optim.Adam(model.parameters(), **ADAM)


def train(model, data, opt_name, replicas):
    """STEPS steps; each step's batch split into `replicas` equal parts run separately (own batch
    statistics), gradients averaged over the parts (xtrain's mean reduction)."""
    model.train()
    opt = make_optimizer(opt_name, model)
    part = BATCH // replicas
    losses = []
    for k in range(STEPS):
        opt.zero_grad()
        total = 0.0
        for r in range(replicas):
            lo = k * BATCH + r * part
            args = [torch.from_numpy(a[lo:lo + part]) for _, a in data]
            loss = model(*args) / replicas
            loss.backward()
            total += float(loss)
        opt.step()
        losses.append(total)
    return losses


def onnx_running_statistics(model, data):
    """The running statistics of every BatchNormalization after SGD training on one replica, as the
    ONNX operator defines them (opset 14/15 BatchNormalization): running_mean = momentum *
    running_mean + (1 - momentum) * batch mean, the same for running_var with the batch's population
    variance (PyTorch's own running_var uses the unbiased variance instead). momentum is the exported
    attribute (1 - PyTorch's momentum). Returns {initializer name: float32 array}."""
    bns = {n: mod for n, mod in model.named_modules() if isinstance(mod, nn.BatchNorm2d)}
    running = {n: [mod.running_mean.double().numpy().copy(), mod.running_var.double().numpy().copy()]
               for n, mod in bns.items()}
    hooks = []
    for n, mod in bns.items():
        def hook(mod, inputs, output, n=n):
            x = inputs[0].detach().double()
            keep = float(np.float32(1.0 - mod.momentum))
            running[n][0] = keep * running[n][0] + (1 - keep) * x.mean(dim=(0, 2, 3)).numpy()
            running[n][1] = keep * running[n][1] + (1 - keep) * x.var(dim=(0, 2, 3), unbiased=False).numpy()
        hooks.append(mod.register_forward_hook(hook))
    train(model, data, "sgd", 1)
    for h in hooks:
        h.remove()
    out = {}
    for n, mod in bns.items():
        assert np.allclose(running[n][0], mod.running_mean.double().numpy(), rtol=1e-5, atol=1e-7), n
        out[n + ".running_mean"] = running[n][0].astype(np.float32)
        out[n + ".running_var"] = running[n][1].astype(np.float32)
    return out


def trained_weights(model, names):
    params = dict(model.named_parameters())
    return {n: params[n].detach().numpy().astype(np.float32).copy() for n in names}


# ------------------------------------------------------------------------------------------------
# Export and files
# ------------------------------------------------------------------------------------------------

def export(model, data, path, opset, dynamic):
    names = [n for n, _ in data]
    args = tuple(torch.from_numpy(a[:BATCH]) for _, a in data)
    dyn = {n: {0: "batch"} for n in names} if dynamic else None
    # Exporting in training mode runs the model once, which moves BatchNorm's running statistics: the
    # file would start one update ahead of the references. Its initializers get the state from before.
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    torch.onnx.export(model, args, path, input_names=names, output_names=["loss"],
                      opset_version=opset, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, dynamic_axes=dyn)
    model.load_state_dict(before)
    m = onnx.load(path)
    for init in m.graph.initializer:
        if init.name in before:
            init.CopyFrom(numpy_helper.from_array(before[init.name].numpy(), init.name))
    onnx.save(m, path)
    onnx.checker.check_model(m)
    return m


def write_h5(path, arrays):
    with h5py.File(path, "w", libver="earliest") as f:
        for name, a in arrays:
            f.create_dataset(name, data=a, track_times=False)


def main():
    os.makedirs(OUT, exist_ok=True)
    manifest = ["# model loss batchnorm inputs (written by tests/zoo/make_zoo.py; do not edit)"]
    sizes = 0
    for index, (name, cls, make_data, has_bn) in enumerate(MODELS):
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        torch.manual_seed(1000 + index)
        model = cls()
        state0 = {k: v.clone() for k, v in model.state_dict().items()}
        data = make_data(np.random.Generator(np.random.PCG64(2000 + index)))
        write_h5(os.path.join(d, "data.h5"), data)

        trainable = [n for n, _ in model.named_parameters()]
        for opset in OPSETS:
            for dynamic in (False, True):
                model.load_state_dict(state0)
                path = os.path.join(d, "%s_op%d%s.onnx" % (name, opset, "_dyn" if dynamic else ""))
                m = export(model, data, path, opset, dynamic)
                inits = {i.name for i in m.graph.initializer}
                missing = [n for n in trainable if n not in inits]
                assert not missing, "%s: parameters not exported as initializers: %s" % (path, missing)
                extra = sorted(n for n in inits if n not in trainable)
                ops = sorted({n.op_type for n in m.graph.node})
                print("%s: %d initializers (%s not trained by PyTorch), ops %s" %
                      (os.path.relpath(path, OUT), len(inits), extra or "none", " ".join(ops)))
                sizes += os.path.getsize(path)

        cases = [("sgd", 1), ("adam", 1)]
        if has_bn:
            cases += [("sgd_2x2", REPLICAS), ("adam_2x2", REPLICAS)]
        for case, replicas in cases:
            model.load_state_dict(state0)
            losses = train(model, data, case.split("_")[0], replicas)
            w = trained_weights(model, trainable)
            write_h5(os.path.join(d, "reference_%s.h5" % case), sorted(w.items()))
            w0 = {n: state0[n].numpy() for n in trainable}
            moved = max(float(np.max(np.abs(w[n] - w0[n]))) for n in trainable)
            print("  %-9s losses %s, largest weight change %.3g" %
                  (case, " ".join("%.4f" % v for v in losses), moved))
        if has_bn:
            model.load_state_dict(state0)
            stats = onnx_running_statistics(model, data)
            write_h5(os.path.join(d, "running_sgd.h5"), sorted(stats.items()))
        if has_bn:  # per-replica statistics must make a difference, or the 2x2 case tests nothing
            a = h5py.File(os.path.join(d, "reference_sgd.h5"), "r")
            b = h5py.File(os.path.join(d, "reference_sgd_2x2.h5"), "r")
            diff = max(float(np.max(np.abs(a[n][()] - b[n][()]))) for n in trainable)
            assert diff > 1e-4, "%s: 2x2 and 1-replica references agree (%g)" % (name, diff)
            print("  2x2 vs 1 replica (sgd): largest difference %.3g" % diff)
        manifest.append("%s loss %s %s" % (name, "yes" if has_bn else "no",
                                           ",".join(n for n, _ in data)))
        for f in os.listdir(d):
            if f.endswith(".h5"):
                sizes += os.path.getsize(os.path.join(d, f))
    with open(os.path.join(OUT, "manifest.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    print("steps %d, batch %d; %d bytes in %s" % (STEPS, BATCH, sizes, os.path.normpath(OUT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
