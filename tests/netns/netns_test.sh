#!/usr/bin/env bash
# xrun's mpirun engine across "hosts" that are network namespaces of this machine (netns-hosts: h1 and
# h2 on a bridge, each with its own host name, address and IPU pool). xrun runs on h1 and reaches h2
# through Open MPI's plm_rsh_agent (`ip netns exec`), as it would reach another machine through ssh:
#   1. xrun -n 4 -H h1,h2 runs instances 0, 1 on h1 and 2, 3 on h2, each in its host's namespace
#   2. gloo backend over TCP: the same weights, bit for bit, as the local engine (gloo) on one host
#   3. mpi backend over TCP: the same weights as mpirun on one host (Open MPI's own reduction order)
#   4. cutting h2's link mid-run (its bridge port down) ends the job within 20 s (the collective
#      timeout XTRAIN_COMM_TIMEOUT=5, mpirun's keepalive 1 s + 3 x 1 s), with a message naming the
#      unreachable instances: h1's instances' `ranks [2,3] did not arrive` (or the one of them that
#      had not entered the collective before the cut), or xrun's `lost contact with host h2
#      (instances 2, 3: ...` from mpirun's report: gloo, then mpi
#   5. the same cut with --max-restarts 1 --min-instances 2 and checkpoints: xrun drops h2 at once
#      and the job goes on from its newest checkpoint on h1's 2 instances (the global batch kept by
#      accumulation) to the last step: gloo, then mpi
# After each job no process is left on either host. Every wait is bounded (the whole test takes about
# 45 s when the jobs end as they should, at most about 20 minutes when every job hangs to its bound).
# Usage: netns_test.sh <source dir> <build dir>. Exit 77 (skipped, with the reason) where network
# namespaces cannot be made (not root, no CAP_NET_ADMIN) or Open MPI is missing.
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
if [ -z "${XTRAIN_NETNS_DIR:-}" ]; then
  if ! command -v mpirun >/dev/null 2>&1; then
    echo "netns test: SKIP: mpirun is not installed (Debian: openmpi-bin; scripts/setup-deps)" >&2
    exit 77
  fi
  exec "$src/tests/netns/netns-hosts" --hosts 2 -- "$0" "$src" "$build"
fi

