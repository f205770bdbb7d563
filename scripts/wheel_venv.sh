#!/usr/bin/env bash
# Make build/wheel-venv: a fresh venv with the wheel `make wheel` built and the pinned
# packages of tests/python/requirements.txt (readers, pytest, Ray). Used by
# `make test-python` (scripts/test_wheel.sh) and `make bench` (bench/python_bench.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV=build/wheel-venv
log() { printf '[wheel-venv] %s\n' "$*" >&2; }
ls dist/wheelhouse/ampdelta-*manylinux*.whl >/dev/null 2>&1 ||
  { log "no wheel in dist/wheelhouse: run make wheel"; exit 1; }

rm -rf "$VENV"
python3 -m venv "$VENV"
log "installing tests/python/requirements.txt and the wheel for $(python3 --version) into a fresh $VENV"
PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/pip" install --no-input --quiet \
  -r tests/python/requirements.txt
# The wheel of this interpreter's ABI, of those make wheel built.
PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/pip" install --no-input --quiet --no-deps \
  --no-index --find-links dist/wheelhouse ampdelta
"$VENV/bin/pip" check >&2
cd /  # import the installed package, never the source tree's python/ampdelta
"$ROOT/$VENV/bin/python" -c 'import ampdelta; print("[wheel-venv] ampdelta", ampdelta.__version__, "from", ampdelta.__file__)' >&2
