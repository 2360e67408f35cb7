#!/usr/bin/env bash
# xrun and xtrain under a real Slurm (slurm-cluster: slurmctld, slurmd and munged on this host), as a
# user would run them, with no engine or MPI flags. On a one-node cluster:
#   1. salloc -n 4 xrun -n 4 xtrain ...   (the issue's failure: "has no way to meet the others")
#   2. sbatch of a script running xrun -n 4 xtrain ...: finishes, writes its checkpoint and model;
#      prints the time from sbatch to the first step and to the end
#   3. scancel of a running job leaves no process behind (nor xrun's rendezvous directory)
#   3b. scancel --signal=USR1 of a job script with --requeue: the instances checkpoint and exit 75,
#      xrun passes 75 on, the script requeues the job, and the requeued job resumes (--resume auto)
#      to the weights of an uninterrupted run; nothing of the job is left
#   3c. srun's --kill-on-bad-exit after a first exit 75 ends the late tasks with SIGTERM: still 75
#   3d. scancel --signal=USR1 --full reaches xrun as well, which forwards it; one stop
#   3e. sbatch --time=1 --signal=USR1@20 (the README's job script; Slurm's warning before the time
#      limit): the instances checkpoint and exit 75 before the limit, the script requeues the job,
#      and the requeued run resumes from that checkpoint, saying it is a requeue (SLURM_RESTART_COUNT)
#   3f. beside 3e, sbatch --signal=B:USR1@20 (the batch shell alone) with a script that forwards it
#      to xrun from a trap: xrun passes it on, the instances checkpoint once, the script exits 75
# On a two-node cluster (two slurmd on this host, nodes that xrun cannot tell from other hosts):
#   4. salloc -N 2 -n 4 and sbatch -N 2 -n 4 of xrun -n 4 xtrain: the instances meet over PMIx and
#      train to the same weights as in 1.
# Every wait is bounded; the whole test takes about 35 s when idle plus 3e/3f's wait for Slurm's
# warning (10 to 40 s after the jobs' start: Slurm checks time limits every 30 s), about 70 s.
# Usage: slurm_test.sh <source dir> <build dir>. Exit 77 (skipped, with the reason) where Slurm
# cannot run (not root, slurm-wlm or munge missing).
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
phase=${3:-}
if [ -z "$phase" ]; then
  # One node with at least 8 CPUs (declared when the machine has fewer), so a job of `-n 4` and
  # one of `-n 2` run at once.
  cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
  [ "$cpus" -lt 8 ] && cpus=8
  results=$(mktemp -d "${TMPDIR:-/tmp}/xtrain-slurm-test.XXXXXX")
  trap 'rm -rf "$results"' EXIT
  set +e
  "$src/tests/slurm/slurm-cluster" --cpus "$cpus" -- "$0" "$src" "$build" one-node "$results"
  one=$?
  [ $one -eq 77 ] && exit 77
  "$src/tests/slurm/slurm-cluster" --cpus 2 --nodes 2 -- "$0" "$src" "$build" two-nodes "$results"
  two=$?
  set -e
  if [ $one -ne 0 ] || [ $two -ne 0 ]; then
    echo "slurm test: FAILED (one node: exit $one, two nodes: exit $two)"
    exit 1
  fi
  echo "slurm test: all checks passed"
  exit 0
fi
results=$4

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

# check, now, elapsed and $fails.
. "$(dirname "$0")/../testing/checks.sh"

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

# The batch job $1's script was run to its end with exit code 0 (scontrol keeps it MinJobAge s).
completed() {
  [ "$(job_field "$1" JobState)" = COMPLETED ] && [ "$(job_field "$1" ExitCode)" = 0:0 ]
}

# Slurm holds a requeued job back (its BeginTime about two minutes on); start requeued job $1 now.
# Not in the second of the requeue: slurmd revoked the job's credential then, and refuses a launch
# whose credential is not newer, to the second ("Job credential revoked": the job ends FAILED, 1:0).
# So first the old run's processes (marked $2) end, then 2 s pass (bounded: 10 s in all).
start_requeued_now() {
  local id=$1 mark=$2 end
  end=$(($(date +%s) + 8))
  while [ -n "$(marked_pids "$mark")" ] && [ "$(date +%s)" -lt $end ]; do sleep 0.1; done
  sleep 2
  scontrol update JobId="$id" StartTime=now >/dev/null 2>&1 || true
}

