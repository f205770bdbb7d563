#!/usr/bin/env bash
# `make demo`: the quickest first run. Installs only the build's Debian packages and the
# Arrow SDK (`setup.sh --demo`), builds only the CLI (the `demo` preset: a unity release
# build), runs `ampdelta demo`, and prints how long each phase took. With CI set, a run
# longer than AMPDELTA_DEMO_BUDGET_S (default 240 s: the README's "under 4 minutes") fails.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${JOBS:-$(nproc)}"
BUILD=build/demo

log() { printf '[make demo] %s\n' "$*" >&2; }
# shellcheck source=phases.sh
source "$ROOT/scripts/phases.sh"
BUDGET_S="${AMPDELTA_DEMO_BUDGET_S:-240}"
finish() {
  local status=$? total
  print_phases "make demo: phase" "budget ${BUDGET_S} s"
  total=$((SECONDS - RUN_START))
  if [[ -n ${CI:-} ]] && ((total > BUDGET_S)); then
    log "FAILED: the demo took ${total} s, over the ${BUDGET_S} s budget (AMPDELTA_DEMO_BUDGET_S)"
    ((status != 0)) || status=3
  fi
  exit "$status"
}
trap finish EXIT

configure() { cmake --preset demo >/dev/null; }
build() { cmake --build "$BUILD" --target ampdelta -j "$JOBS"; }

phase "set-up: Debian packages, Arrow SDK" bash scripts/setup.sh --demo
phase "configure" configure
phase "build: the CLI (unity, release)" build
phase "demo: dev server → ./data/blocks → read back" "$BUILD/tools/ampdelta/ampdelta" demo
