#!/usr/bin/env bash
# `make wheel`: build the Python package's wheel (pyproject.toml: scikit-build-core +
# nanobind, against pyarrow 26) and make it a manylinux wheel with auditwheel, which
# bundles the Debian libraries the extension needs (libcurl-gnutls, GnuTLS, nettle, …)
# but not pyarrow's Arrow libraries: the extension must use the ones `import pyarrow`
# loads, so one process holds one Arrow. Output: dist/wheelhouse/ampdelta-*.whl.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VPY=.deps/venv/bin/python
log() { printf '[wheel] %s\n' "$*" >&2; }

# A build venv that stays put (python/requirements-build.txt): its pyarrow's paths do not
# change between builds, so build/python/<tag> rebuilds only what changed.
BUILD_VENV=.deps/wheel-build
BPY=$BUILD_VENV/bin/python
REQ=python/requirements-build.txt
STAMP=$BUILD_VENV/.requirements.sha256
if [[ ! -f $STAMP || "$(cat "$STAMP")" != "$(sha256sum $REQ | cut -d' ' -f1)" ]]; then
  log "creating the build venv $BUILD_VENV ($REQ)"
  rm -rf "$BUILD_VENV"
  python3 -m venv "$BUILD_VENV"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$BPY" -m pip install --no-input --quiet -r $REQ
  sha256sum $REQ | cut -d' ' -f1 > "$STAMP"
fi

rm -rf dist/raw dist/wheelhouse
mkdir -p dist/raw dist/wheelhouse
log "building the wheel (build/python/<tag>, incremental)"
CMAKE_BUILD_PARALLEL_LEVEL="${JOBS:-$(nproc)}" PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$BPY" -m pip wheel --no-deps --no-build-isolation --quiet -w dist/raw .
raw=(dist/raw/ampdelta-*.whl)
pyarrow_dir="$("$BPY" -c 'import os, pyarrow; print(os.path.dirname(pyarrow.__file__))')"
excludes=()
for lib in arrow arrow_compute arrow_acero parquet arrow_dataset arrow_flight arrow_python; do
  excludes+=(--exclude "lib${lib}.so.2600")
done
log "auditwheel repair (pyarrow's libraries excluded)"
PATH="$ROOT/.deps/venv/bin:$PATH" LD_LIBRARY_PATH="$pyarrow_dir" "$VPY" -m auditwheel repair "${excludes[@]}" \
  -w dist/wheelhouse "${raw[0]}" >&2
ls dist/wheelhouse/ampdelta-*manylinux*.whl >/dev/null
log "done: $(ls dist/wheelhouse)"
