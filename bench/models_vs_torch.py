#!/usr/bin/python3
"""Training samples/s of the real-sized models of issue 18 (bench/models/make_models.py) in xtrain
beside PyTorch's, the GFLOP/s each reaches and its share of the machine's sgemm peak, and where
xtrain's step goes.

Run with /usr/bin/python3 (Debian's, with torch/onnx/h5py) after building xtrain and xbench:

    /usr/bin/python3 bench/models_vs_torch.py                 # every model, about 10 minutes
    /usr/bin/python3 bench/models_vs_torch.py --model cnn     # one model

Method (as bench/zoo_vs_torch.py): both sides train the same export of the same PyTorch module on the
same synthetic data, SGD lr 0.05 momentum 0.9, 2 threads each (OMP_NUM_THREADS=2 for xtrain,
torch.set_num_threads(2)). PyTorch: samples/s over S timed steps after 3 warm-up steps. xtrain: the
training time it reports itself ("trained N steps ... in T s") for --steps S and --steps 2S, figure =
S*B / (T(2S) - T(S)), so start-up, import and the first step's preparation cancel; an untimed run
first fills the compilation cache. Runs alternate xtrain / PyTorch, --repeats times; medians.

GFLOP/s = 3 x the forward pass's Linear/Conv/attention-matmul FLOPs (make_models.py's flops(); the
backward pass counted as 2x the forward) x steps/s. Peak = `xbench matmul --size 1024` (oneDNN's sgemm,
xtrain's own GEMM kernel, OMP_NUM_THREADS=2), the larger of two runs in the same run (before and after
the models); PyTorch's 1024^3 sgemm at 2 threads is printed beside it.

Profile: one more xtrain run of S steps with XTRAIN_PROFILE_OPS=1 (every op timed; the run itself is
slower and not used for the rates): kernel time by phase and op type, and the top 10 ops, per step.

Both sides inherit OMP_WAIT_POLICY (GNU OpenMP, which oneDNN and Debian's PyTorch both use): on a shared,
busy machine run with OMP_WAIT_POLICY=passive, or spinning threads that lose their core stall every
parallel region of either side (docs/performance.md, Threads).

Refuses to report (exit 1) when PyTorch runs on the reference BLAS ($XTRAIN_BENCH_PEERS/check_torch_blas.py,
default /work/shared/bench).
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
sys.path.insert(0, os.path.join(HERE, "models"))

import torch  # noqa: E402

import make_models  # noqa: E402

LR, MOMENTUM = 0.05, 0.9
THREADS = 2
# Timed steps S per model (xtrain runs S and 2S): a few seconds of training each.
DEFAULT_STEPS = {"mlp": 200, "cnn": 30, "gpt": 10, "bert": 30}


def check_blas():
    # The peers' folder, as for bench/run-*-vs-peers.sh (docs/performance.md, Peers).
    peers = os.environ.get("XTRAIN_BENCH_PEERS", "/work/shared/bench")
    script = os.path.join(peers, "check_torch_blas.py")
    if not os.path.exists(script):
        sys.exit(f"models_vs_torch.py: cannot check PyTorch's BLAS: {script} does not exist "
                 "(set XTRAIN_BENCH_PEERS to the folder holding check_torch_blas.py)")
    r = subprocess.run([sys.executable, script], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("PyTorch runs on the reference BLAS; install libopenblas0-pthread:\n" + r.stdout +
                 r.stderr)
    return r.stdout.strip()


def child_env(profile=False):
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS))
    env.pop("XTRAIN_PROFILE_OPS", None)
    if profile:
        env["XTRAIN_PROFILE_OPS"] = "1"
    return env


def xtrain_run(xtrain, onnx, h5, batch, steps, profile=False, env=None):
    """xtrain's own training time for `steps` steps (and its output); env: child_env's by default."""
    cmd = [xtrain, "--model", onnx, "--data", h5, "--loss", "loss", "--optimizer", "sgd", "--lr",
           str(LR), "--momentum", str(MOMENTUM), "--micro-batch-size", str(batch), "--steps",
           str(steps)]
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=child_env(profile) if env is None else env, timeout=1800)
    out = r.stdout + r.stderr
    m = re.search(r"trained \d+ steps \((\d+) samples\) in [0-9.e+-]+ s, ([0-9.e+-]+) samples/s", out)
    if r.returncode != 0 or not m:
        sys.exit("xtrain failed: " + " ".join(cmd) + "\n" + out[-3000:])
    # samples / rate: the rate is printed with more significant digits than the time
    return int(m.group(1)) / float(m.group(2)), out


def loop_rate(model, arrays, batch, steps, warmup=3, lr=LR):
    """PyTorch's own training loop of `model` (the loss inside forward) on numpy `arrays` (forward's
    arguments, samples first), SGD with momentum: samples/s over `steps` steps after `warmup`."""
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=MOMENTUM)
    tensors = [torch.from_numpy(a) for a in arrays]
    n = tensors[0].shape[0]

    def step(k):
        lo = (k * batch) % (n - batch + 1)
        opt.zero_grad()
        loss = model(*[t[lo:lo + batch] for t in tensors])
        loss.backward()
        opt.step()
        return loss

    for k in range(warmup):
        step(k)
    t0 = time.perf_counter()
    for k in range(steps):
        loss = step(k)
    float(loss)
    return steps * batch / (time.perf_counter() - t0)


def torch_rate(name, data, batch, steps, warmup=3):
    return loop_rate(make_models.build(name), [a for _, a in data], batch, steps, warmup)


def sgemm_peak(xbench):
    r = subprocess.run([xbench, "matmul", "--size", "1024"], capture_output=True, text=True,
                       env=child_env(), timeout=600)
    m = re.search(r"xtrain-sgemm n=\d+ gflops=([0-9.e+-]+)", r.stdout)
    if r.returncode != 0 or not m:
        sys.exit(f"xbench matmul failed ({xbench}):\n" + r.stdout[-2000:] + r.stderr[-2000:])
    return float(m.group(1))


def torch_sgemm(n=1024, reps=10):
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        torch.mm(a, b)
        times.append(time.perf_counter() - t0)
    return 2 * n ** 3 / statistics.median(times) / 1e9


def profile_summary(out, steps, top=10):
    """The lines of xtrain's XTRAIN_PROFILE_OPS report, times divided by the steps."""
    at = out.find("execution profile")
    if at < 0:
        return ["  (xtrain printed no profile)"]
    lines = out[at:].splitlines()
    m = re.search(r"([0-9.]+) ms in kernels", lines[0])
    lines_out = [f"  {float(m.group(1)) / steps:.2f} ms per step in kernels (profiled run)"]
    ops = []
    for line in lines[1:]:
        if line.startswith("  by "):
            lines_out.append("  " + line.strip())
        elif line.startswith("  ") and line.rstrip().endswith(":"):
            continue  # the heading of the op list
        else:
            o = re.match(r"\s+([0-9.]+) ms\s+([0-9.]+)%\s+(.*)", line)
            if not o:
                break
            ops.append(f"    {float(o.group(1)) / steps:8.3f} ms {float(o.group(2)):5.1f}%  "
                       f"{o.group(3)}")
    lines_out.append(f"  top {min(top, len(ops))} ops (ms per step, share of kernel time):")
    return lines_out + ops[:top]


