#!/usr/bin/env bash
# All-reduce bus bandwidth of two versions of xtrain's comm library (shm processes and inproc
# threads) beside Open MPI's MPI_Allreduce and memcpy, interleaved in one run, so that the machine's
# load hits every contender alike. Each version is a folder holding a libxtrain_comm.so.0 (copy
# build/lib/libxtrain_comm.so* aside before a change); the binaries of BUILD run with it through
# LD_LIBRARY_PATH. Prints, per world size and message size, the medians of REPS runs (busbw GB/s,
# FLOAT sum, out of place) and shm / MPI.
# Usage: XTRAIN_BENCH_PEERS=DIR bench/comm-before-after.sh BUILD LIBDIR_A LIBDIR_B
#        (REPS=3, RANKS="2 4 8", SIZES="262144 4194304 16777216 67108864"; sizes must be among
#        allreduce_mpi.c's: 256 KiB, 4, 16 and 64 MiB)
set -uo pipefail
if [ $# -ne 3 ]; then
  echo "usage: XTRAIN_BENCH_PEERS=DIR $(basename "$0") BUILD LIBDIR_A LIBDIR_B" >&2
  exit 2
fi
build=$1
libs=("$2" "$3")
for l in "${libs[@]}"; do
  if [ ! -e "$l/libxtrain_comm.so.0" ]; then
    echo "$(basename "$0"): $l has no libxtrain_comm.so.0 (expected a copy of BUILD/lib/libxtrain_comm.so*)" >&2
    exit 2
  fi
done
peers=${XTRAIN_BENCH_PEERS:-}
if [ -z "$peers" ] || [ ! -d "$peers" ]; then
  echo "$(basename "$0"): set XTRAIN_BENCH_PEERS to the folder of the peer programs (docs/performance.md, \"Peers\")" >&2
  exit 2
fi
reps=${REPS:-3}
ranks=(${RANKS:-2 4 8})
sizes=(${SIZES:-262144 4194304 16777216 67108864})
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
g++ -O2 -pthread -o "$work/membw" "$peers/membw.cpp"
mpicc -O2 -o "$work/allreduce_mpi" "$peers/allreduce_mpi.c"

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }
busbw() { sed -e 's/^\[[0-9,]*\][^ ]* *//' | awk -v b="$1" '$1 == b {print $8}'; }

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); medians of $reps interleaved runs; busbw GB/s"
for i in $(seq "$reps"); do "$work/membw" | awk '/threads=1/ {sub("GBps=", "", $3); print $3}'; done |
  median | sed 's/^/memcpy 1-thread GBps /'
for n in "${ranks[@]}"; do
  for i in $(seq "$reps"); do
    for b in "${sizes[@]}"; do
      for v in 0 1; do
        l=${libs[$v]}
        LD_LIBRARY_PATH=$l "$build/bin/xrun" -n "$n" -x LD_LIBRARY_PATH="$l" --comm-backend shm \
          "$build/bin/xbench" comm -b "$b" -e "$b" -f 1 2>/dev/null | busbw "$b" >> "$work/shm.$v.$n.$b"
        LD_LIBRARY_PATH=$l "$build/bin/xbench" comm --threads "$n" -b "$b" -e "$b" -f 1 |
          busbw "$b" >> "$work/inproc.$v.$n.$b"
      done
    done
    mpirun --oversubscribe -np "$n" "$work/allreduce_mpi" | awk '{print $3, $6}' |
      sed 's/bytes=//; s/busbw_GBps=//' >> "$work/openmpi.$n"
  done
  for b in "${sizes[@]}"; do
    m=$(awk -v b="$b" '$1 == b {print $2}' "$work/openmpi.$n" | median)
    line="processes=$n bytes=$b open-mpi $m"
    for v in 0 1; do
      s=$(median < "$work/shm.$v.$n.$b")
      t=$(median < "$work/inproc.$v.$n.$b")
      line="$line | $(basename "${libs[$v]}"): shm $s ($(awk -v s="$s" -v m="$m" 'BEGIN {if (m > 0) printf "%.2fx", s / m; else print "n/a"}') MPI) inproc $t"
    done
    echo "$line"
  done
done