d=$XTRAIN_NETNS_DIR
on=$d/on
xrun=$build/bin/xrun
xtrain=$build/bin/xtrain
zoo=$src/tests/data/zoo/mlp
# The same threads everywhere (with other hosts xrun leaves OMP_NUM_THREADS to the user), so the
# kernels add in the same order as on one host.
common=(-n 4 -x OMP_NUM_THREADS=1)
# mpirun notices a host it lost (its daemon's connection silent) after Open MPI's TCP keepalive:
# here 1 s idle, then 3 probes 1 s apart (xrun's default with other hosts: 10 s, then 3 x 5 s).
# shellcheck disable=SC2054  # -H takes a comma-separated list
hosts=(--engine mpirun -H h1,h2 --mpi-global-args "--mca plm_rsh_agent $d/rsh-agent
  --mca oob_tcp_keepalive_time 1 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3")
train=("$xtrain" --model "$zoo/mlp_op17_dyn.onnx" --data "$zoo/data.h5" --loss loss
  --micro-batch-size 2)
cd "$d"

# check, now, elapsed and $fails.
. "$(dirname "$0")/../testing/checks.sh"
# Runs xrun on h1, bounded: run NAME XRUN-ARGS...; output in NAME.out / NAME.err, exit code in $code.
run() {
  local name=$1
  shift
  set +e
  timeout -k 5 120 "$on" h1 "$xrun" "$@" >"$name.out" 2>"$name.err"
  code=$?
  set -e
  [ $code -eq 0 ] || { echo "--- $name: exit $code; stderr's tail:"; tail -n 15 "$name.err"; }
}
# No process is left in either host's namespace (waits at most 10 s for the last to be reaped).
nothing_left() {
  local i h left
  for i in $(seq 1 100); do
    left=
    for h in h1 h2; do left+=$(ip netns pids "$(cat "$d/$h/netns")"); done
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  echo "left behind:"
  for h in h1 h2; do
    ip netns pids "$(cat "$d/$h/netns")" | xargs -r ps -o pid,stat,args -p
  done
  return 1
}

echo "== 1. xrun -n 4 -H h1,h2 --engine mpirun: where the instances run"
# shellcheck disable=SC2016  # expanded by each instance
run where "${common[@]}" "${hosts[@]}" sh -c \
  'echo "$XTRAIN_INSTANCE_INDEX $(hostname) $(readlink /proc/self/ns/net) $XTRAIN_IPU_LOCK_DIR"'
check "the job exits 0 (got $code)" [ $code -eq 0 ]
net1=$(ip netns exec "$(cat h1/netns)" readlink /proc/self/ns/net)
net2=$(ip netns exec "$(cat h2/netns)" readlink /proc/self/ns/net)
for i in 0 1 2 3; do
  h=h1 net=$net1
  [ $i -ge 2 ] && h=h2 net=$net2
  check "instance $i runs on $h, in its namespace, with its IPU pool" \
    grep -qF "$i $h $net $d/$h/ipu-locks" where.out
done
check "nothing is left on the hosts" nothing_left

echo "== 2. gloo over TCP between the hosts: the local engine's weights"
run local-gloo "${common[@]}" --comm-backend gloo "${train[@]}" --steps 8 --save-model local-gloo.onnx
check "the local engine (gloo, on h1) exits 0 (got $code)" [ $code -eq 0 ]
run hosts-gloo "${common[@]}" "${hosts[@]}" --comm-backend gloo "${train[@]}" --steps 8 \
  --save-model hosts-gloo.onnx
check "-H h1,h2 with gloo exits 0 (got $code)" [ $code -eq 0 ]
check "the same weights, bit for bit" cmp -s local-gloo.onnx hosts-gloo.onnx
check "nothing is left on the hosts" nothing_left

echo "== 3. mpi over TCP between the hosts: the weights of mpirun on one host"
run local-mpi "${common[@]}" --engine mpirun --comm-backend mpi "${train[@]}" --steps 8 \
  --save-model local-mpi.onnx
check "mpirun on h1 alone (mpi) exits 0 (got $code)" [ $code -eq 0 ]
run hosts-mpi "${common[@]}" "${hosts[@]}" --comm-backend mpi "${train[@]}" --steps 8 \
  --save-model hosts-mpi.onnx
check "-H h1,h2 with mpi exits 0 (got $code)" [ $code -eq 0 ]
check "the same weights, bit for bit" cmp -s local-mpi.onnx hosts-mpi.onnx
check "the same losses as the local engine" \
  diff <(grep -o 'step .*loss [0-9.]*' local-gloo.out) <(grep -o 'step .*loss [0-9.]*' hosts-mpi.out)
check "nothing is left on the hosts" nothing_left

# Cuts h2's link once the job has trained a while (two progress lines, printed each second); the
# job must end within the collective timeout (5 s) plus 15 s for the instances and mpirun to go.
# xrun's --timeout 45 ends it otherwise (124).
cut_run() {
  local backend=$1 name=cut-$1 pid t0="" t1 i
  echo "== 4. h2's link cut mid-run ($backend): the job ends, naming instances on h2"
  set +e
  timeout -k 5 90 "$on" h1 "$xrun" "${common[@]}" -x XTRAIN_COMM_TIMEOUT=5 --timeout 45 \
    "${hosts[@]}" --comm-backend "$backend" "${train[@]}" --steps 1000000 >"$name.out" \
    2>"$name.err" &
  pid=$!
  trained() {
    local n
    n=$(grep -cE '^\[1,0\]<stdout>:step +[0-9]+/' "$name.out" 2>/dev/null) || true
    [ "${n:-0}" -ge 2 ]
  }
  for i in $(seq 1 600); do
    trained && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  if trained; then
    t0=$(now)
    "$d/cut" h2
  fi
  wait $pid
  code=$?
  t1=$(now)
  set -e
  check "the job trained before the cut" test -n "$t0"
  [ -n "$t0" ] || { tail -n 15 "$name.err"; return 0; }
  local took
  took=$(elapsed "$t0" "$t1")
  echo "the job ended $took s after the cut, exit code $code"
  grep -E '^xrun: ' "$name.err" | tail -n 1 | cut -c1-400
  check "the job failed (exit $code), not by --timeout (124)" \
    bash -c "[ $code -ne 0 ] && [ $code -ne 124 ] && [ $code -ne 137 ]"
  check "it ended within 20 s of the cut (took $took s)" \
    awk -v t="$took" 'BEGIN { exit !(t <= 20) }'
  # h1's instances name 2 and 3 (or one of them, when the other had entered the collective before
  # the cut) when the cut finds them waiting for the others to arrive; in a data transfer they
  # cannot tell who is gone, and xrun names the host mpirun lost, with its instances.
  local named='ranks \[(2,3|2|3)\] did not arrive|^xrun: .*lost contact with host h2 \(instances 2, 3:'
  check "a message names the unreachable instances (2 and 3, or one of them)" \
    grep -qE "$named" "$name.err"
  if ! grep -qE "$named" "$name.err" || [ $code -eq 124 ]; then
    grep -vE ' I: |<stdout>' "$name.err" | tail -n 15
  fi
  "$d/mend" h2
  check "h2 is reachable from h1 again" reachable_again
  check "nothing is left on the hosts" nothing_left
}
# After a mend the bridge port and the neighbour entries take a moment: the next job's mpirun must
# not start before h1 reaches h2 again (at most 10 s; a refused connection is an answer).
reachable_again() {
  local i out
  for i in $(seq 1 100); do
    out=$("$on" h1 timeout 1 bash -c 'exec 3<>/dev/tcp/10.77.0.2/9' 2>&1) && return 0
    case $out in *refused*) return 0 ;; esac
    sleep 0.1
  done
  return 1
}
cut_run gloo
cut_run mpi

