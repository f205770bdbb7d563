#!/usr/bin/env bash
# Make build/sdk-venv: CPython 3.12 with the real Amp Python SDK (the wheel in
# ../shared/vendor/amp-python), the pins of tests/sdk/requirements.txt and the abi3 wheel
# `make wheel` built. tests/sdk drives ampdelta there only through the SDK's own entry points
# (`amp.Client(url).sql(q).load(…)`, its loaders' registry).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV=build/sdk-venv
SDK_WHEEL=../shared/vendor/amp-python/amp-0.1.0-py3-none-any.whl
log() { printf '[sdk-venv] %s\n' "$*" >&2; }
# shellcheck source=python_versions.sh
source "$ROOT/scripts/python_versions.sh"
[[ -f $SDK_WHEEL ]] || { log "the Amp SDK's wheel is missing: $SDK_WHEEL (../shared beside the clone)"; exit 1; }
ls dist/wheelhouse/ampdelta-*abi3*.whl >/dev/null 2>&1 ||
  { log "no abi3 wheel in dist/wheelhouse: run make wheel"; exit 1; }

rm -rf "$VENV"
"$(interpreter 3.12)" -m venv "$VENV"
log "installing the Amp SDK, tests/sdk/requirements.txt and the abi3 wheel into a fresh $VENV"
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$VENV/bin/pip" install --no-input --quiet -r tests/sdk/requirements.txt
"$VENV/bin/pip" install --no-input --quiet --no-deps "$SDK_WHEEL"
"$VENV/bin/pip" install --no-input --quiet --no-deps --no-index --find-links dist/wheelhouse ampdelta
"$VENV/bin/pip" check >&2
cd /
"$ROOT/$VENV/bin/python" -c 'import amp, ampdelta; print("[sdk-venv] amp from", amp.__file__, "| ampdelta", ampdelta.__version__)' >&2
