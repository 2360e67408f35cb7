"""Pipelined training speed against the same model unpipelined (docs/performance.md, Pipelining).

An MLP of 4 square layers split into 2 or 4 stages (one per simulated IPU) trains with gradient
accumulation: unpipelined (the IPUs in turn), pipelined with the stages in turn on one thread
(XTRAIN_PIPELINE_THREADS=0) and pipelined with each stage on its own thread. Prints the ms per step
of each, after a warm-up step, and the bound af / (af + stages - 1) x stages of the threaded
speed-up over unpipelined (the fill and flush cost stages - 1 cycles).

With --repeats N each configuration runs N times, interleaved, and the medians are printed (the
machines are shared and noisy). With --neighbour a CPU-bound process at the same priority (a busy
loop) runs beside the measurements, as another user's job would. The share of the pipelined step
spent copying tensors between stages (the stashes and restores) is read from a timeline trace of
one more pipelined run (the "pipeline stash" and "pipeline restore" spans, docs/trace.md).

The bound assumes the host runs `stages` threads at `stages` times one thread's throughput. Not every
host does (virtual CPUs that share a physical core's execution units, memory bandwidth): each repeat
also runs `stages` copies of the unpipelined step at once, one kernel thread each, and the host's
capacity (stages x one copy's time alone over their mean time together) gives a second bound, af /
(af + stages - 1) x capacity, that the host allows any pipeline of these stages.

The bound assumes stages of equal work. The first layer computes no gradient of its input (the data),
so with 4 equal layers the first stage would do 5 matmuls of work per micro-batch against the second's
6 and the second would set the pace (the bound would be 11/12 of the one printed). So the first layer
takes an input 1.5 x as wide as the hidden layers (--first-width), which balances the stages: with 2
stages each does 6 matmuls' worth (forward 1.5 + 1, backward 1.5 + 2 against forward 2, backward 4),
with 4 stages each 3.

Usage: PYTHONPATH=build/python python3 bench/pipeline_bench.py [--stages 2] [--af 16]
       [--hidden 1024] [--first-width 1536] [--batch 32] [--steps 5] [--repeats 3] [--neighbour]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def one(mode, args):
    """ms per step of `mode` ("unpipelined" or "pipelined") in this process."""
    import xtrain as popart
    b = popart.Builder(opsets={"ai.onnx": 13, "ai.graphcore": 1})
    rng = np.random.RandomState(0)
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [args.batch, args.first_width]), "x")
    labels = b.addInputTensor(popart.TensorInfo("INT32", [args.batch]), "labels")
    h = x
    layers = 4
    for layer in range(layers):
        rows = args.first_width if layer == 0 else args.hidden
        w = b.addInitializedInputTensor(
            (rng.randn(rows, args.hidden) * 0.02).astype(np.float32), "W%d" % layer)
        stage = layer * args.stages // layers
        with b.virtualGraph(stage), b.pipelineStage(stage):
            h = b.aiOnnx.relu([b.aiOnnx.matmul([h, w])])
            if layer == layers - 1:
                loss = b.aiOnnx.softmaxcrossentropyloss([h, labels], reduction="mean")[0]
    b.addOutputTensor(loss)
    opts = popart.SessionOptions()
    opts.virtualGraphMode = popart.VirtualGraphMode.Manual
    opts.enablePipelining = mode == "pipelined"
    opts.enableGradientAccumulation = True
    opts.accumulationFactor = args.af
    if args.trace:
        opts.engineOptions = {"trace.file": args.trace}
    s = popart.TrainingSession(
        fnModel=b.getModelProto(), dataFlow=popart.DataFlow(1, {}), loss=loss,
        optimizer=popart.ConstSGD(0.01), userOptions=opts,
        deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": args.stages}))
    s.prepareDevice()
    s.weightsFromHost()
    data = np.random.RandomState(1)
    io = popart.PyStepIO(
        {"x": data.randn(args.af, args.batch, args.first_width).astype(np.float32),
         "labels": data.randint(0, args.hidden, (args.af, args.batch)).astype(np.int32)}, {})
    s.run(io)  # warm-up
    start = time.perf_counter()
    for _ in range(args.steps):
        s.run(io)
    return (time.perf_counter() - start) / args.steps * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stages", type=int, default=2, choices=(2, 4))
    p.add_argument("--af", type=int, default=16)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--first-width", type=int, default=0,
                   help="the first layer's input width (default 1.5 x hidden, which balances the "
                   "stages)")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--neighbour", action="store_true",
                   help="run a busy loop at the same priority beside the measurements")
    p.add_argument("--one", choices=("unpipelined", "pipelined"), help=argparse.SUPPRESS)
    p.add_argument("--trace", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.first_width <= 0:
        args.first_width = args.hidden * 3 // 2
    if args.one:
        print("%.3f" % one(args.one, args))
        return
    if args.af < 2 * args.stages - 1:
        sys.exit("--af must be at least 2 x stages - 1 = %d" % (2 * args.stages - 1))
    if args.repeats < 1:
        sys.exit("--repeats must be at least 1")
    passed = [a for a in sys.argv[1:] if a not in ("--neighbour",)]
    neighbour = None
    if args.neighbour:
        neighbour = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        results, stash_share = measure(args, passed)
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    report(args, results, stash_share)


def step_ms(out):
    """The ms per step a `--one` run printed last."""
    return float(out.strip().splitlines()[-1])


def run_one(mode, threads, passed, extra=()):
    # Each configuration in a process of its own: XTRAIN_PIPELINE_THREADS is read at prepareDevice.
    env = dict(os.environ, XTRAIN_PIPELINE_THREADS=threads)
    out = subprocess.run([sys.executable, __file__, "--one", mode] + passed + list(extra),
                         env=env, check=True, capture_output=True, text=True).stdout
    return step_ms(out)


def host_capacity(args, passed):
    """How many stages' worth of work the host runs at once: `stages` copies of the unpipelined
    step on one kernel thread each, at the same time, against one copy alone (stages x its time over
    the copies' mean time). A host whose cores share execution units or memory bandwidth gives less
    than `stages`, and no pipeline can overlap its stages by more."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, __file__, "--one", "unpipelined"] + passed
    alone = step_ms(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)
    copies = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
              for _ in range(args.stages)]
    together = [step_ms(c.communicate()[0]) for c in copies]
    return args.stages * alone / statistics.mean(together)


