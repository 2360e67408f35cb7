#!/usr/bin/env bash
# Checkpoint save time: xtrain (xbench checkpoint: writePart + writeIndex + commit, fsync included)
# beside a plain sequential write of the same bytes with fsync (dd conv=fsync) and torch.save of the
# same tensors followed by fsync. The three run interleaved (one of each per repetition, in the same
# directory), so drift in the machine's load hits them alike. Prints the median seconds and GB/s of
# REPS runs, and xtrain's time over dd's (the issue's aim: at most 1.5).
# Usage: BYTES=400M TENSORS=40 REPS=5 bench/run-checkpoint-vs-peers.sh [build-dir] [parent-dir]
#        (BYTES: a multiple of 1 MiB, K/M/G suffixes are powers of 1024; parent-dir: where the files
#        are written, default $TMPDIR or /tmp)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
parent=${2:-${TMPDIR:-/tmp}}
reps=${REPS:-5}
tensors=${TENSORS:-40}
size=${BYTES:-400M}
python=/usr/bin/python3

case $size in
  *[kK]) bytes=$(( ${size%?} * 1024 )) ;;
  *[mM]) bytes=$(( ${size%?} * 1024 * 1024 )) ;;
  *[gG]) bytes=$(( ${size%?} * 1024 * 1024 * 1024 )) ;;
  *) bytes=$size ;;
esac
if (( bytes <= 0 || bytes % 1048576 != 0 )); then
  echo "BYTES must be a positive multiple of 1 MiB (got $size)" >&2
  exit 2
fi
if (( bytes % 4194304 == 0 )); then bs=4M; count=$(( bytes / 4194304 )); else bs=1M; count=$(( bytes / 1048576 )); fi
have_torch=0
$python -c 'import torch' 2>/dev/null && have_torch=1

work=$(mktemp -d -p "$parent" xtrain-ckpt-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }
now() { date +%s.%N; }

# torch.save of `tensors` float32 tensors of `bytes` in total, then flush + fsync; prints seconds
# (tensor creation excluded).
cat > "$work/torch_save.py" <<'PY'
import os, sys, time, torch
path, total, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
elements = total // 4
sizes = [elements // count] * (count - 1) + [elements - (count - 1) * (elements // count)]
state = {f"w{i}": torch.rand(n) for i, n in enumerate(sizes)}
t0 = time.perf_counter()
with open(path, "wb") as f:
    torch.save(state, f)
    f.flush()
    os.fsync(f.fileno())
dirfd = os.open(os.path.dirname(path), os.O_RDONLY)
os.fsync(dirfd)
os.close(dirfd)
print(time.perf_counter() - t0)
PY

for i in $(seq "$reps"); do
  "$build/bin/xbench" checkpoint --bytes "$bytes" --tensors "$tensors" --reps 1 --dir "$work" |
    sed -n 's/.* seconds=\([^ ]*\) .*/\1/p' >> "$work/xtrain"
  t0=$(now)
  dd if=/dev/zero of="$work/dd.bin" bs=$bs count=$count conv=fsync status=none
  t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}' >> "$work/dd"
  rm -f "$work/dd.bin"
  if (( have_torch )); then
    $python "$work/torch_save.py" "$work/torch.pt" "$bytes" "$tensors" >> "$work/torch"
    rm -f "$work/torch.pt"
  fi
done

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $bytes bytes in $tensors tensors; medians of $reps interleaved runs in $parent"
line() {  # name, file
  local s
  s=$(median < "$2")
  [ "$s" = n/a ] && { echo "$1 n/a"; return; }
  echo "$1 bytes=$bytes seconds=$s GBps=$(awk -v b="$bytes" -v s="$s" 'BEGIN {printf "%.2f", b / s / 1e9}')"
}
line "xtrain-checkpoint" "$work/xtrain"
line "dd-conv-fsync bs=$bs" "$work/dd"
if (( have_torch )); then line "torch.save+fsync" "$work/torch"; else echo "torch.save+fsync n/a (python3-torch missing)"; fi
x=$(median < "$work/xtrain"); d=$(median < "$work/dd")
echo "xtrain/dd ratio=$(awk -v x="$x" -v d="$d" 'BEGIN {printf "%.2f", x / d}')"
