# Sourced by make_test.sh and demo.sh: run named phases, record each one's wall time, and
# print them as a table. Expects a log function.

PHASES=()
TIMES=()
RUN_START=$SECONDS

# record_phase NAME SECONDS: add a row to the table.
record_phase() {
  PHASES+=("$1")
  TIMES+=("$2")
}

# phase NAME COMMAND...: run a phase in the foreground and record its wall time, also when
# it fails (then the caller's set -e ends the run).
phase() {
  local name=$1 start=$SECONDS status=0
  shift
  log "$name"
  "$@" || status=$?
  if ((status != 0)); then
    record_phase "$name: FAILED (exit $status)" $((SECONDS - start))
    return "$status"
  fi
  record_phase "$name" $((SECONDS - start))
}

# print_phases TITLE [NOTE]: the table on stderr, with the total wall time (and NOTE).
print_phases() {
  local title=$1 note=${2:-} total=$((SECONDS - RUN_START)) i
  {
    printf '\n%-56s %7s\n' "$title" "seconds"
    for i in "${!PHASES[@]}"; do printf '%-56s %7d\n' "${PHASES[$i]}" "${TIMES[$i]}"; done
    printf '%-56s %7d  (%d min %02d s%s)\n' "total (wall)" "$total" \
      $((total / 60)) $((total % 60)) "${note:+; $note}"
  } >&2
}