def measure(args, passed):
    """Median ms per step of each configuration, and the stash/restore share of a pipelined step."""
    configurations = (("unpipelined", "unpipelined", "1"),
                      ("pipelined, stages in turn", "pipelined", "0"),
                      ("pipelined, a thread per stage", "pipelined", "1"))
    samples = {name: [] for name, _, _ in configurations}
    capacity = []
    for _ in range(args.repeats):
        for name, mode, threads in configurations:
            samples[name].append(run_one(mode, threads, passed))
        capacity.append(host_capacity(args, passed))
    results = {name: statistics.median(v) for name, v in samples.items()}
    results["host capacity"] = statistics.median(capacity)
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "pipeline.json")
        run_one("pipelined", "1", passed, ("--trace", trace))
        with open(trace, encoding="utf-8") as f:
            events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    spans = [e for e in events if e.get("ph") == "X"]
    copies = sum(e["dur"] for e in spans if e.get("name") in ("pipeline stash", "pipeline restore"))
    # The copies run on the stages' threads, at once: their share of the stages' working time.
    busy = sum(e["dur"] for e in spans if e.get("cat") == "op") + copies
    return results, copies / busy if busy else float("nan")


def report(args, results, stash_share):
    capacity = results.pop("host capacity")
    base = results["unpipelined"]
    fill = args.af / (args.af + args.stages - 1)
    bound = fill * args.stages
    print("%d stages, af %d, hidden %d, first layer's input %d, batch %d:" % (
        args.stages, args.af, args.hidden, args.first_width, args.batch))
    for name, ms in results.items():
        print("  %-32s %8.1f ms/step  %.2fx" % (name, ms, base / ms))
    threaded = base / results["pipelined, a thread per stage"]
    print("  bound af / (af + stages - 1) x stages: %.2fx; reached %.0f%%" %
          (bound, 100 * threaded / bound))
    print("  host capacity: %d one-thread copies of the step run %.2fx one copy's throughput; "
          "bound af / (af + stages - 1) x capacity: %.2fx; reached %.0f%%" %
          (args.stages, capacity, fill * capacity, 100 * threaded / (fill * capacity)))
    print("  stash and restore copies: %.1f%% of the stages' working time" % (100 * stash_share))
    print("  (medians of %d runs%s)" % (args.repeats, ", beside a busy neighbour" if args.neighbour
                                        else ""))


if __name__ == "__main__":
    main()
