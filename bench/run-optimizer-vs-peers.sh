#!/usr/bin/env bash
# One optimizer update of a weight of ELEMENTS float32 elements on one thread: xtrain's update kernel
# (xbench optimizer) beside PyTorch's torch.optim step (bench/optimizer_peer.py), interleaved, REPS
# runs of each; prints the median ms per update of each and their ratio.
# Usage: bench/run-optimizer-vs-peers.sh [build-dir] [optimizers...]   (REPS=5, ELEMENTS=16777216)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
names=("$@"); [ ${#names[@]} -gt 0 ] || names=(sgd adam adamw lamb adamax adagrad rmsprop centered-rmsprop adadelta)
reps=${REPS:-5}
elements=${ELEMENTS:-16777216}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }
have_torch=0
/usr/bin/python3 -c 'import torch' 2>/dev/null && have_torch=1
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $elements elements; medians of $reps runs (each the median of 20 updates)"
for name in "${names[@]}"; do
  for i in $(seq "$reps"); do
    "$build/bin/xbench" optimizer --optimizer "$name" --elements "$elements" |
      sed -n 's/.*ms_per_update=\([0-9.e+-]*\).*/\1/p' >> "$work/x.$name"
    if [ "$have_torch" = 1 ]; then
      /usr/bin/python3 "$root/bench/optimizer_peer.py" "$name" "$elements" 2>/dev/null |
        sed -n 's/.*ms_per_update=\([0-9.e+-]*\).*/\1/p' >> "$work/t.$name" || true
    fi
  done
  x=$(median < "$work/x.$name")
  t=$( [ -s "$work/t.$name" ] && median < "$work/t.$name" || echo n/a)
  ratio=$(awk -v x="$x" -v t="$t" 'BEGIN { if (t == "n/a") print "n/a"; else printf "%.2f", x / t }')
  echo "optimizer=$name xtrain_ms=$x torch_ms=$t xtrain/torch=$ratio"
done
