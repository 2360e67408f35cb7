#!/usr/bin/env bash
# xrun and xtrain under a real Slurm (slurm-cluster: slurmctld, slurmd and munged on this host), as a
# user would run them, with no engine or MPI flags:
#   1. salloc -n 4 xrun -n 4 xtrain ...   (the issue's failure: "has no way to meet the others")
#   2. sbatch of a script running xrun -n 4 xtrain ...: finishes, writes its checkpoint and model;
#      prints the time from sbatch to the first step and to the end
#   3. scancel of a running job leaves no process behind (nor xrun's rendezvous directory)
#   4. the instances meet over PMIx when xrun cannot see the allocation's node as this host (what
#      happens in a multi-node allocation, where a directory of this host is no use)
# Every wait is bounded; the whole test takes well under two minutes.
# Usage: slurm_test.sh <source dir> <build dir>. Exit 77 (skipped, with the reason) where Slurm
# cannot run (not root, slurm-wlm or munge missing).
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
if [ -z "${XTRAIN_SLURM_DIR:-}" ]; then
  # One node with at least 4 CPUs (declared when the machine has fewer), so `-n 4` fits.
  cpus=$(nproc)
  [ "$cpus" -lt 4 ] && cpus=4
  exec "$src/tests/slurm/slurm-cluster" --cpus "$cpus" -- "$0" "$src" "$build"
fi

work=$XTRAIN_SLURM_DIR/work  # removed with the cluster
mkdir -p "$work/tmp"
cd "$work"
# IPU locks of this test only; xrun's rendezvous directories under $work/tmp (checked after scancel).
export XTRAIN_IPU_LOCK_DIR=$work/ipu-locks TMPDIR=$work/tmp
mkdir -p "$XTRAIN_IPU_LOCK_DIR"
xrun=$build/bin/xrun
xtrain=$build/bin/xtrain
zoo=$src/tests/data/zoo/mlp
train_args=(--model "$zoo/mlp_op17_dyn.onnx" --data "$zoo/data.h5" --loss loss --micro-batch-size 2)

