#!/usr/bin/env bash
# The reference MLP (docs/performance.md, "Peers") trained with 1, 2, 4 and 8 replicas: as local replicas of
# one instance (xbench mlp --replicas N) and as N instances of one replica (xrun -n N xbench mlp), beside
# PyTorch DDP (the peers' ddp_mlp.py), interleaved, REPS times each; prints the median samples/s and
# the share of step time spent in the gradient reduction.
# Usage: XTRAIN_BENCH_PEERS=DIR bench/run-replication-vs-peers.sh [build-dir] [replicas...]   (REPS=3, STEPS=30)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
counts=("$@"); [ ${#counts[@]} -gt 0 ] || counts=(1 2 4 8)
reps=${REPS:-3}
steps=${STEPS:-30}
# The peer programs are outside material (docs/performance.md, "Peers"): XTRAIN_BENCH_PEERS names their
# folder; without it only xtrain's figures are printed.
peers=${XTRAIN_BENCH_PEERS:-/nonexistent}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }
. "$root/bench/torch-peer.sh"
have_torch=0
torch_peer_ready "$peers" && [ -f "$peers/ddp_mlp.py" ] && have_torch=1

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); medians of $reps; samples/s"
for n in "${counts[@]}"; do
  for i in $(seq "$reps"); do
    out=$("$build/bin/xbench" mlp --steps "$steps" --replicas "$n")
    echo "$out" | sed -n 's/.*samples_per_s=\([0-9.]*\).*/\1/p' >> "$work/local.$n"
    echo "$out" | sed -n 's/.*(\([0-9.]*\)%).*/\1/p' >> "$work/local-reduce.$n"
    out=$("$build/bin/xrun" -n "$n" "$build/bin/xbench" mlp --steps "$steps")
    echo "$out" | sed -n 's/.*samples_per_s=\([0-9.]*\).*/\1/p' >> "$work/inst.$n"
    echo "$out" | sed -n 's/.*(\([0-9.]*\)%).*/\1/p' >> "$work/inst-reduce.$n"
    if [ "$have_torch" = 1 ]; then
      /usr/bin/python3 "$peers/ddp_mlp.py" "$n" "$steps" 64 2>/dev/null | tail -1 |
        sed -n 's/.*samples_per_s=\([0-9.]*\).*/\1/p' >> "$work/ddp.$n"
    fi
  done
  echo "xtrain local-replicas=$n samples_per_s $(median < "$work/local.$n") reduction_share_pct $(median < "$work/local-reduce.$n")"
  echo "xtrain instances=$n samples_per_s $(median < "$work/inst.$n") reduction_share_pct $(median < "$work/inst-reduce.$n")"
  [ "$have_torch" = 1 ] && echo "torch-ddp-gloo world=$n samples_per_s $(median < "$work/ddp.$n")"
done