def main():
    names = list(make_models.MODELS)
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", action="append",
                   help=f"a model to run (repeatable; default all: {','.join(names)})")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=None,
                   help="timed steps S (default per model: " +
                   ", ".join(f"{k} {v}" for k, v in DEFAULT_STEPS.items()) + ")")
    p.add_argument("--no-profile", action="store_true", help="skip the XTRAIN_PROFILE_OPS run")
    p.add_argument("--xtrain", default=os.path.join(ROOT, "build", "bin", "xtrain"))
    p.add_argument("--xbench", default=os.path.join(ROOT, "build", "bin", "xbench"))
    a = p.parse_args()
    models = a.model or names
    for name in models:
        if name not in make_models.MODELS:
            p.error(f"unknown model '{name}'; expected one of {','.join(names)}")
    if a.repeats < 1 or (a.steps is not None and a.steps < 1):
        p.error("--repeats and --steps must be at least 1")
    for tool in (a.xtrain, a.xbench):
        if not os.access(tool, os.X_OK):
            p.error(f"{tool} is not an executable (build xtrain_tool and xbench first)")
    print(check_blas(), file=sys.stderr)
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"warning: load average {load:.1f} before the run; figures from a busy machine are "
              "low and noisy", file=sys.stderr)
    torch.set_num_threads(THREADS)

    # The peak is the best the machine gives: the largest of the runs before and after the models.
    peaks = [sgemm_peak(a.xbench)]
    tpeak = torch_sgemm()
    print(f"sgemm 1024^3 at {THREADS} threads: oneDNN (xbench matmul) {peaks[0]:.0f} GFLOP/s, "
          f"PyTorch {tpeak:.0f} GFLOP/s", file=sys.stderr)
    rows, profiles = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            batch = make_models.MODELS[name][2]
            steps = a.steps or DEFAULT_STEPS[name]
            onnx, h5 = make_models.make(name, tmp)
            data = make_models.make_data(name)
            xtrain_run(a.xtrain, onnx, h5, batch, 1)  # untimed: fills the compilation cache
            xs, ts = [], []
            for _ in range(a.repeats):
                t1, _ = xtrain_run(a.xtrain, onnx, h5, batch, steps)
                t2, _ = xtrain_run(a.xtrain, onnx, h5, batch, 2 * steps)
                if t2 <= t1:  # a busy machine: S more steps cannot take no time
                    sys.exit(f"{name}: xtrain took {t2:.3f} s for {2 * steps} steps but {t1:.3f} s "
                             f"for {steps}; the machine is too busy (or raise --steps)")
                xs.append(steps * batch / (t2 - t1))
                print(f"{name}: xtrain {steps} steps {t1:.3f} s, {2 * steps} steps {t2:.3f} s",
                      file=sys.stderr)
                ts.append(torch_rate(name, data, batch, steps))
            x, t = statistics.median(xs), statistics.median(ts)
            flops = 3 * make_models.MODELS[name][0].flops(1)  # per sample, one training step
            rows.append((name, batch, x, t, flops))
            print(f"{name}: xtrain {[round(v, 1) for v in xs]} torch {[round(v, 1) for v in ts]}",
                  file=sys.stderr)
            if not a.no_profile:
                _, out = xtrain_run(a.xtrain, onnx, h5, batch, steps, profile=True)
                profiles.append((name, steps, profile_summary(out, steps)))
    peaks.append(sgemm_peak(a.xbench))
    peak = max(peaks)
    policy = os.environ.get("OMP_WAIT_POLICY", "default")
    print(f"{THREADS} threads each (OMP_WAIT_POLICY {policy}), SGD momentum, {a.repeats} repeats, "
          f"medians; load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; sgemm peak "
          f"(oneDNN, xbench matmul --size 1024) {peak:.0f} GFLOP/s, PyTorch's sgemm {tpeak:.0f}")
    print("| model | batch | xtrain samples/s | PyTorch samples/s | xtrain/PyTorch | "
          "xtrain GFLOP/s | % of peak | PyTorch GFLOP/s | % of peak |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, batch, x, t, flops in rows:
        gx, gt = x * flops / 1e9, t * flops / 1e9
        print(f"| {name} | {batch} | {x:.1f} | {t:.1f} | {x / t:.2f} | {gx:.0f} | "
              f"{100 * gx / peak:.0f}% | {gt:.0f} | {100 * gt / peak:.0f}% |")
    for name, steps, lines in profiles:
        print(f"\n{name}: where xtrain's step goes (XTRAIN_PROFILE_OPS=1, {steps} steps)")
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
