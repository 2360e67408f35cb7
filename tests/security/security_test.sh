#!/usr/bin/env bash
# Strangers cannot read or join a running job (issue 16, item 8). A job of `xrun -n 2 --comm-backend
# gloo xtrain` runs with its job directory under a world-traversable TMPDIR; meanwhile a second user
# (setpriv --reuid=nobody):
#   1. cannot list the job's rendezvous directory (0700) nor read any file in it (each 0600), nor
#      open any shared-memory segment of the job (0600), nor read an instance's environment
#      (where XTRAIN_JOB_SECRET is); the secret is on no process's command line;
#   2. connects to every TCP port the job's processes use and sends junk: refused (a running gloo
#      group has no listening socket), and the job finishes with the weights of an undisturbed run.
# Usage: security_test.sh <source dir> <build dir>. Exit 77 (skipped, saying why) when not root.
set -euo pipefail
build=$(cd "$2" && pwd)
xrun=$build/bin/xrun
xtrain=$build/bin/xtrain
if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: acting as a second user (setpriv --reuid=nobody) needs root"
  exit 77
fi
if ! command -v setpriv >/dev/null; then
  echo "skipped: setpriv (util-linux) is not installed"
  exit 77
fi
stranger=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

work=$(mktemp -d "${TMPDIR:-/tmp}/xtrain-security-test.XXXXXX")
chmod 0755 "$work"
mkdir -m 1777 "$work/tmp"
job_pid=
cleanup() {
  if [ -n "$job_pid" ] && kill -0 "$job_pid" 2>/dev/null; then
    kill -TERM "$job_pid" 2>/dev/null || true
    sleep 1
    kill -KILL "$job_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

args=(--steps 3000 --seed 7)
cd "$work"
echo "reference run"
timeout 120 "$xrun" -n 2 --comm-backend gloo "$xtrain" "${args[@]}" --save-model "$work/ref.onnx" \
  >"$work/ref.log" 2>&1 || { cat "$work/ref.log"; fail "the reference run failed"; }

echo "attacked run"
TMPDIR=$work/tmp timeout 120 "$xrun" -n 2 --comm-backend gloo "$xtrain" "${args[@]}" \
  --save-model "$work/attacked.onnx" >"$work/attacked.log" 2>&1 &
job_pid=$!

# The instances (xrun's children named xtrain) and their job directory, once they train.
pids=
dir=
for _ in $(seq 1 200); do
  xrun_pid=$(pgrep -P "$job_pid" -x xrun || true)  # $job_pid is timeout's
  pids=
  [ -n "$xrun_pid" ] && pids=$(pgrep -P "$xrun_pid" -x xtrain | tr '\n' ' ' || true)
  dir=$(find "$work/tmp" -maxdepth 1 -name 'xrun-*' -type d 2>/dev/null | head -n 1)
  if [ -n "$dir" ] && [ "$(echo $pids | wc -w)" -eq 2 ] && grep -q "step" "$work/attacked.log"; then
    break
  fi
  sleep 0.05
done
[ -n "$dir" ] || fail "the job's rendezvous directory did not appear under $work/tmp"
[ "$(echo $pids | wc -w)" -eq 2 ] || fail "did not find the job's 2 instances (found '$pids')"
grep -q "step" "$work/attacked.log" || fail "the job did not start training within 10 s"
echo "instances $pids, job directory $dir"

# 1. Files, segments, environment.
mode=$(stat -c %a "$dir")
[ "$mode" = 700 ] || fail "the job directory $dir has mode $mode, not 700"
if out=$("${stranger[@]}" ls "$dir" 2>&1); then fail "a second user listed $dir: $out"; fi
echo "$out" | grep -q "Permission denied" || fail "listing $dir as nobody: $out"
files=$(find "$dir" -type f)
[ -n "$files" ] || fail "the job directory $dir holds no file to check"
checked=0
for f in $files; do
  mode=$(stat -c %a "$f")
  [ "$mode" = 600 ] || fail "$f has mode $mode, not 600"
  if out=$("${stranger[@]}" cat "$f" 2>&1 >/dev/null); then fail "a second user read $f"; fi
  echo "$out" | grep -q "Permission denied" || fail "reading $f as nobody: $out"
  checked=$((checked + 1))
done
echo "a second user can neither list the job directory nor read its $checked files"
job_id=$(basename "$dir")
job_id=${job_id#xrun-}
segments=0
for s in /dev/shm/xtrain-"$job_id"-*; do
  [ -e "$s" ] || continue
  mode=$(stat -c %a "$s")
  [ "$mode" = 600 ] || fail "shared-memory segment $s has mode $mode, not 600"
  if "${stranger[@]}" cat "$s" >/dev/null 2>&1; then fail "a second user read segment $s"; fi
  segments=$((segments + 1))
done
echo "shared-memory segments of the job (unlinked once attached): $segments, each 0600"
for p in $pids; do
  if "${stranger[@]}" cat "/proc/$p/environ" >/dev/null 2>&1; then
    fail "a second user read the environment of instance pid $p"
  fi
  secret=$(tr '\0' '\n' <"/proc/$p/environ" | sed -n 's/^XTRAIN_JOB_SECRET=//p')
  [ ${#secret} -eq 64 ] || fail "instance pid $p has no 64-digit XTRAIN_JOB_SECRET"
  # The pattern from a file, so that grep's own command line does not hold it.
  (umask 077 && printf '%s\n' "$secret" >"$work/secret")
  if on=$(grep -l -a -F -f "$work/secret" /proc/[0-9]*/cmdline 2>/dev/null); then
    fail "the job's secret is on a command line: $on"
  fi
done
echo "XTRAIN_JOB_SECRET: in the instances' environment, unreadable to others, on no command line"

# 2. Every TCP port of the job: a stranger connects and sends junk.
# (grep finding nothing for one instance must not end the script silently under set -e and
# pipefail: on a busy machine ss can miss a process's sockets once, so it is asked again.)
ports=""
for attempt in 1 2 3 4 5; do
  ports=$(for p in $pids; do ss -tanpH 2>/dev/null | grep "pid=$p," | awk '{print $4}' || true; done |
    sed 's/.*://' | sort -u | tr '\n' ' ')
  [ -n "$ports" ] && break
  sleep 1
done
[ -n "$ports" ] || fail "the job's instances have no TCP socket (is the gloo backend in use?)"
listening=$(for p in $pids; do ss -tlnpH 2>/dev/null | grep "pid=$p," || true; done)
[ -z "$listening" ] || echo "note: the job listens on: $listening"
refused=0
accepted=0
for port in $ports; do
  if "${stranger[@]}" timeout 5 bash -c \
    "exec 3<>/dev/tcp/127.0.0.1/$port && head -c 65536 /dev/urandom >&3" 2>/dev/null; then
    accepted=$((accepted + 1))
  else
    refused=$((refused + 1))
  fi
done
echo "connections to the job's ports ($ports) as nobody: $refused refused, $accepted accepted"
[ "$accepted" -eq 0 ] || fail "a second user's connection to the running job was accepted"

set +e
wait "$job_pid"
rc=$?
set -e
job_pid=
[ $rc -eq 0 ] || { cat "$work/attacked.log"; fail "the attacked job exited $rc"; }
cmp -s "$work/ref.onnx" "$work/attacked.onnx" || fail "the attacked job's model differs from the reference"
[ -z "$(ls -A "$work/tmp")" ] || fail "the job left $(ls -A "$work/tmp") behind"
echo "the job finished undisturbed: exit 0, the reference's weights bit for bit"
echo "PASS"
