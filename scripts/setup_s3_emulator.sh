#!/usr/bin/env bash
# Install the pinned S3 emulator (versity/versitygw, posix backend) into
# .deps/bin/versitygw, built from the Go module proxy. Idempotent: skips when
# `.deps/bin/versitygw --version` already reports the pinned version (the version is
# stamped into the binary with -ldflags; a plain `go install` build reports "git").
# Used by tests/interop/emulator_s3.py. Needs Go >= 1.25 (PATH or /usr/local/go/bin); no C
# compiler (CGO_ENABLED=0). Go's caches are the user's (scripts/go_install.sh).
#
# Env: GO (go binary), S3_EMULATOR_JOBS (parallel build jobs, default 1).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VERSITYGW_MODULE=github.com/versity/versitygw
VERSITYGW_VERSION=v1.8.0
BIN_DIR="$ROOT/.deps/bin"
BIN="$BIN_DIR/versitygw"

log() { printf '[setup_s3_emulator] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# shellcheck source=go_install.sh
source "$ROOT/scripts/go_install.sh"

# `versitygw --version` prints "Version  : <v>" (then Build, BuildTime).
installed_version() {
  [[ -x $BIN ]] || return 0
  "$BIN" --version 2>/dev/null | sed -n 's/^Version *: *//p' | head -n 1 || true
}

if [[ "$(installed_version)" == "$VERSITYGW_VERSION" ]]; then
  log "versitygw ${VERSITYGW_VERSION} present in .deps/bin"
  exit 0
fi

start=$SECONDS
rm -f "$BIN"
# Stamp the version into the binary (a plain `go install` reports "git").
go_install_into_deps "${S3_EMULATOR_JOBS:-1}" "${VERSITYGW_MODULE}/cmd/versitygw@${VERSITYGW_VERSION}" \
  -ldflags="-s -w -X=main.Version=${VERSITYGW_VERSION} -X=main.Build=go-install -X=main.BuildTime=none"
got="$(installed_version)"
[[ $got == "$VERSITYGW_VERSION" ]] || die "installed $BIN reports version '${got}', not ${VERSITYGW_VERSION}"
log "versitygw ${VERSITYGW_VERSION} installed in .deps/bin ($((SECONDS - start))s)"
