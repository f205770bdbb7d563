#!/usr/bin/env bash
# `make wheel`: the Python package's wheels (pyproject.toml: scikit-build-core + nanobind),
# one per CPython ABI: cp310, cp311, and one abi3 wheel for CPython 3.12 and later. Each is
# made a manylinux wheel by auditwheel, which bundles every shared library the extension
# needs under a private name (libarrow-<hash>.so.2600 …, and the Debian libraries it links):
# the extension never loads the user's pyarrow, which may be any version, or absent.
#
# Every build compiles against the one Arrow C++ SDK in .deps/pyarrow/pyarrow (make setup),
# through ccache: the engine is compiled once, each further ABI costs the extension's own
# sources and a link. Output: dist/wheelhouse/ampdelta-*.whl.
# AMPDELTA_WHEEL_PYTHONS="3.11" builds a subset.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VPY=.deps/venv/bin/python
SDK="$ROOT/.deps/pyarrow/pyarrow"
PYTHONS=(${AMPDELTA_WHEEL_PYTHONS:-3.10 3.11 3.12})
REQ=python/requirements-build.txt
log() { printf '[wheel] %s\n' "$*" >&2; }

[[ -f $SDK/include/arrow/api.h ]] || { log "no Arrow SDK in $SDK: run make setup"; exit 1; }

# shellcheck source=python_versions.sh
source "$ROOT/scripts/python_versions.sh"

# A build venv per version that stays put (python/requirements-build.txt), so rebuilds in
# build/python/<tag> are incremental.
build_venv() {
  local version=$1 venv=.deps/wheel-build-$1
  local stamp=$venv/.requirements.sha256
  if [[ ! -f $stamp || "$(cat "$stamp")" != "$(sha256sum $REQ | cut -d' ' -f1)" ]]; then
    log "creating the build venv $venv ($REQ)"
    rm -rf "$venv"
    "$(interpreter "$version")" -m venv "$venv"
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install --no-input --quiet -r $REQ
    sha256sum $REQ | cut -d' ' -f1 > "$stamp"
  fi
  echo "$venv/bin/python"
}

export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
export CCACHE_DIR="${CCACHE_DIR:-$ROOT/.deps/ccache}" CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-3G}"
command -v ccache >/dev/null || { log "ccache missing: run make setup"; exit 1; }

rm -rf dist/raw dist/wheelhouse
mkdir -p dist/raw dist/wheelhouse
for version in "${PYTHONS[@]}"; do
  bpy="$(build_venv "$version")"
  log "building for CPython $version (build/python/<tag>, incremental)"
  start=$SECONDS
  CMAKE_BUILD_PARALLEL_LEVEL="${JOBS:-$(nproc)}" PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$bpy" -m pip wheel --no-deps --no-build-isolation --quiet -w dist/raw \
    --config-settings=cmake.define.AMPDELTA_ARROW_SDK_ROOT="$SDK" .
  log "CPython $version: $((SECONDS - start)) s"
done
log "auditwheel repair (every library bundled under a private name)"
for raw in dist/raw/ampdelta-*.whl; do
  PATH="$ROOT/.deps/venv/bin:$PATH" LD_LIBRARY_PATH="$SDK" "$VPY" -m auditwheel repair \
    -w dist/wheelhouse "$raw" >&2
done
ccache --show-stats 2>/dev/null | grep -iE "hits|misses" | head -3 >&2 || true
ls dist/wheelhouse/ampdelta-*manylinux*.whl >/dev/null
log "done: $(cd dist/wheelhouse && ls | tr '\n' ' ')"
