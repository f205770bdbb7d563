#!/usr/bin/env bash
# Install the pinned Google Cloud Storage emulator (fsouza/fake-gcs-server) into
# .deps/bin/fake-gcs-server, built from the Go module proxy. Idempotent: skips when the
# pinned version is already there. Go's module and build caches stay under .deps/go.
# Used by tests/interop/emulator_gcs.py. Needs Go >= 1.26 (PATH or /usr/local/go/bin).
#
# Env: GO (go binary), GCS_EMULATOR_JOBS (parallel build jobs, default 1: leave a core free),
#      GCS_EMULATOR_KEEP_GO_CACHE=1 keeps .deps/go (~1.2 GB of module + build cache) after
#      the install; by default it is removed, a rebuild takes ~1.5 min on 1 core.
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

if [[ -x $BIN && -f $STAMP && "$(cat "$STAMP")" == "$FAKE_GCS_VERSION" ]]; then
  log "fake-gcs-server ${FAKE_GCS_VERSION} present in .deps/bin"
  exit 0
fi

GO="${GO:-}"
if [[ -z $GO ]]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"
  elif [[ -x /usr/local/go/bin/go ]]; then GO=/usr/local/go/bin/go
  else die "go not found (set GO=/path/to/go; need Go >= 1.26)"; fi
fi

start=$SECONDS
log "installing ${FAKE_GCS_MODULE}@${FAKE_GCS_VERSION} ($("$GO" env GOVERSION))"
mkdir -p "$BIN_DIR" .deps/go
rm -f "$STAMP"
jobs="${GCS_EMULATOR_JOBS:-1}"
build_log="$(mktemp)"
trap 'rm -f "$build_log"' EXIT
if ! env GOBIN="$BIN_DIR" \
    GOPATH="$ROOT/.deps/go" \
    GOCACHE="$ROOT/.deps/go/cache" \
    GOMODCACHE="$ROOT/.deps/go/pkg/mod" \
    GOFLAGS="-mod=mod -modcacherw" \
    GOTOOLCHAIN=local \
    CGO_ENABLED=0 \
    GOMAXPROCS="$jobs" \
    nice -n 19 "$GO" install -p "$jobs" -trimpath "${FAKE_GCS_MODULE}@${FAKE_GCS_VERSION}" \
    >"$build_log" 2>&1; then
  tail -n 40 "$build_log" >&2
  die "go install ${FAKE_GCS_MODULE}@${FAKE_GCS_VERSION} failed"
fi
[[ -x $BIN ]] || die "go install finished but $BIN is missing"
printf '%s\n' "$FAKE_GCS_VERSION" >"$STAMP"
if [[ "${GCS_EMULATOR_KEEP_GO_CACHE:-0}" != 1 ]]; then
  rm -rf .deps/go
fi
log "fake-gcs-server ${FAKE_GCS_VERSION} installed in .deps/bin ($((SECONDS - start))s)"
