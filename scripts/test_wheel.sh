#!/usr/bin/env bash
# `make test-python`: install the wheel `make wheel` built into a fresh venv
# (scripts/wheel_venv.sh) and run the Python package's tests (tests/python) there, against
# dev servers the CLI ($AMPDELTA_CLI) starts.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/wheel_venv.sh
exec build/wheel-venv/bin/python -m pytest -q -p no:cacheprovider --durations=20 tests/python "$@"
