#!/usr/bin/env bash
# All-reduce bus bandwidth of xtrain's comm backends beside Open MPI's MPI_Allreduce, gloo's best
# allreduce (the peers: docs/performance.md) and memcpy, in one run on one machine. The contenders run interleaved
# (one run of each per repetition), so drift in the machine's load hits all of them alike. Prints one
# line per figure: the median busbw (GB/s, nccl-tests definition) of REPS runs, out of place.
# Usage: XTRAIN_BENCH_PEERS=DIR bench/run-comm-vs-peers.sh [build-dir] [ranks...]   (REPS=5, SIZES="4194304 67108864")
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
ranks=("$@"); [ ${#ranks[@]} -gt 0 ] || ranks=(2 4 8)
reps=${REPS:-5}
sizes=(${SIZES:-4194304 67108864})
# The peer programs are outside material (docs/performance.md, "Peers"): XTRAIN_BENCH_PEERS names their folder.
peers=${XTRAIN_BENCH_PEERS:-}
if [ -z "$peers" ] || [ ! -d "$peers" ]; then
  echo "$(basename "$0"): set XTRAIN_BENCH_PEERS to the folder of the peer programs (docs/performance.md, \"Peers\")" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }
# busbw (column 8: out of place) of the line for `bytes` in xbench comm's output on stdin.
xbench_busbw() { sed -e 's/^\[[0-9,]*\][^ ]* *//' | awk -v b="$1" '$1 == b {print $8}'; }
record() { echo "$2" >> "$work/$1"; }

g++ -O2 -pthread -o "$work/membw" "$peers/membw.cpp"
mpicc -O2 -o "$work/allreduce_mpi" "$peers/allreduce_mpi.c"
g++ -O2 -std=c++17 -o "$work/allreduce_gloo" "$peers/allreduce_gloo.cpp" -lgloo -lpthread

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); medians of $reps interleaved runs; busbw GB/s"
for i in $(seq "$reps"); do "$work/membw" | awk '/threads=1/ {sub("GBps=", "", $3); print $3}'; done |
  median | sed 's/^/memcpy 1-thread GBps /'
for n in "${ranks[@]}"; do
  for i in $(seq "$reps"); do
    for b in "${sizes[@]}"; do
      for backend in shm gloo; do
        v=$("$build/bin/xrun" -n "$n" --comm-backend "$backend" "$build/bin/xbench" comm -b "$b" -e "$b" -f 1 |
          xbench_busbw "$b")
        record "$backend.$n.$b" "$v"
      done
      v=$(mpirun --oversubscribe -np "$n" "$build/bin/xbench" comm --backend mpi -b "$b" -e "$b" -f 1 |
        xbench_busbw "$b")
      record "mpi.$n.$b" "$v"
      record "inproc.$n.$b" "$("$build/bin/xbench" comm --threads "$n" -b "$b" -e "$b" -f 1 | xbench_busbw "$b")"
    done
    mpirun --oversubscribe -np "$n" "$work/allreduce_mpi" | awk '{print $3, $6}' |
      sed 's/bytes=//; s/busbw_GBps=//' >> "$work/openmpi.$n"
    store=$(mktemp -d)
    for r in $(seq 1 $((n - 1))); do "$work/allreduce_gloo" "$r" "$n" "$store" >/dev/null 2>&1 & done
    "$work/allreduce_gloo" 0 "$n" "$store" >> "$work/gloo.$n" 2>/dev/null || echo "# gloo peer failed (n=$n)"
    wait || true
    rm -rf "$store"
  done
  for b in "${sizes[@]}"; do
    for backend in shm gloo mpi; do
      median < "$work/$backend.$n.$b" | sed "s/^/xtrain-$backend processes=$n bytes=$b busbw /"
    done
    median < "$work/inproc.$n.$b" | sed "s/^/xtrain-inproc threads=$n bytes=$b busbw /"
    awk -v b="$b" '$1 == b {print $2}' "$work/openmpi.$n" | median |
      sed "s/^/open-mpi MPI_Allreduce processes=$n bytes=$b busbw /"
    # gloo's best algorithm: the highest median over ring, ring_chunked, halving_doubling.
    for alg in ring ring_chunked halving_doubling; do
      grep "^gloo-$alg " "$work/gloo.$n" 2>/dev/null | awk -v b="bytes=$b" '$3 == b {print $6}' |
        sed 's/busbw_GBps=//' | median
    done | grep -v n/a | sort -g | tail -1 | sed "s/^/gloo best-allreduce processes=$n bytes=$b busbw /"
  done
done
