#!/usr/bin/env bash
# `make test`: every test, phase by phase, timed. What a phase does not need runs beside it:
# the test tools' set-up (the venv, Spark's jars, the emulators: `setup.sh --tools`) beside
# the C++ build, ctest and the fuzzers, which do not use them; the Python wheel's build
# beside the interop suite, which leaves part of the machine idle while it waits on servers.
# Ends with the time budget table (also on failure). With CI set, a run longer than
# AMPDELTA_TEST_BUDGET_S (default 3600 s) fails, so growth is seen the day it happens.
#
# Env: JOBS (default nproc), FUZZ_SECONDS, FUZZ_JOBS (as the Makefile passes them), CI,
# AMPDELTA_TEST_BUDGET_S.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${JOBS:-$(nproc)}"
BUDGET_S="${AMPDELTA_TEST_BUDGET_S:-3600}"
LOGS=build/test-logs
mkdir -p "$LOGS"

log() { printf '[make test] %s\n' "$*" >&2; }

# shellcheck source=phases.sh
source "$ROOT/scripts/phases.sh"

# Background work: started with `beside NAME COMMAND...`, joined with `join NAME`; the
# table shows how long it ran and how long the foreground then waited for it. Each runs in
# its own session (setsid), so a failed run stops all of it: pip, Go, ninja, a JVM.
declare -A BG_PID BG_START BG_LOG
beside() {
  local name=$1
  shift
  BG_START[$name]=$SECONDS
  BG_LOG[$name]="$LOGS/$(printf '%s' "${name%%:*}" | tr -c 'a-z0-9' '-').log"
  setsid "$@" >"${BG_LOG[$name]}" 2>&1 &
  BG_PID[$name]=$!
  log "$name: started beside (log: ${BG_LOG[$name]})"
}
join() {
  local name=$1 start=$SECONDS status=0
  wait "${BG_PID[$name]}" || status=$?
  record_phase "$name (beside; waited $((SECONDS - start)) s)" $((SECONDS - BG_START[$name]))
  unset "BG_PID[$name]"
  if ((status != 0)); then
    tail -n 60 "${BG_LOG[$name]}" >&2
    log "$name failed (exit $status; log: ${BG_LOG[$name]})"
    return "$status"
  fi
}

finish() {
  local status=$?
  for pid in "${BG_PID[@]}"; do
    # setsid made the background process the leader of its own process group.
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done
  print_phases "make test: phase" "budget ${BUDGET_S} s"
  local total=$((SECONDS - RUN_START))
  if [[ -n ${CI:-} ]] && ((total > BUDGET_S)); then
    log "FAILED: the run took ${total} s, over the ${BUDGET_S} s budget (AMPDELTA_TEST_BUDGET_S)"
    log "find the phase that grew in the table above"
    ((status != 0)) || status=3
  fi
  exit "$status"
}
trap finish EXIT

MAKE_CMD=(make --no-print-directory "JOBS=$JOBS")

phase "set-up: Debian packages, Arrow SDK" bash scripts/setup.sh --build
beside "set-up: test venv, Spark jars, emulators" bash scripts/setup.sh --tools
phase "build: tests and fuzzers (clang, ASan/UBSan)" "${MAKE_CMD[@]}" build-only
phase "checks: layering, format, headers" "${MAKE_CMD[@]}" check-layering check-format-only check-headers-only
phase "ctest: unit, integration, conformance" "${MAKE_CMD[@]}" ctest-only
phase "fuzz: ${FUZZ_SECONDS:-30} s per target" "${MAKE_CMD[@]}" fuzz-only
join "set-up: test venv, Spark jars, emulators"
phase "checks: function and file sizes" "${MAKE_CMD[@]}" check-sizes
beside "wheel: the Python package" nice -n 19 "${MAKE_CMD[@]}" wheel-only
phase "interop: tests/interop" "${MAKE_CMD[@]}" interop-only
join "wheel: the Python package"
beside "wheel matrix: CPython 3.10, 3.12, 3.13" "${MAKE_CMD[@]}" wheel-matrix-only
phase "python: the wheel in a fresh venv" "${MAKE_CMD[@]}" python-only
phase "sdk: the real Amp SDK (CPython 3.12)" "${MAKE_CMD[@]}" sdk-only
phase "docs: every command README.md and docs/ show" "${MAKE_CMD[@]}" docs-only
join "wheel matrix: CPython 3.10, 3.12, 3.13"
