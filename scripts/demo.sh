#!/usr/bin/env bash
# `make demo`: the quickest first run. Installs only the build's Debian packages and the
# Arrow SDK (`setup.sh --demo`), builds only the CLI (the `demo` preset: a unity release
# build), runs `ampdelta demo`, and prints how long each phase took.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${JOBS:-$(nproc)}"
BUILD=build/demo

PHASES=()
TIMES=()
RUN_START=$SECONDS
phase() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  PHASES+=("$name")
  TIMES+=($((SECONDS - start)))
}
print_table() {
  local total=$((SECONDS - RUN_START)) i
  {
    printf '\n%-44s %7s\n' "make demo: phase" "seconds"
    for i in "${!PHASES[@]}"; do printf '%-44s %7d\n' "${PHASES[$i]}" "${TIMES[$i]}"; done
    printf '%-44s %7d  (%d min %02d s)\n' "total" "$total" $((total / 60)) $((total % 60))
  } >&2
}
trap print_table EXIT

configure() { cmake --preset demo >/dev/null; }
build() { cmake --build "$BUILD" --target ampdelta -j "$JOBS"; }

phase "set-up: Debian packages, Arrow SDK" bash scripts/setup.sh --demo
phase "configure" configure
phase "build: the CLI (unity, release)" build
phase "demo: dev server → ./data/blocks → read back" "$BUILD/tools/ampdelta/ampdelta" demo
