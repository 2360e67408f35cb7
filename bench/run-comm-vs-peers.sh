#!/usr/bin/env bash
# All-reduce bus bandwidth of xtrain's comm backends beside Open MPI's MPI_Allreduce, gloo's best
# allreduce (../shared/bench) and memcpy, in one run on one machine. Prints one line per figure: the
# median busbw (GB/s, nccl-tests definition) of REPS runs at 4 MB and 64 MB, out of place.
# Usage: bench/run-comm-vs-peers.sh [build-dir] [ranks...]   (REPS=3 by default)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
ranks=("$@"); [ ${#ranks[@]} -gt 0 ] || ranks=(2 4 8)
reps=${REPS:-3}
shared=$root/../shared/bench
peers=$(mktemp -d)
trap 'rm -rf "$peers"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }

# busbw (column 8) of the 4 MB and 64 MB lines of xbench comm's output on stdin.
xbench_busbw() { sed -e 's/^\[[0-9,]*\][^ ]* *//' | awk -v b="$1" '$1 == b {print $8}'; }

g++ -O2 -pthread -o "$peers/membw" "$shared/membw.cpp"
mpicc -O2 -o "$peers/allreduce_mpi" "$shared/allreduce_mpi.c"
g++ -O2 -std=c++17 -o "$peers/allreduce_gloo" "$shared/allreduce_gloo.cpp" -lgloo -lpthread

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); medians of $reps runs; busbw GB/s"
for i in $(seq "$reps"); do "$peers/membw"; done | awk '/threads=1/ {print $3}' | sed 's/GBps=//' | median |
  sed 's/^/memcpy 1-thread GBps /'
for n in "${ranks[@]}"; do
  for bytes in 4194304 67108864; do
    for backend in shm gloo; do
      for i in $(seq "$reps"); do
        "$build/bin/xrun" -n "$n" --comm-backend "$backend" "$build/bin/xbench" comm -b "$bytes" -e "$bytes" -f 1 |
          xbench_busbw "$bytes"
      done | median | sed "s/^/xtrain-$backend processes=$n bytes=$bytes busbw /"
    done
    for i in $(seq "$reps"); do
      mpirun --oversubscribe -np "$n" "$build/bin/xbench" comm --backend mpi -b "$bytes" -e "$bytes" -f 1 |
        xbench_busbw "$bytes"
    done | median | sed "s/^/xtrain-mpi processes=$n bytes=$bytes busbw /"
    for i in $(seq "$reps"); do
      "$build/bin/xbench" comm --threads "$n" -b "$bytes" -e "$bytes" -f 1 | xbench_busbw "$bytes"
    done | median | sed "s/^/xtrain-inproc threads=$n bytes=$bytes busbw /"
  done
  for i in $(seq "$reps"); do mpirun --oversubscribe -np "$n" "$peers/allreduce_mpi"; done |
    awk '{print $3, $6}' | sed 's/bytes=//; s/busbw_GBps=//' > "$peers/mpi.txt"
  for bytes in 4194304 67108864; do
    awk -v b="$bytes" '$1 == b {print $2}' "$peers/mpi.txt" | median |
      sed "s/^/open-mpi MPI_Allreduce processes=$n bytes=$bytes busbw /"
  done
  : > "$peers/gloo.txt"
  for i in $(seq "$reps"); do
    store=$(mktemp -d)
    for r in $(seq 1 $((n - 1))); do "$peers/allreduce_gloo" "$r" "$n" "$store" >/dev/null & done
    "$peers/allreduce_gloo" 0 "$n" "$store" >> "$peers/gloo.txt"; wait; rm -rf "$store"
  done
  # gloo's best algorithm per size: the highest median over ring, ring_chunked, halving_doubling.
  for bytes in 4194304 67108864; do
    for alg in ring ring_chunked halving_doubling; do
      grep "^gloo-$alg " "$peers/gloo.txt" | awk -v b="bytes=$bytes" '$3 == b {print $6}' |
        sed 's/busbw_GBps=//' | median
    done | sort -g | tail -1 | sed "s/^/gloo best-allreduce processes=$n bytes=$bytes busbw /"
  done
done
