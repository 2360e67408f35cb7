#!/usr/bin/env bash
# CPU time and context switches of whole shm all-reduce jobs (`perf stat -e
# task-clock,context-switches` around `xrun -n N --comm-backend shm xbench comm`) for several comm
# library versions, interleaved run by run, with the wall-clock busbw (out of place) beside them. On
# a machine loaded by other jobs the CPU a job spends moves much less than its wall-clock bandwidth,
# so this compares versions where bench/comm-before-after.sh cannot. Each version is NAME=LIBDIR
# (a folder holding a copy of BUILD/lib/libxtrain_comm.so*), optionally with one environment
# variable for the ranks: NAME=LIBDIR:VAR=VALUE. The job's start-up is included: run once with
# SIZES=4 to see it.
# Usage: bench/comm-cpu-before-after.sh BUILD NAME=LIBDIR[:VAR=VALUE] ...
#        (REPS=3, ITERS=40, RANKS="2 8", SIZES="4194304 67108864")
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $(basename "$0") BUILD NAME=LIBDIR[:VAR=VALUE] ..." >&2
  exit 2
fi
build=$1
shift
specs=("$@")
command -v perf >/dev/null || { echo "$(basename "$0"): needs perf" >&2; exit 2; }
reps=${REPS:-3}
iters=${ITERS:-40}
ranks=(${RANKS:-2 8})
sizes=(${SIZES:-4194304 67108864})
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); medians of $reps interleaved runs, $iters iterations"
for n in "${ranks[@]}"; do
  for i in $(seq "$reps"); do
    for b in "${sizes[@]}"; do
      for s in "${specs[@]}"; do
        name=${s%%=*}
        rest=${s#*=}
        lib=${rest%%:*}
        env=()
        [[ $rest == *:* ]] && env=(-x "${rest#*:}")
        LD_LIBRARY_PATH=$lib perf stat -x, -e task-clock,context-switches -o "$work/stat" -- \
          "$build/bin/xrun" -n "$n" -x LD_LIBRARY_PATH="$lib" "${env[@]}" --comm-backend shm \
          "$build/bin/xbench" comm -b "$b" -e "$b" -f 1 -n "$iters" -w 2 2>/dev/null |
          sed -e 's/^\[[0-9,]*\][^ ]* *//' | awk -v b="$b" '$1 == b {print $8}' >> "$work/$n.$b.$name.busbw"
        grep task-clock "$work/stat" | cut -d, -f1 >> "$work/$n.$b.$name.cpu"
        grep context-switches "$work/stat" | cut -d, -f1 >> "$work/$n.$b.$name.cs"
      done
    done
  done
  for b in "${sizes[@]}"; do
    line="processes=$n bytes=$b"
    for s in "${specs[@]}"; do
      name=${s%%=*}
      line="$line | $name: cpu_ms $(median < "$work/$n.$b.$name.cpu") switches $(median < "$work/$n.$b.$name.cs") busbw $(median < "$work/$n.$b.$name.busbw")"
    done
    echo "$line"
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
