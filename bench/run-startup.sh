#!/usr/bin/env bash
# Launcher start-up: the time from starting `xrun -n N` to every instance's first line, beside
# `mpirun -np N` of the same program, interleaved, medians of REPS runs.
# The program is `date +%s%N`: its only line is the time it started (ns since the epoch). A run's
# figure is the latest of the N first lines minus the time just before the launcher was started;
# "job" is the whole run until the launcher exited.
# Usage: N=8 REPS=7 bench/run-startup.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
N=${N:-8} REPS=${REPS:-7} XRUN="$build/bin/xrun" /usr/bin/python3 - <<'PY'
import os, re, statistics, subprocess, time
n, reps, xrun = int(os.environ["N"]), int(os.environ["REPS"]), os.environ["XRUN"]
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
launchers = {
    f"xrun -n {n} (local engine)": [xrun, "-n", str(n), "date", "+%s%N"],
    f"mpirun --oversubscribe -np {n}": ["mpirun", "--oversubscribe", "-np", str(n), "date", "+%s%N"],
    f"xrun --engine mpirun -n {n}": [xrun, "--engine", "mpirun", "-n", str(n), "date", "+%s%N"],
}
first, job = {k: [] for k in launchers}, {k: [] for k in launchers}
for _ in range(reps):
    for name, cmd in launchers.items():
        t0 = time.time_ns()
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        t1 = time.time_ns()
        stamps = [int(s) for s in re.findall(r"\b1\d{18}\b", out.stdout)]
        if out.returncode != 0 or len(stamps) != n:
            raise SystemExit(f"{name}: exit {out.returncode}, {len(stamps)} stamps\n{out.stdout}{out.stderr}")
        first[name].append((max(stamps) - t0) / 1e6)
        job[name].append((t1 - t0) / 1e6)
print(f"{'launcher':36} {'every first line (ms)':>22} {'whole job (ms)':>15}   runs (first line, ms)")
for name in launchers:
    runs = " ".join(f"{v:.1f}" for v in first[name])
    print(f"{name:36} {statistics.median(first[name]):22.1f} {statistics.median(job[name]):15.1f}   {runs}")
PY
