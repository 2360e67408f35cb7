#!/usr/bin/python3
"""Training samples/s of the zoo models (tests/zoo/make_zoo.py) in xtrain beside PyTorch's.

Run with /usr/bin/python3 (Debian's, with torch/onnx/h5py). Both sides: the same model export
(tests/data/zoo/<m>/<m>_op17_dyn.onnx), the same synthetic data, SGD lr 0.05 momentum 0.9, 2 threads.

PyTorch: samples/s over --steps timed steps after 3 warm-up steps.
xtrain: the training time xtrain itself reports ("trained N steps ... in T s") for `--steps S` and
`--steps 2S` (same data, same flags); figure = S*B / (T(2S) - T(S)), so process start-up and model
import are excluded and the first step's preparation cancels;
one untimed xtrain run per model first fills the compilation cache both timed runs then reuse.
Runs alternate xtrain / PyTorch, --repeats times; the table gives medians and xtrain/PyTorch.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "zoo"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import make_zoo  # noqa: E402

# The BLAS check and the timed xtrain run are models_vs_torch.py's.
sys.path.insert(0, HERE)
from models_vs_torch import check_blas, loop_rate, xtrain_run  # noqa: E402

LR, MOMENTUM = 0.05, 0.9


def make_data(gen, batch, steps):
    make_zoo.BATCH = batch
    make_zoo.STEPS = steps
    return gen(np.random.default_rng(0))


def torch_rate(cls, data, batch, steps, warmup=3):
    torch.manual_seed(0)
    return loop_rate(cls(), [a for _, a in data], batch, steps, warmup, lr=LR)


def xtrain_time(xtrain, model, h5, batch, steps):
    return xtrain_run(xtrain, model, h5, batch, steps, env=dict(os.environ))[0]


def main():
    names = [m[0] for m in make_zoo.MODELS]
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(names))
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--xtrain", default=os.path.join(ROOT, "build", "bin", "xtrain"))
    a = p.parse_args()
    print(check_blas(), file=sys.stderr)
    torch.set_num_threads(2)
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    import h5py  # noqa: F401

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            entry = [m for m in make_zoo.MODELS if m[0] == name]
            if not entry:
                sys.exit(f"unknown model {name}; known: {','.join(names)}")
            _, cls, gen, _ = entry[0]
            data = make_data(gen, a.batch, 2 * a.steps)
            h5 = os.path.join(tmp, name + ".h5")
            make_zoo.write_h5(h5, data)
            onnx = os.path.join(ROOT, "tests", "data", "zoo", name, f"{name}_op17_dyn.onnx")
            # untimed: fills xtrain's compilation cache so that both timed runs reuse it
            xtrain_time(a.xtrain, onnx, h5, a.batch, 1)
            xs, ts = [], []
            for _ in range(a.repeats):
                t1 = xtrain_time(a.xtrain, onnx, h5, a.batch, a.steps)
                t2 = xtrain_time(a.xtrain, onnx, h5, a.batch, 2 * a.steps)
                xs.append(a.steps * a.batch / max(t2 - t1, 1e-9))
                ts.append(torch_rate(cls, data, a.batch, a.steps))
            x, t = statistics.median(xs), statistics.median(ts)
            rows.append((name, x, t))
            print(f"{name}: xtrain {[round(v) for v in xs]} torch {[round(v) for v in ts]}",
                  file=sys.stderr)
    print(f"batch {a.batch}, {a.steps} timed steps, {a.repeats} repeats, medians (samples/s)")
    print("| model | xtrain | PyTorch | xtrain/PyTorch |")
    print("| --- | ---: | ---: | ---: |")
    for name, x, t in rows:
        print(f"| {name} | {x:.0f} | {t:.0f} | {x / t:.2f} |")


if __name__ == "__main__":
    main()