# The instances of job $1 stopped after a step, whose checkpoint is in $2, with the output in $3 (sets
# $preempted_at); Slurm requeued the job (waits up to 10 s for PENDING); it is started now (marks $4).
preempted_and_requeued() {
  local id=$1 ckpts=$2 out=$3 mark=$4 state end
  preempted_at=$(sed -n 's/^0: xtrain: preempted by SIGUSR1 after step \([0-9]*\) of .*/\1/p' "$out")
  check "instance 0 says after which step it stopped (${preempted_at:-none})" \
    test -n "$preempted_at"
  if [ -n "$preempted_at" ]; then
    check "the checkpoint of step $preempted_at exists" \
      test -d "$ckpts/$(printf 'ckpt-%08d' "$preempted_at")"
  fi
  end=$(($(date +%s) + 10))
  state=$(job_field "$id" JobState)
  until [ "$state" = PENDING ] || [ "$(date +%s)" -ge $end ]; do
    sleep 0.1
    state=$(job_field "$id" JobState)
  done
  check "the job was requeued (state $state, restarts $(job_field "$id" Restarts))" \
    [ "$state" = PENDING ]
  start_requeued_now "$id" "$mark"
}

one_node() {
  echo "== 1. salloc -n 4, then xrun -n 4 xtrain (no engine or MPI flags)"
  set +e
  timeout 40 salloc -n 4 --job-name=xtrain-salloc "$xrun" -n 4 "$xtrain" "${train_args[@]}" \
    --steps 8 --save-model "$results/salloc.onnx" >salloc.out 2>salloc.err
  code=$?
  set -e
  check "salloc job exits 0 (got $code)" [ $code -eq 0 ]
  check "the model was saved" test -s "$results/salloc.onnx"
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
  local t0 id out first_step="" end t_end
  t0=$(now)
  id=$(sbatch --parsable train.sbatch)
  out=$work/train-$id.out
  end=$(($(date +%s) + 40))
  while [ "$(date +%s)" -lt $end ]; do
    if [ -z "$first_step" ] && grep -qE '^0: step +1/' "$out" 2>/dev/null; then first_step=$(now); fi
    [ -z "$(squeue -h -j "$id" -o %i 2>/dev/null)" ] && break
    sleep 0.05
  done
  t_end=$(now)
  wait_job_end "$id" 5 || true
  if [ -z "$first_step" ] && grep -qE '^0: step +1/' "$out" 2>/dev/null; then first_step=$t_end; fi
  check "sbatch job $id COMPLETED, exit code 0:0 ($(job_field "$id" JobState), $(job_field "$id" ExitCode))" \
    completed "$id"
  check "the job trained 16 steps" grep -qE '^0: step +16/16' "$out"
  check "the checkpoint of step 16 exists" test -d "$work/ckpt/ckpt-00000016"
  check "the model was saved" test -s "$work/train.onnx"
  check "the first step was seen" test -n "$first_step"
  if [ -n "$first_step" ]; then
    echo "start-up: sbatch to the first step $(elapsed "$t0" "$first_step") s; to the job's end" \
      "$(elapsed "$t0" "$t_end") s (4 instances on $(env -u OMP_NUM_THREADS nproc) cores)"
  fi
  completed "$id" || tail -n 20 "$out"

  echo "== 3. scancel of a running job leaves no process behind"
  local mark running left
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
  end=$(($(date +%s) + 30))
  until grep -qE '^0: step ' "$out" 2>/dev/null || [ "$(date +%s)" -ge $end ]; do sleep 0.05; done
  check "the long job is training" grep -qE '^0: step ' "$out"
  # The batch script, xrun, its watchdog, srun and the 4 instances (at least).
  running=$(marked_pids "$mark" | wc -l)
  check "its processes carry the test's mark ($running found)" [ "$running" -ge 5 ]

  echo "== 3a. a second job on the node meanwhile gets other IPUs"
  local share
  cat >share.sbatch <<EOF
#!/bin/bash
#SBATCH --ntasks=2
#SBATCH --job-name=xtrain-share
#SBATCH --output=$work/share-%j.out
"$xrun" -n 2 "$xtrain" ${train_args[*]} --steps 4
EOF
  share=$(sbatch --parsable share.sbatch)
  wait_job_end "$share" 40 || true
  check "the second job $share COMPLETED while the first one trains" completed "$share"
  check "its xrun took IPUs 4 and 5 (0-3 are the first job's)" \
    grep -q "xrun: IPUs of this host are busy (.*); the instances get IPUs 4, 5" "$work/share-$share.out"
  completed "$share" || tail -n 20 "$work/share-$share.out"

  t0=$(now)
  scancel "$id"
  end=$(($(date +%s) + 20))
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

  echo "== 3b. preemption: scancel --signal=USR1 gives a checkpoint and exit 75; a requeue resumes"
  # The job script of the README's "Long jobs": on 75 it requeues itself. `scancel --signal=USR1`
  # (like sbatch --signal=USR1@T) signals the job's steps, not the batch shell: the srun step's
  # tasks, i.e. the instances. They stop after the same step, save, and exit 75; srun exits 75
  # (its --kill-on-bad-exit finds them all gone already), and xrun passes 75 on.
  local steps=3000 preempted_at resumed_at state
  cat >preempt.sbatch <<EOF
#!/bin/bash
#SBATCH --ntasks=4
#SBATCH --job-name=xtrain-preempt
#SBATCH --output=$work/preempt-%j.out
#SBATCH --open-mode=append
#SBATCH --requeue
echo "attempt \${SLURM_RESTART_COUNT:-0}"
# At least 3 ms a step (9 s in all), however fast training gets: the preemption must find the job
# training, and the weights are the same with or without the pause.
export XTRAIN_TEST_STEP_DELAY_MS=3
"$xrun" -n 4 --grace-period 5 "$xtrain" ${train_args[*]} --steps $steps \\
  --checkpoint-dir "$work/preempt-ckpt" --resume auto --save-model "$work/preempt.onnx"
code=\$?
echo "xrun exited with \$code"
[ "\$code" = 75 ] && scontrol requeue "\$SLURM_JOB_ID"
exit "\$code"
EOF
  mark=XTRAIN_SLURM_TEST_JOB=preempt-$$-$RANDOM
  id=$(env "$mark" sbatch --parsable preempt.sbatch)
  out=$work/preempt-$id.out
  end=$(($(date +%s) + 30))
  until grep -qE '^0: step ' "$out" 2>/dev/null || [ "$(date +%s)" -ge $end ]; do sleep 0.05; done
  check "the job to preempt is training" grep -qE '^0: step ' "$out"
  t0=$(now)
  scancel --signal=USR1 "$id"
  end=$(($(date +%s) + 30))
  until grep -q '^xrun exited with ' "$out" 2>/dev/null || [ "$(date +%s)" -ge $end ]; do
    sleep 0.05
  done
  echo "preemption: xrun exited $(elapsed "$t0" "$(now)") s after scancel --signal=USR1"
  check "xrun exited with 75" grep -qx 'xrun exited with 75' "$out"
  check "xrun says the job was preempted" grep -q '^xrun: the job was preempted' "$out"
  preempted_and_requeued "$id" "$work/preempt-ckpt" "$out" "$mark"
  end=$(($(date +%s) + 60))
  until [ "$(grep -c '^xrun exited with ' "$out")" -ge 2 ] || [ "$(date +%s)" -ge $end ]; do
    sleep 0.1
  done
  wait_job_end "$id" 10 || true
  check "the requeued job $id COMPLETED, exit code 0:0 ($(job_field "$id" JobState), $(job_field "$id" ExitCode))" \
    completed "$id"
  resumed_at=$(sed -n 's/^0: xtrain: resumed from .* at step \([0-9]*\) .*/\1/p' "$out")
  check "the requeued job resumed at step ${preempted_at:-?} (${resumed_at:-none})" \
    [ -n "$resumed_at" ] && [ "$resumed_at" = "${preempted_at:-x}" ]
  check "it trained to step $steps" grep -qE "^0: step +$steps/$steps" "$out"
  completed "$id" || tail -n 30 "$out"
  left=$(marked_pids "$mark")
  check "no process of the preempted job is left" [ -z "$left" ]
  # The weights of a run never interrupted: the same command in an allocation.
  set +e
  timeout 60 salloc -n 4 --job-name=xtrain-straight "$xrun" -n 4 "$xtrain" "${train_args[@]}" \
    --steps $steps --save-model "$work/straight.onnx" >straight.out 2>&1
  code=$?
  set -e
  check "the uninterrupted run exits 0 (got $code)" [ $code -eq 0 ]
  [ $code -eq 0 ] || tail -n 20 straight.out
  check "preempted and requeued, the same weights as a run never interrupted" \
    cmp -s "$work/preempt.onnx" "$work/straight.onnx"

  echo "== 3c. srun's --kill-on-bad-exit when instances end a little apart with 75"
  # The srun engine runs srun --kill-on-bad-exit=1, so the first exit 75 makes srun end the step's
  # other tasks: with SIGTERM (SIGKILL only after KillWait), which xtrain takes as one more
  # preemption request; they exit 75 too and srun, then xrun, still exit 75. Here task 0 exits once
  # the others have set their trap (a file each: on a busy machine a task may start late) and the
  # others up to 10 s later, catching the SIGTERM.
  rm -f "$work"/late-ready-*
  cat >late.sh <<EOF
#!/bin/bash
trap 'echo "SIGTERM while ending"' TERM
if [ "\$SLURM_PROCID" != 0 ]; then
  touch "$work/late-ready-\$SLURM_PROCID"
  sleep 10 &
  wait \$!
else
  for i in \$(seq 1 200); do
    [ "\$(ls "$work" | grep -c '^late-ready-')" -ge 3 ] && break
    sleep 0.1
  done
fi
exit 75
EOF
  chmod +x late.sh
  set +e
  timeout 40 salloc -n 4 --job-name=xtrain-late "$xrun" -n 4 "$work/late.sh" >late.out 2>&1
  code=$?
  set -e
  check "xrun exits 75 (got $code)" [ $code -eq 75 ]
  check "srun ended the late tasks with SIGTERM, not SIGKILL" grep -q 'SIGTERM while ending' late.out
  check "xrun says the job was preempted" grep -q '^xrun: the job was preempted' late.out
  [ $code -eq 75 ] || tail -n 20 late.out

  echo "== 3d. scancel --signal=USR1 --full reaches xrun too, which forwards it"
  # --full signals every process of the batch step as well: the batch shell (which must not die of
  # SIGUSR1: the script ignores it), xrun (which forwards it to srun, which passes it on) and srun.
  # The instances get several copies of the request and stop once.
  cat >full.sbatch <<EOF
#!/bin/bash
#SBATCH --ntasks=4
#SBATCH --job-name=xtrain-full
#SBATCH --output=$work/full-%j.out
trap '' USR1
"$xrun" -n 4 --grace-period 5 "$xtrain" ${train_args[*]} --steps 100000000 \\
  --checkpoint-dir "$work/full-ckpt"
EOF
  id=$(sbatch --parsable full.sbatch)
  out=$work/full-$id.out
  end=$(($(date +%s) + 30))
  until grep -qE '^0: step ' "$out" 2>/dev/null || [ "$(date +%s)" -ge $end ]; do sleep 0.05; done
  check "the job is training" grep -qE '^0: step ' "$out"
  scancel --signal=USR1 --full "$id"
  wait_job_end "$id" 30 || true
  check "xrun received SIGUSR1 and forwarded it" \
    grep -q '^xrun: received SIGUSR1; forwarded to srun' "$out"
  check "one stop, after one step" [ "$(grep -c '^0: xtrain: preempted by SIGUSR1 after step' "$out")" = 1 ]
  check "the batch script exited with xrun's 75 ($(job_field "$id" ExitCode))" \
    [ "$(job_field "$id" ExitCode)" = 75:0 ]
  [ "$(job_field "$id" ExitCode)" = 75:0 ] || tail -n 20 "$out"

  echo "== 3e. sbatch --signal=USR1@T: Slurm's warning before the time limit, then a requeue"
  # The README's job script with a time limit of 1 minute. Slurm sends the warning signal to the
  # job's steps (the instances, as scancel --signal does) at its first time-limit check once fewer
  # than T + 30 s are left: those checks run every 30 s, so with --time=1 --signal=USR1@20 the
  # signal comes 10 to 40 s after the start, always before the limit. The requeued run resumes
  # from the preemption's checkpoint; once it trains, the test cancels it.
  local case_t0 started stopped warned_at resumed_line
  case_t0=$(now)
  cat >warn.sbatch <<EOF
#!/bin/bash
#SBATCH --ntasks=4
#SBATCH --job-name=xtrain-warn
#SBATCH --output=$work/warn-%j.out
#SBATCH --open-mode=append
#SBATCH --requeue
#SBATCH --time=1
#SBATCH --signal=USR1@20
echo "attempt \${SLURM_RESTART_COUNT:-0} started at \$(date +%s)"
"$xrun" -n 4 --grace-period 5 "$xtrain" ${train_args[*]} --steps 100000000 \\
  --checkpoint-dir "$work/warn-ckpt" --resume auto
code=\$?
echo "xrun exited with \$code at \$(date +%s)"
[ "\$code" = 75 ] && scontrol requeue "\$SLURM_JOB_ID"
exit "\$code"
EOF
  # Meanwhile (the node has room for both), --signal=B:USR1@20, which signals the batch shell
  # alone: a script that forwards it to xrun from a trap (bash runs the trap once `wait` returns).
  cat >forward.sbatch <<EOF
#!/bin/bash
#SBATCH --ntasks=4
#SBATCH --job-name=xtrain-forward
#SBATCH --output=$work/forward-%j.out
#SBATCH --time=1
#SBATCH --signal=B:USR1@20
"$xrun" -n 4 --grace-period 5 "$xtrain" ${train_args[*]} --steps 100000000 \\
  --checkpoint-dir "$work/forward-ckpt" --resume auto &
pid=\$!
trap 'echo "the batch shell got SIGUSR1"; kill -USR1 \$pid' USR1
wait \$pid
code=\$?
[ "\$code" -gt 128 ] && { wait \$pid; code=\$?; }
echo "xrun exited with \$code"
exit "\$code"
EOF
  local forward forward_mark forward_out
  forward_mark=XTRAIN_SLURM_TEST_JOB=forward-$$-$RANDOM
  forward=$(env "$forward_mark" sbatch --parsable forward.sbatch)
  forward_out=$work/forward-$forward.out
  mark=XTRAIN_SLURM_TEST_JOB=warn-$$-$RANDOM
  id=$(env "$mark" sbatch --parsable warn.sbatch)
  out=$work/warn-$id.out
  # Start-up, at most 40 s to the signal, and a few to stop; the limit would end the job at 60 s.
  end=$(($(date +%s) + 75))
  until grep -q '^xrun exited with ' "$out" 2>/dev/null || [ "$(date +%s)" -ge $end ]; do
    sleep 0.1
  done
  started=$(sed -n 's/^attempt 0 started at \([0-9]*\)$/\1/p' "$out")
  stopped=$(sed -n 's/^xrun exited with [0-9]* at \([0-9]*\)$/\1/p' "$out" | head -n 1)
  warned_at=$((${stopped:-0} - ${started:-0}))
  echo "time-limit warning: the job stopped $warned_at s after its start (--time=1 --signal=USR1@20)"
  check "xrun exited with 75 (not killed at the time limit)" grep -q '^xrun exited with 75 ' "$out"
  check "it stopped before the time limit ($warned_at s after the start)" \
    test -n "$started" -a -n "$stopped" -a "$warned_at" -lt 60
  check "xrun itself was not signalled (the signal goes to the steps)" \
    bash -c "! grep -q '^xrun: received SIGUSR1' '$out'"
  preempted_and_requeued "$id" "$work/warn-ckpt" "$out" "$mark"
  # The requeued run resumes, says it is a requeue (SLURM_RESTART_COUNT=1), and trains on.
  resumed_line="^0: xtrain: resumed from .* at step ${preempted_at:-x} .* on requeue 1 of Slurm job $id\$"
  end=$(($(date +%s) + 30))
  # A step line after the resume line (awk alone: no pipe for pipefail to trip on).
  trains_after_resume() {
    awk '/^0: xtrain: resumed from/ { r = 1 } r && /^0: step / { f = 1; exit } END { exit !f }' \
      "$out" 2>/dev/null
  }
  until trains_after_resume || [ "$(date +%s)" -ge $end ]; do
    sleep 0.1
  done
  check "the requeued run resumed at step ${preempted_at:-?} on requeue 1 of job $id" \
    grep -q "$resumed_line" "$out"
  check "the requeued run trains on" trains_after_resume
  grep -q "$resumed_line" "$out" || tail -n 30 "$out"
  scancel "$id"
  wait_job_end "$id" 20 || true
  end=$(($(date +%s) + 10))
  left=$(marked_pids "$mark")
  while [ -n "$left" ] && [ "$(date +%s)" -lt $end ]; do
    sleep 0.1
    left=$(marked_pids "$mark")
  done
  check "no process of the warned job is left" [ -z "$left" ]

  echo "== 3f. sbatch --signal=B:USR1@T and a job script that forwards it to xrun (ran beside 3e)"
  wait_job_end "$forward" 20 || true
  check "the batch shell got the warning" grep -q '^the batch shell got SIGUSR1' "$forward_out"
  check "xrun received SIGUSR1 and forwarded it" \
    grep -q '^xrun: received SIGUSR1; forwarded to srun' "$forward_out"
  check "the instances stopped once, with a checkpoint" \
    [ "$(grep -c '^0: xtrain: preempted by SIGUSR1 after step' "$forward_out")" = 1 ]
  check "the script exited with xrun's 75 ($(job_field "$forward" ExitCode))" \
    [ "$(job_field "$forward" ExitCode)" = 75:0 ]
  [ "$(job_field "$forward" ExitCode)" = 75:0 ] || tail -n 20 "$forward_out"
  left=$(marked_pids "$forward_mark")
  check "no process of the forwarding job is left" [ -z "$left" ]
  echo "3e and 3f took $(elapsed "$case_t0" "$(now)") s"
}

