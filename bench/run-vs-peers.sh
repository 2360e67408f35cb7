#!/usr/bin/env bash
# Runs xtrain's single-IPU benchmarks and PyTorch's figures for the same work, side by side, in one run.
# Usage: XTRAIN_BENCH_PEERS=DIR bench/run-vs-peers.sh [build-dir]   (needs python3-torch for the peer lines)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
# The peer programs are outside material (docs/performance.md, "Peers"): XTRAIN_BENCH_PEERS names their
# folder; without it only xtrain's figures are printed.
peers=${XTRAIN_BENCH_PEERS:-/nonexistent}
. "$root/bench/torch-peer.sh"
have_torch=0
torch_peer_ready "$peers" && have_torch=1
for i in 1 2 3; do
  "$build/bin/xbench" mlp --steps 40
  if [ "$have_torch" = 1 ] && [ -f "$peers/ddp_mlp.py" ]; then
    /usr/bin/python3 "$peers/ddp_mlp.py" 1 40 64 2>/dev/null | tail -1
  fi
done
"$build/bin/xbench" matmul --size 1024
if [ "$have_torch" = 1 ]; then
  /usr/bin/python3 - <<'PY'
import time, torch
torch.set_num_threads(2)
a = torch.randn(1024, 1024); b = torch.randn(1024, 1024)
for _ in range(3): a @ b
ts = []
for _ in range(20):
    t0 = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t0)
ts.sort()
print(f"torch-sgemm n=1024 gflops={2 * 1024**3 / ts[len(ts)//2] / 1e9:.1f} (median of 20)")
PY
fi
