#!/usr/bin/env bash
# Run every libFuzzer target of tests/fuzz for a bounded time and report what they did.
#
#   scripts/run_fuzzers.sh [BUILD_DIR]      (default build/asan; `make build` builds them)
#
# FUZZ_SECONDS (default 60) is each target's -max_total_time; FUZZ_JOBS (default 2) targets
# run at a time; FUZZ_SEED, when set, fixes libFuzzer's random seed (each log names the
# seed it used: "INFO: Seed: N"). Each starts from its committed seed corpus (tests/fuzz/corpus/<target>,
# never written to) plus what earlier runs found (BUILD_DIR/fuzz-corpus/<target>); crash,
# leak and timeout inputs go to BUILD_DIR/fuzz-artifacts/<target>/. Prints per target the
# executions, executions per second, CPU seconds and crashes, then the totals; exits
# non-zero when any target crashed, leaked, timed out or did not run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build/asan}"
SECONDS_EACH="${FUZZ_SECONDS:-60}"
JOBS="${FUZZ_JOBS:-2}"
BIN="$BUILD/tests/fuzz"
SEEDS="$ROOT/tests/fuzz/corpus"
WORK="$BUILD/fuzz-corpus"
ARTIFACTS="$BUILD/fuzz-artifacts"
LOGS="$BUILD/fuzz-logs"

# The test build's sanitizer options (Makefile TEST_ENV): Arrow from the wheel is not
# instrumented, hence detect_container_overflow=0, the system allocator and the
# suppressions for its process-lifetime allocations.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:detect_container_overflow=0"
export LSAN_OPTIONS="suppressions=$ROOT/ci/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export ARROW_DEFAULT_MEMORY_POOL=system

targets=()
for source in "$ROOT"/tests/fuzz/*_fuzzer.cc; do
  name="$(basename "$source" .cc)"
  targets+=("${name%_fuzzer}")
done
for target in "${targets[@]}"; do
  if [[ ! -x "$BIN/${target}_fuzzer" ]]; then
    echo "run_fuzzers: $BIN/${target}_fuzzer is missing (run make fuzz)" >&2
    exit 1
  fi
done
mkdir -p "$LOGS"

run_one() {
  local target="$1"
  local work="$WORK/$target" artifacts="$ARTIFACTS/$target" log="$LOGS/$target.log"
  mkdir -p "$work" "$artifacts"
  rm -f "$artifacts"/*
  local args=(-max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=2560
              -print_final_stats=1 -artifact_prefix="$artifacts/")
  [[ -f "$ROOT/tests/fuzz/$target.dict" ]] && args+=(-dict="$ROOT/tests/fuzz/$target.dict")
  [[ -n "${FUZZ_SEED:-}" ]] && args+=(-seed="$FUZZ_SEED")
  local status=0
  # bash's time keyword reports the fuzzer's own user and system CPU seconds.
  { TIMEFORMAT='%U %S'; time "$BIN/${target}_fuzzer" "${args[@]}" "$work" "$SEEDS/$target" \
      >"$log" 2>&1; } 2>"$LOGS/$target.cpu" || status=$?
  echo "$status" >"$LOGS/$target.status"
}

echo "fuzzing ${#targets[@]} targets for ${SECONDS_EACH}s each, ${JOBS} at a time"
running=0
for target in "${targets[@]}"; do
  run_one "$target" &
  running=$((running + 1))
  if ((running >= JOBS)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failures=0
total_cpu=0
total_runs=0
printf '%-20s %14s %10s %9s %8s  %s\n' target executions "exec/s" "cpu s" crashes result
for target in "${targets[@]}"; do
  log="$LOGS/$target.log"
  status="$(cat "$LOGS/$target.status")"
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  read -r user sys <"$LOGS/$target.cpu" || { user=0; sys=0; }
  cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')"
  # Slow units (slow-unit-*) are reported, not failures.
  crashes="$(find "$ARTIFACTS/$target" -type f \( -name 'crash-*' -o -name 'leak-*' \
    -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)"
  result=ok
  if [[ "$status" != 0 || "$crashes" != 0 || -z "$runs" ]]; then
    result="FAILED (exit $status; log $log)"
    failures=$((failures + 1))
    crashes=$((crashes > 0 ? crashes : 1))
  fi
  printf '%-20s %14s %10s %9s %8s  %s\n' "$target" "${runs:-0}" "${rate:-0}" "$cpu" \
    "$crashes" "$result"
  total_cpu="$(awk -v a="$total_cpu" -v b="$cpu" 'BEGIN { printf "%.1f", a + b }')"
  total_runs=$((total_runs + ${runs:-0}))
done
printf '%-20s %14s %10s %9s %8s\n' total "$total_runs" "" "$total_cpu" "$failures"

if ((failures)); then
  for target in "${targets[@]}"; do
    if [[ "$(cat "$LOGS/$target.status")" != 0 ]]; then
      echo "--- $target ($(grep -m1 -o 'Seed: [0-9]*' "$LOGS/$target.log" || true)):" \
        "last lines of $LOGS/$target.log" >&2
      tail -40 "$LOGS/$target.log" >&2
    fi
  done
  echo "run_fuzzers: $failures target(s) failed; reproduce with" \
    "$BIN/<target>_fuzzer $ARTIFACTS/<target>/<file>" >&2
  exit 1
fi
echo "run_fuzzers: ${#targets[@]} targets, ${total_cpu} CPU seconds, 0 crashes"
