#!/usr/bin/env bash
# Install the pinned S3 emulator (versity/versitygw, posix backend) into
# .deps/bin/versitygw, built from the Go module proxy. Idempotent: skips when
# `.deps/bin/versitygw --version` already reports the pinned version (the version is
# stamped into the binary with -ldflags; a plain `go install` build reports "git").
# Go's module and build caches stay under .deps/go. Used by tests/interop/emulator_s3.py.
# Needs Go >= 1.25 (PATH or /usr/local/go/bin); no C compiler (CGO_ENABLED=0).
#
# Env: GO (go binary), S3_EMULATOR_JOBS (parallel build jobs, default 1: leave a core free),
#      S3_EMULATOR_KEEP_GO_CACHE=1 keeps .deps/go (~0.8 GB of module + build cache) after
#      the install; by default it is removed. A fresh install (module download + build)
#      took ~1.6 min with 1 job, ~1 min with 2.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VERSITYGW_MODULE=github.com/versity/versitygw
VERSITYGW_VERSION=v1.8.0
BIN_DIR="$ROOT/.deps/bin"
BIN="$BIN_DIR/versitygw"

log() { printf '[setup_s3_emulator] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# `versitygw --version` prints "Version  : <v>" (then Build, BuildTime).
installed_version() {
  [[ -x $BIN ]] || return 0
  "$BIN" --version 2>/dev/null | sed -n 's/^Version *: *//p' | head -n 1 || true
}

if [[ "$(installed_version)" == "$VERSITYGW_VERSION" ]]; then
  log "versitygw ${VERSITYGW_VERSION} present in .deps/bin"
  exit 0
fi

GO="${GO:-}"
if [[ -z $GO ]]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"
  elif [[ -x /usr/local/go/bin/go ]]; then GO=/usr/local/go/bin/go
  else die "go not found (set GO=/path/to/go; need Go >= 1.25)"; fi
fi

start=$SECONDS
log "installing ${VERSITYGW_MODULE}/cmd/versitygw@${VERSITYGW_VERSION} ($("$GO" env GOVERSION))"
mkdir -p "$BIN_DIR" .deps/go
rm -f "$BIN"
jobs="${S3_EMULATOR_JOBS:-1}"
build_log="$(mktemp)"
trap 'rm -f "$build_log"' EXIT
ldflags="-X=main.Version=${VERSITYGW_VERSION} -X=main.Build=go-install -X=main.BuildTime=none"
if ! env GOBIN="$BIN_DIR" \
    GOPATH="$ROOT/.deps/go" \
    GOCACHE="$ROOT/.deps/go/cache" \
    GOMODCACHE="$ROOT/.deps/go/pkg/mod" \
    GOFLAGS="-mod=mod -modcacherw" \
    GOTOOLCHAIN=local \
    CGO_ENABLED=0 \
    GOMAXPROCS="$jobs" \
    nice -n 19 "$GO" install -p "$jobs" -trimpath -ldflags="$ldflags" \
    "${VERSITYGW_MODULE}/cmd/versitygw@${VERSITYGW_VERSION}" \
    >"$build_log" 2>&1; then
  tail -n 40 "$build_log" >&2
  die "go install ${VERSITYGW_MODULE}/cmd/versitygw@${VERSITYGW_VERSION} failed"
fi
got="$(installed_version)"
[[ $got == "$VERSITYGW_VERSION" ]] || die "installed $BIN reports version '${got}', not ${VERSITYGW_VERSION}"
if [[ "${S3_EMULATOR_KEEP_GO_CACHE:-0}" != 1 ]]; then
  rm -rf .deps/go
fi
log "versitygw ${VERSITYGW_VERSION} installed in .deps/bin ($((SECONDS - start))s)"
