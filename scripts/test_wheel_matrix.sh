#!/usr/bin/env bash
# `make test` (beside the Python suite): the wheels `make wheel` built, each installed into a
# fresh venv of another interpreter and Arrow stack, running the core subset (tests/wheel,
# and with pyarrow the SDK loader and query-result suites of tests/python):
#   CPython 3.12 + pyarrow 20.0.0 (the SDK's floor), CPython 3.13 + the newest pyarrow,
#   CPython 3.10 without pyarrow (Polars only).
# The whole suite runs on 3.11 (scripts/test_wheel.sh). Pins: tests/wheel/requirements-*.txt.
# AMPDELTA_WHEEL_MATRIX="py310-nopyarrow" runs a subset.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '[wheel-matrix] %s\n' "$*" >&2; }
ENTRIES=(${AMPDELTA_WHEEL_MATRIX:-py312-pyarrow20 py313-newest py310-nopyarrow})

# shellcheck source=python_versions.sh
source "$ROOT/scripts/python_versions.sh"

status=0
for entry in "${ENTRIES[@]}"; do
  version="3.${entry:3:2}"
  venv="build/wheel-matrix/$entry"
  start=$SECONDS
  rm -rf "$venv"
  "$(interpreter "$version")" -m venv "$venv"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install --no-input --quiet \
    -r "tests/wheel/requirements-$entry.txt"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install --no-input --quiet --no-deps \
    --no-index --find-links dist/wheelhouse ampdelta
  log "$entry: $("$venv/bin/python" --version), $("$venv/bin/python" -c 'import importlib.util as u; print("pyarrow " + __import__("pyarrow").__version__ if u.find_spec("pyarrow") else "no pyarrow")')"
  # Each directory in its own session: both have a conftest module.
  suites=(tests/wheel)
  # With pyarrow, the SDK loader and query-result suites too (their readers need it).
  if "$venv/bin/python" -c 'import pyarrow, duckdb, deltalake' 2>/dev/null; then
    suites+=("tests/python/test_sdk_loaders.py tests/python/test_query_results.py")
  fi
  for suite in "${suites[@]}"; do
    # shellcheck disable=SC2086  # a suite is a list of paths
    if ! "$venv/bin/python" -m pytest -q -p no:cacheprovider $suite; then
      status=1
      log "$entry: FAILED in $suite"
    fi
  done
  log "$entry: $((SECONDS - start)) s"
done
exit $status
