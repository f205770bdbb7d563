#!/usr/bin/env bash
# Install the pinned Google Cloud Storage emulator (fsouza/fake-gcs-server) into
# .deps/bin/fake-gcs-server, built from the Go module proxy. Idempotent: skips when the
# pinned version is already there. Used by tests/interop/emulator_gcs.py. Needs Go >= 1.26
# (PATH or /usr/local/go/bin). Go's caches are the user's (scripts/go_install.sh).
#
# Env: GO (go binary), GCS_EMULATOR_JOBS (parallel build jobs, default 1).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

FAKE_GCS_MODULE=github.com/fsouza/fake-gcs-server
FAKE_GCS_VERSION=v1.56.1
BIN_DIR="$ROOT/.deps/bin"
BIN="$BIN_DIR/fake-gcs-server"
STAMP="$BIN_DIR/.fake-gcs-server.version"

log() { printf '[setup_gcs_emulator] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# shellcheck source=go_install.sh
source "$ROOT/scripts/go_install.sh"

if [[ -x $BIN && -f $STAMP && "$(cat "$STAMP")" == "$FAKE_GCS_VERSION" ]]; then
  log "fake-gcs-server ${FAKE_GCS_VERSION} present in .deps/bin"
  exit 0
fi

start=$SECONDS
rm -f "$STAMP"
go_install_into_deps "${GCS_EMULATOR_JOBS:-1}" "${FAKE_GCS_MODULE}@${FAKE_GCS_VERSION}" -ldflags="-s -w"
[[ -x $BIN ]] || die "go install finished but $BIN is missing"
printf '%s\n' "$FAKE_GCS_VERSION" >"$STAMP"
log "fake-gcs-server ${FAKE_GCS_VERSION} installed in .deps/bin ($((SECONDS - start))s)"
