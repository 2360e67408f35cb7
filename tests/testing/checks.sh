# Shared by the shell-driven tests (tests/netns, tests/slurm): source it, then
#   check DESCRIPTION COMMAND...  runs COMMAND, prints "ok: ..." or "FAILED: ..." and counts failures
#                                 in $fails;
#   now                           seconds since the epoch, with nanoseconds;
#   elapsed T0 T1                 T1 - T0 in seconds, two decimals.
fails=0
check() {
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