# Cuts h2's link once the job has trained a while and written a checkpoint; with --max-restarts 1
# --min-instances 2 the job must go on without h2 and train every step. Bounded by xrun's
# --timeout 150 (124) and the outer timeout.
goes_on_run() {
  local backend=$1 steps=$2 every=$3 name=goes-on-$1 pid t0="" i
  echo "== 5. h2's link cut mid-run ($backend), --max-restarts 1 --min-instances 2: h1 goes on"
  rm -rf "$name.ckpt"
  set +e
  timeout -k 5 200 "$on" h1 "$xrun" "${common[@]}" -x XTRAIN_COMM_TIMEOUT=5 --timeout 150 \
    --max-restarts 1 --min-instances 2 "${hosts[@]}" --comm-backend "$backend" "${train[@]}" \
    --steps "$steps" --checkpoint-dir "$name.ckpt" --checkpoint-every "$every" --resume auto \
    >"$name.out" 2>"$name.err" &
  pid=$!
  trained() {
    local n
    n=$(grep -cE '^\[1,0\]<stdout>:step +[0-9]+/' "$name.out" 2>/dev/null) || true
    [ "${n:-0}" -ge 2 ] && ls "$name.ckpt" 2>/dev/null | grep -qE '^ckpt-[0-9]+$'
  }
  for i in $(seq 1 600); do
    trained && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  if trained; then
    t0=$(now)
    "$d/cut" h2
  fi
  wait $pid
  code=$?
  set -e
  check "the job trained before the cut" test -n "$t0"
  [ -n "$t0" ] || { tail -n 15 "$name.err"; "$d/mend" h2; return 0; }
  echo "the job ended $(elapsed "$t0" "$(now)") s after the cut, exit code $code"
  grep -E '^xrun: restart' "$name.err" | cut -c1-600
  check "the job went on and succeeded (exit $code)" [ $code -eq 0 ]
  check "xrun dropped h2's slots and went on with h1's" grep -qE "^xrun: restart 1 of 1: .*host h2 \
\(slots 2, 3\) was lost: .*dropping them; starting 2 of the 4 instances \(slots 0, 1\) with \
XTRAIN_NUM_INSTANCES=2" "$name.err"
  check "the second attempt resumed from a checkpoint" \
    grep -qE 'resumed from .*goes-on-'"$backend"'.ckpt/ckpt-[0-9]+ at step' "$name.out"
  check "and trained the last step on h1" grep -qE "^\[1,0\]<stdout>:step +$steps/$steps" "$name.out"
  if [ $code -ne 0 ]; then grep -vE ' I: |<stdout>' "$name.err" | tail -n 15; fi
  "$d/mend" h2
  check "h2 is reachable from h1 again" reachable_again
  check "nothing is left on the hosts" nothing_left
}
# Steps for about 8 s on both hosts (gloo's TCP transport between them is slower than Open MPI's
# here: about 200 steps/s against 1,700; docs/performance.md), a checkpoint every 1 to 2 s of it.
goes_on_run gloo 1600 300
goes_on_run mpi 15000 2000

if [ $fails -ne 0 ]; then
  echo "netns test: $fails check(s) FAILED"
  exit 1
fi
echo "netns test: all checks passed"
