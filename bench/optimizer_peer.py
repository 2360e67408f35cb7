#!/usr/bin/env python3
"""The peer of `xbench optimizer`: one torch.optim step on a tensor of N float32 elements, on one
thread, median of R steps. Usage: optimizer_peer.py NAME [ELEMENTS] [REPS]
(NAME: sgd adam adamw adamax adagrad rmsprop centered-rmsprop adadelta; lamb has no torch.optim peer)."""
import statistics
import sys
import time

import torch

name = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 16 << 20
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 20
torch.set_num_threads(1)
torch.manual_seed(7)
p = torch.nn.Parameter(torch.randn(n))
p.grad = torch.randn(n) * 0.01
# The same hyperparameters as bench/optimizer_bench.cpp; foreach=False is 1.13's default on CPU.
make = {
    "sgd": lambda: torch.optim.SGD([p], lr=0.01, momentum=0.9),
    "adam": lambda: torch.optim.Adam([p], lr=0.001, weight_decay=0.01, eps=1e-6),
    "adamw": lambda: torch.optim.AdamW([p], lr=0.001, weight_decay=0.01, eps=1e-6),
    "adamax": lambda: torch.optim.Adamax([p], lr=0.001, weight_decay=0.01, eps=1e-6),
    "adagrad": lambda: torch.optim.Adagrad([p], lr=0.01, weight_decay=0.01, eps=1e-6),
    "rmsprop": lambda: torch.optim.RMSprop([p], lr=0.01, alpha=0.99, weight_decay=0.01, eps=1e-6),
    "centered-rmsprop": lambda: torch.optim.RMSprop(
        [p], lr=0.01, alpha=0.99, weight_decay=0.01, eps=1e-6, centered=True),
    "adadelta": lambda: torch.optim.Adadelta([p], lr=0.01, rho=0.99, weight_decay=0.01, eps=1e-6),
}
if name not in make:
    sys.exit(f"optimizer_peer.py: no torch.optim peer for '{name}'")
opt = make[name]()
with torch.no_grad():
    opt.step()  # warm up: state allocated
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        opt.step()
        times.append(time.perf_counter() - t0)
median = statistics.median(times)
print(f"torch-optimizer optimizer={name} elements={n} reps={reps} torch={torch.__version__} "
      f"ms_per_update={median * 1e3:.3f} ns_per_element={median * 1e9 / n:.3f}")
