"""The overhead of xtrain.torch's wrapper (docs/performance.md, "The PopTorch wrapper").

For a small model (the tests' 6-8-3 MLP, micro-batch 8) and the reference MLP (784-1024-1024-10,
micro-batch 64), measures the milliseconds of one training call three ways, interleaved and
repeated, and prints the medians:
- wrapper: ``out, loss = trainingModel(model)(x, y)`` (feeds, the step, the outputs as tensors;
  the trained weights reach the module lazily, when it is read, so calls in a row copy none);
- session: the same session's ``run`` with a ready PyStepIO (what a PopART-style program pays);
- pytorch: PyTorch's own step (forward, backward, ``optimizer.step()``).
All train with SGD (lr 0.01, momentum 0.9) on one simulated IPU, after warm-up calls.

Usage: PYTHONPATH=build/python OMP_NUM_THREADS=1 python3 bench/torch_wrapper_bench.py
       [--calls 50] [--repeats 5]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import xtrain as popart
import xtrain.torch as poptorch


class Mlp(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))

    def forward(self, x, y):
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        out = self.layers[-1](x)
        return out, F.cross_entropy(out, y)


def sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def torch_on_openblas():
    """Whether PyTorch's matrix products run on OpenBLAS (Debian's reference BLAS makes them 16-48x
    slower, docs/performance.md "Peers"): its library is mapped once a product has run."""
    torch.ones(64, 64) @ torch.ones(64, 64)
    with open("/proc/self/maps") as maps:
        return "openblas" in maps.read()


def timed(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) * 1000.0 / calls


def measure(sizes, batch, calls, repeats):
    torch.manual_seed(0)
    x, y = torch.randn(batch, sizes[0]), torch.randint(0, sizes[-1], (batch,))
    model = Mlp(sizes)
    wrapped = poptorch.trainingModel(model, optimizer=sgd(model))
    wrapped(x, y)
    session = wrapped._session  # the wrapper's own session, driven directly
    stepio = popart.PyStepIO({"x": x.numpy(), "y": y.numpy()}, session.initAnchorArrays())
    reference = Mlp(sizes)
    ref_opt = sgd(reference)

    def pytorch_step():
        ref_opt.zero_grad()
        reference(x, y)[1].backward()
        ref_opt.step()

    runs = {"wrapper": lambda: wrapped(x, y), "session": lambda: session.run(stepio),
            "pytorch": pytorch_step}
    for fn in runs.values():
        timed(fn, 3)  # warm-up
    figures = {name: [] for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            figures[name].append(timed(fn, calls))
    return {name: statistics.median(values) for name, values in figures.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("XTRAIN_IPU_LOCK_DIR", tempfile.mkdtemp(prefix="torch-wrapper-bench-"))
    openblas = torch_on_openblas()
    print("model                      wrapper ms  session ms  overhead ms  pytorch ms")
    for name, sizes, batch in (("mlp 6-8-3, batch 8", [6, 8, 3], 8),
                               ("mlp 784-1024-1024-10, b 64", [784, 1024, 1024, 10], 64)):
        f = measure(sizes, batch, args.calls, args.repeats)
        print("%-26s %10.3f  %10.3f  %11.3f  %10s" % (
            name, f["wrapper"], f["session"], f["wrapper"] - f["session"],
            "%.3f" % f["pytorch"] if openblas else "n/a"))
    if not openblas:
        print("pytorch: not shown, PyTorch runs on the reference BLAS here (install "
              "libopenblas0-pthread)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
