#!/usr/bin/python3
"""Training speed on a shared machine (issue 32, aim 1): the reference MLP (`xbench mlp`) and PyTorch's
plain training loop of the same MLP, each quiet, on one core, beside a CPU-bound neighbour at the same
priority and at nice 10, and as two jobs at once; xtrain also with its adaptive kernel threads off
(XTRAIN_ADAPTIVE_THREADS=0, what it did before).

    /usr/bin/python3 bench/contention_bench.py [--steps 200] [--repeats 3] [--no-torch]
    /usr/bin/python3 bench/contention_bench.py --model cnn [--steps 40]     # a real-sized model
    /usr/bin/python3 bench/contention_bench.py --sides xtrain,baseline --baseline OLD_BUILD  # before/after

--model cnn|gpt|bert runs one of bench/models/make_models.py's real-sized models instead (made once, in
a temporary folder): xtrain trains it from its ONNX export with the `xtrain` tool (SGD lr 0.05
momentum 0.9; the figure is the samples/s it prints, the first step included), PyTorch trains the same
module on the same data in a python3 process of its own (bench/models_vs_torch.py's loop: the figure is
over the timed steps after 3 warm-up steps).

Every run is a whole process; conditions and sides alternate, --repeats times; the figure is the
median samples/s. The neighbour is a busy loop (`while True: pass` in python3) started before the run
and killed after it. Neither side gets OMP_NUM_THREADS or OMP_WAIT_POLICY: the defaults are what is
measured. "one core" pins the run to CPU 0 (taskset -c 0): the figure the neighbour conditions are
compared with (a neighbour holds one of the two cores). The PyTorch side: 784-1024-1024-10 ReLU,
softmax cross-entropy, SGD lr 0.01 momentum 0.9, batch 64, synthetic data, samples/s over the timed
steps after 5 warm-up steps, torch.set_num_threads at its default (the usable cores).
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

TORCH_MLP = r"""
import sys, time, torch
steps = int(sys.argv[1])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                            torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
loss_fn = torch.nn.CrossEntropyLoss()
def step():
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
for _ in range(5):
    step()
start = time.perf_counter()
for _ in range(steps):
    step()