two_nodes() {
  echo "== 4. two nodes: salloc -N 2 -n 4, then xrun -n 4 xtrain: the instances meet over PMIx"
  set +e
  timeout 40 salloc -N 2 -n 4 --job-name=xtrain-pmix "$xrun" -n 4 "$xtrain" "${train_args[@]}" \
    --steps 8 --save-model "$work/pmix.onnx" >pmix.out 2>pmix.err
  code=$?
  set -e
  check "two-node salloc job exits 0 (got $code)" [ $code -eq 0 ]
  local said="xrun: srun engine: the instances meet over PMIx (srun --mpi=pmix), since the allocation"
  check "xrun says it chose PMIx" grep -qF "$said has 2 nodes" pmix.err
  local salloc_id
  salloc_id=$(sed -n 's/^salloc: Granted job allocation \([0-9]*\)$/\1/p' pmix.err)
  check "tasks of job ${salloc_id:-?} ran on the second node" \
    grep -q "launch task StepId=${salloc_id:-none}\.0 " "$XTRAIN_SLURM_DIR/slurmd-$(hostname -s)-2.log"
  check "the same weights as on one node (directory rendezvous)" \
    cmp -s "$work/pmix.onnx" "$results/salloc.onnx"
  [ $code -eq 0 ] || tail -n 20 pmix.err

  echo "== 5. two nodes: sbatch --nodes=2 --ntasks=4 of xrun -n 4 xtrain"
  cat >two.sbatch <<EOF
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks=4
#SBATCH --output=$work/two-%j.out
#SBATCH --time=5
"$xrun" -n 4 "$xtrain" ${train_args[*]} --steps 8 --save-model "$work/two.onnx"
EOF
  local t0 id
  t0=$(now)
  id=$(sbatch --parsable two.sbatch)
  wait_job_end "$id" 40 || true
  local what
  what="two-node sbatch job $id COMPLETED, exit code 0:0 ($(job_field "$id" JobState),"
  what+=" $(job_field "$id" ExitCode)), $(elapsed "$t0" "$(now)") s after sbatch"
  check "$what" completed "$id"
  check "xrun chose PMIx in the batch job too" grep -q "the instances meet over PMIx" \
    "$work/two-$id.out"
  check "the same weights" cmp -s "$work/two.onnx" "$results/salloc.onnx"
  completed "$id" || tail -n 20 "$work/two-$id.out"
}

case $phase in
  one-node) one_node ;;
  two-nodes) two_nodes ;;
  *) echo "slurm_test.sh: unknown phase '$phase' (one-node or two-nodes)" >&2; exit 2 ;;
esac

if [ $fails -ne 0 ]; then
  echo "slurm test ($phase): $fails check(s) failed"
  exit 1
fi
echo "slurm test ($phase): all checks passed"
