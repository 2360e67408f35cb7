#!/usr/bin/python3
"""Models people use (issue 32, aims 2 and 4): torchvision's resnet18, mobilenet_v2 and
efficientnet_b0, a VisionTransformer and torch.nn.TransformerEncoder, trained by xtrain from the ONNX
file torch.onnx exports beside PyTorch's own training loop of the same module.

    /usr/bin/python3 bench/vision_vs_torch.py [--models resnet18,...] [--repeats 3]

Two figures per model, each beside PyTorch's from the same run:
- training samples/s. xtrain: the training time it reports itself for --steps S and --steps 2S, figure
  S*B / (T(2S) - T(S)) (start-up and the first step's preparation cancel; as bench/models_vs_torch.py).
  PyTorch: S timed steps after 2 warm-up steps.
- start-up: the wall time from starting a process to the end of its first training step, the process's
  exit included. xtrain: `xtrain --model M.onnx --data M.h5 --steps 1` (reading the model and data,
  import, lowering, oneDNN's primitives, one step). PyTorch: a python3 process that imports torch and
  torchvision, builds the module and runs one step.

Both sides: the same module and initial weights (the export's initializers), the same synthetic data,
SGD lr 0.01 momentum 0.9, the loss (cross-entropy) inside the module, the machine's default thread
counts (neither side gets OMP_NUM_THREADS; OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from the
environment, since they force older OpenBLAS kernels). Runs alternate xtrain / PyTorch, --repeats times;
medians. efficientnet_b0 is built without stochastic depth on both sides (PyTorch 1.13's exporter cannot
write its Bernoulli in training mode; its dropout stays). Sizes: the image models at torchvision's 224x224 with 1000 classes; a VisionTransformer of
ViT-S/16's shape (12 layers, 6 heads, width 384; ViT-B/16 does not fit one simulated IPU); the encoder as PyTorch's documentation shows it (d_model 512, 8 heads, 6 layers), sequences
of 128. Refuses to report when PyTorch runs on the reference BLAS (bench/models_vs_torch.py's check).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from models_vs_torch import check_blas, loop_rate  # noqa: E402

LR, MOMENTUM = 0.01, 0.9

# name: (batch, timed steps S, the module's input shape after the batch dimension)
MODELS = {
    "resnet18": (8, 6, (3, 224, 224)),
    "mobilenet_v2": (8, 6, (3, 224, 224)),
    "efficientnet_b0": (4, 6, (3, 224, 224)),  # batch 8 needs more than one IPU's 897 MiB
    # ViT-S/16 (DeiT-S's shape): ViT-B/16's weights, optimizer state and activations need 1.5 GiB,
    # more than one simulated IPU's 897 MiB
    "vit_s_16": (2, 4, (3, 224, 224)),
    "transformer_encoder": (8, 6, (128, 512)),
}

# Builds the module with its loss; shared by this process and the PyTorch start-up process (which
# runs it from its source text, so that its import of torch and torchvision is timed).
BUILD = r'''
import torch, torchvision
class WithLoss(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net
    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.net(x), y)
class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=6)
        self.head = torch.nn.Linear(512, 1000)
    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=1))
def build(name):
    torch.manual_seed(0)
    if name == "transformer_encoder":
        return WithLoss(Encoder())
    if name == "vit_s_16":
        return WithLoss(torchvision.models.VisionTransformer(
            image_size=224, patch_size=16, num_layers=12, num_heads=6, hidden_dim=384, mlp_dim=1536))
    if name == "efficientnet_b0":
        # PyTorch 1.13's exporter cannot write StochasticDepth's Bernoulli in training mode.
        return WithLoss(torchvision.models.efficientnet_b0(stochastic_depth_prob=0.0))
    return WithLoss(getattr(torchvision.models, name)())
'''

STARTUP = BUILD + r'''
import sys, numpy as np
name, batch = sys.argv[1], int(sys.argv[2])
data = np.load(sys.argv[3])
model = build(name)
model.train()
opt = torch.optim.SGD(model.parameters(), lr=%r, momentum=%r)
opt.zero_grad()
loss = model(torch.from_numpy(data["x"][:batch]), torch.from_numpy(data["y"][:batch]))
loss.backward()
opt.step()
print("loss=%%f" %% float(loss))
''' % (LR, MOMENTUM)

namespace = {}
exec(BUILD, namespace)  # noqa: S102 - our own text above


def clean_env():
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
              "XTRAIN_PROFILE_OPS"):
        env.pop(k, None)
    return env


def make_data(name, batch, steps):
    rng = np.random.default_rng(0)
    n = batch * steps
    x = rng.standard_normal(size=(n,) + MODELS[name][2]).astype(np.float32)
    y = rng.integers(0, 1000, size=n).astype(np.int64)
    return x, y


def export(name, batch, path, x, y):
    import onnx
    from onnx import numpy_helper
    model = namespace["build"](name)
    model.train()
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    args = (torch.from_numpy(x[:batch]), torch.from_numpy(y[:batch]))
    torch.onnx.export(model, args, path, input_names=["x", "y"], output_names=["loss"],
                      opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    # Exporting runs the module once (BatchNorm's running statistics move): keep the weights before.
    m = onnx.load(path)
    for init in m.graph.initializer:
        if init.name in before:
            init.CopyFrom(numpy_helper.from_array(before[init.name].numpy(), init.name))
    onnx.save(m, path)
    model.load_state_dict(before)
    return model


def write_h5(path, x, y):
    import h5py
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=x)
        f.create_dataset("y", data=y)


def xtrain_cmd(a, onnx_path, h5, batch, steps):
    return [a.xtrain, "--model", onnx_path, "--data", h5, "--loss", "loss", "--optimizer", "sgd",
            "--lr", str(LR), "--momentum", str(MOMENTUM), "--micro-batch-size", str(batch),
            "--steps", str(steps)]


def xtrain_train_seconds(a, onnx_path, h5, batch, steps):
    cmd = xtrain_cmd(a, onnx_path, h5, batch, steps)
    r = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), timeout=3600)
    out = r.stdout + r.stderr
    m = re.search(r"trained \d+ steps \((\d+) samples\) in [0-9.e+-]+ s, ([0-9.e+-]+) samples/s", out)
    if r.returncode != 0 or not m:
        sys.exit("xtrain failed: " + " ".join(cmd) + "\n" + out[-3000:])
    return int(m.group(1)) / float(m.group(2))


def wall_seconds(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), timeout=3600)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(" ".join(cmd) + " failed:\n" + (r.stdout + r.stderr)[-3000:])
    return seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=0, help="timed steps S (default: per model)")
    p.add_argument("--xtrain", default=os.path.join(ROOT, "build", "bin", "xtrain"))
    a = p.parse_args()
    names = a.models.split(",")
    for name in names:
        if name not in MODELS:
            p.error(f"unknown model '{name}'; expected some of: {', '.join(MODELS)}")
    if a.repeats < 1 or a.steps < 0:
        p.error("--repeats must be at least 1 and --steps at least 0")
    if not os.access(a.xtrain, os.X_OK):
        p.error(f"{a.xtrain} is not an executable (build xtrain first)")
    print(check_blas(), file=sys.stderr)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        os.environ.pop(k, None)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            batch, default_steps, _ = MODELS[name]
            steps = a.steps or default_steps
            x, y = make_data(name, batch, 2 * steps + 2)
            onnx_path, h5, npz = (os.path.join(tmp, name + ext) for ext in (".onnx", ".h5", ".npz"))
            model = export(name, batch, onnx_path, x, y)
            write_h5(h5, x, y)
            np.savez(npz, x=x[:batch], y=y[:batch])
            xs, ts, xstart, tstart = [], [], [], []
            for _ in range(a.repeats):
                t1 = xtrain_train_seconds(a, onnx_path, h5, batch, steps)
                t2 = xtrain_train_seconds(a, onnx_path, h5, batch, 2 * steps)
                xs.append(steps * batch / max(t2 - t1, 1e-9))
                ts.append(loop_rate(namespace["build"](name), [x, y], batch, steps, warmup=2,
                                    lr=LR))
                xstart.append(wall_seconds(xtrain_cmd(a, onnx_path, h5, batch, 1)))
                tstart.append(wall_seconds([sys.executable, "-c", STARTUP, name, str(batch), npz]))
            row = (name, batch, statistics.median(xs), statistics.median(ts),
                   statistics.median(xstart), statistics.median(tstart))
            rows.append(row)
            print(f"{name}: xtrain {[round(v, 2) for v in xs]} torch {[round(v, 2) for v in ts]} "
                  f"start-up xtrain {[round(v, 2) for v in xstart]} torch "
                  f"{[round(v, 2) for v in tstart]}", file=sys.stderr)
            del model
    print(f"medians of {a.repeats} runs; load average before the last model: "
          f"{os.getloadavg()[0]:.1f}")
    print("| model | batch | xtrain samples/s | PyTorch samples/s | ratio | xtrain start-up s "
          "| PyTorch start-up s | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, batch, x, t, xs_, ts_ in rows:
        print(f"| {name} | {batch} | {x:.2f} | {t:.2f} | {x / t:.2f}x | {xs_:.2f} | {ts_:.2f} | "
              f"{xs_ / ts_:.2f}x |")


if __name__ == "__main__":
    main()