print("samples_per_s=%f" % (steps * 64 / (time.perf_counter() - start)))
"""

CONDITIONS = ["quiet", "one core", "neighbour", "neighbour nice 10", "two jobs"]


def clean_env(extra=None):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OPENBLAS_CORETYPE",
              "OPENBLAS_L2_SIZE", "XTRAIN_ADAPTIVE_THREADS"):
        env.pop(k, None)
    env.update(extra or {})
    return env


# PyTorch's side of a real-sized model: bench/models_vs_torch.py's loop, in a process of its own.
TORCH_MODEL = r"""
import sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/models"]
import make_models, models_vs_torch
name, steps = sys.argv[2], int(sys.argv[3])
rate = models_vs_torch.torch_rate(name, make_models.make_data(name), make_models.MODELS[name][2], steps)
print("samples_per_s=%f" % rate)
"""


def command(side, args):
    """side: "torch", "xtrain" or "baseline" (the tools of --baseline's build)."""
    bin_dir = os.path.join(args.baseline, "bin") if side == "baseline" else None
    xbench = os.path.join(bin_dir, "xbench") if bin_dir else args.xbench
    xtrain = os.path.join(bin_dir, "xtrain") if bin_dir else args.xtrain
    if args.model == "mlp":
        if side == "torch":
            return [sys.executable, "-c", TORCH_MLP, str(args.steps)]
        return [xbench, "mlp", "--steps", str(args.steps)]
    if side == "torch":
        return [sys.executable, "-c", TORCH_MODEL, HERE, args.model, str(args.steps)]
    onnx_path, h5_path, batch = args.files
    return [xtrain, "--model", onnx_path, "--data", h5_path, "--loss", "loss", "--optimizer",
            "sgd", "--lr", "0.05", "--momentum", "0.9", "--micro-batch-size", str(batch),
            "--steps", str(args.steps)]


def rate(out):
    m = re.search(r"samples_per_s=([0-9.]+)", out) or re.search(
        r"xtrain: trained \d+ steps \(\d+ samples\) in [0-9.e+-]+ s, ([0-9.]+) samples/s", out)
    if not m:
        sys.exit("no samples/s in the output:\n" + out[-2000:])
    return float(m.group(1))


def run(side, condition, args):
    """Samples/s of one run (for "two jobs", each job's, as a list)."""
    env = clean_env({"XTRAIN_ADAPTIVE_THREADS": "0"} if side == "xtrain (adaptive off)" else None)
    cmd = command(side if side in ("torch", "baseline") else "xtrain", args)
    neighbour = None
    if condition.startswith("neighbour"):
        nice = ["nice", "-n", "10"] if condition.endswith("nice 10") else []
        neighbour = subprocess.Popen(nice + ["python3", "-c", "while True: pass"])
        time.sleep(0.5)
    try:
        if condition == "one core":
            cmd = ["taskset", "-c", "0"] + cmd
        if condition == "two jobs":
            procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True) for _ in range(2)]
            return [rate(p.communicate()[0]) for p in procs]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        return [rate(r.stdout)]
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn", "gpt", "bert"],
                   help="mlp: xbench's reference MLP; the others: bench/models/make_models.py's")
    p.add_argument("--xbench", default=os.path.join(ROOT, "build", "bin", "xbench"))
    p.add_argument("--xtrain", default=os.path.join(ROOT, "build", "bin", "xtrain"))
    p.add_argument("--no-torch", action="store_true", help="xtrain only")
    p.add_argument("--sides", default="xtrain,adaptive off,torch",
                   help="comma-separated subset of: xtrain, adaptive off, torch, baseline")
    p.add_argument("--baseline", help="a build folder (its bin/xtrain, bin/xbench) measured as "
                   "the side 'baseline', for before/after figures of a change")
    p.add_argument("--conditions", default=",".join(CONDITIONS),
                   help="comma-separated subset of: " + ", ".join(CONDITIONS))
    args = p.parse_args()
    if args.steps < 1 or args.repeats < 1:
        p.error("--steps and --repeats must be at least 1")
    tool = args.xbench if args.model == "mlp" else args.xtrain
    if not os.access(tool, os.X_OK):
        p.error(f"{tool} is not an executable (build it first)")
    conditions = [c.strip() for c in args.conditions.split(",")]
    for c in conditions:
        if c not in CONDITIONS:
            p.error(f"unknown condition '{c}'; expected one of: {', '.join(CONDITIONS)}")
    names = {"xtrain": "xtrain", "adaptive off": "xtrain (adaptive off)", "torch": "torch",
             "baseline": "baseline"}
    sides = []
    for side in (x.strip() for x in args.sides.split(",")):
        if side not in names:
            p.error(f"unknown side '{side}'; expected some of: {', '.join(names)}")
        if side == "torch" and args.no_torch:
            continue
        sides.append(names[side])
    if "baseline" in sides and not args.baseline:
        p.error("the side 'baseline' needs --baseline BUILD_DIR")
    figures = {(s, c): [] for s in sides for c in conditions}
    with tempfile.TemporaryDirectory() as tmp:
        if args.model != "mlp":
            sys.path[:0] = [os.path.join(HERE, "models")]
            import make_models
            onnx_path, h5_path = make_models.make(args.model, tmp)
            args.files = (onnx_path, h5_path, make_models.MODELS[args.model][2])
        for _ in range(args.repeats):
            for c in conditions:
                for s in sides:
                    figures[(s, c)].extend(run(s, c, args))
    print(f"{args.model}: samples/s, medians of {args.repeats} runs of {args.steps} steps "
          f"(two jobs: each job's); load before: {os.getloadavg()[0]:.1f}")
    print("| side | " + " | ".join(conditions) + " |")
    print("| --- |" + " ---: |" * len(conditions))
    for s in sides:
        cells = []
        one_core = statistics.median(figures[(s, "one core")]) if "one core" in conditions else None
        for c in conditions:
            m = statistics.median(figures[(s, c)])
            share = f" ({m / one_core:.0%} of one core)" if one_core and c not in ("quiet",
                                                                                 "one core") else ""
            cells.append(f"{m:,.0f}{share}")
        print(f"| {s} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
