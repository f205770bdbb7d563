#!/usr/bin/env bash
# Install the pinned Azure Blob Storage emulator (Azurite, from npm) into
# .deps/azurite (binary: .deps/azurite/node_modules/.bin/azurite-blob). Idempotent:
# skips when the pinned version is already there. Used by tests/interop/emulator_azure.py.
# Needs node and npm; tested on Node 20 (azurite 3.35.0 declares node >= 10; 3.36+ need
# Node >= 21/22, so stay on 3.35.x while the machines have Node 20).
#
# Env: NPM (npm binary, default npm on PATH).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

AZURITE_VERSION=3.35.0
PREFIX=.deps/azurite
PKG_JSON="$PREFIX/node_modules/azurite/package.json"
BIN="$PREFIX/node_modules/.bin/azurite-blob"

log() { printf '[setup_azurite] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

installed_version() {
  [[ -f $PKG_JSON ]] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version || "")' "$ROOT/$PKG_JSON" 2>/dev/null || true
}

command -v node >/dev/null 2>&1 || die "node not found (need Node >= 18; tested on 20)"
if [[ -x $BIN && "$(installed_version)" == "$AZURITE_VERSION" ]]; then
  log "azurite ${AZURITE_VERSION} present in ${PREFIX}"
  exit 0
fi

NPM="${NPM:-}"
if [[ -z $NPM ]]; then
  command -v npm >/dev/null 2>&1 || die "npm not found (set NPM=/path/to/npm)"
  NPM="$(command -v npm)"
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
(( node_major >= 18 )) || die "node $(node --version) is too old; azurite ${AZURITE_VERSION} needs Node >= 18"

start=$SECONDS
log "installing azurite@${AZURITE_VERSION} into ${PREFIX} (node $(node --version))"
mkdir -p "$PREFIX"
"$NPM" install --no-audit --no-fund --no-update-notifier --loglevel=error --save-exact \
    --prefix "$PREFIX" "azurite@${AZURITE_VERSION}" >/dev/null \
  || die "npm install azurite@${AZURITE_VERSION} failed"
[[ -x $BIN ]] || die "npm install finished but $BIN is missing"
got="$(installed_version)"
[[ $got == "$AZURITE_VERSION" ]] || die "installed azurite is '${got}', expected ${AZURITE_VERSION}"
log "azurite ${AZURITE_VERSION} installed in ${PREFIX} ($((SECONDS - start))s)"
