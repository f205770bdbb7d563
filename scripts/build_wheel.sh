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

rm -rf dist/raw dist/wheelhouse
mkdir -p dist/raw dist/wheelhouse
log "building the wheel (build/python/<tag>, incremental)"
# The build requirements are pinned in pyproject.toml; pip fetches them into an isolated
# environment, pyarrow included, and the extension links that pyarrow's libraries.
CMAKE_BUILD_PARALLEL_LEVEL="${JOBS:-$(nproc)}" PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$VPY" -m pip wheel --no-deps --quiet -w dist/raw .
raw=(dist/raw/ampdelta-*.whl)
pyarrow_dir="$("$VPY" -c 'import os, pyarrow; print(os.path.dirname(pyarrow.__file__))')"
excludes=()
for lib in arrow arrow_compute arrow_acero parquet arrow_dataset arrow_flight arrow_python; do
  excludes+=(--exclude "lib${lib}.so.2600")
done
log "auditwheel repair (pyarrow's libraries excluded)"
LD_LIBRARY_PATH="$pyarrow_dir" "$VPY" -m auditwheel repair "${excludes[@]}" \
  -w dist/wheelhouse "${raw[0]}" >&2
ls dist/wheelhouse/ampdelta-*manylinux*.whl >/dev/null
log "done: $(ls dist/wheelhouse)"
