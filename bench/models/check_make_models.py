#!/usr/bin/python3
"""ctest BenchMakeModels: make_models.py still exports the MLP and xtrain still trains it, so the
issue-18 benchmark (bench/models_vs_torch.py) cannot rot while it is not run.

    check_make_models.py XTRAIN [MODEL...]     (default model: mlp)

Exports each model into a temporary directory (deleted at the end) and trains 2 steps of it with
xtrain; exit 0 when every run reports "trained 2 steps", 1 otherwise, 77 (skipped) when PyTorch,
onnx or h5py cannot be imported.
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: check_make_models.py XTRAIN [MODEL...]")
    xtrain, models = sys.argv[1], sys.argv[2:] or ["mlp"]
    try:
        import make_models
    except ImportError as e:
        print(f"skipped: {e} (needs python3-torch, python3-onnx, python3-h5py)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            batch = make_models.MODELS[name][2]
            onnx, h5 = make_models.make(name, tmp, samples=4 * batch)
            cmd = [xtrain, "--model", onnx, "--data", h5, "--loss", "loss", "--optimizer", "sgd",
                   "--lr", "0.05", "--momentum", "0.9", "--micro-batch-size", str(batch),
                   "--steps", "2"]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=240,
                               env=dict(os.environ, OMP_NUM_THREADS="1"))
            out = r.stdout + r.stderr
            if r.returncode != 0 or not re.search(r"trained 2 steps \(%d samples\)" % (2 * batch),
                                                  out):
                print(f"{name}: xtrain exited {r.returncode}: {' '.join(cmd)}\n{out[-3000:]}")
                return 1
            print(f"{name}: exported and trained 2 steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