fails=0
check() {  # check DESCRIPTION COMMAND...: runs COMMAND, reports
  local what=$1
  shift
  if "$@"; then
    echo "ok: $what"
  else
    echo "FAILED: $what"
    fails=$((fails + 1))
  fi
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# Waits (at most $2 s) until job $1 has left the queue; prints its final state.
wait_job_end() {
  local id=$1 limit=$2 t0
  t0=$(date +%s)
  while [ -n "$(squeue -h -j "$id" -o %i 2>/dev/null)" ]; do
    if [ $(($(date +%s) - t0)) -ge "$limit" ]; then
      echo "job $id still queued or running after $limit s" >&2
      return 1
    fi
    sleep 0.1
  done
}
job_field() {  # job_field ID NAME: JobState, ExitCode, ... of a finished job (kept MinJobAge s)
  scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"
}
# Processes whose environment carries MARK=VALUE (every process of a job inherits it from sbatch).
marked_pids() {
  local p
  for p in /proc/[0-9]*; do
    grep -qzxF "$1" "$p/environ" 2>/dev/null && echo "${p#/proc/}"
  done
  return 0
}

echo "== 1. salloc -n 4, then xrun -n 4 xtrain (no engine or MPI flags)"
set +e
timeout 90 salloc -n 4 --job-name=xtrain-salloc "$xrun" -n 4 "$xtrain" "${train_args[@]}" \
  --steps 8 --save-model "$work/salloc.onnx" >salloc.out 2>salloc.err
code=$?
set -e
check "salloc job exits 0 (got $code)" [ $code -eq 0 ]
check "the model was saved" test -s "$work/salloc.onnx"
check "xrun says the instances meet in the job's directory" \
  grep -q "xrun: srun engine: the instances meet in the job's rendezvous directory" salloc.err
check "no instance failed to meet" bash -c "! grep -q 'no way to meet' salloc.err"
[ $code -eq 0 ] || tail -n 20 salloc.err

echo "== 2. sbatch a job script running xrun -n 4 xtrain"
cat >train.sbatch <<EOF
#!/bin/bash
#SBATCH --ntasks=4
#SBATCH --job-name=xtrain-train
#SBATCH --output=$work/train-%j.out
#SBATCH --time=5
"$xrun" -n 4 "$xtrain" ${train_args[*]} --steps 16 --checkpoint-dir "$work/ckpt" \\
  --save-model "$work/train.onnx"
EOF
t0=$(now)
id=$(sbatch --parsable train.sbatch)
out=$work/train-$id.out
first_step=""
end=$(($(date +%s) + 90))
while [ "$(date +%s)" -lt $end ]; do
  if [ -z "$first_step" ] && grep -qE '^0: step +1/' "$out" 2>/dev/null; then first_step=$(now); fi
  [ -z "$(squeue -h -j "$id" -o %i 2>/dev/null)" ] && break
  sleep 0.05
done
t_end=$(now)
wait_job_end "$id" 5 || true
[ -z "$first_step" ] && grep -qE '^0: step +1/' "$out" 2>/dev/null && first_step=$t_end
state=$(job_field "$id" JobState)
exit_code=$(job_field "$id" ExitCode)
check "sbatch job $id COMPLETED with exit code 0:0 (got $state, $exit_code)" \
  [ "$state" = COMPLETED ] && [ "$exit_code" = 0:0 ]
check "the job trained 16 steps" grep -qE '^0: step +16/16' "$out"
check "the checkpoint of step 16 exists" test -d "$work/ckpt/ckpt-00000016"
check "the model was saved" test -s "$work/train.onnx"
if [ -n "$first_step" ]; then
  echo "start-up: sbatch to the first step $(elapsed "$t0" "$first_step") s; to the job's end $(elapsed "$t0" "$t_end") s (4 instances, node of $(nproc) cores)"
else
  echo "FAILED: no first step in $out"
  fails=$((fails + 1))
fi
[ "$state" = COMPLETED ] || tail -n 20 "$out"

echo "== 3. scancel of a running job leaves no process behind"
mark=XTRAIN_SLURM_TEST_JOB=cancel-$$-$RANDOM
cat >long.sbatch <<EOF
#!/bin/bash
#SBATCH --ntasks=4
#SBATCH --job-name=xtrain-long
#SBATCH --output=$work/long-%j.out
"$xrun" -n 4 "$xtrain" ${train_args[*]} --steps 100000000
EOF
id=$(env "$mark" sbatch --parsable long.sbatch)
out=$work/long-$id.out
end=$(($(date +%s) + 60))
until grep -qE '^0: step ' "$out" 2>/dev/null || [ "$(date +%s)" -ge $end ]; do sleep 0.05; done
check "the long job is training" grep -qE '^0: step ' "$out"
running=$(marked_pids "$mark" | wc -l)
check "its processes carry the test's mark ($running found)" [ "$running" -ge 9 ]
t0=$(now)
scancel "$id"
end=$(($(date +%s) + 30))
left=$(marked_pids "$mark")
while [ -n "$left" ] && [ "$(date +%s)" -lt $end ]; do
  sleep 0.1
  left=$(marked_pids "$mark")
done
echo "scancel: every process of the job gone $(elapsed "$t0" "$(now)") s after scancel"
check "no process of the cancelled job is left" [ -z "$left" ]
if [ -n "$left" ]; then
  # shellcheck disable=SC2086
  ps -o pid,ppid,pgid,stat,args -p "$(echo $left | tr ' ' ,)" || true
fi
wait_job_end "$id" 10 || true
check "xrun's rendezvous directories are gone" bash -c "[ -z \"\$(ls -A '$work/tmp')\" ]"

echo "== 4. the instances meet over PMIx when the node is not this host"
# In a multi-node allocation (or one node other than the one xrun runs on) a directory of this host
# is no use: xrun asks srun for PMIx. Here the allocation's node list is made to name another host.
set +e
timeout 90 salloc -n 4 --job-name=xtrain-pmix env SLURM_JOB_NODELIST=another-node SLURM_NODELIST=another-node \
  "$xrun" -n 4 "$xtrain" "${train_args[@]}" --steps 8 --save-model "$work/pmix.onnx" \
  >pmix.out 2>pmix.err
code=$?
set -e
check "PMIx job exits 0 (got $code)" [ $code -eq 0 ]
check "xrun says it chose PMIx" grep -q "xrun: srun engine: the instances meet over PMIx (srun --mpi=pmix)" pmix.err
check "the model was saved" test -s "$work/pmix.onnx"
check "the same weights as under salloc's directory rendezvous" cmp -s "$work/pmix.onnx" "$work/salloc.onnx"
[ $code -eq 0 ] || tail -n 20 pmix.err

# TODO(preemption, issue 16 item 3): once xtrain handles SIGUSR1, add a case here: sbatch --requeue
# with --signal=USR1@60, `scancel --signal=USR1 <id>` while training, expect the documented
# "preempted" exit and a checkpoint, `scontrol requeue <id>`, and the requeued job resuming
# (--resume auto) to the weights of an uninterrupted run.
echo "skipped: preemption under Slurm (scancel --signal=USR1, requeue): not handled by xtrain yet"

if [ $fails -ne 0 ]; then
  echo "slurm test: $fails check(s) failed"
  exit 1
fi
echo "slurm test: all checks passed"
